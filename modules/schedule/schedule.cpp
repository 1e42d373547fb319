// create_schedule: cleanup -> realize decisions -> one kernel per realized node -> ordering -> becomes map.
#include "schedule/schedule.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <optional>
#include <queue>
#include <span>
#include <thread>

#include <fmt/format.h>

#include "base/error.hpp"
#include "base/log.hpp"
#include "schedule/passes.hpp"
#include "uop/ptr_map.hpp"
#include "uop/spec.hpp"

namespace tg::sched {

namespace {
std::atomic<int64_t> g_next_unique{0};
}  // namespace

int64_t next_unique_id() { return g_next_unique.fetch_add(1, std::memory_order_relaxed); }
int64_t peek_unique_id() { return g_next_unique.load(std::memory_order_relaxed); }

UOpRef new_buffer(const UOpRef& device, int64_t numel, DType dtype) {
  UOpRef unique = UOp::make(Ops::UNIQUE, dtypes::void_, {}, next_unique_id());
  return UOp::make(Ops::BUFFER, dtype, {unique, device}, numel);
}

UOpRef becomes_view(const UOpRef& key, const UOpRef& value) {
  return value->op() == Ops::BUFFER ? sched::reshape(value, sched::shape_of(key.get())) : value;
}

namespace {

struct Kernel {
  const UOp* node;
  std::vector<const UOp*> leaves;    // realized nodes and BUFFERs it reads (ASSIGN: and writes)
  std::optional<ScheduleItem> item;  // none for empty outputs
};

struct Built {
  std::vector<Kernel> kernels;
  std::unordered_map<const UOp*, UOpRef> views;  // realized node -> the view of the buffer holding it
  NodeSet retry;                                 // nodes to realize too, then build again
};

// What a kernel's lowering depends on besides its root: the nodes it computes (walked from the root's
// sources down to realized nodes and BUFFERs, which are its leaves), with whether each is heavy or a leaf.
using Signature = std::vector<std::pair<const UOp*, uint8_t>>;

// Per kernel that must read a copy of a buffer state instead of the state (another ASSIGN overwrites it
// and the kernel must follow that ASSIGN): (state, the CONTIGUOUS of it that is the copy).
using Copies = std::vector<std::pair<const UOp*, UOpRef>>;
using Snapshots = std::unordered_map<const UOp*, Copies>;

std::vector<const UOp*> local_leaves(const UOp* x, const RealizeInfo& info, Signature& sig) {
  std::vector<const UOp*> leaves, stack(x->src().size());
  for (size_t i = 0; i < stack.size(); i++) stack[i] = x->src(i).get();
  detail::PtrMap<char> seen;
  while (!stack.empty()) {
    const UOp* u = stack.back();
    stack.pop_back();
    if (!seen.insert(u, 1).second) continue;
    bool realized = info.realized.count(u) != 0;
    if (realized || u->op() == Ops::BUFFER) {
      leaves.push_back(u);
      sig.emplace_back(u, realized ? 2 : 3);
      continue;
    }
    sig.emplace_back(u, info.heavy.count(u) ? 1 : 0);
    for (const UOpRef& s : u->src()) stack.push_back(s.get());
  }
  return leaves;
}

// Kept across the rounds of create_schedule (each round realizes a few more nodes and builds again): a
// realized node keeps its BUFFER, and a kernel whose signature did not change is not lowered again (its
// heavy uses and hazard are replayed, so the round finds the same nodes to retry).
struct Lowered {
  Signature sig;
  ScheduleItem item;
  std::vector<std::pair<const UOp*, UOpRef>> notes;  // heavy uses in the order lowering saw them
  bool hazard = false;
};
struct BuildMemo {
  std::unordered_map<const UOp*, UOpRef> buffers;
  std::unordered_map<const UOp*, Lowered> kernels;
};

// The nodes of `nodes` strictly below another one of them: one walk over all of them, not one per node.
NodeSet inside_another(const NodeSet& nodes) {
  std::vector<UOpRef> roots;
  for (const UOp* q : nodes) roots.push_back(q->ref());
  UOpRef all = UOp::sink(roots);
  std::vector<const UOp*> order = all->toposort();
  NodeSet inner;
  detail::PtrMap<char> below;  // consumers come before their sources when walking the order backwards
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const UOp* u = *it;
    if (u == all.get()) continue;
    bool under = below.find(u) != nullptr, listed = nodes.count(u) != 0;
    if (under && listed) inner.insert(u);
    if (under || listed)
      for (const UOpRef& s : u->src()) below.insert(s.get(), 1);
  }
  return inner;
}

// A copy reads whole buffers: the source's BUFFER (through RESHAPEs and earlier ASSIGNs to it).
UOpRef copy_source(const UOp* src, const Built& b) {
  for (;;) {
    src = strip_reshape(src);
    if (src->op() == Ops::ASSIGN)
      src = src->src(0).get();
    else if (src->op() == Ops::BUFFER)
      return src->ref();
    else
      return strip_reshape(b.views.at(src).get())->ref();
  }
}

// An ASSIGN that reads its own target at another element than the one it writes must read a copy.
bool has_hazard(const UOpRef& ast) {
  const UOp* store = ast->src(0).get();
  if (store->op() == Ops::END) store = store->src(0).get();
  const UOp* addr = store->src(0).get();
  for (const UOp* u : ast->toposort())
    if (u->op() == Ops::LOAD && u->src(0)->src(0) == addr->src(0) && u->src(0).get() != addr) return true;
  return false;
}

void note_heavy_use(std::unordered_map<const UOp*, HeavyUse>& uses, NodeSet& repeated, const UOp* x,
                    HeavyUse use) {
  auto [it, fresh] = uses.emplace(x, use);
  if (!fresh && (it->second.kernel != use.kernel || it->second.index != use.index)) repeated.insert(x);
}

// One kernel to lower: its node, what it computes into where, and the result (or the error).
struct LowerJob {
  const UOp* x;
  int kernel;
  UOpRef value, out, target;
  Signature sig;
  std::optional<Lowered> done;
  VarVals var_vals;
  std::exception_ptr error;
};

void lower_job(LowerJob& job, const Built& b, const RealizeInfo& info) {
  try {
    Lowered l{std::move(job.sig), {}, {}, false};
    std::unordered_map<const UOp*, HeavyUse> uses;  // this kernel's own: build() replays l.notes in order
    NodeSet repeated;
    LowerCtx ctx;
    ctx.views = &b.views, ctx.root = job.x, ctx.kernel = job.kernel, ctx.notes = &l.notes;
    ctx.heavy = &info.heavy, ctx.heavy_uses = &uses, ctx.repeated = &repeated, ctx.var_vals = &job.var_vals;
    UOpRef ast = rangeify_kernel(job.value, job.out, job.target, ctx);
    l.hazard = job.target && has_hazard(ast);
    l.item = ScheduleItem{ast, std::move(ctx.bufs)};
    job.done = std::move(l);
  } catch (...) {
    job.error = std::current_exception();
  }
}

// The kernel of root computing value, with its reads of each state replaced by reads of the state's copy
// (those through realized nodes stay: a realized node's buffer may be the state's buffer, written later).
UOpRef read_copies(const UOpRef& value, const UOp* root, const Copies& copies, const RealizeInfo& info) {
  std::unordered_map<const UOp*, UOpRef> done;
  for (const auto& [state, copy] : copies) done[state] = copy;
  std::vector<std::pair<const UOp*, bool>> stack{{value.get(), false}};  // (node, its sources are done)
  while (!stack.empty()) {
    auto [u, srcs_done] = stack.back();
    stack.pop_back();
    if (done.count(u)) continue;
    if (u != root && (info.realized.count(u) || u->op() == Ops::BUFFER)) {
      done[u] = u->ref();
    } else if (!srcs_done) {
      stack.emplace_back(u, true);
      for (const UOpRef& s : u->src())
        if (!done.count(s.get())) stack.emplace_back(s.get(), false);
    } else {
      std::vector<UOpRef> srcs;
      bool same = true;
      for (const UOpRef& s : u->src()) srcs.push_back(done.at(s.get())), same = same && srcs.back() == s;
      done[u] = same ? u->ref() : u->with_src(std::move(srcs));
    }
  }
  return done.at(value.get());
}

// Buffers and views first, in dependency order; then the kernels not in the memo are lowered, on two
// threads when there are many (each reads only the views, so any order gives the same kernels); then, in
// order again, the memo, the heavy uses and the hazards.
Built build(std::span<const UOp* const> order, const RealizeInfo& info, const Snapshots& snapshots,
            VarVals* var_vals, BuildMemo& memo) {
  Built b;
  std::vector<LowerJob> jobs;
  std::vector<const UOp*> lowered;  // per kernel: the node whose lowering it takes (null: none)
  std::vector<const UOp*> values;   // per kernel: the value it computes (a hazard realizes it first)
  auto add = [&](const UOp* x, const Copies* redirect) {
    Signature sig;
    Kernel k{x, local_leaves(x, info, sig), std::nullopt};
    if (redirect)
      for (const auto& [state, snap] : *redirect) {
        std::replace(k.leaves.begin(), k.leaves.end(), state, snap.get());
        sig.emplace_back(snap.get(), 4);
      }
    if (info.aliases.count(x)) {
      b.views[x] = b.views.at(x->src(0).get());  // its source's buffer (decide_realize): no kernel of its own
      b.kernels.push_back(std::move(k)), lowered.push_back(nullptr), values.push_back(nullptr);
      return;
    }
    const Shape& shape = shape_of(x);
    int64_t numel = prod(shape).max();  // symbolic sizes get a buffer for their largest value
    auto buffer = [&](const UOpRef& device) {
      auto [it, fresh] = memo.buffers.try_emplace(x);
      if (fresh) it->second = new_buffer(device, numel, x->dtype());
      return it->second;
    };
    if (x->op() == Ops::COPY) {
      UOpRef src = copy_source(x->src(0).get(), b), out = buffer(x->src(1));
      b.views[x] = buffer_view(out, shape);
      if (numel > 0) k.item = ScheduleItem{UOp::make(Ops::COPY, x->dtype(), {src, x->src(1)}), {out, src}};
      b.kernels.push_back(std::move(k)), lowered.push_back(nullptr), values.push_back(nullptr);
      return;
    }
    UOpRef value = x->ref(), target, out;
    if (x->op() == Ops::ASSIGN) {
      target = x->src(0), value = x->src(1), out = assign_buffer(x)->ref();
      b.views[x] = target;
    } else {
      if (x->op() == Ops::CONTIGUOUS) value = x->src(0);
      if (auto known = memo.buffers.find(x); known != memo.buffers.end()) {
        out = known->second;  // an earlier round's: its device was found then (a walk down the graph)
      } else {
        UOpRef device = device_of(x);
        if (!device)
          throw DeviceError("schedule", fmt::format("cannot tell which device {} is on", x->str()));
        out = buffer(device);
      }
      b.views[x] = buffer_view(out, shape);
    }
    int kernel = static_cast<int>(b.kernels.size());
    b.kernels.push_back(std::move(k)), lowered.push_back(numel > 0 ? x : nullptr),
        values.push_back(value.get());
    if (numel == 0) return;
    auto it = memo.kernels.find(x);
    if (it == memo.kernels.end() || it->second.sig != sig) {
      if (redirect) value = read_copies(value, x, *redirect, info);
      jobs.push_back({x, kernel, value, out, target, std::move(sig), std::nullopt, {}, nullptr});
    }
  };
  NodeSet copies;
  for (const UOp* x : order) {
    if (!info.realized.count(x)) continue;
    auto it = snapshots.find(x);
    const Copies* redirect = it == snapshots.end() ? nullptr : &it->second;
    if (redirect)  // the copies first (one per state), unless the graph realizes the same CONTIGUOUS itself
      for (const auto& [state, snap] : *redirect)
        if (!info.realized.count(snap.get()) && copies.insert(snap.get()).second) add(snap.get(), nullptr);
    add(x, redirect);
  }

  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t j; (j = next.fetch_add(1)) < jobs.size();) lower_job(jobs[j], b, info);
  };
  if (jobs.size() >= 8 && !rewrite_tracing()) {  // a trace keeps the passes in order
    std::thread helper(work);
    work();
    helper.join();
  } else {
    work();
  }

  std::unordered_map<const UOp*, HeavyUse> heavy_uses;
  size_t j = 0;
  for (size_t kernel = 0; kernel < b.kernels.size(); kernel++) {
    const UOp* x = lowered[kernel];
    if (!x) continue;
    if (j < jobs.size() && jobs[j].x == x) {
      LowerJob& job = jobs[j++];
      if (job.error) std::rethrow_exception(job.error);
      if (var_vals)
        for (const auto& [v, val] : job.var_vals) (*var_vals)[v] = val;
      memo.kernels.insert_or_assign(x, std::move(*job.done));
    }
    const Lowered& l = memo.kernels.at(x);
    for (const auto& [h, idx] : l.notes)
      note_heavy_use(heavy_uses, b.retry, h, {static_cast<int>(kernel), idx.get()});
    if (l.hazard) b.retry.insert(values[kernel]);
    b.kernels[kernel].item = l.item;
  }
  return b;
}

