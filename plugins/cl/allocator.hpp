#pragma once
// Device memory of a CL device: a handle is a cl_mem, views are sub-buffers of the root buffer.
#include <memory>
#include <mutex>
#include <unordered_map>

#include "plugins/cl/context.hpp"
#include "tg/sdk/allocator.hpp"

namespace tg::cldev {

class ClAllocator final : public tg::sdk::Allocator {
 public:
  explicit ClAllocator(std::shared_ptr<Context> ctx) : ctx_(std::move(ctx)) {}

  tg::sdk::Status alloc(size_t nbytes, const tg::sdk::AllocOptions& opts,
                        tg::sdk::Handle* out) noexcept override;
  void free(tg::sdk::Handle buf, size_t nbytes, const tg::sdk::AllocOptions& opts) noexcept override;
  tg::sdk::Status copyin(tg::sdk::Handle dst, std::span<const std::byte> src) noexcept override;
  tg::sdk::Status copyout(std::span<std::byte> dst, tg::sdk::Handle src) noexcept override;
  size_t alignment() const noexcept override { return ctx_->info().mem_base_addr_align_bytes; }

  // Sub-buffers: the offset (from the root buffer) must be a multiple of alignment(), else unsupported.
  tg::sdk::Status offset(tg::sdk::Handle buf, size_t offset, size_t size,
                         tg::sdk::Handle* out) noexcept override;
  void free_view(tg::sdk::Handle view) noexcept override;
  tg::sdk::Status transfer(tg::sdk::Handle dst, tg::sdk::Handle src, size_t nbytes) noexcept override;

 private:
  struct View {
    cl_mem root;
    size_t origin;
  };
  std::shared_ptr<Context> ctx_;
  std::mutex mu_;
  std::unordered_map<cl_mem, View> views_;  // OpenCL has no sub-buffer of a sub-buffer: views keep their root
};

}  // namespace tg::cldev
