#pragma once
// One Level Zero GPU opened for the plugin: driver, device, context, a compute command queue for kernels
// (regular command lists) and a synchronous immediate command list for copies. Shared by the allocator and
// the programs of a LEVEL_ZERO device; every call that touches the queue holds its lock.
#include <mutex>
#include <string>
#include <vector>

#include "plugins/cl/opencl_renderer.hpp"
#include "plugins/level_zero/api.hpp"
#include "tg/sdk/status.hpp"

namespace tg::level_zero {

class Context {
 public:
  // Opens GPU `index` over all drivers; throws with the reason.
  explicit Context(int index);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  const ZeApi& ze() const { return *ze_; }
  ze_context_handle_t context() const { return context_; }
  ze_device_handle_t device() const { return device_; }
  const ze_device_properties_t& properties() const { return props_; }
  const tg::opencl::OpenCLLimits& limits() const { return limits_; }
  std::string description() const;

  // Copies on the immediate list, after every kernel submitted so far has finished.
  tg::sdk::Status copy(void* dst, const void* src, size_t nbytes, std::string_view what);
  // Submits a closed command list on the compute queue; kept until synchronize() destroys it.
  tg::sdk::Status submit(ze_command_list_handle_t list, std::string_view what);
  ze_command_list_handle_t new_command_list(std::string_view what);
  tg::sdk::Status synchronize();
  // Kernel time of a signalled timestamp event, in seconds.
  double kernel_seconds(const ze_kernel_timestamp_result_t& ts) const;

 private:
  tg::sdk::Status synchronize_locked();

  const ZeApi* ze_;
  ze_driver_handle_t driver_ = nullptr;
  ze_device_handle_t device_ = nullptr;
  ze_context_handle_t context_ = nullptr;
  ze_command_queue_handle_t queue_ = nullptr;
  ze_command_list_handle_t copy_list_ = nullptr;
  uint32_t compute_ordinal_ = 0;
  ze_api_version_t api_version_ = ZE_API_VERSION_1_0;
  ze_device_properties_t props_{};
  tg::opencl::OpenCLLimits limits_;
  std::mutex mu_;
  std::vector<ze_command_list_handle_t> pending_;
};

// Status of a failed ze call: out_of_memory for the allocation failures, runtime_error otherwise.
tg::sdk::Status ze_status(ze_result_t r, std::string_view what);

}  // namespace tg::level_zero
