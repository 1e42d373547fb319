// Math functions and activations composed from the elementwise ops: inverse trigonometric and hyperbolic
// functions, erf, and the activation zoo of torch.nn.functional.
#include <cmath>
#include <numbers>

#include <fmt/format.h>

#include "base/error.hpp"
#include "tensor/internal.hpp"

namespace tg {

namespace {

// f computed in at least float32 and cast back: the polynomials below lose too much in half precision.
template <typename F>
Tensor wide_float(const Tensor& x, F f) {
  Tensor xf = detail::to_float(x);
  return f(xf.cast(dtypes::least_upper(xf.dtype(), dtypes::float32))).cast(xf.dtype());
}

// c[0] + c[1] x + c[2] x^2 + ... by Horner's rule.
Tensor poly(const Tensor& x, std::initializer_list<double> c) {
  auto it = std::rbegin(c);
  Tensor r = x * *it++;
  for (; it != std::rend(c) - 1; ++it) r = (r + *it) * x;
  return r + *it;
}

// The sign bit as a bool tensor (true for -0 and negative NaNs too): the same-width integer view is negative.
Tensor sign_bit(const Tensor& x) {
  size_t n = x.dtype().itemsize();
  DType as_int = n == 1 ? dtypes::int8 : n == 2 ? dtypes::int16 : n == 4 ? dtypes::int32 : dtypes::int64;
  return x.detach().bitcast(as_int).lt(0);
}

}  // namespace

// Abramowitz and Stegun 4.4.45: asin |x| = pi/2 - sqrt(1 - |x|) p(|x|), absolute error under 2e-8.
Tensor Tensor::asin() const {
  return wide_float(*this, [](const Tensor& x) {
    Tensor a = x.abs();
    Tensor p = poly(a, {1.5707963050, -0.2145988016, 0.0889789874, -0.0501743046, 0.0308918810, -0.0170881256,
                        0.0066700901, -0.0012624911});
    Tensor r = std::numbers::pi / 2 - (1 - a).sqrt() * p;
    return x.lt(0).where(-r, r);
  });
}

Tensor Tensor::acos() const {
  return wide_float(*this, [](const Tensor& x) { return std::numbers::pi / 2 - x.asin(); });
}

// atan x = asin(x / sqrt(1 + x^2)) for |x| <= 1; beyond, pi/2 - atan(1/x) keeps the asin argument
// away from 1, where 1 - x loses the bits the square root needs.
Tensor Tensor::atan() const {
  return wide_float(*this, [](const Tensor& x) {
    Tensor big = x.abs().gt(1);
    Tensor y = big.where(x.reciprocal(), x);
    Tensor r = (y / (1 + y * y).sqrt()).asin();
    Tensor outer = x.lt(0).where(-std::numbers::pi / 2, std::numbers::pi / 2) - r;
    return big.where(outer, r);
  });
}

Tensor Tensor::sinh() const {
  return wide_float(*this, [](const Tensor& x) { return (x.exp() - (-x).exp()) / 2; });
}
Tensor Tensor::cosh() const {
  return wide_float(*this, [](const Tensor& x) { return (x.exp() + (-x).exp()) / 2; });
}
// asinh x = sign(x) ln(|x| + sqrt(x^2 + 1)): odd by construction, no cancellation for negative x.
Tensor Tensor::asinh() const {
  return wide_float(*this, [](const Tensor& x) {
    Tensor a = x.abs();
    Tensor r = (a + (a * a + 1).sqrt()).log();
    return x.lt(0).where(-r, r);
  });
}
Tensor Tensor::acosh() const {
  return wide_float(*this, [](const Tensor& x) { return (x + (x * x - 1).sqrt()).log(); });
}
Tensor Tensor::atanh() const {
  return wide_float(*this, [](const Tensor& x) { return ((1 + x) / (1 - x)).log() / 2; });
}
Tensor Tensor::log10() const { return log2().mul(std::numbers::ln2 / std::numbers::ln10); }

// Abramowitz and Stegun 7.1.26: 1 - t p(t) e^(-x^2) with t = 1 / (1 + 0.3275911 |x|), error under 1.5e-7.
Tensor Tensor::erf() const {
  return wide_float(*this, [](const Tensor& x) {
    Tensor a = x.abs();
    Tensor t = (1 + 0.3275911 * a).reciprocal();
    Tensor p = poly(t, {0.0, 0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429});
    Tensor r = 1 - p * (-(a * a)).exp();
    return x.lt(0).where(-r, r);
  });
}

Tensor Tensor::copysign(const Operand& sign) const {
  auto [a, b] = detail::broadcasted(*this, sign, false, "copysign");
  Tensor mag = detail::to_float(a).abs();
  return sign_bit(b.cast(mag.dtype())).where(-mag, mag);
}

Tensor Tensor::lerp(const Operand& end, const Operand& weight) const {
  auto [a0, b0] = detail::broadcasted(*this, end, false, "lerp");
  auto [a1, w0] = detail::broadcasted(detail::to_float(a0), weight, false, "lerp");
  DType out = a1.dtype(), wide = dtypes::least_upper(out, dtypes::float32);  // half rounds once, at the end
  Tensor a = a1.cast(wide), w = w0.cast(wide), b = detail::broadcast_to(b0.cast(wide), a.shape(), "lerp");
  Tensor diff = b - a;
  return w.abs().lt(0.5).where(a + w * diff, b - diff * (1 - w)).cast(out);
}

Tensor Tensor::gelu(std::string_view approximate) const {
  Tensor x = detail::to_float(*this);
  // x/2 + x/2 erf(..) sums to +0 where erf is -1, as PyTorch's kernel does, where x/2 (1 + erf) gives -0
  if (approximate == "none") return 0.5 * (x + x * (x * std::numbers::sqrt2 / 2).erf());
  if (approximate != "tanh")
    throw ValueError("gelu", fmt::format("approximate must be 'none' or 'tanh', got '{}'", approximate));
  return 0.5 * x * (1 + (std::sqrt(2 / std::numbers::pi) * (x + 0.044715 * x * x * x)).tanh());
}

// ---- activations: in at least float32 (as PyTorch's half kernels), rounded once ----
// exp of min(x, 0): the branch where() drops never overflows, so its gradient stays finite
Tensor Tensor::elu(double alpha) const {
  return wide_float(*this,
                    [alpha](const Tensor& x) { return x.gt(0).where(x, alpha * (x.minimum(0).exp() - 1)); });
}
Tensor Tensor::celu(double alpha) const {
  if (alpha == 0) throw ValueError("celu", "alpha must not be zero");
  return wide_float(*this, [alpha](const Tensor& x) {
    return x.gt(0).where(x, alpha * ((x.minimum(0) / alpha).exp() - 1));
  });
}
Tensor Tensor::selu() const {
  constexpr double alpha = 1.6732632423543772848170429916717, scale = 1.0507009873554804934193349852946;
  return wide_float(*this, [](const Tensor& x) { return scale * x.elu(alpha); });
}
Tensor Tensor::mish() const {
  return wide_float(*this, [](const Tensor& x) { return x * x.softplus().tanh(); });
}
Tensor Tensor::relu6() const { return clamp(0, 6); }
Tensor Tensor::hardsigmoid() const {
  return wide_float(*this, [](const Tensor& x) { return (x + 3).relu6() / 6; });
}
Tensor Tensor::hardswish() const {
  return wide_float(*this, [](const Tensor& x) { return x * (x + 3).relu6() / 6; });
}
Tensor Tensor::hardtanh(double min_val, double max_val) const {
  if (min_val > max_val)
    throw ValueError("hardtanh", fmt::format("min_val {} is greater than max_val {}", min_val, max_val));
  return clamp(min_val, max_val);
}
Tensor Tensor::softsign() const {
  return wide_float(*this, [](const Tensor& x) { return x / (1 + x.abs()); });
}
Tensor Tensor::quick_gelu() const {
  return wide_float(*this, [](const Tensor& x) { return x * (x * 1.702).sigmoid(); });
}
Tensor Tensor::softmin(int axis) const {
  return neg().softmax(detail::normalize_axis(axis, ndim(), "softmin"));
}

}  // namespace tg
