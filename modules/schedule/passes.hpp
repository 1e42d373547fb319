#pragma once
// Internal to the scheduler: the passes create_schedule runs, in pipeline order.
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "schedule/schedule.hpp"
#include "uop/pattern.hpp"

namespace tg::sched {

// ---- graph helpers (tensor level) ----
const Shape& shape_of(const UOp* u);  // throws ShapeError for nodes without a shape
using tg::prod;  // uop.hpp
const UOp* strip_movement(const UOp* u);  // the first non-movement node below u
const UOp* strip_reshape(const UOp* u);   // and the SHRINK from 0 of a buffer_view
bool is_const_view(const UOp* u);         // CONST under movement ops that keep it uniform (no PAD)
bool is_buffer_rowmajor(const UOp* u);    // RESHAPEs of a BUFFER: the buffer's elements in order
UOpRef device_of(const UOp* u);           // the DEVICE the value of u lives on, or null
UOpRef reshape(const UOpRef& x, const Shape& shape);
// The BUFFER an ASSIGN writes: its target is a view of a BUFFER or of an earlier ASSIGN to one.
const UOp* assign_buffer(const UOp* a);

// ---- 1. cleanup and constant folding of the tensor graph ----
const PatternMatcher& pm_cleanup();         // DETACH, identity movement ops, no-op CONTIGUOUS/COPY
const PatternMatcher& pm_fold_constants();  // ALU/CAST/REDUCE_AXIS over constants -> a constant view

// ---- 2. realize decisions ----
using NodeSet = std::unordered_set<const UOp*>;
struct RealizeInfo {
  NodeSet realized;  // nodes that get a buffer (and a kernel or copy)
  // Unrealized nodes whose value repeats a reduce over buffers: computing them twice is expensive, so a
  // second distinct use realizes them (found while lowering).
  NodeSet heavy;
  NodeSet aliases;  // CONTIGUOUS nodes whose source is realized in their place: its buffer is theirs
};
// Roots, CONTIGUOUS, COPY (and a source it cannot copy directly), ASSIGN, and reduces that are expanded.
// `forced` are extra nodes found by later passes (hazards, repeated heavy uses).
RealizeInfo decide_realize(const UOpRef& sink, const NodeSet& forced);
// The same in two steps, for a scheduler that decides again with more `forced` nodes: what depends on the
// graph alone (marks, the expanded bases, the sink's toposort), then the decisions for one `forced` set.
struct RealizeMarks {
  NodeSet realized, expanded;
  std::vector<const UOp*> order;  // sink->toposort()
};
RealizeMarks mark_realize(const UOpRef& sink);
RealizeInfo decide_realize(const RealizeMarks& marks, const NodeSet& forced);

// ---- 3. rangeify: one realized node -> kernel AST ----
struct HeavyUse {
  int kernel;
  const UOp* index;
};
struct LowerCtx {
  const std::unordered_map<const UOp*, UOpRef>* views =
      nullptr;                                     // realized node -> the BUFFER view holding it
  const UOp* root = nullptr;                       // the node this kernel computes
  std::vector<UOpRef> bufs;                        // DEFINE_GLOBAL order
  std::unordered_map<const UOp*, UOpRef> globals;  // BUFFER -> its DEFINE_GLOBAL
  int64_t next_range = 0;
  int kernel = 0;
  const NodeSet* heavy = nullptr;
  std::unordered_map<const UOp*, HeavyUse>* heavy_uses = nullptr;  // first use of each heavy node
  NodeSet* repeated = nullptr;                                     // heavy nodes used twice
  std::vector<std::pair<const UOp*, UOpRef>>* notes = nullptr;     // if set: every heavy use, in order
  VarVals* var_vals = nullptr;
  UOpRef global(const UOpRef& buffer);
  // s as a kernel index expression: bound variables become their DEFINE_VAR, values noted in var_vals.
  UOpRef size(const sint& s);
};
// Lowers `value` (a tensor graph whose leaves are BUFFER views and constants) into a kernel writing it to
// out, row-major; for ASSIGN, `target` is the movement view of out to write through (else null).
UOpRef rangeify_kernel(const UOpRef& value, const UOpRef& out, const UOpRef& target, LowerCtx& ctx);

// ---- 4. the whole pipeline, without the schedule cache (cache.cpp) in front ----
std::vector<ScheduleItem> schedule_uncached(const UOpRef& sink, BecomesMap& becomes, VarVals* var_vals);

}  // namespace tg::sched
