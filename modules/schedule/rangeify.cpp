// Step 3 of the scheduler: movement ops become index arithmetic. A tensor-level INDEX(x, i0..in-1[, valid])
// reads x at the index expressions i (one per axis of x); the rules push it from the store down to the
// loads, rewriting movement ops into index math and REDUCE_AXIS into REDUCE over new ranges.
#include <algorithm>

#include <fmt/format.h>
#include <range/v3/view/zip.hpp>

#include "base/error.hpp"
#include "schedule/passes.hpp"

namespace tg::sched {

namespace {

namespace views = ranges::views;

UOpRef ic(int64_t v) { return UOp::const_(dtypes::index, v); }

struct Indexed {
  UOpRef x;
  std::vector<UOpRef> idx;
  UOpRef valid;  // null: always valid
};

Indexed parse(const UOpRef& index) {
  Indexed r{index->src(0), {}, nullptr};
  size_t n = shape_of(r.x.get()).size();
  if (index->src().size() < n + 1)
    throw ValueError("schedule", fmt::format("INDEX of {} has too few indices", r.x->str()));
  r.idx.assign(index->src().begin() + 1, index->src().begin() + 1 + static_cast<std::ptrdiff_t>(n));
  if (index->src().size() > n + 1) r.valid = index->src(n + 1);
  return r;
}

UOpRef make_index(const UOpRef& x, std::vector<UOpRef> idx, const UOpRef& valid) {
  idx.insert(idx.begin(), x);
  if (valid) idx.push_back(valid);
  return UOp::make(Ops::INDEX, x->dtype(), std::move(idx));
}

std::vector<UOpRef> simplified(std::vector<UOpRef> v) {
  if (v.empty()) return v;
  UOpRef s = UOp::sink(std::move(v))->simplify();
  return {s->src().begin(), s->src().end()};
}

// Row-major flattening of idx over shape; axes of size 1 contribute nothing.
UOpRef flatten(const std::vector<UOpRef>& idx, const Shape& shape, LowerCtx& ctx) {
  UOpRef flat;
  sint stride = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    if (shape[i] != 1) {
      UOpRef term = stride == 1 ? idx[i] : idx[i] * ctx.size(stride);
      flat = flat ? term + flat : term;
    }
    stride *= shape[i];
  }
  return flat ? flat : ic(0);
}

// Index of the input axes `ins` (row-major) from the output axes `outs` that hold the same elements.
void reshape_axes(const std::vector<UOpRef>& idx, const Shape& out, const Shape& in,
                  const std::vector<size_t>& outs, const std::vector<size_t>& ins, std::vector<UOpRef>& r,
                  LowerCtx& ctx) {
  UOpRef flat;
  sint stride = 1;
  for (size_t k = outs.size(); k-- > 0;) {
    UOpRef term = stride == 1 ? idx[outs[k]] : idx[outs[k]] * ctx.size(stride);
    flat = flat ? term + flat : term;
    stride *= out[outs[k]];
  }
  if (!flat) flat = ic(0);
  stride = 1;
  for (size_t k = ins.size(); k-- > 0;) {
    UOpRef e = stride == 1 ? flat : flat / ctx.size(stride);
    r[ins[k]] =
        k == 0 ? e : e % ctx.size(in[ins[k]]);  // the outermost axis needs no modulo: flat < the group's size
    stride *= in[ins[k]];
  }
}

// Axes of size 1 read index 0. The others are cut into the smallest groups whose sizes agree on both
// sides (row-major order keeps groups apart): an axis that is one axis of the same size on the other side
// keeps its index as it is, and only groups that really split or merge axes build div/mod arithmetic.
// Symbolic sizes are grouped at their bound values, and the grouping is kept only if every group's sizes
// agree for all values; otherwise all axes form one group.
std::vector<UOpRef> reshape_index(const std::vector<UOpRef>& idx, const Shape& out, const Shape& in,
                                  LowerCtx& ctx) {
  std::vector<size_t> outs, ins;
  for (size_t i = 0; i < out.size(); i++)
    if (out[i] != 1) outs.push_back(i);
  for (size_t j = 0; j < in.size(); j++)
    if (in[j] != 1) ins.push_back(j);
  std::vector<UOpRef> r(in.size());
  for (size_t j = 0; j < in.size(); j++)
    if (in[j] == 1) r[j] = ic(0);
  auto zero = [](const Shape& s) {
    return std::any_of(s.begin(), s.end(), [](const sint& d) { return d.bound() == 0; });
  };
  if (zero(out) || zero(in)) {  // no elements: any index will do, as one group
    if (!ins.empty()) reshape_axes(idx, out, in, outs, ins, r, ctx);
    return simplified(std::move(r));
  }
  std::vector<std::pair<std::vector<size_t>, std::vector<size_t>>> groups;
  bool exact = true;
  for (size_t a = 0, b = 0; a < outs.size() || b < ins.size();) {
    std::vector<size_t> go, gi;
    int64_t po = 1, pi = 1;
    sint so = 1, si = 1;
    do {
      if (pi > po || b == ins.size())
        po *= out[outs.at(a)].bound(), so *= out[outs[a]], go.push_back(outs[a++]);
      else
        pi *= in[ins[b]].bound(), si *= in[ins[b]], gi.push_back(ins[b++]);
    } while (po != pi);
    exact = exact && so == si;
    groups.emplace_back(std::move(go), std::move(gi));
  }
  if (!exact) {
    reshape_axes(idx, out, in, outs, ins, r, ctx);
    return simplified(std::move(r));
  }
  for (const auto& [go, gi] : groups) {
    if (go.size() == 1 && gi.size() == 1)
      r[gi[0]] = idx[go[0]];
    else
      reshape_axes(idx, out, in, go, gi, r, ctx);
  }
  return simplified(std::move(r));  // cheap for indices simplified before: the simplifier remembers them
}

UOpRef push_movement(Match& m) {
  Indexed ix = parse(m["idx"]);
  auto& ctx = m.ctx<LowerCtx>();
  const UOp* mv = ix.x.get();
  const UOpRef& src = mv->src(0);
  const Shape& in = shape_of(src.get());
  std::vector<UOpRef> r = ix.idx;
  switch (mv->op()) {
    case Ops::RESHAPE:
      r = reshape_index(ix.idx, shape_of(mv), in, ctx);
      break;
    case Ops::PERMUTE: {
      const IntVec& order = mv->arg_as<IntVec>();
      for (size_t i = 0; i < order.size(); i++) r[static_cast<size_t>(order[i])] = ix.idx[i];
      break;
    }
    case Ops::EXPAND:
      for (auto&& [ri, n] : views::zip(r, in))
        if (n == 1) ri = ic(0);
      break;
    case Ops::SHRINK:
      for (auto&& [ri, bounds, i] : views::zip(r, mv->arg_as<ShapePairs>(), ix.idx))
        if (bounds.first != 0) ri = i + ctx.size(bounds.first);
      break;
    case Ops::FLIP:
      for (auto&& [ri, flip, n, i] : views::zip(r, mv->arg_as<IntVec>(), in, ix.idx))
        if (flip) ri = ctx.size(n - 1) - i;
      r = simplified(std::move(r));
      break;
    default:
      return nullptr;
  }
  return make_index(src, std::move(r), ix.valid);
}

// Reads outside the unpadded region give 0 and must not touch memory: the valid gates the loads below,
// and the WHERE gives the 0 even when the source is not 0 there (exp(x).pad(...)).
UOpRef push_pad(Match& m) {
  Indexed ix = parse(m["idx"]);
  auto& ctx = m.ctx<LowerCtx>();
  const UOpRef& src = ix.x->src(0);
  const Shape& in = shape_of(src.get());
  const ShapePairs& pads = ix.x->arg_as<ShapePairs>();
  std::vector<UOpRef> r = ix.idx;
  UOpRef cond;
  auto and_ = [&](UOpRef c) { cond = cond ? cond & c : c; };
  for (auto&& [ri, pad, n, i] : views::zip(r, pads, in, ix.idx)) {
    const auto& [before, after] = pad;
    if (before != 0) {
      ri = i - ctx.size(before);
      and_((ctx.size(before) - 1)->lt(i));  // idx >= before
    }
    if (after != 0) and_(i->lt(ctx.size(before + n)));
  }
  r = simplified(std::move(r));
  UOpRef zero = UOp::const_(ix.x->dtype(), int64_t{0});
  if (!cond) return make_index(src, std::move(r), ix.valid);
  cond = cond->simplify();
  if (const ConstValue* c = cond->const_value()) {
    if (!std::get<bool>(*c)) return zero;
    return make_index(src, std::move(r), ix.valid);
  }
  return cond->where(make_index(src, std::move(r), ix.valid ? ix.valid & cond : cond), zero);
}

UOpRef push_reduce(Match& m) {
  Indexed ix = parse(m["idx"]);
  auto& ctx = m.ctx<LowerCtx>();
  const UOpRef& src = ix.x->src(0);
  const Shape& in = shape_of(src.get());
  const ReduceArg& ra = ix.x->arg_as<ReduceArg>();
  std::vector<UOpRef> r = ix.idx;
  std::vector<UOpRef> value{nullptr};
  for (int64_t a : ra.axes) {
    size_t ax = static_cast<size_t>(a < 0 ? a + static_cast<int64_t>(in.size()) : a);
    if (in[ax] == 1) {
      r[ax] = ic(0);
      continue;
    }
    r[ax] = UOp::range(ctx.size(in[ax]), ctx.next_range++, AxisType::REDUCE);
    value.push_back(r[ax]);
  }
  value[0] = make_index(src, std::move(r), ix.valid);
  if (value.size() == 1) return value[0];
  return UOp::make(Ops::REDUCE, ix.x->dtype(), std::move(value), ra.op);
}

UOpRef push_elementwise(Match& m) {
  Indexed ix = parse(m["idx"]);
  std::vector<UOpRef> srcs;
  for (const UOpRef& s : ix.x->src()) srcs.push_back(make_index(s, ix.idx, ix.valid));
  return UOp::make(ix.x->op(), ix.x->dtype(), std::move(srcs), ix.x->arg());
}

UOpRef load_buffer(Match& m) {
  Indexed ix = parse(m["idx"]);
  std::vector<UOpRef> src{m.ctx<LowerCtx>().global(ix.x), ix.idx[0]};
  if (ix.valid) src.push_back(ix.valid);
  DType ptr = src[0]->dtype();
  UOpRef index = UOp::make(Ops::INDEX, ptr, std::move(src));
  return UOp::make(Ops::LOAD, ix.x->dtype(), {index});
}

// Realized nodes are read from their buffers; heavy nodes remember where they are read.
UOpRef leaf_or_note(Match& m) {
  auto& ctx = m.ctx<LowerCtx>();
  const UOp* x = m["x"].get();
  if (x != ctx.root) {
    if (auto it = ctx.views->find(x); it != ctx.views->end()) {
      Indexed ix = parse(m["idx"]);
      return make_index(it->second, std::move(ix.idx), ix.valid);
    }
  }
  if (ctx.heavy->count(x)) {
    if (ctx.notes) ctx.notes->emplace_back(x, m["idx"]);
    HeavyUse use{ctx.kernel, m["idx"].get()};
    auto [it, fresh] = ctx.heavy_uses->emplace(x, use);
    if (!fresh && (it->second.kernel != use.kernel || it->second.index != use.index)) ctx.repeated->insert(x);
  }
  return nullptr;
}

UOpRef bound_variable(Match& m) {
  const UOpRef& var = m["x"]->src(0);
  if (auto* vv = m.ctx<LowerCtx>().var_vals) (*vv)[var] = std::get<int64_t>(*m["x"]->src(1)->const_value());
  return var;
}

UOpRef scalar_const(Match& m) { return UOp::const_(m["x"]->dtype(), *m["x"]->const_value()); }

UPat index_of(OpSet ops) {
  return UPat::op({Ops::INDEX}, {UPat(ops, {}, std::nullopt, std::nullopt, "x")}, "idx").allow_extra_src();
}

const PatternMatcher& pm_rangeify() {
  static const OpSet kViews{Ops::RESHAPE, Ops::PERMUTE, Ops::EXPAND, Ops::SHRINK, Ops::FLIP};
  static const OpSet kElementwise = group::ALU | OpSet{Ops::CAST, Ops::BITCAST};
  static const PatternMatcher pm{
      {index_of({}), leaf_or_note},                 // realized x[i] -> buffer_view[i]
      {index_of(kViews), push_movement},            // x.view()[i] -> x[f(i)]
      {index_of({Ops::PAD}), push_pad},             // x.pad()[i] -> valid ? x[i-b] : 0
      {index_of({Ops::REDUCE_AXIS}), push_reduce},  // sum(x)[i] -> REDUCE(x[i, r], r)
      {index_of(kElementwise), push_elementwise},   // op(a, b)[i] -> op(a[i], b[i])
      {index_of({Ops::CONST}), scalar_const},       // c[i] -> c
      {index_of({Ops::BUFFER}), load_buffer},       // buf[i] -> LOAD(INDEX(DEFINE_GLOBAL, i))
      {index_of({Ops::DEFINE_VAR}), [](Match& m) { return m["x"]; }},  // v[] -> v
      {index_of({Ops::BIND}), bound_variable},                         // bind(v, n)[] -> v, remembering n
  };
  return pm;
}

UOpRef rangeify(const UOpRef& x, std::vector<UOpRef> idx, LowerCtx& ctx) {
  UOpRef r = graph_rewrite(make_index(x, std::move(idx), nullptr), pm_rangeify(), ctx,
                           {.name = "schedule: rangeify", .bottom_up = true});
  for (const UOp* u : r->toposort())
    if (u->op() == Ops::INDEX && u->src(0)->op() != Ops::DEFINE_GLOBAL)
      throw NotSupportedError("schedule", fmt::format("cannot lower {} into a kernel", u->src(0)->str()));
  return r;
}

}  // namespace

