#pragma once
// The hand-coded optimization choice (hand_coded_optimizations in opts.hpp) as named steps, each reading the
// kernel and adding opts to a plan. Their order is the heuristic: a tensor core, else float4 stores
// (elementwise kernels of any size on a GPU with vector memory access), then, from kMinWork loop trips,
// grouping, else a register tile, row lanes and the reduce's unroll (reduce kernels) or a transpose tile
// (elementwise ones on a CPU), then locals, threads and the loop swap. The measurements behind each rule
// are in bench/notes.
#include <optional>
#include <vector>

#include "codegen/opts.hpp"

namespace tg::codegen::heuristic {

inline constexpr int64_t kMinWork = 4096;      // smaller kernels stay as they are
inline constexpr int64_t kThreadWork = 65536;  // a kernel spreads over threads from this many loop trips
inline constexpr int64_t kMaxUpcast = 64;      // outputs (accumulators) per loop trip
inline constexpr int64_t kMaxCpuUpcast = 256;  // on a CPU: 16 vectors of 16
inline constexpr int64_t kChains = 8;          // multiply-add chains a CPU core keeps busy (2 FMA ports x 4)
inline constexpr int64_t kStripBytes = 512
                                       << 10;   // a strip of the reused inputs up to this size stays cached
inline constexpr int64_t kGroupOutputs = 2048;  // reduces with at most this many outputs are grouped
inline constexpr int64_t kMaxLocal = 128;       // work items of a workgroup the heuristic makes

// One access of a global buffer.
struct Access {
  UOpRef idx;
  bool store = false;
  int64_t bytes = 0;   // of the whole buffer
  bool gated = false;  // a load with a valid condition (a padded view): 0 where it is false
};

// What the steps read: the kernel's axes and buffer accesses, and the device's caps.
class Kernel {
 public:
  Kernel(const UOpRef& ast, const sdk::RendererCaps& caps);

  const UOpRef& ast() const { return ast_; }
  const sdk::RendererCaps& caps() const { return caps_; }
  const std::vector<KernelAxis>& axes() const { return axes_; }
  const UOp* range(size_t axis) const { return ranges_[axis]; }
  const std::vector<Access>& accesses() const { return acc_; }
  int64_t work() const { return work_; }        // loop trips of the whole kernel
  int64_t outputs() const { return outputs_; }  // loop trips of its output axes
  bool has_reduce() const { return has_reduce_; }
  bool cpu() const { return !caps_.has_local; }                          // no workgroups: registers are many
  int64_t width() const { return width_; }                               // vector lanes, 4 to 16
  int64_t accumulator_vectors() const { return width_ >= 16 ? 16 : 8; }  // half the vector registers
  std::optional<size_t> last_reduce() const;                             // the innermost reduce axis
  bool nested_reduce(size_t axis) const;                                 // inside_other_reduce of its range

  // The stride of access j's index along axis i; -1 when it is not a constant (a variable, uneven div/mod).
  int64_t stride(size_t j, size_t i) const;
  bool contiguous(size_t i) const;        // some store has stride 1 along axis i
  bool loads_contiguous(size_t i) const;  // every load has stride 0 or 1 along axis i

 private:
  UOpRef ast_;
  sdk::RendererCaps caps_;
  std::vector<KernelAxis> axes_;
  std::vector<const UOp*> ranges_;
  std::vector<Access> acc_;
  int64_t work_ = 1, outputs_ = 1, width_ = 4;
  bool has_reduce_ = false;
  mutable std::vector<std::vector<int64_t>> strides_;  // [access][axis], computed on first use (-2: not yet)
};

// What the steps build: the opts so far and the axis sizes they leave.
struct Plan {
  explicit Plan(const Kernel& k);
  std::vector<Opt> opts;
  std::vector<int64_t> size;
  size_t tiled = 0;         // register-tile UPCASTs (two make a tile, the contiguous axis first)
  int64_t upcast = 1;       // outputs per loop trip of the register tile
  bool roomy = true;        // the tile's accumulators (if any) leave registers for the operands
  bool along_rows = false;  // vector lanes along the last reduce axis instead of a tile
  void add(OptOps op, size_t axis, int64_t k);  // append the opt, divide the axis
  int64_t divisor(size_t axis,
                  int64_t want) const;  // the largest of want, want/2 .. 2 dividing the axis, or 0
};

// The steps, in the order hand_coded_optimizations runs them.
std::optional<std::vector<Opt>> tensor_core(const UOpRef& ast, const sdk::RendererCaps& caps);
std::optional<std::vector<Opt>> group_top(const Kernel& k);
void vector_stores(const Kernel& k, Plan& p);
void register_tile(const Kernel& k, Plan& p);
void row_lanes(const Kernel& k, Plan& p);
void unroll_reduce(const Kernel& k, Plan& p);
void transpose_tile(const Kernel& k, Plan& p);
void locals(const Kernel& k, Plan& p);
void threads(const Kernel& k, Plan& p);
void swap_loops(const Kernel& k, Plan& p);

}  // namespace tg::codegen::heuristic
