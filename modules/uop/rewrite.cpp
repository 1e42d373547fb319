// graph_rewrite: an iterative (no recursion, so 100k-deep graphs are fine), memoized walk that rewrites
// every node to a fixed point, and the trace of named passes that DEBUG and VIZ read.
#include <atomic>
#include <mutex>

#include <fmt/format.h>

#include "base/error.hpp"
#include "base/log.hpp"
#include "uop/intern.hpp"
#include "uop/pattern.hpp"
#include "uop/ptr_map.hpp"

namespace tg {

namespace {

std::atomic<bool> g_tracing{false};
std::atomic<uint64_t> g_trace_seq{0};
std::mutex g_trace_mu;
std::vector<RewriteTrace> g_traces;

// Holds no reference per node: nodes of the input graph live as long as root, and every node this pass
// creates is kept in keep_, which keeps alive all it points to. So raw pointers are safe until return.
class Rewriter {
 public:
  Rewriter(const PatternMatcher& pm, void* ctx, RewriteOptions opts, std::vector<RewriteStep>* steps)
      : pm_(pm), ctx_(ctx), opts_(opts), slot_(ctx ? -1 : pm.memo_slot()), steps_(steps) {}

  UOpRef run(const UOpRef& root) {
    if (fixed(root.get())) return root;
    stack_.push_back(Frame{root.get(), 0, root.get()});
    while (!stack_.empty()) {
      Frame f = stack_.back();
      stack_.pop_back();
      if (const State* st = state_.find(f.n); st && st->status == DONE) continue;
      if (f.stage == 0)
        enter(f.n);
      else if (f.stage == 1)
        rebuild(f.n, f.new_n);
      else
        link(f.n, f.new_n);
    }
    return state_.find(root.get())->result->ref();
  }

  size_t matches() const { return matches_; }

 private:
  enum Status : uint8_t { NEW, ENTERED, DONE };
  struct Frame {
    const UOp* n;
    uint8_t stage;  // 0: enter, 1: sources done, rebuild; 2: link n to its rewritten replacement
    const UOp* new_n;
  };
  struct State {
    const UOp* result = nullptr;  // final replacement once DONE
    Status status = NEW;
  };

  const UOp* apply(const UOp* u) {
    const Rule* rule = nullptr;
    UOpRef r = pm_.rewrite(u->ref(), ctx_, steps_ ? &rule : nullptr);
    if (!r) return nullptr;
    matches_++;
    if (steps_) record(rule, u, r);
    return keep(std::move(r));
  }
  const UOp* keep(UOpRef r) {
    keep_.push_back(std::move(r));
    return keep_.back().get();
  }

  void record(const Rule* rule, const UOp* from, const UOpRef& to) {
    const std::vector<Rule>& rules = pm_.rules();
    auto same = [&](size_t i) {
      return rules[i].where.line == rule->where.line && rules[i].where.file == rule->where.file;
    };
    size_t at = static_cast<size_t>(rule - rules.data()), first = at, end = at + 1;
    while (first > 0 && same(first - 1)) first--;
    while (end < rules.size() && same(end)) end++;
    steps_->push_back(RewriteStep{rule->where, from->ref(), to, static_cast<int>(at - first),
                                  static_cast<int>(end - first)});
  }

  // Known (from an earlier rewrite with this memoized matcher) to be its own fixed point, sources included.
  bool fixed(const UOp* u) const { return slot_ >= 0 && u->is_fixed_point(slot_); }

  void finish(const UOp* n, const UOp* result) {
    if (slot_ >= 0) result->mark_fixed_point(slot_);  // results are fixed points all the way down
    state_[n] = State{result, DONE};
    // A final result is its own fixed point: later visits of it need no work.
    State& r = state_[result];
    if (r.status != DONE) r = State{result, DONE};
  }

  bool done(const UOp* u) {
    const State* s = state_.find(u);
    return s && s->status == DONE;
  }

