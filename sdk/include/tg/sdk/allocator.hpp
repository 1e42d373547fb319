#pragma once
#include <cstddef>
#include <span>

#include "tg/sdk/status.hpp"

namespace tg::sdk {

// Buffers are opaque handles owned by the plugin (a pointer on the host, a buffer object on a GPU).
using Handle = void*;

struct AllocOptions {
  bool host_visible = false;  // the core wants to map it (as_host)
  bool uncached = false;
  bool cpu_access = false;
};

// Device memory. The core wraps every plugin allocator in its LRU cache: freed buffers are kept for
// reuse, and on out_of_memory the cache is flushed and the alloc retried once.
class Allocator {
 public:
  Allocator() = default;
  Allocator(const Allocator&) = delete;
  Allocator& operator=(const Allocator&) = delete;
  virtual ~Allocator() = default;

  // --- required ---
  // nbytes may be 0 (return a valid, distinct handle). Return Code::out_of_memory when full.
  virtual Status alloc(size_t nbytes, const AllocOptions& opts, Handle* out) noexcept = 0;
  virtual void free(Handle buf, size_t nbytes, const AllocOptions& opts) noexcept = 0;
  // Host -> device, starting at the handle's first byte; src.size() <= the buffer size.
  virtual Status copyin(Handle dst, std::span<const std::byte> src) noexcept = 0;
  // Device -> host; waits for pending work on dst's device first.
  virtual Status copyout(std::span<std::byte> dst, Handle src) noexcept = 0;
  // Bytes every handle is aligned to (the renderer may rely on it for vector loads).
  virtual size_t alignment() const noexcept = 0;

  // --- optional (defaults say "not supported") ---
  // A view of [offset, offset+size) of buf that kernels and copies can use like a buffer.
  virtual Status offset(Handle buf, size_t offset, size_t size, Handle* out) noexcept {
    (void)buf, (void)offset, (void)size, (void)out;
    return unsupported("offset views");
  }
  // Frees a view made by offset() (not the underlying buffer).
  virtual void free_view(Handle view) noexcept { (void)view; }
  // Device-to-device copy within this device.
  virtual Status transfer(Handle dst, Handle src, size_t nbytes) noexcept {
    (void)dst, (void)src, (void)nbytes;
    return unsupported("transfer");
  }
  // Host pointer to the buffer's memory if it is directly addressable, else nullptr.
  virtual void* as_host(Handle buf) noexcept {
    (void)buf;
    return nullptr;
  }
};

}  // namespace tg::sdk
