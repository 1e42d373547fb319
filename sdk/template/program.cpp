// TEMPLATE runtime: a binary is a shared object; loading writes it to a private temporary file and
// dlopens it, launching calls the kernel once per task.
#include "program.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

namespace tpl {

using tg::sdk::Code;
using tg::sdk::Status;

static_assert(sizeof(long long) == sizeof(int64_t), "vals are passed to kernels as long long");

TemplateProgram::~TemplateProgram() { dlclose(library_); }

// Real device: record the kernel into a command buffer / stream (bind the buffers and the int values,
// dispatch dims.global workgroups of dims.local threads), submit it, and with `wait` block until it is
// done and report the kernel's own time (GPU timestamps) in *seconds. Here global[0] tasks run one
// after the other on the calling thread; each call gets its task index as core_id.
Status TemplateProgram::launch(std::span<const tg::sdk::Handle> bufs, std::span<const int64_t> vals,
                               const tg::sdk::LaunchDims& dims, bool wait, double* seconds) noexcept {
  if (dims.global[1] != 1 || dims.global[2] != 1 || dims.local[0] != 1 || dims.local[1] != 1 ||
      dims.local[2] != 1)
    return {Code::invalid_argument,
            "[TEMPLATE launch] runs global[0] tasks only; got global (" + std::to_string(dims.global[0]) +
                "," + std::to_string(dims.global[1]) + "," + std::to_string(dims.global[2]) + ") local (" +
                std::to_string(dims.local[0]) + "," + std::to_string(dims.local[1]) + "," +
                std::to_string(dims.local[2]) + ")"};
  auto* args = reinterpret_cast<const long long*>(vals.data());
  auto start = std::chrono::steady_clock::now();
  for (uint32_t task = 0; task < dims.global[0]; task++) fn_(bufs.data(), args, static_cast<int>(task));
  // Launches finish before returning, so wait changes nothing but the timing.
  if (wait && seconds != nullptr)
    *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return {};
}

// Real device: create a module/pipeline from the binary (vkCreateComputePipelines, cuModuleLoadData,
// clCreateProgramWithBinary) and look up the entry point `name`. Reject binaries that are not yours
// with Code::invalid_argument: the core then compiles the source again.
Status load_program(std::string_view name, std::span<const std::byte> binary, tg::sdk::Program** out) {
  return tg::sdk::guard([&]() -> Status {
    static constexpr char kElf[] = {0x7f, 'E', 'L', 'F'};
    if (binary.size() < sizeof kElf || std::memcmp(binary.data(), kElf, sizeof kElf) != 0)
      return {Code::invalid_argument, "[TEMPLATE load] not a shared object made by the TEMPLATE compiler"};
    // dlopen returns an already loaded library when the path string matches, so no name may repeat
    // in this process while a kernel is loaded: the counter guarantees it, mkstemp the privacy.
    static std::atomic<uint64_t> loads{0};
    std::string file = "tg-template-" + std::to_string(getpid()) + "-" + std::to_string(loads++) + "-XXXXXX";
    std::string path = (std::filesystem::temp_directory_path() / file).string();
    int fd = mkstemp(path.data());
    if (fd < 0) return {Code::runtime_error, std::string("[TEMPLATE load] mkstemp: ") + std::strerror(errno)};
    std::string why;
    for (size_t done = 0; done < binary.size() && why.empty();) {
      ssize_t n = write(fd, binary.data() + done, binary.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) why = std::string("write: ") + std::strerror(errno);
      if (n > 0) done += static_cast<size_t>(n);
    }
    close(fd);
    // The file is mapped once dlopen returns, so it can go right away: nothing stays on disk.
    void* lib = why.empty() ? dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL) : nullptr;
    if (lib == nullptr && why.empty()) why = dlerror();
    unlink(path.c_str());
    if (lib == nullptr) return {Code::invalid_argument, "[TEMPLATE load] " + why};
    void* sym = dlsym(lib, std::string(name).c_str());
    if (sym == nullptr) {
      dlclose(lib);
      return {Code::invalid_argument, "[TEMPLATE load] no kernel '" + std::string(name) + "' in the binary"};
    }
    *out = new TemplateProgram(lib, reinterpret_cast<KernelFn>(sym));
    return {};
  });
}

}  // namespace tpl
