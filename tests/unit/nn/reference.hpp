#pragma once
// Loads the PyTorch reference vectors (written at build time by gen_nn_reference.py) and compares
// tensors against them.
#include "common/test_support.hpp"
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.hpp"
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


}  // namespace tg::test
