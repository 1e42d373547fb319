// A small program for the BEAM test: a matmul and a row sum of host data (built from the formulas the test
// repeats), realized on the default device; prints the results and the runtime counters on stdout. With
// the argument "compile": compiles a set of sources one by one, then on several threads at once (as the
// search does), and prints how many binaries came out the same.
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "runtime/registry.hpp"
#include "runtime/stats.hpp"
#include "tensor/tensor.hpp"

using tg::Tensor;

namespace {

constexpr int M = 8, K = 12, N = 16;

void print_row(const char* name, const std::vector<float>& v) {
  std::printf("%s", name);
  for (float f : v) std::printf(" %g", static_cast<double>(f));
  std::printf("\n");
}

int parallel_compile() {
  tg::runtime::Device& dev = tg::runtime::default_device();
  std::vector<std::string> sources;
  for (int i = 0; i < 16; i++)
    sources.push_back(
        fmt::format("void k{0}(void* const* bufs, const long long* vals, int core_id) {{\n"
                    "  float* p = (float*)bufs[0];\n  for (int j = 0; j < 64 + {0}; j++) p[j] = p[j] * "
                    "{0}.5f + (float)j;\n}}\n",
                    i));
  std::vector<std::vector<std::byte>> serial, parallel(sources.size());
  for (const std::string& s : sources) {
    tg::sdk::Blob b = dev.compile(s);
    serial.emplace_back(b.bytes().begin(), b.bytes().end());
  }
  std::vector<std::thread> workers;
  for (size_t t = 0; t < 4; t++)
    workers.emplace_back([&, t] {
      for (size_t i = t; i < sources.size(); i += 4) {
        tg::sdk::Blob b = dev.compile(sources[i]);
        parallel[i].assign(b.bytes().begin(), b.bytes().end());
      }
    });
  for (std::thread& w : workers) w.join();
  size_t same = 0;
  for (size_t i = 0; i < sources.size(); i++) same += !serial[i].empty() && serial[i] == parallel[i];
  std::printf("parallel_compile same=%zu of %zu\n", same, sources.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "compile") == 0) return parallel_compile();
  std::vector<float> a(M * K), b(K * N);
  for (int i = 0; i < M; i++)
    for (int k = 0; k < K; k++) a[i * K + k] = static_cast<float>((i * 3 + k) % 7 - 3);
  for (int k = 0; k < K; k++)
    for (int j = 0; j < N; j++) b[k * N + j] = static_cast<float>((k * 5 + j) % 11 - 5);
  Tensor x(a, {M, K}), w(b, {K, N});
  print_row("matmul", x.matmul(w).to_vector<float>());
  print_row("rowsum", (w * 2).sum(1).to_vector<float>());
  tg::runtime::RuntimeStats s = tg::runtime::runtime_stats();
  std::printf("stats compiled=%llu disk_hits=%llu beam_searched=%llu beam_cache_hits=%llu\n",
              static_cast<unsigned long long>(s.compiled), static_cast<unsigned long long>(s.disk_hits),
              static_cast<unsigned long long>(s.beam_searched),
              static_cast<unsigned long long>(s.beam_cache_hits));
  return 0;
}
