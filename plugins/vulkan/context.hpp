#pragma once
// One Vulkan device as the plugin uses it: instance, physical + logical device, a compute queue, and the
// submissions in flight (each with its fence, command buffer and descriptor pool, recycled when done).
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "plugins/vulkan/renderer.hpp"
#include "plugins/vulkan/vk.hpp"

namespace tg::vulkan {

class Context {
 public:
  explicit Context(int32_t index);  // throws DeviceError with the reason
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  ~Context();

  const vk::DeviceFns& fn() const { return fn_; }
  VkDevice device() const { return device_; }
  const VkPhysicalDeviceProperties& props() const { return props_; }
  const VkPhysicalDeviceMemoryProperties& memory() const { return memory_; }
  const ShaderFeatures& features() const { return features_; }
  ShaderLimits limits() const;
  uint32_t timestamp_bits() const { return timestamp_bits_; }
  std::string description() const;
  std::mutex& mutex() { return mu_; }

  // A command buffer in the recording state that starts with a full memory barrier, so it sees every
  // earlier submission's writes (the queue orders barriers across submissions).
  VkCommandBuffer begin();
  // Ends and submits cmd; pool (may be null) is destroyed with it once done. With wait, blocks until done.
  void submit(VkCommandBuffer cmd, VkDescriptorPool pool, bool wait);
  // Blocks until every submission is done and frees their resources.
  void wait_all();

 private:
  struct Pending {
    VkFence fence;
    VkCommandBuffer cmd;
    VkDescriptorPool pool;
  };
  void release(const Pending& p);

  std::unique_ptr<vk::Instance> instance_;
  VkPhysicalDevice physical_ = VK_NULL_HANDLE;
  VkPhysicalDeviceProperties props_{};
  VkPhysicalDeviceMemoryProperties memory_{};
  ShaderFeatures features_;
  std::string driver_;
  VkDevice device_ = VK_NULL_HANDLE;
  vk::DeviceFns fn_;
  VkQueue queue_ = VK_NULL_HANDLE;
  uint32_t timestamp_bits_ = 0;
  VkCommandPool cmd_pool_ = VK_NULL_HANDLE;
  std::vector<Pending> pending_;
  std::mutex mu_;
};

}  // namespace tg::vulkan