  void enter(const UOp* n) {
    State& s = state_[n];
    if (s.status != NEW) throw_loop(n);  // entered again while its replacement is still being computed
    if (fixed(n)) {
      s = State{n, DONE};
      return;
    }
    s.status = ENTERED;
    const UOp* new_n = n;
    if (opts_.bottom_up) {
      // Rewrite the node itself to a fixed point before looking at its sources.
      for (size_t steps = 0;; steps++) {
        const UOp* r = apply(new_n);
        if (!r) break;
        if (steps > 100000) throw_loop(n);
        new_n = r;
      }
    }
    stack_.push_back(Frame{n, 1, new_n});
    for (auto it = new_n->src().rbegin(); it != new_n->src().rend(); ++it) {
      const UOp* x = it->get();
      if (done(x)) continue;
      if (fixed(x))
        state_[x] = State{x, DONE};
      else
        stack_.push_back(Frame{x, 0, nullptr});
    }
  }

  void rebuild(const UOp* n, const UOp* new_n) {
    srcs_.clear();
    bool changed = false;
    for (const UOpRef& x : new_n->src()) {
      const State* ss = state_.find(x.get());
      if (!ss || ss->status != DONE) throw_loop(n);
      changed |= ss->result != x.get();
      srcs_.push_back(ss->result);
    }
    const UOp* next = nullptr;
    if (changed)
      next = keep(detail::make_view(new_n->op(), new_n->dtype(), srcs_, new_n->arg()));
    else if (!opts_.bottom_up)
      next = apply(new_n);
    if (!next) return finish(n, new_n);
    if (const State* sx = state_.find(next); sx && sx->status == DONE) return finish(n, sx->result);
    stack_.push_back(Frame{n, 2, next});
    stack_.push_back(Frame{next, 0, nullptr});
  }

  void link(const UOp* n, const UOp* new_n) {
    const State* s = state_.find(new_n);
    if (!s || s->status != DONE) throw_loop(n);
    finish(n, s->result);
  }

  [[noreturn]] void throw_loop(const UOp* n) {
    throw ValueError(opts_.name,
                     fmt::format("rewrite rules loop on {} (a node's rewrite depends on itself)", n->str()));
  }

  const PatternMatcher& pm_;
  void* ctx_;
  RewriteOptions opts_;
  int slot_;  // memo slot of a memoized matcher without context, else -1
  std::vector<Frame> stack_;
  std::vector<const UOp*> srcs_;
  std::vector<UOpRef> keep_;
  // most calls (simplify) see a handful of nodes: grow, do not zero 24 KiB each call
  detail::PtrMap<State> state_{8};
  size_t matches_ = 0;
  std::vector<RewriteStep>* steps_;  // null unless traced
};

}  // namespace

UOpRef graph_rewrite(const UOpRef& root, const PatternMatcher& pm, void* ctx, RewriteOptions opts) {
  if (!root) throw ValueError(opts.name, "graph_rewrite of a null UOp");
  bool tracing = rewrite_tracing();
  std::vector<RewriteStep> steps;
  uint64_t seq = tracing ? next_trace_seq() : 0;
  Timer t;
  Rewriter rw(pm, ctx, opts, tracing ? &steps : nullptr);
  UOpRef out = rw.run(root);
  if (tracing) {
    RewriteTrace tr{std::string(opts.name), root, out, rw.matches(), t.seconds(), std::move(steps), seq,
                    std::this_thread::get_id()};
    std::lock_guard lock(g_trace_mu);
    g_traces.push_back(std::move(tr));
  }
  return out;
}

uint64_t next_trace_seq() { return g_trace_seq.fetch_add(1, std::memory_order_relaxed) + 1; }

void set_rewrite_tracing(bool on) { g_tracing.store(on, std::memory_order_relaxed); }
bool rewrite_tracing() { return g_tracing.load(std::memory_order_relaxed) || env::VIZ.value() > 0; }

std::vector<RewriteTrace> take_rewrite_traces() {
  std::lock_guard lock(g_trace_mu);
  return std::exchange(g_traces, {});
}

}  // namespace tg