UOpRef LowerCtx::global(const UOpRef& buffer) {
  auto it = globals.find(buffer.get());
  if (it != globals.end()) return it->second;
  DType ptr = buffer->dtype().ptr(AddrSpace::GLOBAL, buffer->arg_as<int64_t>());
  UOpRef g = UOp::make(Ops::DEFINE_GLOBAL, ptr, {}, static_cast<int64_t>(bufs.size()));
  bufs.push_back(buffer);
  globals.emplace(buffer.get(), g);
  return g;
}

UOpRef LowerCtx::size(const sint& s) {
  if (s.is_number()) return ic(s);
  if (var_vals)
    for (const auto& [var, value] : bindings(s)) (*var_vals)[var] = value;
  return unbound(s).uop();
}

namespace {
// Simplifying can drop every load of a buffer (a branch under a constant condition), and launches pass
// only the buffers a kernel reads: the others lose their argument and the rest are numbered 0..n-1 again.
UOpRef dense_globals(const UOpRef& ast, LowerCtx& ctx) {
  std::vector<const UOp*> used(ctx.bufs.size(), nullptr);
  for (const UOp* u : ast->toposort())
    if (u->op() == Ops::DEFINE_GLOBAL) used.at(static_cast<size_t>(u->arg_as<int64_t>())) = u;
  if (std::find(used.begin(), used.end(), nullptr) == used.end()) return ast;
  std::unordered_map<const UOp*, UOpRef> renumber;
  std::vector<UOpRef> bufs;
  ctx.globals.clear();
  for (size_t i = 0; i < used.size(); i++) {
    if (!used[i]) continue;
    UOpRef g = used[i]->with_arg(static_cast<int64_t>(bufs.size()));
    if (g.get() != used[i]) renumber.emplace(used[i], g);
    ctx.globals.emplace(ctx.bufs[i].get(), g);
    bufs.push_back(ctx.bufs[i]);
  }
  ctx.bufs = std::move(bufs);
  return ast->substitute(renumber);
}
}  // namespace

