#pragma once
// The OpenCL entry points the CL plugin uses, loaded with dlsym from the ICD loader (libOpenCL) at probe or
// create time: the plugin never links libOpenCL, so it loads on machines without one and says what is
// missing.
#include <string>
#include <string_view>

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

namespace tg::cldev {

// clang-format off
#define TG_CL_FUNCTIONS(X)                                                                             \
  X(clGetPlatformIDs) X(clGetPlatformInfo) X(clGetDeviceIDs) X(clGetDeviceInfo) X(clCreateContext)    \
  X(clReleaseContext) X(clCreateCommandQueue) X(clReleaseCommandQueue) X(clCreateBuffer)              \
  X(clCreateSubBuffer) X(clReleaseMemObject) X(clEnqueueWriteBuffer) X(clEnqueueReadBuffer)           \
  X(clEnqueueCopyBuffer) X(clCreateProgramWithSource) X(clCreateProgramWithBinary) X(clBuildProgram)  \
  X(clGetProgramInfo) X(clGetProgramBuildInfo) X(clReleaseProgram) X(clCreateKernel)                  \
  X(clReleaseKernel) X(clSetKernelArg) X(clEnqueueNDRangeKernel) X(clWaitForEvents)                   \
  X(clGetEventProfilingInfo) X(clReleaseEvent) X(clFinish)
// clang-format on

// One pointer per entry point, named like the function.
struct ClApi {
#define TG_CL_MEMBER(fn) decltype(&::fn) fn = nullptr;
  TG_CL_FUNCTIONS(TG_CL_MEMBER)
#undef TG_CL_MEMBER
  // OpenCL 2.1, for the SPIR-V path; null when the loader predates it.
  cl_program (*clCreateProgramWithIL)(cl_context, const void*, size_t, cl_int*) = nullptr;
};

// CL_DEVICE_IL_VERSION (OpenCL 2.1; the headers hide it at CL_TARGET_OPENCL_VERSION 120).
inline constexpr cl_device_info kDeviceIlVersion = 0x105B;

// The loaded table (loaded once per process, never unloaded), or nullptr with the reason in *why.
const ClApi* cl_api(std::string* why);

// "CL_OUT_OF_RESOURCES (-5)".
std::string cl_error(cl_int code);

}  // namespace tg::cldev
