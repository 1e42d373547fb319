// Movement ops: RESHAPE, EXPAND, PERMUTE, PAD, SHRINK and FLIP UOps, and everything built from them.
#include <algorithm>
#include <numeric>
#include <optional>

#include <fmt/format.h>

#include "base/error.hpp"
#include "tensor/internal.hpp"

namespace tg {

using detail::shape_str;
using Pairs = std::vector<std::pair<int64_t, int64_t>>;

namespace {

Tensor movement(const Tensor& x, Ops op, Arg arg) {
  return detail::derive(UOp::make(op, x.dtype(), {x.uop()}, std::move(arg)), x, {&x});
}

bool is_minus_one(const sint& d) { return d == -1; }

// s with its one -1 filled in so it holds numel elements, or nullopt when that is impossible.
std::optional<Shape> infer_shape(const sint& numel, Shape s) {
  if (std::count_if(s.begin(), s.end(), is_minus_one) > 1) return std::nullopt;
  sint known = 1;
  for (const sint& d : s) {
    if (d.is_number() && static_cast<int64_t>(d) < -1) return std::nullopt;
    if (!is_minus_one(d)) known *= d;
  }
  auto infer = std::find_if(s.begin(), s.end(), is_minus_one);
  if (infer != s.end()) {
    if (known == 0 || !(numel % known == 0)) return std::nullopt;
    *infer = numel / known;
  }
  if (!same_count(detail::prod(s), numel)) return std::nullopt;
  return s;
}

}  // namespace

Tensor Tensor::reshape(Shape new_shape) const {
  std::optional<Shape> s = infer_shape(numel(), new_shape);
  if (!s)
    throw ShapeError("reshape",
                     fmt::format("cannot reshape {} to {}", shape_str(shape()), shape_str(new_shape)));
  if (*s == shape()) return *this;
  return movement(*this, Ops::RESHAPE, *s);
}

Tensor Tensor::expand(Shape new_shape) const {
  const Shape& old = shape();
  if (new_shape.size() < old.size())
    throw ShapeError("expand", fmt::format("cannot expand {} to {}", shape_str(old), shape_str(new_shape)));
  size_t lead = new_shape.size() - old.size();
  Shape padded(lead, 1);
  padded.insert(padded.end(), old.begin(), old.end());
  for (size_t i = 0; i < new_shape.size(); i++) {
    if (is_minus_one(new_shape[i]) && i >= lead) new_shape[i] = padded[i];
    bool negative = new_shape[i].is_number() && static_cast<int64_t>(new_shape[i]) < 0;
    if (negative || (!(padded[i] == 1) && !(padded[i] == new_shape[i])))
      throw ShapeError("expand", fmt::format("cannot expand {} to {}", shape_str(old), shape_str(new_shape)));
  }
  if (new_shape == old) return *this;
  Tensor x = lead ? reshape(padded) : *this;
  return x.shape() == new_shape ? x : movement(x, Ops::EXPAND, new_shape);
}

Tensor Tensor::permute(Dims order) const {
  IntVec arg;
  std::vector<bool> seen(ndim(), false);
  bool ok = static_cast<int>(order.size()) == ndim();
  for (size_t i = 0; ok && i < order.size(); i++) {
    int a = order[i] < 0 ? order[i] + ndim() : order[i];
    ok = a >= 0 && a < ndim() && !seen[a];
    if (ok) {
      seen[a] = true;
      arg.push_back(a);
    }
  }
  if (!ok)
    throw ShapeError("permute", fmt::format("({}) is not an order of the {} axes of {}",
                                            fmt::join(order, ","), ndim(), shape_str(shape())));
  IntVec identity(ndim());
  std::iota(identity.begin(), identity.end(), 0);
  return arg == identity ? *this : movement(*this, Ops::PERMUTE, arg);
}

// Symbolic bounds must fit at their bound values and for every other value (shrink_fits).
Tensor Tensor::shrink(ShapePairs bounds) const {
  if (static_cast<int>(bounds.size()) != ndim())
    throw ShapeError(
        "shrink", fmt::format("{} bounds for the {}-d shape {}", bounds.size(), ndim(), shape_str(shape())));
  bool identity = true;
  for (int i = 0; i < ndim(); i++) {
    const auto& [b, e] = bounds[i];
    if (!shrink_fits(b, e, shape()[i]))
      throw ShapeError("shrink",
                       fmt::format("bounds ({},{}) do not fit axis {} of {}", b, e, i, shape_str(shape())));
    identity &= b == 0 && e == shape()[i];
  }
  return identity ? *this : movement(*this, Ops::SHRINK, bounds);
}

Tensor Tensor::pad(Pairs padding, PadMode mode, Number value) const {
  if (static_cast<int>(padding.size()) != ndim())
    throw ShapeError(
        "pad", fmt::format("{} pads for the {}-d shape {}", padding.size(), ndim(), shape_str(shape())));
  // negative pads crop first (for reflect/replicate: after, so they see the full data)
  ShapePairs crop;
  Pairs grow;
  for (int i = 0; i < ndim(); i++) {
    auto [b, a] = padding[i];
    crop.emplace_back(std::max<int64_t>(-b, 0), shape()[i] - std::max<int64_t>(-a, 0));
    grow.emplace_back(std::max<int64_t>(b, 0), std::max<int64_t>(a, 0));
  }
  if (mode == PadMode::CONSTANT || mode == PadMode::CIRCULAR) {
    for (auto& [b, e] : crop)
      if (b.bound() > e.bound())
        throw ShapeError("pad", fmt::format("negative padding removes more than {}", shape_str(shape())));
    Tensor x = shrink(crop);
    bool none = std::all_of(grow.begin(), grow.end(), [](auto p) { return p.first == 0 && p.second == 0; });
    if (none) return x;
    if (mode == PadMode::CIRCULAR) {
      for (int i = 0; i < ndim(); i++) {
        int64_t s = x.shape()[i];
        auto [b, a] = grow[i];
        if (b > s || a > s) throw ValueError("pad", "circular padding cannot wrap around more than once");
        if (b) x = cat({detail::shrink_axis(x, i, s - b, s), x}, i);
        if (a) x = cat({x, detail::shrink_axis(x, i, b, b + a)}, i);
      }
      return x;
    }
    Tensor padded = movement(x, Ops::PAD, detail::size_pairs(grow));
    if (value.to_double() == 0) return padded;
    return movement(x.ones_like(dtypes::bool_), Ops::PAD, detail::size_pairs(grow)).where(padded, value);
  }
  Tensor x = *this;
  for (int i = 0; i < ndim(); i++) {
    auto [b, a] = grow[i];
    int64_t s = x.shape()[i];
    if (mode == PadMode::REFLECT && (b >= s || a >= s))
      throw ValueError(
          "pad", fmt::format("reflect padding ({},{}) must be smaller than axis {} of size {}", b, a, i, s));
    std::vector<Tensor> parts;
    if (b)
      parts.push_back(mode == PadMode::REFLECT
                          ? detail::shrink_axis(x, i, 1, b + 1).flip({i})
                          : detail::broadcast_axis(detail::shrink_axis(x, i, 0, 1), i, b));
    parts.push_back(x);
    if (a)
      parts.push_back(mode == PadMode::REFLECT
                          ? detail::shrink_axis(x, i, s - 1 - a, s - 1).flip({i})
                          : detail::broadcast_axis(detail::shrink_axis(x, i, s - 1, s), i, a));
    x = parts.size() == 1 ? x : cat(parts, i);
  }
  ShapePairs after;
  for (int i = 0; i < ndim(); i++)
    after.emplace_back(crop[i].first, x.shape()[i] - (shape()[i] - crop[i].second));
  return x.shrink(after);
}

Tensor Tensor::flip(Dims axes) const {
  IntVec arg(ndim(), 0);
  for (int a : axes) {
    int n = detail::normalize_axis(a, ndim(), "flip");
    if (arg[n]) throw ValueError("flip", fmt::format("axis {} is given twice", a));
    arg[n] = 1;
  }
  return std::all_of(arg.begin(), arg.end(), [](int64_t f) { return f == 0; })
             ? *this
             : movement(*this, Ops::FLIP, arg);
}

Tensor Tensor::transpose(int dim0, int dim1) const {
  Dims order(ndim());
  std::iota(order.begin(), order.end(), 0);
  std::swap(order[detail::normalize_axis(dim0, ndim(), "transpose")],
            order[detail::normalize_axis(dim1, ndim(), "transpose")]);
  return permute(order);
}

Tensor Tensor::flatten(int start_dim, int end_dim) const {
  if (ndim() == 0) return reshape({1});
  int s = detail::normalize_axis(start_dim, ndim(), "flatten"),
      e = detail::normalize_axis(end_dim, ndim(), "flatten");
  if (s > e)
    throw ValueError("flatten", fmt::format("start_dim {} comes after end_dim {}", start_dim, end_dim));
  Shape out(shape().begin(), shape().begin() + s);
  out.push_back(detail::prod(Shape(shape().begin() + s, shape().begin() + e + 1)));
  out.insert(out.end(), shape().begin() + e + 1, shape().end());
  return reshape(out);
}

Tensor Tensor::unflatten(int dim, Shape sizes) const {
  int d = detail::normalize_axis(dim, ndim(), "unflatten");
  Shape out(shape().begin(), shape().begin() + d);
  std::optional<Shape> part = infer_shape(shape()[d], sizes);
  if (!part)
    throw ShapeError("unflatten", fmt::format("cannot split axis {} of {} into {}", d, shape_str(shape()),
                                              shape_str(sizes)));
  out.insert(out.end(), part->begin(), part->end());
  out.insert(out.end(), shape().begin() + d + 1, shape().end());
  return reshape(out);
}

Tensor Tensor::squeeze(std::optional<int> dim) const {
  Shape out;
  int d = dim ? detail::normalize_axis(*dim, std::max(ndim(), 1), "squeeze") : -1;
  for (int i = 0; i < ndim(); i++)
    if (shape()[i] != 1 || (dim && i != d)) out.push_back(shape()[i]);
  return reshape(out);
}

Tensor Tensor::unsqueeze(int dim) const {
  int d = detail::normalize_axis(dim, ndim() + 1, "unsqueeze");
  Shape out = shape();
  out.insert(out.begin() + d, 1);
  return reshape(out);
}

Tensor Tensor::repeat(Shape repeats) const {
  if (static_cast<int>(repeats.size()) < ndim())
    throw ShapeError("repeat", fmt::format("{} repeats for the {}-d shape {}", repeats.size(), ndim(),
                                           shape_str(shape())));
  Shape base(repeats.size() - ndim(), 1), spread, expanded, out;
  base.insert(base.end(), shape().begin(), shape().end());
  for (size_t i = 0; i < base.size(); i++) {
    if (repeats[i] < 0) throw ValueError("repeat", fmt::format("negative repeat count {}", repeats[i]));
    spread.insert(spread.end(), {1, base[i]});
    expanded.insert(expanded.end(), {repeats[i], base[i]});
    out.push_back(repeats[i] * base[i]);
  }
  return reshape(spread).expand(expanded).reshape(out);
}

Tensor Tensor::cat(std::vector<Tensor> tensors, int dim) {
  if (tensors.empty()) throw ValueError("cat", "needs at least one tensor");
  const Tensor& first = tensors[0];
  int d = detail::normalize_axis(dim, first.ndim(), "cat");
  DType dt = first.dtype();
  sint total = 0;
  for (const Tensor& t : tensors) {
    Shape a = first.shape(), b = t.shape();
    bool fits = a.size() == b.size();
    if (fits) a[d] = b[d] = 0;
    if (!fits || a != b)
      throw ShapeError("cat", fmt::format("shapes {} and {} differ outside axis {}", shape_str(first.shape()),
                                          shape_str(t.shape()), d));
    detail::check_same_device(first, t, "cat");
    dt = dtypes::least_upper(dt, t.dtype());
    total += t.shape()[d];
  }
  // every piece padded to the full size with zeros, then summed (OR for bools)
  Tensor out;
  sint offset = 0;
  for (const Tensor& t : tensors) {
    ShapePairs p(static_cast<size_t>(t.ndim()), {0, 0});
    p[d] = {offset, total - offset - t.shape()[d]};
    offset += t.shape()[d];
    bool whole = p[d].first == 0 && p[d].second == 0;
    Tensor piece = whole ? t.cast(dt) : movement(t.cast(dt), Ops::PAD, p);  // sizes may be symbolic
    out = !out.defined() ? piece : dt.is_bool() ? out.logical_or(piece) : out + piece;
  }
  return out;
}

Tensor Tensor::stack(std::vector<Tensor> tensors, int dim) {
  if (tensors.empty()) throw ValueError("stack", "needs at least one tensor");
  int d = detail::normalize_axis(dim, tensors[0].ndim() + 1, "stack");
  for (Tensor& t : tensors) t = t.unsqueeze(d);
  return cat(std::move(tensors), d);
}

std::vector<Tensor> Tensor::split(Shape sizes, int dim) const {
  int d = detail::normalize_axis(dim, ndim(), "split");
  if (std::accumulate(sizes.begin(), sizes.end(), int64_t{0}) != shape()[d])
    throw ShapeError("split", fmt::format("sizes ({}) do not add up to axis {} of {}", fmt::join(sizes, ","),
                                          d, shape_str(shape())));
  std::vector<Tensor> out;
  int64_t at = 0;
  for (int64_t s : sizes) {
    out.push_back(detail::shrink_axis(*this, d, at, at + s));
    at += s;
  }
  return out;
}

std::vector<Tensor> Tensor::split(int64_t size, int dim) const {
  int d = detail::normalize_axis(dim, ndim(), "split");
  if (size <= 0) throw ValueError("split", fmt::format("split size must be positive, got {}", size));
  Shape sizes;
  int64_t len = shape()[d];
  for (int64_t at = 0; at < len; at += size) sizes.push_back(std::min(size, len - at));
  return split(sizes, d);
}

std::vector<Tensor> Tensor::chunk(int64_t chunks, int dim) const {
  if (chunks <= 0) throw ValueError("chunk", fmt::format("chunk count must be positive, got {}", chunks));
  int d = detail::normalize_axis(dim, ndim(), "chunk");
  return split(std::max<int64_t>(1, (shape()[d] + chunks - 1) / chunks), d);
}

namespace detail {

Tensor shrink_axis(const Tensor& x, int axis, sint begin, sint end) {
  ShapePairs b;
  for (int i = 0; i < x.ndim(); i++)
    b.emplace_back(i == axis ? std::pair{begin, end} : std::pair{sint(0), x.shape()[i]});
  return x.shrink(b);
}

Tensor pad_axis_to_max(const Tensor& x, int axis) {
  const sint& n = x.shape()[axis];
  if (n.is_number()) return x;
  ShapePairs p(x.ndim(), {sint(0), sint(0)});
  p[axis].second = n.max() - n;  // n + (max - n) simplifies to the number max
  return movement(x, Ops::PAD, p);
}

Tensor broadcast_axis(const Tensor& x, int axis, int64_t n) {
  Shape s = x.shape();
  s[axis] = n;
  return x.expand(s);
}

Tensor take_every(const Tensor& x, int axis, int64_t step) {
  if (step == 1) return x;
  int64_t len = x.shape()[axis], count = (len + step - 1) / step;
  Pairs p(x.ndim(), {0, 0});
  p[axis] = {0, count * step - len};
  Shape split = x.shape();
  split[axis] = step;
  split.insert(split.begin() + axis, count);
  Tensor y = shrink_axis(x.pad(p).reshape(split), axis + 1, 0, 1);
  split.erase(split.begin() + axis + 1);
  return y.reshape(split);
}

}  // namespace detail

}  // namespace tg
