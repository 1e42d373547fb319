#pragma once
// The OpenCL entry points of the QCOM device, from one driver library: Adreno's libOpenCL.so on a
// Snapdragon board, or any ICD named by QCOM_ICD. A library that exports the API (Adreno's, an ICD loader)
// is used directly; a bare ICD driver (PoCL's libpocl.so) through its platform's dispatch table
// (clIcdGetPlatformIDsKHR), so no ICD loader or /etc/OpenCL/vendors entry is involved.
#include <string>

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

namespace tg::qcom {

// clang-format off
#define TG_QCOM_CL_FUNCTIONS(X)                                                                        \
  X(clGetPlatformIDs) X(clGetPlatformInfo) X(clGetDeviceIDs) X(clGetDeviceInfo) X(clCreateContext)    \
  X(clReleaseContext) X(clCreateCommandQueue) X(clReleaseCommandQueue) X(clCreateBuffer)              \
  X(clReleaseMemObject) X(clEnqueueWriteBuffer) X(clEnqueueReadBuffer) X(clEnqueueCopyBuffer)         \
  X(clCreateProgramWithSource) X(clBuildProgram) X(clGetProgramBuildInfo) X(clReleaseProgram)         \
  X(clCreateKernel) X(clReleaseKernel) X(clSetKernelArg) X(clEnqueueNDRangeKernel) X(clWaitForEvents) \
  X(clGetEventProfilingInfo) X(clReleaseEvent) X(clFinish) X(clCreateImage) X(clCreateSampler)        \
  X(clReleaseSampler) X(clEnqueueCopyBufferToImage) X(clEnqueueCopyImageToBuffer)                     \
  X(clGetSupportedImageFormats)
// clang-format on

struct QcomCl {
#define TG_QCOM_MEMBER(fn) decltype(&::fn) fn = nullptr;
  TG_QCOM_CL_FUNCTIONS(TG_QCOM_MEMBER)
#undef TG_QCOM_MEMBER
  cl_platform_id platform = nullptr;  // set when the library is a bare ICD driver
  std::string library;                // the path that was opened
};

// The loaded table, or nullptr with the reason ("unavailable: ...") in *why. Without QCOM_ICD it needs
// /dev/kgsl-3d0 and the vendor library.
const QcomCl* qcom_cl(std::string* why);

// "CL_OUT_OF_RESOURCES (-5)".
std::string cl_error(cl_int code);

}  // namespace tg::qcom
