#pragma once
// Loads the PyTorch reference vectors (written at build time by gen_nn_reference.py) and compares
// tensors against them.
#include <boost/test/unit_test.hpp>
#include "common/test_support.hpp"

#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "nn/module.hpp"
#include "tensor/tensor.hpp"

namespace tg::test {

using json = nlohmann::json;

inline const json& reference() {
  static const json j = [] {
    std::ifstream f(TG_NN_REFERENCE);
    if (!f) throw std::runtime_error("cannot open the reference vectors " TG_NN_REFERENCE);
    return json::parse(f);
  }();
  return j;
}

inline Shape shape_of(const json& t) { return t.at("shape").get<Shape>(); }

// {"shape": [...], "data": [...]} as a float32 tensor (or another dtype).
inline Tensor tensor_of(const json& t, DType dtype = dtypes::float32) {
  Shape s = shape_of(t);  // an empty shape means a 0-d tensor here (the constructor reads it as (n,))
  return Tensor(t.at("data").get<std::vector<double>>(), s.empty() ? Shape{1} : s, dtype).reshape(s);
}

inline void expect_matches(const Tensor& got, const json& want, double tol = 1e-4) {
  BOOST_REQUIRE_MESSAGE(got.shape() == shape_of(want), "shape mismatch");
  std::vector<double> g = got.to_vector<double>(), w = want.at("data").get<std::vector<double>>();
  BOOST_REQUIRE_EQUAL(g.size(), w.size());
  size_t bad = 0;
  for (size_t i = 0; i < g.size(); i++) {
    double err = std::abs(g[i] - w[i]), scale = std::max(1.0, std::abs(w[i]));
    if (!(err <= tol * scale) && bad++ < 5)
      BOOST_ERROR("element " << i << ": got " << g[i] << ", want " << w[i]);
  }
  BOOST_CHECK_MESSAGE(bad == 0, bad << " of " << g.size() << " elements differ");
}

// A module_case() entry of gen_nn_reference.py: loads its state into m, runs fn on its inputs and compares
// every output; with grads also the gradients of sum(out_i * G_i) for the inputs and every parameter.
using ModuleFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;
inline void check_module_case(nn::Module& m, const json& c, const ModuleFn& fn, bool grads,
                              double tol = 1e-4) {
  std::map<std::string, Tensor> state;
  for (auto& [k, v] : c.at("state").items()) state[k] = tensor_of(v);
  nn::load_state_dict(m, state);
  std::vector<Tensor> xs;
  for (const json& i : c.at("inputs")) xs.push_back(tensor_of(i));
  std::vector<Tensor> ys = fn(xs);
  BOOST_REQUIRE_EQUAL(ys.size(), c.at("ys").size());
  for (size_t i = 0; i < ys.size(); i++) {
    BOOST_TEST_CONTEXT("output " << i) { expect_matches(ys[i], c["ys"][i], tol); }
  }
  if (!grads) return;
  Tensor loss = (ys[0] * tensor_of(c["g"][0])).sum();
  for (size_t i = 1; i < ys.size(); i++) loss = loss + (ys[i] * tensor_of(c["g"][i])).sum();
  std::vector<Tensor> wrt = xs;
  std::vector<std::string> names;
  for (auto& [n, p] : m.named_parameters()) {
    wrt.push_back(p);
    names.push_back(n);
  }
  BOOST_REQUIRE_EQUAL(names.size(), c.at("dparams").size());
  std::vector<Tensor> gs = loss.gradient(wrt);
  for (size_t i = 0; i < xs.size(); i++) {
    BOOST_TEST_CONTEXT("gradient of input " << i) { expect_matches(gs[i], c["dinputs"][i], 2 * tol); }
  }
  for (size_t i = 0; i < names.size(); i++) {
    BOOST_TEST_CONTEXT("gradient of " << names[i]) {
      expect_matches(gs[xs.size() + i], c["dparams"].at(names[i]), 2 * tol);
    }
  }
}

}  // namespace tg::test
