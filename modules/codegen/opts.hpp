#pragma once
// Kernel optimizations: an Opt splits one RANGE of a kernel AST into an outer range and an inner one that
// is unrolled (UPCAST, UNROLL), spread over the device's threads (THREAD) or over the work items of a
// workgroup (LOCAL, GROUP, GROUPTOP); PADTO rounds an axis up and masks the rest. opts.cpp applies them,
// heuristic.cpp chooses them.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tg/sdk/renderer.hpp"
#include "uop/uop.hpp"

namespace tg::codegen {

enum class OptOps : uint8_t {
  UPCAST,    // an output axis split by arg; the inner part is unrolled: arg outputs (accumulators) per loop
             // trip
  UNROLL,    // a reduce axis split by arg; the inner part is unrolled in the accumulator update, in order
  THREAD,    // an output axis split into arg parallel tasks (core_id / global[0]); each takes a contiguous
             // chunk
  SWAP,      // output axes axis and arg trade places in the loop nest (their outer parts; no split)
  LOCAL,     // an output axis split by arg; the inner part is a workgroup's local id (lidx)
  GROUP,     // a reduce axis split by arg; arg work items of a workgroup each reduce every arg-th value (the
             // inner part is their local id), then combine their partials through shared memory
  GROUPTOP,  // GROUP with the outer part as the local id: each work item reduces a contiguous chunk
  PADTO,     // an axis rounded up to a multiple of arg; the added part is masked (loads give 0, stores are
             // skipped, reduces add their identity)
  TC,        // the kernel's multiply-add on the renderer's tensor core number arg (axis 0); the only opt
};
std::string_view opt_op_name(OptOps op);

// axis counts the kernel's splittable axes: the LOOP ranges by id, then the REDUCE ranges by id. A split
// keeps the outer part in place, so axis numbers stay the same while opts are applied one by one.
struct Opt {
  OptOps op = OptOps::UPCAST;
  int64_t axis = 0;
  int64_t arg = 0;
  std::string str() const;  // "UPCAST(axis=1, arg=4)"
  friend bool operator==(const Opt&, const Opt&) = default;
};
std::string opts_str(std::span<const Opt> opts);  // "[UPCAST(axis=1, arg=4), UNROLL(axis=2, arg=4)]"

// One splittable axis of a kernel AST.
struct KernelAxis {
  UOpRef range;
  int64_t size = 0;  // 0 when the bound is not a constant (such an axis is never split)
  bool reduce = false;
};
std::vector<KernelAxis> kernel_axes(const UOpRef& ast);

// Whether a REDUCE that does not reduce over range r still depends on it (a reduce nested in r's reduce):
// unrolling r would copy that inner reduce's loop, so UNROLL refuses such an axis.
bool inside_other_reduce(const UOpRef& ast, const UOp* r);

// The AST with opts applied in order: each split range r of size n by k becomes outer * k + inner (THREAD:
// thread * (n / k) + inner; GROUPTOP: group * (n / k) + inner), and ranges are renumbered so THREAD ranges
// are outermost and UPCAST/UNROLL innermost. Throws ValueError naming the opt when it does not apply (axis
// out of range, wrong kind of axis, amount that does not divide the axis, a THREAD the device cannot run,
// workgroups or shared memory the device does not have or that exceed its limits).
UOpRef apply_opts(const UOpRef& ast, std::span<const Opt> opts, const sdk::RendererCaps& caps);

// The TC opt (codegen/tc.cpp): the kernel rebuilt as warps of WMMAs over tiles of its one multiply-add.
// `after` are the opts that follow TC: UPCAST of the tile's row or column axis (kernel_axes numbering) by k
// gives each warp k tiles along it, which share the other operand's elements; LOCAL by k puts k warps
// side by side along it in one workgroup.
UOpRef apply_tc(const UOpRef& ast, const Opt& o, std::span<const Opt> after, const sdk::RendererCaps& caps);
// WMMA's arg, the tensor core as m, n, k, threads, in, acc, then a_bits, b_bits, c_bits (16 each), and back
// (ValueError when it is not one).
IntVec wmma_arg(const sdk::TensorCore& tc);
sdk::TensorCore wmma_core(const IntVec& arg);

// The hand-coded choice from the kernel's shape and the caps (empty for small kernels).
std::vector<Opt> hand_coded_optimizations(const UOpRef& ast, const sdk::RendererCaps& caps);

}  // namespace tg::codegen
