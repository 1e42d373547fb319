// Resampling. interpolate maps each resized axis through a small (out, in) weight matrix built on the host
// from PyTorch's source-index formulas (one-hot for nearest, two taps for linear, four for bicubic), so
// the result is a matmul per axis and differentiable. max_unpool2d scatters pooled values back.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "base/error.hpp"
#include "tensor/internal.hpp"

namespace tg {

namespace {

// in / out, or (in - 1) / (out - 1) with align_corners (PyTorch's area_pixel_compute_scale).
template <typename T>
T pixel_scale(int64_t in, int64_t out, bool align_corners) {
  if (align_corners) return out > 1 ? static_cast<T>(in - 1) / static_cast<T>(out - 1) : T(0);
  return static_cast<T>(in) / static_cast<T>(out);
}

// Where output position i samples the input (PyTorch's area_pixel_compute_source_index).
template <typename T>
T source_index(T scale, int64_t i, bool align_corners, bool cubic) {
  if (align_corners) return scale * static_cast<T>(i);
  T src = scale * (static_cast<T>(i) + T(0.5)) - T(0.5);
  return !cubic && src < 0 ? T(0) : src;
}

// Keys' cubic convolution weights of the taps at -1, 0, 1, 2 for a fraction t (A = -0.75, as PyTorch).
template <typename T>
std::array<T, 4> cubic_weights(T t) {
  constexpr T a = T(-0.75);
  auto near = [&](T x) { return ((a + 2) * x - (a + 3)) * x * x + 1; };
  auto far = [&](T x) { return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a; };
  return {far(t + 1), near(t), near(1 - t), far(2 - t)};
}

// The (out, in) matrix whose row o holds the weights output o gives each input position.
template <typename T>
std::vector<T> resize_matrix(int64_t in, int64_t out, std::string_view mode, bool align_corners) {
  std::vector<T> m(static_cast<size_t>(out * in), T(0));
  T scale = pixel_scale<T>(in, out, align_corners);
  auto add = [&](int64_t o, int64_t i, T w) { m[o * in + std::clamp<int64_t>(i, 0, in - 1)] += w; };
  for (int64_t o = 0; o < out; o++) {
    if (mode == "nearest") {
      add(o, static_cast<int64_t>(std::floor(static_cast<T>(o) * scale)), T(1));
    } else if (mode == "bicubic") {
      T src = source_index(scale, o, align_corners, true), base = std::floor(src);
      std::array<T, 4> w = cubic_weights(src - base);
      for (int k = 0; k < 4; k++) add(o, static_cast<int64_t>(base) - 1 + k, w[k]);
    } else {
      T src = source_index(scale, o, align_corners, false);
      auto i0 = static_cast<int64_t>(src);
      T frac = std::clamp(src - static_cast<T>(i0), T(0), T(1));
      add(o, i0, 1 - frac);
      add(o, i0 + (i0 < in - 1 ? 1 : 0), frac);
    }
  }
  return m;
}

// x resized along axis a to out positions: x moved last, times the matrix transposed.
Tensor resize_axis(const Tensor& x, int a, int64_t out, std::string_view mode, bool align_corners) {
  int64_t in = x.shape()[a];
  Tensor w = x.dtype() == dtypes::float64
                 ? Tensor(resize_matrix<double>(in, out, mode, align_corners), {out, in}, {}, x.device())
                 : Tensor(resize_matrix<float>(in, out, mode, align_corners), {out, in}, {}, x.device());
  return x.transpose(a, -1).matmul(w.transpose(0, 1)).transpose(a, -1);
}

}  // namespace

Tensor Tensor::interpolate(Shape size, std::string_view mode, bool align_corners) const {
  size_t axes = mode == "bilinear" || mode == "bicubic" ? 2 : mode == "trilinear" ? 3 : 0;
  if (mode != "nearest" && mode != "linear" && axes == 0)
    throw ValueError("interpolate", fmt::format("unknown mode '{}' (nearest, linear, bilinear, trilinear or "
                                                "bicubic)",
                                                mode));
  if (axes && size.size() != axes)
    throw ValueError("interpolate", fmt::format("mode '{}' resizes {} axes, got sizes {}", mode, axes,
                                                detail::shape_str(size)));
  if (size.empty() || static_cast<int>(size.size()) > ndim())
    throw ShapeError("interpolate", fmt::format("sizes {} for the shape {}", detail::shape_str(size),
                                                detail::shape_str(shape())));
  if (mode == "nearest" && align_corners)
    throw ValueError("interpolate", "align_corners only applies to the linear and cubic modes");
  DType out = detail::to_float(*this).dtype(), wide = dtypes::least_upper(out, dtypes::float32);
  Tensor x = cast(wide);
  std::string_view kind = mode == "nearest" || mode == "bicubic" ? mode : std::string_view("linear");
  for (size_t k = 0; k < size.size(); k++) {
    int a = ndim() - static_cast<int>(size.size()) + static_cast<int>(k);
    auto n = static_cast<int64_t>(size[k]);
    if (n <= 0)
      throw ValueError("interpolate", fmt::format("sizes must be positive, got {}", detail::shape_str(size)));
    if (!(x.shape()[a] == n)) x = resize_axis(x, a, n, kind, align_corners);
  }
  return x.cast(out);
}

Tensor Tensor::max_unpool2d(const Tensor& indices, Sizes kernel, Sizes stride, Sizes padding,
                            Shape output_size) const {
  if (ndim() != 3 && ndim() != 4)
    throw ShapeError("max_unpool2d",
                     fmt::format("needs (N, C, H, W) or (C, H, W), got {}", detail::shape_str(shape())));
  if (indices.shape() != shape())
    throw ShapeError("max_unpool2d",
                     fmt::format("indices {} differ from the input {}", detail::shape_str(indices.shape()),
                                 detail::shape_str(shape())));
  std::vector<int64_t> k = kernel.resolve(2, "max_unpool2d", "kernel"),
                       s = stride.empty() ? k : stride.resolve(2, "max_unpool2d", "stride"),
                       p = padding.resolve(2, "max_unpool2d", "padding");
  Shape hw(2);
  for (int a = 0; a < 2; a++) hw[a] = (static_cast<int64_t>(shape(-2 + a)) - 1) * s[a] - 2 * p[a] + k[a];
  if (!output_size.empty()) {
    Shape want(output_size.end() - 2, output_size.end());
    for (int a = 0; a < 2; a++)
      if (want[a] < hw[a] - s[a] || want[a] > hw[a] + s[a])
        throw ValueError("max_unpool2d", fmt::format("output size {} is not within a stride of {}",
                                                     detail::shape_str(want), detail::shape_str(hw)));
    hw = want;
  }
  Shape flat(shape().begin(), shape().end() - 2), out = flat;
  flat.push_back(hw[0] * hw[1]);
  out.insert(out.end(), hw.begin(), hw.end());
  Tensor zeros = Tensor::zeros(flat, dtype(), device());
  return zeros.scatter(-1, indices.flatten(-2), flatten(-2)).reshape(out);
}

}  // namespace tg
