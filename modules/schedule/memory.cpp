// Step 4 of the scheduler: intermediate buffers whose lifetimes do not overlap share storage.
#include <algorithm>
#include <limits>
#include <unordered_set>

#include "schedule/passes.hpp"

namespace tg {

namespace {

struct Slot {
  UOpRef device;
  DType dtype;
  int64_t numel = 0;
  std::vector<UOpRef> members;
  bool busy = true;
};

}  // namespace

MemoryPlan plan_memory(std::span<const ScheduleItem> items, const BecomesMap& becomes) {
  std::unordered_set<const UOp*> held;
  for (const auto& [key, value] : becomes) held.insert(sched::strip_movement(value.get()));
  return plan_memory(items, [&](const UOp& buffer) { return !held.contains(&buffer); });
}

MemoryPlan plan_memory(std::span<const ScheduleItem> items,
                       const std::function<bool(const UOp& buffer)>& shareable) {
  std::unordered_set<const UOp*> written;
  for (const ScheduleItem& si : items) written.insert(si.bufs.at(0).get());
  // Lifetime of each plannable buffer: the items from its first to its last use.
  std::unordered_map<const UOp*, size_t> last;
  std::vector<std::vector<UOpRef>> starts(items.size());
  std::vector<std::vector<const UOp*>> ends(items.size());
  for (size_t i = 0; i < items.size(); i++)
    for (const UOpRef& b : items[i].bufs) {
      if (!written.contains(b.get()) || !shareable(*b)) continue;
      if (!last.count(b.get())) starts[i].push_back(b);
      last[b.get()] = i;
    }
  for (const auto& [b, l] : last) ends[l].push_back(b);
  MemoryPlan plan;
  std::vector<Slot> slots;
  std::unordered_map<const UOp*, size_t> slot_of;
  for (size_t i = 0; i < items.size(); i++) {
    for (const UOpRef& b : starts[i]) {
      int64_t n = b->arg_as<int64_t>();
      plan.bytes_before += n * static_cast<int64_t>(b->dtype().itemsize());
      // Best fit among free slots on the same device and dtype; grow the largest if none is big enough.
      size_t best = slots.size();
      int64_t best_cost = std::numeric_limits<int64_t>::max();
      for (size_t s = 0; s < slots.size(); s++) {
        const Slot& sl = slots[s];
        if (sl.busy || sl.device != b->src(1) || sl.dtype != b->dtype()) continue;
        int64_t cost = sl.numel >= n ? sl.numel - n : (int64_t{1} << 62) + (n - sl.numel);
        if (cost < best_cost) best = s, best_cost = cost;
      }
      if (best == slots.size()) slots.push_back(Slot{b->src(1), b->dtype(), 0, {}, true});
      Slot& sl = slots[best];
      sl.busy = true, sl.numel = std::max(sl.numel, n);
      sl.members.push_back(b);
      slot_of[b.get()] = best;
    }
    for (const UOp* b : ends[i]) slots[slot_of.at(b)].busy = false;
  }
  for (const Slot& sl : slots) {
    plan.bytes_after += sl.numel * static_cast<int64_t>(sl.dtype.itemsize());
    if (sl.members.size() < 2) continue;
    UOpRef storage = new_buffer(sl.device, sl.numel, sl.dtype);
    for (const UOpRef& m : sl.members) plan.storage[m] = storage;
  }
  return plan;
}

void apply_memory_plan(std::vector<ScheduleItem>& items, const MemoryPlan& plan) {
  std::unordered_map<const UOp*, UOpRef> subs;
  for (const auto& [b, s] : plan.storage) subs.emplace(b.get(), s);
  for (ScheduleItem& si : items) {
    for (UOpRef& b : si.bufs)
      if (auto it = subs.find(b.get()); it != subs.end()) b = it->second;
    if (si.is_copy()) si.ast = si.ast->substitute(subs);
  }
}

}  // namespace tg
