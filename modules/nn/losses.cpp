// Loss functions: masks and reductions around log_softmax, logsigmoid and plain arithmetic.
#include "nn/losses.hpp"

#include <fmt/format.h>

#include "base/error.hpp"

namespace tg::nn {

namespace {

Tensor reduce(const Tensor& x, Reduction r) {
  if (r == Reduction::SUM) return x.sum();
  if (r == Reduction::MEAN) return x.mean();
  return x;
}

int class_axis(const Tensor& input, std::string_view op) {
  if (input.ndim() < 1) throw ShapeError(op, "input needs a class axis, got a 0-d tensor");
  return input.ndim() == 1 ? 0 : 1;
}

void check_same_shape(const Tensor& a, const Tensor& b, std::string_view op) {
  if (a.shape() != b.shape())
    throw ShapeError(op, fmt::format("input {} and target {} must have the same shape", shape_str(a.shape()),
                                     shape_str(b.shape())));
}

// The class-index target as a bool one-hot mask along axis c of input, plus the "not ignored" mask.
std::pair<Tensor, Tensor> class_mask(const Tensor& input, const Tensor& target, int c, int64_t ignore_index,
                                     std::string_view op) {
  if (!target.dtype().is_int())
    throw DTypeError(op, fmt::format("class-index targets must be integers, got {}", target.dtype().name()));
  Shape expect = input.shape();
  expect.erase(expect.begin() + c);
  if (target.shape() != expect)
    throw ShapeError(op, fmt::format("target {} does not fit input {}: expected {}",
                                     shape_str(target.shape()), shape_str(input.shape()), shape_str(expect)));
  Shape ar(input.ndim() - c, 1);
  ar[0] = input.shape()[c];
  Tensor classes = Tensor::arange(input.shape()[c], {}, input.device()).reshape(ar);
  Tensor keep = target.ne(ignore_index);
  return {target.unsqueeze(c).eq(classes.cast(target.dtype())), keep};
}

// -(sum of kept losses) averaged over kept entries for MEAN, as PyTorch does with ignore_index.
Tensor reduce_kept(const Tensor& loss, const Tensor& keep, Reduction r) {
  Tensor l = keep.where(loss, 0);
  if (r == Reduction::MEAN) return l.sum() / keep.sum().cast(l.dtype());
  return reduce(l, r);
}

}  // namespace

Tensor nll_loss(const Tensor& input, const Tensor& target, Reduction reduction, int64_t ignore_index) {
  int c = class_axis(input, "nll_loss");
  auto [hot, keep] = class_mask(input, target, c, ignore_index, "nll_loss");
  return reduce_kept(-hot.where(input, 0).sum(c), keep, reduction);
}

Tensor cross_entropy(const Tensor& input, const Tensor& target, Reduction reduction, double label_smoothing,
                     int64_t ignore_index) {
  if (label_smoothing < 0.0 || label_smoothing > 1.0)
    throw ValueError("cross_entropy",
                     fmt::format("label_smoothing must be in [0, 1], got {}", label_smoothing));
  int c = class_axis(input, "cross_entropy");
  if (target.shape() == input.shape() && target.dtype().is_float()) {
    Tensor t = (1 - label_smoothing) * target + label_smoothing / static_cast<double>(input.shape()[c]);
    return reduce(-(input.log_softmax(c) * t).sum(c), reduction);
  }
  auto [hot, keep] = class_mask(input, target, c, ignore_index, "cross_entropy");
  Tensor logp = input.log_softmax(c);
  Tensor loss = -hot.where(logp, 0).sum(c);
  if (label_smoothing > 0) loss = (1 - label_smoothing) * loss - label_smoothing * logp.mean(c);
  return reduce_kept(loss, keep, reduction);
}

Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target, Reduction reduction,
                                        const Tensor& pos_weight) {
  check_same_shape(input, target, "binary_cross_entropy_with_logits");
  Tensor pos = target * input.logsigmoid();
  if (pos_weight.defined()) pos = pos * pos_weight;
  return reduce(-(pos + (1 - target) * (-input).logsigmoid()), reduction);
}

Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, Reduction reduction) {
  check_same_shape(input, target, "binary_cross_entropy");
  // PyTorch clamps each log at -100 so that 0 and 1 give finite losses
  Tensor lp = input.log().maximum(-100), lq = (1 - input).log().maximum(-100);
  return reduce(-(target * lp + (1 - target) * lq), reduction);
}

Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  check_same_shape(input, target, "mse_loss");
  return reduce((input - target).square(), reduction);
}

Tensor l1_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  check_same_shape(input, target, "l1_loss");
  return reduce((input - target).abs(), reduction);
}

}  // namespace tg::nn
