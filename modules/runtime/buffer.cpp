#include "runtime/buffer.hpp"

#include <utility>

#include <fmt/format.h>

#include "base/error.hpp"
#include "runtime/check.hpp"
#include "tg/sdk/foreign_memory.hpp"

namespace tg::runtime {

Buffer::Buffer(Device& device, size_t nbytes, sdk::AllocOptions opts)
    : device_(device), nbytes_(nbytes), opts_(opts) {}

Buffer::Buffer(std::shared_ptr<Buffer> base, size_t offset, size_t nbytes)
    : device_(base->device()), nbytes_(nbytes), offset_(offset), opts_(base->opts_) {
  if (offset > base->nbytes() || nbytes > base->nbytes() - offset)
    throw IndexError("view", fmt::format("bytes [{}, {}) are outside the {}-byte buffer", offset,
                                         offset + nbytes, base->nbytes()));
  // A view of a view points at the root buffer, so handles are always one offset() away from it.
  if (base->base_) offset_ += base->offset_, base = base->base_;
  base_ = std::move(base);
}

namespace {
sdk::ForeignMemory* foreign_memory(Device& device) {
  const void* ext = device.plugin().extension(sdk::kForeignMemoryExtension);
  return const_cast<sdk::ForeignMemory*>(static_cast<const sdk::ForeignMemory*>(ext));
}
}  // namespace

std::shared_ptr<Buffer> Buffer::wrap_host(Device& device, void* ptr, size_t nbytes,
                                          std::shared_ptr<const void> owner) {
  sdk::ForeignMemory* ext = foreign_memory(device);
  if (ext == nullptr) return nullptr;
  sdk::Handle h = nullptr;
  check(ext->wrap(ptr, nbytes, &h), "from_blob",
        fmt::format("{} using {} bytes of host memory at {}", device.str(), nbytes, fmt::ptr(ptr)));
  auto b = std::shared_ptr<Buffer>(new Buffer(device, nbytes));
  b->handle_ = h, b->foreign_ = true, b->owner_ = std::move(owner);
  return b;
}

Buffer::~Buffer() {
  if (handle_ == nullptr) return;
  if (foreign_)
    foreign_memory(device_)->release(handle_);
  else if (base_)
    device_.allocator().free_view(handle_);
  else
    device_.allocator().free(handle_, nbytes_, opts_);
}

sdk::Handle Buffer::handle() {
  if (handle_ == nullptr)
    handle_ = base_ ? device_.allocator().offset(base_->handle(), offset_, nbytes_)
                    : device_.allocator().alloc(nbytes_, opts_);
  return handle_;
}

std::byte* Buffer::host_address() {
  return static_cast<std::byte*>(device_.allocator().raw().as_host(handle()));
}

void Buffer::copyin(std::span<const std::byte> src) {
  if (src.size() > nbytes_)
    throw ValueError("copyin", fmt::format("{} bytes do not fit a {}-byte buffer", src.size(), nbytes_));
  device_.allocator().copyin(handle(), src);
}

void Buffer::copyout(std::span<std::byte> dst) {
  if (dst.size() > nbytes_)
    throw ValueError("copyout", fmt::format("a {}-byte buffer cannot fill {} bytes", nbytes_, dst.size()));
  device_.allocator().copyout(dst, handle());
}

}  // namespace tg::runtime
