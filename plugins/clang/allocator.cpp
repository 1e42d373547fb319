#include "plugins/clang/allocator.hpp"

#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

namespace tg::clangdev {

using tg::sdk::Code;
using tg::sdk::Handle;
using tg::sdk::Status;

Status HostAllocator::alloc(size_t nbytes, const tg::sdk::AllocOptions& opts, Handle* out) noexcept {
  (void)opts;
  return tg::sdk::guard([&]() -> Status {
    // Whole cache lines, at least one: zero-size buffers still get distinct addresses.
    size_t rounded = nbytes == 0 ? kAlignment : (nbytes + kAlignment - 1) / kAlignment * kAlignment;
    void* p = rounded >= nbytes ? std::aligned_alloc(kAlignment, rounded) : nullptr;
    if (p == nullptr)
      return {Code::out_of_memory, fmt::format("[CLANG alloc] cannot allocate {} bytes", nbytes)};
    *out = p;
    return {};
  });
}

void HostAllocator::free(Handle buf, size_t nbytes, const tg::sdk::AllocOptions& opts) noexcept {
  (void)nbytes, (void)opts;
  std::free(buf);
}

Status HostAllocator::copyin(Handle dst, std::span<const std::byte> src) noexcept {
  if (!src.empty()) std::memcpy(dst, src.data(), src.size());
  return {};
}

Status HostAllocator::copyout(std::span<std::byte> dst, Handle src) noexcept {
  if (!dst.empty()) std::memcpy(dst.data(), src, dst.size());
  return {};
}

Status HostAllocator::offset(Handle buf, size_t offset, size_t size, Handle* out) noexcept {
  (void)size;
  *out = static_cast<std::byte*>(buf) + offset;
  return {};
}

Status HostAllocator::transfer(Handle dst, Handle src, size_t nbytes) noexcept {
  if (nbytes != 0) std::memmove(dst, src, nbytes);
  return {};
}

}  // namespace tg::clangdev
