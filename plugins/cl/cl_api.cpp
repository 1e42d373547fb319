// dlopen of the OpenCL ICD loader and the names of OpenCL error codes.
#include "plugins/cl/cl_api.hpp"

#include <dlfcn.h>

#include <mutex>

#include <fmt/format.h>

namespace tg::cldev {

namespace {

struct Loaded {
  ClApi api;
  std::string why;  // empty when api is complete
};

Loaded load() {
  Loaded out;
  void* lib = nullptr;
  for (const char* name : {"libOpenCL.so.1", "libOpenCL.so"})
    if ((lib = dlopen(name, RTLD_NOW | RTLD_LOCAL)) != nullptr) break;
  if (lib == nullptr) {
    out.why =
        "unavailable: libOpenCL.so.1 not found; install ocl-icd-libopencl1 and a driver (e.g. "
        "pocl-opencl-icd)";
    return out;
  }
#define TG_CL_LOAD(fn)                                             \
  out.api.fn = reinterpret_cast<decltype(&::fn)>(dlsym(lib, #fn)); \
  if (out.api.fn == nullptr && out.why.empty())                    \
    out.why = "unavailable: the OpenCL loader has no " #fn "; install ocl-icd-libopencl1";
  TG_CL_FUNCTIONS(TG_CL_LOAD)
#undef TG_CL_LOAD
  out.api.clCreateProgramWithIL =
      reinterpret_cast<decltype(out.api.clCreateProgramWithIL)>(dlsym(lib, "clCreateProgramWithIL"));
  return out;  // the library stays loaded: plugins are never unloaded
}

}  // namespace

const ClApi* cl_api(std::string* why) {
  static const Loaded loaded = load();
  if (!loaded.why.empty()) {
    if (why != nullptr) *why = loaded.why;
    return nullptr;
  }
  return &loaded.api;
}

std::string cl_error(cl_int code) {
  std::string_view name;
  switch (code) {
#define TG_CL_CASE(c) \
  case c:             \
    name = #c;        \
    break;
    TG_CL_CASE(CL_SUCCESS)
    TG_CL_CASE(CL_DEVICE_NOT_FOUND)
    TG_CL_CASE(CL_DEVICE_NOT_AVAILABLE)
    TG_CL_CASE(CL_COMPILER_NOT_AVAILABLE) TG_CL_CASE(CL_MEM_OBJECT_ALLOCATION_FAILURE) TG_CL_CASE(
        CL_OUT_OF_RESOURCES) TG_CL_CASE(CL_OUT_OF_HOST_MEMORY) TG_CL_CASE(CL_PROFILING_INFO_NOT_AVAILABLE)
        TG_CL_CASE(CL_BUILD_PROGRAM_FAILURE) TG_CL_CASE(CL_MISALIGNED_SUB_BUFFER_OFFSET)
            TG_CL_CASE(CL_INVALID_VALUE) TG_CL_CASE(CL_INVALID_PLATFORM) TG_CL_CASE(CL_INVALID_DEVICE)
                TG_CL_CASE(CL_INVALID_CONTEXT) TG_CL_CASE(CL_INVALID_COMMAND_QUEUE) TG_CL_CASE(
                    CL_INVALID_MEM_OBJECT) TG_CL_CASE(CL_INVALID_BINARY) TG_CL_CASE(CL_INVALID_BUILD_OPTIONS)
                    TG_CL_CASE(CL_INVALID_PROGRAM) TG_CL_CASE(CL_INVALID_PROGRAM_EXECUTABLE) TG_CL_CASE(
                        CL_INVALID_KERNEL_NAME) TG_CL_CASE(CL_INVALID_KERNEL) TG_CL_CASE(CL_INVALID_ARG_INDEX)
                        TG_CL_CASE(CL_INVALID_ARG_VALUE) TG_CL_CASE(CL_INVALID_ARG_SIZE)
                            TG_CL_CASE(CL_INVALID_KERNEL_ARGS) TG_CL_CASE(CL_INVALID_WORK_DIMENSION)
                                TG_CL_CASE(CL_INVALID_WORK_GROUP_SIZE) TG_CL_CASE(CL_INVALID_WORK_ITEM_SIZE)
                                    TG_CL_CASE(CL_INVALID_GLOBAL_OFFSET) TG_CL_CASE(CL_INVALID_EVENT)
                                        TG_CL_CASE(CL_INVALID_OPERATION) TG_CL_CASE(CL_INVALID_BUFFER_SIZE)
                                            TG_CL_CASE(CL_INVALID_GLOBAL_WORK_SIZE)
#undef TG_CL_CASE
                                                case -1001 : name = "CL_PLATFORM_NOT_FOUND_KHR";
    break;
    default:
      name = "CL error";
  }
  return fmt::format("{} ({})", name, code);
}

}  // namespace tg::cldev
