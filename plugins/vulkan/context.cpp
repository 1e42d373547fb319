// Vulkan device creation and the submission queue (context.hpp).
#include "plugins/vulkan/context.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "base/error.hpp"

namespace tg::vulkan {

using vk::check;

Context::Context(int32_t index) : instance_(std::make_unique<vk::Instance>()) {
  const vk::Loader& in = instance_->fn();
  std::vector<VkPhysicalDevice> devices = vk::compute_devices(*instance_);
  if (devices.empty()) throw DeviceError("VULKAN", "unavailable: no Vulkan device with a compute queue");
  if (index < 0 || static_cast<size_t>(index) >= devices.size())
    throw DeviceError("VULKAN", fmt::format("device index {} out of range: {} Vulkan device(s) with a compute queue",
                                            index, devices.size()));
  physical_ = devices[static_cast<size_t>(index)];
  in.vkGetPhysicalDeviceProperties(physical_, &props_);
  in.vkGetPhysicalDeviceMemoryProperties(physical_, &memory_);
  const bool v12 = props_.apiVersion >= VK_API_VERSION_1_2 && instance_->api_version() >= VK_API_VERSION_1_2;

  // What the device has (feature structs chained), then the same chain with only what we use switched on.
  VkPhysicalDevice16BitStorageFeatures s16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
  VkPhysicalDevice8BitStorageFeatures s8{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES};
  VkPhysicalDeviceShaderFloat16Int8Features f16i8{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
  VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  f2.pNext = &s16;
  if (v12) s16.pNext = &s8, s8.pNext = &f16i8;
  in.vkGetPhysicalDeviceFeatures2(physical_, &f2);
  features_.storage16 = s16.storageBuffer16BitAccess;
  features_.storage8 = v12 && s8.storageBuffer8BitAccess;
  features_.int8 = v12 && f16i8.shaderInt8;
  features_.float16 = v12 && f16i8.shaderFloat16;
  features_.int16 = f2.features.shaderInt16;
  features_.int64 = f2.features.shaderInt64;
  features_.float64 = f2.features.shaderFloat64;
  VkPhysicalDeviceFeatures2 want{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  want.features.shaderInt16 = f2.features.shaderInt16;
  want.features.shaderInt64 = f2.features.shaderInt64;
  want.features.shaderFloat64 = f2.features.shaderFloat64;
  VkPhysicalDevice16BitStorageFeatures w16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
  w16.storageBuffer16BitAccess = s16.storageBuffer16BitAccess;
  VkPhysicalDevice8BitStorageFeatures w8{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES};
  w8.storageBuffer8BitAccess = features_.storage8;
  VkPhysicalDeviceShaderFloat16Int8Features wf{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
  wf.shaderInt8 = features_.int8, wf.shaderFloat16 = features_.float16;
  want.pNext = &w16;
  if (v12) w16.pNext = &w8, w8.pNext = &wf;

  int family = vk::compute_queue_family(in, physical_);
  uint32_t nq = 0;
  in.vkGetPhysicalDeviceQueueFamilyProperties(physical_, &nq, nullptr);
  std::vector<VkQueueFamilyProperties> qs(nq);
  in.vkGetPhysicalDeviceQueueFamilyProperties(physical_, &nq, qs.data());
  timestamp_bits_ = qs[static_cast<size_t>(family)].timestampValidBits;
  float priority = 1.0f;
  VkDeviceQueueCreateInfo qci{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qci.queueFamilyIndex = static_cast<uint32_t>(family);
  qci.queueCount = 1;
  qci.pQueuePriorities = &priority;
  VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  dci.pNext = &want;
  dci.queueCreateInfoCount = 1;
  dci.pQueueCreateInfos = &qci;
  check(in.vkCreateDevice(physical_, &dci, nullptr, &device_), "vkCreateDevice");
#define TG_VK_LOAD_DEVICE(name) \
  fn_.name = reinterpret_cast<PFN_##name>(in.vkGetDeviceProcAddr(device_, #name));
  TG_VK_DEVICE_FNS(TG_VK_LOAD_DEVICE)
#undef TG_VK_LOAD_DEVICE
  fn_.vkGetDeviceQueue(device_, static_cast<uint32_t>(family), 0, &queue_);
  VkCommandPoolCreateInfo pci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pci.flags = VK_COMMAND_POOL_CREATE_TRANSIENT_BIT;
  pci.queueFamilyIndex = static_cast<uint32_t>(family);
  check(fn_.vkCreateCommandPool(device_, &pci, nullptr, &cmd_pool_), "vkCreateCommandPool");

  if (v12) {
    VkPhysicalDeviceDriverProperties drv{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
    VkPhysicalDeviceFloatControlsProperties fc{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FLOAT_CONTROLS_PROPERTIES};
    VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
    p2.pNext = &drv, drv.pNext = &fc;
    in.vkGetPhysicalDeviceProperties2(physical_, &p2);
    driver_ = fmt::format("{} {}", drv.driverName, drv.driverInfo);
    features_.signed_zero16 = fc.shaderSignedZeroInfNanPreserveFloat16;
    features_.signed_zero32 = fc.shaderSignedZeroInfNanPreserveFloat32;
    features_.signed_zero64 = fc.shaderSignedZeroInfNanPreserveFloat64;
  }
}

Context::~Context() {
  if (device_ == VK_NULL_HANDLE) return;
  fn_.vkDeviceWaitIdle(device_);
  for (const Pending& p : pending_) release(p);
  fn_.vkDestroyCommandPool(device_, cmd_pool_, nullptr);
  fn_.vkDestroyDevice(device_, nullptr);
}

ShaderLimits Context::limits() const {
  const VkPhysicalDeviceLimits& l = props_.limits;
  ShaderLimits s;
  for (int i = 0; i < 3; i++) s.group_count[i] = l.maxComputeWorkGroupCount[i], s.group_size[i] = l.maxComputeWorkGroupSize[i];
  s.invocations = l.maxComputeWorkGroupInvocations;
  s.shared_bytes = l.maxComputeSharedMemorySize;
  s.storage_buffers = std::min(l.maxPerStageDescriptorStorageBuffers, l.maxDescriptorSetStorageBuffers);
  s.push_constant_bytes = std::min<uint32_t>(l.maxPushConstantsSize, 256);
  return s;
}

std::string Context::description() const {
  return fmt::format("{}{}{}, Vulkan {}.{}.{}", props_.deviceName, driver_.empty() ? "" : ", ", driver_,
                     VK_API_VERSION_MAJOR(props_.apiVersion), VK_API_VERSION_MINOR(props_.apiVersion),
                     VK_API_VERSION_PATCH(props_.apiVersion));
}

VkCommandBuffer Context::begin() {
  VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  ai.commandPool = cmd_pool_;
  ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ai.commandBufferCount = 1;
  VkCommandBuffer cmd = VK_NULL_HANDLE;
  check(fn_.vkAllocateCommandBuffers(device_, &ai, &cmd), "vkAllocateCommandBuffers");
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  check(fn_.vkBeginCommandBuffer(cmd, &bi), "vkBeginCommandBuffer");
  VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_HOST_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                     VK_ACCESS_TRANSFER_WRITE_BIT;
  const VkPipelineStageFlags stages = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
  fn_.vkCmdPipelineBarrier(cmd, stages | VK_PIPELINE_STAGE_HOST_BIT, stages, 0, 1, &mb, 0, nullptr, 0, nullptr);
  return cmd;
}

void Context::submit(VkCommandBuffer cmd, VkDescriptorPool pool, bool wait) {
  Pending p{VK_NULL_HANDLE, cmd, pool};
  try {
    check(fn_.vkEndCommandBuffer(cmd), "vkEndCommandBuffer");
    VkFenceCreateInfo fci{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    check(fn_.vkCreateFence(device_, &fci, nullptr, &p.fence), "vkCreateFence");
    VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    si.commandBufferCount = 1;
    si.pCommandBuffers = &cmd;
    check(fn_.vkQueueSubmit(queue_, 1, &si, p.fence), "vkQueueSubmit");
  } catch (...) {
    release(p);
    throw;
  }
  pending_.push_back(p);
  if (wait) {
    wait_all();
    return;
  }
  // Finished submissions are freed as new ones come, so a long run of launches without wait stays bounded.
  if (pending_.size() >= 64) wait_all();
}

void Context::wait_all() {
  std::vector<VkFence> fences;
  for (const Pending& p : pending_) fences.push_back(p.fence);
  if (!fences.empty()) {
    VkResult r = fn_.vkWaitForFences(device_, static_cast<uint32_t>(fences.size()), fences.data(), VK_TRUE, UINT64_MAX);
    for (const Pending& p : pending_) release(p);
    pending_.clear();
    check(r, "vkWaitForFences");
  }
}

void Context::release(const Pending& p) {
  if (p.fence != VK_NULL_HANDLE) fn_.vkDestroyFence(device_, p.fence, nullptr);
  fn_.vkFreeCommandBuffers(device_, cmd_pool_, 1, &p.cmd);
  if (p.pool != VK_NULL_HANDLE) fn_.vkDestroyDescriptorPool(device_, p.pool, nullptr);
}

}  // namespace tg::vulkan
