#pragma once
// The realization boundary: everything Tensor needs from the stages after it (schedule, codegen,
// runtime), and nothing more. Tensor only builds tensor-graph UOps (docs/ir-stages.md, stage 1); these
// functions own buffers and turn graphs into values.
//
// Buffer lifetime: a BUFFER UOp names storage (by its UNIQUE id) but does not own it. Whoever creates or
// realizes a buffer returns a BufferHold; the storage lives as long as some hold does. A Tensor keeps the
// holds of every buffer its graph reads, so lazy graphs never outlive their inputs.
#include <cstddef>
#include <functional>
#include <memory>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/dtype.hpp"
#include "tg/sdk/program.hpp"
#include "uop/uop.hpp"

namespace tg::runtime {
class Buffer;  // runtime/buffer.hpp
}  // namespace tg::runtime

namespace tg::engine {

using BufferHold = std::shared_ptr<const void>;

struct RealizedBuffer {
  UOpRef buffer;  // BUFFER(UNIQUE, DEVICE, arg=numel) with the element dtype
  BufferHold hold;
};

// One kernel (or copy) of a schedule, for inspection: its AST (docs/ir-stages.md, stage 2) and the
// BUFFER UOps behind DEFINE_GLOBAL 0..n-1, outputs first.
struct ScheduleItemView {
  UOpRef ast;
  std::vector<UOpRef> bufs;
};
std::ostream& operator<<(std::ostream& os, const ScheduleItemView& si);

// The device new tensors go to when none is named (DEV, else the first usable device).
std::string default_device_name();
// "clang" -> "CLANG", "clang:0" -> "CLANG"; throws DeviceError for a malformed spec.
std::string canonical_device(std::string_view spec);

// A new buffer of data.size() / dtype.itemsize() elements holding a copy of data (dtype's encoding).
RealizedBuffer buffer_from_host(std::string_view device, DType dtype, std::span<const std::byte> data);
// A new buffer with unspecified contents.
RealizedBuffer buffer_empty(std::string_view device, DType dtype, int64_t numel);
// A buffer of numel elements over host memory the caller owns (Tensor::from_blob). A device that uses host
// memory in place (sdk::ForeignMemory) reads and writes it there and keeps owner as long as the buffer; any
// other device copies it in at the first use (realize, a kernel, a read) and keeps owner until then. With
// read_only, the first write (assign) moves the buffer to a private copy: the memory is never written.
RealizedBuffer buffer_over_host(std::string_view device, DType dtype, int64_t numel, void* data,
                                std::shared_ptr<const void> owner, bool read_only);

// A realized buffer's bytes where the host can read them without a copy, and a hold that keeps them. Empty
// (null data) when its device does not map buffers to host memory. The bytes never change while the hold
// lives: a later write to the buffer (assign) moves it to new memory first and leaves these as they were.
struct HostView {
  std::span<const std::byte> bytes;
  std::shared_ptr<const void> hold;
};
HostView host_view(const UOpRef& buffer);

// Computes every root (a tensor-graph UOp with a shape) and returns, per root, a buffer holding its
// elements in row-major order (dtype = the root's dtype, numel = product of its shape). A root that is
// already a contiguous view of a whole buffer (BUFFER or BUFFER.reshape) returns that buffer. ASSIGNs
// in the graph write into their target's buffer. A root computed here and given twice (equal graphs are one
// node) is computed once; each repeat gets a copy in a buffer of its own. Throws a tg::Error for graphs it
// cannot run.
std::vector<RealizedBuffer> realize_uops(std::span<const UOpRef> roots);

// A buffer's elements as a tensor of shape: what realize_uops' results become. A symbolic shape views the
// prefix of a buffer sized for the variables' largest values.
UOpRef realized_view(const UOpRef& buffer, const Shape& shape);
// The BUFFER behind a realized view (realized_view's result, or reshapes of a buffer); null for anything
// else.
UOpRef realized_buffer(const UOpRef& view);

// Copies a realized buffer's bytes to the host; dst may be shorter than the buffer.
void copy_to_host(const UOpRef& buffer, std::span<std::byte> dst);

// The kernels realize_uops would run for these roots, without running them.
std::vector<ScheduleItemView> schedule_uops(std::span<const UOpRef> roots);

// ---- capture, for the JIT (engine/jit.hpp replays what is recorded here) ----

// One launch realize_uops ran while a capture was active: a kernel, or a copy (no program, buffers
// {dst, src}). Arguments are in launch order.
struct CapturedLaunch {
  std::string name;
  std::shared_ptr<sdk::Program> program;  // null for a copy
  std::vector<int64_t> buffer_ids;        // UNIQUE id of each argument's BUFFER
  std::vector<std::shared_ptr<runtime::Buffer>> buffers;
  std::vector<std::weak_ptr<const void>>
      holds;  // the BufferHold of each argument: expired = no tensor holds it
  std::vector<bool> written;
  std::vector<std::string> vars;  // the program's variables, in the order of vals
  std::vector<int64_t> vals;
  sdk::LaunchDims dims;
  // Launch sizes for other variable values; null when they do not depend on them.
  std::function<sdk::LaunchDims(std::span<const int64_t>)> dims_at;
};
struct CaptureLog {
  std::vector<CapturedLaunch> launches;
  std::vector<std::string>
      host_reads;  // device data read on the host during the capture (a replay would not)
};
// While alive, every kernel launch and copy realize_uops runs on this thread is appended to log.
class CaptureScope {
 public:
  explicit CaptureScope(CaptureLog& log);
  ~CaptureScope();
  CaptureScope(const CaptureScope&) = delete;
  CaptureScope& operator=(const CaptureScope&) = delete;

 private:
  CaptureLog* prev_;
};
// The device storage behind a live BUFFER UOp.
std::shared_ptr<runtime::Buffer> device_buffer(const UOpRef& buffer);
// For replays, which write captured buffers in place: whether any host view (host_view's hold) is alive; how
// many times a buffer was moved to new memory before a write (memory a host view shows, or read-only caller
// memory); and the storage of a live buffer id now, moved like that first when for_write (as a realize's
// kernels do), null when no tensor holds the buffer any more.
bool host_views_alive();
uint64_t buffer_moves();
std::shared_ptr<runtime::Buffer> live_buffer(int64_t id, bool for_write);

}  // namespace tg::engine
