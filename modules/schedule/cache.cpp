// The schedule cache (tinygrad's schedule cache): scheduling is a pure function of the interned sink, except
// for the BUFFERs it makes. So the schedule of a graph seen before is replayed with new buffers in their
// place. A training step or a per-op loop that rebuilds the same graph schedules it once. The key is the sink
// with its BUFFERs replaced by stand-ins (same device, size and dtype, numbered in graph order), so a graph
// that differs only in the buffers it reads and writes (the next layer of a model) replays the schedule
// with its own buffers in place of the first one's.
#include <algorithm>
#include <atomic>
#include <list>
#include <mutex>

#include "base/env.hpp"
#include "base/log.hpp"
#include "schedule/passes.hpp"

namespace tg::sched {

namespace {

struct Entry {
  UOpRef sink;                 // the key, held so its address stays this graph's
  std::vector<UOpRef> inputs;  // the BUFFERs of the graph that was scheduled, in the key's order
  std::vector<ScheduleItem> items;
  BecomesMap becomes;
  VarVals var_vals;
  std::vector<UOpRef> fresh;       // BUFFERs the schedule made, oldest first: replaced on every hit
  std::vector<size_t> fresh_asts;  // items whose AST names a fresh buffer (copies of intermediates)
};

class ScheduleCache {
 public:
  static ScheduleCache& get() {
    static ScheduleCache* c = new ScheduleCache();  // never destroyed: entries hold UOps
    return *c;
  }

  size_t resize(size_t n) {
    std::lock_guard lock(mu_);
    size_t old = limit_;
    limit_ = n;
    trim();
    return old;
  }
  size_t limit() {
    std::lock_guard lock(mu_);
    return limit_;
  }

  // A copy of the entry for sink, most recently used first; false when there is none.
  bool find(const UOp* sink, Entry& out) {
    std::lock_guard lock(mu_);
    auto it = index_.find(sink);
    if (it == index_.end()) return false;
    lru_.splice(lru_.begin(), lru_, it->second);
    out = *it->second;
    return true;
  }

  void put(Entry e) {
    std::lock_guard lock(mu_);
    if (limit_ == 0 || index_.contains(e.sink.get())) return;
    lru_.push_front(std::move(e));
    index_[lru_.front().sink.get()] = lru_.begin();
    trim();
  }

  std::atomic<size_t> hits{0};

 private:
  ScheduleCache() : limit_(static_cast<size_t>(std::max(0, env::SCHEDULE_CACHE.value()))) {}
  void trim() {
    while (lru_.size() > limit_) {
      index_.erase(lru_.back().sink.get());
      lru_.pop_back();
    }
  }

