#define BOOST_TEST_MODULE nn_grad
// Gradients of convolution, pooling, batchnorm and attention, and real training steps, against PyTorch.
#include <functional>

#include "base/env.hpp"
#include "nn/layers.hpp"
#include "nn/losses.hpp"
#include "nn/optim.hpp"
#include "reference.hpp"

using namespace tg;
using tg::test::expect_matches;
using tg::test::json;
using tg::test::reference;
using tg::test::tensor_of;

namespace {

// loss = sum(fn(inputs) * G); its gradient for every input against PyTorch's.
void check_grads(const char* name, const std::function<Tensor(const std::vector<Tensor>&)>& fn) {
  const json& r = reference()["grad"][name];
  std::vector<Tensor> xs;
  for (const json& i : r["inputs"]) xs.push_back(tensor_of(i));
  Tensor loss = (fn(xs) * tensor_of(r["g"])).sum();
  std::vector<Tensor> gs = loss.gradient(xs);
  BOOST_REQUIRE_EQUAL(gs.size(), xs.size());
  for (size_t i = 0; i < gs.size(); i++) {
    BOOST_TEST_CONTEXT(name << " gradient " << i) { expect_matches(gs[i], r["grads"][i], 2e-4); }
  }
}

std::map<std::string, Tensor> state_of(const json& s) {
  std::map<std::string, Tensor> out;
  for (auto& [k, v] : s.items()) out[k] = tensor_of(v);
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(conv_gradients_match_torch) {
  check_grads("conv2d", [](const std::vector<Tensor>& x) { return x[0].conv2d(x[1], x[2], 2, 1, 1, 2); });
  check_grads("conv2d_dilated",
              [](const std::vector<Tensor>& x) { return x[0].conv2d(x[1], Tensor(), 1, 2, 2); });
  check_grads("conv_transpose2d",
              [](const std::vector<Tensor>& x) { return x[0].conv_transpose2d(x[1], x[2], 2, 1, 1); });
}

// ConvTranspose1d, InstanceNorm, LayerNorm2d and LSTMCell: gradients of the input(s) and every parameter.
BOOST_AUTO_TEST_CASE(new_layer_gradients_match_torch) {
  const json& r = reference()["new_layers"];
  auto one = [](nn::Module& m) {
    return [&m](const std::vector<Tensor>& x) { return std::vector<Tensor>{m(x[0])}; };
  };
  for (const json& c : r["conv_transpose1d"]) {
    BOOST_TEST_CONTEXT("ConvTranspose1d " << c["x"].dump() << " k " << c["k"] << " stride " << c["stride"]
                                          << " groups " << c["groups"]) {
      nn::ConvTranspose1d m(c["cin"], c["cout"], c["k"].get<int64_t>(), c["stride"].get<int64_t>(),
                            c["padding"].get<int64_t>(), c["output_padding"].get<int64_t>(), c["groups"],
                            c["bias"], c["dilation"].get<int64_t>());
      tg::test::check_module_case(m, c, one(m), true);
    }
  }
  for (const json& c : r["instancenorm"]) {
    BOOST_TEST_CONTEXT("InstanceNorm " << c["inputs"][0]["shape"].dump()) {
      nn::InstanceNorm m(tg::test::shape_of(c["inputs"][0])[1], c["eps"].get<double>());
      tg::test::check_module_case(m, c, one(m), true);
    }
  }
  nn::LayerNorm2d ln(5);
  tg::test::check_module_case(ln, r["layernorm2d"], one(ln), true);
  for (const char* name : {"lstmcell", "lstmcell_unbatched"}) {
    BOOST_TEST_CONTEXT(name) {
      nn::LSTMCell cell(5, 4);
      tg::test::check_module_case(
          cell, r[name],
          [&cell](const std::vector<Tensor>& x) {
            auto [h, c] = cell(x[0], nn::LSTMCell::State{x[1], x[2]});
            return std::vector<Tensor>{h, c};
          },
          true);
    }
  }
  nn::LSTMCell cell(5, 4);
  tg::test::check_module_case(
      cell, r["lstmcell_zero_state"],
      [&cell](const std::vector<Tensor>& x) {
        auto [h, c] = cell(x[0]);
        return std::vector<Tensor>{h, c};
      },
      true);  // weight_hh's gradient: zero (h = 0), and defined
}

namespace {

// Inputs that require grad (conv's own backward rule), checked against PyTorch.
void check_rule(const char* name, const std::function<Tensor(const std::vector<Tensor>&)>& fn) {
  const json& r = reference()["grad"][name];
  std::vector<Tensor> xs;
  for (const json& i : r["inputs"]) xs.push_back(tensor_of(i).requires_grad_());
  (fn(xs) * tensor_of(r["g"])).sum().backward();
  for (size_t i = 0; i < xs.size(); i++) {
    BOOST_TEST_CONTEXT(name << " gradient " << i) { expect_matches(xs[i].grad(), r["grads"][i], 2e-4); }
  }
}

}  // namespace

// Inputs that require grad take conv's own backward rule (dx and dw are convs, not the window view's
// derivative); every combination of stride, dilation, groups and padding against PyTorch.
BOOST_AUTO_TEST_CASE(conv_backward_rule_matches_torch) {
  auto check = [](const char* name, const std::function<Tensor(const std::vector<Tensor>&)>& fn) {
    check_rule(name, fn);
    {
      env::Scoped chunked(env::CONV_IM2COL, 500);  // dw over batch chunks whose window matrix fits
      check_rule(name, fn);
    }
    env::Scoped direct(env::CONV_IM2COL, 0);  // the multiply-reduce over windows instead of the matmul
    check_rule(name, fn);
  };
  check("conv2d", [](const std::vector<Tensor>& x) { return x[0].conv2d(x[1], x[2], 2, 1, 1, 2); });
  check("conv2d_dilated", [](const std::vector<Tensor>& x) { return x[0].conv2d(x[1], Tensor(), 1, 2, 2); });
  check("conv2d_s2_d2_g2", [](const std::vector<Tensor>& x) {
    return x[0].conv2d(x[1], x[2], 2, Padding{1, 2}, 2, 2);
  });
  check("conv2d_asymmetric", [](const std::vector<Tensor>& x) {
    return x[0].conv2d(x[1], x[2], {2, 1}, Padding(std::vector<std::pair<int64_t, int64_t>>{{1, 0}, {2, 1}}));
  });
  check("conv2d_s1_g2", [](const std::vector<Tensor>& x) {
    return x[0].conv2d(x[1], x[2], 1, Padding{1, 2}, 1, 2);
  });
  check("conv2d_g2_c16_b20", [](const std::vector<Tensor>& x) {
    return x[0].conv2d(x[1], x[2], {1, 2}, 1, 1, 2);
  });
  check("conv2d_c16_short_rows", [](const std::vector<Tensor>& x) { return x[0].conv2d(x[1], x[2], 1, 1); });
  check("conv2d_wide_pad_s3", [](const std::vector<Tensor>& x) { return x[0].conv2d(x[1], Tensor(), 3, 3); });
  check("conv1d_s2", [](const std::vector<Tensor>& x) { return x[0].conv1d(x[1], x[2], 2, 1); });
  check("conv3d", [](const std::vector<Tensor>& x) { return x[0].conv(x[1], Tensor(), {1, 2, 1}, 1); });
  check("conv_transpose2d",
        [](const std::vector<Tensor>& x) { return x[0].conv_transpose2d(x[1], x[2], 2, 1, 1); });
}

BOOST_AUTO_TEST_CASE(pool_gradients_match_torch) {
  check_grads("max_pool2d", [](const std::vector<Tensor>& x) { return x[0].max_pool2d(3, 2, 1); });
  check_grads("avg_pool2d",
              [](const std::vector<Tensor>& x) { return x[0].avg_pool2d(3, 2, 1, true, false); });
}

BOOST_AUTO_TEST_CASE(batchnorm_and_attention_gradients_match_torch) {
  check_grads("batchnorm2d", [](const std::vector<Tensor>& x) {
    Tensor mean = x[0].mean({0, 2, 3});
    Tensor var = (x[0] - mean.reshape({1, 3, 1, 1})).square().mean({0, 2, 3});
    return x[0].batchnorm(x[1], x[2], mean, (var + 1e-5).rsqrt());
  });
  check_grads("sdpa", [](const std::vector<Tensor>& x) {
    return x[0].scaled_dot_product_attention(x[1], x[2], Tensor(), true);
  });
}

BOOST_AUTO_TEST_CASE(batchnorm_layer_gradient_matches_torch) {
  const json& r = reference()["grad"]["batchnorm2d"];
  nn::BatchNorm2d bn(3);
  nn::load_state_dict(bn, {{"weight", tensor_of(r["inputs"][1])},
                           {"bias", tensor_of(r["inputs"][2])},
                           {"running_mean", Tensor::zeros({3})},
                           {"running_var", Tensor::ones({3})},
                           {"num_batches_tracked", Tensor::zeros({}, dtypes::int64)}});
  Tensor x = tensor_of(r["inputs"][0]).requires_grad_();
  (bn(x) * tensor_of(r["g"])).sum().backward();
  expect_matches(x.grad(), r["grads"][0], 2e-4);
  expect_matches(bn.weight.grad(), r["grads"][1], 2e-4);
  expect_matches(bn.bias.grad(), r["grads"][2], 2e-4);
}

BOOST_AUTO_TEST_CASE(training_steps_match_torch) {
  const json& r = reference()["train"];
  Tensor x = tensor_of(r["x"]), y = tensor_of(r["y"], dtypes::int32);
  for (auto& [name, c] : r["cases"].items()) {
    BOOST_TEST_CONTEXT("optimizer " << name) {
      auto l0 = std::make_shared<nn::Linear>(4, 8), l2 = std::make_shared<nn::Linear>(8, 3);
      nn::Sequential net{l0, std::make_shared<nn::ReLU>(), l2};
      nn::load_state_dict(net, state_of(r["state"]));
      std::unique_ptr<nn::optim::Optimizer> opt;
      if (name == "sgd_nesterov")
        opt = std::make_unique<nn::optim::SGD>(net.parameters(), 0.1, 0.9, 0.01, true);
      if (name == "adam") opt = std::make_unique<nn::optim::Adam>(net.parameters(), 0.01);
      if (name == "adamw")
        opt = std::make_unique<nn::optim::AdamW>(net.parameters(), 0.01, 0.9, 0.999, 1e-8, 0.1);
      if (name == "lamb")
        opt = std::make_unique<nn::optim::LAMB>(net.parameters(), 0.01, 0.9, 0.999, 1e-6, 0.01);
      BOOST_REQUIRE(opt);
      std::vector<double> losses = c["losses"].get<std::vector<double>>();
      for (double want : losses) {
        opt->zero_grad();
        Tensor loss = nn::cross_entropy(net(x), y);
        loss.backward();
        BOOST_CHECK_CLOSE(loss.item<float>(), want, 1e-3);  // percent
        opt->step();
      }
      for (auto& [pname, p] : nn::state_dict(net)) {
        BOOST_TEST_CONTEXT("parameter " << pname) { expect_matches(p, c["final"][pname], 1e-4); }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(cnn_with_batchnorm_trains_like_torch) {
  const json& r = reference()["cnn"];
  nn::Sequential cnn{std::make_shared<nn::Conv2d>(1, 2, 3, 1, 1),
                     std::make_shared<nn::BatchNorm2d>(2),
                     std::make_shared<nn::ReLU>(),
                     std::make_shared<nn::MaxPool2d>(2),
                     std::make_shared<nn::Flatten>(),
                     std::make_shared<nn::Linear>(8, 3)};
  std::map<std::string, Tensor> state;
  for (auto& [k, v] : r["state"].items())
    state[k] = tensor_of(v, k.ends_with("num_batches_tracked") ? dtypes::int64 : dtypes::float32);
  nn::load_state_dict(cnn, state);
  nn::optim::SGD opt(cnn.parameters(), 0.1, 0.9);
  Tensor x = tensor_of(r["x"]), y = tensor_of(r["y"], dtypes::int32);
  for (double want : r["losses"].get<std::vector<double>>()) {
    opt.zero_grad();
    Tensor loss = nn::cross_entropy(cnn(x), y);
    loss.backward();
    BOOST_CHECK_CLOSE(loss.item<float>(), want, 1e-3);  // percent
    opt.step();
  }
  for (auto& [name, t] : nn::state_dict(cnn)) {
    BOOST_TEST_CONTEXT("state " << name) {
      if (name.ends_with("num_batches_tracked"))
        BOOST_TEST(t.item<int64_t>() == 3);
      else
        expect_matches(t, r["final"][name], 1e-4);
    }
  }
}

BOOST_AUTO_TEST_CASE(embedding_gradient_counts_rows) {
  // d/dW sum(emb(idx) * c) puts c into row r once per occurrence of r in idx
  nn::Embedding emb(5, 2);
  Tensor idx = Tensor({1, 0, 4, 3, 3, 1, 3}, {7});
  (emb(idx) * Tensor({1.0f, 10.0f})).sum().backward();
  std::vector<float> want{1, 10, 2, 20, 0, 0, 3, 30, 1, 10};
  BOOST_TEST(emb.weight.grad().to_vector<float>() == want, boost::test_tools::per_element());
}
