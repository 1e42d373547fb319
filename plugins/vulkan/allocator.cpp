// VULKAN device memory (allocator.hpp): buffers, views, mapped or staged copies.
#include "plugins/vulkan/allocator.hpp"

#include <cstring>

#include <fmt/format.h>

#include "base/env.hpp"
#include "base/error.hpp"

namespace tg::vulkan {

using tg::sdk::Code;
using tg::sdk::Handle;
using tg::sdk::Status;

namespace {

constexpr VkMemoryPropertyFlags kHost = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
constexpr VkMemoryPropertyFlags kDirect = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT | kHost;

int find_type(const VkPhysicalDeviceMemoryProperties& m, uint32_t allowed, VkMemoryPropertyFlags flags) {
  for (uint32_t i = 0; i < m.memoryTypeCount; i++)
    if ((allowed >> i & 1u) && (m.memoryTypes[i].propertyFlags & flags) == flags) return static_cast<int>(i);
  return -1;
}

// Vulkan allocation failures become out_of_memory, so the core flushes its cache and retries.
Status from_error(const std::exception& e) {
  if (dynamic_cast<const OutOfMemoryError*>(&e)) return {Code::out_of_memory, e.what()};
  return {Code::runtime_error, e.what()};
}

}  // namespace

VulkanAllocator::VulkanAllocator(Context& ctx) : ctx_(ctx) {
  bool any_direct = false;
  for (uint32_t i = 0; i < ctx.memory().memoryTypeCount; i++)
    any_direct = any_direct || (ctx.memory().memoryTypes[i].propertyFlags & kDirect) == kDirect;
  direct_ = any_direct && tg::env::get_int("TG_VULKAN_STAGING").value_or(0) != 1;
  alignment_ = std::max<size_t>(16, ctx.props().limits.minStorageBufferOffsetAlignment);
}

VulkanAllocator::~VulkanAllocator() {
  ctx_.wait_all();
  if (staging_.buffer != VK_NULL_HANDLE) destroy(staging_);
}

VulkanBuffer VulkanAllocator::make(VkDeviceSize nbytes, VkMemoryPropertyFlags flags, bool map) {
  const vk::DeviceFns& fn = ctx_.fn();
  VulkanBuffer b;
  b.size = nbytes;
  VkBufferCreateInfo bci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bci.size = std::max<VkDeviceSize>(nbytes, 16);  // size 0 still gets a distinct buffer
  bci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  bci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  VkResult r = fn.vkCreateBuffer(ctx_.device(), &bci, nullptr, &b.buffer);
  if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY)
    throw OutOfMemoryError("VULKAN alloc", fmt::format("vkCreateBuffer of {} bytes: {}", nbytes, vk::result_name(r)));
  vk::check(r, "vkCreateBuffer");
  VkMemoryRequirements req;
  fn.vkGetBufferMemoryRequirements(ctx_.device(), b.buffer, &req);
  int type = find_type(ctx_.memory(), req.memoryTypeBits, flags);
  if (type < 0) type = find_type(ctx_.memory(), req.memoryTypeBits, flags & kHost);
  if (type < 0) {
    fn.vkDestroyBuffer(ctx_.device(), b.buffer, nullptr);
    throw DeviceError("VULKAN alloc", "no memory type for a storage buffer");
  }
  VkMemoryAllocateInfo mai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  mai.allocationSize = req.size;
  mai.memoryTypeIndex = static_cast<uint32_t>(type);
  r = fn.vkAllocateMemory(ctx_.device(), &mai, nullptr, &b.memory);
  if (r != VK_SUCCESS) {
    fn.vkDestroyBuffer(ctx_.device(), b.buffer, nullptr);
    if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY)
      throw OutOfMemoryError("VULKAN alloc", fmt::format("cannot allocate {} bytes: {}", nbytes, vk::result_name(r)));
    vk::check(r, "vkAllocateMemory");
  }
  try {
    vk::check(fn.vkBindBufferMemory(ctx_.device(), b.buffer, b.memory, 0), "vkBindBufferMemory");
    if (map) {
      void* p = nullptr;
      vk::check(fn.vkMapMemory(ctx_.device(), b.memory, 0, VK_WHOLE_SIZE, 0, &p), "vkMapMemory");
      b.mapped = static_cast<std::byte*>(p);
    }
  } catch (...) {
    destroy(b);
    throw;
  }
  return b;
}

void VulkanAllocator::destroy(const VulkanBuffer& b) {
  ctx_.fn().vkDestroyBuffer(ctx_.device(), b.buffer, nullptr);
  ctx_.fn().vkFreeMemory(ctx_.device(), b.memory, nullptr);  // unmaps
}

VulkanBuffer& VulkanAllocator::staging(VkDeviceSize nbytes) {
  if (staging_.buffer == VK_NULL_HANDLE || staging_.size < nbytes) {
    if (staging_.buffer != VK_NULL_HANDLE) destroy(staging_);
    staging_ = {};
    staging_ = make(std::max<VkDeviceSize>(nbytes, 1 << 20), kHost, true);
  }
  return staging_;
}

