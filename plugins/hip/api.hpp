#pragma once
// The HIP runtime (libamdhip64), dlopened on first use and never linked. Its headers give the exact
// signatures; no other ROCm library is loaded into the process.
#include <hip/hip_runtime_api.h>

#include <string>

namespace tg::hip {

#define TG_HIP_FN(name) decltype(&::name) name = nullptr;

struct HipApi {
  TG_HIP_FN(hipInit)
  TG_HIP_FN(hipDriverGetVersion)
  TG_HIP_FN(hipGetDeviceCount)
  TG_HIP_FN(hipGetDeviceProperties)
  TG_HIP_FN(hipSetDevice)
  TG_HIP_FN(hipStreamCreateWithFlags)
  TG_HIP_FN(hipStreamSynchronize)
  hipError_t (*hipMalloc)(void**, size_t) = nullptr;  // the header overloads it for C++
  TG_HIP_FN(hipFree)
  TG_HIP_FN(hipMemcpyAsync)
  TG_HIP_FN(hipModuleLoadData)
  TG_HIP_FN(hipModuleUnload)
  TG_HIP_FN(hipModuleGetFunction)
  TG_HIP_FN(hipModuleLaunchKernel)
  TG_HIP_FN(hipEventCreate)
  TG_HIP_FN(hipEventRecord)
  TG_HIP_FN(hipEventSynchronize)
  TG_HIP_FN(hipEventElapsedTime)
  TG_HIP_FN(hipEventDestroy)
  TG_HIP_FN(hipGetErrorName)
  std::string path;  // the library that was opened
};

#undef TG_HIP_FN

// Opened once per process (TG_LIBAMDHIP64, else libamdhip64.so.6/.5/.so); null with the reason in *why.
const HipApi* hip_api(std::string* why);

// "hipErrorNoDevice (100)".
std::string error_name(hipError_t r);

// Why the runtime cannot run anything here, or "" when it sees at least one GPU: not installed, hipInit
// failing (no /dev/kfd: the amdgpu kernel driver is absent) or no device.
std::string runtime_unusable();

}  // namespace tg::hip
