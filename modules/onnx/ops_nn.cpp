// Matrix products, convolutions, pools and normalizations, each from Tensor's own matmul/conv/pool ops.
#include <fmt/format.h>

#include <cmath>
#include <functional>
#include <limits>
#include <numeric>

#include "onnx/ops.hpp"

namespace tg::onnx {
namespace {

// A per-channel vector shaped to broadcast along axis 1.
Tensor channel(const Tensor& v, int ndim) {
  Shape s(ndim, 1);
  s[1] = v.shape()[0];
  return v.reshape(s);
}

// A constant weight (input i) in the layout matmul reads, packed once and kept by the runner,
// so that each call does not copy every weight again (Tensor::packed_for_matmul).
Tensor weight_for(const OpContext& c, size_t i, const Tensor& w) {
  if (!c.constant(i) || w.ndim() < 2) return w;
  return c.kept(fmt::format("weight {}", i), [&] { return w.packed_for_matmul(); });
}

std::vector<Value> matmul(const OpContext& c) {
  const Tensor& x = c.in(0);
  return {x.matmul(weight_for(c, 1, c.in(1)))};
}

std::vector<Value> gemm(const OpContext& c) {
  Tensor a = c.attr_int("transA", 0) ? c.in(0).transpose(0, 1) : c.in(0);
  Tensor b = c.attr_int("transB", 0) ? c.in(1).transpose(0, 1) : c.in(1);
  double alpha = c.attr_float("alpha", 1.0), beta = c.attr_float("beta", 1.0);
  Tensor y = a.matmul(weight_for(c, 1, b));
  if (alpha != 1.0) y = y * alpha;
  if (auto bias = c.opt(2)) y = y + (beta != 1.0 ? *bias * beta : *bias);
  return {y};
}

std::vector<Value> conv(const OpContext& c) {
  const Tensor& x = c.in(0);
  const Tensor& w = c.in(1);
  size_t n = static_cast<size_t>(w.ndim() - 2);
  std::vector<int64_t> kernel;
  for (int i = 2; i < w.ndim(); i++) kernel.push_back(dim(w, i));
  auto stride = ints_or(c, "strides", n, 1), dilation = ints_or(c, "dilations", n, 1);
  auto pads = spatial_pads(c, x, kernel, stride, dilation);
  Tensor bias = c.has(2) ? c.in(2) : Tensor();
  return {x.conv(w, bias, stride, Padding(pads), dilation, c.attr_int("group", 1), "Conv")};
}

// Python's floor division: output_shape's padding may be negative (the output grows at an end).
int64_t floor_half(int64_t v) { return v >= 0 ? v / 2 : -((1 - v) / 2); }

std::vector<Value> conv_transpose(const OpContext& c) {
  const Tensor& x = c.in(0);
  const Tensor& w = c.in(1);
  size_t n = static_cast<size_t>(w.ndim() - 2);
  auto stride = ints_or(c, "strides", n, 1), dilation = ints_or(c, "dilations", n, 1);
  auto out_pad = ints_or(c, "output_padding", n, 0);
  std::vector<int64_t> pads = c.attr_ints("pads", std::vector<int64_t>(2 * n, 0));
  if (pads.size() != 2 * n) c.fail(fmt::format("pads has {} values for {} spatial axes", pads.size(), n));
  std::vector<int64_t> full(n);
  for (size_t i = 0; i < n; i++)
    full[i] = (dim(x, static_cast<int>(i + 2)) - 1) * stride[i] +
              (dim(w, static_cast<int>(i + 2)) - 1) * dilation[i] + 1 + out_pad[i];
  std::string auto_pad = c.attr_str("auto_pad", "NOTSET");
  if (c.has_attr("output_shape") || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    std::vector<int64_t> shape = c.attr_ints("output_shape", std::vector<int64_t>{});
    if (shape.size() > n) shape.erase(shape.begin(), shape.end() - static_cast<std::ptrdiff_t>(n));
    if (!shape.empty() && shape.size() != n) c.fail("output_shape does not match the spatial axes");
    for (size_t i = 0; i < n; i++) {
      int64_t want = shape.empty() ? dim(x, static_cast<int>(i + 2)) * stride[i] : shape[i];
      int64_t total = full[i] - want, half = floor_half(total);
      pads[i] = auto_pad == "SAME_UPPER" ? half : total - half;
      pads[i + n] = total - pads[i];
    }
  }
  Tensor y =
      x.conv_transpose(w, Tensor(), stride, 0, out_pad, c.attr_int("group", 1), dilation, "ConvTranspose");
  std::vector<std::pair<int64_t, int64_t>> grow{{0, 0}, {0, 0}};
  ShapePairs bounds{{0, y.shape()[0]}, {0, y.shape()[1]}};
  for (size_t i = 0; i < n; i++) {
    int64_t before = std::max<int64_t>(0, -pads[i]), after = std::max<int64_t>(0, -pads[i + n]);
    grow.push_back({before, after});
    bounds.push_back({pads[i] + before, before + full[i] - pads[i + n]});
  }
  y = y.pad(grow).shrink(bounds);
  if (c.has(2)) y = y + channel(c.in(2), y.ndim());
  return {y};
}

// MaxPool's Indices: the flat position (over N, C and the spatial axes, row-major or, with storage_order 1,
// column-major within a plane) of each window's first maximum.
Tensor max_indices(const OpContext& c, const Tensor& x, const Tensor& windows, const Tensor& y,
                   const std::vector<std::pair<int64_t, int64_t>>& all, const std::vector<int64_t>& kernel,
                   const std::vector<int64_t>& stride, const std::vector<int64_t>& dilation) {
  int nd = x.ndim();
  Shape spatial(x.shape().begin() + 2, x.shape().end()), reversed(spatial.rbegin(), spatial.rend());
  int64_t plane = 1, planes = dim(x, 0) * dim(x, 1), window = 1;
  for (int i = 2; i < nd; i++) plane *= dim(x, i);
  for (int64_t k : kernel) window *= k;
  Tensor flat = Tensor::arange(plane, dtypes::int64, c.device());
  if (c.attr_int("storage_order", 0)) {
    Dims back;
    for (int i = nd - 3; i >= 0; i--) back.push_back(i);
    flat = flat.reshape(reversed).permute(back);
  }
  Shape one(nd, 1), planes_shape(nd, 1);
  std::copy(spatial.begin(), spatial.end(), one.begin() + 2);
  planes_shape[0] = x.shape()[0];
  planes_shape[1] = x.shape()[1];
  flat =
      flat.reshape(one) + (Tensor::arange(planes, dtypes::int64, c.device()) * plane).reshape(planes_shape);
  Shape rows = y.shape();
  rows.push_back(window);
  Tensor positions = flat.pad(all).pool(kernel, stride, dilation, "MaxPool").reshape(rows);
  Tensor first = windows.reshape(rows)
                     .eq(y.unsqueeze(-1))
                     .where(Tensor::arange(window, dtypes::int64, c.device()), window)
                     .min(-1, true);
  return positions.gather(static_cast<int>(rows.size()) - 1, first).squeeze(-1);
}

// MaxPool and AveragePool: pad (with ceil_mode's extra end rows), window, reduce.
std::vector<Value> pool(const OpContext& c, bool is_max) {
  const Tensor& x = c.in(0);
  std::vector<int64_t> kernel = c.attr_ints("kernel_shape");
  size_t n = kernel.size();
  if (static_cast<size_t>(x.ndim()) != n + 2) c.fail("kernel_shape does not match the input's spatial axes");
  auto stride = ints_or(c, "strides", n, 1), dilation = ints_or(c, "dilations", n, 1);
  auto pads = spatial_pads(c, x, kernel, stride, dilation);
  bool ceil_mode = c.attr_int("ceil_mode", 0) != 0;
  std::vector<std::pair<int64_t, int64_t>> all{{0, 0}, {0, 0}};
  for (size_t i = 0; i < n; i++) {
    int64_t in = dim(x, static_cast<int>(i + 2)) + pads[i].first + pads[i].second;
    int64_t span = (kernel[i] - 1) * dilation[i] + 1;
    int64_t out = ceil_mode ? (in - span + stride[i] - 1) / stride[i] + 1 : (in - span) / stride[i] + 1;
    // ceil_mode: the last window must start inside the input or its begin padding.
    if (ceil_mode && (out - 1) * stride[i] >= dim(x, static_cast<int>(i + 2)) + pads[i].first) out--;
    int64_t extra = std::max<int64_t>(0, (out - 1) * stride[i] + span - in);
    all.push_back({pads[i].first, pads[i].second + extra});
  }
  std::vector<int> window_axes;
  for (size_t i = 0; i < n; i++) window_axes.push_back(static_cast<int>(n + 2 + i));
  if (is_max) {
    Number lowest = x.dtype().is_float() ? Number(-std::numeric_limits<double>::infinity())
                                         : Number(std::numeric_limits<int64_t>::min() / 2);
    Tensor windows = x.pad(all, PadMode::CONSTANT, lowest).pool(kernel, stride, dilation, "MaxPool");
    Tensor y = windows.max(window_axes);
    if (c.node().outputs.size() < 2 || c.node().outputs[1].empty()) return {y};
    return {y, max_indices(c, x, windows, y, all, kernel, stride, dilation)};
  }
  Tensor sum = x.pad(all).pool(kernel, stride, dilation, "AveragePool").sum(window_axes);
  // ONNX counts ceil_mode's extra rows as padding too, so every window holds the whole kernel.
  if (c.attr_int("count_include_pad", 0))
    return {sum / static_cast<double>(
                      std::accumulate(kernel.begin(), kernel.end(), int64_t{1}, std::multiplies<>()))};
  Tensor count =
      Tensor::ones(x.shape(), x.dtype(), x.device()).pad(all).pool(kernel, stride, dilation, "AveragePool");
  return {sum / count.sum(window_axes)};
}

// Each value goes to the flat position (over N, C and the spatial axes) its index names.
std::vector<Value> max_unpool(const OpContext& c) {
  const Tensor& x = c.in(0);
  std::vector<int64_t> kernel = c.attr_ints("kernel_shape");
  size_t n = kernel.size();
  if (static_cast<size_t>(x.ndim()) != n + 2) c.fail("kernel_shape does not match the input's spatial axes");
  auto stride = ints_or(c, "strides", n, 1);
  std::vector<int64_t> pads = c.attr_ints("pads", std::vector<int64_t>(2 * n, 0));
  if (pads.size() != 2 * n) c.fail(fmt::format("pads has {} values for {} spatial axes", pads.size(), n));
  std::vector<int64_t> out{dim(x, 0), dim(x, 1)};
  for (size_t i = 0; i < n; i++)
    out.push_back((dim(x, static_cast<int>(i + 2)) - 1) * stride[i] + kernel[i] - pads[i] - pads[i + n]);
  int64_t planes = out[0] * out[1], plane = 1;
  for (size_t i = 2; i < out.size(); i++) plane *= out[i];
  // Scatter within each (n, c) plane: a flat scatter would compare every index with every output element.
  Tensor offset = Tensor::arange(planes, dtypes::int64, c.device()).reshape({planes, 1}) * plane;
  Tensor idx = c.in(1).cast(dtypes::int64).reshape({planes, -1}) - offset;
  Tensor y = Tensor::zeros({planes, plane}, x.dtype(), c.device()).scatter(1, idx, x.reshape({planes, -1}));
  y = y.reshape(Shape(out.begin(), out.end()));
  if (!c.has(2)) return {y};
  // As ONNX's reference: the indices name positions of the default shape, which then grows at the ends.
  std::vector<int64_t> want = c.ints(2);
  if (want.size() != out.size()) c.fail("output_shape does not match the input's rank");
  std::vector<std::pair<int64_t, int64_t>> grow;
  for (size_t i = 0; i < out.size(); i++) {
    if (want[i] < out[i]) c.fail(fmt::format("output_shape {} is below the default {}", want[i], out[i]));
    grow.push_back({0, want[i] - out[i]});
  }
  return {y.pad(grow)};
}

std::vector<int> spatial_axes(const Tensor& x) {
  std::vector<int> out;
  for (int i = 2; i < x.ndim(); i++) out.push_back(i);
  return out;
}

std::vector<Value> batch_norm(const OpContext& c) {
  const Tensor& x = c.in(0);
  if (c.attr_int("training_mode", 0)) c.unsupported("training_mode=1 is not supported");
  double eps = c.attr_float("epsilon", 1e-5);
  int nd = x.ndim();
  Tensor inv = (channel(c.in(4), nd) + eps).rsqrt();
  return {(x - channel(c.in(3), nd)) * inv * channel(c.in(1), nd) + channel(c.in(2), nd)};
}

std::vector<Value> instance_norm(const OpContext& c) {
  const Tensor& x = c.in(0);
  double eps = c.attr_float("epsilon", 1e-5);
  std::vector<int> axes = spatial_axes(x);
  Tensor mean = x.mean(axes, true);
  Tensor var = (x - mean).square().mean(axes, true);
  return {(x - mean) * (var + eps).rsqrt() * channel(c.in(1), x.ndim()) + channel(c.in(2), x.ndim())};
}

std::vector<Value> layer_norm(const OpContext& c) {
  const Tensor& x = c.in(0);
  int axis = normalize_axis(c, c.attr_int("axis", -1), x.ndim());
  double eps = c.attr_float("epsilon", 1e-5);
  std::vector<int> axes;
  for (int i = axis; i < x.ndim(); i++) axes.push_back(i);
  Tensor xf = x.dtype().is_float() && x.dtype().itemsize() < 4 ? x.cast(dtypes::float32) : x;
  Tensor mean = xf.mean(axes, true);
  Tensor inv = ((xf - mean).square().mean(axes, true) + eps).rsqrt();
  Tensor y = ((xf - mean) * inv).cast(x.dtype()) * c.in(1);
  if (c.has(2)) y = y + c.in(2);
  return {y, mean, inv};
}

std::vector<Value> group_norm(const OpContext& c) {
  const Tensor& x = c.in(0);
  int64_t groups = c.attr_int("num_groups");
  double eps = c.attr_float("epsilon", 1e-5);
  int64_t n = dim(x, 0), ch = dim(x, 1);
  if (groups <= 0 || ch % groups != 0)
    c.fail(fmt::format("{} channels do not split into {} groups", ch, groups));
  Tensor g = x.reshape({n, groups, -1});
  Tensor mean = g.mean(2, true);
  Tensor y = ((g - mean) * ((g - mean).square().mean(2, true) + eps).rsqrt()).reshape(x.shape());
  Tensor scale = c.in(1), bias = c.in(2);
  if (c.opset() < 21) {  // scale and bias per group before opset 21
    scale = scale.reshape({groups, 1}).expand({groups, ch / groups}).reshape({ch});
    bias = bias.reshape({groups, 1}).expand({groups, ch / groups}).reshape({ch});
  }
  return {y * channel(scale, x.ndim()) + channel(bias, x.ndim())};
}

std::vector<Value> global_pool(const OpContext& c, bool is_max) {
  const Tensor& x = c.in(0);
  return {is_max ? x.max(spatial_axes(x), true) : x.mean(spatial_axes(x), true)};
}

std::vector<Value> lp_norm(const OpContext& c) {
  const Tensor& x = c.in(0);
  int axis = normalize_axis(c, c.attr_int("axis", -1), x.ndim());
  int64_t p = c.attr_int("p", 2);
  Tensor norm = p == 1 ? x.abs().sum(axis, true) : x.square().sum(axis, true).sqrt();
  return {x / norm};
}

std::vector<Value> mvn(const OpContext& c) {
  const Tensor& x = c.in(0);
  std::vector<int> axes = normalize_axes(c, c.attr_ints("axes", std::vector<int64_t>{0, 2, 3}), x.ndim());
  Tensor mean = x.mean(axes, true);
  return {(x - mean) / ((x - mean).square().mean(axes, true).sqrt() + 1e-9)};
}

std::vector<Value> lrn(const OpContext& c) {
  const Tensor& x = c.in(0);
  int64_t size = c.attr_int("size");
  double alpha = c.attr_float("alpha", 1e-4), beta = c.attr_float("beta", 0.75),
         bias = c.attr_float("bias", 1.0);
  int64_t before = (size - 1) / 2, after = size - 1 - before;
  std::vector<std::pair<int64_t, int64_t>> pads(x.ndim(), {0, 0});
  pads[1] = {before, after};
  // A window of size channels: move channels last, pool, move back.
  Dims to_last, back;
  for (int i = 0; i < x.ndim(); i++)
    if (i != 1) to_last.push_back(i);
  to_last.push_back(1);
  back.push_back(0);
  back.push_back(x.ndim() - 1);
  for (int i = 1; i < x.ndim() - 1; i++) back.push_back(i);
  Tensor sq = x.square().pad(pads).permute(to_last).pool({size}, {1}, {1}, "LRN").sum(-1).permute(back);
  return {x / (sq * (alpha / static_cast<double>(size)) + bias).pow(beta)};
}

std::vector<Value> einsum(const OpContext& c) {
  return {Tensor::einsum(c.attr_str("equation"), c.variadic())};
}

}  // namespace

void add_nn_ops(OpTable& t) {
  t["MatMul"] = matmul;
  t["Gemm"] = gemm;
  t["Conv"] = conv;
  t["ConvTranspose"] = conv_transpose;
  t["MaxPool"] = [](const OpContext& c) -> std::vector<Value> { return pool(c, true); };
  t["AveragePool"] = [](const OpContext& c) -> std::vector<Value> { return pool(c, false); };
  t["MaxUnpool"] = max_unpool;
  t["GlobalMaxPool"] = [](const OpContext& c) -> std::vector<Value> { return global_pool(c, true); };
  t["GlobalAveragePool"] = [](const OpContext& c) -> std::vector<Value> { return global_pool(c, false); };
  t["BatchNormalization"] = batch_norm;
  t["InstanceNormalization"] = instance_norm;
  t["LayerNormalization"] = layer_norm;
  t["GroupNormalization"] = group_norm;
  t["LpNormalization"] = lp_norm;
  t["MeanVarianceNormalization"] = mvn;
  t["LRN"] = lrn;
  t["Einsum"] = einsum;
}

}  // namespace tg::onnx
