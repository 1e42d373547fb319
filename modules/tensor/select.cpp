// Writes by index (scatter, scatter_reduce) and selections of data-dependent size (nonzero,
// masked_select). A scatter is a one-hot mask of the index against the positions of its axis and a
// reduce over the index's own entries, so it stays lazy and differentiable like gather.
#include <cmath>

#include <fmt/format.h>

#include "base/error.hpp"
#include "tensor/internal.hpp"

namespace tg {

using detail::shape_str;

namespace {

// The smallest value of d: what a max over nothing but fill returns.
Number lowest(DType d) {
  if (d.is_bool()) return false;
  if (d.is_float()) return -INFINITY;
  return d.min_int();
}

// One scatter along axis d of x: mask (.., I[d] at d, .., n) says index[..] == k for each position k of
// x's axis d (places the index does not reach are false), src the values in the same layout.
struct Scatter {
  int d;
  Tensor mask, src;
  // A reduce over the index entries (kept as size 1 at d), back in x's layout.
  Tensor back(const Tensor& r) const { return r.transpose(d, -1).squeeze(-1); }
};

Scatter plan_scatter(const Tensor& x, int dim, const Tensor& index, const Tensor& src, std::string_view op) {
  if (!index.dtype().is_int())
    throw DTypeError(op, fmt::format("index must be integer, got {}", index.dtype().name()));
  if (index.ndim() != x.ndim() || src.ndim() != x.ndim())
    throw ShapeError(op,
                     fmt::format("index {} and src {} need the {} dimensions of {}", shape_str(index.shape()),
                                 shape_str(src.shape()), x.ndim(), shape_str(x.shape())));
  int d = detail::normalize_axis(dim, x.ndim(), op);
  std::vector<std::pair<int64_t, int64_t>> grow;
  for (int k = 0; k < x.ndim(); k++) {
    if ((k != d && index.shape()[k] > x.shape()[k]) || index.shape()[k] > src.shape()[k])
      throw ShapeError(
          op, fmt::format("index {} is larger than src {} or, outside axis {}, than {}",
                          shape_str(index.shape()), shape_str(src.shape()), d, shape_str(x.shape())));
    grow.emplace_back(
        0, k == d ? 0 : static_cast<int64_t>(x.shape()[k]) - static_cast<int64_t>(index.shape()[k]));
  }
  detail::check_same_device(x, index, op);
  int64_t n = x.shape()[d];
  Tensor mask = index.unsqueeze(-1).eq(Tensor::arange(n, {}, x.device()));
  grow.emplace_back(0, 0);
  mask = mask.pad(grow);
  grow.pop_back();
  Tensor values = src.shrink_to(index.shape()).cast(x.dtype()).pad(grow).unsqueeze(-1);
  return {d, mask, values};
}

Tensor reduce_sum(const Tensor& picked, int d, DType dt) {
  return dt.is_bool() ? picked.max(d, true) : picked.sum(d, true, dt);
}

}  // namespace

// Several writes to one element: only the last along dim is kept, so the result is one of them.
Tensor Tensor::scatter(int dim, const Tensor& index, const Operand& src) const {
  Tensor s = src.tensor() ? *src.tensor() : full(index.shape(), *src.number(), dtype(), device());
  Scatter p = plan_scatter(*this, dim, index, s, "scatter");
  Shape at(ndim() + 1, 1);
  at[p.d] = p.mask.shape()[p.d];
  Tensor pos = arange(static_cast<int64_t>(at[p.d]), {}, device()).reshape(at);
  Tensor last = p.mask.where(pos, -1).max(p.d, true);
  Tensor mask = p.mask.logical_and(pos.eq(last));
  Tensor hit = p.back(mask.any(p.d, true));
  return hit.where(p.back(reduce_sum(mask.where(p.src, detail::zero_of(*this)), p.d, dtype())), *this);
}

Tensor Tensor::scatter_reduce(int dim, const Tensor& index, const Tensor& src, std::string_view reduce,
                              bool include_self) const {
  if (reduce == "amin") {
    Tensor r = detail::inverse(*this).scatter_reduce(dim, index, detail::inverse(src.cast(dtype())), "amax",
                                                     include_self);
    return detail::inverse(r);
  }
  if (reduce != "sum" && reduce != "prod" && reduce != "mean" && reduce != "amax")
    throw ValueError("scatter_reduce",
                     fmt::format("reduce must be 'sum', 'prod', 'mean', 'amax' or 'amin', got '{}'", reduce));
  Scatter p = plan_scatter(*this, dim, index, src, "scatter_reduce");
  Tensor hit = p.back(p.mask.any(p.d, true));
  if (reduce == "prod") {
    Tensor base = include_self ? *this : hit.where(1, *this).cast(dtype());
    return (base * p.back(p.mask.where(p.src, 1).prod(p.d, true, dtype()))).cast(dtype());
  }
  if (reduce == "amax") {
    Operand fill = include_self ? Operand(unsqueeze(-1).transpose(p.d, -1)) : Operand(lowest(dtype()));
    return hit.where(p.back(p.mask.where(p.src, fill).max(p.d, true)), *this);
  }
  Tensor total = p.back(reduce_sum(p.mask.where(p.src, detail::zero_of(*this)), p.d, dtype()));
  if (include_self) total = total + *this;
  if (reduce == "sum") return hit.where(total, *this).cast(dtype());
  // At least 1: where nothing is scattered the division is still computed (and an integer one by 0 traps on
  // the CPU), though its result is not taken.
  Tensor count = (p.back(p.mask.sum(p.d, true, dtypes::int32)) + (include_self ? 1 : 0)).maximum(1);
  Tensor mean = dtype().is_float() ? total / count : total.div(count, Rounding::FLOOR);
  return hit.where(mean, *this).cast(dtype());
}

namespace {

// For a flat bool mask m of n elements that holds count trues: (n, count), true at (i, k) when element i
// is the k-th true one.
Tensor select_matrix(const Tensor& m, int64_t count) {
  Tensor pos = m.cumsum(0) - 1;
  return m.unsqueeze(1).logical_and(pos.unsqueeze(1).eq(Tensor::arange(count, {}, m.device())));
}

// m is realized first: the count and the selection then read the same stored mask.
int64_t count_true(Tensor& m) {
  m = m.contiguous().realize();
  return m.sum().item<int64_t>();
}

}  // namespace

Tensor Tensor::nonzero() const {
  Tensor m = cast(dtypes::bool_).flatten();
  int64_t count = count_true(m), n = m.shape(0);
  if (ndim() == 0) return zeros({count, 0}, dtypes::int32, device());
  Tensor sel = select_matrix(m, count);
  Tensor flat = sel.where(arange(n, {}, device()).unsqueeze(1), 0).sum(0, false, dtypes::int32);
  std::vector<Tensor> coords;
  int64_t stride = 1;
  for (int k = ndim() - 1; k >= 0; k--) {
    int64_t size = shape()[k];
    coords.insert(coords.begin(), flat.div(stride, Rounding::TRUNC).mod(std::max<int64_t>(size, 1)));
    stride *= size;
  }
  return stack(coords, 1);
}

Tensor Tensor::masked_select(const Tensor& mask) const {
  if (!mask.dtype().is_bool())
    throw DTypeError("masked_select", fmt::format("mask must be bool, got {}", mask.dtype().name()));
  detail::check_same_device(*this, mask, "masked_select");
  Shape s = detail::broadcast_shape(shape(), mask.shape(), "masked_select");
  Tensor x = detail::broadcast_to(*this, s, "masked_select").flatten();
  Tensor m = detail::broadcast_to(mask, s, "masked_select").flatten();
  int64_t count = count_true(m);
  Tensor sel = select_matrix(m, count);
  return reduce_sum(sel.where(x.unsqueeze(1), detail::zero_of(x)), 0, dtype()).squeeze(0);
}

}  // namespace tg