// Dependencies first: a kernel runs after the kernels whose outputs it reads (read after write), and before
// an ASSIGN that overwrites a buffer state it reads (write after read). Ties keep build order. On a cycle
// there is no order: `cyclic` lists the write-after-read edges on one, as (reading kernel, state read).
struct Order {
  std::vector<size_t> kernels;
  std::vector<std::pair<size_t, const UOp*>> cyclic;
};

Order order(const std::vector<Kernel>& ks) {
  std::unordered_map<const UOp*, size_t> producer;
  for (size_t i = 0; i < ks.size(); i++) producer[ks[i].node] = i;
  std::vector<std::vector<size_t>> next(ks.size());
  std::vector<int> indeg(ks.size(), 0);
  struct War {
    size_t reader, writer;
    const UOp* state;
  };
  std::vector<War> wars;
  auto edge = [&](size_t a, size_t b) { next[a].push_back(b), indeg[b]++; };
  for (size_t i = 0; i < ks.size(); i++) {
    for (const UOp* l : ks[i].leaves)
      if (auto it = producer.find(l); it != producer.end()) edge(it->second, i);
    if (ks[i].node->op() != Ops::ASSIGN) continue;
    const UOp* prev_state = strip_movement(ks[i].node->src(0).get());
    for (size_t j = 0; j < ks.size(); j++)
      if (j != i && std::find(ks[j].leaves.begin(), ks[j].leaves.end(), prev_state) != ks[j].leaves.end())
        edge(j, i), wars.push_back({j, i, prev_state});
  }
  std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
  for (size_t i = 0; i < ks.size(); i++)
    if (indeg[i] == 0) ready.push(i);
  Order out;
  std::vector<bool> done(ks.size(), false);
  while (!ready.empty()) {
    size_t i = ready.top();
    ready.pop();
    out.kernels.push_back(i), done[i] = true;
    for (size_t j : next[i])
      if (--indeg[j] == 0) ready.push(j);
  }
  if (out.kernels.size() == ks.size()) return out;
  // The edge reader -> writer is on a cycle when the writer reaches the reader (both are left over).
  auto reaches = [&](size_t from, size_t to) {
    std::vector<bool> seen(ks.size(), false);
    std::vector<size_t> stack{from};
    while (!stack.empty()) {
      size_t k = stack.back();
      stack.pop_back();
      if (k == to) return true;
      if (done[k] || seen[k]) continue;
      seen[k] = true;
      stack.insert(stack.end(), next[k].begin(), next[k].end());
    }
    return false;
  };
  for (const War& w : wars)
    if (!done[w.reader] && !done[w.writer] && reaches(w.writer, w.reader))
      out.cyclic.emplace_back(w.reader, w.state);
  return out;
}

