#pragma once
// Host memory behind the Allocator interface, for a compile-only device (plugin.hpp, ABI minor 2): tensors
// can be built for its target, their bytes live on the host, and nothing ever runs on them.
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "tg/sdk/allocator.hpp"

namespace tg::sdk {

class HostMemory final : public Allocator {
 public:
  Status alloc(size_t nbytes, const AllocOptions&, Handle* out) noexcept override {
    *out = std::aligned_alloc(kAlign, (std::max<size_t>(nbytes, 1) + kAlign - 1) / kAlign * kAlign);
    return *out != nullptr ? Status{} : Status{Code::out_of_memory, "host memory"};
  }
  void free(Handle buf, size_t, const AllocOptions&) noexcept override { std::free(buf); }
  Status copyin(Handle dst, std::span<const std::byte> src) noexcept override {
    std::memcpy(dst, src.data(), src.size());
    return {};
  }
  Status copyout(std::span<std::byte> dst, Handle src) noexcept override {
    std::memcpy(dst.data(), src, dst.size());
    return {};
  }
  size_t alignment() const noexcept override { return kAlign; }

 private:
  static constexpr size_t kAlign = 256;
};

}  // namespace tg::sdk
