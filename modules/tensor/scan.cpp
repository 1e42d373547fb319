// Running reductions (cumprod, cummax/cummin, logcumsumexp) and the statistics helpers built on reduce.cpp.
// A scan along an axis of size n reduces an (n, n) view: row i holds the elements j <= i, so each is one
// fused reduce, as cumsum is.
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "base/error.hpp"
#include "tensor/internal.hpp"

namespace tg {

namespace {

// x with axis a moved last and copied per output: (..., n, n) where row i keeps element j when j <= i and
// holds fill (an Operand) or, without one, the row's first element, which never changes a max.
Tensor prefixes(const Tensor& x, int a, const Operand* fill) {
  int64_t n = x.shape()[a];
  Tensor t = x.transpose(a, -1).unsqueeze(-2);
  Shape full = t.shape();
  full[full.size() - 2] = n;
  Tensor rows = t.expand(full);
  Tensor mask = Tensor::arange(n, {}, x.device()).reshape({n, 1}).ge(Tensor::arange(n, {}, x.device()));
  if (fill) return mask.where(rows, *fill);
  return mask.where(rows, detail::shrink_axis(rows, rows.ndim() - 1, 0, 1));
}

}  // namespace

// bools count as int32, as in cumsum
Tensor Tensor::cumprod(int axis) const {
  Tensor x = dtype().is_bool() ? cast(dtypes::int32) : *this;
  if (ndim() == 0) return x;
  int a = detail::normalize_axis(axis, ndim(), "cumprod");
  Operand one = 1;
  return prefixes(x, a, &one).prod(-1).transpose(a, -1);
}

std::pair<Tensor, Tensor> Tensor::cummax(int axis) const {
  if (ndim() == 0) return {*this, zeros({}, dtypes::int32, device())};
  int a = detail::normalize_axis(axis, ndim(), "cummax");
  int64_t n = shape()[a];
  Tensor rows = prefixes(contiguous(), a, nullptr);  // stored, so the rows equal their max bit for bit
  Tensor values = rows.max(-1, true);
  // the index is the last j <= i where row i equals its maximum
  Tensor j = arange(n, {}, device()), i = j.reshape({n, 1});
  Tensor hit = rows.eq(values).logical_and(j.le(i));
  Tensor index = hit.where(j, -1).max(-1).cast(dtypes::int32);
  return {values.squeeze(-1).transpose(a, -1), index.transpose(a, -1)};
}

std::pair<Tensor, Tensor> Tensor::cummin(int axis) const {
  if (ndim() > 0) detail::normalize_axis(axis, ndim(), "cummin");
  auto [values, index] = detail::inverse(*this).cummax(axis);  // min x = -max(-x), and the order reverses
  return {detail::inverse(values), index};
}

Tensor Tensor::logcumsumexp(int axis) const {
  Tensor x = detail::to_float(*this);
  if (ndim() == 0) return x;
  int a = detail::normalize_axis(axis, ndim(), "logcumsumexp");
  Operand minus_inf = -INFINITY;
  return prefixes(x, a, &minus_inf).logsumexp(-1).transpose(a, -1);
}

// ---- statistics ----
std::pair<Tensor, Tensor> Tensor::std_mean(Axes axis, bool keepdim, double correction) const {
  return {std(axis, keepdim, correction), mean(axis, keepdim)};
}

std::pair<Tensor, Tensor> Tensor::var_mean(Axes axis, bool keepdim, double correction) const {
  return {var(axis, keepdim, correction), mean(axis, keepdim)};
}

// Integers compare in float64, so no difference wraps around or rounds.
Tensor Tensor::isclose(const Operand& other, double rtol, double atol, bool equal_nan) const {
  if (rtol < 0 || atol < 0)
    throw ValueError("isclose", fmt::format("rtol and atol must be non-negative, got {} and {}", rtol, atol));
  auto [a, b] = detail::broadcasted(*this, other, false, "isclose");
  if (!a.dtype().is_float()) {
    a = a.cast(dtypes::float64);
    b = b.cast(dtypes::float64);
  }
  Tensor close = a.eq(b).logical_or((a - b).abs().le(atol + rtol * b.abs()));
  return equal_nan ? close.logical_or(a.isnan().logical_and(b.isnan())) : close;
}

bool Tensor::allclose(const Operand& other, double rtol, double atol, bool equal_nan) const {
  return isclose(other, rtol, atol, equal_nan).all().item<bool>();
}

Tensor Tensor::normalize(double p, int dim, double eps) const {
  int d = detail::normalize_axis(dim, ndim(), "normalize");
  if (!(p > 0)) throw ValueError("normalize", fmt::format("p must be positive, got {}", p));
  Tensor a = detail::to_float(*this).abs(), norm;
  if (std::isinf(p))
    norm = a.max(d, true);
  else if (p == 1)
    norm = a.sum(d, true);
  else if (p == 2)
    norm = a.square().sum(d, true).sqrt();
  else
    norm = a.pow(p).sum(d, true).pow(1 / p);
  return *this / norm.maximum(eps);
}

}  // namespace tg
