#pragma once
// Optional extension: buffers over host memory the core's caller owns (`Tensor::from_blob`, numpy arrays in
// Python), so kernels read and write it in place. `Device::extension(kForeignMemoryExtension)` returns a
// `ForeignMemory*`. A device without it gets a copy of that memory at the first realize that uses it.
#include <cstddef>
#include <cstdint>

#include "tg/sdk/allocator.hpp"
#include "tg/sdk/status.hpp"

namespace tg::sdk {

inline constexpr uint32_t kForeignMemoryExtension = 0x464f524d;  // "FORM"

class ForeignMemory {
 public:
  ForeignMemory() = default;
  ForeignMemory(const ForeignMemory&) = delete;
  ForeignMemory& operator=(const ForeignMemory&) = delete;
  virtual ~ForeignMemory() = default;

  // A handle kernels, copies and views use like one from alloc(), over [ptr, ptr + nbytes). The core keeps
  // the memory alive until release(); ptr is aligned to the element size at least. `invalid_argument` when
  // this device cannot use that pointer (say, it needs more alignment): the core then reports it.
  virtual Status wrap(void* ptr, size_t nbytes, Handle* out) noexcept = 0;
  // Forgets a wrapped handle; never frees or touches the memory itself.
  virtual void release(Handle buf) noexcept = 0;
};

}  // namespace tg::sdk
