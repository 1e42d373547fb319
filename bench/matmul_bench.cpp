// One square matmul on one device, timed over repeated realizes (best of R, the device synchronized), with
// a check of a few output elements against float64 sums on the host. Prints one line:
//   matmul N DTYPE DEVICE: X ms, Y GFLOPS, max rel err E
//   matmul_bench [--device CUDA] [--n 4096] [--dtype float|half] [--repeat 10]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "runtime/registry.hpp"
#include "tensor/tensor.hpp"

using namespace tg;

int main(int argc, char** argv) {
  std::string device = "CLANG", dtype = "float";
  int64_t n = 1024;
  int repeat = 10;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--device")) device = argv[i + 1];
    if (!std::strcmp(argv[i], "--n")) n = std::atoll(argv[i + 1]);
    if (!std::strcmp(argv[i], "--dtype")) dtype = argv[i + 1];
    if (!std::strcmp(argv[i], "--repeat")) repeat = std::atoi(argv[i + 1]);
  }
  DType dt = dtype == "half" ? dtypes::float16 : dtypes::float32;
  // Small integers and halves: every product and sum is exact in half inputs and float sums.
  std::vector<float> av(n * n), bv(n * n);
  for (int64_t i = 0; i < n * n; i++)
    av[i] = static_cast<float>((i * 7) % 5) - 2, bv[i] = static_cast<float>((i * 3) % 7) * 0.5f - 1.5f;
  Tensor a = Tensor(av, {n, n}, dt, device).realize(), b = Tensor(bv, {n, n}, dt, device).realize();
  runtime::Device& dev = tg::runtime::device(device);
  Tensor c = a.matmul(b).realize();  // compiles
  dev.synchronize();
  double best = 1e30;
  for (int r = 0; r < repeat; r++) {
    auto t0 = std::chrono::steady_clock::now();
    c = a.matmul(b).realize();
    dev.synchronize();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::vector<float> got = c.cast(dtypes::float32).to_vector<float>();
  double err = 0;
  for (int64_t k = 0; k < 64; k++) {
    int64_t i = (k * 977) % n, j = (k * 613) % n;
    double want = 0;
    for (int64_t x = 0; x < n; x++) want += double(av[i * n + x]) * bv[x * n + j];
    err = std::max(err, std::abs(got[i * n + j] - want) / std::max(1.0, std::abs(want)));
  }
  fmt::print("matmul {} {} {}: {:.3f} ms, {:.0f} GFLOPS, max rel err {:.2g}\n", n, dtype, dev.str(),
             best * 1e3, 2.0 * n * n * n / best * 1e-9, err);
  return err < (dt == dtypes::float16 ? 2e-3 : 1e-4) ? 0 : 1;
}
