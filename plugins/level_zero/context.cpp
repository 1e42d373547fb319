// Driver and device discovery, the queue and command lists of one LEVEL_ZERO device.
#include "plugins/level_zero/context.hpp"

#include <stdexcept>

#include <fmt/format.h>

namespace tg::level_zero {

using tg::sdk::Code;
using tg::sdk::Status;

namespace {

void throw_if(ze_result_t r, std::string_view what) {
  if (r != ZE_RESULT_SUCCESS) throw std::runtime_error(fmt::format("[LEVEL_ZERO] {}: {}", what, ze_error(r)));
}

}  // namespace

Status ze_status(ze_result_t r, std::string_view what) {
  if (r == ZE_RESULT_SUCCESS) return {};
  bool oom = r == ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY || r == ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  return {oom ? Code::out_of_memory : Code::runtime_error,
          fmt::format("[LEVEL_ZERO] {}: {}", what, ze_error(r))};
}

Context::Context(int index) {
  std::string why = driver_unusable();
  if (!why.empty()) throw std::runtime_error(why);
  ze_ = ze_api(nullptr);
  const ZeApi& ze = *ze_;
  uint32_t ndrivers = 0;
  throw_if(ze.zeDriverGet(&ndrivers, nullptr), "zeDriverGet");
  std::vector<ze_driver_handle_t> drivers(ndrivers);
  throw_if(ze.zeDriverGet(&ndrivers, drivers.data()), "zeDriverGet");
  int seen = 0;
  for (ze_driver_handle_t d : drivers) {  // GPUs of every driver, in driver order
    uint32_t n = 0;
    if (ze.zeDeviceGet(d, &n, nullptr) != ZE_RESULT_SUCCESS || n == 0) continue;
    std::vector<ze_device_handle_t> devs(n);
    if (ze.zeDeviceGet(d, &n, devs.data()) != ZE_RESULT_SUCCESS) continue;
    for (ze_device_handle_t dev : devs) {
      ze_device_properties_t p{};
      p.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES;
      if (ze.zeDeviceGetProperties(dev, &p) != ZE_RESULT_SUCCESS || p.type != ZE_DEVICE_TYPE_GPU) continue;
      if (seen++ == index) driver_ = d, device_ = dev, props_ = p;
    }
  }
  if (device_ == nullptr)
    throw std::runtime_error(
        fmt::format("[LEVEL_ZERO] no GPU {}: the Level Zero drivers list {}", index, seen));
  ze.zeDriverGetApiVersion(driver_, &api_version_);

  ze_device_compute_properties_t cp{};
  cp.stype = ZE_STRUCTURE_TYPE_DEVICE_COMPUTE_PROPERTIES;
  throw_if(ze.zeDeviceGetComputeProperties(device_, &cp), "zeDeviceGetComputeProperties");
  ze_device_module_properties_t mp{};
  mp.stype = ZE_STRUCTURE_TYPE_DEVICE_MODULE_PROPERTIES;
  throw_if(ze.zeDeviceGetModuleProperties(device_, &mp), "zeDeviceGetModuleProperties");
  limits_.fp16 = (mp.flags & ZE_DEVICE_MODULE_FLAG_FP16) != 0;
  limits_.fp64 = (mp.flags & ZE_DEVICE_MODULE_FLAG_FP64) != 0;
  limits_.max_work_group_size = cp.maxTotalGroupSize;
  limits_.max_work_item_sizes[0] = cp.maxGroupSizeX;
  limits_.max_work_item_sizes[1] = cp.maxGroupSizeY;
  limits_.max_work_item_sizes[2] = cp.maxGroupSizeZ;
  limits_.local_mem_size = cp.maxSharedLocalMemory;
  limits_.max_parameter_size = mp.maxArgumentsSize;

  uint32_t ngroups = 0;
  throw_if(ze.zeDeviceGetCommandQueueGroupProperties(device_, &ngroups, nullptr),
           "zeDeviceGetCommandQueueGroupProperties");
  std::vector<ze_command_queue_group_properties_t> groups(ngroups);
  for (auto& g : groups) g.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_GROUP_PROPERTIES;
  throw_if(ze.zeDeviceGetCommandQueueGroupProperties(device_, &ngroups, groups.data()),
           "zeDeviceGetCommandQueueGroupProperties");
  bool found = false;
  for (uint32_t i = 0; i < ngroups && !found; i++)
    if ((groups[i].flags & ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE) != 0)
      compute_ordinal_ = i, found = true;
  if (!found)
    throw std::runtime_error(fmt::format("[LEVEL_ZERO] {} has no compute queue group", props_.name));

  ze_context_desc_t cd{ZE_STRUCTURE_TYPE_CONTEXT_DESC, nullptr, 0};
  throw_if(ze.zeContextCreate(driver_, &cd, &context_), "zeContextCreate");
  ze_command_queue_desc_t qd{ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC,
                             nullptr,
                             compute_ordinal_,
                             0,
                             0,
                             ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS,
                             ZE_COMMAND_QUEUE_PRIORITY_NORMAL};
  ze_command_queue_desc_t copy_qd = qd;
  copy_qd.mode = ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS;
  ze_result_t r = ze.zeCommandQueueCreate(context_, device_, &qd, &queue_);
  if (r == ZE_RESULT_SUCCESS) r = ze.zeCommandListCreateImmediate(context_, device_, &copy_qd, &copy_list_);
  if (r != ZE_RESULT_SUCCESS) {
    if (queue_ != nullptr) ze.zeCommandQueueDestroy(queue_);
    ze.zeContextDestroy(context_);
    throw_if(r, "creating the command queue and the copy list");
  }
}

Context::~Context() {
  std::lock_guard lock(mu_);
  (void)synchronize_locked();
  ze_->zeCommandListDestroy(copy_list_);
  ze_->zeCommandQueueDestroy(queue_);
  ze_->zeContextDestroy(context_);
}

std::string Context::description() const {
  return fmt::format("{} (device 0x{:x}, {} EUs), Level Zero {}.{}", props_.name, props_.deviceId,
                     props_.numSlices * props_.numSubslicesPerSlice * props_.numEUsPerSubslice,
                     ZE_MAJOR_VERSION(api_version_), ZE_MINOR_VERSION(api_version_));
}

ze_command_list_handle_t Context::new_command_list(std::string_view what) {
  ze_command_list_desc_t d{ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC, nullptr, compute_ordinal_, 0};
  ze_command_list_handle_t list = nullptr;
  throw_if(ze_->zeCommandListCreate(context_, device_, &d, &list), what);
  return list;
}

Status Context::submit(ze_command_list_handle_t list, std::string_view what) {
  std::lock_guard lock(mu_);
  ze_result_t r = ze_->zeCommandListClose(list);
  if (r == ZE_RESULT_SUCCESS) r = ze_->zeCommandQueueExecuteCommandLists(queue_, 1, &list, nullptr);
  if (r != ZE_RESULT_SUCCESS) {
    ze_->zeCommandListDestroy(list);
    return ze_status(r, what);
  }
  pending_.push_back(list);
  return {};
}

Status Context::synchronize_locked() {
  ze_result_t r = ze_->zeCommandQueueSynchronize(queue_, UINT64_MAX);
  for (ze_command_list_handle_t l : pending_) ze_->zeCommandListDestroy(l);
  pending_.clear();
  return ze_status(r, "zeCommandQueueSynchronize");
}

Status Context::synchronize() {
  std::lock_guard lock(mu_);
  return synchronize_locked();
}

Status Context::copy(void* dst, const void* src, size_t nbytes, std::string_view what) {
  std::lock_guard lock(mu_);
  if (Status s = synchronize_locked(); !s.ok()) return s;
  // The copy list is synchronous: the copy has completed when the append returns.
  return ze_status(ze_->zeCommandListAppendMemoryCopy(copy_list_, dst, src, nbytes, nullptr, 0, nullptr),
                   what);
}

double Context::kernel_seconds(const ze_kernel_timestamp_result_t& ts) const {
  uint64_t mask =
      props_.kernelTimestampValidBits >= 64 ? ~0ull : (1ull << props_.kernelTimestampValidBits) - 1;
  uint64_t ticks = (ts.context.kernelEnd - ts.context.kernelStart) & mask;
  // Queried with ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES, timerResolution is in nanoseconds per tick.
  return static_cast<double>(ticks) * static_cast<double>(props_.timerResolution) * 1e-9;
}

}  // namespace tg::level_zero
