#pragma once
// Several devices in one process. A tensor over several devices (Tensor::shard) is one graph node, MULTI,
// holding one part per device; ops on it build the ordinary tensor graph over the whole tensor, and
// resolve_multi turns that graph into one graph per device just before scheduling: elementwise, movement
// and reduce ops run on each part, and a reduce over the split axis becomes a ring all-reduce made of
// copies between the devices (tinygrad's MultiLazyBuffer, kept in the graph).
#include <optional>
#include <span>
#include <string>
#include <string_view>
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

// The same ring on graph nodes, lazily: xs[i] on devices[i] combined by op (ADD, MUL or MAX).
std::vector<UOpRef> ring_all_reduce(Ops op, std::span<const UOpRef> xs, std::span<const std::string> devices);

// The devices a device() names: "CLANG,CLANG:1" -> {"CLANG", "CLANG:1"}; a single device is a list of one.
std::vector<std::string> split_devices(std::string_view device);
// The parts of a tensor over several devices, one per device; a tensor on one device is its only part.
std::vector<Tensor> shards(const Tensor& x);
// The axis a tensor over several devices is split along; none for a full copy on each device.
std::optional<int> shard_axis(const Tensor& x);

// Each root with every MULTI resolved: a graph on one device, or a MULTI whose sources are one graph per
// device. Throws NotSupportedError naming the op for what cannot run per part (e.g. a shrink across parts).
std::vector<UOpRef> resolve_multi(std::span<const UOpRef> roots);
// Whether any tensor over several devices was made (resolve_multi is skipped until one is).
bool multi_in_use();
// The device a tensor-graph node computes on; for a MULTI its devices joined by ','.
std::string graph_device(const UOp* u);

}  // namespace tg
