// tg::dist under `mpirun -np N`: the all-reduce's time and bus bandwidth by message size, and the tensor
// path train-mnist takes per step (all_reduce_mean of the CNN's gradients and BatchNorm statistics, then
// the weight hash check), split into its parts. Rank 0 prints; docs/scaling.md quotes the numbers.
#include <algorithm>
#include <chrono>
#include <functional>
#include <vector>

#include <fmt/format.h>

#include "apps/tg/mnist_model.hpp"
#include "dist/data_parallel.hpp"

using namespace tg;

namespace {
// Median seconds of reps calls, after a barrier each so that no rank starts late.
double median_s(dist::Communicator& c, int reps, const std::function<void()>& fn) {
  std::vector<double> t;
  fn();
  for (int i = 0; i < reps; i++) {
    c.barrier();
    auto t0 = std::chrono::steady_clock::now();
    fn();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}
}  // namespace

int main() {
  auto comm = dist::init("mpi");
  int n = comm->size();
  bool lead = comm->rank() == 0;
  if (lead) fmt::print("{} ranks, {}\n{:>12} {:>12} {:>14}\n", n, comm->name(), "bytes", "ms", "bus GB/s");
  for (size_t bytes : {size_t{4} << 10, size_t{64} << 10, size_t{343} << 10, size_t{4} << 20, size_t{64} << 20}) {
    std::vector<float> v(bytes / 4, 1.0f);
    double s = median_s(*comm, bytes > (size_t{4} << 20) ? 5 : 50, [&] { comm->all_reduce(std::span(v)); });
    // a ring all-reduce moves 2(N-1)/N of the data through each link
    if (lead) fmt::print("{:>12} {:>12.3f} {:>14.2f}\n", bytes, 1e3 * s, 2.0 * (n - 1) / n * bytes / s / 1e9);
  }
  auto model = apps::fashion_mnist_cnn();
  std::vector<Tensor> state = model->parameters();
  for (auto& [name, b] : model->named_buffers()) state.push_back(b);
  for (Tensor& t : state) t = (t + 1).contiguous().realize();  // stand-ins for gradients on the device
  int64_t floats = 0;
  for (const Tensor& t : state) floats += t.numel();
  double pack = median_s(*comm, 30, [&] {
    for (const Tensor& t : state) t.to_bytes();
  });
  double mean = median_s(*comm, 30, [&] { dist::all_reduce_mean(*comm, state); });
  double hash = median_s(*comm, 30, [&] { dist::check_same(*comm, dist::hash_values(state), "weights"); });
  if (lead)
    fmt::print("train-mnist's CNN on {}: {} tensors, {} KB\n  all_reduce_mean {:.3f} ms (copy to host alone "
               "{:.3f} ms)\n  weight hash check {:.3f} ms\n",
               state[0].device(), state.size(), floats * 4 / 1024, 1e3 * mean, 1e3 * pack, 1e3 * hash);
  return 0;
}
