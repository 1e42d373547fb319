// Resize and Upsample: per output axis, source coordinates from an arange, integer neighbours and weights,
// then a gather along that axis (separable, one axis at a time).
#include <fmt/format.h>

#include <cmath>

#include "onnx/ops.hpp"

namespace tg::onnx {
namespace {

struct ResizeCfg {
  std::string mode = "nearest", coord = "half_pixel", nearest = "round_prefer_floor";
  double extrapolation = 0.0, cubic_a = -0.75;
  bool exclude_outside = false, antialias = false;
};

// Take index (1-d int, length m) along axis of x.
Tensor take(const Tensor& x, int axis, const Tensor& idx) {
  Shape view(x.ndim(), 1), full = x.shape();
  int64_t m = static_cast<int64_t>(idx.shape()[0]);
  view[axis] = m;
  full[axis] = m;
  return x.gather(axis, idx.cast(dtypes::int64).reshape(view).expand(full));
}

Tensor resize_axis(const OpContext& c, const Tensor& x, int axis, int64_t m, double s, double roi_lo,
                   double roi_hi, const ResizeCfg& cfg) {
  int64_t n = static_cast<int64_t>(x.shape()[axis]);
  double mf = s * static_cast<double>(n);  // the unrounded output length the ONNX formulas use
  Tensor o = Tensor::arange(m, dtypes::float32, c.device());
  Tensor xs = o;
  const std::string& cm = cfg.coord;
  if (cm == "half_pixel") {
    xs = (o + 0.5) / s - 0.5;
  } else if (cm == "half_pixel_symmetric") {
    double adj = static_cast<double>(m) / (s * static_cast<double>(n));
    double off = static_cast<double>(n) / 2.0 * (1.0 - adj);
    xs = (o + 0.5) / s - 0.5 + off;
  } else if (cm == "pytorch_half_pixel") {
    xs = mf > 1 ? (o + 0.5) / s - 0.5 : o * 0.0;
  } else if (cm == "align_corners") {
    xs = mf == 1 ? o * 0.0 : o * (static_cast<double>(n - 1) / (mf - 1));
  } else if (cm == "asymmetric") {
    xs = o / s;
  } else if (cm == "tf_crop_and_resize") {
    double nn = static_cast<double>(n - 1);
    xs = m > 1 ? o * ((roi_hi - roi_lo) * nn / static_cast<double>(m - 1)) + roi_lo * nn
               : o * 0.0 + 0.5 * (roi_lo + roi_hi) * nn;
  } else {
    c.unsupported(fmt::format("coordinate_transformation_mode {}", cm));
  }
  Tensor y;
  if (cfg.antialias && s < 1 && cfg.mode != "nearest") {
    // Downsampling with the kernel stretched by 1/s: a dense weight matrix over inputs extended past both
    // edges (edge values repeat), each row normalized, contracted with the axis.
    int64_t K = static_cast<int64_t>(std::ceil(2.0 / s)) + 1;
    Tensor pos = Tensor::arange(-K, n + K, 1, dtypes::float32, c.device());
    Tensor d = (pos.reshape({1, n + 2 * K}) - xs.reshape({m, 1})).abs() * s;
    Tensor w;
    if (cfg.mode == "linear") {
      w = (1.0 - d).relu();
    } else {
      double a = cfg.cubic_a;
      Tensor near = ((d * (a + 2) - (a + 3)) * d * d) + 1.0;
      Tensor far = ((d * a - 5 * a) * d + 8 * a) * d - 4 * a;
      w = d.le(1).where(near, d.lt(2).where(far, d * 0.0));
    }
    w = w / w.sum(1, true);
    Tensor xe = take(x.cast(dtypes::float32), axis, pos.clamp(0, static_cast<double>(n - 1)));
    Tensor xm = xe.transpose(axis, -1);
    return xm.matmul(w.transpose(0, 1)).transpose(axis, -1).cast(x.dtype());
  }
  if (cfg.mode == "nearest") {
    Tensor i;
    if (cfg.nearest == "round_prefer_floor")
      i = (0.5 - xs).floor().neg();
    else if (cfg.nearest == "round_prefer_ceil")
      i = (xs + 0.5).floor();
    else if (cfg.nearest == "floor")
      i = xs.floor();
    else if (cfg.nearest == "ceil")
      i = xs.ceil();
    else
      c.unsupported(fmt::format("nearest_mode {}", cfg.nearest));
    y = take(x, axis, i.clamp(0, static_cast<double>(n - 1)));
  } else if (cfg.mode == "linear") {
    Tensor xc = cm == "tf_crop_and_resize" ? xs : xs.clamp(0, static_cast<double>(n - 1));
    Tensor f = xc.floor();
    Tensor w = xc - f;
    Tensor i0 = f.clamp(0, static_cast<double>(n - 1)), i1 = (f + 1).clamp(0, static_cast<double>(n - 1));
    Shape view(x.ndim(), 1);
    view[axis] = m;
    Tensor xf = x.cast(dtypes::float32);
    y = take(xf, axis, i0) * (1.0 - w).reshape(view) + take(xf, axis, i1) * w.reshape(view);
    y = y.cast(x.dtype());
  } else if (cfg.mode == "cubic") {
    // Four neighbours floor(x)-1 .. floor(x)+2 with Keys kernel weights; edge indices are clamped.
    Tensor f = xs.floor();
    Tensor t0 = xs - f;
    double a = cfg.cubic_a;
    Shape view(x.ndim(), 1);
    view[axis] = m;
    Tensor xf = x.cast(dtypes::float32);
    std::vector<Tensor> ws;
    std::vector<Tensor> is;
    for (int k = -1; k <= 2; k++) {
      Tensor d = (t0 - static_cast<double>(k)).abs();
      Tensor near = ((d * (a + 2) - (a + 3)) * d * d) + 1.0;
      Tensor far = ((d * a - 5 * a) * d + 8 * a) * d - 4 * a;
      Tensor w = d.le(1).where(near, d.lt(2).where(far, d * 0.0));
      Tensor i = f + static_cast<double>(k);
      if (cfg.exclude_outside) w = i.lt(0).logical_or(i.gt(static_cast<double>(n - 1))).where(w * 0.0, w);
      ws.push_back(w);
      is.push_back(i.clamp(0, static_cast<double>(n - 1)));
    }
    Tensor total = ws[0] + ws[1] + ws[2] + ws[3];
    for (int k = 0; k < 4; k++) {
      Tensor term = take(xf, axis, is[k]) * (ws[k] / total).reshape(view);
      y = k == 0 ? term : y + term;
    }
    y = y.cast(x.dtype());
  } else {
    c.unsupported(fmt::format("mode {}", cfg.mode));
  }
  if (cm == "tf_crop_and_resize") {
    Shape view(x.ndim(), 1);
    view[axis] = m;
    Tensor out = xs.lt(0).logical_or(xs.gt(static_cast<double>(n - 1))).reshape(view);
    y = y.masked_fill(out.expand(y.shape()), cfg.extrapolation);
  }
  return y;
}

// scales / sizes are per axis of x (already expanded from `axes`).
Tensor resize_all(const OpContext& c, Tensor x, std::vector<double> scales, std::vector<int64_t> sizes,
                  const std::vector<double>& roi, const ResizeCfg& cfg) {
  int r = x.ndim();
  for (int a = 0; a < r; a++) {
    int64_t n = static_cast<int64_t>(x.shape()[a]);
    int64_t m =
        sizes.empty() ? static_cast<int64_t>(std::floor(static_cast<double>(n) * scales[a])) : sizes[a];
    double s = sizes.empty() ? scales[a] : static_cast<double>(m) / static_cast<double>(n);
    if (m == n && s == 1.0 && cfg.coord != "tf_crop_and_resize") continue;
    double lo = roi.empty() ? 0.0 : roi[a], hi = roi.empty() ? 1.0 : roi[a + r];
    x = resize_axis(c, x, a, m, s, lo, hi, cfg);
  }
  return x;
}

std::vector<Value> resize(const OpContext& c) {
  Tensor x = c.in(0);
  int r = x.ndim();
  ResizeCfg cfg;
  cfg.mode = c.attr_str("mode", "nearest");
  cfg.antialias = c.attr_int("antialias", 0) != 0;
  cfg.cubic_a = c.attr_float("cubic_coeff_a", -0.75);
  cfg.exclude_outside = c.attr_int("exclude_outside", 0) != 0;
  std::vector<double> scales, roi;
  std::vector<int64_t> sizes;
  if (c.opset() < 11) {
    cfg.coord = "asymmetric";
    cfg.nearest = "floor";
    scales = c.floats(1);
  } else {
    cfg.coord = c.attr_str("coordinate_transformation_mode", "half_pixel");
    cfg.nearest = c.attr_str("nearest_mode", "round_prefer_floor");
    cfg.extrapolation = c.attr_float("extrapolation_value", 0.0);
    if (c.has(1)) roi = c.floats(1);
    if (c.has(2)) scales = c.floats(2);
    if (c.has(3)) sizes = c.ints(3);
  }
  if (!scales.empty() && !sizes.empty()) c.fail("only one of scales and sizes may be given");
  std::vector<int> axes;
  if (c.has_attr("axes"))
    axes = normalize_axes(c, c.attr_ints("axes"), r);
  else
    for (int a = 0; a < r; a++) axes.push_back(a);
  size_t k = axes.size();
  if ((!scales.empty() && scales.size() != k) || (!sizes.empty() && sizes.size() != k))
    c.fail("scales/sizes length does not match the axes");
  if (scales.empty() && sizes.empty()) c.fail("one of scales and sizes is required");
  std::string policy = c.attr_str("keep_aspect_ratio_policy", "stretch");
  if (!sizes.empty() && policy != "stretch") {
    double s = policy == "not_larger" ? 1e300 : 0.0;
    for (size_t i = 0; i < k; i++) {
      double v = static_cast<double>(sizes[i]) / static_cast<double>(x.shape()[axes[i]]);
      s = policy == "not_larger" ? std::min(s, v) : std::max(s, v);
    }
    for (size_t i = 0; i < k; i++)
      sizes[i] = static_cast<int64_t>(std::floor(s * static_cast<double>(x.shape()[axes[i]]) + 0.5));
  }
  std::vector<double> fs(r, 1.0), froi;
  std::vector<int64_t> fz;
  if (!sizes.empty()) {
    fz.resize(r);
    for (int a = 0; a < r; a++) fz[a] = static_cast<int64_t>(x.shape()[a]);
    for (size_t i = 0; i < k; i++) fz[axes[i]] = sizes[i];
  } else {
    for (size_t i = 0; i < k; i++) fs[axes[i]] = scales[i];
  }
  if (cfg.coord == "tf_crop_and_resize") {
    froi.assign(2 * r, 0.0);
    for (int a = 0; a < r; a++) froi[a + r] = 1.0;
    if (roi.size() == 2 * k)
      for (size_t i = 0; i < k; i++) froi[axes[i]] = roi[i], froi[axes[i] + r] = roi[i + k];
  }
  return {resize_all(c, x, fs, fz, froi, cfg)};
}

std::vector<Value> upsample(const OpContext& c) {
  ResizeCfg cfg;
  cfg.mode = c.attr_str("mode", "nearest");
  cfg.coord = "asymmetric";
  cfg.nearest = "floor";
  std::vector<double> scales = c.has(1) ? c.floats(1) : c.attr_floats("scales");
  if (static_cast<int>(scales.size()) != c.in(0).ndim()) c.fail("scales length does not match the rank");
  return {resize_all(c, c.in(0), scales, {}, {}, cfg)};
}

// Normalized [-1, 1] pixel-centre (or corner) coordinates of an axis of n points.
Tensor base_coords(const OpContext& c, int64_t n, bool align) {
  Tensor i = Tensor::arange(n, dtypes::float32, c.device());
  if (align) return n > 1 ? i * (2.0 / static_cast<double>(n - 1)) - 1.0 : i * 0.0;
  return (i * 2.0 + 1.0) / static_cast<double>(n) - 1.0;
}

std::vector<Value> affine_grid(const OpContext& c) {
  const Tensor& theta = c.in(0);
  std::vector<int64_t> size = c.ints(1);
  bool align = c.attr_int("align_corners", 0) != 0;
  int sp = static_cast<int>(size.size()) - 2;
  if (sp != 2 && sp != 3) c.fail("size must have 4 or 5 entries");
  // Base grid (spatial..., sp + 1) holding (x, y[, z], 1): x runs along the last spatial axis.
  Shape sshape(size.begin() + 2, size.end());
  std::vector<Tensor> parts;
  for (int k = 0; k < sp; k++) {
    int ax = sp - 1 - k;  // x is the last axis
    Shape view(sp, 1);
    view[ax] = size[2 + ax];
    parts.push_back(base_coords(c, size[2 + ax], align).reshape(view).expand(sshape));
  }
  parts.push_back(Tensor::ones(sshape, dtypes::float32, c.device()));
  Tensor base = Tensor::stack(parts, sp).reshape({1, -1, sp + 1});        // (1, P, sp+1)
  Tensor out = base.matmul(theta.cast(dtypes::float32).transpose(1, 2));  // (N, P, sp)
  Shape oshape{size[0]};
  for (auto d : sshape) oshape.push_back(d);
  oshape.push_back(sp);
  return {out.reshape(oshape).cast(theta.dtype())};
}

// Reflects x into [lo, hi] (the reference's reflect for padding_mode reflection).
Tensor reflect(const Tensor& x, double lo, double hi) {
  double span = hi - lo;
  if (span <= 0) return x * 0.0;
  Tensor d = (x - lo).abs();
  Tensor flips = (d / span).floor();
  Tensor extra = d - flips * span;
  Tensor even = (flips - (flips / 2.0).floor() * 2.0).eq(0);
  Tensor r = even.where(extra + lo, hi - extra);
  return x.ge(lo).logical_and(x.le(hi)).where(x, r);
}

std::vector<Value> grid_sample(const OpContext& c) {
  const Tensor& x = c.in(0);
  const Tensor& grid = c.in(1);
  std::string mode = c.attr_str("mode", c.opset() >= 20 ? "linear" : "bilinear");
  std::string pad = c.attr_str("padding_mode", "zeros");
  bool align = c.attr_int("align_corners", 0) != 0;
  int sp = x.ndim() - 2;
  if (sp < 1 || grid.ndim() != sp + 2) c.fail("grid rank does not match the input");
  bool linear = mode == "linear" || mode == "bilinear";
  bool cubic = mode == "cubic" || mode == "bicubic";
  if (!linear && !cubic && mode != "nearest") c.unsupported(fmt::format("mode {}", mode));
  int64_t N = static_cast<int64_t>(x.shape()[0]), C = static_cast<int64_t>(x.shape()[1]);
  Shape osp(grid.shape().begin() + 1, grid.shape().end() - 1);
  int64_t P = 1, S = 1;
  for (auto d : osp) P *= static_cast<int64_t>(d);
  std::vector<int64_t> in(sp);
  for (int k = 0; k < sp; k++) S *= (in[k] = static_cast<int64_t>(x.shape()[2 + k]));
  Tensor g = grid.cast(dtypes::float32).reshape({N, P, sp});
  // Per input axis k the coordinate is grid component sp-1-k (x indexes the last axis).
  std::vector<Tensor> coords;
  for (int k = 0; k < sp; k++) {
    double n = static_cast<double>(in[k]);
    Tensor u = g.shrink({{0, N}, {0, P}, {sp - 1 - k, sp - k}}).reshape({N, 1, P});
    u = align ? (u + 1.0) * ((n - 1) / 2.0) : ((u + 1.0) * n - 1.0) / 2.0;
    // Cubic pads each neighbour's index instead (below), as the reference does.
    if (cubic) {
      if (pad != "zeros" && pad != "border" && pad != "reflection")
        c.unsupported(fmt::format("padding_mode {}", pad));
    } else if (pad == "border")
      u = u.clamp(0, n - 1);
    else if (pad == "reflection")
      u = align ? reflect(u, 0, n - 1) : reflect(u, -0.5, n - 0.5).clamp(0, n - 1);
    else if (pad != "zeros")
      c.unsupported(fmt::format("padding_mode {}", pad));
    coords.push_back(u);
  }
  Tensor flat = x.cast(dtypes::float32).reshape({N, C, S});
  // Each corner: a neighbour per axis, its weight, and (zeros padding) whether it lies inside.
  int corners = linear ? 1 << sp : 1;
  if (cubic)
    for (int k = 0; k < sp; k++) corners *= 4;
  Tensor out;
  for (int m = 0; m < corners; m++) {
    Tensor lin, w, ok;
    for (int k = 0; k < sp; k++) {
      Tensor i, wk;
      if (linear) {
        Tensor f = coords[k].floor();
        Tensor t = coords[k] - f;
        bool hi = (m >> k) & 1;
        i = hi ? f + 1.0 : f;
        wk = hi ? t : 1.0 - t;
      } else if (cubic) {
        int digit = m;
        for (int j = 0; j < k; j++) digit /= 4;
        double off = static_cast<double>(digit % 4 - 1);
        Tensor f = coords[k].floor();
        Tensor d = (coords[k] - f - off).abs();
        const double a = -0.75;
        Tensor near = ((d * (a + 2) - (a + 3)) * d * d) + 1.0;
        Tensor far = ((d * a - 5 * a) * d + 8 * a) * d - 4 * a;
        wk = d.le(1).where(near, far);
        i = f + off;
        double n = static_cast<double>(in[k]);
        if (pad == "border")
          i = i.clamp(0, n - 1);
        else if (pad == "reflection")
          i = align ? reflect(i, 0, n - 1) : reflect(i, -0.5, n - 0.5).round();
      } else {
        i = coords[k].round();
      }
      Tensor inside = i.ge(0).logical_and(i.le(static_cast<double>(in[k] - 1)));
      Tensor ic = i.clamp(0, static_cast<double>(in[k] - 1));
      lin = k == 0 ? ic : lin * static_cast<double>(in[k]) + ic;
      ok = k == 0 ? inside : ok.logical_and(inside);
      if (linear || cubic) w = k == 0 ? wk : w * wk;
    }
    Tensor v = flat.gather(2, lin.cast(dtypes::int64).expand({N, C, P}));
    v = ok.where(v, v * 0.0);
    Tensor term = linear || cubic ? v * w : v;
    out = m == 0 ? term : out + term;
  }
  Shape oshape{N, C};
  for (auto d : osp) oshape.push_back(d);
  return {out.reshape(oshape).cast(x.dtype())};
}

}  // namespace

void add_resize_ops(OpTable& t) {
  t["Resize"] = resize;
  t["Upsample"] = upsample;
  t["AffineGrid"] = affine_grid;
  t["GridSample"] = grid_sample;
}

}  // namespace tg::onnx
