#pragma once
// Bytes on a device. Allocated on first use (so a schedule can plan buffers it never fills), freed
// into the device's LRU cache. A view shares its base's memory at a byte offset.
#include <cstddef>
#include <memory>
#include <span>

#include "runtime/device.hpp"

namespace tg::runtime {

class Buffer {
 public:
  Buffer(Device& device, size_t nbytes, sdk::AllocOptions opts = {});
  // A view of [offset, offset+nbytes) of base (itself possibly a view); the device must support offset views.
  Buffer(std::shared_ptr<Buffer> base, size_t offset, size_t nbytes);
  // Over [ptr, ptr + nbytes) of host memory the caller owns, through the device's sdk::ForeignMemory: never
  // allocated or freed here, owner is kept until this buffer dies. Null when the device cannot use host
  // memory in place; a tg::Error when it refuses this pointer.
  static std::shared_ptr<Buffer> wrap_host(Device& device, void* ptr, size_t nbytes,
                                           std::shared_ptr<const void> owner);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  Device& device() const { return device_; }
  size_t nbytes() const { return nbytes_; }
  size_t offset() const { return offset_; }                      // bytes into the base buffer
  const std::shared_ptr<Buffer>& base() const { return base_; }  // null unless a view
  bool allocated() const { return handle_ != nullptr; }
  sdk::Handle handle();  // allocates on first call
  bool foreign() const { return foreign_; }
  // The buffer's bytes in host memory when the device maps them (sdk::Allocator::as_host), else null.
  std::byte* host_address();

  // src/dst may be shorter than the buffer; longer is a ValueError.
  void copyin(std::span<const std::byte> src);
  void copyout(std::span<std::byte> dst);

 private:
  Device& device_;
  size_t nbytes_, offset_ = 0;
  sdk::AllocOptions opts_;
  std::shared_ptr<Buffer> base_;
  sdk::Handle handle_ = nullptr;
  bool foreign_ = false;
  std::shared_ptr<const void> owner_;  // keeps foreign memory alive
};

}  // namespace tg::runtime