// Whether u, a node of a kernel's computation, reads `state` (walking down to realized nodes and BUFFERs).
bool reads_state(const UOp* u, const UOp* state, const RealizeInfo& info,
                 std::unordered_map<const UOp*, bool>& memo) {
  std::vector<std::pair<const UOp*, bool>> stack{{u, false}};  // (node, its sources are done)
  while (!stack.empty()) {
    auto [x, srcs_done] = stack.back();
    stack.pop_back();
    if (memo.count(x)) continue;
    if (x == state || info.realized.count(x) || x->op() == Ops::BUFFER) {
      memo[x] = x == state;
    } else if (!srcs_done) {
      stack.emplace_back(x, true);
      for (const UOpRef& s : x->src())
        if (!memo.count(s.get())) stack.emplace_back(s.get(), false);
    } else {
      bool r = false;
      for (const UOpRef& s : x->src()) r = r || memo.at(s.get());
      memo[x] = r;
    }
  }
  return memo.at(u);
}

// Two kernels that each read the state the other's ASSIGN overwrites (an optimizer step whose gradients,
// fused into the updates, read the old weight and bias) can run in no order. The parts of kernel k that
// read `state` get buffers of their own, so they run first as kernels of their own: the outermost nodes
// below the value that read it (into `out`). Where k reads the state itself, through views only, it reads
// a copy of the state instead (into `copies`).
void cut_reads(const Kernel& k, const UOp* state, const RealizeInfo& info, NodeSet& out, Snapshots& copies) {
  const UOp* x = k.node;
  if (x->op() == Ops::COPY) return;  // reads whole buffers: nothing to cut
  const UOp* value = x->op() == Ops::ASSIGN ? x->src(1).get() : x;
  std::unordered_map<const UOp*, bool> memo;
  bool direct = false;
  std::vector<const UOp*> stack;
  NodeSet seen;
  auto below = [&](const UOp* u) {
    for (const UOpRef& s : u->src()) stack.push_back(s.get());
  };
  if (value == x)
    below(x);
  else
    stack.push_back(value);
  while (!stack.empty()) {
    const UOp* u = stack.back();
    stack.pop_back();
    if (!seen.insert(u).second || !reads_state(u, state, info, memo)) continue;
    if (u == state)
      direct = true;
    else if (u == value || group::Movement.contains(u->op()))
      below(u);
    else
      out.insert(u);
  }
  if (!direct) return;
  auto& mine = copies[x];
  if (std::find_if(mine.begin(), mine.end(), [&](const auto& c) { return c.first == state; }) == mine.end())
    mine.emplace_back(state, UOp::make(Ops::CONTIGUOUS, state->dtype(), {state->ref()}));
}

}  // namespace

