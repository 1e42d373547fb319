// Shape rules for tensor-level UOps (docs/ir-stages.md, stage 1). Kernel-level nodes have no shape.
#include <algorithm>
#include <cctype>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "base/error.hpp"
#include "uop/uop.hpp"

namespace tg {

namespace {

std::string shape_str(const IntVec& s) {
  if (s.size() == 1) return fmt::format("({},)", s[0]);
  return fmt::format("({})", fmt::join(s, ","));
}

std::string lower_name(Ops op) {
  std::string s(op_name(op));
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

[[noreturn]] void fail(Ops op, const std::string& what) { throw ShapeError(lower_name(op), what); }

bool negative(const sint& d) { return d.is_number() ? static_cast<int64_t>(d) < 0 : d.bound() < 0; }

// A reshape keeps the number of elements. Between a number and a symbolic count it is checked at the
// variables' bound values: that is how a variable enters (a (64,784) buffer viewed as (n,784), n bound to
// 64).
Shape reshape_rule(const UOp& u, const Shape& in) {
  const Shape& out = u.arg_as<Shape>();
  if (std::any_of(out.begin(), out.end(), negative) || !same_count(prod(out), prod(in)))
    fail(u.op(), fmt::format("cannot reshape {} to {}", shape_str(in), shape_str(out)));
  return out;
}

Shape expand_rule(const UOp& u, const Shape& in) {
  const Shape& out = u.arg_as<Shape>();
  bool ok = out.size() == in.size();
  for (size_t i = 0; ok && i < in.size(); i++) ok = !negative(out[i]) && (in[i] == out[i] || in[i] == 1);
  if (!ok) fail(u.op(), fmt::format("cannot expand {} to {}", shape_str(in), shape_str(out)));
  return out;
}

Shape permute_rule(const UOp& u, const Shape& in) {
  const IntVec& order = u.arg_as<IntVec>();
  std::vector<bool> seen(in.size(), false);
  bool ok = order.size() == in.size();
  for (size_t i = 0; ok && i < order.size(); i++) {
    ok = order[i] >= 0 && order[i] < static_cast<int64_t>(in.size()) && !seen[order[i]];
    if (ok) seen[order[i]] = true;
  }
  if (!ok)
    fail(u.op(), fmt::format("{} is not a permutation of the {} axes of {}", shape_str(order), in.size(),
                             shape_str(in)));
  Shape out(in.size());
  for (size_t i = 0; i < in.size(); i++) out[i] = in[order[i]];
  return out;
}

// Symbolic pads must be non-negative for every value; a shrink must fit for every value (shrink_fits).
Shape pad_shrink_rule(const UOp& u, const Shape& in) {
  const ShapePairs& p = u.arg_as<ShapePairs>();
  const char* kind = u.op() == Ops::PAD ? "padding" : "shrink bounds";
  if (p.size() != in.size())
    fail(u.op(), fmt::format("{} {} given for the {}-d shape {}", p.size(), kind, in.size(), shape_str(in)));
  Shape out(in.size());
  for (size_t i = 0; i < in.size(); i++) {
    const auto& [a, b] = p[i];
    bool ok = u.op() == Ops::PAD ? (a.min() >= 0 && b.min() >= 0) : shrink_fits(a, b, in[i]);
    if (!ok) fail(u.op(), fmt::format("bad {} ({},{}) for axis {} of {}", kind, a, b, i, shape_str(in)));
    out[i] = u.op() == Ops::PAD ? in[i] + a + b : b - a;
  }
  return out;
}

Shape flip_rule(const UOp& u, const Shape& in) {
  const IntVec& f = u.arg_as<IntVec>();
  if (f.size() != in.size() || std::any_of(f.begin(), f.end(), [](int64_t x) { return x != 0 && x != 1; }))
    fail(u.op(), fmt::format("flip mask {} does not fit {}", shape_str(f), shape_str(in)));
  return in;
}

Shape reduce_rule(const UOp& u, const Shape& in) {
  Shape out = in;
  for (int64_t a : u.arg_as<ReduceArg>().axes) {
    if (a < 0 || a >= static_cast<int64_t>(in.size()))
      fail(u.op(), fmt::format("axis {} is out of range for {}", a, shape_str(in)));
    out[a] = 1;
  }
  return out;
}

Shape bitcast_rule(const UOp& u, const Shape& in) {
  size_t from = u.src(0)->dtype().itemsize(), to = u.dtype().itemsize();
  if (from == to) return in;
  if (in.empty() || (in.back() * static_cast<int64_t>(from)) % static_cast<int64_t>(to) != 0)
    fail(u.op(), fmt::format("cannot bitcast {} {} to {}: the last axis must hold whole elements",
                             shape_str(in), u.src(0)->dtype().name(), u.dtype().name()));
  Shape out = in;
  out.back() = out.back() * static_cast<int64_t>(from) / static_cast<int64_t>(to);
  return out;
}

// The whole tensor: the parts' shape, with the split axis as long as all the parts together.
Shape multi_rule(const UOp& u, const Shape& in) {
  int64_t axis = u.arg_as<IntVec>().at(0);
  Shape out = in;
  for (size_t i = 1; i < u.src().size(); i++) {
    const Shape* s = u.src(i)->shape();
    if (s == nullptr || *s != in)
      fail(u.op(), fmt::format("parts have different shapes {} and {}", shape_str(in),
                               s ? shape_str(*s) : std::string("none")));
  }
  if (axis >= static_cast<int64_t>(in.size()))
    fail(u.op(), fmt::format("axis {} is out of range for the parts' shape {}", axis, shape_str(in)));
  if (axis >= 0)
    out[static_cast<size_t>(axis)] = in[static_cast<size_t>(axis)] * static_cast<int64_t>(u.src().size());
  return out;
}

// All sources must have equal shapes; a source without a shape means this is a kernel-level node.
std::shared_ptr<const Shape> same_shape_rule(const UOp& u) {
  const Shape* first = nullptr;
  for (const UOpRef& s : u.src()) {
    const Shape* sh = s->shape();
    if (sh == nullptr) return nullptr;
    if (first == nullptr)
      first = sh;
    else if (*sh != *first)
      fail(u.op(), fmt::format("sources have different shapes {} and {}", shape_str(*first), shape_str(*sh)));
  }
  return first ? std::make_shared<const Shape>(*first) : std::make_shared<const Shape>();
}

std::shared_ptr<const Shape> compute_shape(const UOp& u) {
  auto from_src0 = [&](auto rule) -> std::shared_ptr<const Shape> {
    if (u.src().empty()) return nullptr;
    const Shape* in = u.src(0)->shape();
    if (in == nullptr) return nullptr;
    return std::make_shared<const Shape>(rule(u, *in));
  };
  auto same = [](const UOp&, const Shape& in) { return in; };
  switch (u.op()) {
    case Ops::BUFFER:
      return std::make_shared<const Shape>(Shape{u.arg_as<int64_t>()});
    case Ops::BUFFER_VIEW:
      if (auto* v = std::get_if<IntVec>(&u.arg()); v && !v->empty())
        return std::make_shared<const Shape>(Shape{(*v)[0]});
      return std::make_shared<const Shape>(Shape{u.arg_as<IntPairs>().at(0).first});
    case Ops::CONST:
    case Ops::DEFINE_VAR:
    case Ops::BIND:
      return std::make_shared<const Shape>();
    case Ops::RESHAPE:
      return from_src0(reshape_rule);
    case Ops::EXPAND:
      return from_src0(expand_rule);
    case Ops::PERMUTE:
      return from_src0(permute_rule);
    case Ops::PAD:
    case Ops::SHRINK:
      return from_src0(pad_shrink_rule);
    case Ops::FLIP:
      return from_src0(flip_rule);
    case Ops::REDUCE_AXIS:
      return from_src0(reduce_rule);
    case Ops::BITCAST:
      return from_src0(bitcast_rule);
    case Ops::CAST:
    case Ops::COPY:
    case Ops::CONTIGUOUS:
    case Ops::DETACH:
    case Ops::AFTER:
    case Ops::NOOP:
      return from_src0(same);
    case Ops::ASSIGN:
      return same_shape_rule(u);
    case Ops::MULTI:
      return from_src0(multi_rule);
    default:
      break;
  }
  if (group::ALU.contains(u.op())) return same_shape_rule(u);
  return nullptr;  // graph structure (SINK, DEVICE, UNIQUE, KERNEL) and kernel-level nodes
}

}  // namespace

const Shape* UOp::shape() const {
  if (!shape_done_.load(std::memory_order_acquire)) {
    std::shared_ptr<const Shape> s = compute_shape(*this);
    std::shared_ptr<const Shape> expected;
    // The first stored result wins, so a pointer handed out earlier stays valid.
    shape_.compare_exchange_strong(expected, std::move(s));
    shape_done_.store(true, std::memory_order_release);
  }
  return shape_.load(std::memory_order_acquire).get();
}

sint prod(const Shape& s) {
  sint n = 1;
  for (const sint& d : s) n *= d;
  return n;
}

std::string shape_str(const Shape& s) {
  if (s.size() == 1) return fmt::format("({},)", s[0]);
  return fmt::format("({})", fmt::join(s, ","));
}

}  // namespace tg
