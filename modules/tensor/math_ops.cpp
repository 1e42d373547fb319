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

// asin of a = |x| in two pieces, as Cephes asinf: up to 0.5 the odd series a + a^3 q(a^2), exact at 0 and
// relatively accurate for tiny a (pi/2 - sqrt(1 - a) p(a) is only good to an ulp of pi/2 there); above,
// asin a = pi/2 - 2 asin w with w = sqrt((1 - a) / 2) <= 0.5. asin of the reduced argument is w + c, kept
// as two terms so that pi/2 - 2 asin w subtracts the small c first and rounds once near pi/2.
// Polynomial error under 1e-8; after float32 rounding asin stays under 1.5e-7 absolute, acos under
// 2.4e-7, one ulp of its results near pi.
struct AsinParts {
  Tensor w, c, big;
};
AsinParts asin_parts(const Tensor& a) {
  Tensor big = a.gt(0.5);
  Tensor half = (1 - a) / 2;  // negative for |x| > 1: the sqrt makes that NaN
  Tensor w = big.where(half.sqrt(), a);
  Tensor z = big.where(half, a * a);
  Tensor q = poly(z, {1.6666752422e-1, 7.4953002686e-2, 4.5470025998e-2, 2.4181311049e-2, 4.2163199048e-2});
  return {w, w * z * q, big};
}

// k - 2 (w + c) for k near pi/2 or pi: k is split into its float32 value and the rest, which goes in
// before the large terms so the sum rounds once at the end.
Tensor minus_twice(double k, const AsinParts& p) {
  double hi = static_cast<float>(k);
  return (((k - hi) - 2 * p.c) - 2 * p.w) + hi;
}

}  // namespace

// Computed on |x| and negated by the sign bit, so asin(-x) == -asin(x) exactly, -0 included.
Tensor Tensor::asin() const {
  return wide_float(*this, [](const Tensor& x) {
    AsinParts p = asin_parts(x.abs());
    Tensor m = p.big.where(minus_twice(std::numbers::pi / 2, p), p.w + p.c);
    return sign_bit(x).where(-m, m);
  });
}

// acos x = 2 asin w above 0.5 and pi - 2 asin w below -0.5: no pi/2 - asin x cancellation near |x| = 1.
Tensor Tensor::acos() const {
  return wide_float(*this, [](const Tensor& x) {
    AsinParts p = asin_parts(x.abs());
    Tensor neg = x.lt(0);
    Tensor r = p.w + p.c;
    Tensor outer = neg.where(minus_twice(std::numbers::pi, p), 2 * r);
    Tensor inner = (std::numbers::pi / 2 - static_cast<float>(std::numbers::pi / 2) - neg.where(-r, r)) +
                   static_cast<float>(std::numbers::pi / 2);
    return p.big.where(outer, inner);
  });
}

// Cephes atanf: |x| is reduced to |y| <= tan(pi/8) by atan a = pi/2 + atan(-1/a) above tan(3pi/8) and
// pi/4 + atan((a-1)/(a+1)) above tan(pi/8); then the odd series y + y^3 q(y^2), exact at 0.
// Polynomial error under 1e-8; float32 rounding brings the total under 1.5e-7 absolute.
Tensor Tensor::atan() const {
  return wide_float(*this, [](const Tensor& x) {
    Tensor a = x.abs();
    Tensor hi = a.gt(2.414213562373095), mid = a.gt(0.4142135623730950);
    // The reciprocal's denominator is 1 where unused, so its gradient stays finite at a = 0.
    Tensor y = hi.where(-hi.where(a, 1).reciprocal(), mid.where((a - 1) / (a + 1), a));
    Tensor offset = hi.where(std::numbers::pi / 2, mid.where(std::numbers::pi / 4, 0.0));
    Tensor z = y * y;
    Tensor q = poly(z, {-3.33329491539e-1, 1.99777106478e-1, -1.38776856032e-1, 8.05374449538e-2});
    Tensor m = offset + (y + y * z * q);
    return sign_bit(x).where(-m, m);
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
