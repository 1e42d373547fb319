#define BOOST_TEST_MODULE nn_train
// Normalization layers with learned weight and bias (LayerNorm, GroupNorm, BatchNorm with running
// statistics, a Linear-LayerNorm-Linear stack, Conv-BatchNorm-ReLU) trained for three steps with every
// loss form and optimizer, against PyTorch: the whole state after every step. Each update's gradient
// reads the old weight and bias of its layer, so the step's assigns read each other's targets.
#include <functional>
#include <memory>

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

std::shared_ptr<nn::Module> make_model(const std::string& name) {
  if (name == "layernorm") return std::make_shared<nn::LayerNorm>(Shape{6});
  if (name == "groupnorm") return std::make_shared<nn::GroupNorm>(2, 4);
  if (name == "batchnorm") return std::make_shared<nn::BatchNorm2d>(3);
  if (name == "linear_layernorm")
    return std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
        std::make_shared<nn::Linear>(5, 6), std::make_shared<nn::LayerNorm>(Shape{6}),
        std::make_shared<nn::Linear>(6, 4)});
  if (name == "conv_batchnorm")
    return std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
        std::make_shared<nn::Conv2d>(2, 3, 3, 1, 1, 1, 1, false), std::make_shared<nn::BatchNorm2d>(3),
        std::make_shared<nn::ReLU>()});
  BOOST_FAIL("unknown model " << name);
  return nullptr;
}

using LossFn = std::function<Tensor(const Tensor& out, const Tensor& target, const Tensor& y)>;

LossFn make_loss(const std::string& name) {
  if (name == "sum") return [](const Tensor& o, const Tensor&, const Tensor&) { return o.sum(); };
  if (name == "mean_of_square")
    return [](const Tensor& o, const Tensor& t, const Tensor&) { return ((o - t) * (o - t)).mean(); };
  if (name == "square_mean")
    return [](const Tensor& o, const Tensor& t, const Tensor&) { return (o - t).square().mean(); };
  if (name == "mse_loss")
    return [](const Tensor& o, const Tensor& t, const Tensor&) { return nn::mse_loss(o, t); };
  if (name == "cross_entropy")
    return [](const Tensor& o, const Tensor&, const Tensor& y) {
      return nn::cross_entropy(o.reshape({o.shape()[0], -1}), y);
    };
  BOOST_FAIL("unknown loss " << name);
  return nullptr;
}

std::unique_ptr<nn::optim::Optimizer> make_optimizer(const std::string& name, std::vector<Tensor> params) {
  if (name == "sgd") return std::make_unique<nn::optim::SGD>(std::move(params), 0.1);
  if (name == "sgd_momentum") return std::make_unique<nn::optim::SGD>(std::move(params), 0.05, 0.9);
  if (name == "adam") return std::make_unique<nn::optim::Adam>(std::move(params), 0.01);
  BOOST_FAIL("unknown optimizer " << name);
  return nullptr;
}

std::map<std::string, Tensor> state_of(const json& s) {
  std::map<std::string, Tensor> out;
  for (auto& [k, v] : s.items())
    out[k] = tensor_of(v, k.ends_with("num_batches_tracked") ? dtypes::int64 : dtypes::float32);
  return out;
}

// Three steps of one run; the loss is read before the second step only (the others realize it with the
// update, as a loop that never prints it does).
void train(const std::string& model_name, const json& c, const std::string& run, const json& want) {
  std::string loss_name = run.substr(0, run.find('/')), opt_name = run.substr(run.find('/') + 1);
  std::shared_ptr<nn::Module> model = make_model(model_name);
  nn::load_state_dict(*model, state_of(c["state"]));
  std::unique_ptr<nn::optim::Optimizer> opt = make_optimizer(opt_name, model->parameters());
  LossFn loss_fn = make_loss(loss_name);
  Tensor x = tensor_of(c["x"]), target = tensor_of(c["target"]), y = tensor_of(c["y"], dtypes::int32);
  for (size_t s = 0; s < want["states"].size(); s++) {
    BOOST_TEST_CONTEXT("step " << s + 1) {
      opt->zero_grad();
      Tensor loss = loss_fn((*model)(x), target, y);
      if (s == 1) BOOST_CHECK_CLOSE(loss.item<float>() + 10.0, want["losses"][s].get<double>() + 10.0, 1e-3);
      loss.backward();
      opt->step();
      const json& state = want["states"][s];
      for (auto& [name, t] : nn::state_dict(*model)) {
        BOOST_TEST_CONTEXT("state " << name) { expect_matches(t, state[name], 1e-4); }
      }
    }
  }
}

void train_all(const std::string& model_name) {
  const json& c = reference()["norm_train"][model_name];
  for (auto& [run, want] : c["runs"].items()) {
    BOOST_TEST_CONTEXT(model_name << " " << run) { train(model_name, c, run, want); }
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(layernorm_trains_like_torch) { train_all("layernorm"); }
BOOST_AUTO_TEST_CASE(groupnorm_trains_like_torch) { train_all("groupnorm"); }
BOOST_AUTO_TEST_CASE(batchnorm_with_running_stats_trains_like_torch) { train_all("batchnorm"); }
BOOST_AUTO_TEST_CASE(linear_layernorm_stack_trains_like_torch) { train_all("linear_layernorm"); }
BOOST_AUTO_TEST_CASE(conv_batchnorm_relu_trains_like_torch) { train_all("conv_batchnorm"); }
