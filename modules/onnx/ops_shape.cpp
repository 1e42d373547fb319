// Movement and indexing operators: each is reshape/permute/pad/shrink/expand or an index on Tensor.
#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "onnx/ops.hpp"

namespace tg::onnx {
namespace {

// Axes from the attribute before `input_from` (the opset where they became an input), else from input i.
std::optional<std::vector<int64_t>> axes_of(const OpContext& c, size_t i, int64_t input_from) {
  if (c.opset() >= input_from) {
    if (c.has(i)) return c.ints(i);
    return std::nullopt;
  }
  if (c.has_attr("axes")) return c.attr_ints("axes");
  return std::nullopt;
}

// Negative indices count from the end of an axis of size n.
Tensor wrap_index(const Tensor& idx, int64_t n) {
  Tensor i = idx.cast(dtypes::int64);
  return i.lt(0).where(i + n, i);
}

std::vector<Value> reshape(const OpContext& c) {
  const Tensor& x = c.in(0);
  std::vector<int64_t> shape = c.opset() >= 5 ? c.ints(1) : c.attr_ints("shape");
  bool allowzero = c.attr_int("allowzero", 0) != 0;
  Shape out;
  for (size_t i = 0; i < shape.size(); i++) {
    if (shape[i] == 0 && !allowzero) {
      if (static_cast<int>(i) >= x.ndim())
        c.fail(fmt::format("shape entry {} copies a missing dimension", i));
      out.push_back(x.shape()[i]);
    } else {
      out.push_back(shape[i]);
    }
  }
  return {x.reshape(out)};
}

std::vector<Value> transpose(const OpContext& c) {
  const Tensor& x = c.in(0);
  std::vector<int64_t> perm = c.attr_ints("perm", std::vector<int64_t>{});
  Dims order;
  if (perm.empty())
    for (int i = x.ndim() - 1; i >= 0; i--) order.push_back(i);
  else
    for (int a : normalize_axes(c, perm, x.ndim())) order.push_back(a);
  return {x.permute(order)};
}

std::vector<Value> unsqueeze(const OpContext& c) {
  Tensor x = c.in(0);
  auto axes = axes_of(c, 1, 13);
  if (!axes) c.fail("axes are required");
  int64_t rank = x.ndim() + static_cast<int64_t>(axes->size());
  std::vector<int> sorted = normalize_axes(c, *axes, rank);
  std::sort(sorted.begin(), sorted.end());
  for (int a : sorted) x = x.unsqueeze(a);
  return {x};
}

std::vector<Value> squeeze(const OpContext& c) {
  const Tensor& x = c.in(0);
  auto axes = axes_of(c, 1, 13);
  std::vector<int> drop;
  if (axes) {
    drop = normalize_axes(c, *axes, x.ndim());
  } else {
    for (int i = 0; i < x.ndim(); i++)
      if (dim(x, i) == 1) drop.push_back(i);
  }
  Shape out;
  for (int i = 0; i < x.ndim(); i++) {
    bool dropped = std::find(drop.begin(), drop.end(), i) != drop.end();
    if (dropped && dim(x, i) != 1) c.fail(fmt::format("axis {} has size {}, not 1", i, dim(x, i)));
    if (!dropped) out.push_back(x.shape()[i]);
  }
  return {x.reshape(out)};
}

std::vector<Value> concat(const OpContext& c) {
  std::vector<Tensor> xs = c.variadic();
  if (xs.empty()) c.fail("needs at least one input");
  int axis = normalize_axis(c, c.attr_int("axis"), xs[0].ndim());
  std::vector<Tensor> nonempty;
  for (const auto& x : xs)
    if (dim(x, axis) != 0 || xs.size() == 1) nonempty.push_back(x);
  if (nonempty.empty()) nonempty.push_back(xs[0]);
  return {nonempty.size() == 1 ? nonempty[0] : Tensor::cat(nonempty, axis)};
}

std::vector<Value> flatten(const OpContext& c) {
  const Tensor& x = c.in(0);
  int64_t axis = c.attr_int("axis", 1);
  if (axis < 0) axis += x.ndim();
  if (axis < 0 || axis > x.ndim()) c.fail(fmt::format("axis {} is out of range", c.attr_int("axis", 1)));
  int64_t outer = 1;
  for (int i = 0; i < axis; i++) outer *= dim(x, i);
  return {x.reshape({outer, -1})};
}

std::vector<Value> expand(const OpContext& c) {
  Tensor x = c.in(0);
  std::vector<int64_t> shape = c.ints(1);
  size_t rank = std::max<size_t>(shape.size(), x.ndim());
  Shape xs(rank - x.ndim(), 1), out(rank);
  for (const auto& d : x.shape()) xs.push_back(d);
  for (size_t i = 0; i < rank; i++) {
    int64_t want = i + shape.size() >= rank ? shape[i + shape.size() - rank] : 1;
    int64_t have = static_cast<int64_t>(xs[i]);
    if (want != 1 && have != 1 && want != have) c.fail(fmt::format("cannot broadcast {} to {}", have, want));
    out[i] = have == 1 ? want : have;
  }
  return {x.reshape(xs).expand(out)};
}

std::vector<Value> tile(const OpContext& c) {
  std::vector<int64_t> reps = c.ints(1);
  return {c.in(0).repeat(Shape(reps.begin(), reps.end()))};
}

std::vector<Value> split(const OpContext& c) {
  const Tensor& x = c.in(0);
  int axis = normalize_axis(c, c.attr_int("axis", 0), x.ndim());
  int64_t n = dim(x, axis);
  std::vector<int64_t> sizes;
  if (c.opset() >= 13 && c.has(1))
    sizes = c.ints(1);
  else if (c.opset() < 13 && c.has_attr("split"))
    sizes = c.attr_ints("split");
  if (sizes.empty()) {
    int64_t parts =
        c.has_attr("num_outputs") ? c.attr_int("num_outputs") : static_cast<int64_t>(c.node().outputs.size());
    if (parts <= 0) c.fail("needs at least one output");
    int64_t each = (n + parts - 1) / parts;
    for (int64_t at = 0; at < n; at += each) sizes.push_back(std::min(each, n - at));
    while (static_cast<int64_t>(sizes.size()) < parts) sizes.push_back(0);
  }
  if (std::accumulate(sizes.begin(), sizes.end(), int64_t{0}) != n)
    c.fail(fmt::format("split sizes add up to {}, the axis has {}",
                       std::accumulate(sizes.begin(), sizes.end(), int64_t{0}), n));
  std::vector<Value> out;
  int64_t at = 0;
  for (int64_t s : sizes) {
    ShapePairs bounds;
    for (int i = 0; i < x.ndim(); i++)
      bounds.push_back(i == axis ? std::pair<sint, sint>{at, at + s}
                                 : std::pair<sint, sint>{0, x.shape()[i]});
    out.push_back(x.shrink(bounds));
    at += s;
  }
  return out;
}

std::vector<Value> slice(const OpContext& c) {
  const Tensor& x = c.in(0);
  std::vector<int64_t> starts, ends, axes, steps;
  if (c.opset() >= 10) {
    starts = c.ints(1);
    ends = c.ints(2);
    if (c.has(3)) axes = c.ints(3);
    if (c.has(4)) steps = c.ints(4);
  } else {
    starts = c.attr_ints("starts");
    ends = c.attr_ints("ends");
    axes = c.attr_ints("axes", std::vector<int64_t>{});
  }
  if (ends.size() != starts.size()) c.fail("starts and ends differ in length");
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); i++) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  std::vector<int> ax = normalize_axes(c, axes, x.ndim());
  std::vector<Index> idx(x.ndim(), Slice{});
  for (size_t i = 0; i < ax.size(); i++) {
    if (steps[i] == 0) c.fail("a step is 0");
    idx[ax[i]] = Slice{starts[i], ends[i], steps[i]};  // Python's clamping is ONNX's
  }
  return {x.index(idx)};
}

