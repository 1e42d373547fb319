#pragma once
// The scheduler: a SINK of tensor-graph UOps (docs/ir-stages.md stage 1) in, an ordered list of kernels
// (stage 2 ASTs plus their buffers) out. See modules/schedule/README.md for the passes.
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "uop/uop.hpp"

namespace tg::sched {

// One unit of work. A kernel: `ast` is SINK(END(STORE(INDEX(DEFINE_GLOBAL 0, idx), value), RANGE..)) and
// bufs[i] is the BUFFER behind DEFINE_GLOBAL(arg=i), output first. A copy: `ast` is COPY(BUFFER src,
// DEVICE dst) and bufs = {dst, src}.
struct ScheduleItem {
  UOpRef ast;
  std::vector<UOpRef> bufs;

  bool is_copy() const { return ast && ast->op() == Ops::COPY; }
  // tinygrad-style: "E_12_4" (elementwise) or "r_32_16" (has a reduce): LOOP range sizes, then REDUCE
  // range sizes, in range-id order ("E" without ranges). Copies are "copy_<numel>".
  std::string name() const;
  // The name, one line per buffer (index, dtype, numel, device), then the AST as an indented tree.
  std::string str() const;
};
std::ostream& operator<<(std::ostream& os, const ScheduleItem& si);

// Realized tensor UOp -> what now holds its value. Usually a BUFFER (the key's value, row-major); a
// constant view when the key folded to a constant; a movement view of a BUFFER for an ASSIGN into part of a
// buffer. Keys: the bases of the sink's roots (movement ops stripped), and every CONTIGUOUS and ASSIGN.
using BecomesMap = std::unordered_map<UOpRef, UOpRef>;
// DEFINE_VAR -> the value it was BIND-ed to in the scheduled graph.
using VarVals = std::unordered_map<UOpRef, int64_t>;

// Schedules every root of sink (a SINK, or a single tensor UOp). Items come dependencies first. Roots that
// are BUFFER views or constant-only need no kernel. Fills becomes (and var_vals when given).
std::vector<ScheduleItem> create_schedule(const UOpRef& sink, BecomesMap& becomes,
                                          VarVals* var_vals = nullptr);

// The schedule cache: create_schedule remembers the schedules of the last SCHEDULE_CACHE (default 16)
// graphs, keyed by the interned sink with its BUFFERs replaced by numbered stand-ins (so the same structure
// over buffers of the same devices, sizes and dtypes). Scheduling such a graph again copies the items with
// its own buffers in place of the first graph's and new BUFFERs in place of the ones the schedule made
// (outputs, intermediates), so every schedule still writes fresh buffers. Skipped while rewrites are traced
// (VIZ). Returns the old size; 0 turns it off and empties it.
size_t set_schedule_cache_size(size_t entries);
size_t schedule_cache_hits();  // schedules served from the cache in this process

// The BUFFER value of becomes as a tensor of key's shape (a RESHAPE of it); other values as they are.
UOpRef becomes_view(const UOpRef& key, const UOpRef& value);

// Fresh ids for UNIQUE, shared by every part of the project that makes BUFFERs, so no two buffers collide.
// The first prod(shape) elements of buffer as shape. A symbolic shape reads a prefix of a buffer sized for
// its largest value (SHRINK then RESHAPE); a buffer that holds only the bound count is reshaped as is.
UOpRef buffer_view(const UOpRef& buffer, const Shape& shape);
int64_t next_unique_id();
int64_t peek_unique_id();  // the id next_unique_id() hands out next: buffers made from here on are newer
UOpRef new_buffer(const UOpRef& device, int64_t numel, DType dtype);

// Storage shared by lifetime, for any planner of buffers used from one step to another (schedule items,
// a JIT's captured launches): buffers whose steps do not overlap and whose groups (a device, a dtype) match
// share one storage. Greedy by size: the largest first, each into the smallest storage of its group that
// no overlapping buffer uses, else into a new one of its size. The total comes close to the most bytes
// live at once (the Fashion-MNIST CNN's training step: 303 MB, where placing by first use took 335 MB).
struct Lifetime {
  int64_t size = 0;
  size_t first = 0, last = 0;  // the steps that use it, both included
  size_t group = 0;            // only buffers of one group share
};
struct SharedStorage {
  std::vector<size_t> storage_of;  // per lifetime
  std::vector<int64_t> sizes;      // per storage
};
SharedStorage share_by_lifetime(std::span<const Lifetime> lifetimes);

// Buffers created for intermediate values whose lifetimes within the schedule do not overlap share
// storage. Buffers that are becomes values, or that existed before the schedule, are never shared.
struct MemoryPlan {
  std::unordered_map<UOpRef, UOpRef> storage;  // planned BUFFER -> the (new, large enough) BUFFER it lives in
  int64_t bytes_before = 0, bytes_after = 0;   // planned buffers' bytes without and with sharing
};
MemoryPlan plan_memory(std::span<const ScheduleItem> items, const BecomesMap& becomes);
// The same for the written buffers `shareable` accepts (say, those the caller made and lets go afterwards).
MemoryPlan plan_memory(std::span<const ScheduleItem> items,
                       const std::function<bool(const UOp& buffer)>& shareable);
// Replaces planned buffers in every item's bufs with their storage buffer.
void apply_memory_plan(std::vector<ScheduleItem>& items, const MemoryPlan& plan);

}  // namespace tg::sched
