// Gradient rules (one per op, given the node and its incoming gradient g) and the reverse-mode walk.
#include "tensor/gradient.hpp"

#include <numbers>
#include <unordered_set>

#include <fmt/format.h>

#include "base/error.hpp"
#include "tensor/multi.hpp"

namespace tg {

namespace {

using Grads = std::vector<UOpRef>;  // one per source; a null ref means "no gradient"
using GradFn = Grads (*)(GradientCtx& c, const UOp& r, const UOpRef& g);

const Shape& shape_of(const UOpRef& u) { return *u->shape(); }

// The device a node computes on (several joined by ',' over a MULTI).
const std::string& device_of(GradientCtx& c, const UOp* start) {
  if (auto it = c.devices.find(start); it != c.devices.end()) return it->second;
  return c.devices[start] = graph_device(start);
}

UOpRef device_node(const std::string& d) { return UOp::make(Ops::DEVICE, dtypes::void_, {}, d); }
UOpRef mv(Ops op, const UOpRef& x, Arg a) { return UOp::make(op, x->dtype(), {x}, std::move(a)); }
UOpRef reduce(const UOpRef& x, Ops op, IntVec axes) {
  return axes.empty() ? x : mv(Ops::REDUCE_AXIS, x, ReduceArg{op, std::move(axes)});
}
// x (size 1 on reduced axes) expanded back to shape.
UOpRef expand_to(const UOpRef& x, const Shape& shape) {
  return shape_of(x) == shape ? x : mv(Ops::EXPAND, x, shape);
}
// The constant v with like's dtype and shape, on the device of node `on`.
UOpRef k(GradientCtx& c, const UOpRef& like, double v, const UOp* on = nullptr) {
  UOpRef u = UOp::const_(like->dtype(), v)->with_src({device_node(device_of(c, on ? on : like.get()))});
  const Shape& s = shape_of(like);
  if (s.empty()) return u;
  return expand_to(mv(Ops::RESHAPE, u, Shape(s.size(), 1)), s);
}
UOpRef neg(const UOpRef& x) { return x->alu(Ops::NEG); }
// The gradient of a value the forward stored, stored too (a tensor's contiguous(), a realized view).
UOpRef stored(const UOpRef& g) {
  return g->op() == Ops::CONTIGUOUS ? g : UOp::make(Ops::CONTIGUOUS, g->dtype(), {g});
}
UOpRef copy_to(const UOpRef& x, const std::string& d) {
  return UOp::make(Ops::COPY, x->dtype(), {x, device_node(d)});
}

// ---- rules needing more than one line ----

// REDUCE_AXIS: ADD spreads g, MAX splits g evenly among the tied maxima, MUL is prod of the others.
Grads reduce_grad(GradientCtx& c, const UOp& r, const UOpRef& g) {
  const UOpRef& x = r.src(0);
  const ReduceArg& ra = r.arg_as<ReduceArg>();
  const Shape& in = shape_of(x);
  auto up = [&](const UOpRef& v) { return expand_to(v, in); };
  if (ra.op == Ops::ADD) return {up(g)};
  if (ra.op == Ops::MAX) {
    UOpRef mask = x->eq(up(r.ref()))->cast(g->dtype());
    return {mask / up(reduce(mask, Ops::ADD, ra.axes)) * up(g)};
  }
  // MUL, exact with zeros: prod of the nonzero others where the group has no zero; at the only zero,
  // the product of the rest; 0 everywhere else
  UOpRef zero = k(c, x, 0), one = k(c, x, 1), nz = x->ne(zero);
  UOpRef p = up(reduce(nz->where(x, one), Ops::MUL, ra.axes));
  UOpRef zeros = up(reduce(x->eq(zero)->cast(x->dtype()), Ops::ADD, ra.axes));
  return {nz->where(zeros->eq(zero)->where(p / x, zero), zeros->eq(one)->where(p, zero)) * up(g)};
}

// x^y: d/dx = y x^(y-1) (0 where y == 0), d/dy = x^y ln x (0 where x == 0 and y >= 0), as PyTorch.
Grads pow_grad(GradientCtx& c, const UOp& r, const UOpRef& g) {
  const UOpRef &x = r.src(0), &y = r.src(1);
  UOpRef zero = k(c, x, 0);
  UOpRef dx = y->eq(zero)->where(zero, g * y * x->alu(Ops::POW, y + k(c, y, -1)));
  UOpRef dy_full = g * r.ref() * x->alu(Ops::LOG2) * k(c, x, std::numbers::ln2);
  return {dx, x->eq(zero)->where(y->lt(zero)->where(dy_full, zero), dy_full)};
}

// max(a, b): g goes to the larger source, half to each on a tie (as torch.maximum).
Grads max_grad(GradientCtx& c, const UOp& r, const UOpRef& g) {
  const UOpRef &a = r.src(0), &b = r.src(1);
  UOpRef zero = k(c, g, 0), half = g * k(c, g, 0.5), tie = a->eq(b);
  return {b->lt(a)->where(g, tie->where(half, zero)), a->lt(b)->where(g, tie->where(half, zero))};
}

IntVec inverse_permutation(const IntVec& order) {
  IntVec inv(order.size());
  for (size_t i = 0; i < order.size(); i++) inv[order[i]] = static_cast<int64_t>(i);
  return inv;
}

IntVec expanded_axes(const UOp& r) {
  IntVec axes;
  const Shape &in = shape_of(r.src(0)), &out = r.arg_as<Shape>();
  for (size_t i = 0; i < in.size(); i++)
    if (!(in[i] == out[i])) axes.push_back(static_cast<int64_t>(i));
  return axes;
}

ShapePairs shrink_of_pad(const UOp& r) {  // the part of a PAD's output that is its input
  ShapePairs b;
  const Shape& in = shape_of(r.src(0));
  for (size_t i = 0; i < in.size(); i++)
    b.emplace_back(r.arg_as<ShapePairs>()[i].first, r.arg_as<ShapePairs>()[i].first + in[i]);
  return b;
}

ShapePairs pad_of_shrink(const UOp& r) {  // the padding that puts a SHRINK's output back in place
  ShapePairs p;
  const Shape& in = shape_of(r.src(0));
  for (size_t i = 0; i < in.size(); i++)
    p.emplace_back(r.arg_as<ShapePairs>()[i].first, in[i] - r.arg_as<ShapePairs>()[i].second);
  return p;
}

// A CONST of value 0, seen through the RESHAPE/EXPAND that broadcast it.
bool is_zero(const UOp& u) {
  const UOp* n = &u;
  while (n->op() == Ops::RESHAPE || n->op() == Ops::EXPAND) n = n->src(0).get();
  const ConstValue* v = n->const_value();
  return v && std::visit([](auto x) { return x == 0; }, *v);
}

// where(c, a, b): g goes to a where c holds, to b elsewhere. relu is where(0 < x, x, 0): its mask is read
// from the output as 0 < r, true exactly where 0 < x (NaN included), so a backward that keeps the output
// (stored for the next layer, say) need not keep x too.
Grads where_grad(GradientCtx& c, const UOp& r, const UOpRef& g) {
  UOpRef mask = r.src(0), zero = k(c, g, 0);
  if (mask->op() == Ops::CMPLT && mask->src(1) == r.src(1) && is_zero(*mask->src(0)) && is_zero(*r.src(2)))
    mask = mask->with_src({mask->src(0), r.ref()});
  return {UOpRef(), mask->where(g, zero), mask->where(zero, g)};
}

Grads none(const UOp& r) { return Grads(r.src().size()); }
bool float_cast(const UOp& r) { return r.dtype().is_float() && r.src(0)->dtype().is_float(); }

struct GradRule {
  UPat pat;
  GradFn fn;
  SourceLoc where = SourceLoc::current();
};

// Packs a rule's gradients as SINK(g0, g1, ...) with NOOP for "none".
Rule to_rule(const GradRule& gr) {
  GradFn fn = gr.fn;
  return Rule{gr.pat,
              [fn](Match& m) {
                GradientCtx& c = m.ctx<GradientCtx>();
                Grads gs = fn(c, *m.root(), c.grad);
                std::vector<UOpRef> src;
                for (UOpRef& g : gs) src.push_back(g ? std::move(g) : UOp::make(Ops::NOOP, dtypes::void_));
                return UOp::sink(std::move(src));
              },
              gr.where};
}

using C = GradientCtx;
using R = const UOp&;
using G = const UOpRef&;
constexpr double kLn2 = std::numbers::ln2, kPi2 = std::numbers::pi / 2;

// A rule body over the matched node r, its incoming gradient g and the context c: the source gradients.
#define TG_GRAD(...) \
  [](C& c [[maybe_unused]], R r [[maybe_unused]], G g [[maybe_unused]]) -> Grads { return {__VA_ARGS__}; }

// The parts of a tensor over several devices: each gets its piece of g, gathered on its device (a full copy
// on each device is one value: the first part takes the whole gradient).
Grads multi_grad(C& c, R r, G g) {
  Grads out;
  int64_t axis = r.arg_as<IntVec>().at(0);
  for (size_t i = 0; i < r.src().size(); i++) {
    UOpRef whole = copy_to(g, device_of(c, r.src(i).get()));
    if (axis < 0) {
      out.push_back(i == 0 ? whole : UOpRef());
      continue;
    }
    ShapePairs piece;
    for (const sint& d : shape_of(r.ref())) piece.emplace_back(0, d);
    sint len = shape_of(r.src(i))[static_cast<size_t>(axis)];
    piece[static_cast<size_t>(axis)] = {len * static_cast<int64_t>(i), len * static_cast<int64_t>(i + 1)};
    out.push_back(mv(Ops::SHRINK, whole, piece));
  }
  return out;
}

// clang-format off
const GradRule kRules[] = {
    // ---- unary ----
    {UPat(Ops::NEG), TG_GRAD(neg(g))},                                             // -x
    {UPat(Ops::RECIPROCAL), TG_GRAD(neg(g * r.ref() * r.ref()))},                  // -1/x^2
    {UPat(Ops::SQRT), TG_GRAD(g / (r.ref() * k(c, g, 2)))},                        // 1/(2 sqrt x)
    {UPat(Ops::EXP2), TG_GRAD(g * r.ref() * k(c, g, kLn2))},                       // 2^x ln 2
    {UPat(Ops::LOG2), TG_GRAD(g / (r.src(0) * k(c, g, kLn2)))},                    // 1/(x ln 2)
    {UPat(Ops::SIN), TG_GRAD(g * (k(c, g, kPi2) + neg(r.src(0)))->alu(Ops::SIN))}, // cos x = sin(pi/2 - x)
    {UPat(Ops::TRUNC), TG_GRAD(k(c, g, 0))},                                       // flat almost everywhere
    {UPat(Ops::CAST), TG_GRAD(float_cast(r) ? g->cast(r.src(0)->dtype()) : UOpRef())},  // float to float only
    // ---- binary and ternary ----
    {UPat(Ops::ADD), TG_GRAD(g, g)},                                               // a+b
    {UPat(Ops::MUL), TG_GRAD(g * r.src(1), g * r.src(0))},                         // a*b
    {UPat(Ops::FDIV), TG_GRAD(g / r.src(1), neg(g * r.ref() / r.src(1)))},         // a/b: 1/b, -a/b^2
    {UPat(Ops::MULACC), TG_GRAD(g * r.src(1), g * r.src(0), g)},                   // a*b+c
    {UPat(Ops::POW), pow_grad},
    {UPat(Ops::MAX), max_grad},
    {UPat(Ops::WHERE), where_grad},
    {UPat(OpSet{Ops::CMPLT, Ops::CMPNE, Ops::CMPEQ, Ops::AND, Ops::OR, Ops::XOR, Ops::SHL, Ops::SHR, Ops::IDIV,
                Ops::MOD, Ops::THREEFRY, Ops::BITCAST, Ops::DETACH, Ops::ASSIGN}),
     [](C&, R r, G) { return none(r); }},                                          // not differentiable, or cut
    // ---- reduce ----
    {UPat(Ops::REDUCE_AXIS), reduce_grad},
    // ---- movement: the inverse movement of g ----
    {UPat(Ops::RESHAPE), TG_GRAD(mv(Ops::RESHAPE, g, shape_of(r.src(0))))},
    {UPat(Ops::EXPAND), TG_GRAD(reduce(g, Ops::ADD, expanded_axes(r)))},
    {UPat(Ops::PERMUTE), TG_GRAD(mv(Ops::PERMUTE, g, inverse_permutation(r.arg_as<IntVec>())))},
    {UPat(Ops::PAD), TG_GRAD(mv(Ops::SHRINK, g, shrink_of_pad(r)))},
    {UPat(Ops::SHRINK), TG_GRAD(mv(Ops::PAD, g, pad_of_shrink(r)))},
    {UPat(Ops::FLIP), TG_GRAD(mv(Ops::FLIP, g, r.arg()))},
    // ---- graph ----
    {UPat(Ops::CONTIGUOUS), TG_GRAD(stored(g))},
    {UPat(Ops::COPY), TG_GRAD(copy_to(g, device_of(c, r.src(0).get())), UOpRef())},          // copy back
    {UPat(Ops::MULTI), multi_grad},
};
// clang-format on
#undef TG_GRAD

}  // namespace

const PatternMatcher& pm_gradient() {
  static const PatternMatcher pm = [] {
    std::vector<Rule> rules;
    for (const GradRule& r : kRules) rules.push_back(to_rule(r));
    return PatternMatcher(std::move(rules));
  }();
  return pm;
}

uint64_t CustomGrad::hash() const {
  uint64_t h = std::hash<std::string>{}(name + '\n' + key);
  for (const UOpRef& u : inputs) h = h * 1000003 ^ std::hash<const void*>{}(u.get());
  return h;
}

bool CustomGrad::equals(const OpaqueArg& o) const {
  const auto* c = dynamic_cast<const CustomGrad*>(&o);
  return c != nullptr && c->name == name && c->key == key && c->inputs == inputs;
}

UOpRef custom_gradient(const UOpRef& forward, std::vector<UOpRef> inputs, CustomBackward backward,
                       std::string name, std::string key) {
  auto arg = std::make_shared<const CustomGrad>(std::move(name), std::move(key), std::move(inputs),
                                                std::move(backward));
  return UOp::make(Ops::DETACH, forward->dtype(), {forward}, OpaquePtr(arg));
}

namespace {
// The CustomGrad of a custom-gradient node, or null.
const CustomGrad* custom_of(const UOp* u) {
  if (u->op() != Ops::DETACH || !std::holds_alternative<OpaquePtr>(u->arg())) return nullptr;
  return dynamic_cast<const CustomGrad*>(std::get<OpaquePtr>(u->arg()).get());
}
}  // namespace

std::vector<const UOp*> gradient_toposort(const UOpRef& root, const KeptGraphs& kept) {
  if (kept.empty()) return root->toposort();
  std::vector<const UOp*> out;
  std::unordered_set<const UOp*> seen{root.get()};
  std::vector<std::pair<const UOp*, size_t>> stack{{root.get(), 0}};
  while (!stack.empty()) {
    auto [u, i] = stack.back();
    size_t n = u->src().size();
    auto k = i == n ? kept.find(u) : kept.end();
    if (i > n || (i == n && k == kept.end())) {
      out.push_back(u);
      stack.pop_back();
      continue;
    }
    stack.back().second++;
    const UOp* s = i < n ? u->src(i).get() : k->second.get();
    if (seen.insert(s).second) stack.emplace_back(s, 0);
  }
  return out;
}

std::unordered_map<UOpRef, UOpRef> compute_gradient(const UOpRef& root, const UOpRef& root_grad,
                                                    const std::vector<UOpRef>& targets,
                                                    const KeptGraphs& kept) {
  if (shape_of(root_grad) != shape_of(root))
    throw ShapeError("gradient", "the output gradient must have the output's shape");
  std::unordered_set<const UOp*> target_set;
  for (const UOpRef& t : targets) target_set.insert(t.get());
  // a node is on a path when one of its sources is a target or on a path; DETACH and ASSIGN cut paths,
  // a custom-gradient node leads through its inputs, a kept view through its graph
  std::vector<const UOp*> topo = gradient_toposort(root, kept);
  std::unordered_map<const UOp*, bool> on_path;
  auto leads = [&](const UOp* s) { return target_set.count(s) > 0 || on_path[s]; };
  for (const UOp* u : topo) {
    bool p = false;
    if (const CustomGrad* cg = custom_of(u))
      for (const UOpRef& s : cg->inputs) p = p || leads(s.get());
    else if (auto k = kept.find(u); k != kept.end())
      p = leads(k->second.get());
    else if (u->op() != Ops::DETACH && u->op() != Ops::ASSIGN)
      for (const UOpRef& s : u->src()) p = p || leads(s.get());
    on_path[u] = p;
  }
  std::unordered_map<UOpRef, UOpRef> grads{{root, root_grad}};
  auto add = [&](const UOpRef& s, const UOpRef& v) {
    if (!v || v->op() == Ops::NOOP || !leads(s.get())) return;
    auto [slot, fresh] = grads.try_emplace(s, v);
    if (!fresh) slot->second = slot->second + v;
  };
  GradientCtx ctx;
  for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
    const UOp* u = *it;
    if (!on_path[u]) continue;
    auto g = grads.find(u->ref());
    if (g == grads.end()) continue;
    if (auto k = kept.find(u); k != kept.end()) {
      // the view holds its graph's values; its gradient is stored as the view was, so a graph that reads it
      // in several layouts (each step of a loop) reads the stored values instead of recomputing the steps
      // after it once per layout, which grows exponentially with the steps
      add(k->second, stored(g->second));
      continue;
    }
    if (const CustomGrad* cg = custom_of(u)) {
      std::vector<UOpRef> out = cg->backward(g->second);
      if (out.size() != cg->inputs.size())
        throw ValueError("gradient", fmt::format("{} gave {} gradients for {} inputs", cg->str(), out.size(),
                                                 cg->inputs.size()));
      for (size_t i = 0; i < out.size(); i++) {
        if (out[i] && shape_of(out[i]) != shape_of(cg->inputs[i]))
          throw ShapeError("gradient",
                           fmt::format("{} gave a gradient of the wrong shape for input {}", cg->str(), i));
        add(cg->inputs[i], out[i]);
      }
      continue;
    }
    ctx.grad = g->second;
    UOpRef out = pm_gradient().rewrite(u->ref(), &ctx);
    if (!out || out->op() != Ops::SINK || out->src().size() != u->src().size())
      throw NotSupportedError("gradient", fmt::format("no gradient rule for {}", op_name(u->op())));
    for (size_t i = 0; i < u->src().size(); i++) add(u->src(i), out->src(i));
  }
  if (kept.empty()) return grads;
  // the targets' gradients read a realized value instead of computing its graph again
  std::unordered_map<const UOp*, UOpRef> to_view;
  for (const auto& [view, graph] : kept) to_view.emplace(graph.get(), view->ref());
  std::vector<UOpRef> keys, values;
  for (const UOpRef& t : targets)
    if (auto it = grads.find(t); it != grads.end()) keys.push_back(t), values.push_back(it->second);
  UOpRef read = UOp::sink(values)->substitute(to_view);
  for (size_t i = 0; i < keys.size(); i++) grads[keys[i]] = read->src(i);
  return grads;
}

}  // namespace tg
