// nn functional ops: softmax family, layer normalization and the cross-entropy losses.
#include <fmt/format.h>

#include "base/error.hpp"
#include "tensor/internal.hpp"

namespace tg {

namespace {

Tensor reduce_loss(const Tensor& x, Reduction r) {
  switch (r) {
    case Reduction::SUM:
      return x.sum();
    case Reduction::MEAN:
      return x.mean();
    case Reduction::NONE:
      break;
  }
  return x;
}

void check_smoothing(double s, std::string_view op) {
  if (s < 0.0 || s > 1.0) throw ValueError(op, fmt::format("label_smoothing must be in [0, 1], got {}", s));
}

}  // namespace

// The max is subtracted for range safety and detached: it cancels out, so it carries no gradient.
Tensor Tensor::softmax(int axis) const {
  axis = detail::normalize_axis(axis, ndim(), "softmax");
  Tensor e = (*this - max(axis, true).detach()).exp();
  return e * e.sum(axis, true).reciprocal();
}

Tensor Tensor::log_softmax(int axis) const {
  axis = detail::normalize_axis(axis, ndim(), "log_softmax");
  Tensor m = *this - max(axis, true).detach();
  return m - m.exp().sum(axis, true).log();
}

Tensor Tensor::layernorm(Axes axis, double eps) const {
  Tensor y = *this - mean(axis, true);
  return y * (y * y).mean(axis, true).add(eps).rsqrt();
}

Tensor Tensor::sparse_categorical_crossentropy(const Tensor& y, int64_t ignore_index, double label_smoothing,
                                               Reduction reduction) const {
  check_smoothing(label_smoothing, "sparse_categorical_crossentropy");
  if (!y.dtype().is_int())
    throw DTypeError("sparse_categorical_crossentropy",
                     fmt::format("labels must be integer, got {}", y.dtype().name()));
  Shape expect(shape().begin(), shape().end() - (ndim() ? 1 : 0));
  if (ndim() == 0 || y.shape() != expect)
    throw ShapeError("sparse_categorical_crossentropy",
                     fmt::format("labels {} do not match logits {}", detail::shape_str(y.shape()),
                                 detail::shape_str(shape())));
  Tensor log_probs = log_softmax(-1);
  Tensor keep = y.ne(ignore_index);
  Tensor target = y.unsqueeze(-1).eq(arange(shape().back(), {}, device())).logical_and(keep.unsqueeze(-1));
  Tensor smoothing = label_smoothing * (log_probs.mean(-1) * keep);
  Tensor picked = (1 - label_smoothing) * target.where(log_probs, 0).sum(-1) + smoothing;
  Tensor loss = keep.where(-picked, 0.0);  // ignored labels give +0, not -0
  if (reduction == Reduction::MEAN) return loss.sum() / keep.sum();
  return reduce_loss(loss, reduction);
}

Tensor Tensor::cross_entropy(const Tensor& y, Reduction reduction, double label_smoothing) const {
  check_smoothing(label_smoothing, "cross_entropy");
  int classes = ndim() == 1 ? 0 : 1;
  Tensor target = y;
  if (y.shape() != shape()) {
    if (max(classes).shape() != y.shape() || !y.dtype().is_int())
      throw ShapeError("cross_entropy",
                       fmt::format("targets {} fit neither the logits {} nor their class indices",
                                   detail::shape_str(y.shape()), detail::shape_str(shape())));
    Shape ar(ndim() - classes, 1);
    ar[0] = shape()[classes];
    target = y.unsqueeze(classes).eq(arange(shape()[classes], {}, device()).reshape(ar)).cast(dtype());
  }
  target = (1 - label_smoothing) * target + label_smoothing / static_cast<double>(shape()[classes]);
  return reduce_loss(-(log_softmax(classes) * target).sum(classes), reduction);
}

Tensor Tensor::binary_crossentropy(const Tensor& y, Reduction reduction) const {
  return reduce_loss(-y * log() - (1 - y) * (1 - *this).log(), reduction);
}

Tensor Tensor::binary_crossentropy_logits(const Tensor& y, Reduction reduction) const {
  return reduce_loss(-(y * logsigmoid() + (1 - y) * (-*this).logsigmoid()), reduction);
}

}  // namespace tg