Status VulkanAllocator::alloc(size_t nbytes, const tg::sdk::AllocOptions& opts, Handle* out) noexcept {
  (void)opts;
  try {
    std::lock_guard lock(ctx_.mutex());
    auto b = std::make_unique<VulkanBuffer>(
        make(nbytes, direct_ ? kDirect : VkMemoryPropertyFlags{VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT}, direct_));
    *out = b.release();
    return {};
  } catch (const std::bad_alloc&) {
    return {Code::out_of_memory, "host allocation failed"};
  } catch (const std::exception& e) {
    return from_error(e);
  }
}

void VulkanAllocator::free(Handle buf, size_t nbytes, const tg::sdk::AllocOptions& opts) noexcept {
  (void)nbytes, (void)opts;
  auto* b = static_cast<VulkanBuffer*>(buf);
  try {
    std::lock_guard lock(ctx_.mutex());
    ctx_.wait_all();  // a pending kernel may still use it
    destroy(*b);
  } catch (...) {
  }
  delete b;
}

Status VulkanAllocator::copyin(Handle dst, std::span<const std::byte> src) noexcept {
  return tg::sdk::guard([&]() -> Status {
    auto* b = static_cast<VulkanBuffer*>(dst);
    if (src.size() > b->size)
      return {Code::invalid_argument, fmt::format("[VULKAN copyin] {} bytes into a {}-byte buffer", src.size(), b->size)};
    if (src.empty()) return {};
    std::lock_guard lock(ctx_.mutex());
    ctx_.wait_all();  // kernels in flight may read or write it
    if (b->mapped != nullptr) {
      std::memcpy(b->mapped + b->offset, src.data(), src.size());
      return {};
    }
    VulkanBuffer& s = staging(src.size());
    std::memcpy(s.mapped, src.data(), src.size());
    VkCommandBuffer cmd = ctx_.begin();
    VkBufferCopy region{0, b->offset, src.size()};
    ctx_.fn().vkCmdCopyBuffer(cmd, s.buffer, b->buffer, 1, &region);
    ctx_.submit(cmd, VK_NULL_HANDLE, true);
    return {};
  });
}

Status VulkanAllocator::copyout(std::span<std::byte> dst, Handle src) noexcept {
  return tg::sdk::guard([&]() -> Status {
    auto* b = static_cast<VulkanBuffer*>(src);
    if (dst.size() > b->size)
      return {Code::invalid_argument, fmt::format("[VULKAN copyout] {} bytes from a {}-byte buffer", dst.size(), b->size)};
    std::lock_guard lock(ctx_.mutex());
    ctx_.wait_all();
    if (dst.empty()) return {};
    if (b->mapped != nullptr) {
      std::memcpy(dst.data(), b->mapped + b->offset, dst.size());
      return {};
    }
    VulkanBuffer& s = staging(dst.size());
    VkCommandBuffer cmd = ctx_.begin();
    VkBufferCopy region{b->offset, 0, dst.size()};
    ctx_.fn().vkCmdCopyBuffer(cmd, b->buffer, s.buffer, 1, &region);
    VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    mb.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
    mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
    ctx_.fn().vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0,
                                   nullptr, 0, nullptr);
    ctx_.submit(cmd, VK_NULL_HANDLE, true);
    std::memcpy(dst.data(), s.mapped, dst.size());
    return {};
  });
}

Status VulkanAllocator::offset(Handle buf, size_t offset, size_t size, Handle* out) noexcept {
  return tg::sdk::guard([&]() -> Status {
    auto* b = static_cast<VulkanBuffer*>(buf);
    if (offset % alignment_ != 0)
      return tg::sdk::unsupported(fmt::format(
          "[VULKAN view] offset {} is not a multiple of minStorageBufferOffsetAlignment ({})", offset, alignment_));
    if (offset + size > b->size)
      return {Code::invalid_argument,
              fmt::format("[VULKAN view] bytes [{}, {}) outside a {}-byte buffer", offset, offset + size, b->size)};
    auto v = std::make_unique<VulkanBuffer>(*b);
    v->offset = b->offset + offset, v->size = size, v->view = true;
    *out = v.release();
    return {};
  });
}

void VulkanAllocator::free_view(Handle view) noexcept { delete static_cast<VulkanBuffer*>(view); }

Status VulkanAllocator::transfer(Handle dst, Handle src, size_t nbytes) noexcept {
  return tg::sdk::guard([&]() -> Status {
    auto *d = static_cast<VulkanBuffer*>(dst), *s = static_cast<VulkanBuffer*>(src);
    if (nbytes > d->size || nbytes > s->size)
      return {Code::invalid_argument, fmt::format("[VULKAN transfer] {} bytes between buffers of {} and {} bytes",
                                                  nbytes, s->size, d->size)};
    if (nbytes == 0) return {};
    std::lock_guard lock(ctx_.mutex());
    VkCommandBuffer cmd = ctx_.begin();
    VkBufferCopy region{s->offset, d->offset, nbytes};
    ctx_.fn().vkCmdCopyBuffer(cmd, s->buffer, d->buffer, 1, &region);
    ctx_.submit(cmd, VK_NULL_HANDLE, false);
    return {};
  });
}

}  // namespace tg::vulkan
