// The linearizer: a toposort that keeps block structure. Every RANGE opens a loop closed by its END; a
// node lives in the innermost loop among those it depends on (so loop-invariant work is hoisted), and
// within one block the items (nodes and whole inner loops) are ordered by their dependencies.
#include <algorithm>
#include <limits>
#include <queue>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "base/error.hpp"
#include "codegen/lower.hpp"
#include "codegen/passes.hpp"

namespace tg::codegen {

namespace {

class Linearizer {
 public:
  explicit Linearizer(const UOpRef& sink) : topo_(sink->toposort()), n_(static_cast<int>(topo_.size())) {
    for (int i = 0; i < n_; i++) pos_[topo_[i]] = i;
    open_ = codegen::open_ranges(topo_);
    find_loops();
    place_nodes();
  }

  std::vector<UOpRef> run() {
    owner_.assign(n_, -1), stamp_.assign(n_, -1);
    emit(root());
    return std::move(out_);
  }

 private:
  int root() const { return n_; }  // block id of the kernel body outside every loop
  int at(const UOp* u) const { return pos_.at(u); }

  void find_loops() {
    end_of_.assign(n_, -1);
    for (int i = 0; i < n_; i++) {
      const UOp* u = topo_[i];
      if (u->op() != Ops::END) continue;
      if (u->src().size() != 2 || u->src(1)->op() != Ops::RANGE)
        throw ValueError("linearize", fmt::format("END must close exactly one RANGE, got {}", u->str()));
      int r = at(u->src(1).get());
      if (end_of_[r] != -1)
        throw ValueError("linearize", fmt::format("RANGE {} is closed by two ENDs", topo_[r]->str()));
      end_of_[r] = i;
    }
    depth_.assign(n_ + 1, 0), parent_.assign(n_ + 1, -1);
    for (int i = 0; i < n_; i++)
      if (topo_[i]->op() == Ops::RANGE) nest(i);
  }

  // A loop sits inside the loops its END is still open in; its depth is its parent's + 1. The END may
  // not list every outer loop (a body independent of them), so depths come from parents, recursively.
  void nest(int r) {
    if (depth_[r] > 0) return;
    if (end_of_[r] == -1)
      throw ValueError("linearize", fmt::format("RANGE {} is never closed by an END", topo_[r]->str()));
    depth_[r] = -1;  // in progress: meeting it again means the loops enclose each other
    for (const UOp* o : open_[end_of_[r]]) {
      int c = at(o);
      if (depth_[c] == -1)
        throw ValueError("linearize", fmt::format("loops around {} enclose each other", topo_[r]->str()));
      nest(c);
    }
    parent_[r] = innermost(end_of_[r]);
    depth_[r] = parent_[r] == root() ? 1 : depth_[parent_[r]] + 1;
  }

  // The innermost loop node i depends on (root if none); its loops must nest.
  int innermost(int i) const {
    const auto& rs = open_[i];
    if (rs.empty()) return root();
    int best = at(rs[0]);
    for (const UOp* r : rs)
      if (depth_[at(r)] > depth_[best]) best = at(r);
    for (const UOp* r : rs) {
      int a = best;
      while (a != root() && a != at(r)) a = parent_[a];
      if (a == root())
        throw ValueError("linearize", fmt::format("{} depends on loops that do not nest", topo_[i]->str()));
    }
    return best;
  }

  void place_nodes() {
    singles_.assign(n_ + 1, {}), loops_.assign(n_ + 1, {});
    for (int i = 0; i < n_; i++) {
      Ops op = topo_[i]->op();
      if (op == Ops::RANGE)
        loops_[parent_[i]].push_back(i);
      else if (op != Ops::END)
        singles_[innermost(i)].push_back(i);
    }
  }

  // Every node inside loop r: its RANGE, its END and all it contains.
  void members(int r, std::vector<int>& out) const {
    out.push_back(r), out.push_back(end_of_[r]);
    out.insert(out.end(), singles_[r].begin(), singles_[r].end());
    for (int c : loops_[r]) members(c, out);
  }

  // Ordering within a block: argument defines first, then constants, then first use.
  using Key = std::tuple<int, int64_t, std::string, int>;
  Key key_of(int i, bool loop, int first) const {
    const UOp* u = topo_[i];
    if (loop) return {2, 0, "", first};
    switch (u->op()) {
      case Ops::DEFINE_GLOBAL:
        return {0, 0, "", static_cast<int>(u->arg_as<int64_t>())};
      case Ops::DEFINE_VAR:
        return {0, 1, u->arg_as<VarArg>().name, i};
      case Ops::SPECIAL:
        return {0, 2, u->arg_as<std::string>(), i};
      case Ops::DEFINE_LOCAL:
        return {0, 3, "", i};
      case Ops::DEFINE_REG:
        return {0, 4, "", static_cast<int>(u->arg_as<int64_t>())};
      case Ops::CONST:
        return {1, 0, "", i};
      default:
        return {2, prio_[i], "", i};
    }
  }