std::vector<Value> pad(const OpContext& c) {
  const Tensor& x = c.in(0);
  std::vector<int64_t> pads = c.opset() >= 11 ? c.ints(1) : c.attr_ints(c.opset() >= 2 ? "pads" : "paddings");
  std::string mode = c.attr_str("mode", "constant");
  double value = c.opset() >= 11 ? (c.has(2) ? c.floats(2).at(0) : 0.0) : c.attr_float("value", 0.0);
  std::vector<int64_t> axes;
  if (c.opset() >= 18 && c.has(3))
    axes = c.ints(3);
  else
    for (int i = 0; i < x.ndim(); i++) axes.push_back(i);
  std::vector<int> ax = normalize_axes(c, axes, x.ndim());
  if (pads.size() != 2 * ax.size()) c.fail(fmt::format("{} pads for {} axes", pads.size(), ax.size()));
  std::vector<std::pair<int64_t, int64_t>> pairs(x.ndim(), {0, 0});
  for (size_t i = 0; i < ax.size(); i++) pairs[ax[i]] = {pads[i], pads[i + ax.size()]};
  PadMode m = mode == "constant"  ? PadMode::CONSTANT
              : mode == "reflect" ? PadMode::REFLECT
              : mode == "edge"    ? PadMode::REPLICATE
              : mode == "wrap"
                  ? PadMode::CIRCULAR
                  : (c.fail(fmt::format("mode '{}' is not constant, reflect, edge or wrap", mode)),
                     PadMode::CONSTANT);
  Number fill = x.dtype().is_float() ? Number(value) : Number(static_cast<int64_t>(value));
  return {x.pad(pairs, m, fill)};
}

