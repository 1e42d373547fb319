// Hardware limits for the benchmark suite: fp32 FMA peak (GFLOPS, every core pinned, the best of 256- and
// 512-bit vectors over 8 to 24 independent FMA chains, so both FMA ports are kept busy on any x86) and
// STREAM-style copy / read / triad bandwidth (GB/s, every core) twice: from DRAM (arrays four times the
// last-level cache or more) and from the cache (arrays a quarter of it).
//   probe [--quick]   prints `key value` lines: threads, fma_peak_gflops, fma_vector_bits, fma_chains,
//                     llc_bytes, dram_array_bytes, copy_gbps, read_gbps, triad_gbps (DRAM),
//                     cache_copy_gbps, cache_read_gbps, cache_triad_gbps
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

namespace {

using Clock = std::chrono::steady_clock;

// Runs body(thread index) on n threads, thread t pinned to CPU t, and returns the wall time in seconds.
double on_threads(unsigned n, const std::function<void(unsigned)>& body) {
  auto t0 = Clock::now();
  std::vector<std::thread> ts;
  for (unsigned t = 0; t < n; t++)
    ts.emplace_back([&body, t, n] {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(t % std::max(n, 1u), &set);
      pthread_setaffinity_np(pthread_self(), sizeof set, &set);  // best effort: unpinned if refused
      body(t);
    });
  for (auto& t : ts) t.join();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

volatile float sink;
volatile float seed_value = 1.0f;

template <int Bytes>
struct Width {
  static constexpr int kLanes = Bytes / static_cast<int>(sizeof(float));
  typedef float Vec __attribute__((vector_size(Bytes)));
};

// Chains independent multiply-adds of Bytes-wide vectors, iters times each.
template <int Bytes, int Chains>
float fma_chains(int64_t iters) {
  using W = Width<Bytes>;
  typename W::Vec acc[Chains], mul, add;
  for (int l = 0; l < W::kLanes; l++) mul[l] = seed_value * 0.999999f, add[l] = seed_value * 1e-7f;
  for (int c = 0; c < Chains; c++)
    for (int l = 0; l < W::kLanes; l++) acc[c][l] = seed_value * static_cast<float>(c + l);
  for (int64_t i = 0; i < iters; i++)
    for (int c = 0; c < Chains; c++) acc[c] = acc[c] * mul + add;
  float s = 0;
  for (int c = 0; c < Chains; c++)
    for (int l = 0; l < W::kLanes; l++) s += acc[c][l];
  return s;
}

template <int Bytes, int Chains>
double fma_gflops(unsigned threads, int64_t iters, int reps) {
  double best = 1e30;
  for (int r = 0; r < reps + 1; r++) {
    double dt = on_threads(threads, [&](unsigned) { sink = fma_chains<Bytes, Chains>(iters); });
    if (r > 0) best = std::min(best, dt);
  }
  return 2.0 * Chains * Width<Bytes>::kLanes * static_cast<double>(iters) * threads / best / 1e9;
}

struct Peak {
  double gflops = 0;
  int bits = 0, chains = 0;
  void take(double g, int b, int c) {
    if (g > gflops) gflops = g, bits = b, chains = c;
  }
};

// The same number of multiply-adds per configuration: 512-bit vectors take half the iterations of 256-bit.
Peak fma_peak(unsigned threads, int64_t flops, int reps) {
  Peak p;
  auto iters = [&](int lanes, int chains) { return flops / (2 * lanes * chains); };
  p.take(fma_gflops<32, 8>(threads, iters(8, 8), reps), 256, 8);
  p.take(fma_gflops<32, 12>(threads, iters(8, 12), reps), 256, 12);
  p.take(fma_gflops<32, 16>(threads, iters(8, 16), reps), 256, 16);
#if defined(__AVX512F__)
  p.take(fma_gflops<64, 8>(threads, iters(16, 8), reps), 512, 8);
  p.take(fma_gflops<64, 12>(threads, iters(16, 12), reps), 512, 12);
  p.take(fma_gflops<64, 16>(threads, iters(16, 16), reps), 512, 16);
  p.take(fma_gflops<64, 24>(threads, iters(16, 24), reps), 512, 24);
#endif
  return p;
}

// The last-level cache of CPU 0 in bytes (sysfs), or 32 MiB when it cannot be read.
size_t llc_bytes() {
  size_t best = 0;
  for (int i = 0; i < 8; i++) {
    std::ifstream f("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/size");
    std::string s;
    if (!(f >> s) || s.empty()) continue;
    size_t mult = s.back() == 'K' ? 1024 : s.back() == 'M' ? 1024 * 1024 : 1;
    best = std::max(best, static_cast<size_t>(std::stoull(s)) * mult);
  }
  return best ? best : size_t{32} << 20;
}

#if defined(__AVX512F__)
using Native = Width<64>;
#else
using Native = Width<32>;
#endif
using Vec = Native::Vec;  // the read kernel's accumulators
constexpr int kLanes = Native::kLanes;

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

struct Bandwidth {
  double copy, read, triad;
};

// copy (b = a), read (sum of a) and triad (a = b + 3c) over three arrays of n floats on every thread.
Bandwidth stream(size_t n, unsigned threads, int reps) {
  Stream s(n, threads);
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
      for (int k = 0; k < 4; k++) {
        Vec v;
        std::memcpy(&v, a + i + static_cast<size_t>(k * kLanes), sizeof v);
        acc[k] += v;
      }
    float t = 0;
    for (; i < hi; i++) t += a[i];
    for (int k = 0; k < 4; k++)
      for (int l = 0; l < kLanes; l++) t += acc[k][l];
    sink = t;
  });
  double triad = s.best(reps, [&](size_t lo, size_t hi) {
    for (size_t i = lo; i < hi; i++) a[i] = b[i] + 3.0f * c[i];
  });
  sink = a[s.n / 2] + b[s.n / 3];
  double bytes = static_cast<double>(s.n * sizeof(float));
  return {2 * bytes / copy / 1e9, bytes / read / 1e9, 3 * bytes / triad / 1e9};
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = argc > 1 && !std::strcmp(argv[1], "--quick");
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  int reps = quick ? 2 : 5;
  Peak peak = fma_peak(threads, quick ? 4'000'000'000 : 10'000'000'000, reps);
  size_t llc = llc_bytes();
  // DRAM: each array four times the last-level cache (at least 128 MiB), all three within a quarter of RAM.
  size_t ram = static_cast<size_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<size_t>(sysconf(_SC_PAGESIZE));
  size_t dram_bytes = std::min(std::max(4 * llc, size_t{128} << 20), ram / 12);
  Bandwidth dram = stream(dram_bytes / sizeof(float), threads, reps);
  Bandwidth cache = stream(llc / 4 / 3 / sizeof(float), threads, reps * 4);
  std::printf("threads %u\nfma_peak_gflops %.1f\nfma_vector_bits %d\nfma_chains %d\nllc_bytes %zu\n", threads,
              peak.gflops, peak.bits, peak.chains, llc);
  std::printf("dram_array_bytes %zu\ncopy_gbps %.1f\nread_gbps %.1f\ntriad_gbps %.1f\n", dram_bytes,
              dram.copy, dram.read, dram.triad);
  std::printf("cache_copy_gbps %.1f\ncache_read_gbps %.1f\ncache_triad_gbps %.1f\n", cache.copy, cache.read,
              cache.triad);
  return 0;
}
