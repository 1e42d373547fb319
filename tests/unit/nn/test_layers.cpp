#define BOOST_TEST_MODULE nn_layers
// Modules, layers, state dicts and losses against PyTorch.
#include <cmath>

#include "nn/layers.hpp"
#include "nn/losses.hpp"
#include "nn/optim.hpp"
#include "reference.hpp"

using namespace tg;
using tg::test::expect_error;
using tg::test::expect_matches;
using tg::test::json;
using tg::test::reference;
using tg::test::tensor_of;

namespace {

const json& layer(const char* name) { return reference()["layers"][name]; }

std::map<std::string, Tensor> state_of(const json& s) {
  std::map<std::string, Tensor> out;
  for (auto& [k, v] : s.items())
    out[k] = tensor_of(v, k == "num_batches_tracked" ? dtypes::int64 : dtypes::float32);
  return out;
}

std::vector<std::string> names(const nn::NamedTensors& v) {
  std::vector<std::string> out;
  for (auto& [n, t] : v) out.push_back(n);
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(module_names_follow_pytorch) {
  auto conv = std::make_shared<nn::Conv2d>(3, 4, 3);
  auto bn = std::make_shared<nn::BatchNorm2d>(4);
  nn::Sequential seq{conv, bn, std::make_shared<nn::ReLU>(), std::make_shared<nn::Flatten>(),
                     std::make_shared<nn::Linear>(4 * 4 * 4, 2, false)};
  BOOST_TEST(names(seq.named_parameters()) ==
                 (std::vector<std::string>{"0.weight", "0.bias", "1.weight", "1.bias", "4.weight"}),
             boost::test_tools::per_element());
  BOOST_TEST(names(seq.named_buffers()) ==
                 (std::vector<std::string>{"1.running_mean", "1.running_var", "1.num_batches_tracked"}),
             boost::test_tools::per_element());
  BOOST_TEST(seq.parameters().size() == 5u);
  BOOST_TEST(seq.parameters()[0].requires_grad());
  BOOST_TEST(nn::state_dict(seq).size() == 8u);
  BOOST_TEST(seq(Tensor::ones({2, 3, 6, 6})).shape() == (Shape{2, 2}));
  seq.eval();
  BOOST_TEST(!bn->is_training());
  seq.train();
  BOOST_TEST(bn->is_training());
  // default init: uniform within +-1/sqrt(fan_in) (fan_in = 3*3*3)
  double bound = 1 / std::sqrt(27.0);
  for (float v : conv->weight.to_vector<float>()) BOOST_CHECK(std::abs(v) <= bound);
  for (float v : conv->bias.to_vector<float>()) BOOST_CHECK(std::abs(v) <= bound);
}

BOOST_AUTO_TEST_CASE(load_state_dict_checks_everything_first) {
  nn::Linear lin(5, 3);
  std::vector<float> before = lin.weight.to_vector<float>();
  auto good = state_of(layer("linear")["state"]);
  auto extra = good;
  extra["other"] = Tensor::ones({1});
  expect_error<ValueError>([&] { nn::load_state_dict(lin, extra); },
                           "[load_state_dict] unexpected keys: other");
  auto missing = good;
  missing.erase("bias");
  expect_error<ValueError>([&] { nn::load_state_dict(lin, missing); },
                           "[load_state_dict] missing keys: bias");
  auto wrong = good;
  wrong["bias"] = Tensor::ones({4});
  expect_error<ShapeError>([&] { nn::load_state_dict(lin, wrong); },
                           "[load_state_dict] \"bias\" has shape (4,) but the module expects (3,)");
  wrong["bias"] = Tensor::ones({3}, dtypes::float16);
  expect_error<DTypeError>([&] { nn::load_state_dict(lin, wrong); },
                           "[load_state_dict] \"bias\" is half but the module expects float");
  BOOST_TEST(lin.weight.to_vector<float>() == before, boost::test_tools::per_element());  // nothing changed
  nn::load_state_dict(lin, missing, false);  // not strict: loads what is there
  BOOST_TEST(lin.weight.to_vector<float>() == good["weight"].to_vector<float>(),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(linear_conv_and_transpose_match_torch) {
  nn::Linear lin(5, 3);
  nn::load_state_dict(lin, state_of(layer("linear")["state"]));
  expect_matches(lin(tensor_of(layer("linear")["x"])), layer("linear")["y"]);
  nn::Conv2d conv(4, 6, 3, 2, 1, 1, 2);
  nn::load_state_dict(conv, state_of(layer("conv2d")["state"]));
  expect_matches(conv(tensor_of(layer("conv2d")["x"])), layer("conv2d")["y"]);
  nn::ConvTranspose2d convt(4, 2, 3, 2, 1, 1);
  nn::load_state_dict(convt, state_of(layer("conv_transpose2d")["state"]));
  expect_matches(convt(tensor_of(layer("conv_transpose2d")["x"])), layer("conv_transpose2d")["y"]);
}

BOOST_AUTO_TEST_CASE(module_to_casts_float_state_and_keeps_it_trained) {
  // PyTorch's module.to(torch.float64): the Linear reference in float64, BatchNorm's running statistics cast
  // and its integer step count kept; the parameters are still trained (SGD lr 1 on sum(y): db = batch size).
  auto lin = std::make_shared<nn::Linear>(5, 3);
  auto bn = std::make_shared<nn::BatchNorm2d>(3);
  nn::load_state_dict(*lin, state_of(layer("linear")["state"]));
  nn::Sequential seq{lin, bn};
  seq.to(dtypes::float64);
  for (auto& [name, t] : nn::state_dict(seq))
    BOOST_TEST((t.dtype() == (name == "1.num_batches_tracked" ? dtypes::int64 : dtypes::float64)), name);
  BOOST_TEST(seq.parameters().size() == 4u);
  for (const Tensor& p : seq.parameters()) BOOST_TEST(p.requires_grad());
  Tensor x = tensor_of(layer("linear")["x"]).cast(dtypes::float64);
  Tensor y = (*lin)(x);
  BOOST_TEST((y.dtype() == dtypes::float64));
  expect_matches(y.cast(dtypes::float32), layer("linear")["y"]);
  std::vector<double> b0 = lin->bias.to_vector<double>();
  nn::optim::SGD opt(lin->parameters(), 1.0);
  y.sum().backward();
  opt.step();
  std::vector<double> b1 = lin->bias.to_vector<double>();
  double rows = static_cast<double>(x.shape()[0].bound());
  for (size_t i = 0; i < b0.size(); i++) BOOST_TEST(std::abs(b0[i] - rows - b1[i]) < 1e-12);
  seq.to(dtypes::float32);
  BOOST_TEST((lin->weight.dtype() == dtypes::float32 && bn->running_var.dtype() == dtypes::float32));
  expect_error<DTypeError>([&] { seq.to(dtypes::int32); },
                           "[Module::to] takes a floating-point dtype, got int");
}

BOOST_AUTO_TEST_CASE(assigned_parameter_is_the_one_trained_and_saved) {
  // ln.weight = w must reach parameters(), state_dict() and forward. x = (-1, 1, -1, 1) normalizes to
  // itself / sqrt(1 + eps); loss = sum(y): d/dw = xhat, d/db = 1; SGD lr 0.5 from w = (2, 3, 4, 5), b = 0.
  nn::LayerNorm ln({4});
  ln.weight = Tensor(std::vector<float>{2, 3, 4, 5}, {4});
  Tensor x = Tensor(std::vector<float>{-1, 1, -1, 1}, {1, 4});
  BOOST_TEST(ln.parameters().size() == 2u);
  nn::optim::SGD opt(ln.parameters(), 0.5);
  ln(x).sum().backward();
  opt.step();
  const float r = 1.0f / std::sqrt(1.00001f);
  std::vector<float> w_new = {2 + 0.5f * r, 3 - 0.5f * r, 4 + 0.5f * r, 5 - 0.5f * r};
  auto close = [](const std::vector<float>& a, const std::vector<float>& b) {
    for (size_t i = 0; i < a.size(); i++) BOOST_TEST(std::abs(a[i] - b[i]) < 1e-5f);
  };
  close(ln.weight.to_vector<float>(), w_new);
  close(nn::state_dict(ln).at("weight").to_vector<float>(), w_new);
  close(ln.bias.to_vector<float>(), {-0.5f, -0.5f, -0.5f, -0.5f});
  close(ln(x).to_vector<float>(),
        {-w_new[0] * r - 0.5f, w_new[1] * r - 0.5f, -w_new[2] * r - 0.5f, w_new[3] * r - 0.5f});
  ln.bias = Tensor();  // an undefined slot is no parameter
  BOOST_TEST(names(ln.named_parameters()) == std::vector<std::string>{"weight"});
}

BOOST_AUTO_TEST_CASE(batchnorm_statistics_ride_with_the_optimizer_step) {
  // The running mean is updated with the next realize, here the SGD step that changes w in the same
  // schedule: it must still see the batch computed with the old w. x = 1..4, w = 2: mean 5, so 0.1 * 5.
  // loss = sum(bn(x w)) + w^2 (the normalized part does not depend on w): grad 2w = 4, lr 0.25 -> w = 1; a
  // mean read after the step would give 0.1 * 2.5.
  nn::BatchNorm2d bn(1);
  Tensor x = Tensor(std::vector<float>{1, 2, 3, 4}, {4, 1, 1, 1});
  Tensor w = Tensor(std::vector<float>{2}, {1}).requires_grad_();
  nn::optim::SGD opt({w}, 0.25);
  Tensor loss = bn(x * w.reshape({1, 1, 1, 1})).sum() + (w * w).sum();
  loss.backward();
  std::vector<Tensor> todo = opt.schedule_step();
  todo.push_back(loss);
  Tensor::realize_all(todo);
  BOOST_TEST(w.item<float>() == 1.0f);
  BOOST_TEST(std::abs(bn.running_mean.item<float>() - 0.5f) < 1e-6f);
  // unbiased variance of 2, 4, 6, 8 is 20/3: 0.9 * 1 + 0.1 * 20/3
  BOOST_TEST(std::abs(bn.running_var.item<float>() - (0.9f + 2.0f / 3.0f)) < 1e-5f);
  BOOST_TEST(bn.num_batches_tracked.item<int64_t>() == 1);
}

BOOST_AUTO_TEST_CASE(batchnorm_train_and_eval_match_torch) {
  const json& r = layer("batchnorm2d");
  nn::BatchNorm2d bn(3, 1e-5, 0.2);
  nn::load_state_dict(bn, state_of(r["state"]));
  expect_matches(bn(tensor_of(r["x1"])), r["y1"]);
  expect_matches(bn(tensor_of(r["x2"])), r["y2"]);
  expect_matches(bn.running_mean, r["running_mean"]);
  expect_matches(bn.running_var, r["running_var"]);
  BOOST_TEST(bn.num_batches_tracked.item<int64_t>() == 2);
  bn.eval();
  expect_matches(bn(tensor_of(r["x3"])), r["y3"]);
  const json& c = layer("batchnorm1d_cumulative");
  nn::BatchNorm1d bn1(4, 1e-5, std::nullopt);
  expect_matches(bn1(tensor_of(c["x1"])), c["y1"]);
  expect_matches(bn1(tensor_of(c["x2"])), c["y2"]);
  expect_matches(bn1.running_mean, c["running_mean"]);
  expect_matches(bn1.running_var, c["running_var"]);
  expect_error<ShapeError>(
      [&] {
        bn1(Tensor::ones({2, 4, 3, 3}));
      },
      "[BatchNorm1d] expects (N, C) or (N, C, L), got (2,4,3,3)");
}

BOOST_AUTO_TEST_CASE(norms_and_embedding_match_torch) {
  nn::LayerNorm ln({3, 4});
  nn::load_state_dict(ln, state_of(layer("layernorm")["state"]));
  expect_matches(ln(tensor_of(layer("layernorm")["x"])), layer("layernorm")["y"]);
  nn::GroupNorm gn(2, 6);
  nn::load_state_dict(gn, state_of(layer("groupnorm")["state"]));
  expect_matches(gn(tensor_of(layer("groupnorm")["x"])), layer("groupnorm")["y"]);
  nn::RMSNorm rms({4}, layer("rmsnorm")["eps"].get<double>());
  nn::load_state_dict(rms, state_of(layer("rmsnorm")["state"]));
  expect_matches(rms(tensor_of(layer("rmsnorm")["x"])), layer("rmsnorm")["y"]);
  nn::Embedding emb(7, 3);
  nn::load_state_dict(emb, state_of(layer("embedding")["state"]));
  expect_matches(emb(tensor_of(layer("embedding")["x"], dtypes::int32)), layer("embedding")["y"]);
}

namespace {

const json& new_layer(const char* name) { return reference()["new_layers"][name]; }

tg::test::ModuleFn one(nn::Module& m) {
  return [&m](const std::vector<Tensor>& x) { return std::vector<Tensor>{m(x[0])}; };
}

}  // namespace

BOOST_AUTO_TEST_CASE(conv_transpose1d_matches_torch) {
  for (const json& c : new_layer("conv_transpose1d")) {
    BOOST_TEST_CONTEXT("ConvTranspose1d " << c["x"].dump() << " k " << c["k"] << " stride " << c["stride"]
                                          << " padding " << c["padding"] << " output_padding "
                                          << c["output_padding"] << " dilation " << c["dilation"]
                                          << " groups " << c["groups"]) {
      nn::ConvTranspose1d m(c["cin"], c["cout"], c["k"].get<int64_t>(), c["stride"].get<int64_t>(),
                            c["padding"].get<int64_t>(), c["output_padding"].get<int64_t>(), c["groups"],
                            c["bias"], c["dilation"].get<int64_t>());
      int64_t cin = c["cin"], cout = c["cout"], groups = c["groups"], k = c["k"];
      BOOST_TEST(m.weight.shape() == (Shape{cin, cout / groups, k}));
      tg::test::check_module_case(m, c, one(m), false);
    }
  }
  nn::ConvTranspose1d m(3, 2, 3, 2, 1);
  tg::test::check_module_case(m, new_layer("conv_transpose1d_unbatched"), one(m), false);
  expect_error<ShapeError>(
      [&] {
        m(Tensor::ones({1, 3, 4, 4}));
      },
      "[ConvTranspose1d] expects 2 or 3 dimensions (channels first), got (1,3,4,4)");
  expect_error<ValueError>(
      [] { nn::ConvTranspose1d(4, 6, 3, 1, 0, 0, 4); },
      "[ConvTranspose1d] in_channels 4 and out_channels 6 must be divisible by groups 4");
}

BOOST_AUTO_TEST_CASE(instance_norm_and_layernorm2d_match_torch) {
  for (const json& c : new_layer("instancenorm")) {
    int64_t channels = tg::test::shape_of(c["inputs"][0])[1];
    BOOST_TEST_CONTEXT("InstanceNorm " << c["inputs"][0]["shape"].dump()) {
      nn::InstanceNorm m(channels, c["eps"].get<double>());
      tg::test::check_module_case(m, c, one(m), false);
    }
  }
  nn::InstanceNorm plain(3, 1e-5, false);
  BOOST_TEST(plain.parameters().empty());
  expect_error<ShapeError>(
      [&] {
        plain(Tensor::ones({2, 3}));
      },
      "[InstanceNorm] input (2,3) must be (N, C, *spatial) with C = 3");
  nn::LayerNorm2d ln(5);
  BOOST_TEST(names(ln.named_parameters()) == (std::vector<std::string>{"weight", "bias"}),
             boost::test_tools::per_element());
  tg::test::check_module_case(ln, new_layer("layernorm2d"), one(ln), false);
  expect_error<ShapeError>(
      [&] {
        ln(Tensor::ones({2, 4, 3, 3}));
      },
      "[LayerNorm2d] input (2,4,3,3) must be (N, C, H, W) with C = 5");
}

BOOST_AUTO_TEST_CASE(lstm_cell_matches_torch) {
  nn::LSTMCell cell(5, 4);
  BOOST_TEST(names(cell.named_parameters()) ==
                 (std::vector<std::string>{"weight_ih", "weight_hh", "bias_ih", "bias_hh"}),
             boost::test_tools::per_element());
  double bound = 0.5;  // 1/sqrt(hidden)
  for (const Tensor& p : cell.parameters())
    for (float v : p.to_vector<float>()) BOOST_CHECK(std::abs(v) <= bound);
  auto with_state = [&cell](const std::vector<Tensor>& x) {
    auto [h, c] = cell(x[0], nn::LSTMCell::State{x[1], x[2]});
    return std::vector<Tensor>{h, c};
  };
  tg::test::check_module_case(cell, new_layer("lstmcell"), with_state, false);
  tg::test::check_module_case(cell, new_layer("lstmcell_unbatched"), with_state, false);
  tg::test::check_module_case(
      cell, new_layer("lstmcell_zero_state"),
      [&cell](const std::vector<Tensor>& x) {
        auto [h, c] = cell(x[0]);
        BOOST_TEST(cell.forward(x[0]).to_vector<float>() == h.to_vector<float>(),
                   boost::test_tools::per_element());
        return std::vector<Tensor>{h, c};
      },
      false);
  // from a zero state every parameter still gets a gradient, so an optimizer over all of them can step
  nn::optim::SGD opt(cell.parameters(), 0.1);
  cell(Tensor::ones({2, 5})).first.sum().backward();
  for (const Tensor& p : cell.parameters()) BOOST_TEST(p.grad().defined());
  for (float v : cell.weight_hh.grad().to_vector<float>()) BOOST_TEST(v == 0.0f);
  opt.step();
  nn::LSTMCell nobias(3, 2, false);
  BOOST_TEST(nobias.parameters().size() == 2u);
  auto nobias_fn = [&nobias](const std::vector<Tensor>& x) {
    auto [h, c] = nobias(x[0], nn::LSTMCell::State{x[1], x[2]});
    return std::vector<Tensor>{h, c};
  };
  tg::test::check_module_case(nobias, new_layer("lstmcell_no_bias"), nobias_fn, false);
  expect_error<ShapeError>(
      [&] {
        cell(Tensor::ones({2, 4}));
      },
      "[LSTMCell] input (2,4) must be (N, 5) or (5,)");
  expect_error<ShapeError>(
      [&] {
        cell(Tensor::ones({2, 5}), nn::LSTMCell::State{Tensor::ones({2, 4}), Tensor::ones({3, 4})});
      },
      "[LSTMCell] h (2,4) and c (3,4) must both be (2,4) for input (2,5)");
}

BOOST_AUTO_TEST_CASE(dropout_module_follows_mode) {
  nn::Dropout d(0.5);
  Tensor x = Tensor::ones({8, 8});
  d.eval();
  BOOST_TEST(d(x).sum().item<float>() == 64.0f);
  d.train();
  std::vector<float> y = d(x).to_vector<float>();
  for (float v : y) BOOST_CHECK(v == 0.0f || v == 2.0f);
}

BOOST_AUTO_TEST_CASE(losses_match_torch) {
  const json& L = reference()["losses"];
  const json& ce = L["ce_ignore_smooth"];
  Tensor logits = tensor_of(ce["x"]), labels = tensor_of(ce["target"], dtypes::int32);
  expect_matches(nn::cross_entropy(logits, labels, Reduction::MEAN, 0.1), ce["y"]);
  expect_matches(nn::cross_entropy(logits, labels, Reduction::SUM, 0.1), ce["y_sum"]);
  // the ignored entry gives 0 with reduction none, as in PyTorch
  expect_matches(nn::cross_entropy(logits, labels, Reduction::NONE), ce["y_none"]);
  expect_matches(
      nn::cross_entropy(tensor_of(L["ce_spatial"]["x"]), tensor_of(L["ce_spatial"]["target"], dtypes::int32)),
      L["ce_spatial"]["y"]);
  expect_matches(nn::cross_entropy(tensor_of(L["ce_probs"]["x"]), tensor_of(L["ce_probs"]["target"]),
                                   Reduction::MEAN, 0.2),
                 L["ce_probs"]["y"]);
  expect_matches(nn::nll_loss(tensor_of(L["nll"]["x"]), tensor_of(L["nll"]["target"], dtypes::int32)),
                 L["nll"]["y"]);
  const json& b = L["bce_logits"];
  expect_matches(nn::binary_cross_entropy_with_logits(tensor_of(b["x"]), tensor_of(b["target"]),
                                                      Reduction::MEAN, tensor_of(b["pos_weight"])),
                 b["y"]);
  expect_matches(
      nn::binary_cross_entropy_with_logits(tensor_of(b["x"]), tensor_of(b["target"]), Reduction::SUM),
      b["y_plain"]);
  expect_matches(nn::binary_cross_entropy(tensor_of(L["bce"]["x"]), tensor_of(L["bce"]["target"])),
                 L["bce"]["y"]);
  expect_matches(nn::mse_loss(tensor_of(L["mse"]["x"]), tensor_of(L["mse"]["target"])), L["mse"]["y"]);
  expect_matches(nn::l1_loss(tensor_of(L["mse"]["x"]), tensor_of(L["mse"]["target"])), L["mse"]["y_l1"]);
  expect_error<ShapeError>(
      [&] {
        nn::cross_entropy(logits, Tensor({1, 2}));
      },
      "[cross_entropy] target (2,) does not fit input (5,4): expected (5,)");
  expect_error<ShapeError>([&] { nn::mse_loss(logits, Tensor::ones({4})); },
                           "[mse_loss] input (5,4) and target (4,) must have the same shape");
}
