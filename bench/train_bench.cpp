// One training step of the Fashion-MNIST CNN (Adam, cross-entropy) on the default device: time to the
// first step (schedule + compile + run) and the mean time of the steps after it. Synthetic data, so it
// needs no data set. bench/train_bench.py runs it next to the same model in PyTorch.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "apps/tg/mnist_model.hpp"
#include "nn/losses.hpp"
#include "nn/optim.hpp"
#include "tensor/tensor.hpp"

int main(int argc, char** argv) {
  using tg::Tensor;
  int64_t batch = argc > 1 ? std::atoll(argv[1]) : 512, steps = argc > 2 ? std::atoll(argv[2]) : 4;
  if (batch <= 0 || steps < 2) {
    std::fprintf(stderr, "usage: train_bench [batch > 0] [steps >= 2]\n");
    return 2;
  }
  Tensor::manual_seed(0);
  auto model = tg::apps::fashion_mnist_cnn();
  tg::nn::optim::Adam opt(model->parameters(), 1e-3);
  std::vector<float> x(static_cast<size_t>(batch) * 784);
  std::vector<int32_t> y(static_cast<size_t>(batch));
  for (size_t i = 0; i < x.size(); i++) x[i] = static_cast<float>((i * 2654435761u) % 256) / 255.0f;
  for (size_t i = 0; i < y.size(); i++) y[i] = static_cast<int32_t>((i * 7) % 10);

  using clock = std::chrono::steady_clock;
  double first = 0, rest = 0;
  for (int64_t s = 0; s < steps; s++) {
    auto t0 = clock::now();
    model->train();
    Tensor loss = tg::nn::cross_entropy((*model)(Tensor(x, {batch, 1, 28, 28})), Tensor(y, {batch}));
    opt.zero_grad();
    loss.backward();
    std::vector<Tensor> todo = opt.schedule_step();
    todo.push_back(loss);
    Tensor::realize_all(todo);
    float l = loss.item<float>();
    double dt = std::chrono::duration<double>(clock::now() - t0).count();
    (s == 0 ? first : rest) += dt;
    std::fprintf(stderr, "step %lld loss %.4f %.3f s\n", static_cast<long long>(s + 1), l, dt);
  }
  fmt::print("first_step_s {:.3f}\nms_per_step {:.1f}\n", first, 1e3 * rest / static_cast<double>(steps - 1));
  return 0;
}
