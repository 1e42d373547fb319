#include "plugins/hip/compiler.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <regex>
#include <sstream>

#include <fmt/format.h>

#include "base/env.hpp"

namespace tg::hip {

using tg::sdk::Code;
using tg::sdk::Status;

namespace {

namespace fs = std::filesystem;

// Targets clang 15 knows that ROCm 5.2's device libraries predate: their one missing file,
// oclc_isa_version_<x>.bc, holds nothing but the ISA version constant, so it is made with that number.
constexpr const char* kBeyondLibs[] = {"gfx1100", "gfx1101", "gfx1102", "gfx1103"};

// Runs argv, returning its exit status and what it printed (stdout and stderr).
int run(const std::vector<std::string>& argv, std::string* out) {
  std::string cmd;
  for (const std::string& a : argv) cmd += "'" + a + "' ";
  cmd += "2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return -1;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out->append(buf, n);
  int status = pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// The first program of names on PATH (or a path as given), "" when none.
std::string find_program(std::initializer_list<std::string> names) {
  std::vector<fs::path> dirs;
  if (const char* path = std::getenv("PATH"))
    for (std::string_view p(path); !p.empty();) {
      size_t c = std::min(p.find(':'), p.size());
      if (c > 0) dirs.emplace_back(std::string(p.substr(0, c)));
      p.remove_prefix(std::min(c + 1, p.size()));
    }
  std::error_code ec;
  for (const std::string& n : names) {
    if (n.find('/') != std::string::npos) {
      if (fs::exists(n, ec)) return n;
      continue;
    }
    for (const fs::path& d : dirs)
      if (fs::exists(d / n, ec)) return (d / n).string();
  }
  return "";
}

// A folder of our own for files made once per user (the synthesized ISA bitcode).
fs::path scratch_dir() {
  fs::path d = fs::temp_directory_path() / fmt::format("tg-hip-{}", getuid());
  fs::create_directories(d);
  return d;
}

struct TempDir {
  fs::path path;
  TempDir() {
    std::string t = (fs::temp_directory_path() / "tg-hip-XXXXXX").string();
    if (mkdtemp(t.data()) == nullptr)
      throw std::runtime_error("[HIP compile] cannot create a temporary folder");
    path = t;
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

std::string read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

// oclc_isa_version_<x>.bc for an arch the device libraries lack: one of theirs (so the data layout and
// linkage match) with its version number replaced, through llvm-dis and llvm-as, once per user.
std::string synthesized_isa_bitcode(const Toolchain& t, const Arch& a) {
  static std::mutex mu;
  std::lock_guard lock(mu);
  fs::path bc = scratch_dir() / fmt::format("oclc_isa_version_{}.bc", a.name.substr(3));
  if (fs::exists(bc)) return bc.string();
  fs::path model = fs::path(t.device_libs) / "oclc_isa_version_1030.bc";
  std::string ir, out;
  if (run({t.llvm_dis, model.string(), "-o", "-"}, &ir) != 0)
    throw std::runtime_error(
        fmt::format("[HIP compile] {} cannot read {}: {}", t.llvm_dis, model.string(), ir));
  static const std::regex version(R"(constant i32 [0-9]+)");
  ir = std::regex_replace(ir, version, fmt::format("constant i32 {}", a.isa_version));
  fs::path ll = fs::path(bc).replace_extension(fmt::format("{}.ll", getpid()));
  fs::path tmp = fs::path(bc).replace_extension(fmt::format("{}.bc", getpid()));
  std::ofstream(ll) << ir;
  int rc = run({t.llvm_as, ll.string(), "-o", tmp.string()}, &out);
  fs::remove(ll);
  if (rc != 0)
    throw std::runtime_error(
        fmt::format("[HIP compile] {} could not make the ISA bitcode for {}: {}", t.llvm_as, a.name, out));
  fs::rename(tmp, bc);  // atomic: a concurrent process sees the whole file or none
  return bc.string();
}

}  // namespace

std::optional<Arch> parse_arch(std::string_view name) {
  if (!name.starts_with("gfx") || name.size() < 6 || name.size() > 7) return std::nullopt;
  std::string_view v = name.substr(3);
  int major = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size() - 2, major);
  char minor = v[v.size() - 2], step = v.back();
  bool hex = (step >= '0' && step <= '9') || (step >= 'a' && step <= 'f');
  if (ec != std::errc() || end != v.data() + v.size() - 2 || minor < '0' || minor > '9' || !hex)
    return std::nullopt;
  int stepping = step <= '9' ? step - '0' : step - 'a' + 10;
  return Arch{std::string(name), major * 1000 + (minor - '0') * 100 + stepping, major < 10};
}

const Toolchain* toolchain(std::string* why) {
  static Toolchain t;
  static std::string error;
  static std::once_flag once;
  std::call_once(once, [] {
    std::string clang = env::get("TG_HIP_CLANG");
    std::error_code ec;
    if (!clang.empty() && !fs::exists(clang, ec)) {
      error = fmt::format("TG_HIP_CLANG names {}, which does not exist", clang);
      return;
    }
    if (clang.empty())
      clang = find_program({"/opt/rocm/llvm/bin/clang", "clang-18", "clang-17", "clang-16", "clang-15"});
    if (clang.empty()) {
      error =
          "no clang with the AMDGPU backend: install hipcc (Debian: it brings clang-15 and the ROCm device "
          "libraries) or ROCm, or set TG_HIP_CLANG";
      return;
    }
    // Run from its real folder, so the driver finds its own lld there rather than an older one on PATH.
    fs::path real = fs::canonical(clang, ec);
    t.clang = ec ? clang : real.string();
    fs::path bin = fs::path(t.clang).parent_path();
    t.objdump = (bin / "llvm-objdump").string(), t.llvm_as = (bin / "llvm-as").string();
    t.llvm_dis = (bin / "llvm-dis").string();
    std::string out;
    if (run({clang, "--version"}, &out) != 0) {
      error = fmt::format("{} --version failed: {}", clang, out);
      return;
    }
    t.version = out.substr(0, out.find('\n'));
    std::vector<fs::path> dirs = {"/opt/rocm/amdgcn/bitcode", "/usr/lib/x86_64-linux-gnu/amdgcn/bitcode",
                                  "/usr/lib/aarch64-linux-gnu/amdgcn/bitcode", "/usr/lib/amdgcn/bitcode"};
    if (std::string d = env::get("TG_ROCM_DEVICE_LIBS"); !d.empty()) dirs = {d};
    for (const fs::path& d : dirs)
      if (t.device_libs.empty() && fs::exists(d / "ocml.bc", ec) && fs::exists(d / "ockl.bc", ec))
        t.device_libs = d.string();
    if (t.device_libs.empty())
      error =
          "the ROCm device libraries (ocml.bc, ockl.bc) are not installed: install rocm-device-libs (Debian) "
          "or ROCm, or set TG_ROCM_DEVICE_LIBS to their bitcode folder";
  });
  if (!error.empty()) {
    if (why != nullptr) *why = error;
    return nullptr;
  }
  return &t;
}

std::vector<std::string> supported_archs(std::string* why) {
  const Toolchain* t = toolchain(why);
  if (t == nullptr) return {};
  std::vector<Arch> archs;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(t->device_libs, ec)) {
    std::string f = e.path().filename().string();
    if (!f.starts_with("oclc_isa_version_") || !f.ends_with(".bc")) continue;
    auto a = parse_arch("gfx" + f.substr(17, f.size() - 20));
    if (a && a->isa_version >= 9000) archs.push_back(*a);
  }
  for (const char* name : kBeyondLibs)
    if (std::none_of(archs.begin(), archs.end(), [&](const Arch& a) { return a.name == name; }))
      archs.push_back(*parse_arch(name));
  std::sort(archs.begin(), archs.end(),
            [](const Arch& a, const Arch& b) { return a.isa_version < b.isa_version; });
  std::vector<std::string> names;
  for (const Arch& a : archs) names.push_back(a.name);
  return names;
}

HipCompiler::HipCompiler(const Arch& arch) : arch_(arch) {
  std::string why;
  const Toolchain* t = toolchain(&why);
  if (t == nullptr) throw std::runtime_error(why);
  std::vector<std::string> archs = supported_archs(&why);
  if (std::find(archs.begin(), archs.end(), arch.name) == archs.end())
    throw std::runtime_error(
        fmt::format("{} with the device libraries in {} cannot compile for {}; it knows: {}", t->version,
                    t->device_libs, arch.name, fmt::join(archs, " ")));
  fs::path libs(t->device_libs);
  std::string isa = (libs / fmt::format("oclc_isa_version_{}.bc", arch.name.substr(3))).string();
  if (!fs::exists(isa)) isa = synthesized_isa_bitcode(*t, arch);
  // -ffp-contract=off: a*b+c stays two roundings as in the reference; fused multiply-adds are explicit.
  // Denormals kept, finite math not assumed, sqrt correctly rounded: the oclc controls say the same to ocml.
  args_ = {t->clang,
           "-x",
           "hip",
           "--offload-arch=" + arch.name,
           "--cuda-device-only",
           "--no-gpu-bundle-output",
           "-nogpulib",
           "-nogpuinc",
           "-O3",
           "-ffp-contract=off",
           "-mcode-object-version=4",
           "-std=c++17"};
  for (const std::string& lib :
       {(libs / "ocml.bc").string(), (libs / "ockl.bc").string(), isa,
        (libs / (arch.wave64 ? "oclc_wavefrontsize64_on.bc" : "oclc_wavefrontsize64_off.bc")).string(),
        (libs / "oclc_daz_opt_off.bc").string(), (libs / "oclc_finite_only_off.bc").string(),
        (libs / "oclc_unsafe_math_off.bc").string(), (libs / "oclc_correctly_rounded_sqrt_on.bc").string(),
        (libs / "oclc_abi_version_400.bc").string()})
    args_.insert(args_.end(), {"-Xclang", "-mlink-builtin-bitcode", "-Xclang", lib});
  cache_key_ = fmt::format("{} device-libs {} {} -O3 -ffp-contract=off code-object-v4", t->version,
                           t->device_libs, arch.name);
}

Status HipCompiler::compile(std::string_view source, tg::sdk::Blob& binary) noexcept {
  return tg::sdk::guard([&]() -> Status {
    TempDir dir;
    fs::path src = dir.path / "kernel.hip", obj = dir.path / "kernel.o";
    std::ofstream(src, std::ios::binary) << source;
    std::vector<std::string> argv = args_;
    argv.insert(argv.end(), {"-c", src.string(), "-o", obj.string()});
    std::string log;
    if (int rc = run(argv, &log); rc != 0 || !fs::exists(obj))
      return {Code::compile_error,
              fmt::format("[HIP compile] clang rejected the kernel for {} (exit {}):\n{}\n{}", arch_.name, rc,
                          log, source)};
    binary.assign(read_file(obj));
    return {};
  });
}

Status HipCompiler::disassemble(std::span<const std::byte> binary, tg::sdk::Blob& text) noexcept {
  return tg::sdk::guard([&]() -> Status {
    if (binary.size() < 4 || std::memcmp(binary.data(),
                                         "\x7f"
                                         "ELF",
                                         4) != 0)
      return {Code::invalid_argument, "[HIP disassemble] not an AMD GPU code object (no ELF header)"};
    std::string why;
    const Toolchain* t = toolchain(&why);
    if (t == nullptr) return tg::sdk::unsupported(why);
    if (!fs::exists(t->objdump))
      return tg::sdk::unsupported(fmt::format("no {}: install llvm beside {}", t->objdump, t->clang));
    TempDir dir;
    fs::path obj = dir.path / "kernel.o";
    std::ofstream(obj, std::ios::binary)
        .write(reinterpret_cast<const char*>(binary.data()), static_cast<std::streamsize>(binary.size()));
    std::string out;
    if (int rc = run({t->objdump, "-d", "--mcpu=" + arch_.name, obj.string()}, &out); rc != 0)
      return {Code::runtime_error, fmt::format("[HIP disassemble] {} failed ({}): {}", t->objdump, rc, out)};
    text.assign(out);
    return {};
  });
}

}  // namespace tg::hip
