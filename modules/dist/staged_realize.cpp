// Stages of one lazy computation: the nodes a later stage shares with an earlier one are realized by the
// earlier one and substituted into the later graphs.
#include "dist/staged_realize.hpp"

#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "base/error.hpp"
#include "tensor/realize.hpp"

namespace tg::dist {

namespace {

// Nodes that are no computation of their own: buffers, constants, variables, and writes.
bool is_leafish(const UOp& u) {
  return u.shape() == nullptr || u.op() == Ops::BUFFER || u.op() == Ops::CONST || u.op() == Ops::DEVICE ||
         u.op() == Ops::DEFINE_VAR || u.op() == Ops::BIND || u.op() == Ops::ASSIGN || u.op() == Ops::MULTI ||
         engine::realized_buffer(u.ref()) != nullptr;
}

// The nodes of `later` that `now` computes too, outermost first: a walk down from later's roots that stops
// at each such node. A view (movement op) is not stored: the walk goes on to what it views.
std::vector<UOpRef> shared_nodes(const std::vector<UOpRef>& now, const std::vector<UOpRef>& later) {
  std::unordered_set<const UOp*> computed;
  UOpRef sink = UOp::sink(now);  // alive while its order is read (the order ends with the sink)
  for (const UOp* u : sink->toposort()) computed.insert(u);
  std::vector<UOpRef> out;
  std::unordered_set<const UOp*> seen;
  std::vector<UOpRef> todo(later.rbegin(), later.rend());
  while (!todo.empty()) {
    UOpRef u = todo.back();
    todo.pop_back();
    if (!seen.insert(u.get()).second || is_leafish(*u)) continue;
    if (computed.count(u.get()) && !group::Movement.contains(u->op())) {
      out.push_back(u);
      continue;
    }
    for (const UOpRef& s : u->src()) todo.push_back(s);
  }
  return out;
}

}  // namespace

StagedRealize::StagedRealize(std::vector<std::vector<Tensor>> stages) : stages_(std::move(stages)) {
  shared_.resize(stages_.size());
  for (const auto& s : stages_)
    for (const Tensor& t : s)
      if (!t.defined()) throw ValueError("StagedRealize", "a tensor is undefined");
}

std::vector<Tensor> StagedRealize::realize(size_t i) {
  if (i != next_)
    throw ValueError("StagedRealize",
                     fmt::format("stage {} realized out of order: stage {} is next", i, next_));
  next_++;
  std::vector<Tensor>& now = stages_[i];
  std::vector<UOpRef> roots, later;
  std::vector<engine::BufferHold> holds;
  for (const Tensor& t : now) {
    roots.push_back(t.uop());
    holds.insert(holds.end(), t.holds().begin(), t.holds().end());
  }
  for (size_t j = i + 1; j < stages_.size(); j++)
    for (const Tensor& t : stages_[j]) later.push_back(t.uop());
  std::vector<UOpRef> nodes = later.empty() ? std::vector<UOpRef>{} : shared_nodes(roots, later);
  std::unordered_map<const UOp*, size_t> root_of;
  for (size_t k = 0; k < roots.size(); k++) root_of.emplace(roots[k].get(), k);
  std::vector<Tensor>& extra = shared_[i];
  for (const UOpRef& u : nodes)
    if (!root_of.count(u.get())) extra.emplace_back(u, now.at(0).device(), holds);
  std::vector<Tensor> all = now;
  all.insert(all.end(), extra.begin(), extra.end());
  Tensor::realize_all(all);
  // the later stages read the buffers: a stage's own tensors or the extra ones
  std::unordered_map<const UOp*, UOpRef> done;
  std::vector<engine::BufferHold> done_holds;
  for (size_t k = 0, e = 0; k < nodes.size(); k++) {
    auto r = root_of.find(nodes[k].get());
    const Tensor& t = r != root_of.end() ? all[r->second] : extra[e++];
    done.emplace(nodes[k].get(), t.uop());
    done_holds.insert(done_holds.end(), t.holds().begin(), t.holds().end());
  }
  for (size_t j = i + 1; j < stages_.size() && !done.empty(); j++)
    for (Tensor& t : stages_[j]) {
      std::vector<engine::BufferHold> h = t.holds();
      h.insert(h.end(), done_holds.begin(), done_holds.end());
      t = Tensor(t.uop()->substitute(done), t.device(), std::move(h));
    }
  std::vector<Tensor> out(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(now.size()));
  now.clear();
  return out;
}

}  // namespace tg::dist
