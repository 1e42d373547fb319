// Steps 1 and 2 of the scheduler: clean the tensor graph, fold constants, and decide which nodes become
// buffers.
#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "base/error.hpp"
#include "schedule/passes.hpp"
#include "uop/ptr_map.hpp"
#include "uop/scalar.hpp"
#include "uop/symbolic.hpp"

namespace tg::sched {

// ---- graph helpers ----

const Shape& shape_of(const UOp* u) {
  const Shape* s = u->shape();
  if (!s) throw ShapeError("schedule", fmt::format("{} has no shape", u->str()));
  return *s;
}

const UOp* strip_movement(const UOp* u) {
  while (group::Movement.contains(u->op())) u = u->src(0).get();
  return u;
}

const UOp* strip_reshape(const UOp* u) {
  while (u->op() == Ops::RESHAPE) u = u->src(0).get();
  if (u->op() == Ops::SHRINK && u->src(0)->op() == Ops::BUFFER && u->arg_as<ShapePairs>()[0].first == 0)
    return u->src(0).get();
  return u;
}

bool is_const_view(const UOp* u) {
  while (group::Movement.contains(u->op()) && u->op() != Ops::PAD) u = u->src(0).get();
  return u->op() == Ops::CONST;
}

bool is_buffer_rowmajor(const UOp* u) { return strip_reshape(u)->op() == Ops::BUFFER; }

UOpRef device_of(const UOp* u) {
  std::vector<const UOp*> stack{u};
  NodeSet seen;
  while (!stack.empty()) {
    const UOp* x = stack.back();
    stack.pop_back();
    if (!seen.insert(x).second) continue;
    switch (x->op()) {
      case Ops::DEVICE:
        return x->ref();
      case Ops::BUFFER:
      case Ops::COPY:
        return x->src(1);
      case Ops::ASSIGN:
        stack.push_back(x->src(0).get());
        continue;
      default:
        for (auto it = x->src().rbegin(); it != x->src().rend(); ++it) stack.push_back(it->get());
    }
  }
  return nullptr;
}

const UOp* assign_buffer(const UOp* a) {
  const UOp* t = a;
  while (t->op() == Ops::ASSIGN) t = strip_movement(t->src(0).get());
  if (t->op() != Ops::BUFFER)
    throw ValueError("assign",
                     fmt::format("the target must be a view of a realized buffer, not {}", op_name(t->op())));
  return t;
}

UOpRef reshape(const UOpRef& x, const Shape& shape) {
  if (*x->shape() == shape) return x;
  return UOp::make(Ops::RESHAPE, x->dtype(), {x}, shape);
}

namespace {

// CONST(device, v) viewed as `shape`: reshape to all ones, then expand.
UOpRef const_view(const UOpRef& device, DType dtype, ConstValue v, const Shape& shape) {
  UOpRef c = UOp::const_(dtype, v);
  if (device) c = c->with_src({device});
  if (shape.empty()) return c;
  c = UOp::make(Ops::RESHAPE, dtype, {c}, Shape(shape.size(), 1));
  if (prod(shape) == 1) return c;
  return UOp::make(Ops::EXPAND, dtype, {c}, shape);
}

const ConstValue& view_value(const UOp* u) { return *strip_movement(u)->const_value(); }

UOpRef fold_alu(const UOpRef& x) {
  std::vector<ConstValue> vals;
  for (const UOpRef& s : x->src()) {
    if (!s->shape() || !is_const_view(s.get())) return nullptr;
    vals.push_back(view_value(s.get()));
  }
  // fold_const takes the operands' dtype: a comparison's own dtype is bool, its operands' is not.
  DType operands = (x->op() == Ops::WHERE ? x->src(1) : x->src(0))->dtype();
  std::optional<ConstValue> v = fold_const(x->op(), operands, vals);
  if (!v) return nullptr;
  return const_view(device_of(x.get()), x->dtype(), *v, shape_of(x.get()));
}

UOpRef fold_cast(const UOpRef& x) {
  if (x->op() != Ops::CAST || !is_const_view(x->src(0).get())) return nullptr;
  return const_view(device_of(x.get()), x->dtype(), view_value(x->src(0).get()), shape_of(x.get()));
}

UOpRef fold_reduce(const UOpRef& x) {
  const UOp* src = x->src(0).get();
  const auto& ra = x->arg_as<ReduceArg>();
  if (is_symbolic(shape_of(src))) return nullptr;
  int64_t n_in = prod(shape_of(src)), n_out = prod(shape_of(x.get()));
  if (n_out == 0) return nullptr;
  if (n_in == 0)
    return const_view(device_of(x.get()), x->dtype(), scalar::identity_element(ra.op, x->dtype()), shape_of(x.get()));
  if (!is_const_view(src)) return nullptr;
  const ConstValue& v = view_value(src);
  std::optional<ConstValue> r;
  if (ra.op == Ops::MAX || n_in == n_out)
    r = v;
  else if (ra.op == Ops::ADD) {
    ConstValue count =
        x->dtype().is_float() ? ConstValue{static_cast<double>(n_in / n_out)} : ConstValue{n_in / n_out};
    const ConstValue srcs[] = {v, count};
    r = fold_const(Ops::MUL, x->dtype(), srcs);
  }
  if (!r) return nullptr;  // MUL of a constant other than 0/1 stays a (cheap) kernel
  return const_view(device_of(x.get()), x->dtype(), *r, shape_of(x.get()));
}

// split_reduce for a reduce over the last axes, their n values -> (k1, n/(k1*k2), k2): the k1*k2 partials
// per output reduce the middle, so k2 neighbouring partials read k2 contiguous values per step (vector
// loads) and each of the k1 chunks streams its own contiguous block. k2 is 64 lanes, or the most of 32, 16
// and 8 that divides n: batchnorm's sums over (N, H, W) of 20x20 images read 16 values a step this way,
// where split along N each partial summed one image's 400 with one lane per channel.
UOpRef split_last_axes(const UOpRef& x, const IntVec& axes) {
  constexpr int64_t kMaxLanes = 64, kMinLanes = 8, kMaxSplit = 1024, kMinPart = 256;
  const UOp* src = x->src(0).get();
  const auto& ra = x->arg_as<ReduceArg>();
  const Shape& in = shape_of(src);
  int64_t first = static_cast<int64_t>(in.size()), n = 1, per_out = prod(in) / prod(shape_of(x.get()));
  size_t rest = axes.size();  // axes[0, rest): the reduced axes before the trailing run
  while (rest > 0 && axes[rest - 1] == first - 1) n *= in[static_cast<size_t>(--first)], rest--;
  int64_t lanes = kMaxLanes;
  while (lanes >= kMinLanes && n % lanes != 0) lanes /= 2;
  if (first == static_cast<int64_t>(in.size()) || lanes < kMinLanes) return nullptr;
  int64_t k1 = kMaxSplit / lanes;
  while (k1 >= 1 && (n % (k1 * lanes) != 0 || per_out / (k1 * lanes) < kMinPart)) k1 /= 2;
  if (k1 < 1) return nullptr;
  Shape split(in.begin(), in.begin() + first);
  split.insert(split.end(), {k1, n / (k1 * lanes), lanes});
  IntVec inner(axes.begin(), axes.begin() + static_cast<std::ptrdiff_t>(rest));  // then the split's middle
  inner.push_back(first + 1);
  UOpRef part =
      UOp::make(Ops::REDUCE_AXIS, x->dtype(), {reshape(src->ref(), split)}, ReduceArg{ra.op, inner});
  UOpRef buf = UOp::make(Ops::CONTIGUOUS, x->dtype(), {part});
  UOpRef total = UOp::make(Ops::REDUCE_AXIS, x->dtype(), {buf}, ReduceArg{ra.op, {first, first + 2}});
  return reshape(total, shape_of(x.get()));
}

// A reduce of many values into few outputs runs on one core with one accumulator chain, or (a few hundred
// outputs) streams its inputs from memory once per register tile: split its first reduced axis a into
// (k, n/k), reduce n/k (and the other reduced axes) into a buffer of k partials per output, then reduce
// those (tinygrad's split_reduceop). This changes the summation order. The first conv's weight gradient of
// the Fashion-MNIST CNN (800 outputs, each a sum of 512 * 576) took 45-64 ms as one reduce and 10 split
// per sample, whose inputs stay in the cache.
UOpRef split_reduce(const UOpRef& x) {
  constexpr int64_t kMinReduce = 32768, kMaxOutputs = 4096, kMaxSplit = 1024;
  const UOp* src = x->src(0).get();
  const auto& ra = x->arg_as<ReduceArg>();
  const Shape& in = shape_of(src);
  if (is_symbolic(in)) return nullptr;  // sizes that change per run keep one reduce
  int64_t n_in = prod(in), n_out = prod(shape_of(x.get()));
  if (n_out == 0 || n_out > kMaxOutputs || n_in / n_out < kMinReduce || is_const_view(src)) return nullptr;
  IntVec axes = ra.axes;
  std::sort(axes.begin(), axes.end());
  if (UOpRef r = split_last_axes(x, axes)) return r;
  for (int64_t a : axes) {  // the first reduced axis with a split of at least 8
    int64_t n = in[static_cast<size_t>(a)], k = kMaxSplit;
    while (k >= 8 && (n % k != 0 || n_in / n_out / k < 256)) k /= 2;
    if (k < 8) continue;
    Shape split = in;
    split[static_cast<size_t>(a)] = n / k;
    split.insert(split.begin() + a, k);
    IntVec inner;  // every reduced axis but the k partials: a's rest and the axes after it move one up
    for (int64_t r : axes) inner.push_back(r < a ? r : r + 1);
    UOpRef part =
        UOp::make(Ops::REDUCE_AXIS, x->dtype(), {reshape(src->ref(), split)}, ReduceArg{ra.op, inner});
    UOpRef buf = UOp::make(Ops::CONTIGUOUS, x->dtype(), {part});
    UOpRef total = UOp::make(Ops::REDUCE_AXIS, x->dtype(), {buf}, ReduceArg{ra.op, {a}});
    return reshape(total, shape_of(x.get()));
  }
  return nullptr;
}

bool is_identity_movement(const UOp* m) {
  const Shape& in = shape_of(m->src(0).get());
  switch (m->op()) {
    case Ops::RESHAPE:
    case Ops::EXPAND:
      return m->arg_as<Shape>() == in;
    case Ops::PERMUTE: {
      const IntVec& p = m->arg_as<IntVec>();
      for (size_t i = 0; i < p.size(); i++)
        if (p[i] != static_cast<int64_t>(i)) return false;
      return true;
    }
    case Ops::FLIP: {
      const IntVec& f = m->arg_as<IntVec>();
      for (size_t i = 0; i < f.size(); i++)
        if (f[i] != 0 && !(in[i] == 1)) return false;
      return true;
    }
    case Ops::PAD:
      for (const auto& [b, a] : m->arg_as<ShapePairs>())
        if (b != 0 || a != 0) return false;
      return true;
    case Ops::SHRINK: {
      const ShapePairs& s = m->arg_as<ShapePairs>();
      for (size_t i = 0; i < s.size(); i++)
        if (s[i].first != 0 || s[i].second != in[i]) return false;
      return true;
    }
    default:
      return false;
  }
}

UPat any_op(OpSet ops, const char* name) { return UPat(ops, {}, std::nullopt, std::nullopt, name); }

UOpRef take_x(Match& m) { return m["x"]; }
UOpRef take_c(Match& m) { return m["c"]; }
UOpRef drop_contiguous(Match& m) { return is_buffer_rowmajor(m["x"].get()) ? m["x"] : UOpRef(); }
UOpRef drop_identity(Match& m) { return is_identity_movement(m["m"].get()) ? m["m"]->src(0) : UOpRef(); }
UOpRef merge_reshapes(Match& m) { return m["r"]->with_src({m["x"]}); }
UOpRef drop_copy(Match& m) { return device_of(m["x"].get()) == m["d"] ? m["x"] : UOpRef(); }

}  // namespace

const PatternMatcher& pm_cleanup() {
  UPat x = UPat::var("x"), reshaped = UPat::op({Ops::RESHAPE}, {x});
  static const PatternMatcher pm{
      {UPat::op({Ops::DETACH}, {x}), take_x},               // detach(x) -> x
      {UPat::op({Ops::CONTIGUOUS}, {x}), drop_contiguous},  // contiguous(buffer) -> buffer
      {UPat::op({Ops::CONTIGUOUS}, {UPat::op({Ops::CONTIGUOUS}, {}, "c")}), take_c},  // contiguous(c) -> c
      {any_op(group::Movement, "m"), drop_identity},                // x.reshape(x.shape) -> x
      {UPat::op({Ops::RESHAPE}, {reshaped}, "r"), merge_reshapes},  // reshape(reshape(x)) -> reshape(x)
      {UPat::op({Ops::COPY}, {x, UPat::var("d")}), drop_copy},      // copy(x, x.device) -> x
      {any_op(OpSet{Ops::REDUCE_AXIS}, "x"), [](Match& m) { return split_reduce(m["x"]); }},  // big r -> two
  };
  return pm;
}

const PatternMatcher& pm_fold_constants() {
  static const PatternMatcher pm{
      {any_op(group::ALU, "x"), [](Match& m) { return fold_alu(m["x"]); }},         // op(c1, c2) -> c
      {any_op(OpSet{Ops::CAST}, "x"), [](Match& m) { return fold_cast(m["x"]); }},  // cast(c) -> c'
      {any_op(OpSet{Ops::REDUCE_AXIS}, "x"), [](Match& m) { return fold_reduce(m["x"]); }},  // sum(c) -> c*n
  };
  return pm;
}

// ---- realize decisions ----

namespace {

struct MarkCtx {
  RealizeInfo* info;
  NodeSet* expanded;  // bases of broadcasting EXPANDs
};

bool broadcasts(const UOp* e) {
  const Shape& in = shape_of(e->src(0).get());
  const Shape& out = e->arg_as<Shape>();
  for (size_t i = 0; i < in.size(); i++)
    if (in[i] == 1 && out[i] != 1) return true;
  return false;
}

UOpRef mark_realize(Match& m) {
  m.ctx<MarkCtx>().info->realized.insert(m["x"].get());
  return nullptr;
}

UOpRef mark_copy(Match& m) {
  const UOp* src = strip_reshape(m["x"]->src(0).get());
  if (src->op() == Ops::ASSIGN) {
    if (!is_buffer_rowmajor(src->src(0).get()))
      throw NotSupportedError("copy", "copying an ASSIGN into part of a buffer: realize the assign first");
  } else if (src->op() != Ops::BUFFER) {
    m.ctx<MarkCtx>().info->realized.insert(src);  // a copy moves whole buffers
  }
  return mark_realize(m);
}

UOpRef mark_assign(Match& m) {
  assign_buffer(m["x"].get());
  return mark_realize(m);
}

UOpRef mark_expand(Match& m) {
  if (broadcasts(m["x"].get())) m.ctx<MarkCtx>().expanded->insert(strip_movement(m["x"]->src(0).get()));
  return nullptr;
}

const PatternMatcher& pm_realize_marks() {
  static const PatternMatcher pm{
      {any_op(OpSet{Ops::CONTIGUOUS}, "x"), mark_realize},  // the user asked for a buffer
      {any_op(OpSet{Ops::COPY}, "x"), mark_copy},           // copies write a buffer on another device
      {any_op(OpSet{Ops::ASSIGN}, "x"), mark_assign},       // writes into the target's buffer
      {any_op(OpSet{Ops::EXPAND}, "x"), mark_expand},  // maybe: values read at more ranges than they have
  };
  return pm;
}

bool needs_no_kernel(const UOp* b) {
  return b->op() == Ops::BUFFER || b->op() == Ops::DEFINE_VAR || b->op() == Ops::BIND || is_const_view(b);
}

}  // namespace

RealizeMarks mark_realize(const UOpRef& sink) {
  RealizeMarks marks;
  RealizeInfo info;
  for (const UOpRef& r : sink->src()) {
    const UOp* b = strip_movement(r.get());
    if (!needs_no_kernel(b)) info.realized.insert(b);
  }
  MarkCtx mctx{&info, &marks.expanded};
  graph_rewrite(sink, pm_realize_marks(), mctx, {.name = "schedule: realize marks"});
  marks.realized = std::move(info.realized);
  marks.order = sink->toposort();
  return marks;
}

RealizeInfo decide_realize(const RealizeMarks& marks, const NodeSet& forced) {
  RealizeInfo info{marks.realized, {}, {}};
  info.realized.insert(forced.begin(), forced.end());
  // A CONTIGUOUS stores the value of its source: that source is realized instead, so its other uses read the
  // buffer rather than computing the value again, and the CONTIGUOUS is that buffer (build). A relu stored
  // for the next conv: its backward's mask reads it, and the conv output under it can go after the forward.
  for (const UOp* r : info.realized)
    if (r->op() == Ops::CONTIGUOUS) {
      const UOp* v = r->src(0).get();
      if (!needs_no_kernel(v) && !group::Movement.contains(v->op()) &&
          !OpSet{Ops::CONTIGUOUS, Ops::COPY, Ops::ASSIGN}.contains(v->op()))
        info.aliases.insert(r);
    }
  for (const UOp* r : info.aliases) info.realized.insert(r->src(0).get());

  // An expanded value is realized when recomputing it per broadcast element would repeat a reduce over
  // buffers; cheap elementwise values are recomputed instead. Sources first, so decisions below are final.
  enum : uint8_t { READS = 1, HEAVY = 2 };
  detail::PtrMap<uint8_t> flags(marks.order.size());
  for (const UOp* u : marks.order) {
    uint8_t f = u->op() == Ops::BUFFER ? READS : 0;
    for (const UOpRef& s : u->src()) f |= *flags.find(s.get());  // sources come first in the order
    if (u->op() == Ops::REDUCE_AXIS && (*flags.find(u->src(0).get()) & READS)) f |= HEAVY;
    if ((f & HEAVY) && marks.expanded.count(u)) info.realized.insert(u);
    if (info.realized.count(u)) {
      flags.insert(u, READS);
    } else {
      flags.insert(u, f);
      if ((f & HEAVY) && !group::Movement.contains(u->op())) info.heavy.insert(u);
    }
  }
  return info;
}

RealizeInfo decide_realize(const UOpRef& sink, const NodeSet& forced) {
  return decide_realize(mark_realize(sink), forced);
}

UOpRef buffer_view(const UOpRef& buffer, const Shape& shape) {
  sint n = sched::prod(shape);
  if (n.is_number() || buffer->arg_as<int64_t>() < n.max()) return sched::reshape(buffer, shape);
  UOpRef prefix = UOp::make(Ops::SHRINK, buffer->dtype(), {buffer}, ShapePairs{{0, n}});
  return UOp::make(Ops::RESHAPE, buffer->dtype(), {prefix}, shape);
}

}  // namespace tg::sched