std::vector<Value> gather(const OpContext& c) {
  const Tensor& x = c.in(0);
  int axis = normalize_axis(c, c.attr_int("axis", 0), x.ndim());
  Tensor idx = wrap_index(c.in(1), dim(x, axis));
  std::vector<Index> index(axis, Slice{});
  index.emplace_back(idx.ndim() == 0 ? idx.reshape({1}) : idx);
  Tensor out = x.index(index);
  if (idx.ndim() == 0) out = out.squeeze(axis);
  return {out};
}

std::vector<Value> gather_elements(const OpContext& c) {
  const Tensor& x = c.in(0);
  int axis = normalize_axis(c, c.attr_int("axis", 0), x.ndim());
  return {x.gather(axis, wrap_index(c.in(1), dim(x, axis)))};
}

std::vector<Value> scatter_elements(const OpContext& c) {
  const Tensor& x = c.in(0);
  int axis = normalize_axis(c, c.attr_int("axis", 0), x.ndim());
  Tensor idx = wrap_index(c.in(1), dim(x, axis));
  std::string reduction = c.attr_str("reduction", "none");
  if (reduction == "none") return {x.scatter(axis, idx, c.in(2))};
  std::string_view r = reduction == "add"   ? "sum"
                       : reduction == "mul" ? "prod"
                       : reduction == "max" ? "amax"
                       : reduction == "min" ? "amin"
                                            : (c.fail("reduction must be none, add, mul, max or min"), "");
  return {x.scatter_reduce(axis, idx, c.in(2), r, true)};
}

std::vector<Value> depth_to_space(const OpContext& c) {
  const Tensor& x = c.in(0);
  int64_t b = c.attr_int("blocksize");
  int64_t n = dim(x, 0), ch = dim(x, 1), h = dim(x, 2), w = dim(x, 3);
  if (c.attr_str("mode", "DCR") == "DCR")
    return {x.reshape({n, b, b, ch / (b * b), h, w})
                .permute({0, 3, 4, 1, 5, 2})
                .reshape({n, ch / (b * b), h * b, w * b})};
  return {x.reshape({n, ch / (b * b), b, b, h, w})
              .permute({0, 1, 4, 2, 5, 3})
              .reshape({n, ch / (b * b), h * b, w * b})};
}

