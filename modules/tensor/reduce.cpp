// Reductions: everything is REDUCE_AXIS with ADD, MUL or MAX plus elementwise ops around it.
#include <algorithm>

#include <fmt/format.h>

#include "base/error.hpp"
#include "tensor/internal.hpp"

namespace tg {

namespace {

// REDUCE_AXIS over axes (kept as size 1), then dropped unless keepdim.
Tensor reduce(const Tensor& x, Ops op, const Axes& axes, bool keepdim, std::string_view name) {
  std::vector<int> ax = detail::normalize_axes(axes, x.ndim(), name);
  if (ax.empty()) return x;
  IntVec arg_axes(ax.begin(), ax.end());
  Tensor r =
      detail::derive(UOp::make(Ops::REDUCE_AXIS, x.dtype(), {x.uop()}, ReduceArg{op, arg_axes}), x, {&x});
  if (keepdim) return r;
  Shape out;
  for (int i = 0; i < x.ndim(); i++)
    if (!std::binary_search(ax.begin(), ax.end(), i)) out.push_back(x.shape()[i]);
  return r.reshape(out);
}

// Number of elements each output of a reduction over axes combines.
sint reduced_count(const Tensor& x, const Axes& axes, std::string_view name) {
  sint n = 1;
  for (int a : detail::normalize_axes(axes, x.ndim(), name)) n *= x.shape()[a];
  return n;
}

// total / count; a symbolic count divides as a tensor, so the quotient follows the variables' binding.
Tensor divide_by_count(const Tensor& total, const sint& count) {
  if (count.is_number()) return total.div(static_cast<int64_t>(count));
  return total.div(Tensor::from_size(count, total.dtype(), total.device()));
}

}  // namespace

Tensor Tensor::sum(Axes axis, bool keepdim, std::optional<DType> dtype) const {
  Tensor r =
      reduce(cast(dtype.value_or(dtypes::sum_acc_dtype(this->dtype()))), Ops::ADD, axis, keepdim, "sum");
  bool narrow_float = this->dtype() == dtypes::float16 || this->dtype() == dtypes::bfloat16;
  return !dtype && narrow_float ? r.cast(this->dtype())
                                : r;  // accumulate wide, return the input's float type
}

Tensor Tensor::prod(Axes axis, bool keepdim, std::optional<DType> dtype) const {
  return reduce(cast(dtype.value_or(this->dtype())), Ops::MUL, axis, keepdim, "prod");
}

Tensor Tensor::max(Axes axis, bool keepdim) const { return reduce(*this, Ops::MAX, axis, keepdim, "max"); }

Tensor Tensor::min(Axes axis, bool keepdim) const {
  return detail::inverse(detail::inverse(*this).max(axis, keepdim));  // min x = -max(-x)
}

Tensor Tensor::mean(Axes axis, bool keepdim) const {
  DType out = dtype().is_float() ? dtype() : dtypes::float32;
  Tensor total = cast(dtypes::sum_acc_dtype(dtype())).sum(axis, keepdim);
  return divide_by_count(total, reduced_count(*this, axis, "mean")).cast(out);
}

Tensor Tensor::var(Axes axis, bool keepdim, double correction) const {
  DType out = dtype().is_float() ? dtype() : dtypes::float32;
  Tensor squares = (*this - mean(axis, true)).square();
  Tensor total = squares.cast(dtypes::sum_acc_dtype(squares.dtype())).sum(axis, keepdim);
  sint n = reduced_count(*this, axis, "var");
  if (!n.is_number()) {  // max(0, n - correction) as tensors, the count following the binding
    Tensor dof = Tensor::from_size(n, total.dtype(), total.device()) - correction;
    return total.div(dof.maximum(0.0)).cast(out);
  }
  return total.div(std::max(0.0, static_cast<double>(static_cast<int64_t>(n)) - correction)).cast(out);
}

Tensor Tensor::std(Axes axis, bool keepdim, double correction) const {
  return var(axis, keepdim, correction).sqrt();
}

Tensor Tensor::any(Axes axis, bool keepdim) const { return cast(dtypes::bool_).max(axis, keepdim); }
Tensor Tensor::all(Axes axis, bool keepdim) const { return logical_not().any(axis, keepdim).logical_not(); }

Tensor Tensor::logsumexp(Axes axis, bool keepdim) const {
  Tensor m = max(axis, true).detach();
  if (dtype().is_float()) m = m.isinf().where(0.0, m);  // an all -inf (or any +inf) slice: no inf - inf
  Tensor r = (*this - m).exp().sum(axis, keepdim).log();
  return r + m.reshape(r.shape());
}

Tensor Tensor::argmax(std::optional<int> axis, bool keepdim) const {
  if (!axis) {
    Tensor r = flatten().argmax(0);
    return keepdim ? r.reshape(Shape(ndim(), 1)) : r;
  }
  int a = detail::normalize_axis(*axis, ndim(), "argmax");
  int64_t n = shape()[a];
  // count down from n at the first maximum, so the largest tag marks the first position
  Shape tag_shape(ndim() - a, 1);
  tag_shape[0] = n;
  Tensor tags = arange(n, 0, -1, {}, device()).reshape(tag_shape);
  Tensor hits = eq(max(a, true)).where(tags, 0);
  return (n - hits.max(a, keepdim)).cast(dtypes::int32);
}

Tensor Tensor::argmin(std::optional<int> axis, bool keepdim) const {
  return detail::inverse(*this).argmax(axis, keepdim);
}

Tensor Tensor::cumsum(int axis) const {
  if (ndim() == 0) return cast(sum().dtype());
  int a = detail::normalize_axis(axis, ndim(), "cumsum");
  int64_t n = shape()[a];
  // out[i] = sum over j <= i: a lower-triangular mask over an expanded copy of the axis
  Tensor x = transpose(a, -1).unsqueeze(-2);
  Tensor mask = arange(n, {}, device()).reshape({n, 1}).ge(arange(n, {}, device()).reshape({1, n}));
  Shape full = x.shape();
  full[full.size() - 2] = n;
  return mask.where(x.expand(full), 0).sum(-1).transpose(a, -1);
}

}  // namespace tg
