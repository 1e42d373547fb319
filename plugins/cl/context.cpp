// Device discovery, clGetDeviceInfo and the context/queue of one CL device.
#include "plugins/cl/context.hpp"

#include <fmt/format.h>

#include "base/error.hpp"

namespace tg::cldev {

using tg::sdk::Code;
using tg::sdk::Status;

namespace {

template <typename F, typename H, typename I>
std::string info_string(F fn, H handle, I param) {
  size_t n = 0;
  if (fn(handle, param, 0, nullptr, &n) != CL_SUCCESS || n == 0) return "";
  std::string s(n, '\0');
  if (fn(handle, param, n, s.data(), nullptr) != CL_SUCCESS) return "";
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

template <typename T>
T device_value(const ClApi& cl, cl_device_id d, cl_device_info param) {
  T v{};
  if (cl.clGetDeviceInfo(d, param, sizeof v, &v, nullptr) != CL_SUCCESS) return T{};
  return v;
}

bool has_extension(const std::string& list, std::string_view ext) {
  return (" " + list + " ").find(" " + std::string(ext) + " ") != std::string::npos;
}

}  // namespace

Status cl_status(cl_int err, std::string_view what) {
  bool oom =
      err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_RESOURCES || err == CL_OUT_OF_HOST_MEMORY;
  return {oom ? Code::out_of_memory : Code::runtime_error, fmt::format("{}: {}", what, cl_error(err))};
}

Status list_devices(const ClApi& cl, std::vector<std::pair<cl_platform_id, cl_device_id>>* out) {
  cl_uint np = 0;
  cl_int err = cl.clGetPlatformIDs(0, nullptr, &np);
  if (err != CL_SUCCESS || np == 0)
    return tg::sdk::unavailable(fmt::format(
        "unavailable: no OpenCL device (clGetPlatformIDs returned {}, {} platforms); install a driver "
        "(e.g. pocl-opencl-icd)",
        cl_error(err), np));
  std::vector<cl_platform_id> platforms(np);
  if ((err = cl.clGetPlatformIDs(np, platforms.data(), nullptr)) != CL_SUCCESS)
    return tg::sdk::unavailable(
        fmt::format("unavailable: no OpenCL device (clGetPlatformIDs returned {})", cl_error(err)));
  for (cl_platform_id p : platforms) {
    cl_uint nd = 0;
    if (cl.clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, nullptr, &nd) != CL_SUCCESS || nd == 0) continue;
    std::vector<cl_device_id> ds(nd);
    if (cl.clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, nd, ds.data(), nullptr) != CL_SUCCESS) continue;
    for (cl_device_id d : ds) out->emplace_back(p, d);
  }
  if (out->empty())
    return tg::sdk::unavailable(fmt::format(
        "unavailable: no OpenCL device (clGetPlatformIDs returned {} platforms without devices); install a "
        "driver (e.g. pocl-opencl-icd)",
        np));
  return {};
}

DeviceInfo query_device(const ClApi& cl, cl_platform_id platform, cl_device_id d) {
  DeviceInfo info;
  info.platform_name = info_string(cl.clGetPlatformInfo, platform, CL_PLATFORM_NAME);
  info.platform_version = info_string(cl.clGetPlatformInfo, platform, CL_PLATFORM_VERSION);
  info.device_name = info_string(cl.clGetDeviceInfo, d, CL_DEVICE_NAME);
  info.device_version = info_string(cl.clGetDeviceInfo, d, CL_DEVICE_VERSION);
  info.driver_version = info_string(cl.clGetDeviceInfo, d, CL_DRIVER_VERSION);
  info.c_version = info_string(cl.clGetDeviceInfo, d, CL_DEVICE_OPENCL_C_VERSION);
  info.extensions = info_string(cl.clGetDeviceInfo, d, CL_DEVICE_EXTENSIONS);
  info.il_version = info_string(cl.clGetDeviceInfo, d, kDeviceIlVersion);
  auto& l = info.limits;
  l.fp16 = has_extension(info.extensions, "cl_khr_fp16");
  l.fp64 = has_extension(info.extensions, "cl_khr_fp64") ||
           device_value<cl_device_fp_config>(cl, d, CL_DEVICE_DOUBLE_FP_CONFIG) != 0;
  l.preferred_float_width = device_value<cl_uint>(cl, d, CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT);
  l.max_work_group_size = static_cast<uint32_t>(device_value<size_t>(cl, d, CL_DEVICE_MAX_WORK_GROUP_SIZE));
  size_t items[3] = {1, 1, 1};
  cl_uint dims = device_value<cl_uint>(cl, d, CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS);
  if (dims >= 3) cl.clGetDeviceInfo(d, CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof items, items, nullptr);
  for (int i = 0; i < 3; i++)
    l.max_work_item_sizes[i] = static_cast<uint32_t>(std::min<size_t>(items[i], UINT32_MAX));
  l.local_mem_size = device_value<cl_ulong>(cl, d, CL_DEVICE_LOCAL_MEM_SIZE);
  l.max_parameter_size = device_value<size_t>(cl, d, CL_DEVICE_MAX_PARAMETER_SIZE);
  info.mem_base_addr_align_bytes =
      std::max<uint64_t>(device_value<cl_uint>(cl, d, CL_DEVICE_MEM_BASE_ADDR_ALIGN) / 8, 1);
  info.max_mem_alloc_size = device_value<cl_ulong>(cl, d, CL_DEVICE_MAX_MEM_ALLOC_SIZE);
  info.correctly_rounded_divide_sqrt = (device_value<cl_device_fp_config>(cl, d, CL_DEVICE_SINGLE_FP_CONFIG) &
                                        CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) != 0;
  return info;
}

Context::Context(int32_t index) {
  std::string why;
  cl_ = cl_api(&why);
  if (cl_ == nullptr) throw DeviceError("CL", why);
  std::vector<std::pair<cl_platform_id, cl_device_id>> devices;
  if (Status s = list_devices(*cl_, &devices); !s.ok()) throw DeviceError("CL", s.message());
  if (index < 0 || static_cast<size_t>(index) >= devices.size())
    throw DeviceError("CL", fmt::format("no OpenCL device {}; there are {}", index, devices.size()));
  auto [platform, device] = devices[static_cast<size_t>(index)];
  device_ = device;
  info_ = query_device(*cl_, platform, device);
  cl_int err = CL_SUCCESS;
  cl_context_properties props[] = {CL_CONTEXT_PLATFORM, reinterpret_cast<cl_context_properties>(platform), 0};
  context_ = cl_->clCreateContext(props, 1, &device_, nullptr, nullptr, &err);
  if (context_ == nullptr) throw DeviceError("CL", fmt::format("clCreateContext failed: {}", cl_error(err)));
  queue_ = cl_->clCreateCommandQueue(context_, device_, CL_QUEUE_PROFILING_ENABLE, &err);
  if (queue_ == nullptr) {
    cl_->clReleaseContext(context_);
    throw DeviceError("CL", fmt::format("clCreateCommandQueue failed: {}", cl_error(err)));
  }
}

Context::~Context() {
  cl_->clFinish(queue_);
  cl_->clReleaseCommandQueue(queue_);
  cl_->clReleaseContext(context_);
}

}  // namespace tg::cldev
