// Step 4 of the scheduler: intermediate buffers whose lifetimes do not overlap share storage.
#include <algorithm>
#include <numeric>
#include <unordered_set>

#include "schedule/passes.hpp"
#include "viz/record.hpp"

namespace tg::sched {

SharedStorage share_by_lifetime(std::span<const Lifetime> lifetimes) {
  std::vector<size_t> order(lifetimes.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return lifetimes[a].size > lifetimes[b].size; });
  SharedStorage out{std::vector<size_t>(lifetimes.size()), {}};
  std::vector<std::vector<size_t>> users;  // per storage: the lifetimes placed in it
  std::vector<size_t> group;               // per storage
  for (size_t i : order) {
    const Lifetime& b = lifetimes[i];
    auto overlaps = [&](size_t u) { return lifetimes[u].first <= b.last && b.first <= lifetimes[u].last; };
    size_t best = out.sizes.size();
    for (size_t s = 0; s < out.sizes.size(); s++) {
      if (group[s] != b.group || (best < out.sizes.size() && out.sizes[s] >= out.sizes[best])) continue;
      if (std::none_of(users[s].begin(), users[s].end(), overlaps)) best = s;
    }
    if (best == out.sizes.size()) out.sizes.push_back(b.size), users.emplace_back(), group.push_back(b.group);
    users[best].push_back(i);
    out.storage_of[i] = best;
  }
  return out;
}

MemoryPlan plan_memory(std::span<const ScheduleItem> items, const BecomesMap& becomes) {
  std::unordered_set<const UOp*> held;
  for (const auto& [key, value] : becomes) held.insert(sched::strip_movement(value.get()));
  return plan_memory(items, [&](const UOp& buffer) { return !held.contains(&buffer); });
}

MemoryPlan plan_memory(std::span<const ScheduleItem> items,
                       const std::function<bool(const UOp& buffer)>& shareable) {
  std::unordered_set<const UOp*> written;
  for (const ScheduleItem& si : items) written.insert(si.bufs.at(0).get());
  // Lifetime of each plannable buffer, the items from its first to its last use, in first-use order (equal
  // sizes are placed in the order they are written).
  std::vector<UOpRef> bufs;
  std::vector<Lifetime> lifetimes;
  std::unordered_map<const UOp*, size_t> index;
  std::vector<std::pair<const UOp*, DType>> groups;  // (device, dtype)
  for (size_t i = 0; i < items.size(); i++)
    for (const UOpRef& b : items[i].bufs) {
      if (!written.contains(b.get()) || !shareable(*b)) continue;
      auto [it, fresh] = index.try_emplace(b.get(), bufs.size());
      if (fresh) {
        std::pair<const UOp*, DType> g{b->src(1).get(), b->dtype()};
        size_t gi = static_cast<size_t>(std::find(groups.begin(), groups.end(), g) - groups.begin());
        if (gi == groups.size()) groups.push_back(g);
        bufs.push_back(b), lifetimes.push_back({b->arg_as<int64_t>(), i, i, gi});
      }
      lifetimes[it->second].last = i;
    }
  SharedStorage shared = share_by_lifetime(lifetimes);
  MemoryPlan plan;
  std::vector<std::vector<size_t>> members(shared.sizes.size());
  for (size_t i = 0; i < bufs.size(); i++) {
    members[shared.storage_of[i]].push_back(i);
    plan.bytes_before += lifetimes[i].size * static_cast<int64_t>(bufs[i]->dtype().itemsize());
  }
  for (size_t s = 0; s < shared.sizes.size(); s++) {
    const UOpRef& first = bufs[members[s].front()];
    plan.bytes_after += shared.sizes[s] * static_cast<int64_t>(first->dtype().itemsize());
    if (members[s].size() < 2) continue;
    UOpRef storage = new_buffer(first->src(1), shared.sizes[s], first->dtype());
    for (size_t m : members[s]) plan.storage[bufs[m]] = storage;
  }
  if (viz::on()) viz::record_memory_plan(plan);
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

}  // namespace tg::sched
