#pragma once
// The Vulkan API as a table of function pointers: libvulkan.so.1 is dlopened (never linked), every entry
// point is loaded through vkGetInstanceProcAddr / vkGetDeviceProcAddr.
#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

#include <string>
#include <string_view>
#include <vector>

namespace tg::vk {

#define TG_VK_GLOBAL_FNS(X) \
  X(vkCreateInstance)       \
  X(vkEnumerateInstanceVersion)

#define TG_VK_INSTANCE_FNS(X)                  \
  X(vkDestroyInstance)                         \
  X(vkEnumeratePhysicalDevices)                \
  X(vkGetPhysicalDeviceProperties)             \
  X(vkGetPhysicalDeviceFeatures2)              \
  X(vkGetPhysicalDeviceProperties2)            \
  X(vkGetPhysicalDeviceMemoryProperties)       \
  X(vkGetPhysicalDeviceQueueFamilyProperties)  \
  X(vkEnumerateDeviceExtensionProperties)      \
  X(vkCreateDevice)                            \
  X(vkGetDeviceProcAddr)

#define TG_VK_DEVICE_FNS(X)            \
  X(vkDestroyDevice)                   \
  X(vkGetDeviceQueue)                  \
  X(vkDeviceWaitIdle)                  \
  X(vkQueueSubmit)                     \
  X(vkAllocateMemory)                  \
  X(vkFreeMemory)                      \
  X(vkMapMemory)                       \
  X(vkCreateBuffer)                    \
  X(vkDestroyBuffer)                   \
  X(vkGetBufferMemoryRequirements)     \
  X(vkBindBufferMemory)                \
  X(vkCreateShaderModule)              \
  X(vkDestroyShaderModule)             \
  X(vkCreateComputePipelines)          \
  X(vkDestroyPipeline)                 \
  X(vkCreatePipelineLayout)            \
  X(vkDestroyPipelineLayout)           \
  X(vkCreateDescriptorSetLayout)       \
  X(vkDestroyDescriptorSetLayout)      \
  X(vkCreateDescriptorPool)            \
  X(vkDestroyDescriptorPool)           \
  X(vkAllocateDescriptorSets)          \
  X(vkUpdateDescriptorSets)            \
  X(vkCreateCommandPool)               \
  X(vkDestroyCommandPool)              \
  X(vkAllocateCommandBuffers)          \
  X(vkFreeCommandBuffers)              \
  X(vkBeginCommandBuffer)              \
  X(vkEndCommandBuffer)                \
  X(vkCmdBindPipeline)                 \
  X(vkCmdBindDescriptorSets)           \
  X(vkCmdPushConstants)                \
  X(vkCmdDispatch)                     \
  X(vkCmdCopyBuffer)                   \
  X(vkCmdPipelineBarrier)              \
  X(vkCmdResetQueryPool)               \
  X(vkCmdWriteTimestamp)               \
  X(vkCreateQueryPool)                 \
  X(vkDestroyQueryPool)                \
  X(vkGetQueryPoolResults)             \
  X(vkCreateFence)                     \
  X(vkDestroyFence)                    \
  X(vkWaitForFences)

#define TG_VK_DECLARE(name) PFN_##name name = nullptr;

// Global and instance-level entry points of the dlopened loader.
struct Loader {
  PFN_vkGetInstanceProcAddr get_instance_proc = nullptr;
  TG_VK_GLOBAL_FNS(TG_VK_DECLARE)
  TG_VK_INSTANCE_FNS(TG_VK_DECLARE)
  VkInstance instance = VK_NULL_HANDLE;
};

struct DeviceFns {
  TG_VK_DEVICE_FNS(TG_VK_DECLARE)
};

// The loader library (dlopened once, never closed), or nullptr; `why` says what is missing.
PFN_vkGetInstanceProcAddr loader_entry(std::string* why);

// An instance with its entry points loaded; throws DeviceError("VULKAN", ...) with an "unavailable: ..."
// message when there is no loader or no instance. Destroys the instance in its destructor.
class Instance {
 public:
  Instance();
  Instance(const Instance&) = delete;
  Instance& operator=(const Instance&) = delete;
  ~Instance();
  const Loader& fn() const { return fn_; }
  VkInstance get() const { return fn_.instance; }
  uint32_t api_version() const { return api_; }

 private:
  Loader fn_;
  uint32_t api_ = VK_API_VERSION_1_1;
};

// Index of the first queue family of `pd` with compute, or -1.
int compute_queue_family(const Loader& fn, VkPhysicalDevice pd);

// The physical devices with a compute queue, in the loader's order (DEV=VULKAN:i picks the i-th).
std::vector<VkPhysicalDevice> compute_devices(const Instance& inst);

// Throws DeviceError("VULKAN", "<what> failed: VK_ERROR_...") unless r is VK_SUCCESS.
void check(VkResult r, std::string_view what);
std::string_view result_name(VkResult r);

}  // namespace tg::vk