  std::mutex mu_;
  std::list<Entry> lru_;
  std::unordered_map<const UOp*, std::list<Entry>::iterator> index_;
  size_t limit_ = 0;
};

int64_t unique_of(const UOp* buffer) { return buffer->src(0)->arg_as<int64_t>(); }

// Every BUFFER of a sink (all of them existed before it is scheduled), in graph order.
std::vector<UOpRef> buffers_of(const UOpRef& sink) {
  std::vector<UOpRef> out;
  for (const UOp* x : sink->toposort())
    if (x->op() == Ops::BUFFER) out.push_back(x->ref());
  return out;
}

// The sink with buffer i replaced by a stand-in numbered -(i + 1): the cache's key, never scheduled.
UOpRef key_of(const UOpRef& sink, const std::vector<UOpRef>& buffers) {
  if (buffers.empty()) return sink;
  std::unordered_map<const UOp*, UOpRef> standin;
  for (size_t i = 0; i < buffers.size(); i++) {
    const UOpRef& b = buffers[i];
    UOpRef unique = UOp::make(Ops::UNIQUE, dtypes::void_, {}, -static_cast<int64_t>(i) - 1);
    standin.emplace(b.get(), UOp::make(Ops::BUFFER, b->dtype(), {unique, b->src(1)}, b->arg()));
  }
  return sink->substitute(standin);
}

// Remembers which BUFFERs of a fresh schedule it made itself (ids from first_id on).
Entry make_entry(const UOpRef& key, std::vector<UOpRef> inputs, const std::vector<ScheduleItem>& items,
                 const BecomesMap& becomes, const VarVals& var_vals, int64_t first_id) {
  Entry e{key, std::move(inputs), items, becomes, var_vals, {}, {}};
  sched::NodeSet seen;
  auto note = [&](const UOp* u) {
    for (const UOp* x : u->toposort())
      if (x->op() == Ops::BUFFER && unique_of(x) >= first_id && seen.insert(x).second)
        e.fresh.push_back(x->ref());
  };
  for (const ScheduleItem& si : items)
    for (const UOpRef& b : si.bufs) note(b.get());
  for (const auto& [k, v] : becomes) note(v.get());
  for (size_t i = 0; i < items.size(); i++) {
    if (!items[i].is_copy()) continue;  // kernel ASTs name buffers only through DEFINE_GLOBAL indices
    for (const UOp* x : items[i].ast->toposort())
      if (seen.count(x)) {
        e.fresh_asts.push_back(i);
        break;
      }
  }
  std::sort(e.fresh.begin(), e.fresh.end(),
            [](const UOpRef& a, const UOpRef& b) { return unique_of(a.get()) < unique_of(b.get()); });
  return e;
}

// The entry's bound variables, and its items (already given this graph's buffers).
std::vector<ScheduleItem> finish(Entry& e, VarVals* var_vals) {
  if (var_vals)
    for (const auto& [k, v] : e.var_vals) (*var_vals)[k] = v;
  if (env::DEBUG >= 5)
    for (const ScheduleItem& si : e.items) debug_log(5, "{}", si.str());
  return std::move(e.items);
}

// The cached schedule with a new BUFFER for each one it made and this graph's buffers (inputs, in the key's
// order) for the scheduled graph's.
std::vector<ScheduleItem> replay(Entry& e, const std::vector<UOpRef>& inputs, BecomesMap& becomes,
                                 VarVals* var_vals) {
  std::unordered_map<const UOp*, UOpRef> fresh;
  for (const UOpRef& f : e.fresh)
    fresh.emplace(f.get(), new_buffer(f->src(1), f->arg_as<int64_t>(), f->dtype()));
  bool moved = false;  // another graph of the same shape: its buffers in place of the entry's
  for (size_t i = 0; i < inputs.size(); i++)
    if (inputs[i] != e.inputs[i]) fresh.emplace(e.inputs[i].get(), inputs[i]), moved = true;
  auto swap = [&](const UOpRef& u) {
    if (u->op() == Ops::BUFFER) {
      auto it = fresh.find(u.get());
      return it == fresh.end() ? u : it->second;
    }
    return u->substitute(fresh);
  };
  for (ScheduleItem& si : e.items)
    for (UOpRef& b : si.bufs) b = swap(b);
  if (!moved) {
    for (size_t i : e.fresh_asts) e.items[i].ast = e.items[i].ast->substitute(fresh);
    for (auto& [k, v] : e.becomes) becomes[k] = swap(v);
    return finish(e, var_vals);
  }
  for (ScheduleItem& si : e.items)  // a copy's AST names its source buffer
    if (si.is_copy()) si.ast = si.ast->substitute(fresh);
  // the keys in this graph: one substitution over all of them, which share most of their nodes
  std::vector<UOpRef> keys, values;
  for (auto& [k, v] : e.becomes) keys.push_back(k), values.push_back(swap(v));
  UOpRef now = UOp::make(Ops::SINK, dtypes::void_, keys)->substitute(fresh);
  for (size_t i = 0; i < keys.size(); i++) becomes[now->src(i)] = values[i];
  return finish(e, var_vals);
}

}  // namespace

size_t set_schedule_cache_size(size_t entries) { return ScheduleCache::get().resize(entries); }
size_t schedule_cache_hits() { return ScheduleCache::get().hits.load(std::memory_order_relaxed); }

std::vector<ScheduleItem> create_schedule(const UOpRef& sink, BecomesMap& becomes, VarVals* var_vals) {
  ScheduleCache& cache = ScheduleCache::get();
  if (rewrite_tracing() || cache.limit() == 0) return sched::schedule_uncached(sink, becomes, var_vals);
  std::vector<UOpRef> inputs = buffers_of(sink);
  UOpRef key = key_of(sink, inputs);
  Entry e;
  if (cache.find(key.get(), e)) {
    cache.hits.fetch_add(1, std::memory_order_relaxed);
    return replay(e, inputs, becomes, var_vals);
  }
  int64_t first_id = sched::peek_unique_id();
  BecomesMap b;
  VarVals vv;
  std::vector<ScheduleItem> items = sched::schedule_uncached(sink, b, &vv);
  cache.put(make_entry(key, std::move(inputs), items, b, vv, first_id));
  for (auto& [k, v] : b) becomes[k] = v;
  if (var_vals)
    for (const auto& [k, v] : vv) (*var_vals)[k] = v;
  return items;
}

}  // namespace tg::sched
