#pragma once
// Optional extension: a device that records a fixed list of its launches once and then runs the whole list
// with one call (CUDA graphs). tg::jit replays a captured function through it when the device offers it
// (`Device::extension(kLaunchGraphExtension)` returns a `LaunchGraphs*`); otherwise it launches one by one.
#include <cstdint>
#include <span>

#include "tg/sdk/program.hpp"
#include "tg/sdk/status.hpp"

namespace tg::sdk {

inline constexpr uint32_t kLaunchGraphExtension = 0x47524150;  // "GRAP"

// One launch of a list: a program loaded by this device, its arguments and sizes (as Program::launch).
struct GraphLaunch {
  Program* program = nullptr;
  std::span<const Handle> bufs;
  std::span<const int64_t> vals;
  LaunchDims dims;
};

// A recorded list. run() and update() are called from one thread at a time.
class LaunchGraph {
 public:
  LaunchGraph() = default;
  LaunchGraph(const LaunchGraph&) = delete;
  LaunchGraph& operator=(const LaunchGraph&) = delete;
  virtual ~LaunchGraph() = default;

  // Gives launch i new buffers, values and sizes (the same counts as recorded) for the next run.
  virtual Status update(size_t i, std::span<const Handle> bufs, std::span<const int64_t> vals,
                        const LaunchDims& dims) noexcept = 0;
  // Runs every launch in order; with wait, blocks and stores the whole list's time in *seconds.
  virtual Status run(bool wait, double* seconds) noexcept = 0;
};

class LaunchGraphs {
 public:
  LaunchGraphs() = default;
  LaunchGraphs(const LaunchGraphs&) = delete;
  LaunchGraphs& operator=(const LaunchGraphs&) = delete;
  virtual ~LaunchGraphs() = default;

  // Records launches (every program one of this device's); the core owns *out. `unsupported` when the list
  // cannot be recorded (the core then launches one by one).
  virtual Status build(std::span<const GraphLaunch> launches, LaunchGraph** out) noexcept = 0;
};

}  // namespace tg::sdk
