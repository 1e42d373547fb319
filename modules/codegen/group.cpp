// Grouped reduces (GROUP/GROUPTOP): a REDUCE over GROUP_REDUCE ranges (local ids of the workgroup) becomes
// a partial reduce per work item, stored to shared memory (DEFINE_LOCAL), a BARRIER, and the reduce of the
// group's partials that every work item reads back. Only the first work item of the group stores the result.
#include <algorithm>
#include <unordered_map>

#include "codegen/passes.hpp"

namespace tg::codegen {

namespace {

AxisType type_of(const UOp* r) { return r->arg_as<AxisArg>().type; }
int64_t size_of(const UOp* r) { return std::get<int64_t>(*r->src(0)->const_value()); }

struct GroupCtx {
  std::vector<UOpRef> lanes;  // every LOCAL and GROUP_REDUCE range: the work item's place in the group
  int64_t next_local = 0, next_range = 0;
};

UOpRef group_reduce(Match& m) {
  auto& ctx = m.ctx<GroupCtx>();
  const UOpRef& red = m.root();
  std::vector<UOpRef> groups, rest{red->src(0)};
  for (size_t i = 1; i < red->src().size(); i++)
    (type_of(red->src(i).get()) == AxisType::GROUP_REDUCE ? groups : rest).push_back(red->src(i));
  if (groups.empty()) return nullptr;
  Ops op = red->arg_as<Ops>();
  DType t = red->dtype();
  UOpRef part = rest.size() == 1 ? red->src(0)->cast(t) : red->with_src(std::move(rest));

  // One slot per work item and per upcast value of the result: the lanes' ids, then the upcasts.
  std::vector<UOpRef> dims = ctx.lanes, upcasts;
  for (const UOp* u : red->toposort())
    if (u->op() == Ops::RANGE && type_of(u) == AxisType::UPCAST) upcasts.push_back(u->ref());
  std::sort(upcasts.begin(), upcasts.end(), [](const UOpRef& a, const UOpRef& b) {
    return a->arg_as<AxisArg>().id < b->arg_as<AxisArg>().id;
  });
  dims.insert(dims.end(), upcasts.begin(), upcasts.end());
  UOpRef slot = UOp::const_(dtypes::index, ConstValue{int64_t{0}});
  int64_t slots = 1;
  for (const UOpRef& d : dims) slot = slot * size_of(d.get()) + d, slots *= size_of(d.get());

  DType ptr = t.ptr(AddrSpace::LOCAL, slots);
  UOpRef buf = UOp::make(Ops::DEFINE_LOCAL, ptr, {}, int64_t{ctx.next_local++});
  UOpRef st = UOp::make(Ops::STORE, dtypes::void_, {UOp::make(Ops::INDEX, ptr, {buf, slot}), part});
  if (!upcasts.empty()) {
    upcasts.insert(upcasts.begin(), st);
    st = UOp::make(Ops::END, dtypes::void_, std::move(upcasts));
  }
  UOpRef bar = UOp::make(Ops::BARRIER, dtypes::void_, {st});
  // The partials of this work item's group: the group ids run over a fresh reduce loop.
  std::unordered_map<const UOp*, UOpRef> other;
  std::vector<UOpRef> loops;
  for (const UOpRef& g : groups) {
    loops.push_back(UOp::range(g->src(0), ctx.next_range++, AxisType::REDUCE));
    other[g.get()] = loops.back();
  }
  UOpRef at = UOp::make(Ops::AFTER, ptr, {buf, bar});
  UOpRef ld = UOp::make(Ops::LOAD, t, {UOp::make(Ops::INDEX, ptr, {at, slot->substitute(other)})});
  loops.insert(loops.begin(), ld);
  UOpRef total = UOp::make(Ops::REDUCE, t, std::move(loops), op);
  // A second barrier after the reads: a later trip of an enclosing loop may not overwrite a partial that
  // another work item has yet to read.
  UOpRef done = UOp::make(Ops::BARRIER, dtypes::void_, {total});
  return UOp::make(Ops::AFTER, t, {total, done});
}

// A store of a result made from grouped reduces gets the gate "group ids are 0": one work item writes.
UOpRef gate_store(const UOp* st) {
  const UOpRef& idx = st->src(0);
  if (idx->op() != Ops::INDEX || idx->src(0)->op() != Ops::DEFINE_GLOBAL) return nullptr;
  UOpRef gate;
  for (const UOp* u : st->src(1)->toposort())
    if (u->op() == Ops::RANGE && type_of(u) == AxisType::GROUP_REDUCE) {
      UOpRef first = u->ref()->lt(UOp::const_(dtypes::index, ConstValue{int64_t{1}}));
      gate = gate ? gate & first : first;
    }
  if (!gate) return nullptr;
  std::vector<UOpRef> src(idx->src().begin(), idx->src().end());
  src.size() > 2 ? void(src[2] = src[2] & gate) : src.push_back(gate);
  return st->with_src({idx->with_src(std::move(src)), st->src(1)});
}

}  // namespace

UOpRef add_group_reduces(const UOpRef& sink) {
  GroupCtx ctx;
  bool any = false;
  for (const UOp* u : sink->toposort())
    if (u->op() == Ops::RANGE) {
      AxisType a = type_of(u);
      if (a == AxisType::LOCAL || a == AxisType::GROUP_REDUCE) ctx.lanes.push_back(u->ref());
      any = any || a == AxisType::GROUP_REDUCE;
      ctx.next_range = std::max(ctx.next_range, u->arg_as<AxisArg>().id + 1);
    }
  if (!any) return sink;
  std::sort(ctx.lanes.begin(), ctx.lanes.end(), [](const UOpRef& a, const UOpRef& b) {
    return a->arg_as<AxisArg>().id < b->arg_as<AxisArg>().id;
  });
  std::unordered_map<const UOp*, UOpRef> gated;
  for (const UOp* u : sink->toposort())
    if (u->op() == Ops::STORE)
      if (UOpRef g = gate_store(u)) gated[u] = g;
  UOpRef s = sink->substitute(gated);
  static const PatternMatcher pm{{UPat(Ops::REDUCE, std::nullopt, std::nullopt, "r"), group_reduce}};
  return graph_rewrite(s, pm, ctx, {.name = "group reduces"});
}

}  // namespace tg::codegen
