#include "plugins/hip/api.hpp"

#include <dlfcn.h>

#include <filesystem>
#include <initializer_list>
#include <mutex>

#include <fmt/format.h>

#include "base/env.hpp"

namespace tg::hip {

namespace {

namespace fs = std::filesystem;

// The first of names dlopen finds, or null with dlerror's first text.
void* open_first(std::initializer_list<std::string> names, std::string* path, std::string* err) {
  for (const std::string& n : names) {
    if (void* h = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      char where[4096] = {};
      *path = dlinfo(h, RTLD_DI_ORIGIN, where) == 0 ? fs::path(where) / fs::path(n).filename() : fs::path(n);
      return h;
    }
    const char* e = dlerror();
    if (err->empty() && e != nullptr) *err = e;
  }
  return nullptr;
}

template <typename T>
void bind(void* lib, T& fn, const char* name, std::string* missing) {
  fn = reinterpret_cast<T>(dlsym(lib, name));
  if (fn == nullptr && missing->empty()) *missing = name;
}
#define TG_BIND(name) bind(lib, api.name, #name, &missing)

}  // namespace

const HipApi* hip_api(std::string* why) {
  static HipApi api;
  static std::string error;
  static std::once_flag once;
  std::call_once(once, [] {
    std::string err, override = env::get("TG_LIBAMDHIP64");
    void* lib = override.empty() ? open_first({"libamdhip64.so.6", "libamdhip64.so.5", "libamdhip64.so",
                                               "/opt/rocm/lib/libamdhip64.so"},
                                              &api.path, &err)
                                 : open_first({override}, &api.path, &err);
    if (lib == nullptr) {
      error = fmt::format(
          "unavailable: ROCm runtime not installed (libamdhip64 not found: {}); install "
          "libamdhip64-5 (Debian) or ROCm, or set TG_LIBAMDHIP64 to its libamdhip64.so",
          err);
      return;
    }
    std::string missing;
    TG_BIND(hipInit), TG_BIND(hipDriverGetVersion), TG_BIND(hipGetDeviceCount),
        TG_BIND(hipGetDeviceProperties);
    TG_BIND(hipSetDevice), TG_BIND(hipStreamCreateWithFlags), TG_BIND(hipStreamSynchronize),
        TG_BIND(hipMalloc);
    TG_BIND(hipFree), TG_BIND(hipMemcpyAsync), TG_BIND(hipModuleLoadData), TG_BIND(hipModuleUnload);
    TG_BIND(hipModuleGetFunction), TG_BIND(hipModuleLaunchKernel), TG_BIND(hipEventCreate);
    TG_BIND(hipEventRecord), TG_BIND(hipEventSynchronize), TG_BIND(hipEventElapsedTime);
    TG_BIND(hipEventDestroy), TG_BIND(hipGetErrorName);
    if (!missing.empty())
      error = fmt::format("unavailable: {} has no {}: the ROCm runtime is too old (5.0 or newer needed)",
                          api.path, missing);
  });
  if (!error.empty()) {
    if (why != nullptr) *why = error;
    return nullptr;
  }
  return &api;
}

std::string error_name(hipError_t r) {
  std::string why;
  const HipApi* h = hip_api(&why);
  const char* name = h != nullptr ? h->hipGetErrorName(r) : nullptr;
  return fmt::format("{} ({})", name != nullptr ? name : "hipError", static_cast<int>(r));
}

std::string runtime_unusable() {
  std::string why;
  const HipApi* h = hip_api(&why);
  if (h == nullptr) return why;
  if (hipError_t r = h->hipInit(0); r != hipSuccess) {
    std::string kfd =
        fs::exists("/dev/kfd") ? "" : "; there is no /dev/kfd: the amdgpu kernel driver is not loaded";
    return fmt::format("unavailable: no AMD GPU (hipInit: {}{})", error_name(r), kfd);
  }
  int count = 0;
  if (hipError_t r = h->hipGetDeviceCount(&count); r != hipSuccess || count == 0)
    return fmt::format("unavailable: no AMD GPU (hipGetDeviceCount: {})",
                       r != hipSuccess ? error_name(r) : "0");
  return "";
}

}  // namespace tg::hip