UOpRef rangeify_kernel(const UOpRef& value, const UOpRef& out, const UOpRef& target, LowerCtx& ctx) {
  const Shape& shape = shape_of(target ? target.get() : value.get());
  std::vector<UOpRef> idx, loops;
  for (const sint& s : shape) {
    idx.push_back(s == 1 ? ic(0) : UOp::range(ctx.size(s), ctx.next_range++, AxisType::LOOP));
    if (s != 1) loops.push_back(idx.back());
  }
  UOpRef g = ctx.global(out);
  UOpRef addr;
  if (target) {
    UOpRef load = rangeify(target, idx, ctx);
    if (load->op() != Ops::LOAD || load->src(0)->src(0) != g || load->src(0)->src().size() != 2)
      throw NotSupportedError("assign", "cannot write through a padded view");
    addr = load->src(0);
  } else {
    addr = UOp::make(Ops::INDEX, g->dtype(), {g, flatten(idx, shape, ctx)});
  }
  UOpRef v = rangeify(value, idx, ctx);
  if (v->dtype() != out->dtype()) v = v->cast(out->dtype());
  UOpRef store = UOp::make(Ops::STORE, dtypes::void_, {addr, v});
  if (!loops.empty()) {
    loops.insert(loops.begin(), store);
    store = UOp::make(Ops::END, dtypes::void_, std::move(loops));
  }
  return dense_globals(UOp::sink({store})->simplify(), ctx);
}

}  // namespace tg::sched
