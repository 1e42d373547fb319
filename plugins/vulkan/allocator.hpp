#pragma once
// VULKAN device memory. A handle is a VulkanBuffer*. Memory that is device-local and host-visible at once
// (integrated GPUs, lavapipe) is mapped and copied with memcpy; otherwise buffers are device-local and
// copies go through a host-visible staging buffer (TG_VULKAN_STAGING=1 forces that path everywhere).
#include <mutex>

#include "plugins/vulkan/context.hpp"
#include "tg/sdk/allocator.hpp"

namespace tg::vulkan {

struct VulkanBuffer {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  VkDeviceSize offset = 0;  // of a view into its base buffer
  VkDeviceSize size = 0;    // bytes usable from offset
  std::byte* mapped = nullptr;  // the base buffer's mapping (direct path), or null
  bool view = false;
};

class VulkanAllocator final : public tg::sdk::Allocator {
 public:
  explicit VulkanAllocator(Context& ctx);
  ~VulkanAllocator() override;

  tg::sdk::Status alloc(size_t nbytes, const tg::sdk::AllocOptions& opts, tg::sdk::Handle* out) noexcept override;
  void free(tg::sdk::Handle buf, size_t nbytes, const tg::sdk::AllocOptions& opts) noexcept override;
  tg::sdk::Status copyin(tg::sdk::Handle dst, std::span<const std::byte> src) noexcept override;
  tg::sdk::Status copyout(std::span<std::byte> dst, tg::sdk::Handle src) noexcept override;
  size_t alignment() const noexcept override { return alignment_; }
  tg::sdk::Status offset(tg::sdk::Handle buf, size_t offset, size_t size, tg::sdk::Handle* out) noexcept override;
  void free_view(tg::sdk::Handle view) noexcept override;
  tg::sdk::Status transfer(tg::sdk::Handle dst, tg::sdk::Handle src, size_t nbytes) noexcept override;

  bool direct() const { return direct_; }

 private:
  // A buffer of at least nbytes in memory with `flags`; throws (out_of_memory as OutOfMemoryError).
  VulkanBuffer make(VkDeviceSize nbytes, VkMemoryPropertyFlags flags, bool map);
  void destroy(const VulkanBuffer& b);
  VulkanBuffer& staging(VkDeviceSize nbytes);  // grown on demand, kept

  Context& ctx_;
  bool direct_ = false;  // device memory is host-visible: map it instead of staging
  size_t alignment_ = 16;
  VulkanBuffer staging_;
};

}  // namespace tg::vulkan
