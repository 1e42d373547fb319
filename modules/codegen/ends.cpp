// Loop structure: one END per RANGE, REDUCE as an accumulator loop, sibling ENDs of a RANGE merged.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "base/error.hpp"
#include "codegen/passes.hpp"
#include "uop/scalar.hpp"

namespace tg::codegen {

namespace {

int64_t range_id(const UOp* r) { return r->arg_as<AxisArg>().id; }

void sort_by_id(std::vector<UOpRef>& rs) {
  std::sort(rs.begin(), rs.end(),
            [](const UOpRef& a, const UOpRef& b) { return range_id(a.get()) < range_id(b.get()); });
}

UOpRef end_of(UOpRef x, const UOpRef& r) { return UOp::make(Ops::END, dtypes::void_, {std::move(x), r}); }

// END(x, r0, r1, ...) nests as END(END(x, r1), r0): lower ids are outer loops. Non-RANGE sources (a loop
// of one trip folded to 0, a loop turned into a SPECIAL) are dropped.
UOpRef split_end(Match& m) {
  const UOpRef& e = m.root();
  std::vector<UOpRef> rs;
  for (size_t i = 1; i < e->src().size(); i++)
    if (e->src(i)->op() == Ops::RANGE) rs.push_back(e->src(i));
  if (rs.size() == 1 && e->src().size() == 2) return nullptr;
  if (rs.empty()) return e->src(0);
  sort_by_id(rs);
  UOpRef x = e->src(0);
  for (auto it = rs.rbegin(); it != rs.rend(); ++it) x = end_of(x, *it);
  return x;
}

}  // namespace

UOpRef identity_element(Ops op, DType d) {
  if (op != Ops::ADD && op != Ops::MUL && op != Ops::MAX)
    throw ValueError("codegen", fmt::format("REDUCE with {} (expected ADD, MUL or MAX)", op_name(op)));
  return UOp::const_(d, scalar::identity_element(op, d));
}

namespace {

struct ReduceCtx {
  int64_t next_acc = 0, next_range_id = 0;
  std::unordered_set<const UOp*> claimed;  // RANGEs some lowered REDUCE already loops over
  std::vector<UOpRef> keep;                // keeps claimed nodes alive (their addresses are the keys)
};

// Rebuilds u with map applied, except below ENDs that close a mapped RANGE: those loops are finished
// and keep their own range.
UOpRef replace_open(const UOpRef& u, const std::unordered_map<const UOp*, UOpRef>& map) {
  std::unordered_map<const UOp*, UOpRef> done;
  for (const UOp* n : u->toposort()) {
    if (auto it = map.find(n); it != map.end()) {
      done[n] = it->second;
      continue;
    }
    bool blocked =
        n->op() == Ops::END && std::any_of(n->src().begin() + 1, n->src().end(),
                                           [&](const UOpRef& s) { return map.count(s.get()) != 0; });
    std::vector<UOpRef> src;
    bool changed = false;
    for (const UOpRef& s : n->src()) {
      src.push_back(blocked ? s : done.at(s.get()));
      changed |= src.back() != s;
    }
    done[n] = changed ? n->with_src(std::move(src)) : n->ref();
  }
  return done.at(u.get());
}

// Every assignment of values to the UNROLL ranges rs, the last range fastest (loop order).
std::vector<std::unordered_map<const UOp*, UOpRef>> unroll_points(const std::vector<UOpRef>& rs) {
  std::vector<std::unordered_map<const UOp*, UOpRef>> out{{}};
  for (const UOpRef& r : rs) {
    std::vector<std::unordered_map<const UOp*, UOpRef>> next;
    int64_t n = std::get<int64_t>(*r->src(0)->const_value());
    for (const auto& m : out)
      for (int64_t v = 0; v < n; v++) {
        next.push_back(m);
        next.back()[r.get()] = UOp::const_(r->dtype(), ConstValue{v});
      }
    out = std::move(next);
  }
  return out;
}

UOpRef lower_reduce(Match& m) {
  auto& ctx = m.ctx<ReduceCtx>();
  const UOpRef& red = m.root();
  Ops op = red->arg_as<Ops>();
  UOpRef value = red->src(0)->cast(red->dtype());
  std::vector<UOpRef> rs, unrolled, lanes;
  for (size_t i = 1; i < red->src().size(); i++)
    if (red->src(i)->op() == Ops::RANGE) {
      AxisType t = red->src(i)->arg_as<AxisArg>().type;
      (t == AxisType::UNROLL ? unrolled : t == AxisType::UPCAST ? lanes : rs).push_back(red->src(i));
    }
  sort_by_id(unrolled), sort_by_id(lanes);
  // UNROLL ranges are not loops: the update applies op to each of their values in turn, in loop order.
  auto update = [&](UOpRef cur) {
    for (const std::unordered_map<const UOp*, UOpRef>& at : unroll_points(unrolled))
      cur = cur->alu(op, at.empty() ? value : value->substitute(at));
    return cur;
  };
  if (rs.empty() && lanes.empty())
    return unrolled.empty() ? value : update(identity_element(op, red->dtype()));

  // A RANGE another REDUCE already loops over gets a fresh copy: each loop has exactly one END.
  std::unordered_map<const UOp*, UOpRef> fresh;
  for (UOpRef& r : rs) {
    if (!ctx.claimed.count(r.get())) continue;
    UOpRef nr = UOp::make(Ops::RANGE, r->dtype(), {r->src(0)},
                          AxisArg{ctx.next_range_id++, r->arg_as<AxisArg>().type});
    fresh[r.get()] = nr;
    r = nr;
  }
  if (!fresh.empty()) value = replace_open(value, fresh);
  for (const UOpRef& r : rs) ctx.claimed.insert(r.get()), ctx.keep.push_back(r);
  sort_by_id(rs);

  // The loops the value sits in besides its own: the accumulator is reset inside them.
  std::vector<const UOp*> topo = value->toposort();
  std::vector<std::vector<const UOp*>> open = open_ranges(topo);
  // UPCAST loops among them are unrolled later: each of their values gets its own accumulator slot.
  std::vector<UOpRef> outer, upcast;
  auto listed = [](const std::vector<UOpRef>& v, const UOp* r) {
    return std::find(v.begin(), v.end(), r->ref()) != v.end();
  };
  for (const UOp* r : open.back())
    if (!listed(rs, r) && !listed(unrolled, r) && !listed(lanes, r))
      (r->arg_as<AxisArg>().type == AxisType::UPCAST ? upcast : outer).push_back(r->ref());
  sort_by_id(outer), sort_by_id(upcast);
  // UPCAST ranges the REDUCE is over (an UPCAST of a reduce axis) are lanes: each of their values gets its
  // own slot too, innermost, so the update is one vector op over them (a row sum adds a vector of the row
  // per step); their slots are combined after the loop.
  int64_t slots = 1;
  UOpRef at_slot = UOp::const_(dtypes::index, ConstValue{int64_t{0}});
  for (const std::vector<UOpRef>* group : {&upcast, &lanes})
    for (const UOpRef& u : *group) {
      int64_t n = std::get<int64_t>(*u->src(0)->const_value());
      at_slot = slots == 1 ? u : at_slot * n + u;
      slots *= n;
    }
  auto end_lanes = [&](UOpRef x) {
    for (auto it = lanes.rbegin(); it != lanes.rend(); ++it) x = end_of(x, *it);
    return x;
  };

  DType acc_t = red->dtype().ptr(AddrSpace::REG, slots);
  UOpRef acc = UOp::make(Ops::DEFINE_REG, acc_t, {}, int64_t{ctx.next_acc++});
  auto after = [&](std::vector<UOpRef> deps) {
    deps.insert(deps.begin(), acc);
    return deps.size() == 1 ? acc : UOp::make(Ops::AFTER, acc_t, std::move(deps));
  };
  auto slot = [&](const UOpRef& a) { return UOp::make(Ops::INDEX, acc_t, {a, at_slot}); };

  UOpRef init = end_lanes(
      UOp::make(Ops::STORE, dtypes::void_, {slot(after(outer)), identity_element(op, red->dtype())}));
  std::vector<UOpRef> deps{init};
  deps.insert(deps.end(), rs.begin(), rs.end());
  UOpRef acc_in = slot(after(deps));
  UOpRef cur = UOp::make(Ops::LOAD, red->dtype(), {acc_in});
  UOpRef loop = end_lanes(
      UOp::make(Ops::STORE, dtypes::void_, {acc_in, unrolled.empty() ? cur->alu(op, value) : update(cur)}));
  for (auto it = rs.rbegin(); it != rs.rend(); ++it) loop = end_of(loop, *it);
  UOpRef done = after({loop});
  if (lanes.empty()) return UOp::make(Ops::LOAD, red->dtype(), {slot(done)});
  UOpRef total;
  for (const std::unordered_map<const UOp*, UOpRef>& at : unroll_points(lanes)) {
    UOpRef i = UOp::make(Ops::INDEX, acc_t, {done, at_slot->substitute(at)});
    UOpRef lane = UOp::make(Ops::LOAD, red->dtype(), {i});
    total = total ? total->alu(op, lane) : lane;
  }
  return total;
}

const PatternMatcher& split_rules() {
  static const PatternMatcher pm{
      {UPat(Ops::RANGE, std::vector<UPat>{UPat::cnst(int64_t{1})}, std::nullopt, "r"),
       [](Match& m) { return m["r"]->const_like(int64_t{0}); }},  // a loop of one trip is its index 0
      {UPat(Ops::END, std::nullopt, std::nullopt, "e"), split_end},
  };
  return pm;
}

}  // namespace

std::vector<std::vector<const UOp*>> open_ranges(const std::vector<const UOp*>& topo) {
  std::unordered_map<const UOp*, size_t> pos;
  std::vector<std::vector<const UOp*>> out(topo.size());
  for (size_t i = 0; i < topo.size(); i++) {
    const UOp* u = topo[i];
    pos[u] = i;
    std::vector<const UOp*>& acc = out[i];
    if (u->op() == Ops::END) {
      acc = out[pos.at(u->src(0).get())];
      for (size_t k = 1; k < u->src().size(); k++) std::erase(acc, u->src(k).get());
    } else {
      for (const UOpRef& s : u->src()) {
        const auto& o = out[pos.at(s.get())];
        acc.insert(acc.end(), o.begin(), o.end());
      }
      if (u->op() == Ops::RANGE) acc.push_back(u);
      std::sort(acc.begin(), acc.end());
      acc.erase(std::unique(acc.begin(), acc.end()), acc.end());
    }
  }
  return out;
}

const PatternMatcher& end_cleanup() {
  static const PatternMatcher pm{{UPat(Ops::END, std::nullopt, std::nullopt, "e"), split_end}};
  return pm;
}

UOpRef split_ends(const UOpRef& sink) {
  return graph_rewrite(sink, split_rules(), nullptr, {.name = "split ends"});
}

UOpRef reduce_to_acc(const UOpRef& sink) {
  ReduceCtx ctx;
  for (const UOp* u : sink->toposort())
    if (u->op() == Ops::RANGE) ctx.next_range_id = std::max(ctx.next_range_id, range_id(u) + 1);
  static const PatternMatcher pm{{UPat(Ops::REDUCE, std::nullopt, std::nullopt, "r"), lower_reduce}};
  return graph_rewrite(sink, pm, ctx, {.name = "reduce to accumulator"});
}

UOpRef merge_ends(const UOpRef& sink) {
  UOpRef s = sink;
  for (;;) {
    std::vector<const UOp*> topo = s->toposort();
    auto open = open_ranges(topo);
    std::map<int64_t, std::vector<size_t>>
        ends;  // range id -> its ENDs (topo positions), ordered for determinism
    for (size_t i = 0; i < topo.size(); i++)
      if (topo[i]->op() == Ops::END) ends[range_id(topo[i]->src(1).get())].push_back(i);
    auto it = std::find_if(ends.begin(), ends.end(), [](const auto& kv) { return kv.second.size() > 1; });
    if (it == ends.end()) return s;
    const std::vector<size_t>& es = it->second;
    const UOp* r = topo[es[0]]->src(1).get();
    std::vector<std::unordered_set<const UOp*>> below;  // what each END depends on, one toposort each
    for (size_t a : es) {
      std::vector<const UOp*> t = topo[a]->toposort();
      below.emplace_back(t.begin(), t.end());
    }
    std::vector<UOpRef> bodies;
    for (size_t i = 0; i < es.size(); i++) {
      const UOp* e = topo[es[i]];
      bool ok = e->src(1).get() == r && open[es[i]] == open[es[0]];
      for (size_t j = 0; j < es.size(); j++) ok = ok && (i == j || !below[i].contains(topo[es[j]]));
      if (!ok)
        throw ValueError("codegen",
                         fmt::format("RANGE {} is closed by ENDs in different loops or one after the other; "
                                     "give each loop its own RANGE",
                                     it->first));
      bodies.push_back(e->src(0));
    }
    UOpRef merged = end_of(UOp::make(Ops::NOOP, dtypes::void_, std::move(bodies)), r->ref());
    std::unordered_map<const UOp*, UOpRef> map;
    for (size_t a : es) map[topo[a]] = merged;
    s = s->substitute(map);
    std::vector<UOpRef> srcs;  // the SINK may now list the merged END more than once
    for (const UOpRef& x : s->src())
      if (std::find(srcs.begin(), srcs.end(), x) == srcs.end()) srcs.push_back(x);
    s = s->with_src(std::move(srcs));
  }
}

}  // namespace tg::codegen