  // Several accumulators updated by chains of multiply-adds (an unrolled reduce under a register tile:
  // acc = fma(x4, w4, fma(x3, w3, ... fma(x0, w0, acc)))) are emitted step by step across the chains, the
  // first multiply-add of each, then the second of each, ..., and every other node just before its first
  // user in that order. Chain by chain, each step waited on the one before it (4 cycles) and every chain's
  // operands were live at once (spills); interleaved, the 5x5 conv's kernel ran 1.12-1.14x faster with the
  // same bytes. prio_ of the block's nodes: 0 everywhere when it has fewer than two chains.
  void order_chains(const std::vector<int>& nodes) {
    std::unordered_map<int, int> next;  // multiply-add -> the one that accumulates onto it
    std::unordered_set<int> in_block(nodes.begin(), nodes.end());
    std::unordered_map<int, int> users;
    for (int i : nodes)
      for (const UOpRef& src : topo_[i]->src())
        if (in_block.count(at(src.get()))) users[at(src.get())]++;
    for (int i : nodes) {
      const UOp* u = topo_[i];
      if (u->op() != Ops::MULACC) continue;
      int c = at(u->src(2).get());
      if (in_block.count(c) && topo_[c]->op() == Ops::MULACC && users[c] == 1) next[c] = i;
    }
    std::unordered_set<int> has_prev;
    for (auto [c, i] : next) has_prev.insert(i);
    std::vector<int> starts;
    for (int i : nodes)
      if (topo_[i]->op() == Ops::MULACC && next.count(i) && !has_prev.count(i)) starts.push_back(i);
    if (starts.size() < 2) return;
    std::sort(starts.begin(), starts.end());
    const auto chains = static_cast<int64_t>(starts.size());
    constexpr int64_t kLast = std::numeric_limits<int64_t>::max();
    for (int i : nodes) prio_[i] = kLast;
    for (int64_t c = 0; c < chains; c++) {
      int64_t step = 0;
      for (int i = starts[static_cast<size_t>(c)];; i = next.at(i)) {
        prio_[i] = step++ * chains + c;
        if (!next.count(i)) break;
      }
    }
    // the rest: the earliest of their users in the block (topo_ order puts users after their sources)
    std::vector<int> rev(nodes);
    std::sort(rev.rbegin(), rev.rend());
    for (int i : rev)
      for (const UOpRef& src : topo_[i]->src()) {
        int p = at(src.get());
        bool chained = next.count(p) || has_prev.count(p);
        if (in_block.count(p) && !chained) prio_[p] = std::min(prio_[p], prio_[i]);
      }
  }

  void emit(int block) {
    struct Item {
      int node;
      bool loop;
      std::vector<int> nodes;
    };
    std::vector<Item> items;
    order_chains(singles_[block]);
    for (int i : singles_[block]) items.push_back({i, false, {i}});
    for (int r : loops_[block]) {
      Item it{r, true, {}};
      members(r, it.nodes);
      items.push_back(std::move(it));
    }
    const int stamp = block;
    for (int j = 0; j < static_cast<int>(items.size()); j++)
      for (int m : items[j].nodes) owner_[m] = j, stamp_[m] = stamp;

    std::vector<std::vector<int>> users(items.size());
    std::vector<int> pending(items.size(), 0);
    for (int j = 0; j < static_cast<int>(items.size()); j++)
      for (int m : items[j].nodes)
        for (const UOpRef& s : topo_[m]->src()) {
          int p = at(s.get());
          if (stamp_[p] != stamp || owner_[p] == j) continue;
          users[owner_[p]].push_back(j);
          pending[j]++;
        }

    using Entry = std::pair<Key, int>;
    std::priority_queue<Entry, std::vector<Entry>, std::greater<>> ready;
    auto push = [&](int j) {
      const Item& it = items[j];
      int first = it.loop ? *std::min_element(it.nodes.begin(), it.nodes.end()) : it.node;
      ready.push({key_of(it.node, it.loop, first), j});
    };
    for (int j = 0; j < static_cast<int>(items.size()); j++)
      if (pending[j] == 0) push(j);
    size_t emitted = 0;
    while (!ready.empty()) {
      int j = ready.top().second;
      ready.pop();
      emitted++;
      const Item& it = items[j];
      if (it.loop) {
        out_.push_back(topo_[it.node]->ref());
        emit(it.node);
        out_.push_back(topo_[end_of_[it.node]]->ref());
      } else {
        out_.push_back(topo_[it.node]->ref());
      }
      for (int k : users[j])
        if (--pending[k] == 0) push(k);
    }
    if (emitted != items.size())
      throw ValueError("linearize",
                       "the kernel graph has a cycle between loops (an END that a loop body depends on)");
  }

  std::vector<const UOp*> topo_;
  int n_;
  std::unordered_map<const UOp*, int> pos_;
  std::vector<std::vector<const UOp*>> open_;
  std::vector<int> end_of_, depth_, parent_, owner_, stamp_;
  std::vector<int64_t> prio_ = std::vector<int64_t>(static_cast<size_t>(n_), 0);
  std::vector<std::vector<int>> singles_, loops_;
  std::vector<UOpRef> out_;
};

}  // namespace

std::vector<UOpRef> linearize(const UOpRef& sink) { return Linearizer(sink).run(); }

}  // namespace tg::codegen
