// Sorting without a sort kernel: each element's rank is how many elements of its row come before it, and
// a one-hot match of ranks with positions gathers the sorted row. O(n^2) work per row of n, in two fused
// reduces, with no data-dependent control flow; stable by construction, so equal values keep their order.
#include <fmt/format.h>

#include "base/error.hpp"
#include "tensor/internal.hpp"

namespace tg {

namespace {

// a before b in ascending order, NaN last (NaN counts as the largest value, as in PyTorch).
Tensor less(const Tensor& a, const Tensor& b) {
  if (!a.dtype().is_float()) return a.lt(b);
  return a.lt(b).logical_or(b.isnan().logical_and(a.isnan().logical_not()));
}

Tensor same(const Tensor& a, const Tensor& b) {
  if (!a.dtype().is_float()) return a.eq(b);
  return a.eq(b).logical_or(a.isnan().logical_and(b.isnan()));
}

// Sorts the last axis of xs: (values, int32 positions). Every comparison reads one stored copy: a fused
// graph may recompute an element with different rounding in each place it is used, and two copies of one
// value that compare unequal would break the ranks.
std::pair<Tensor, Tensor> sort_last(const Tensor& xs, bool descending) {
  Tensor x = xs.contiguous();
  int64_t n = x.shape(-1);
  Tensor pos = Tensor::arange(n, {}, x.device());
  Tensor mine = x.unsqueeze(-1), other = x.unsqueeze(-2);  // (..., i, 1) and (..., 1, j)
  Tensor ahead = descending ? less(mine, other) : less(other, mine);
  ahead = ahead.logical_or(same(other, mine).logical_and(pos.lt(pos.reshape({n, 1}))));
  Tensor rank = ahead.sum(-1, false, dtypes::int32);  // (..., i)
  Tensor slot = rank.unsqueeze(-1).eq(pos);           // (..., i, r)
  Tensor values = slot.where(x.unsqueeze(-1), detail::zero_of(x));
  values = x.dtype().is_bool() ? values.max(-2) : values.sum(-2, false, x.dtype());
  if (x.dtype().is_float()) {  // a sum starts from +0, so a -0 comes back as +0: put its sign back
    Tensor minus_zero = x.detach().eq(0).logical_and(x.detach().reciprocal().lt(0));
    values = slot.logical_and(minus_zero.unsqueeze(-1)).any(-2).where(-0.0, values);
  }
  Tensor index = slot.where(pos.reshape({n, 1}), 0).sum(-2, false, dtypes::int32);
  return {values, index};
}

}  // namespace

std::pair<Tensor, Tensor> Tensor::sort(int dim, bool descending) const {
  if (ndim() == 0) return {*this, zeros({}, dtypes::int32, device())};
  int d = detail::normalize_axis(dim, ndim(), "sort");
  auto [values, index] = sort_last(transpose(d, -1), descending);
  return {values.transpose(d, -1), index.transpose(d, -1)};
}

Tensor Tensor::argsort(int dim, bool descending) const {
  if (ndim() > 0) detail::normalize_axis(dim, ndim(), "argsort");
  return sort(dim, descending).second;
}

std::pair<Tensor, Tensor> Tensor::topk(int64_t k, int dim, bool largest) const {
  int d = detail::normalize_axis(dim, std::max(ndim(), 1), "topk");
  int64_t n = ndim() == 0 ? 1 : static_cast<int64_t>(shape()[d]);
  if (k < 0 || k > n)
    throw ValueError("topk", fmt::format("k {} is out of range for axis {} of size {}", k, d, n));
  auto [values, index] = sort(dim, largest);
  if (ndim() == 0) return {values, index};
  return {detail::shrink_axis(values, d, 0, k), detail::shrink_axis(index, d, 0, k)};
}

}  // namespace tg
