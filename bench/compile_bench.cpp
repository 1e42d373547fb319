// Compile benchmark: kernel sources (files, e.g. the `source` of lowered kernels a DEBUG=4 run printed)
// compiled and loaded one after another on one device, with the CPU time of each step on this thread
// (a fair figure on a busy machine, unlike wall time). Asserts nothing.
//   compile_bench [--device CLANG] [--repeat R] [--each] FILE...
// (TG_CLANG_FLAGS=-O1 compares another optimization level: the flags are part of the compiler)
#include <time.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "runtime/registry.hpp"

namespace {

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// The kernel's entry point: the last non-static function the C source defines.
std::string entry_name(const std::string& src) {
  std::string name;
  std::istringstream in(src);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("void ", 0) != 0) continue;
    size_t open = line.find('(');
    if (open != std::string::npos) name = line.substr(5, open - 5);
  }
  return name;
}

}  // namespace

int main(int argc, char** argv) {
  std::string device = "CLANG";
  int repeat = 1;
  bool each = false;
  std::vector<std::string> files;
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    if (a == "--device" && i + 1 < argc)
      device = argv[++i];
    else if (a == "--repeat" && i + 1 < argc)
      repeat = std::max(1, std::stoi(argv[++i]));
    else if (a == "--each")
      each = true;
    else
      files.push_back(a);
  }
  std::vector<std::string> sources;
  for (const std::string& f : files) {
    std::ifstream in(f);
    std::stringstream ss;
    ss << in.rdbuf();
    sources.push_back(ss.str());
  }
  tg::runtime::Device& dev = tg::runtime::device(device);
  dev.compile("void warm_up(void* const* bufs, const long long* vals, int core_id) {}\n");  // one-time set-up
  double best_compile = 1e30, best_load = 1e30;
  for (int r = 0; r < repeat; r++) {
    double compile = 0, load = 0;
    for (size_t i = 0; i < sources.size(); i++) {
      double t0 = thread_cpu_seconds();
      tg::sdk::Blob bin = dev.compile(sources[i]);
      double t1 = thread_cpu_seconds();
      auto program = dev.load(entry_name(sources[i]), bin.bytes());
      double t2 = thread_cpu_seconds();
      compile += t1 - t0, load += t2 - t1;
      if (each && r == 0)
        fmt::print("{} compile {:.2f} ms load {:.2f} ms\n", files[i], (t1 - t0) * 1e3, (t2 - t1) * 1e3);
    }
    best_compile = std::min(best_compile, compile), best_load = std::min(best_load, load);
  }
  fmt::print("kernels {}\ncompile_cpu_ms {:.1f}\nload_cpu_ms {:.1f}\nper_kernel_ms {:.2f}\n", sources.size(),
             best_compile * 1e3, best_load * 1e3,
             (best_compile + best_load) * 1e3 / std::max<size_t>(1, sources.size()));
}
