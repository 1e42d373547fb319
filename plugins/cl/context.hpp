#pragma once
// One OpenCL device opened for the plugin: platform, device, context, the in-order profiling queue, and
// what clGetDeviceInfo says about it. Shared by the allocator, compiler and programs of a CL device.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "plugins/cl/cl_api.hpp"
#include "plugins/cl/opencl_renderer.hpp"
#include "tg/sdk/status.hpp"

namespace tg::cldev {

struct DeviceInfo {
  std::string platform_name, platform_version, device_name, device_version, driver_version, c_version;
  std::string extensions;  // space-separated, as the device reports them
  std::string il_version;  // CL_DEVICE_IL_VERSION ("SPIR-V_1.0 SPIR-V_1.1 ..."), empty before OpenCL 2.1
  tg::opencl::OpenCLLimits limits;
  uint64_t mem_base_addr_align_bytes = 1;  // CL_DEVICE_MEM_BASE_ADDR_ALIGN is in bits
  uint64_t max_mem_alloc_size = 0;
  bool correctly_rounded_divide_sqrt = false;  // CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT in the float config
};

// Every device of every platform, in platform order; ok() false with the reason when there is none.
tg::sdk::Status list_devices(const ClApi& cl, std::vector<std::pair<cl_platform_id, cl_device_id>>* out);

DeviceInfo query_device(const ClApi& cl, cl_platform_id platform, cl_device_id device);

class Context {
 public:
  // Opens device `index`; throws tg::DeviceError with the reason.
  explicit Context(int32_t index);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  const ClApi& cl() const { return *cl_; }
  cl_context context() const { return context_; }
  cl_device_id device() const { return device_; }
  cl_command_queue queue() const { return queue_; }
  const DeviceInfo& info() const { return info_; }

 private:
  const ClApi* cl_ = nullptr;
  cl_device_id device_ = nullptr;
  cl_context context_ = nullptr;
  cl_command_queue queue_ = nullptr;
  DeviceInfo info_;
};

// Status for a failed OpenCL call: out_of_memory for the allocation failures, runtime_error otherwise.
tg::sdk::Status cl_status(cl_int err, std::string_view what);

}  // namespace tg::cldev
