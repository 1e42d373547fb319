// Shape helpers composed from movement ops: triangles and masks, roll, diagonals, meshgrid,
// repeat_interleave, unfold, pad_to/shrink_to.
#include <algorithm>
#include <numeric>

#include <fmt/format.h>

#include "base/error.hpp"
#include "tensor/internal.hpp"

namespace tg {

using detail::shape_str;

namespace {

// Keeps the elements of the last two axes where col - row compares with diagonal as `lower` says.
Tensor triangle(const Tensor& x, int64_t diagonal, bool lower, std::string_view op) {
  if (x.ndim() < 2)
    throw ShapeError(op, fmt::format("needs at least 2 dimensions, got {}", shape_str(x.shape())));
  int64_t rows = x.shape(-2), cols = x.shape(-1);
  Tensor row = Tensor::arange(rows, {}, x.device()).reshape({rows, 1}) + diagonal;
  Tensor col = Tensor::arange(cols, {}, x.device());
  return (lower ? col.le(row) : col.ge(row)).where(x, detail::zero_of(x));
}

}  // namespace

Tensor Tensor::masked_fill(const Tensor& mask, const Operand& value) const {
  if (!mask.dtype().is_bool())
    throw DTypeError("masked_fill", fmt::format("mask must be bool, got {}", mask.dtype().name()));
  if (value.tensor() && value.tensor()->ndim() != 0)
    throw ShapeError("masked_fill", fmt::format("value must be a number or a 0-d tensor, got shape {}",
                                                shape_str(value.tensor()->shape())));
  return detail::broadcast_to(mask, shape(), "masked_fill").where(value, *this).cast(dtype());
}

Tensor Tensor::tril(int64_t diagonal) const { return triangle(*this, diagonal, true, "tril"); }
Tensor Tensor::triu(int64_t diagonal) const { return triangle(*this, diagonal, false, "triu"); }

Tensor Tensor::roll(std::vector<int64_t> shifts, Dims dims) const {
  if (dims.empty()) {
    if (shifts.size() != 1)
      throw ValueError("roll",
                       fmt::format("{} shifts without dims; the flattened tensor takes one", shifts.size()));
    return flatten().roll(shifts, {0}).reshape(shape());
  }
  if (shifts.size() != dims.size())
    throw ValueError("roll", fmt::format("{} shifts for {} dims", shifts.size(), dims.size()));
  Tensor x = *this;
  for (size_t k = 0; k < dims.size(); k++) {
    int d = detail::normalize_axis(dims[k], ndim(), "roll");
    int64_t n = shape()[d];
    int64_t s = n == 0 ? 0 : ((shifts[k] % n) + n) % n;
    if (s) x = cat({detail::shrink_axis(x, d, n - s, n), detail::shrink_axis(x, d, 0, n - s)}, d);
  }
  return x;
}

Tensor Tensor::diag(int64_t diagonal) const {
  if (ndim() == 2) return this->diagonal(diagonal, 0, 1);
  if (ndim() != 1)
    throw ShapeError("diag", fmt::format("needs a 1-d or 2-d tensor, got {}", shape_str(shape())));
  int64_t n = shape()[0], k = std::abs(diagonal);
  Tensor square =
      eye(n, {}, dtypes::bool_, device()).where(reshape({1, n}).expand({n, n}), detail::zero_of(*this));
  if (diagonal >= 0) return square.pad({{0, k}, {k, 0}});
  return square.pad({{k, 0}, {0, k}});
}

// The two axes go last; a shrink aligns the wanted diagonal with the main one of an L x L block, whose
// elements i * (L + 1) of the flattened block are the diagonal.
Tensor Tensor::diagonal(int64_t offset, int dim1, int dim2) const {
  int a = detail::normalize_axis(dim1, ndim(), "diagonal"),
      b = detail::normalize_axis(dim2, ndim(), "diagonal");
  if (a == b) throw ValueError("diagonal", fmt::format("dim1 and dim2 are both axis {}", a));
  Dims order;
  for (int i = 0; i < ndim(); i++)
    if (i != a && i != b) order.push_back(i);
  order.insert(order.end(), {a, b});
  Tensor x = permute(order);
  int64_t rows = shape()[a], cols = shape()[b];
  int64_t r0 = std::min(rows, std::max<int64_t>(0, -offset)),
          c0 = std::min(cols, std::max<int64_t>(0, offset));
  int64_t len = std::min(rows - r0, cols - c0);
  int n = x.ndim();
  x = detail::shrink_axis(detail::shrink_axis(x, n - 2, r0, r0 + len), n - 1, c0, c0 + len);
  Shape lead(x.shape().begin(), x.shape().end() - 2);
  std::vector<std::pair<int64_t, int64_t>> pad(n - 1, {0, 0});
  pad.back() = {0, len};
  Shape wide = lead, out = lead;
  wide.insert(wide.end(), {len, len + 1});
  out.push_back(len);
  Shape flat = lead;
  flat.push_back(len * len);
  return detail::shrink_axis(x.reshape(flat).pad(pad).reshape(wide), n - 1, 0, 1).reshape(out);
}

std::vector<Tensor> Tensor::meshgrid(std::vector<Tensor> tensors, std::string_view indexing) {
  if (indexing != "ij" && indexing != "xy")
    throw ValueError("meshgrid", fmt::format("indexing must be 'ij' or 'xy', got '{}'", indexing));
  if (tensors.empty()) throw ValueError("meshgrid", "needs at least one tensor");
  Shape out;
  for (const Tensor& t : tensors) {
    if (t.ndim() > 1)
      throw ShapeError("meshgrid", fmt::format("needs 0-d or 1-d tensors, got {}", shape_str(t.shape())));
    out.push_back(t.numel());
  }
  bool xy = indexing == "xy" && tensors.size() > 1;
  if (xy) std::swap(out[0], out[1]);
  std::vector<Tensor> grids;
  for (size_t i = 0; i < tensors.size(); i++) {
    size_t at = xy && i < 2 ? 1 - i : i;
    Shape s(out.size(), 1);
    s[at] = out[at];
    grids.push_back(tensors[i].reshape(s).expand(out));
  }
  return grids;
}

Tensor Tensor::repeat_interleave(int64_t repeats, std::optional<int> dim) const {
  if (repeats < 0)
    throw ValueError("repeat_interleave", fmt::format("repeats must be non-negative, got {}", repeats));
  if (!dim) return flatten().repeat_interleave(repeats, 0);
  int d = detail::normalize_axis(*dim, ndim(), "repeat_interleave");
  Shape s = unsqueeze(d + 1).shape();
  s[d + 1] = repeats;
  return unsqueeze(d + 1).expand(s).flatten(d, d + 1);
}

// The axis goes last, pool() cuts it into (windows, size), and the window count goes back to dim.
Tensor Tensor::unfold(int dim, int64_t size, int64_t step) const {
  int d = detail::normalize_axis(dim, std::max(ndim(), 1), "unfold");
  Tensor x = ndim() == 0 ? reshape({1}) : *this;
  int64_t n = x.shape()[d];
  if (step <= 0) throw ValueError("unfold", fmt::format("step must be positive, got {}", step));
  if (size < 0 || size > n)
    throw ValueError("unfold", fmt::format("size {} does not fit axis {} of size {}", size, d, n));
  int last = x.ndim() - 1;
  if (size == 0) {
    Shape s = x.shape();
    s[d] = n / step + 1;
    s.push_back(0);
    return Tensor::zeros(s, dtype(), device());
  }
  Tensor w = x.transpose(d, last).pool({size}, {step}, {1}, "unfold");
  return w.transpose(d, last);
}

Tensor Tensor::pad_to(Shape target) const {
  if (static_cast<int>(target.size()) != ndim())
    throw ShapeError("pad_to", fmt::format("target {} for the {}-d shape {}", shape_str(target), ndim(),
                                           shape_str(shape())));
  std::vector<std::pair<int64_t, int64_t>> pads;
  for (int i = 0; i < ndim(); i++) {
    int64_t want = target[i] == -1 ? static_cast<int64_t>(shape()[i]) : static_cast<int64_t>(target[i]);
    if (want < shape()[i])
      throw ValueError("pad_to",
                       fmt::format("cannot pad {} to the smaller {}", shape_str(shape()), shape_str(target)));
    pads.emplace_back(0, want - static_cast<int64_t>(shape()[i]));
  }
  return pad(pads);
}

Tensor Tensor::shrink_to(Shape target) const {
  if (static_cast<int>(target.size()) != ndim())
    throw ShapeError("shrink_to", fmt::format("target {} for the {}-d shape {}", shape_str(target), ndim(),
                                              shape_str(shape())));
  ShapePairs bounds;
  for (int i = 0; i < ndim(); i++) {
    sint want = target[i] == -1 ? shape()[i] : target[i];
    if (want.is_number() && shape()[i].is_number() && static_cast<int64_t>(want) > shape()[i])
      throw ValueError("shrink_to", fmt::format("cannot shrink {} to the larger {}", shape_str(shape()),
                                                shape_str(target)));
    bounds.emplace_back(0, want);
  }
  return shrink(bounds);
}

}  // namespace tg
