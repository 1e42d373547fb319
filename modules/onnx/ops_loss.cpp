// Losses, quantization and index-heavy operators (NLL, SoftmaxCrossEntropy, (De)QuantizeLinear, integer
// matmul/conv, LpPool, ScatterND, GatherND, Compress, CenterCropPad), each built from Tensor ops.
#include <fmt/format.h>

#include <cmath>
#include <numeric>

#include "onnx/ops.hpp"

namespace tg::onnx {
namespace {

// ---- losses ----

// The loss of log-probabilities lp (N, C, d...) against target (N, d...): -lp[target] * weight[target],
// ignored targets weigh 0 (and index class 0 so the gather stays in range).
Tensor nll(const OpContext& c, const Tensor& lp, const Tensor& target, const std::optional<Tensor>& weight) {
  Tensor t = target.cast(dtypes::int64);
  Tensor keep = Tensor::ones(t.shape(), dtypes::bool_, t.device());
  if (c.has_attr("ignore_index")) keep = t.ne(c.attr_int("ignore_index"));
  Tensor safe = keep.where(t, Tensor(Number(int64_t{0}), dtypes::int64, t.device()));
  Tensor picked = lp.gather(1, safe.unsqueeze(1)).squeeze(1);
  Tensor w = keep.cast(lp.dtype());
  if (weight) w = w * weight->index({safe});
  Tensor loss = picked.neg() * w;
  std::string reduction = c.attr_str("reduction", "mean");
  if (reduction == "none") return loss;
  if (reduction == "sum") return loss.sum();
  if (reduction == "mean") return loss.sum() / w.sum();
  c.fail(fmt::format("reduction '{}' is not none, sum or mean", reduction));
}

std::vector<Value> nll_loss(const OpContext& c) { return {nll(c, c.in(0), c.in(1), c.opt(2))}; }

std::vector<Value> softmax_cross_entropy(const OpContext& c) {
  Tensor lp = c.in(0).log_softmax(1);
  Tensor loss = nll(c, lp, c.in(1), c.opt(2));
  if (c.node().outputs.size() > 1) return {loss, lp};
  return {loss};
}

// ---- quantization ----

// The representable range of an integer dtype, for saturation.
std::pair<double, double> int_range(const OpContext& c, DType d) {
  if (d == dtypes::uint8) return {0, 255};
  if (d == dtypes::int8) return {-128, 127};
  if (d == dtypes::uint16) return {0, 65535};
  if (d == dtypes::int16) return {-32768, 32767};
  if (d == dtypes::int32) return {-2147483648.0, 2147483647.0};
  c.unsupported(fmt::format("quantized type {} is not supported", d.name()));
}

// scale or zero point shaped to broadcast against x: a scalar as is, 1-d along axis, blocked (same rank as
// x) repeated block_size times along axis.
Tensor per_axis(const OpContext& c, const Tensor& v, const Tensor& x) {
  if (v.ndim() == 0 || x.ndim() == 0) return v;
  int axis = normalize_axis(c, c.attr_int("axis", 1), x.ndim());
  int64_t block = c.attr_int("block_size", 0);
  if (block > 0) {
    if (v.ndim() != x.ndim()) c.fail("a blocked scale must have the input's rank");
    Tensor r = v.repeat_interleave(block, axis);
    ShapePairs bounds;
    for (int i = 0; i < x.ndim(); i++) bounds.push_back({0, x.shape()[i]});
    return r.shrink(bounds);
  }
  if (v.ndim() != 1) c.fail("scale and zero point must be scalars or 1-d");
  if (dim(v, 0) == 1) return v.reshape({});
  if (dim(v, 0) != dim(x, axis))
    c.fail(fmt::format("{} scales for an axis of size {}", dim(v, 0), dim(x, axis)));
  Shape s(x.ndim(), 1);
  s[axis] = v.shape()[0];
  return v.reshape(s);
}

// round(x / scale) + zero_point, saturated to the output type (round half to even).
Tensor quantize(const OpContext& c, const Tensor& x, const Tensor& scale, const std::optional<Tensor>& zp,
                DType out) {
  auto [lo, hi] = int_range(c, out);
  Tensor y = (x.cast(dtypes::float32) / scale.cast(dtypes::float32)).round();
  if (zp) y = y + zp->cast(dtypes::float32);
  return y.clamp(Number(lo), Number(hi)).cast(out);
}

std::vector<Value> quantize_linear(const OpContext& c) {
  const Tensor& x = c.in(0);
  std::optional<Tensor> zp = c.opt(2);
  DType out = dtypes::uint8;
  if (zp) {
    out = zp->dtype();
  } else if (c.attr_int("output_dtype", 0) != 0) {
    int64_t t = c.attr_int("output_dtype");
    if (t >= 17 && t != 21 && t != 22 && t <= 23) c.unsupported("float8 outputs are not supported");
    if (t == 21 || t == 22) c.unsupported("int4 outputs are not supported");
    out = dtype_from_onnx(static_cast<int32_t>(t), "output_dtype");
  }
  if (out.is_float()) c.unsupported(fmt::format("{} outputs are not supported", out.name()));
  if (zp) zp = per_axis(c, *zp, x);
  return {quantize(c, x, per_axis(c, c.in(1), x), zp, out)};
}

std::vector<Value> dequantize_linear(const OpContext& c) {
  const Tensor& x = c.in(0);
  const Tensor& scale = c.in(1);
  if (x.dtype().is_float()) c.unsupported(fmt::format("{} inputs are not supported", x.dtype().name()));
  Tensor y = x.cast(dtypes::float32);
  if (auto zp = c.opt(2)) y = y - per_axis(c, *zp, x).cast(dtypes::float32);
  return {(y * per_axis(c, scale, x).cast(dtypes::float32)).cast(scale.dtype())};
}

std::vector<Value> dynamic_quantize_linear(const OpContext& c) {
  Tensor x = c.in(0).cast(dtypes::float32);
  // The range always holds 0, so 0 quantizes exactly.
  Tensor lo = x.min().minimum(0.0), hi = x.max().maximum(0.0);
  Tensor scale = (hi - lo) / 255.0;
  Tensor zp = (lo.neg() / scale).round().clamp(Number(0.0), Number(255.0)).cast(dtypes::uint8);
  return {quantize(c, x, scale, zp, dtypes::uint8), scale, zp};
}

// A per-row (1-d, M values) parameter of a matrix A (..., M, K) becomes (M, 1).
Tensor per_row(const Tensor& v) { return v.ndim() == 1 && dim(v, 0) > 1 ? v.reshape({dim(v, 0), 1}) : v; }

Tensor centered(const Tensor& x, const std::optional<Tensor>& zp, bool rows) {
  Tensor y = x.cast(dtypes::int32);
  if (zp) y = y - (rows ? per_row(*zp) : *zp).cast(dtypes::int32);
  return y;
}

std::vector<Value> matmul_integer(const OpContext& c) {
  Tensor a = centered(c.in(0), c.opt(2), true), b = centered(c.in(1), c.opt(3), false);
  return {a.matmul(b, dtypes::int32)};
}

std::vector<Value> qlinear_matmul(const OpContext& c) {
  Tensor a = centered(c.in(0), c.in(2), true), b = centered(c.in(3), c.in(5), false);
  Tensor acc = a.matmul(b, dtypes::int32).cast(dtypes::float32);
  Tensor scale = per_row(c.in(1)).cast(dtypes::float32) * c.in(4).cast(dtypes::float32);
  // y = round(acc * a_scale * b_scale / y_scale) + y_zero_point
  Tensor y_scale = c.in(6).cast(dtypes::float32);
  return {quantize(c, acc * scale, y_scale, c.in(7), c.in(7).dtype())};
}

std::vector<Value> conv_integer(const OpContext& c) {
  const Tensor& w0 = c.in(1);
  size_t n = static_cast<size_t>(w0.ndim() - 2);
  // Zero points come off before padding, so padded cells count as 0 (as ONNX's reference does).
  Tensor x = centered(c.in(0), c.opt(2), false);
  Tensor w = w0.cast(dtypes::int32);
  if (auto zp = c.opt(3))
    w = w -
        (zp->ndim() == 1 && dim(*zp, 0) > 1 ? zp->reshape({dim(*zp, 0), 1, 1, 1}) : *zp).cast(dtypes::int32);
  std::vector<int64_t> kernel;
  for (int i = 2; i < w.ndim(); i++) kernel.push_back(dim(w, i));
  auto stride = ints_or(c, "strides", n, 1), dilation = ints_or(c, "dilations", n, 1);
  auto pads = spatial_pads(c, x, kernel, stride, dilation);
  return {x.conv(w, Tensor(), stride, Padding(pads), dilation, c.attr_int("group", 1), "ConvInteger")
              .cast(dtypes::int32)};
}

std::vector<Value> lp_pool(const OpContext& c) {
  const Tensor& x = c.in(0);
  std::vector<int64_t> kernel = c.attr_ints("kernel_shape");
  size_t n = kernel.size();
  auto stride = ints_or(c, "strides", n, 1), dilation = ints_or(c, "dilations", n, 1);
  std::vector<std::pair<int64_t, int64_t>> all{{0, 0}, {0, 0}};
  for (const auto& p : spatial_pads(c, x, kernel, stride, dilation)) all.push_back(p);
  double p = static_cast<double>(c.attr_int("p", 2));
  std::vector<int> window;
  for (size_t i = 0; i < n; i++) window.push_back(static_cast<int>(n + 2 + i));
  return {x.abs().pow(p).pad(all).pool(kernel, stride, dilation, "LpPool").sum(window).pow(1.0 / p)};
}

// The row-major offset of each index tuple (the last axis of indices) into data's first k axes.
Tensor flat_offsets(const Tensor& data, const Tensor& indices) {
  int64_t k = static_cast<int64_t>(indices.shape(-1));
  Tensor idx = indices.cast(dtypes::int64);
  Tensor flat =
      Tensor::zeros(Shape(indices.shape().begin(), indices.shape().end() - 1), dtypes::int64, data.device());
  for (int64_t j = 0; j < k; j++) {
    Tensor i = idx.index({ellipsis, j});
    int64_t size = dim(data, static_cast<int>(j));
    flat = flat * size + i.lt(0).where(i + size, i);
  }
  return flat;
}

std::vector<Value> gather_nd(const OpContext& c) {
  const Tensor& x = c.in(0);
  const Tensor& idx = c.in(1);
  if (c.attr_int("batch_dims", 0) != 0) c.unsupported("batch_dims other than 0 is not supported");
  int64_t k = static_cast<int64_t>(idx.shape(-1));
  Shape rows{-1};
  for (int i = static_cast<int>(k); i < x.ndim(); i++) rows.push_back(x.shape()[i]);
  Tensor flat = flat_offsets(x, idx);
  return {x.reshape(rows).index({flat})};
}

std::vector<Value> scatter_nd(const OpContext& c) {
  const Tensor& x = c.in(0);
  const Tensor& idx = c.in(1);
  int64_t k = static_cast<int64_t>(idx.shape(-1));
  Shape rows{-1};
  int64_t rest = 1;
  for (int i = static_cast<int>(k); i < x.ndim(); i++) {
    rows.push_back(x.shape()[i]);
    rest *= dim(x, i);
  }
  Tensor flat = flat_offsets(x, idx).reshape({-1, 1}).expand({-1, rest});
  Tensor data = x.reshape({-1, rest}), updates = c.in(2).reshape({-1, rest});
  std::string reduction = c.attr_str("reduction", "none");
  Tensor out;
  if (reduction == "none") {
    out = data.scatter(0, flat, updates);
  } else {
    std::string_view r = reduction == "add"   ? "sum"
                         : reduction == "mul" ? "prod"
                         : reduction == "max" ? "amax"
                         : reduction == "min" ? "amin"
                                              : (c.fail("reduction must be none, add, mul, max or min"), "");
    out = data.scatter_reduce(0, flat, updates, r, true);
  }
  return {out.reshape(x.shape())};
}

std::vector<Value> compress(const OpContext& c) {
  const Tensor& x = c.in(0);
  std::vector<int64_t> cond = c.ints(1);
  std::vector<int64_t> keep;
  for (size_t i = 0; i < cond.size(); i++)
    if (cond[i]) keep.push_back(static_cast<int64_t>(i));
  Tensor src = c.has_attr("axis") ? x : x.reshape({-1});
  int axis = c.has_attr("axis") ? normalize_axis(c, c.attr_int("axis"), x.ndim()) : 0;
  if (keep.empty()) {
    Shape s = src.shape();
    s[axis] = 0;
    return {Tensor::zeros(s, x.dtype(), x.device())};
  }
  std::vector<Index> index(axis, Slice{});
  index.emplace_back(int64_tensor(keep, x.device()));
  return {src.index(index)};
}

// CenterCropPad: each named axis cropped or zero-padded about its center to the wanted size.
std::vector<Value> center_crop_pad(const OpContext& c) {
  const Tensor& x = c.in(0);
  std::vector<int64_t> want = c.ints(1);
  std::vector<int64_t> axes = c.attr_ints("axes", std::vector<int64_t>{});
  if (axes.empty())
    for (int i = 0; i < x.ndim(); i++) axes.push_back(i);
  std::vector<int> ax = normalize_axes(c, axes, x.ndim());
  if (want.size() != ax.size()) c.fail(fmt::format("{} sizes for {} axes", want.size(), ax.size()));
  std::vector<std::pair<int64_t, int64_t>> pads(x.ndim(), {0, 0});
  for (size_t i = 0; i < ax.size(); i++) {
    // Negative pads crop; the larger share goes to the end either way.
    int64_t diff = want[i] - dim(x, ax[i]);
    int64_t before = diff >= 0 ? diff / 2 : -((-diff) / 2);
    pads[ax[i]] = {before, diff - before};
  }
  return {x.pad(pads)};
}

// Col2Im: the sum over kernel offsets of each offset's columns placed, strided, into the padded image.
std::vector<Value> col2im(const OpContext& c) {
  const Tensor& x = c.in(0);
  std::vector<int64_t> image = c.ints(1), block = c.ints(2);
  size_t n = image.size();
  if (block.size() != n) c.fail("image_shape and block_shape differ in length");
  auto stride = ints_or(c, "strides", n, 1), dilation = ints_or(c, "dilations", n, 1);
  auto pads = ints_or(c, "pads", 2 * n, 0);
  int64_t batch = dim(x, 0);
  int64_t kprod = std::accumulate(block.begin(), block.end(), int64_t{1}, std::multiplies<>());
  int64_t ch = dim(x, 1) / kprod;
  std::vector<int64_t> padded(n), outs(n);
  for (size_t i = 0; i < n; i++) {
    padded[i] = image[i] + pads[i] + pads[i + n];
    outs[i] = (padded[i] - ((block[i] - 1) * dilation[i] + 1)) / stride[i] + 1;
  }
  Shape cols{batch, ch, kprod};
  for (int64_t o : outs) cols.push_back(o);
  Tensor xs = x.reshape(cols);
  Tensor sum;
  for (int64_t kk = 0; kk < kprod; kk++) {
    std::vector<int64_t> off(n);
    int64_t r = kk;
    for (size_t j = n; j-- > 0;) {
      off[j] = r % block[j];
      r /= block[j];
    }
    Tensor part = xs.index({Slice{}, Slice{}, Index(kk)});  // (N, C, *outs)
    // Stride: zeros between columns, by padding a unit axis after each spatial axis.
    Shape spread{batch, ch}, wide{batch, ch};
    std::vector<std::pair<int64_t, int64_t>> sp{{0, 0}, {0, 0}}, place{{0, 0}, {0, 0}};
    for (size_t i = 0; i < n; i++) {
      spread.push_back(outs[i]);
      spread.push_back(1);
      sp.push_back({0, 0});
      sp.push_back({0, stride[i] - 1});
      wide.push_back(outs[i] * stride[i]);
      int64_t begin = off[i] * dilation[i];
      place.push_back({begin, padded[i] - begin - outs[i] * stride[i]});
    }
    part = part.reshape(spread).pad(sp).reshape(wide).pad(place);
    sum = sum.defined() ? sum + part : part;
  }
  std::vector<std::pair<int64_t, int64_t>> crop{{0, 0}, {0, 0}};
  for (size_t i = 0; i < n; i++) crop.push_back({-pads[i], -pads[i + n]});
  return {sum.pad(crop)};
}

}  // namespace

void add_loss_ops(OpTable& t) {
  t["LpPool"] = lp_pool;
  t["GatherND"] = gather_nd;
  t["ScatterND"] = scatter_nd;
  t["Compress"] = compress;
  t["NegativeLogLikelihoodLoss"] = nll_loss;
  t["SoftmaxCrossEntropyLoss"] = softmax_cross_entropy;
  t["QuantizeLinear"] = quantize_linear;
  t["DequantizeLinear"] = dequantize_linear;
  t["DynamicQuantizeLinear"] = dynamic_quantize_linear;
  t["MatMulInteger"] = matmul_integer;
  t["QLinearMatMul"] = qlinear_matmul;
  t["ConvInteger"] = conv_integer;
  t["CenterCropPad"] = center_crop_pad;
  t["Col2Im"] = col2im;
}

}  // namespace tg::onnx
