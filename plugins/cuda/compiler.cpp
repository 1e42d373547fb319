#include "plugins/cuda/compiler.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <regex>

#include <fmt/format.h>

#include "base/env.hpp"
#include "plugins/cuda/api.hpp"
#include "plugins/cuda/renderer.hpp"

namespace tg::cuda {

using tg::sdk::Code;
using tg::sdk::Status;

namespace {

namespace fs = std::filesystem;
constexpr char kMagic[8] = {'T', 'G', 'C', 'U', 'D', 'A', '2', '\0'};
constexpr size_t kHeader = sizeof kMagic + 16;  // + the cubin's size and the flags

std::string nvrtc_log(const NvrtcApi& n, nvrtcProgram p) {
  size_t size = 0;
  if (n.nvrtcGetProgramLogSize(p, &size) != NVRTC_SUCCESS || size == 0) return "";
  std::string log(size, '\0');
  n.nvrtcGetProgramLog(p, log.data());
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  return log;
}

// PTX -> cubin for sm; the cubin, or the linker's log as the error.
Status link_ptx(const JitLinkApi& j, const std::string& ptx, int sm, std::string* cubin) {
  std::string arch = fmt::format("-arch=sm_{}", sm);
  const char* opts[] = {arch.c_str(), "-O3"};
  nvJitLinkHandle h = nullptr;
  if (nvJitLinkResult r = j.nvJitLinkCreate(&h, 2, opts); r != NVJITLINK_SUCCESS)
    return {Code::compile_error,
            fmt::format("[CUDA compile] nvJitLinkCreate for sm_{} failed ({})", sm, int(r))};
  std::unique_ptr<nvJitLinkHandle, void (*)(nvJitLinkHandle*)> guard(&h, [](nvJitLinkHandle* p) {
    std::string ignored;
    jitlink_api(&ignored)->nvJitLinkDestroy(p);
  });
  nvJitLinkResult r = j.nvJitLinkAddData(h, NVJITLINK_INPUT_PTX, ptx.data(), ptx.size(), "kernel.ptx");
  if (r == NVJITLINK_SUCCESS) r = j.nvJitLinkComplete(h);
  if (r != NVJITLINK_SUCCESS) {
    size_t n = 0;
    std::string log;
    if (j.nvJitLinkGetErrorLogSize(h, &n) == NVJITLINK_SUCCESS && n > 0) {
      log.resize(n);
      j.nvJitLinkGetErrorLog(h, log.data());
    }
    return {
        Code::compile_error,
        fmt::format("[CUDA compile] ptxas (nvJitLink) rejected the PTX for sm_{}:\n{}\n{}", sm, log, ptx)};
  }
  size_t n = 0;
  j.nvJitLinkGetLinkedCubinSize(h, &n);
  cubin->resize(n);
  j.nvJitLinkGetLinkedCubin(h, cubin->data());
  return {};
}

// The first cuobjdump that exists: TG_CUOBJDUMP, PATH, the toolkit, the PyPI wheel's bin folder.
std::string find_cuobjdump() {
  if (std::string e = env::get("TG_CUOBJDUMP"); !e.empty()) return e;
  std::vector<fs::path> dirs;
  if (const char* path = std::getenv("PATH"))
    for (std::string_view p(path); !p.empty();) {
      size_t c = std::min(p.find(':'), p.size());
      if (c > 0) dirs.emplace_back(std::string(p.substr(0, c)));
      p.remove_prefix(std::min(c + 1, p.size()));
    }
  dirs.emplace_back("/usr/local/cuda/bin");
  std::vector<fs::path> roots;
  if (const char* home = std::getenv("HOME")) roots.push_back(fs::path(home) / ".local/lib");
  roots.insert(roots.end(), {"/usr/local/lib", "/usr/lib"});
  std::error_code ec;
  for (const fs::path& root : roots)
    for (const auto& py : fs::directory_iterator(root, ec))
      if (py.path().filename().string().starts_with("python3"))
        for (const char* sub : {"site-packages", "dist-packages"})
          for (const char* cu : {"cu13", "cu12", "cuda_cuobjdump"})
            dirs.push_back(py.path() / sub / "nvidia" / cu / "bin");
  for (const fs::path& d : dirs)
    if (fs::exists(d / "cuobjdump", ec)) return (d / "cuobjdump").string();
  return "";
}

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

}  // namespace

std::optional<int> parse_arch(std::string_view arch) {
  if (!arch.starts_with("sm_") || arch.size() < 5) return std::nullopt;
  int sm = 0;
  auto [end, ec] = std::from_chars(arch.data() + 3, arch.data() + arch.size(), sm);
  if (ec != std::errc() || end != arch.data() + arch.size() || sm < 10) return std::nullopt;
  return sm;
}

std::vector<int> supported_archs(std::string* why) {
  const NvrtcApi* n = nvrtc_api(why);
  if (n == nullptr) return {};
  int count = 0;
  if (n->nvrtcGetNumSupportedArchs(&count) != NVRTC_SUCCESS || count <= 0) return {};
  std::vector<int> archs(static_cast<size_t>(count));
  n->nvrtcGetSupportedArchs(archs.data());
  return archs;
}

std::string pin_ptx_version(std::string ptx, int sm) {
  if (sm > 90) return ptx;
  static const std::regex version(R"(\.version [0-9]+\.[0-9]+)");
  return std::regex_replace(ptx, version, ".version 7.8", std::regex_constants::format_first_only);
}

CudaCompiler::CudaCompiler(int sm) : sm_(sm) {
  std::string why;
  const NvrtcApi* n = nvrtc_api(&why);
  if (n == nullptr) throw std::runtime_error(why);
  std::vector<int> archs = supported_archs(&why);
  if (std::find(archs.begin(), archs.end(), sm) == archs.end()) {
    std::string list;
    for (int a : archs) list += fmt::format(" sm_{}", a);
    throw std::runtime_error(
        fmt::format("NVRTC {}.{} cannot compile for sm_{}; it knows:{}", n->major, n->minor, sm, list));
  }
  // --fmad=false: a*b+c stays two roundings as in the reference; fused multiply-adds are explicit (fmaf).
  options_ = {fmt::format("--gpu-architecture=compute_{}", sm), "--fmad=false", "--std=c++17",
              "-default-device"};
  if (!n->include_dir.empty()) options_.push_back("-I" + n->include_dir);
  std::string jit = "none";
  if (const JitLinkApi* j = jitlink_api(&why)) jit = fmt::format("nvJitLink-{}.{}", j->major, j->minor);
  cache_key_ = fmt::format("nvrtc-{}.{} {} sm_{} ptx-pin-7.8 --fmad=false", n->major, n->minor, jit, sm);
}

Status CudaCompiler::compile(std::string_view source, tg::sdk::Blob& binary) noexcept {
  return tg::sdk::guard([&]() -> Status {
    std::string why;
    const NvrtcApi* n = nvrtc_api(&why);
    if (n == nullptr) return {Code::unavailable, why};
    std::string src(source);
    nvrtcProgram prog = nullptr;
    if (nvrtcResult r = n->nvrtcCreateProgram(&prog, src.c_str(), "kernel.cu", 0, nullptr, nullptr);
        r != NVRTC_SUCCESS)
      return {Code::compile_error,
              fmt::format("[CUDA compile] nvrtcCreateProgram: {}", n->nvrtcGetErrorString(r))};
    std::unique_ptr<nvrtcProgram, void (*)(nvrtcProgram*)> guard(&prog, [](nvrtcProgram* p) {
      std::string ignored;
      nvrtc_api(&ignored)->nvrtcDestroyProgram(p);
    });
    std::vector<const char*> opts;
    for (const std::string& o : options_) opts.push_back(o.c_str());
    if (nvrtcResult r = n->nvrtcCompileProgram(prog, static_cast<int>(opts.size()), opts.data());
        r != NVRTC_SUCCESS)
      return {Code::compile_error,
              fmt::format("[CUDA compile] NVRTC: {}\n{}", n->nvrtcGetErrorString(r), nvrtc_log(*n, prog))};
    size_t size = 0;
    n->nvrtcGetPTXSize(prog, &size);
    std::string ptx(size, '\0');
    n->nvrtcGetPTX(prog, ptx.data());
    while (!ptx.empty() && ptx.back() == '\0') ptx.pop_back();
    ptx = pin_ptx_version(std::move(ptx), sm_);
    std::string cubin;
    if (const JitLinkApi* j = jitlink_api(&why)) {
      if (Status s = link_ptx(*j, ptx, sm_, &cubin); !s.ok()) return s;
    } else {
      return {Code::unavailable, fmt::format("[CUDA compile] {}: install the CUDA toolkit's nvJitLink", why)};
    }
    std::span<std::byte> out = binary.resize(kHeader + cubin.size() + ptx.size());
    uint64_t cubin_size = cubin.size(), flags = source.starts_with(kGlobalIdMarker) ? 1 : 0;
    std::memcpy(out.data(), kMagic, sizeof kMagic);
    std::memcpy(out.data() + sizeof kMagic, &cubin_size, 8);
    std::memcpy(out.data() + sizeof kMagic + 8, &flags, 8);
    std::memcpy(out.data() + kHeader, cubin.data(), cubin.size());
    std::memcpy(out.data() + kHeader + cubin.size(), ptx.data(), ptx.size());
    return {};
  });
}

Status CudaCompiler::disassemble(std::span<const std::byte> binary, tg::sdk::Blob& text) noexcept {
  return tg::sdk::guard([&]() -> Status {
    auto bin = cuda_binary(binary);
    if (!bin) return {Code::invalid_argument, "[CUDA disassemble] not a binary made by the CUDA compiler"};
    std::string tool = find_cuobjdump();
    if (tool.empty())
      return tg::sdk::unsupported(
          "no cuobjdump: install the CUDA toolkit or `pip install nvidia-cuda-cuobjdump`, "
          "or set TG_CUOBJDUMP");
    char name[] = "/tmp/tg-cuda-XXXXXX";
    int fd = mkstemp(name);
    if (fd < 0) return {Code::runtime_error, "[CUDA disassemble] cannot create a temporary file"};
    bool written =
        ::write(fd, bin->cubin.data(), bin->cubin.size()) == static_cast<ssize_t>(bin->cubin.size());
    ::close(fd);
    std::string out;
    // cuobjdump runs nvdisasm, which the toolkit and the wheels keep beside it.
    std::string dir = fs::path(tool).parent_path().string();
    int rc = written ? run({"env", "NVDISASM_PATH=" + dir,
                            "PATH=" + dir + ":" + (std::getenv("PATH") ? std::getenv("PATH") : ""), tool,
                            "-sass", name},
                           &out)
                     : -1;
    ::unlink(name);
    if (rc != 0)
      return {Code::runtime_error, fmt::format("[CUDA disassemble] {} failed ({}): {}", tool, rc, out)};
    text.assign(out);
    return {};
  });
}

std::optional<CudaBinary> cuda_binary(std::span<const std::byte> binary) {
  if (binary.size() < kHeader || std::memcmp(binary.data(), kMagic, sizeof kMagic) != 0) return std::nullopt;
  uint64_t n = 0, flags = 0;
  std::memcpy(&n, binary.data() + sizeof kMagic, 8);
  std::memcpy(&flags, binary.data() + sizeof kMagic + 8, 8);
  if (n > binary.size() - kHeader) return std::nullopt;
  std::span<const std::byte> rest = binary.subspan(kHeader);
  return CudaBinary{
      rest.first(n), {reinterpret_cast<const char*>(rest.data() + n), rest.size() - n}, (flags & 1) != 0};
}

}  // namespace tg::cuda
