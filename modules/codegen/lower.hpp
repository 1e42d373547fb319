#pragma once
// Code generation: a kernel AST (docs/ir-stages.md stage 2) becomes a linear program (stage 3) that a
// renderer prints or INTERP runs. Every step is a named graph_rewrite; lower_kernel runs them in order.
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "codegen/opts.hpp"
#include "tg/sdk/program.hpp"
#include "tg/sdk/renderer.hpp"
#include "uop/pattern.hpp"
#include "uop/uop.hpp"

namespace tg::codegen {

// One buffer argument of a kernel: DEFINE_GLOBAL(arg=index), in ScheduleItem::bufs order.
struct BufferArg {
  int64_t index = 0;
  DType dtype;  // the pointer dtype of the DEFINE_GLOBAL
  bool written = false, read = false;
};

struct LinearProgram {
  std::string name;             // "E_4_4", "r_16_4": E elementwise, r with a reduce
  std::vector<UOpRef> uops;     // execution order, SINK last
  std::vector<BufferArg> bufs;  // sorted by index
  std::vector<UOpRef> vars;     // DEFINE_VARs in the order of Program::launch's vals (int32/int64 now, so
                                // match them to the AST's index-typed ones by VarArg name)
  std::array<UOpRef, 3> global_size, local_size;  // integer expressions over vars (CONST when static)
  std::vector<Opt> applied_opts;                  // the optimizations the kernel was lowered with

  // Launch sizes for one set of variable values (vals in `vars` order).
  sdk::LaunchDims launch_dims(std::span<const int64_t> vals) const;
  // The uops as the Renderer interface takes them (valid while this program lives).
  std::vector<const UOp*> view() const;
  // One line per uop: "  12 ADD        int      (10, 11)  arg", for DEBUG and tests.
  std::string str() const;
};

struct LowerOptions {
  std::string name;                       // kernel name; empty = generated ("E_4_4")
  const PatternMatcher* extra = nullptr;  // renderer-specific rules, run with the decompositions
  std::optional<std::vector<Opt>> opts;   // these opts instead of the heuristic's (NOOPT=1: none)
};

// Whether the renderer computes op natively. RendererCaps::native_ops == 0 means basic_ops().
bool native_op(const sdk::RendererCaps& caps, Ops op);
OpSet basic_ops();  // + * / % -, <, !=, bitwise, shifts, WHERE, FDIV, RECIPROCAL

// The whole pipeline: rewrite_kernel, then linearize, naming and launch sizes. Throws ValueError for an
// AST that breaks the stage-2 contract and NotSupportedError for an op the renderer cannot get.
LinearProgram lower_kernel(const UOpRef& ast, const sdk::RendererCaps& caps, const LowerOptions& opts = {});

// The graph steps alone: the SINK lower_kernel linearizes. opts are applied to the AST first.
UOpRef rewrite_kernel(const UOpRef& ast, const sdk::RendererCaps& caps, const LowerOptions& opts = {},
                      std::span<const Opt> applied = {});

// The opts lower_kernel applies: options.opts if given, none under NOOPT=1, else the heuristic's.
std::vector<Opt> choose_opts(const UOpRef& ast, const sdk::RendererCaps& caps,
                             const LowerOptions& options = {});

// Block-structured toposort of a lowered SINK: RANGE opens a loop that the END closing it ends, every
// node sits in the outermost loop its sources allow (loop-invariant work is hoisted), SINK last.
std::vector<UOpRef> linearize(const UOpRef& sink);

// "E_4_4" / "r_16_4" from the ranges of a stage-2 AST.
std::string kernel_name(const UOpRef& ast);

}  // namespace tg::codegen
