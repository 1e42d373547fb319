// Convolution, pooling, attention and dropout, built from movement ops, elementwise ops and reduces
// (tinygrad's _pool: sliding windows as one zero-copy view); conv has its own backward rule (dx, dw convs).
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include <fmt/format.h>

#include "base/env.hpp"
#include "base/error.hpp"
#include "tensor/gradient.hpp"
#include "tensor/internal.hpp"

namespace tg {

using detail::shape_str;
using Pairs = std::vector<std::pair<int64_t, int64_t>>;

namespace {

constexpr int64_t kStorePaddedMacs = int64_t{1} << 24;  // direct convs from this many multiplies
constexpr int64_t kPartialElems = int64_t{1} << 20;     // the largest buffer of weight-gradient partials
constexpr int64_t kDwStripBytes = int64_t{1} << 20;     // dy read by one tile of a direct weight gradient

int64_t ceildiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

bool any_padding(const Pairs& pads) {
  return std::any_of(pads.begin(), pads.end(), [](const auto& p) { return p.first != 0 || p.second != 0; });
}

// The padding pairs for x's last pads.size() axes, zero for the leading ones.
Tensor pad_spatial(const Tensor& x, const Pairs& pads, Number value = 0) {
  Pairs all(x.ndim() - pads.size(), {0, 0});
  all.insert(all.end(), pads.begin(), pads.end());
  return x.pad(all, PadMode::CONSTANT, value);
}

std::vector<int> last_axes(int n) {
  std::vector<int> ax(n);
  std::iota(ax.begin(), ax.end(), -n);
  return ax;
}

// Extra padding after each axis so the windows cover a partial last window (PyTorch's ceil_mode: the last
// window must start inside the input or the padding before it).
Pairs apply_ceil_mode(const Shape& in, Pairs pads, const std::vector<int64_t>& k,
                      const std::vector<int64_t>& s, const std::vector<int64_t>& d) {
  for (size_t a = 0; a < k.size(); a++) {
    auto& [pb, pa] = pads[a];
    int64_t i = in[a], span = d[a] * (k[a] - 1) + 1;
    int64_t o = ceildiv(i + pb + pa - span, s[a]) + 1;
    pa += s[a] * (o - 1) + span - (i + pb + pa) - std::max<int64_t>(s[a] * (o - 1) - (pb + i - 1), 0);
  }
  return pads;
}

void check_pool_padding(const Pairs& pads, const std::vector<int64_t>& k, std::string_view op) {
  for (size_t a = 0; a < k.size(); a++)
    if (pads[a].first < 0 || pads[a].second < 0 || pads[a].first > k[a] / 2 || pads[a].second > k[a] / 2)
      throw ValueError(op, fmt::format("padding ({},{}) must be between 0 and half the kernel size {}",
                                       pads[a].first, pads[a].second, k[a]));
}

Tensor max_pool(const Tensor& x, int n, const Sizes& kernel, const Sizes& stride, const Padding& padding,
                const Sizes& dilation, bool ceil_mode, std::string_view op) {
  if (x.ndim() < n + 1)
    throw ShapeError(op, fmt::format("needs at least {} dimensions, got {}", n + 1, shape_str(x.shape())));
  auto k = kernel.resolve(n, op, "kernel_size"), d = dilation.resolve(n, op, "dilation");
  auto s = stride.empty() ? k : stride.resolve(n, op, "stride");
  Pairs pads = padding.resolve(n, k, d, s, op);
  check_pool_padding(pads, k, op);
  Shape in(x.shape().end() - n, x.shape().end());
  if (ceil_mode) pads = apply_ceil_mode(in, pads, k, s, d);
  Number lowest = x.dtype().is_float()  ? Number(-std::numeric_limits<double>::infinity())
                  : x.dtype().is_bool() ? Number(false)
                                        : Number(x.dtype().min_int());
  return pad_spatial(x, pads, lowest).pool(k, s, d, op).max(last_axes(n));
}

Tensor avg_pool(const Tensor& x, int n, const Sizes& kernel, const Sizes& stride, const Padding& padding,
                bool ceil_mode, bool count_include_pad, std::string_view op) {
  if (x.ndim() < n + 1)
    throw ShapeError(op, fmt::format("needs at least {} dimensions, got {}", n + 1, shape_str(x.shape())));
  auto k = kernel.resolve(n, op, "kernel_size");
  std::vector<int64_t> d(n, 1);
  auto s = stride.empty() ? k : stride.resolve(n, op, "stride");
  Pairs reg = padding.resolve(n, k, d, s, op);
  check_pool_padding(reg, k, op);
  Shape in(x.shape().end() - n, x.shape().end());
  Pairs ceil = ceil_mode ? apply_ceil_mode(in, reg, k, s, d) : reg;
  auto windows = [&](const Tensor& t, const Pairs& p) { return pad_spatial(t, p).pool(k, s, d, op); };
  std::vector<int> axes = last_axes(n);
  Tensor xf = detail::to_float(x);
  if (!count_include_pad) return windows(xf, ceil).sum(axes) / windows(xf.ones_like(), ceil).sum(axes);
  if (!ceil_mode) return windows(xf, reg).mean(axes);
  // windows reaching past the padding (ceil mode) divide by the part inside input + padding only
  Pairs extra;
  for (int a = 0; a < n; a++)
    extra.emplace_back(ceil[a].first - reg[a].first, ceil[a].second - reg[a].second);
  return windows(xf, ceil).sum(axes) / windows(pad_spatial(xf, reg).ones_like(), extra).sum(axes);
}

// Whether a direct conv runs channels last: on a CPU device (threads and SIMD, no workgroups) whose
// vectors the output channels per group fill. The Fashion-MNIST CNN's 5x5 forward (20 output columns: as
// vectors along a row, 8 + 8 + 4 lanes) ran 1.7x faster, its input gradient (24 columns) 1.1x.
bool channels_last(const Tensor& x, int64_t rcout) {
  int64_t lanes = detail::cpu_vector_width(x.device());
  return lanes > 0 && rcout % lanes == 0;
}

// Whether a conv whose output rows are `row` long runs direct and channels last instead of over a stored
// window matrix. Short rows left the matmul over the windows a tile of 4 lanes (the CNN's 3x3 convs, rows
// of 8 and 6: 36 columns); channels last, the vectors run along the output channels whatever the row. The
// training step took 0.87-0.93x the time, forward, input and weight gradients of both convs so. Long rows
// keep the window matrix with 8 lanes, a matmul with full tiles (AVX2, W4's rows of 28: 1.6x slower
// direct); with 16 (AVX-512) the direct tile of two vectors by 7 rows runs as fast as the matmul and
// skips the window copy: W4 20-21.7 -> 15-15.9 ms, the training step the same.
bool direct_channels_last(const Tensor& x, int64_t rcout, int64_t row) {
  return (row < 16 || detail::cpu_vector_width(x.device()) >= 16) && channels_last(x, rcout);
}

int64_t window_count(int64_t in, int64_t k, int64_t s, std::pair<int64_t, int64_t> pad, int64_t d) {
  return (in + pad.first + pad.second - d * (k - 1) - 1) / s + 1;
}

// Whether a tensor graph does arithmetic (or reduces), as opposed to viewing buffers and constants.
bool computes(const UOpRef& u) {
  for (const UOp* n : u->toposort())
    if (group::ALU.contains(n->op()) || n->op() == Ops::REDUCE_AXIS) return true;
  return false;
}

// The size of one sample's window matrix: channels * prod(kernel) * prod(out).
int64_t window_elems(const Tensor& x, const std::vector<int64_t>& k, const std::vector<int64_t>& s,
                     const Pairs& pads, const std::vector<int64_t>& d) {
  int64_t e = x.shape()[1];
  for (size_t a = 0; a < k.size(); a++) e *= k[a] * window_count(x.shape()[2 + a], k[a], s[a], pads[a], d[a]);
  return e;
}

// The windows of x as a matrix, (N, groups, Cin/groups * prod(kernel), prod(out)): the conv is then a
// matmul. A view; the caller stores it (in chunks of at most CONV_IM2COL elements) in the layout its matmul
// reads best, packed in strips or else row-major. Row-major without padding, the copy is made before the
// output axes merge, so it walks rows of windows without a div and a mod per element (the 5x5 windows of
// 24x24 inputs: 3.35 -> 1.81 ms); with padding it stays merged (unmerged, the copy of a padded 28x28
// input ran 3x slower).
Tensor im2col(const Tensor& x, const std::vector<int64_t>& k, const std::vector<int64_t>& s,
              const Pairs& pads, const std::vector<int64_t>& d, int64_t groups, int64_t m,
              std::string_view op) {
  int n = static_cast<int>(k.size());
  int64_t rows = x.shape()[1], cols = 1;
  Shape out;
  for (int a = 0; a < n; a++) {
    out.push_back(window_count(x.shape()[2 + a], k[a], s[a], pads[a], d[a]));
    rows *= k[a], cols *= out.back();
  }
  Shape split{x.shape()[0], groups, rows / groups};
  split.insert(split.end(), out.begin(), out.end());
  Tensor w = pad_spatial(x, pads).pool(k, s, d, op);  // (N, C, *out, *kernel)
  Dims order{0, 1};
  for (int a = 0; a < n; a++) order.push_back(2 + n + a);
  for (int a = 0; a < n; a++) order.push_back(2 + a);
  Shape merged{x.shape()[0], groups, rows / groups, cols};
  Tensor view = w.permute(order).reshape(split);
  Tensor packed = detail::matmul_layout(view.reshape(merged), m, false);
  if (packed.uop() != view.reshape(merged).uop()) return packed;
  bool padded = any_padding(pads);
  return padded ? view.reshape(merged).contiguous() : view.contiguous().reshape(merged);
}

// A direct conv's input padded. A big conv's is stored padded: the multiply-reduce reads each value Cout *
// prod(kernel) times, and each read of the view tested its position against the border (the Fashion-MNIST
// CNN's 5x5 input gradient, padded by 4, ran at 64 GFLOPS; the same kernel without borders at 112; W4's
// direct weight gradient 116-164 -> 205-216 GFLOPS). A small one stays a view. The forward and the weight
// gradient build the same node, so they share one stored copy.
Tensor stored_padded(const Tensor& x, const Pairs& pads, int64_t cout, const std::vector<int64_t>& k) {
  int64_t macs = x.numel() * cout;
  for (int64_t v : k) macs *= v;
  Tensor src = pad_spatial(x, pads);
  return any_padding(pads) && macs >= kStorePaddedMacs ? src.contiguous() : src;
}

// The multiply-reduce over sliding windows plus bias: x (N, groups*Cin, *in), weight (Cout, Cin, *k),
// shapes checked. *cols_out: the stored window matrix when there was one for the whole batch.
Tensor conv_windows(const Tensor& xin, const Tensor& weight, const Tensor& bias,
                    const std::vector<int64_t>& s, const Pairs& pads, const std::vector<int64_t>& d,
                    int64_t groups, std::string_view op, Tensor* cols_out = nullptr) {
  int n = weight.ndim() - 2;
  int64_t bs = xin.shape()[0], cout = weight.shape()[0], cin = weight.shape()[1];
  std::vector<int64_t> k(weight.shape().begin() + 2, weight.shape().end());
  // The windows stored, in batch chunks that fit CONV_IM2COL with one matmul per chunk, when they fit
  // whole or the output rows are short: the direct kernel (not channels last) vectorizes along a row, and
  // rows under 16 left its vectors part empty (the Fashion-MNIST CNN's 3x3 input gradients with rows of 8
  // and 10 ran at 24-29 GFLOPS direct; chunked, the step took 0.9x the time). Long rows (20, 24 with 5x5
  // kernels) stay direct: their windows are 25 times the input and the chunked step took 1.3x. Short rows
  // channels last run direct (direct_channels_last).
  Shape final_shape{bs, cout};
  for (int a = 0; a < n; a++)
    final_shape.push_back(window_count(xin.shape()[2 + a], k[a], s[a], pads[a], d[a]));
  int64_t elems = window_elems(xin, k, s, pads, d), row = final_shape.back();
  int64_t fit = elems > 0 ? env::CONV_IM2COL.value() / elems : bs;  // no input channel: nothing to store
  if (bs > 0 && !direct_channels_last(xin, cout / groups, row) && (fit >= bs || (fit >= 1 && row < 16))) {
    Shape ws{1, groups, cout / groups, -1};
    fit = ceildiv(bs, ceildiv(bs, fit));  // equal chunks
    std::vector<Tensor> parts;
    for (int64_t b = 0; b < bs; b += fit) {
      int64_t e = std::min(bs, b + fit);
      Tensor cols =
          im2col(fit < bs ? detail::shrink_axis(xin, 0, b, e) : xin, k, s, pads, d, groups, cout, op);
      if (cols_out && fit >= bs) *cols_out = cols;
      Tensor y = detail::dot(weight.reshape(ws), cols, {}, false);  // (N, groups, Cout/groups, L)
      if (bias.defined()) y = y + bias.reshape({1, groups, cout / groups, 1});
      // in memory as (N, Cout, L): the kernel keeps L as one axis (a vector-wide tile), not 2-d windows
      parts.push_back(y.contiguous());
    }
    Tensor y = parts.size() == 1 ? parts[0] : Tensor::cat(parts, 0).contiguous();
    return y.reshape(final_shape);
  }
  Tensor x = stored_padded(xin, pads, cout, k).pool(k, s, d, op);  // (N, groups*Cin, *out, *kernel)
  Shape out(x.shape().begin() + 2, x.shape().begin() + 2 + n);
  int64_t rcout = cout / groups;
  if (channels_last(xin, rcout)) {
    // (N, *out, groups, Cin, *kernel, 1) times the weights (groups, Cin, *kernel, Cout/groups), summed over
    // Cin and the kernel and stored so: the output channels are the vector axis, each x value broadcast.
    // Then copied back to (N, Cout, *out), with the bias: read through the transposed view, the training
    // step's batchnorm sums took 85 ms instead of 15.
    Dims xorder{0}, worder{0, 2};
    for (int a = 0; a < n; a++) xorder.push_back(3 + a), worder.push_back(3 + a);
    xorder.insert(xorder.end(), {1, 2});
    for (int a = 0; a < n; a++) xorder.push_back(3 + n + a);
    worder.push_back(1);
    Tensor xw = x.unflatten(1, {groups, cin}).permute(xorder).unsqueeze(-1);
    Shape ws(static_cast<size_t>(1 + n), 1);
    ws.insert(ws.end(), {groups, cin});
    ws.insert(ws.end(), k.begin(), k.end());
    ws.push_back(rcout);
    Tensor wt = weight.unflatten(0, {groups, rcout}).permute(worder).contiguous().reshape(ws);
    Dims axes, back{0, n + 1};
    for (int a = 0; a <= n; a++) axes.push_back(n + 2 + a);
    for (int a = 0; a < n; a++) back.push_back(1 + a);
    Shape flat{bs};
    flat.insert(flat.end(), out.begin(), out.end());
    flat.push_back(cout);
    Tensor y = (xw * wt).sum(axes).reshape(flat).contiguous().permute(back);
    if (bias.defined()) {
      Shape bshape{1, cout};
      bshape.resize(2 + n, 1);
      y = y + bias.reshape(bshape);
    }
    return y.contiguous();
  }
  Shape xs{bs, groups, cin, 1}, xe{bs, groups, cin, rcout}, ws{1, groups, rcout};
  for (int64_t v : out) xs.push_back(v), xe.push_back(v), ws.push_back(1);
  for (int64_t v : k) xs.push_back(v), xe.push_back(v);
  ws.push_back(cin);
  ws.insert(ws.end(), k.begin(), k.end());
  Dims order{0, 1, 3};
  for (int a = 0; a < n; a++) order.push_back(4 + a);
  order.push_back(2);
  for (int a = 0; a < n; a++) order.push_back(4 + n + a);
  x = x.reshape(xs).expand(xe).permute(order);  // (N, groups, Cout/groups, *out, Cin/groups, *kernel)
  Tensor y = (x * weight.reshape(ws)).sum(last_axes(n + 1)).reshape(final_shape);
  if (!bias.defined()) return y;
  Shape bshape{1, cout};
  bshape.resize(2 + n, 1);
  return y + bias.reshape(bshape);
}

// dx of a conv: the stride-1 conv of dy with s-1 zeros between its elements, padded so that the output
// has the input's size, by the kernel flipped with its in/out channel axes swapped per group.
Tensor conv_input_grad(const Tensor& dy, const Tensor& w, const Shape& in, const std::vector<int64_t>& s,
                       const Pairs& pads, const std::vector<int64_t>& d, int64_t groups,
                       std::string_view op) {
  int n = w.ndim() - 2;
  Tensor g = dy;
  Shape o(dy.shape().begin() + 2, dy.shape().end());
  bool unit = std::all_of(s.begin(), s.end(), [](int64_t v) { return v == 1; }) &&
              std::all_of(d.begin(), d.end(), [](int64_t v) { return v == 1; });
  int64_t dcols_elems = dy.shape()[0] * w.shape()[1] * groups;
  for (int a = 0; a < n; a++) dcols_elems *= w.shape()[2 + a] * o[a];
  if (unit && dcols_elems <= env::CONV_IM2COL.value() && !direct_channels_last(dy, w.shape()[1], in.back())) {
    // Stride and dilation 1, and the gradient of the window matrix fits CONV_IM2COL: dcols = w^T dy per
    // group, (N, groups, Cin/groups * prod(k), L), a matmul whose output is that matrix; then each window
    // position adds its column back where it came from (col2im), one fused kernel of prod(k) shifted
    // reads. Half the memory traffic of storing the windows of the padded dy (the same size times
    // Cout/Cin) for a matmul over them: W4's dx 11-12 -> 9 ms. (5x5 windows of a big batch stay direct: their
    // col2im alone took 119 ms where the direct kernel takes 130 for all of dx.)
    int64_t bs = dy.shape()[0], cout = w.shape()[0], cin = w.shape()[1], l = 1, kk = 1;
    for (int a = 0; a < n; a++) l *= o[a], kk *= w.shape()[2 + a];
    int64_t rows = cin * kk, rcout = cout / groups;
    Tensor wmat = w.reshape({1, groups, rcout, rows}).transpose(-1, -2);  // (1, groups, rows, Cout/groups)
    Tensor dymat = detail::matmul_layout(dy.reshape({bs, groups, rcout, l}), rows, true);
    Tensor dcols = detail::dot(wmat, dymat, {}, false).contiguous();  // (N, groups, rows, L)
    Shape cs{bs, groups * cin};
    for (int a = 0; a < n; a++) cs.push_back(w.shape()[2 + a]);
    for (int a = 0; a < n; a++) cs.push_back(o[a]);
    dcols = dcols.reshape(cs);
    Tensor sum;
    std::vector<int64_t> at(static_cast<size_t>(n), 0);
    for (int64_t t = 0; t < kk; t++) {
      int64_t r = t;
      for (int a = n - 1; a >= 0; a--) at[a] = r % w.shape()[2 + a], r /= w.shape()[2 + a];
      Tensor part = dcols;
      for (int a = 0; a < n; a++) part = detail::shrink_axis(part, 2, at[a], at[a] + 1).squeeze(2);
      Pairs pp{{0, 0}, {0, 0}};
      for (int a = 0; a < n; a++) pp.emplace_back(at[a], w.shape()[2 + a] - 1 - at[a]);
      part = part.pad(pp);
      sum = sum.defined() ? sum + part : part;
    }
    // back to the input's extent: cut the padding off, or (negative padding cropped the input) add zeros
    Pairs back(2, {0, 0});
    for (int a = 0; a < n; a++) back.emplace_back(-pads[a].first, pads[a].first + in[a] - sum.shape()[2 + a]);
    sum = sum.pad(back);
    // Stored: its consumers (the layers before, backward: pooling and batchnorm) would each repeat the
    // prod(k) shifted reads. The CNN's batchnorm backward sums took 59 ms with them inlined, 25 without.
    return sum.contiguous();
  }
  if (std::any_of(s.begin(), s.end(), [](int64_t v) { return v > 1; })) {
    Shape split{dy.shape()[0], dy.shape()[1]}, joined = split;
    Pairs zeros{{0, 0}, {0, 0}}, cut{{0, dy.shape()[0]}, {0, dy.shape()[1]}};
    for (int a = 0; a < n; a++) {
      split.insert(split.end(), {o[a], 1});
      zeros.insert(zeros.end(), {{0, 0}, {0, s[a] - 1}});
      joined.push_back(o[a] * s[a]);
      cut.emplace_back(0, (o[a] - 1) * s[a] + 1);
    }
    g = g.reshape(split).pad(zeros).reshape(joined).shrink(detail::size_pairs(cut));
  }
  Pairs p;
  for (int a = 0; a < n; a++) {
    int64_t reach = d[a] * (w.shape()[2 + a] - 1);
    p.emplace_back(reach - pads[a].first, in[a] + pads[a].first - (o[a] - 1) * s[a] - 1);
  }
  Dims spatial;
  for (int a = 0; a < n; a++) spatial.push_back(3 + a);
  // in memory (small): the reduce walks it with plain strides, not through the flip and the transpose
  Tensor wt = w.unflatten(0, {groups, -1}).transpose(1, 2).flip(spatial).flatten(0, 1).contiguous();
  return conv_windows(g, wt, Tensor(), std::vector<int64_t>(n, 1), p, d, groups, op);
}

// dw of a conv: every window of x times dy, summed over the batch and the output positions. cols_fwd: the
// forward's window matrix of the whole batch, if it stored one (any layout): read again instead of storing
// the windows a second time.
Tensor conv_weight_grad(const Tensor& x, const Tensor& dy, const std::vector<int64_t>& k,
                        const std::vector<int64_t>& s, const Pairs& pads, const std::vector<int64_t>& d,
                        int64_t groups, std::string_view op, const Tensor& cols_fwd) {
  int n = static_cast<int>(k.size());
  int64_t bs = x.shape()[0], cin = x.shape()[1] / groups, rcout = dy.shape()[1] / groups;
  if (bs == 0 || cin == 0 || rcout == 0) {  // no product at all: the gradient is zero (and no chunk divides)
    Shape ws{rcout * groups, cin};
    ws.insert(ws.end(), k.begin(), k.end());
    return Tensor::zeros(ws, dy.dtype(), dy.device());
  }
  int64_t fit = cols_fwd.defined() ? bs : env::CONV_IM2COL.value() / window_elems(x, k, s, pads, d);
  int64_t row = dy.shape().back();
  // where the forward stored windows (conv_windows)
  if (cols_fwd.defined() || (fit >= 1 && row < 16 && !direct_channels_last(x, rcout, row))) {
    // dw^T = cols @ dy^T, a matmul with the output channels contiguous (dy^T is a small copy), summed over
    // batch chunks whose window matrix fits
    Tensor r;  // (groups, rows, Cout/groups)
    for (int64_t b = 0; b < bs; b += fit) {
      int64_t e = std::min(bs, b + fit);
      Tensor cols = cols_fwd.defined()
                        ? cols_fwd
                        : im2col(detail::shrink_axis(x, 0, b, e), k, s, pads, d, groups, 0, op);
      int64_t rows = cols.shape()[2], l = cols.shape()[3];
      Tensor dyt = detail::shrink_axis(dy, 0, b, e).reshape({e - b, groups, rcout, l}).permute({0, 1, 3, 2});
      dyt = detail::matmul_layout(dyt, rows, true);
      // Summed over samples in groups of c into partials (up to kPartialElems values), then over those:
      // one sample's windows and dy stay in the cache while its tiles are computed, where one reduce over
      // the whole chunk streams them from memory once per tile (W4's dw 8.5-10 -> 7-10 ms, the CNN's
      // 3x3 dws 27-34 -> 16-23 and 28-30 -> 27 ms).
      Tensor prod = cols.reshape({e - b, groups, rows, l, 1}) * dyt.reshape({e - b, groups, 1, l, rcout});
      int64_t nb = e - b, outs = groups * rows * rcout, c = 1;
      while (c < nb && (nb % c != 0 || nb / c * outs > kPartialElems)) c++;
      Tensor part = nb / c > 1
                        ? prod.reshape({nb / c, c, groups, rows, l, rcout}).sum({1, 4}).contiguous().sum(0)
                        : prod.sum({0, 3});
      r = r.defined() ? r + part.contiguous() : part.contiguous();  // one matmul kernel per chunk
    }
    Shape ws{rcout * groups, cin};
    ws.insert(ws.end(), k.begin(), k.end());
    return r.contiguous().permute({0, 2, 1}).reshape(ws);  // stored as computed, then a small copy
  }
  // Direct, as the forward was: dw[g, o, c, *kk] = sum over n, *out of x's window * dy, with dy copied
  // channels last so the output channels are the vector axis (the heuristic's tile: two vectors of
  // them by a row of kernel positions, each x value broadcast). The batch is split in chunks of up to 16
  // samples, each summed into a partial that stays in the cache, then the partials are added. The
  // Fashion-MNIST CNN's second conv (5x5, 32 -> 32, batch 512): 130-180 ms as im2col chunks and matmuls,
  // 65-70 ms this way. Fewer samples where one tile's strip of dy (two vectors of channels at every output
  // position of the chunk) would outgrow kDwStripBytes: W4's 28x28 outputs by 8 samples, not 16 (its dw
  // 17.5 -> 9.3 ms of CPU time; 4 samples 7.2 ms, but the CNN's 5x5 dw ran 15% slower with 8 than 16).
  int64_t per_sample = 4 * std::min<int64_t>(rcout, 32);  // dy bytes of one tile's columns
  for (int a = 0; a < n; a++) per_sample *= dy.shape()[2 + a].max();
  // the divisor of the batch from 4 to 16 nearest below `want`, else above it; none: one reduce
  int64_t want = std::clamp<int64_t>(kDwStripBytes / per_sample, 4, 16), chunk = bs;
  for (int64_t c = want; c >= 4 && chunk == bs; c--)
    if (bs % c == 0) chunk = c;
  for (int64_t c = want + 1; c <= 16 && chunk == bs; c++)
    if (bs % c == 0) chunk = c;
  Shape xs{bs / chunk, chunk}, gs{bs / chunk, chunk};
  Dims xorder{0}, gorder{0};
  for (int a = 0; a < n; a++) {
    xs.push_back(dy.shape()[2 + a]), gs.push_back(dy.shape()[2 + a]);
    xorder.push_back(3 + a), gorder.push_back(3 + a);
  }
  xorder.insert(xorder.end(), {1, 2}), gorder.insert(gorder.end(), {1, 2});
  for (int a = 0; a < n; a++) xorder.push_back(3 + n + a);
  // x's windows (N, groups*Cin, *out, *kernel) -> (N, groups, Cin, *out, *kernel) -> (N, *out, groups, Cin,
  // *kernel) -> chunked, with an axis for the output channels
  Tensor xw =
      stored_padded(x, pads, rcout * groups, k).pool(k, s, d, op).unflatten(1, {groups, cin}).permute(xorder);
  Tensor dyt = dy.unflatten(1, {groups, rcout}).permute(gorder).contiguous();  // (N, *out, groups, Cout/g)
  xs.insert(xs.end(), {groups, cin}), gs.insert(gs.end(), {groups, 1});
  xs.insert(xs.end(), k.begin(), k.end()), gs.insert(gs.end(), static_cast<size_t>(n), 1);
  xs.push_back(1), gs.push_back(rcout);
  Dims axes{1};
  for (int a = 0; a < n; a++) axes.push_back(2 + a);
  Tensor r = (xw.reshape(xs) * dyt.reshape(gs)).sum(axes);  // (N/chunk, groups, Cin, *kernel, Cout/g)
  r = bs / chunk > 1 ? r.contiguous().sum(0) : r.squeeze(0);
  Dims order{0, 2 + n, 1};  // (groups, Cout/g, Cin, *kernel)
  for (int a = 0; a < n; a++) order.push_back(2 + a);
  Shape ws{rcout * groups, cin};
  ws.insert(ws.end(), k.begin(), k.end());
  return r.permute(order).reshape(ws);
}

}  // namespace

// ---- argument types ----

std::vector<int64_t> Sizes::resolve(int n, std::string_view op, std::string_view what) const {
  if (v_.size() == 1) return std::vector<int64_t>(n, v_[0]);
  if (static_cast<int>(v_.size()) != n)
    throw ValueError(op, fmt::format("{} needs 1 or {} values, got {}", what, n, v_.size()));
  return v_;
}

Pairs Padding::resolve(int n, const std::vector<int64_t>& kernel, const std::vector<int64_t>& dilation,
                       const std::vector<int64_t>& stride, std::string_view op) const {
  Pairs out;
  if (has_pairs_) {
    if (static_cast<int>(pairs_.size()) != n)
      throw ValueError(op, fmt::format("padding needs {} (before, after) pairs, got {}", n, pairs_.size()));
    return pairs_;
  }
  if (mode_.empty()) {
    for (int64_t p : sizes_.resolve(n, op, "padding")) out.emplace_back(p, p);
    return out;
  }
  if (mode_ == "valid") return Pairs(n, {0, 0});
  if (mode_ != "same")
    throw ValueError(op,
                     fmt::format("padding must be a size, pairs, \"same\" or \"valid\", got \"{}\"", mode_));
  for (int a = 0; a < n; a++) {
    if (stride[a] != 1) throw ValueError(op, "padding=\"same\" needs stride 1");
    int64_t total = dilation[a] * (kernel[a] - 1);
    out.emplace_back(total / 2, total - total / 2);  // the odd element goes after, as in PyTorch
  }
  return out;
}

// ---- windows ----

Tensor Tensor::pool(const std::vector<int64_t>& k, const std::vector<int64_t>& s,
                    const std::vector<int64_t>& d, std::string_view op) const {
  int n = static_cast<int>(k.size()), lead = ndim() - n;
  if (lead < 0 || s.size() != k.size() || d.size() != k.size())
    throw ShapeError(op, fmt::format("cannot pool {} with a {}-d kernel", shape_str(shape()), n));
  Shape noop(shape().begin(), shape().begin() + lead), in(shape().begin() + lead, shape().end()), o(n);
  for (int a = 0; a < n; a++) {
    if (k[a] < 1 || s[a] < 1 || d[a] < 1)
      throw ValueError(
          op, fmt::format("kernel {}, stride {} and dilation {} must be positive", k[a], s[a], d[a]));
    if (d[a] * (k[a] - 1) + 1 > in[a])
      throw ShapeError(op, fmt::format("kernel {} with dilation {} does not fit the padded input {}", k[a],
                                       d[a], shape_str(shape())));
    o[a] = ceildiv(in[a] - d[a] * (k[a] - 1), s[a]);
  }
  Pairs keep;
  for (int64_t x : noop) keep.emplace_back(0, x);
  auto with = [&](const Pairs& p) {
    Pairs all = keep;
    all.insert(all.end(), p.begin(), p.end());
    return all;
  };
  auto shape_with = [&](const Shape& p) {
    Shape all = noop;
    all.insert(all.end(), p.begin(), p.end());
    return all;
  };
  Dims order(lead);
  std::iota(order.begin(), order.end(), 0);
  bool overlap = false;
  for (int a = 0; a < n; a++) overlap |= k[a] > s[a] || d[a] != 1;
  if (!overlap) {  // windows do not overlap: pad to o*s, split each axis into (o, s), keep the first k of s
    Pairs grow, cut, win;
    Shape split;
    for (int a = 0; a < n; a++) {
      grow.emplace_back(0, std::max<int64_t>(0, o[a] * s[a] - in[a]));
      cut.emplace_back(0, o[a] * s[a]);
      split.insert(split.end(), {o[a], s[a]});
      win.insert(win.end(), {{0, o[a]}, {0, k[a]}});
    }
    Pairs lead_grow(static_cast<size_t>(lead), {0, 0});  // the leading axes keep their size
    lead_grow.insert(lead_grow.end(), grow.begin(), grow.end());
    Tensor x = pad(lead_grow)
                   .shrink(detail::size_pairs(with(cut)))
                   .reshape(shape_with(split))
                   .shrink(detail::size_pairs(with(win)));
    for (int a = 0; a < n; a++) order.push_back(lead + 2 * a);
    for (int a = 0; a < n; a++) order.push_back(lead + 2 * a + 1);
    return x.permute(order);
  }
  // Overlapping windows: repeat each axis k times with a period of in*f+d, so row j of the (k, in*f+d)
  // view starts at element j*d; then every s-th column gives the window starts.
  Shape reps(lead, 1), kd, kos, ko;
  Pairs first, strided, pick;
  for (int a = 0; a < n; a++) {
    int64_t f = 1 + (o[a] * s[a] > in[a] - d[a] * (k[a] - 1) ? 1 : 0), period = in[a] * f + d[a];
    reps.push_back(ceildiv(k[a] * period, in[a]));
    first.emplace_back(0, k[a] * period);
    kd.insert(kd.end(), {k[a], period});
    strided.insert(strided.end(), {{0, k[a]}, {0, o[a] * s[a]}});
    kos.insert(kos.end(), {k[a], o[a], s[a]});
    pick.insert(pick.end(), {{0, k[a]}, {0, o[a]}, {0, 1}});
    ko.insert(ko.end(), {k[a], o[a]});
  }
  Tensor x = repeat(reps).shrink(detail::size_pairs(with(first))).reshape(shape_with(kd));
  x = x.shrink(detail::size_pairs(with(strided)))
          .reshape(shape_with(kos))
          .shrink(detail::size_pairs(with(pick)))
          .reshape(shape_with(ko));
  for (int a = 0; a < n; a++) order.push_back(lead + 2 * a + 1);
  for (int a = 0; a < n; a++) order.push_back(lead + 2 * a);
  return x.permute(order);
}

// ---- convolution ----

Tensor Tensor::conv(const Tensor& weight, const Tensor& bias, Sizes stride, Padding padding, Sizes dilation,
                    int64_t groups, std::string_view op) const {
  int n = weight.ndim() - 2;
  if (n < 1)
    throw ShapeError(op,
                     fmt::format("weight {} needs (Cout, Cin/groups, *kernel)", shape_str(weight.shape())));
  if (ndim() == n + 1)
    return unsqueeze(0).conv(weight, bias, stride, padding, dilation, groups, op).squeeze(0);
  if (ndim() != n + 2)
    throw ShapeError(
        op, fmt::format("input {} does not fit weight {}: needs (N, Cin, *spatial) with {} spatial axes",
                        shape_str(shape()), shape_str(weight.shape()), n));
  int64_t cin_all = shape()[1], cout = weight.shape()[0], cin = weight.shape()[1];
  if (groups < 1) throw ValueError(op, fmt::format("groups must be positive, got {}", groups));
  if (cin * groups != cin_all || cout % groups != 0)
    throw ShapeError(op, fmt::format("input {} with {} groups does not fit weight {}", shape_str(shape()),
                                     groups, shape_str(weight.shape())));
  if (bias.defined() && bias.shape() != Shape{cout})
    throw ShapeError(op, fmt::format("bias {} must be ({},)", shape_str(bias.shape()), cout));
  std::vector<int64_t> k(weight.shape().begin() + 2, weight.shape().end());
  auto s = stride.resolve(n, op, "stride"), d = dilation.resolve(n, op, "dilation");
  Pairs pads = padding.resolve(n, k, d, s, op);
  for (int a = 0; a < n; a++) {  // before anything divides by a stride or a window count
    if (s[a] < 1 || d[a] < 1)
      throw ShapeError(op, fmt::format("stride {} and dilation {} must be positive", fmt::join(s, ","),
                                       fmt::join(d, ",")));
    int64_t padded = shape()[2 + a] + pads[a].first + pads[a].second, span = d[a] * (k[a] - 1) + 1;
    if (k[a] < 1 || padded < span)
      throw ShapeError(
          op, fmt::format("input {} padded to {} on axis {} is smaller than kernel {} with dilation {} "
                          "(spans {})",
                          shape_str(shape()), padded, 2 + a, shape_str(weight.shape()), d[a], span));
  }
  // Every input value is read Cout * prod(kernel) times: an input that needs arithmetic (relu, batchnorm and
  // pooling of the layer before) is computed once into memory instead of once per read. Views of buffers
  // (the zero-stuffed input of a transposed conv) stay views.
  Tensor xin = computes(uop()) ? contiguous() : *this;
  Tensor cols;
  Tensor ret = conv_windows(xin, weight, bias, s, pads, d, groups, op, &cols);
  bool grad = requires_grad() || weight.requires_grad() || (bias.defined() && bias.requires_grad());
  if (!grad || !ret.dtype().is_float()) return ret;
  // its own backward rule: dx and dw are conv-shaped kernels, not the derivative of the window view
  std::vector<UOpRef> inputs{xin.uop(), weight.uop()};
  if (bias.defined()) inputs.push_back(bias.uop());
  UOpRef cols_uop = cols.defined() ? cols.uop() : nullptr;
  Shape in(shape().begin() + 2, shape().end());
  std::string dev = device(), name(op);
  CustomBackward back = [=](const UOpRef& g) {
    // dy feeds dx, dw and db, each reading it many times: computed once (it is the fused backward of the
    // layers after this one).
    Tensor dy = Tensor(g, dev).contiguous(), x(inputs[0], dev), w(inputs[1], dev);
    std::vector<UOpRef> out{
        conv_input_grad(dy, w, in, s, pads, d, groups, name).cast(x.dtype()).uop(),
        conv_weight_grad(x, dy, k, s, pads, d, groups, name, cols_uop ? Tensor(cols_uop, dev) : Tensor())
            .cast(w.dtype())
            .uop()};
    if (inputs.size() == 3) {
      Dims axes{0};
      for (int a = 0; a < n; a++) axes.push_back(2 + a);
      out.push_back(dy.sum(axes).cast(Tensor(inputs[2], dev).dtype()).uop());
    }
    return out;
  };
  std::string key = fmt::format("{} {} {} {} {} {}", dev, fmt::join(s, ","), fmt::join(d, ","), groups,
                                bias.defined(), cols_uop != nullptr);
  for (const auto& [lo, hi] : pads) key += fmt::format(" {}:{}", lo, hi);
  return detail::derive(custom_gradient(ret.uop(), inputs, std::move(back), name, key), ret, {&ret});
}

Tensor Tensor::conv2d(const Tensor& weight, const Tensor& bias, Sizes stride, Padding padding, Sizes dilation,
                      int64_t groups) const {
  if (weight.ndim() != 4)
    throw ShapeError("conv2d", fmt::format("weight {} must be 4-d", shape_str(weight.shape())));
  return conv(weight, bias, std::move(stride), std::move(padding), std::move(dilation), groups, "conv2d");
}

Tensor Tensor::conv1d(const Tensor& weight, const Tensor& bias, Sizes stride, Padding padding, Sizes dilation,
                      int64_t groups) const {
  if (weight.ndim() != 3)
    throw ShapeError("conv1d", fmt::format("weight {} must be 3-d", shape_str(weight.shape())));
  return conv(weight, bias, std::move(stride), std::move(padding), std::move(dilation), groups, "conv1d");
}

// A stride-s transposed conv is a stride-1 conv over the input with s-1 zeros between elements, padded
// by (k-1)*d - p, with the kernel flipped and its in/out channels swapped per group.
Tensor Tensor::conv_transpose(const Tensor& weight, const Tensor& bias, Sizes stride, Sizes padding,
                              Sizes output_padding, int64_t groups, Sizes dilation,
                              std::string_view op) const {
  int n = weight.ndim() - 2;
  if (n < 1)
    throw ShapeError(op,
                     fmt::format("weight {} needs (Cin, Cout/groups, *kernel)", shape_str(weight.shape())));
  if (ndim() == n + 1)
    return unsqueeze(0)
        .conv_transpose(weight, bias, stride, padding, output_padding, groups, dilation, op)
        .squeeze(0);
  if (ndim() != n + 2 || groups < 1 || shape()[1] != weight.shape()[0] || weight.shape()[0] % groups != 0)
    throw ShapeError(op,
                     fmt::format("input {} with {} groups does not fit weight {} (Cin, Cout/groups, *kernel)",
                                 shape_str(shape()), groups, shape_str(weight.shape())));
  auto s = stride.resolve(n, op, "stride"), p = padding.resolve(n, op, "padding");
  auto op_ = output_padding.resolve(n, op, "output_padding"), d = dilation.resolve(n, op, "dilation");
  std::vector<int64_t> k(weight.shape().begin() + 2, weight.shape().end());
  for (int a = 0; a < n; a++) {
    if (s[a] < 1 || d[a] < 1 || p[a] < 0)
      throw ValueError(op, "stride and dilation must be positive, padding >= 0");
    if (op_[a] < 0 || (op_[a] >= s[a] && op_[a] >= d[a]))
      throw ValueError(op, fmt::format("output_padding {} must be smaller than stride {} or dilation {}",
                                       op_[a], s[a], d[a]));
  }
  Dims spatial;
  for (int a = 0; a < n; a++) spatial.push_back(3 + a);
  Tensor w = weight.unflatten(0, {groups, -1}).transpose(1, 2).flip(spatial).flatten(0, 1);
  Tensor x = *this;
  if (std::any_of(s.begin(), s.end(), [](int64_t v) { return v > 1; })) {
    Shape split{shape()[0], shape()[1]}, joined{shape()[0], shape()[1]};
    Pairs zeros{{0, 0}, {0, 0}}, cut{{0, shape()[0]}, {0, shape()[1]}};
    for (int a = 0; a < n; a++) {
      int64_t i = shape()[2 + a];
      split.insert(split.end(), {i, 1});
      zeros.insert(zeros.end(), {{0, 0}, {0, s[a] - 1}});
      joined.push_back(i * s[a]);
      cut.emplace_back(0, i * s[a] - (s[a] - 1));
    }
    x = x.reshape(split).pad(zeros).reshape(joined).shrink(detail::size_pairs(cut));
  }
  Pairs pads;
  for (int a = 0; a < n; a++) {
    int64_t full = (k[a] - 1) * d[a];
    pads.emplace_back(full - p[a], full - p[a] + op_[a]);
  }
  return x.conv(w, bias, 1, pads, d, groups, op);
}

Tensor Tensor::conv_transpose2d(const Tensor& weight, const Tensor& bias, Sizes stride, Sizes padding,
                                Sizes output_padding, int64_t groups, Sizes dilation) const {
  if (weight.ndim() != 4)
    throw ShapeError("conv_transpose2d", fmt::format("weight {} must be 4-d", shape_str(weight.shape())));
  return conv_transpose(weight, bias, std::move(stride), std::move(padding), std::move(output_padding),
                        groups, std::move(dilation), "conv_transpose2d");
}

// ---- pooling ----

Tensor Tensor::max_pool2d(Sizes kernel, Sizes stride, Padding padding, Sizes dilation, bool ceil_mode) const {
  return max_pool(*this, 2, kernel, stride, padding, dilation, ceil_mode, "max_pool2d");
}
Tensor Tensor::max_pool1d(Sizes kernel, Sizes stride, Padding padding, Sizes dilation, bool ceil_mode) const {
  return max_pool(*this, 1, kernel, stride, padding, dilation, ceil_mode, "max_pool1d");
}
Tensor Tensor::avg_pool2d(Sizes kernel, Sizes stride, Padding padding, bool ceil_mode,
                          bool count_include_pad) const {
  return avg_pool(*this, 2, kernel, stride, padding, ceil_mode, count_include_pad, "avg_pool2d");
}
Tensor Tensor::avg_pool1d(Sizes kernel, Sizes stride, Padding padding, bool ceil_mode,
                          bool count_include_pad) const {
  return avg_pool(*this, 1, kernel, stride, padding, ceil_mode, count_include_pad, "avg_pool1d");
}

// ---- attention, dropout, batchnorm ----

Tensor Tensor::scaled_dot_product_attention(const Tensor& key, const Tensor& value, const Tensor& mask,
                                            bool causal, double dropout_p) const {
  constexpr std::string_view op = "scaled_dot_product_attention";
  if (ndim() < 2 || key.ndim() < 2 || value.ndim() < 2 || shape().back() != key.shape().back() ||
      key.shape(-2) != value.shape(-2))
    throw ShapeError(op,
                     fmt::format("query {}, key {} and value {} need (..., L, E), (..., S, E), (..., S, Ev)",
                                 shape_str(shape()), shape_str(key.shape()), shape_str(value.shape())));
  Tensor qk = matmul(key.transpose(-2, -1)) / std::sqrt(static_cast<double>(shape().back()));
  double inf = std::numeric_limits<double>::infinity();
  if (causal) {
    int64_t l = shape(-2), s = key.shape(-2);
    Tensor keep = arange(l, {}, device()).reshape({l, 1}) >= arange(s, {}, device()).reshape({1, s});
    qk = keep.where(qk, -inf);
  }
  if (mask.defined()) qk = mask.dtype().is_bool() ? mask.where(qk, -inf) : qk + mask;
  return qk.softmax(-1).dropout(dropout_p).matmul(value);
}

Tensor Tensor::dropout(double p, bool training) const {
  if (p < 0.0 || p > 1.0) throw ValueError("dropout", fmt::format("p must be in [0, 1], got {}", p));
  if (!training || p == 0.0) return *this;
  if (p == 1.0) return zeros_like();
  Tensor keep = rand(shape(), dtypes::default_float, device()) >= p;
  return keep.where(*this * (1.0 / (1.0 - p)), 0);
}

Tensor Tensor::batchnorm(const Tensor& weight, const Tensor& bias, const Tensor& mean, const Tensor& invstd,
                         int axis) const {
  int a = detail::normalize_axis(axis, ndim(), "batchnorm");
  Shape s(ndim(), 1);
  s[a] = shape()[a];
  auto along = [&](const Tensor& t, std::string_view what) {
    if (t.numel() != s[a])
      throw ShapeError("batchnorm",
                       fmt::format("{} {} must have {} elements", what, shape_str(t.shape()), s[a]));
    return t.reshape(s);
  };
  Tensor x = *this - along(mean, "mean");
  if (weight.defined()) x = x * along(weight, "weight");
  x = x * along(invstd, "invstd");
  return bias.defined() ? x + along(bias, "bias") : x;
}

}  // namespace tg
