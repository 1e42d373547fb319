#include "plugins/cuda/api.hpp"

#include <dlfcn.h>

#include <filesystem>
#include <initializer_list>
#include <mutex>

#include <fmt/format.h>

#include "base/env.hpp"

namespace tg::cuda {

namespace {

namespace fs = std::filesystem;

// The first of names dlopen finds (with the folder it came from), or null with dlerror's text.
void* open_first(std::initializer_list<std::string> names, std::string* path, std::string* err) {
  for (const std::string& n : names) {
    if (n.empty()) continue;
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

// Fills every function pointer of table from lib; the first missing one is the error.
template <typename T>
bool bind(void* lib, T& fn, const char* name, std::string* missing) {
  fn = reinterpret_cast<T>(dlsym(lib, name));
  if (fn == nullptr && missing->empty()) *missing = name;
  return fn != nullptr;
}
#define TG_BIND(table, lib, name, missing) bind(lib, (table).name, #name, missing)

// Toolkit library folders to try after the loader's own search path.
std::string toolkit_lib(const char* file) {
  for (const char* dir : {"/usr/local/cuda/lib64", "/usr/local/cuda/lib", "/opt/cuda/lib64"})
    if (fs::exists(fs::path(dir) / file)) return (fs::path(dir) / file).string();
  return "";
}

}  // namespace

const DriverApi* driver_api(std::string* why) {
  static DriverApi api;
  static std::string error;
  static std::once_flag once;
  std::call_once(once, [] {
    std::string path, err;
    std::string override = env::get("TG_LIBCUDA");
    void* lib = override.empty() ? open_first({"libcuda.so.1", "libcuda.so"}, &path, &err)
                                 : open_first({override}, &path, &err);
    if (lib == nullptr) {
      error = fmt::format(
          "unavailable: the NVIDIA driver is not installed (libcuda.so.1 not found: {}); install "
          "the driver for your GPU, or set TG_LIBCUDA to its libcuda",
          err);
      return;
    }
    std::string missing;
    TG_BIND(api, lib, cuInit, &missing), TG_BIND(api, lib, cuDriverGetVersion, &missing);
    TG_BIND(api, lib, cuDeviceGetCount, &missing), TG_BIND(api, lib, cuDeviceGet, &missing);
    TG_BIND(api, lib, cuDeviceGetName, &missing), TG_BIND(api, lib, cuDeviceGetAttribute, &missing);
    TG_BIND(api, lib, cuDeviceTotalMem_v2, &missing), TG_BIND(api, lib, cuDevicePrimaryCtxRetain, &missing);
    TG_BIND(api, lib, cuDevicePrimaryCtxRelease_v2, &missing), TG_BIND(api, lib, cuCtxSetCurrent, &missing);
    TG_BIND(api, lib, cuCtxSynchronize, &missing), TG_BIND(api, lib, cuStreamCreate, &missing);
    TG_BIND(api, lib, cuStreamSynchronize, &missing), TG_BIND(api, lib, cuMemAlloc_v2, &missing);
    TG_BIND(api, lib, cuMemFree_v2, &missing), TG_BIND(api, lib, cuMemAllocHost_v2, &missing);
    TG_BIND(api, lib, cuMemFreeHost, &missing), TG_BIND(api, lib, cuMemcpyHtoDAsync_v2, &missing);
    TG_BIND(api, lib, cuMemcpyDtoHAsync_v2, &missing), TG_BIND(api, lib, cuMemcpyDtoDAsync_v2, &missing);
    TG_BIND(api, lib, cuModuleLoadData, &missing), TG_BIND(api, lib, cuModuleLoadDataEx, &missing);
    TG_BIND(api, lib, cuModuleUnload, &missing), TG_BIND(api, lib, cuModuleGetFunction, &missing);
    TG_BIND(api, lib, cuFuncSetAttribute, &missing), TG_BIND(api, lib, cuLaunchKernel, &missing);
    TG_BIND(api, lib, cuEventCreate, &missing), TG_BIND(api, lib, cuEventRecord, &missing);
    TG_BIND(api, lib, cuEventSynchronize, &missing);
    bind(lib, api.cuEventElapsedTime_v2, "cuEventElapsedTime", &missing);  // v1: same signature, every driver
    TG_BIND(api, lib, cuEventDestroy_v2, &missing), TG_BIND(api, lib, cuGraphCreate, &missing);
    TG_BIND(api, lib, cuGraphAddKernelNode_v2, &missing),
        TG_BIND(api, lib, cuGraphInstantiateWithFlags, &missing);
    TG_BIND(api, lib, cuGraphLaunch, &missing), TG_BIND(api, lib, cuGraphDestroy, &missing);
    TG_BIND(api, lib, cuGraphExecDestroy, &missing),
        TG_BIND(api, lib, cuGraphExecKernelNodeSetParams_v2, &missing);
    if (!missing.empty())
      error =
          fmt::format("unavailable: {} has no {}: the NVIDIA driver is too old (CUDA 12.0 or newer needed)",
                      path, missing);
  });
  if (!error.empty()) {
    if (why != nullptr) *why = error;
    return nullptr;
  }
  return &api;
}

const NvrtcApi* nvrtc_api(std::string* why) {
  static NvrtcApi api;
  static std::string error;
  static std::once_flag once;
  std::call_once(once, [] {
    std::string err, override = env::get("TG_NVRTC");
    void* lib =
        override.empty()
            ? open_first({"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so", toolkit_lib("libnvrtc.so")},
                         &api.path, &err)
            : open_first({override}, &api.path, &err);
    if (lib == nullptr) {
      error = fmt::format(
          "NVRTC not found ({}): install the CUDA toolkit (or the nvidia-cuda-nvrtc wheel and put "
          "its lib folder on LD_LIBRARY_PATH), or set TG_NVRTC to libnvrtc.so",
          err);
      return;
    }
    std::string missing;
    TG_BIND(api, lib, nvrtcVersion, &missing), TG_BIND(api, lib, nvrtcGetNumSupportedArchs, &missing);
    TG_BIND(api, lib, nvrtcGetSupportedArchs, &missing), TG_BIND(api, lib, nvrtcCreateProgram, &missing);
    TG_BIND(api, lib, nvrtcDestroyProgram, &missing), TG_BIND(api, lib, nvrtcCompileProgram, &missing);
    TG_BIND(api, lib, nvrtcGetProgramLogSize, &missing), TG_BIND(api, lib, nvrtcGetProgramLog, &missing);
    TG_BIND(api, lib, nvrtcGetPTXSize, &missing), TG_BIND(api, lib, nvrtcGetPTX, &missing);
    TG_BIND(api, lib, nvrtcGetCUBINSize, &missing), TG_BIND(api, lib, nvrtcGetCUBIN, &missing);
    TG_BIND(api, lib, nvrtcGetErrorString, &missing);
    if (!missing.empty()) {
      error = fmt::format("{} has no {}: NVRTC 12.0 or newer is needed", api.path, missing);
      return;
    }
    api.nvrtcVersion(&api.major, &api.minor);
    // The toolkit's headers (cuda_fp16.h ...) sit in include/ beside lib/ or lib64/.
    fs::path root = fs::path(api.path).parent_path().parent_path();
    for (const char* sub : {"include", "targets/x86_64-linux/include"})
      if (fs::exists(root / sub / "cuda_fp16.h")) api.include_dir = (root / sub).string();
  });
  if (!error.empty()) {
    if (why != nullptr) *why = error;
    return nullptr;
  }
  return &api;
}

const JitLinkApi* jitlink_api(std::string* why) {
  static JitLinkApi api;
  static std::string error;
  static std::once_flag once;
  std::call_once(once, [] {
    std::string err, override = env::get("TG_NVJITLINK");
    void* lib = override.empty() ? open_first({"libnvJitLink.so.13", "libnvJitLink.so.12", "libnvJitLink.so",
                                               toolkit_lib("libnvJitLink.so")},
                                              &api.path, &err)
                                 : open_first({override}, &api.path, &err);
    if (lib == nullptr) {
      error = fmt::format("nvJitLink not found ({})", err);
      return;
    }
    std::string missing;
    TG_BIND(api, lib, nvJitLinkCreate, &missing), TG_BIND(api, lib, nvJitLinkDestroy, &missing);
    TG_BIND(api, lib, nvJitLinkAddData, &missing), TG_BIND(api, lib, nvJitLinkComplete, &missing);
    TG_BIND(api, lib, nvJitLinkGetLinkedCubinSize, &missing),
        TG_BIND(api, lib, nvJitLinkGetLinkedCubin, &missing);
    TG_BIND(api, lib, nvJitLinkGetErrorLogSize, &missing), TG_BIND(api, lib, nvJitLinkGetErrorLog, &missing);
    TG_BIND(api, lib, nvJitLinkVersion, &missing);
    if (!missing.empty()) {
      error = fmt::format("{} has no {}", api.path, missing);
      return;
    }
    api.nvJitLinkVersion(&api.major, &api.minor);
  });
  if (!error.empty()) {
    if (why != nullptr) *why = error;
    return nullptr;
  }
  return &api;
}

std::string error_name(CUresult r) {
  static const std::pair<int, const char*> names[] = {
      {0, "CUDA_SUCCESS"},
      {1, "CUDA_ERROR_INVALID_VALUE"},
      {2, "CUDA_ERROR_OUT_OF_MEMORY"},
      {3, "CUDA_ERROR_NOT_INITIALIZED"},
      {4, "CUDA_ERROR_DEINITIALIZED"},
      {34, "CUDA_ERROR_STUB_LIBRARY"},
      {35, "CUDA_ERROR_INSUFFICIENT_DRIVER"},
      {36, "CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER"},
      {46, "CUDA_ERROR_DEVICE_UNAVAILABLE"},
      {100, "CUDA_ERROR_NO_DEVICE"},
      {101, "CUDA_ERROR_INVALID_DEVICE"},
      {200, "CUDA_ERROR_INVALID_IMAGE"},
      {201, "CUDA_ERROR_INVALID_CONTEXT"},
      {209, "CUDA_ERROR_NO_BINARY_FOR_GPU"},
      {218, "CUDA_ERROR_INVALID_PTX"},
      {221, "CUDA_ERROR_JIT_COMPILER_NOT_FOUND"},
      {222, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION"},
      {300, "CUDA_ERROR_INVALID_SOURCE"},
      {400, "CUDA_ERROR_INVALID_HANDLE"},
      {500, "CUDA_ERROR_NOT_FOUND"},
      {600, "CUDA_ERROR_NOT_READY"},
      {700, "CUDA_ERROR_ILLEGAL_ADDRESS"},
      {701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"},
      {702, "CUDA_ERROR_LAUNCH_TIMEOUT"},
      {715, "CUDA_ERROR_ILLEGAL_INSTRUCTION"},
      {716, "CUDA_ERROR_MISALIGNED_ADDRESS"},
      {719, "CUDA_ERROR_LAUNCH_FAILED"},
      {801, "CUDA_ERROR_NOT_SUPPORTED"},
      {803, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH"},
      {999, "CUDA_ERROR_UNKNOWN"},
  };
  for (const auto& [code, name] : names)
    if (code == static_cast<int>(r)) return fmt::format("{} ({})", name, code);
  return fmt::format("CUDA error {}", static_cast<int>(r));
}

std::string driver_unusable() {
  std::string why;
  const DriverApi* cu = driver_api(&why);
  if (cu == nullptr) return why;
  // The toolkit's stub answers every call with CUDA_ERROR_STUB_LIBRARY and never touches a device.
  int version = 0;
  if (CUresult r = cu->cuDriverGetVersion(&version); r == CUDA_ERROR_STUB_LIBRARY)
    return "unavailable: the CUDA toolkit's stub libcuda (lib64/stubs) was loaded instead of the NVIDIA "
           "driver; "
           "remove the stubs folder from LD_LIBRARY_PATH and install the driver";
  if (CUresult r = cu->cuInit(0); r != CUDA_SUCCESS) {
    if (r == CUDA_ERROR_STUB_LIBRARY)
      return "unavailable: the CUDA toolkit's stub libcuda was loaded instead of the NVIDIA driver";
    if (r == CUDA_ERROR_NO_DEVICE)
      return "unavailable: the NVIDIA driver is installed but sees no GPU (cuInit: " + error_name(r) + ")";
    return "unavailable: cuInit failed: " + error_name(r);
  }
  if (version < kMinDriverVersion)
    return fmt::format(
        "unavailable: the NVIDIA driver supports CUDA {}.{}; the PTX this plugin emits needs {}.{} or "
        "newer: update the driver",
        version / 1000, version % 1000 / 10, kMinDriverVersion / 1000, kMinDriverVersion % 1000 / 10);
  int count = 0;
  if (CUresult r = cu->cuDeviceGetCount(&count); r != CUDA_SUCCESS || count == 0)
    return "unavailable: no CUDA device (cuDeviceGetCount: " + (r != CUDA_SUCCESS ? error_name(r) : "0") +
           ")";
  return "";
}

}  // namespace tg::cuda
