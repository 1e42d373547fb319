// Hardware limits for the benchmark suite: fp32 FMA peak (GFLOPS, every core, independent vector FMA
// chains) and STREAM-style copy / read / triad bandwidth (GB/s, every core, arrays much larger than the
// caches).
//   probe [--quick]   prints `fma_peak_gflops X`, `copy_gbps X`, `read_gbps X`, `triad_gbps X`, `threads N`
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

namespace {

#if defined(__AVX512F__)
constexpr int kVecBytes = 64;
#else
constexpr int kVecBytes = 32;
#endif
constexpr int kLanes = kVecBytes / static_cast<int>(sizeof(float));
typedef float Vec __attribute__((vector_size(kVecBytes)));
constexpr int kChains = 10;  // enough independent chains to cover FMA latency x ports

using Clock = std::chrono::steady_clock;

// Runs body(thread index) on n threads and returns the wall time in seconds.
double on_threads(unsigned n, const std::function<void(unsigned)>& body) {
  auto t0 = Clock::now();
  std::vector<std::thread> ts;
  for (unsigned t = 0; t < n; t++) ts.emplace_back(body, t);
  for (auto& t : ts) t.join();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

volatile float sink;
volatile float seed_value = 1.0f;

float fma_chains(int64_t iters) {
  Vec acc[kChains];
  Vec mul, add;
  for (int l = 0; l < kLanes; l++) {
    mul[l] = seed_value * 0.999999f;
    add[l] = seed_value * 1e-7f;
  }
  for (int c = 0; c < kChains; c++)
    for (int l = 0; l < kLanes; l++) acc[c][l] = seed_value * static_cast<float>(c + l);
  for (int64_t i = 0; i < iters; i++)
    for (int c = 0; c < kChains; c++) acc[c] = acc[c] * mul + add;
  float s = 0;
  for (int c = 0; c < kChains; c++)
    for (int l = 0; l < kLanes; l++) s += acc[c][l];
  return s;
}

double fma_peak(unsigned threads, int64_t iters, int reps) {
  double best = 1e30;
  for (int r = 0; r < reps + 1; r++) {
    double dt = on_threads(threads, [&](unsigned) { sink = fma_chains(iters); });
    if (r > 0) best = std::min(best, dt);
  }
  return 2.0 * kChains * kLanes * static_cast<double>(iters) * threads / best / 1e9;
}

struct Stream {
  size_t n;
  unsigned threads;
  std::unique_ptr<float[]> a, b, c;

  Stream(size_t n_, unsigned t) : n(n_), threads(t), a(new float[n_]), b(new float[n_]), c(new float[n_]) {
    // First touch on the threads that use each part.
    on_threads(threads, [&](unsigned t) {
      auto [lo, hi] = part(t);
      for (size_t i = lo; i < hi; i++) a[i] = 1.0f, b[i] = 2.0f, c[i] = 0.5f;
    });
  }
  std::pair<size_t, size_t> part(unsigned t) const { return {n * t / threads, n * (t + 1) / threads}; }

  double best(int reps, const std::function<void(size_t, size_t)>& kernel) {
    double best = 1e30;
    for (int r = 0; r < reps + 1; r++) {
      double dt = on_threads(threads, [&](unsigned t) {
        auto [lo, hi] = part(t);
        kernel(lo, hi);
      });
      if (r > 0) best = std::min(best, dt);
    }
    return best;
  }
};

}  // namespace

int main(int argc, char** argv) {
  bool quick = argc > 1 && !std::strcmp(argv[1], "--quick");
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  int reps = quick ? 2 : 5;
  double peak = fma_peak(threads, quick ? 20'000'000 : 50'000'000, reps);
  Stream s(size_t{32} << 20, threads);  // 3 x 128 MB
  float* a = s.a.get();
  float* b = s.b.get();
  float* c = s.c.get();
  double copy = s.best(reps, [&](size_t lo, size_t hi) {
    for (size_t i = lo; i < hi; i++) b[i] = a[i];
  });
  double read = s.best(reps, [&](size_t lo, size_t hi) {  // vector accumulators: no reassociation needed
    Vec acc[4] = {};
    size_t i = lo;
    for (; i + 4 * kLanes <= hi; i += 4 * kLanes)
      for (int c = 0; c < 4; c++) {
        Vec v;
        std::memcpy(&v, a + i + static_cast<size_t>(c * kLanes), sizeof v);
        acc[c] += v;
      }
    float t = 0;
    for (; i < hi; i++) t += a[i];
    for (int c = 0; c < 4; c++)
      for (int l = 0; l < kLanes; l++) t += acc[c][l];
    sink = t;
  });
  double triad = s.best(reps, [&](size_t lo, size_t hi) {
    for (size_t i = lo; i < hi; i++) a[i] = b[i] + 3.0f * c[i];
  });
  sink = a[s.n / 2] + b[s.n / 3];
  double bytes = static_cast<double>(s.n * sizeof(float));
  std::printf(
      "threads %u\nvector_bits %d\nfma_peak_gflops %.1f\ncopy_gbps %.1f\nread_gbps %.1f\ntriad_gbps %.1f\n",
      threads, kVecBytes * 8, peak, 2 * bytes / copy / 1e9, bytes / read / 1e9, 3 * bytes / triad / 1e9);
  return 0;
}