std::vector<Value> space_to_depth(const OpContext& c) {
  const Tensor& x = c.in(0);
  int64_t b = c.attr_int("blocksize");
  int64_t n = dim(x, 0), ch = dim(x, 1), h = dim(x, 2), w = dim(x, 3);
  return {x.reshape({n, ch, h / b, b, w / b, b})
              .permute({0, 3, 5, 1, 2, 4})
              .reshape({n, ch * b * b, h / b, w / b})};
}

std::vector<Value> trilu(const OpContext& c) {
  int64_t k = c.has(1) ? c.ints(1).at(0) : 0;
  return {c.attr_int("upper", 1) ? c.in(0).triu(k) : c.in(0).tril(k)};
}

std::vector<Value> one_hot(const OpContext& c) {
  const Tensor& idx = c.in(0);
  int64_t depth = static_cast<int64_t>(c.floats(1).at(0));
  Tensor values = c.in(2);
  int axis = normalize_axis(c, c.attr_int("axis", -1), idx.ndim() + 1);
  Tensor i = idx.cast(dtypes::int64);
  i = i.lt(0).where(i + depth, i).unsqueeze(-1);
  Tensor hot = i.eq(Tensor::arange(depth, dtypes::int64, c.device()));
  Tensor out = hot.where(values[1], values[0]);
  Dims order;
  for (int d = 0; d < idx.ndim(); d++) order.push_back(d);
  order.insert(order.begin() + axis, idx.ndim());
  return {out.permute(order)};
}

std::vector<Value> nonzero(const OpContext& c) {
  return {c.in(0).nonzero().cast(dtypes::int64).transpose(0, 1)};
}

// Each batch entry's first sequence_lens[b] steps reversed along the time axis, the rest kept.
std::vector<Value> reverse_sequence(const OpContext& c) {
  const Tensor& x = c.in(0);
  int batch = normalize_axis(c, c.attr_int("batch_axis", 1), x.ndim());
  int time = normalize_axis(c, c.attr_int("time_axis", 0), x.ndim());
  if (batch == time || batch > 1 || time > 1) c.fail("batch_axis and time_axis must be 0 and 1");
  Shape lens_shape(x.ndim(), 1), steps_shape(x.ndim(), 1);
  lens_shape[batch] = x.shape()[batch];
  steps_shape[time] = x.shape()[time];
  Tensor lens = c.in(1).cast(dtypes::int64).reshape(lens_shape);
  Tensor t = Tensor::arange(dim(x, time), dtypes::int64, c.device()).reshape(steps_shape);
  Tensor src = t.lt(lens).where(lens - 1 - t, t).expand(x.shape());
  return {x.gather(time, src)};
}

}  // namespace

void add_shape_ops(OpTable& t) {
  t["Reshape"] = reshape;
  t["Transpose"] = transpose;
  t["Unsqueeze"] = unsqueeze;
  t["Squeeze"] = squeeze;
  t["Concat"] = concat;
  t["Flatten"] = flatten;
  t["Expand"] = expand;
  t["Tile"] = tile;
  t["Split"] = split;
  t["Slice"] = slice;
  t["Pad"] = pad;
  t["Gather"] = gather;
  t["GatherElements"] = gather_elements;
  t["ScatterElements"] = scatter_elements;
  t["Scatter"] = scatter_elements;
  t["DepthToSpace"] = depth_to_space;
  t["SpaceToDepth"] = space_to_depth;
  t["Trilu"] = trilu;
  t["OneHot"] = one_hot;
  t["NonZero"] = nonzero;
  t["ReverseSequence"] = reverse_sequence;
}

}  // namespace tg::onnx
