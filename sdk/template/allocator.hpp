#pragma once
// TEMPLATE device memory. Here a buffer is host memory and a handle is its address; on a real
// accelerator a handle is whatever names device memory (a VkBuffer + offset, a CUdeviceptr, a cl_mem).
#include <cstddef>

#include <tg/sdk/allocator.hpp>

namespace tpl {

class TemplateAllocator final : public tg::sdk::Allocator {
 public:
  static constexpr size_t kAlignment = 64;

  // --- required ---
  tg::sdk::Status alloc(size_t nbytes, const tg::sdk::AllocOptions& opts,
                        tg::sdk::Handle* out) noexcept override;
  void free(tg::sdk::Handle buf, size_t nbytes, const tg::sdk::AllocOptions& opts) noexcept override;
  tg::sdk::Status copyin(tg::sdk::Handle dst, std::span<const std::byte> src) noexcept override;
  tg::sdk::Status copyout(std::span<std::byte> dst, tg::sdk::Handle src) noexcept override;
  size_t alignment() const noexcept override { return kAlignment; }

  // --- optional ---
  tg::sdk::Status offset(tg::sdk::Handle buf, size_t offset, size_t size,
                         tg::sdk::Handle* out) noexcept override;
  void free_view(tg::sdk::Handle view) noexcept override;
  tg::sdk::Status transfer(tg::sdk::Handle dst, tg::sdk::Handle src, size_t nbytes) noexcept override;
  void* as_host(tg::sdk::Handle buf) noexcept override;
};

}  // namespace tpl
