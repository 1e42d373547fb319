#pragma once
// The Level Zero entry points the plugin uses, loaded with dlsym from the loader (libze_loader.so.1) on first
// use: the plugin never links it, so it loads on machines without one and says what is missing. The
// loader's headers (libze-dev) give the exact signatures.
#include <level_zero/ze_api.h>

#include <string>

namespace tg::level_zero {

// clang-format off
#define TG_ZE_FUNCTIONS(X)                                                                                  \
  X(zeInit) X(zeDriverGet) X(zeDriverGetApiVersion) X(zeDriverGetProperties) X(zeDeviceGet)                \
  X(zeDeviceGetProperties) X(zeDeviceGetComputeProperties) X(zeDeviceGetModuleProperties)                  \
  X(zeDeviceGetCommandQueueGroupProperties) X(zeContextCreate) X(zeContextDestroy) X(zeCommandQueueCreate) \
  X(zeCommandQueueDestroy) X(zeCommandQueueExecuteCommandLists) X(zeCommandQueueSynchronize)               \
  X(zeCommandListCreate) X(zeCommandListCreateImmediate) X(zeCommandListDestroy) X(zeCommandListClose)     \
  X(zeCommandListAppendMemoryCopy) X(zeCommandListAppendLaunchKernel) X(zeEventPoolCreate)                 \
  X(zeEventPoolDestroy) X(zeEventCreate) X(zeEventDestroy) X(zeEventHostSynchronize)                       \
  X(zeEventQueryKernelTimestamp) X(zeMemAllocDevice) X(zeMemAllocHost) X(zeMemAllocShared) X(zeMemFree)    \
  X(zeModuleCreate) X(zeModuleDestroy) X(zeModuleBuildLogGetString) X(zeModuleBuildLogDestroy)             \
  X(zeKernelCreate) X(zeKernelDestroy) X(zeKernelSetGroupSize) X(zeKernelSuggestGroupSize)                 \
  X(zeKernelSetArgumentValue)
// clang-format on

// One pointer per entry point, named like the function.
struct ZeApi {
#define TG_ZE_MEMBER(fn) decltype(&::fn) fn = nullptr;
  TG_ZE_FUNCTIONS(TG_ZE_MEMBER)
#undef TG_ZE_MEMBER
  std::string path;  // the loader that was opened
};

// The loaded table (opened once per process, never closed), or null with the reason in *why.
const ZeApi* ze_api(std::string* why);

// "ZE_RESULT_ERROR_UNINITIALIZED (0x78000001)".
std::string ze_error(ze_result_t r);

// Why no Level Zero GPU can be used here ("" when one can): loader missing, zeInit failing (no driver), no
// driver or no GPU. Calls zeInit once per process.
std::string driver_unusable();

}  // namespace tg::level_zero
