#pragma once
#include <array>
#include <cstdint>
#include <span>

#include "tg/sdk/allocator.hpp"
#include "tg/sdk/status.hpp"

namespace tg::sdk {

struct LaunchDims {
  std::array<uint32_t, 3> global{1, 1, 1};  // number of workgroups (CPU: number of parallel tasks)
  std::array<uint32_t, 3> local{1, 1, 1};   // threads per workgroup
};

// A loaded kernel. launch() may be called from one thread at a time, any number of times.
class Program {
 public:
  Program() = default;
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;
  virtual ~Program() = default;

  // bufs are handles from this device's allocator (or views), in kernel-argument order; vals are
  // the integer (symbolic) arguments. With wait, block until done and, if seconds is non-null,
  // store the kernel's run time in it.
  virtual Status launch(std::span<const Handle> bufs, std::span<const int64_t> vals, const LaunchDims& dims,
                        bool wait, double* seconds) noexcept = 0;
};

}  // namespace tg::sdk
