#pragma once
// The NVIDIA libraries the plugin uses, each dlopened on first use and never linked: the driver (libcuda),
// NVRTC (CUDA C -> PTX) and nvJitLink (PTX -> cubin). The toolkit's headers give the exact signatures.
#include <cuda.h>
#include <nvJitLink.h>
#include <nvrtc.h>

#include <string>

namespace tg::cuda {

#define TG_CUDA_FN(name) decltype(&::name) name = nullptr;

struct DriverApi {
  TG_CUDA_FN(cuInit)
  TG_CUDA_FN(cuDriverGetVersion)
  TG_CUDA_FN(cuDeviceGetCount)
  TG_CUDA_FN(cuDeviceGet)
  TG_CUDA_FN(cuDeviceGetName)
  TG_CUDA_FN(cuDeviceGetAttribute)
  TG_CUDA_FN(cuDeviceTotalMem_v2)
  TG_CUDA_FN(cuDevicePrimaryCtxRetain)
  TG_CUDA_FN(cuDevicePrimaryCtxRelease_v2)
  TG_CUDA_FN(cuCtxSetCurrent)
  TG_CUDA_FN(cuCtxSynchronize)
  TG_CUDA_FN(cuStreamCreate)
  TG_CUDA_FN(cuStreamSynchronize)
  TG_CUDA_FN(cuMemAlloc_v2)
  TG_CUDA_FN(cuMemFree_v2)
  TG_CUDA_FN(cuMemAllocHost_v2)
  TG_CUDA_FN(cuMemFreeHost)
  TG_CUDA_FN(cuMemcpyHtoDAsync_v2)
  TG_CUDA_FN(cuMemcpyDtoHAsync_v2)
  TG_CUDA_FN(cuMemcpyDtoDAsync_v2)
  TG_CUDA_FN(cuModuleLoadData)
  TG_CUDA_FN(cuModuleLoadDataEx)
  TG_CUDA_FN(cuModuleUnload)
  TG_CUDA_FN(cuModuleGetFunction)
  TG_CUDA_FN(cuFuncSetAttribute)
  TG_CUDA_FN(cuLaunchKernel)
  TG_CUDA_FN(cuEventCreate)
  TG_CUDA_FN(cuEventRecord)
  TG_CUDA_FN(cuEventSynchronize)
  TG_CUDA_FN(cuEventElapsedTime_v2)
  TG_CUDA_FN(cuEventDestroy_v2)
  TG_CUDA_FN(cuGraphCreate)
  TG_CUDA_FN(cuGraphAddKernelNode_v2)
  TG_CUDA_FN(cuGraphInstantiateWithFlags)
  TG_CUDA_FN(cuGraphLaunch)
  TG_CUDA_FN(cuGraphExecKernelNodeSetParams_v2)
  TG_CUDA_FN(cuGraphDestroy)
  TG_CUDA_FN(cuGraphExecDestroy)
};

struct NvrtcApi {
  TG_CUDA_FN(nvrtcVersion)
  TG_CUDA_FN(nvrtcGetNumSupportedArchs)
  TG_CUDA_FN(nvrtcGetSupportedArchs)
  TG_CUDA_FN(nvrtcCreateProgram)
  TG_CUDA_FN(nvrtcDestroyProgram)
  TG_CUDA_FN(nvrtcCompileProgram)
  TG_CUDA_FN(nvrtcGetProgramLogSize)
  TG_CUDA_FN(nvrtcGetProgramLog)
  TG_CUDA_FN(nvrtcGetPTXSize)
  TG_CUDA_FN(nvrtcGetPTX)
  TG_CUDA_FN(nvrtcGetCUBINSize)
  TG_CUDA_FN(nvrtcGetCUBIN)
  TG_CUDA_FN(nvrtcGetErrorString)
  std::string path;          // the library that was opened
  int major = 0, minor = 0;  // nvrtcVersion
  std::string include_dir;   // the toolkit's include folder beside it, when there is one
};

struct JitLinkApi {
  TG_CUDA_FN(nvJitLinkCreate)
  TG_CUDA_FN(nvJitLinkDestroy)
  TG_CUDA_FN(nvJitLinkAddData)
  TG_CUDA_FN(nvJitLinkComplete)
  TG_CUDA_FN(nvJitLinkGetLinkedCubinSize)
  TG_CUDA_FN(nvJitLinkGetLinkedCubin)
  TG_CUDA_FN(nvJitLinkGetErrorLogSize)
  TG_CUDA_FN(nvJitLinkGetErrorLog)
  TG_CUDA_FN(nvJitLinkVersion)
  std::string path;
  unsigned major = 0, minor = 0;
};

#undef TG_CUDA_FN

// Each opened once per process; null with the reason in *why ("libnvrtc not found: install the CUDA
// toolkit or the nvidia-cuda-nvrtc wheel, or set TG_NVRTC").
const DriverApi* driver_api(std::string* why);
const NvrtcApi* nvrtc_api(std::string* why);
const JitLinkApi* jitlink_api(std::string* why);

// "CUDA_ERROR_OUT_OF_MEMORY (2)": our own table, since the toolkit's stub libcuda answers every call,
// cuGetErrorName included, with CUDA_ERROR_STUB_LIBRARY.
std::string error_name(CUresult r);

// Why the driver cannot run anything here, or "" when it has at least one device: not installed, the
// toolkit's stub library, no device, or too old for the PTX we emit. Loads the driver (never as a probe of
// a machine without a GPU: cuInit is only called once the library is known not to be the stub).
std::string driver_unusable();

// The oldest driver (cuDriverGetVersion, e.g. 12000) that loads our PTX; the PTX ISA is pinned to match.
constexpr int kMinDriverVersion = 12000;

}  // namespace tg::cuda
