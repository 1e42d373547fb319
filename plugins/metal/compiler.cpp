#include "plugins/metal/compiler.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>

#include <fmt/format.h>

#include "base/env.hpp"
#include "shim.hpp"  // generated from shim/metal_stdlib

namespace tg::metal {

using tg::sdk::Code;
using tg::sdk::Status;

namespace {

namespace fs = std::filesystem;

// Runs a shell command, returning its exit status and what it printed (stdout and stderr).
int run(const std::string& cmd, std::string* out) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) return -1;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out->append(buf, n);
  int status = pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace

// aarch64 gives _Float16 and a 64-bit long; -fsigned-char matches MSL's char. The comma warning catches
// OpenCL's (float4)(a, b, c, d), which C++ reads as a cast of the last component.
const char* shim_flags() {
  return "-fsyntax-only -x c++ -std=c++17 -target aarch64-linux-gnu -fsigned-char -nostdinc -ffreestanding "
         "-Wno-unknown-attributes -Werror";
}

ShimSyntaxCompiler::ShimSyntaxCompiler() : clang_(env::get("TG_METAL_CLANG")) {
  std::string tmpl = (fs::temp_directory_path() / "tg-metal-shim-XXXXXX").string();
  if (mkdtemp(tmpl.data()) == nullptr)
    throw std::runtime_error(fmt::format("[METAL] cannot make a folder for the Metal shim in {}",
                                         fs::temp_directory_path().string()));
  dir_ = tmpl;
  std::ofstream(dir_ / "metal_stdlib") << kMetalShim;
  std::string version;
  if (run(quote(clang_) + " --version", &version) != 0)
    throw std::runtime_error(fmt::format(
        "[METAL] the syntax check needs clang ('{}' did not run: {}); install clang or set TG_METAL_CLANG",
        clang_, version.substr(0, version.find('\n'))));
  cache_key_ = fmt::format("metal-shim-syntax {} {} shim:{:x}", version.substr(0, version.find('\n')),
                           shim_flags(), std::hash<std::string_view>{}(kMetalShim));
}

ShimSyntaxCompiler::~ShimSyntaxCompiler() {
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

Status ShimSyntaxCompiler::compile(std::string_view source, tg::sdk::Blob& binary) noexcept {
  return tg::sdk::guard([&]() -> Status {
    static std::atomic<uint64_t> counter{0};
    fs::path file = dir_ / fmt::format("kernel{}.metal", counter++);
    std::ofstream(file) << source;
    std::string log;
    int rc = run(fmt::format("{} {} -I {} {}", quote(clang_), shim_flags(), quote(dir_.string()),
                             quote(file.string())),
                 &log);
    std::error_code ec;
    fs::remove(file, ec);
    if (rc != 0)
      return {
          Code::compile_error,
          fmt::format("[METAL compile] the syntax check (clang with the project's Metal shim, not Apple's "
                      "compiler) rejected the kernel:\n{}\n{}",
                      log, source)};
    binary.assign(source);
    return {};
  });
}

}  // namespace tg::metal
