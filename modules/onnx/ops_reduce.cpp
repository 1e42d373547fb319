// Reductions and the ops that scan or rank along an axis: Reduce*, ArgMax/ArgMin, CumSum, TopK, the
// softmax family and Hardmax. Outputs keep the input's dtype; indices are int64.
#include <fmt/format.h>

#include <algorithm>

#include "onnx/ops.hpp"

namespace tg::onnx {
namespace {

// The axes a Reduce* node reduces over: an attribute until the opset that made them an input (13 for
// ReduceSum, 18 for the others). std::nullopt is "every axis"; an empty list is a no-op.
std::optional<std::vector<int>> reduce_axes(const OpContext& c, const Tensor& x, int64_t input_since) {
  std::vector<int64_t> axes;
  if (c.opset() >= input_since) {
    if (c.has(1)) axes = c.ints(1);
  } else {
    axes = c.attr_ints("axes", std::vector<int64_t>{});
  }
  if (!axes.empty()) return normalize_axes(c, axes, x.ndim());
  if (c.opset() >= input_since && c.attr_int("noop_with_empty_axes", 0)) return std::vector<int>{};
  return std::nullopt;
}

struct ReduceSpec {
  Tensor (*pre)(const Tensor&);                        // applied to each element first
  Tensor (*reduce)(const Tensor&, const Axes&, bool);  // the reduction
  Tensor (*post)(const Tensor&);                       // applied to the result
  bool noop_keeps_pre;  // with noop_with_empty_axes: ONNX's reference returns pre(x) (SumSquare) or x
};

Tensor same(const Tensor& x) { return x; }
Tensor sum(const Tensor& x, const Axes& a, bool keep) { return x.sum(a, keep); }
Tensor prod(const Tensor& x, const Axes& a, bool keep) { return x.prod(a, keep); }
Tensor max(const Tensor& x, const Axes& a, bool keep) { return x.max(a, keep); }
Tensor min(const Tensor& x, const Axes& a, bool keep) { return x.min(a, keep); }
Tensor mean(const Tensor& x, const Axes& a, bool keep) { return x.mean(a, keep); }
Tensor logsumexp(const Tensor& x, const Axes& a, bool keep) { return x.logsumexp(a, keep); }

OpFn reduce_op(ReduceSpec r, int64_t input_since) {
  return [r, input_since](const OpContext& c) -> std::vector<Value> {
    const Tensor& x = c.in(0);
    std::optional<std::vector<int>> axes = reduce_axes(c, x, input_since);
    if (axes && axes->empty()) return {r.noop_keeps_pre ? r.pre(x).cast(x.dtype()) : x};
    bool keep = c.attr_int("keepdims", 1) != 0;
    // narrow floats accumulate in float32
    bool narrow = x.dtype() == dtypes::float16 || x.dtype() == dtypes::bfloat16;
    Tensor xs = narrow ? x.cast(dtypes::float32) : x;
    Tensor out = r.reduce(r.pre(xs), axes ? Axes(*axes) : Axes(), keep);
    return {r.post(out).cast(x.dtype())};
  };
}

void add_reductions(OpTable& t) {
  auto abs_of = [](const Tensor& x) { return x.abs(); };
  auto square = [](const Tensor& x) { return x * x; };
  auto sqrt_of = [](const Tensor& x) { return x.sqrt(); };
  auto log_of = [](const Tensor& x) { return x.log(); };
  t["ReduceSum"] = reduce_op({same, sum, same, false}, 13);
  t["ReduceMean"] = reduce_op({same, mean, same, false}, 18);
  t["ReduceMax"] = reduce_op({same, max, same, false}, 18);
  t["ReduceMin"] = reduce_op({same, min, same, false}, 18);
  t["ReduceProd"] = reduce_op({same, prod, same, false}, 18);
  t["ReduceL1"] = reduce_op({abs_of, sum, same, false}, 18);
  t["ReduceL2"] = reduce_op({square, sum, sqrt_of, false}, 18);
  t["ReduceSumSquare"] = reduce_op({square, sum, same, true}, 18);
  t["ReduceLogSum"] = reduce_op({same, sum, log_of, false}, 18);
  t["ReduceLogSumExp"] = reduce_op({same, logsumexp, same, false}, 18);
}

// ArgMax/ArgMin; select_last_index picks the last of equal extremes, found as the first in the flipped axis.
OpFn arg_op(bool is_max) {
  return [is_max](const OpContext& c) -> std::vector<Value> {
    const Tensor& x = c.in(0);
    int axis = normalize_axis(c, c.attr_int("axis", 0), x.ndim());
    bool keep = c.attr_int("keepdims", 1) != 0;
    bool last = c.attr_int("select_last_index", 0) != 0;
    Tensor src = last ? x.flip({axis}) : x;
    Tensor idx = (is_max ? src.argmax(axis, keep) : src.argmin(axis, keep)).cast(dtypes::int64);
    if (last) idx = static_cast<int64_t>(x.shape()[axis]) - 1 - idx;
    return {idx};
  };
}

Tensor cumsum(const OpContext& c) {
  const Tensor& x = c.in(0);
  std::vector<int64_t> axis = c.ints(1);
  if (axis.size() != 1) c.fail("axis must hold one value");
  int a = normalize_axis(c, axis[0], x.ndim());
  Tensor r = c.attr_int("reverse", 0) ? x.flip({a}) : x;
  if (c.attr_int("exclusive", 0)) {  // shift by one along the axis: out[i] sums the elements before i
    std::vector<std::pair<int64_t, int64_t>> pads(x.ndim(), {0, 0});
    pads[a] = {1, -1};
    r = r.pad(pads);
  }
  r = r.cumsum(a).cast(x.dtype());
  return c.attr_int("reverse", 0) ? r.flip({a}) : r;
}

std::vector<Value> topk(const OpContext& c) {
  const Tensor& x = c.in(0);
  int64_t k;
  if (c.opset() < 10) {
    k = c.attr_int("k");
  } else {
    std::vector<int64_t> ks = c.ints(1);
    if (ks.size() != 1) c.fail("K must hold one value");
    k = ks[0];
  }
  int axis = normalize_axis(c, c.attr_int("axis", -1), x.ndim());
  if (k < 0 || k > static_cast<int64_t>(x.shape()[axis]))
    c.fail(
        fmt::format("K {} is out of range for an axis of size {}", k, static_cast<int64_t>(x.shape()[axis])));
  // ONNX leaves the order free when sorted=0; the sorted order is one of the allowed ones
  auto [values, indices] = x.topk(k, axis, c.attr_int("largest", 1) != 0);
  return {values, indices.cast(dtypes::int64)};
}

// Softmax, LogSoftmax and Hardmax before opset 13 work on x coerced to 2-d at axis (default 1); from 13
// on, along the axis (default -1).
template <typename F>
OpFn softmax_like(F f) {
  return [f](const OpContext& c) -> std::vector<Value> {
    const Tensor& x = c.in(0);
    if (c.opset() >= 13) return {f(x, normalize_axis(c, c.attr_int("axis", -1), x.ndim()))};
    int axis = normalize_axis(c, c.attr_int("axis", 1), std::max(x.ndim(), 1));
    if (x.ndim() == 0) return {f(x.reshape({1, 1}), 1).reshape({})};
    sint rows = 1;
    for (int i = 0; i < axis; i++) rows *= x.shape()[i];
    return {f(x.reshape({rows, -1}), 1).reshape(x.shape())};
  };
}

Tensor hardmax(const Tensor& x, int axis) {
  int64_t n = static_cast<int64_t>(x.shape()[axis]);
  Shape along(x.ndim(), 1);
  along[axis] = n;
  Tensor positions = Tensor::arange(n, dtypes::int32, x.device()).reshape(along);
  return positions.eq(x.argmax(axis, true)).cast(x.dtype());  // one-hot at the first maximum
}

}  // namespace

void add_reduce_ops(OpTable& t) {
  add_reductions(t);
  t["ArgMax"] = arg_op(true);
  t["ArgMin"] = arg_op(false);
  t["CumSum"] = [](const OpContext& c) -> std::vector<Value> { return {cumsum(c)}; };
  t["TopK"] = topk;
  t["Softmax"] = softmax_like([](const Tensor& x, int axis) { return x.softmax(axis); });
  t["LogSoftmax"] = softmax_like([](const Tensor& x, int axis) { return x.log_softmax(axis); });
  t["Hardmax"] = softmax_like(hardmax);
}

}  // namespace tg::onnx
