#pragma once
// Several devices in one process: a tensor split across devices, and the ring all-reduce that sums one
// tensor per device. These are plain functions over per-device tensors (lazy, realized by the caller),
// not a sharded tensor type: ops on the parts run per device as ordinary tensors.
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tensor/tensor.hpp"

namespace tg {

// Part i of x on devices[i]: x split along axis into equal parts (the size must divide), or with no axis
// a full copy on every device. Throws ValueError naming "shard" for no devices or an uneven split.
std::vector<Tensor> shard(const Tensor& x, std::span<const std::string> devices, std::optional<int> axis);

// The element-wise sum of xs (one tensor per device, equal shapes and dtypes) on each device of xs, in
// the order given. A ring: n-1 reduce-scatter then n-1 all-gather steps, each copying 1/n of the tensor
// from device i to device i+1, so each device sends and receives 2(n-1)/n of it in all.
std::vector<Tensor> all_reduce_sum(std::span<const Tensor> xs);

}  // namespace tg
