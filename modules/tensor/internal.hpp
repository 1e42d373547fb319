#pragma once
// Helpers shared by the files that implement Tensor (not installed).
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tensor/tensor.hpp"

namespace tg::detail {

using tg::prod;  // uop.hpp
using tg::shape_str;
ShapePairs size_pairs(const std::vector<std::pair<int64_t, int64_t>>& p);
// Negative axes count from the end; IndexError "[op] axis 3 is out of range for 2 dimensions".
int normalize_axis(int axis, int ndim, std::string_view op);
std::vector<int> normalize_axes(const Axes& axes, int ndim, std::string_view op);  // sorted, unique

UOpRef device_uop(std::string_view device);
// The constant v (converted to d) as a tensor of the given shape: CONST.reshape((1,)*n).expand(shape).
Tensor const_tensor(ConstValue v, DType d, const Shape& shape, std::string_view device);
// A tensor computing u on like's device that keeps the buffers of every tensor in from alive.
Tensor derive(UOpRef u, const Tensor& like, std::initializer_list<const Tensor*> from);
// The same on a named device (a new tensor over several devices, multi.cpp).
Tensor derive_on(UOpRef u, std::string device, std::initializer_list<const Tensor*> from);
// ALU node over tensors of equal shape and dtype (comparisons give bool, WHERE takes its value dtype).
Tensor alu(Ops op, const Tensor& a);
Tensor alu(Ops op, const Tensor& a, const Tensor& b);
Tensor alu(Ops op, const Tensor& a, const Tensor& b, const Tensor& c);

// 0 as a number that keeps x's dtype next to it (a plain 0 would turn bool into int).
inline Number zero_of(const Tensor& x) { return x.dtype().is_bool() ? Number(false) : Number(0); }
void check_same_device(const Tensor& a, const Tensor& b, std::string_view op);
// How a plain number promotes next to a tensor (dtypes::least_upper_weak).
dtypes::WeakKind weak_kind(const Number& n);
Shape broadcast_shape(const Shape& a, const Shape& b, std::string_view op);
Tensor broadcast_to(const Tensor& t, const Shape& shape, std::string_view op);
// x and y with a common dtype and shape; reverse swaps them. A number becomes a weak constant.
std::pair<Tensor, Tensor> broadcasted(const Tensor& x, const Operand& y, bool reverse, std::string_view op);
// x promoted to a float dtype (floats stay, others become float32) for transcendental ops.
Tensor to_float(const Tensor& x);
// The order-reversing map (-x for floats, ~x for ints and bools) used for min/argmin/minimum.
Tensor inverse(const Tensor& x);
Tensor shrink_axis(const Tensor& x, int axis, sint begin, sint end);  // [begin, end) of one axis
Tensor broadcast_axis(const Tensor& x, int axis, int64_t n);          // a size-1 axis expanded to n
// A symbolic axis padded with zeros to its largest size: numbers then index it whatever the binding.
Tensor pad_axis_to_max(const Tensor& x, int axis);
// Row-major strides trick: every step-th element along axis (pads the axis up to a multiple of step).
Tensor take_every(const Tensor& x, int axis, int64_t step);

// The float lanes of one vector register when `device` runs kernels the CPU way (threads and SIMD of at
// least 4 lanes, no workgroups), else 0: such a device gets the layouts its register tiles read best.
int64_t cpu_vector_width(const std::string& device);
// w (..., k, n) laid out for a matmul with m rows on its device: in strips where that device's kernels read
// it faster (a view of (..., k, n) onto a packed buffer), else as it is, or materialized when `contiguous`.
Tensor matmul_layout(const Tensor& w, int64_t m, bool contiguous);
// Tensor::dot; `layout` = w goes through matmul_layout (false: the caller did that already).
Tensor dot(const Tensor& x, const Tensor& w, std::optional<DType> dtype, bool layout);

}  // namespace tg::detail
