// TEMPLATE allocator: 64-byte aligned host memory; each method says what a real accelerator does instead.
#include "allocator.hpp"

#include <cstdlib>
#include <cstring>
#include <string>

namespace tpl {

using tg::sdk::Code;
using tg::sdk::Handle;
using tg::sdk::Status;

// Real device: allocate device memory (vkAllocateMemory + vkCreateBuffer, cuMemAlloc, clCreateBuffer),
// aligned to at least alignment(). Return Code::out_of_memory when the device is full (the core then
// flushes its buffer cache and retries once). Size 0 must still give a valid, distinct handle.
Status TemplateAllocator::alloc(size_t nbytes, const tg::sdk::AllocOptions& opts, Handle* out) noexcept {
  (void)opts;  // host_visible / cpu_access: pick a host-mappable memory type when asked
  size_t rounded = nbytes == 0 ? kAlignment : (nbytes + kAlignment - 1) / kAlignment * kAlignment;
  void* p = rounded >= nbytes ? std::aligned_alloc(kAlignment, rounded) : nullptr;
  if (p == nullptr)
    return {Code::out_of_memory, "[TEMPLATE alloc] cannot allocate " + std::to_string(nbytes) + " bytes"};
  *out = p;
  return {};
}

// Real device: release the device memory (after pending work that uses it has finished).
void TemplateAllocator::free(Handle buf, size_t nbytes, const tg::sdk::AllocOptions& opts) noexcept {
  (void)nbytes, (void)opts;
  std::free(buf);
}

// Real device: copy host bytes into device memory, usually through a host-visible staging buffer and a
// copy command (vkCmdCopyBuffer, cuMemcpyHtoD, clEnqueueWriteBuffer); src must stay valid only until return.
Status TemplateAllocator::copyin(Handle dst, std::span<const std::byte> src) noexcept {
  if (!src.empty()) std::memcpy(dst, src.data(), src.size());
  return {};
}

// Real device: wait for the kernels that write src, then copy device memory to the host (through a
// staging buffer and a copy command on discrete GPUs).
Status TemplateAllocator::copyout(std::span<std::byte> dst, Handle src) noexcept {
  if (!dst.empty()) std::memcpy(dst.data(), src, dst.size());
  return {};
}

// Real device: a handle naming [offset, offset+size) of buf that kernels and copies accept like a
// buffer (a sub-buffer, or base handle + offset). Without views, leave the default (unsupported).
Status TemplateAllocator::offset(Handle buf, size_t offset, size_t size, Handle* out) noexcept {
  (void)size;
  *out = static_cast<std::byte*>(buf) + offset;
  return {};
}

// Real device: release what offset() created (the view object), never the underlying memory.
void TemplateAllocator::free_view(Handle view) noexcept { (void)view; }

// Real device: a device-side copy (vkCmdCopyBuffer, cuMemcpyDtoD) between two buffers of this device.
Status TemplateAllocator::transfer(Handle dst, Handle src, size_t nbytes) noexcept {
  if (nbytes != 0) std::memmove(dst, src, nbytes);
  return {};
}

// Real device: a host pointer only when the memory is mapped into this process (unified memory,
// host-visible heaps); otherwise nullptr and the core copies with copyin/copyout.
void* TemplateAllocator::as_host(Handle buf) noexcept { return buf; }

}  // namespace tpl
