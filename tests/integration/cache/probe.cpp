// A small program for the cache test: realizes two results on the default device, prints them and
// the runtime counters (kernels compiled, disk and memory cache hits, launches, kernels lowered and
// lowered kernels read from disk) on stdout.
#include <cstdio>
#include <vector>

#include "runtime/stats.hpp"
#include "tensor/tensor.hpp"

using tg::Tensor;

namespace {
void print_row(const char* name, const std::vector<float>& v) {
  std::printf("%s", name);
  for (float f : v) std::printf(" %g", static_cast<double>(f));
  std::printf("\n");
}
}  // namespace

int main() {
  Tensor x = Tensor::arange(12).reshape({3, 4}).cast(tg::dtypes::float32);
  Tensor w = Tensor(std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}, {4, 2});
  print_row("y1", ((x.matmul(w) - 100).relu().sum(1)).to_vector<float>());
  print_row("y2", (x.sum(0) * 0.5).to_vector<float>());
  // Three independent kernels in one schedule (compiled ahead on two threads when new).
  std::vector<Tensor> three = {x.sum(1), x.max(0), (x * 2).sum(0)};
  Tensor::realize_all(three);
  std::vector<float> y3;
  for (const Tensor& t : three)
    for (float f : t.to_vector<float>()) y3.push_back(f);
  print_row("y3", y3);
  tg::runtime::RuntimeStats s = tg::runtime::runtime_stats();
  std::printf(
      "stats compiled=%llu disk_hits=%llu memory_hits=%llu launched=%llu lowered=%llu "
      "lowered_disk_hits=%llu\n",
      static_cast<unsigned long long>(s.compiled), static_cast<unsigned long long>(s.disk_hits),
      static_cast<unsigned long long>(s.memory_hits), static_cast<unsigned long long>(s.launched),
      static_cast<unsigned long long>(s.lowered), static_cast<unsigned long long>(s.lowered_disk_hits));
  return 0;
}
