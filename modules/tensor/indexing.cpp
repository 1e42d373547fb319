// Indexing with NumPy semantics. Integers and slices are movement ops (shrink, flip, a reshape for
// steps); integer tensors select with one-hot masks and a sum, so everything stays lazy and fusable.
#include <algorithm>

#include <fmt/format.h>

#include "base/error.hpp"
#include "tensor/internal.hpp"

namespace tg {

namespace {

struct SliceBounds {
  int64_t start, step, count;
};

// Python's slice.indices(n) followed by len(range(...)).
SliceBounds slice_bounds(const Slice& s, int64_t n) {
  int64_t step = s.step.value_or(1);
  if (step == 0) throw ValueError("index", "slice step cannot be zero");
  auto clip = [&](int64_t v, int64_t lo, int64_t hi) { return std::clamp(v < 0 ? v + n : v, lo, hi); };
  if (step > 0) {
    int64_t start = s.start ? clip(*s.start, 0, n) : 0, stop = s.stop ? clip(*s.stop, 0, n) : n;
    return {start, step, std::max<int64_t>(0, (stop - start + step - 1) / step)};
  }
  int64_t start = s.start ? clip(*s.start, -1, n - 1) : n - 1, stop = s.stop ? clip(*s.stop, -1, n - 1) : -1;
  return {start, step, std::max<int64_t>(0, (start - stop - step - 1) / -step)};
}

Tensor slice_axis(const Tensor& x, int axis, const SliceBounds& b) {
  if (b.count == 0) return detail::shrink_axis(x, axis, 0, 0);
  if (b.step > 0)
    return detail::take_every(detail::shrink_axis(x, axis, b.start, b.start + (b.count - 1) * b.step + 1),
                              axis, b.step);
  int64_t lo = b.start + (b.count - 1) * b.step;
  return detail::take_every(detail::shrink_axis(x, axis, lo, b.start + 1).flip({axis}), axis, -b.step);
}

// x[..., t0, ..., t1, ...] for integer tensors at positions dims (NumPy advanced indexing): the broadcast
// index shape goes where the first indexed axis was, or in front when the indexed axes are apart.
Tensor advanced_index(const Tensor& x, const std::vector<int>& dims, const std::vector<Tensor>& idx) {
  Shape big = idx[0].shape();
  for (const Tensor& t : idx) big = detail::broadcast_shape(big, t.shape(), "index");
  int n = x.ndim(), d0 = dims[0], nb = static_cast<int>(big.size());
  Shape xr_shape(x.shape().begin(), x.shape().begin() + d0);
  xr_shape.insert(xr_shape.end(), big.size(), 1);
  xr_shape.insert(xr_shape.end(), x.shape().begin() + d0, x.shape().end());
  Tensor mask;
  std::vector<int> reduce_axes;
  for (size_t k = 0; k < dims.size(); k++) {
    int64_t size = x.shape()[dims[k]];
    Tensor t = detail::broadcast_to(idx[k], big, "index");
    t = t.lt(0).where(t + size, t);
    Shape t_shape(d0, 1), ar_shape(d0 + nb + (n - d0), 1);
    t_shape.insert(t_shape.end(), big.begin(), big.end());
    t_shape.insert(t_shape.end(), n - d0, 1);
    ar_shape[nb + dims[k]] = size;
    Tensor m = t.reshape(t_shape).eq(Tensor::arange(size, {}, x.device()).reshape(ar_shape));
    mask = mask.defined() ? mask.logical_and(m) : m;
    reduce_axes.push_back(nb + dims[k]);
  }
  Tensor picked = mask.where(x.reshape(xr_shape), detail::zero_of(x));
  Tensor r = x.dtype().is_bool() ? picked.max(reduce_axes) : picked.sum(reduce_axes, false, x.dtype());
  bool consecutive = dims.back() - dims.front() == static_cast<int>(dims.size()) - 1;
  if (consecutive || d0 == 0) return r;
  Dims order;
  for (int i = 0; i < nb; i++) order.push_back(d0 + i);
  for (int i = 0; i < r.ndim(); i++)
    if (i < d0 || i >= d0 + nb) order.push_back(i);
  return r.permute(order);
}

}  // namespace

Tensor Tensor::operator[](const Index& i) const { return index({i}); }
Tensor Tensor::operator[](std::vector<Index> indices) const { return index(std::move(indices)); }

Tensor Tensor::index(std::vector<Index> indices) const {
  int consumed = 0, ellipses = 0;
  for (const Index& ix : indices) {
    if (std::holds_alternative<EllipsisIndex>(ix.value()))
      ellipses++;
    else if (!std::holds_alternative<NewAxis>(ix.value()))
      consumed++;
  }
  if (ellipses > 1) throw IndexError("index", "an index can only have a single ellipsis");
  if (consumed > ndim())
    throw IndexError("index",
                     fmt::format("too many indices ({}) for a tensor of dimension {}", consumed, ndim()));
  std::vector<Index> full;
  for (const Index& ix : indices) {
    if (!std::holds_alternative<EllipsisIndex>(ix.value()))
      full.push_back(ix);
    else
      full.insert(full.end(), ndim() - consumed, Index(Slice{}));
  }
  if (!ellipses) full.insert(full.end(), ndim() - consumed, Index(Slice{}));

  Tensor x = *this;
  int dim = 0;
  Shape out;
  std::vector<int> adv_dims;
  std::vector<Tensor> adv_idx;
  for (const Index& ix : full) {
    const auto& v = ix.value();
    if (const int64_t* i = std::get_if<int64_t>(&v)) {
      if (*i < 0 && !x.shape()[dim].is_number()) {  // from the end of a symbolic axis: a symbolic bound
        const sint& n = x.shape()[dim];
        if (-*i > n.min())
          throw IndexError(
              "index", fmt::format("index {} is out of bounds for axis {} with size {} (as small as {})", *i,
                                   dim, n, n.min()));
        sint k = n + *i;
        x = detail::shrink_axis(x, dim++, k, k + 1);
        continue;
      }
      x = detail::pad_axis_to_max(x, dim);  // numbers count up to a symbolic axis' largest size (as tinygrad)
      int64_t size = x.shape()[dim], k = *i < 0 ? *i + size : *i;
      if (k < 0 || k >= size)
        throw IndexError("index",
                         fmt::format("index {} is out of bounds for axis {} with size {}", *i, dim, size));
      x = detail::shrink_axis(x, dim++, k, k + 1);
    } else if (const Slice* s = std::get_if<Slice>(&v)) {
      bool whole = !s->start && !s->stop && s->step.value_or(1) == 1;  // keeps a symbolic axis as it is
      if (!whole)
        x = slice_axis(detail::pad_axis_to_max(x, dim), dim, slice_bounds(*s, x.shape()[dim].max()));
      out.push_back(x.shape()[dim++]);
    } else if (std::holds_alternative<NewAxis>(v)) {
      out.push_back(1);
    } else if (const Tensor* t = std::get_if<Tensor>(&v)) {
      if (!t->dtype().is_int())
        throw IndexError("index",
                         fmt::format("tensors used as indices must be integer, got {}", t->dtype().name()));
      detail::check_same_device(x, *t, "index");
      adv_dims.push_back(static_cast<int>(out.size()));
      adv_idx.push_back(*t);
      out.push_back(x.shape()[dim++]);
    }
  }
  x = x.reshape(out);
  return adv_idx.empty() ? x : advanced_index(x, adv_dims, adv_idx);
}

Tensor Tensor::gather(int dim, const Tensor& index) const {
  if (index.ndim() != ndim())
    throw ShapeError("gather",
                     fmt::format("index has {} dimensions but the tensor has {}", index.ndim(), ndim()));
  if (!index.dtype().is_int())
    throw DTypeError("gather", fmt::format("index must be integer, got {}", index.dtype().name()));
  detail::check_same_device(*this, index, "gather");
  int d = detail::normalize_axis(dim, ndim(), "gather");
  ShapePairs bounds;
  for (int i = 0; i < ndim(); i++) {
    if (i != d && index.shape()[i] > shape()[i])
      throw ShapeError("gather",
                       fmt::format("index {} is larger than {} outside axis {}",
                                   detail::shape_str(index.shape()), detail::shape_str(shape()), d));
    bounds.emplace_back(0, i == d ? shape()[i] : index.shape()[i]);
  }
  Tensor x = shrink(bounds).unsqueeze(-1).transpose(-1, d);
  Tensor hit = index.unsqueeze(-1).eq(arange(static_cast<int64_t>(shape()[d]), {}, device()));
  Tensor picked = hit.where(x, detail::zero_of(x));
  return dtype().is_bool() ? picked.max(-1) : picked.sum(-1, false, dtype());
}

Tensor Tensor::one_hot(int64_t num_classes) const {
  if (!dtype().is_int())
    throw DTypeError("one_hot", fmt::format("needs an integer tensor, got {}", dtype().name()));
  if (num_classes < 0)
    throw ValueError("one_hot", fmt::format("num_classes must be non-negative, got {}", num_classes));
  return unsqueeze(-1).eq(arange(num_classes, {}, device())).where(1, 0);
}

}  // namespace tg
