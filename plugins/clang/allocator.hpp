#pragma once
#include "tg/sdk/allocator.hpp"
#include "tg/sdk/foreign_memory.hpp"

namespace tg::clangdev {

// Host memory: a handle is the buffer's address, views are addresses inside it.
class HostAllocator final : public tg::sdk::Allocator {
 public:
  static constexpr size_t kAlignment = 64;  // one cache line, enough for AVX-512 loads

  tg::sdk::Status alloc(size_t nbytes, const tg::sdk::AllocOptions& opts,
                        tg::sdk::Handle* out) noexcept override;
  void free(tg::sdk::Handle buf, size_t nbytes, const tg::sdk::AllocOptions& opts) noexcept override;
  tg::sdk::Status copyin(tg::sdk::Handle dst, std::span<const std::byte> src) noexcept override;
  tg::sdk::Status copyout(std::span<std::byte> dst, tg::sdk::Handle src) noexcept override;
  size_t alignment() const noexcept override { return kAlignment; }

  tg::sdk::Status offset(tg::sdk::Handle buf, size_t offset, size_t size,
                         tg::sdk::Handle* out) noexcept override;
  void free_view(tg::sdk::Handle view) noexcept override { (void)view; }
  tg::sdk::Status transfer(tg::sdk::Handle dst, tg::sdk::Handle src, size_t nbytes) noexcept override;
  void* as_host(tg::sdk::Handle buf) noexcept override { return buf; }
};

// The caller's memory used in place: a handle is its address. Kernels need element alignment only (vector
// types are aligned as their elements), which the core checks.
class HostForeignMemory final : public tg::sdk::ForeignMemory {
 public:
  tg::sdk::Status wrap(void* ptr, size_t nbytes, tg::sdk::Handle* out) noexcept override {
    (void)nbytes;
    *out = ptr;
    return {};
  }
  void release(tg::sdk::Handle buf) noexcept override { (void)buf; }
};

}  // namespace tg::clangdev
