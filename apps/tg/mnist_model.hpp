#pragma once
// The Fashion-MNIST CNN (tinygrad's "beautiful MNIST" model), shared by `tg train-mnist` and the
// training benchmark.
#include <memory>

#include "nn/layers.hpp"
#include "nn/module.hpp"

namespace tg::apps {

// Conv 5x5 32, Conv 5x5 32, BatchNorm, maxpool, Conv 3x3 64, Conv 3x3 64, BatchNorm, maxpool, Linear 576->10.
// A Sequential, so parameter names ("0.weight", "4.running_mean") match the same model in PyTorch.
inline std::shared_ptr<nn::Sequential> fashion_mnist_cnn() {
  using namespace tg::nn;
  auto m = std::make_shared<Sequential>();
  m->push_back(std::make_shared<Conv2d>(1, 32, 5));
  m->push_back(std::make_shared<ReLU>());
  m->push_back(std::make_shared<Conv2d>(32, 32, 5));
  m->push_back(std::make_shared<ReLU>());
  m->push_back(std::make_shared<BatchNorm2d>(32));
  m->push_back(std::make_shared<MaxPool2d>(2));
  m->push_back(std::make_shared<Conv2d>(32, 64, 3));
  m->push_back(std::make_shared<ReLU>());
  m->push_back(std::make_shared<Conv2d>(64, 64, 3));
  m->push_back(std::make_shared<ReLU>());
  m->push_back(std::make_shared<BatchNorm2d>(64));
  m->push_back(std::make_shared<MaxPool2d>(2));
  m->push_back(std::make_shared<Flatten>(1));
  m->push_back(std::make_shared<Linear>(576, 10));
  return m;
}

}  // namespace tg::apps