std::vector<ScheduleItem> schedule_uncached(const UOpRef& sink, BecomesMap& becomes,
                                                   VarVals* var_vals) {
  bool check = spec_enabled();
  if (check) verify_tensor_graph(sink);
  std::vector<UOpRef> roots;
  if (sink->op() == Ops::SINK)
    roots.assign(sink->src().begin(), sink->src().end());
  else
    roots.push_back(sink);
  // Keys of the becomes map: root bases, then every CONTIGUOUS and ASSIGN; rewritten side by side.
  std::vector<UOpRef> keys;
  NodeSet seen;
  auto add_key = [&](const UOp* u) {
    if (seen.insert(u).second) keys.push_back(u->ref());
  };
  for (const UOpRef& r : roots) add_key(strip_movement(r.get()));
  UOpRef roots_sink = UOp::sink(roots);  // alive while its order is read (the order ends with the sink)
  for (const UOp* u : roots_sink->toposort())
    if (u->op() == Ops::CONTIGUOUS || u->op() == Ops::ASSIGN) add_key(u);
  static const PatternMatcher pm_clean = pm_cleanup() + pm_fold_constants();  // indexed once, not per call
  UOpRef clean =
      graph_rewrite(UOp::sink(keys), pm_clean, nullptr, {.name = "schedule: cleanup and fold constants"});

  NodeSet forced;
  RealizeInfo info;
  Built built;
  BuildMemo memo;
  Snapshots copies;  // kept across rounds: each copy's node is the key of its buffer in the memo
  std::vector<size_t> ordered;
  RealizeMarks marks = mark_realize(clean);  // the graph stays: only `forced` grows from round to round
  for (;;) {
    info = decide_realize(marks, forced);
    built = build(marks.order, info, copies, var_vals, memo);
    if (built.retry.empty()) {
      Order o = order(built.kernels);
      if (o.cyclic.empty()) {
        ordered = std::move(o.kernels);
        break;
      }
      size_t n_copies = 0;
      for (const auto& [k, c] : copies) n_copies += c.size();
      for (const auto& [k, state] : o.cyclic) cut_reads(built.kernels[k], state, info, built.retry, copies);
      size_t now = 0;
      for (const auto& [k, c] : copies) now += c.size();
      if (built.retry.empty() && now == n_copies)
        throw NotSupportedError("schedule",
                                "cycle between assigns: a kernel must both precede and follow a write to the "
                                "same buffer, and no part of it can run apart");
      if (built.retry.empty()) continue;
    }
    // A node inside another one to realize is read twice only because that one is: realize the outer first.
    size_t before = forced.size();
    NodeSet inner = inside_another(built.retry);
    for (const UOp* r : built.retry)
      if (!inner.count(r)) forced.insert(r);
    if (forced.size() == before)
      throw NotSupportedError("schedule", "an ASSIGN reads its target in a way no copy fixes");
  }

  std::vector<ScheduleItem> items;
  for (size_t i : ordered) {
    if (!built.kernels[i].item) continue;
    items.push_back(std::move(*built.kernels[i].item));
    if (check && !items.back().is_copy()) verify_kernel_graph(items.back().ast);
    if (env::DEBUG >= 5) debug_log(5, "{}", items.back().str());  // str() prints the whole AST: only if shown
  }

  for (size_t i = 0; i < keys.size(); i++) {
    UOpRef v = clean->src(i);
    const UOp* base = strip_movement(v.get());
    if (info.realized.count(base)) {
      const UOpRef& holder = built.views.at(base);
      v = v.get() == base ? holder : v->substitute({{base, holder}});
    }
    const UOp* buf = strip_reshape(v.get());
    if (buf->op() == Ops::BUFFER && prod(shape_of(v.get())) == buf->arg_as<int64_t>()) v = buf->ref();
    if (v != keys[i]) becomes[keys[i]] = v;
  }
  return items;
}

}  // namespace tg::sched
