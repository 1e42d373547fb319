#pragma once
// Loss functions with PyTorch's signatures and semantics (class axis 1, ignore_index, label smoothing).
#include <cstdint>

#include "tensor/tensor.hpp"

namespace tg::nn {

// input: logits (C,), (N, C) or (N, C, d...). target: class indices (shape without the class axis;
// ignore_index entries count for nothing, and the mean is over the others) or class probabilities
// (same shape as input).
Tensor cross_entropy(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::MEAN,
                     double label_smoothing = 0.0, int64_t ignore_index = -100);
// input: log-probabilities with the class axis 1 (or 0 for (C,)); target: class indices.
Tensor nll_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::MEAN,
                int64_t ignore_index = -100);
// pos_weight (optional) scales the positive term, broadcast along the last axis.
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        Reduction reduction = Reduction::MEAN,
                                        const Tensor& pos_weight = Tensor());
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::MEAN);
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::MEAN);
Tensor l1_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::MEAN);

}  // namespace tg::nn
