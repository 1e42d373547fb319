// Tensor creation: constants, ranges and the identity. All lazy except empty(), which allocates.
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "base/error.hpp"
#include "tensor/internal.hpp"

namespace tg {

namespace {

std::string pick_device(std::string_view device) {
  return device.empty() ? engine::default_device_name() : engine::canonical_device(device);
}

void check_shape(const Shape& shape, std::string_view op) {
  for (const sint& d : shape)
    if (d.is_number() && static_cast<int64_t>(d) < 0)
      throw ShapeError(op, fmt::format("negative size in shape {}", detail::shape_str(shape)));
}

// 0, 1, ..., n-1 without a buffer or a reduce: element i is the sum over bits b of ((i >> b) & 1) << b,
// and each bit is a padded constant viewed as (n/2^(b+1), 2, 2^b). The graph has O(log n) nodes.
Tensor index_range(int64_t n, DType dt, const std::string& device) {
  int64_t pow2 = 1;
  int bits = 0;
  while (pow2 < n) {
    pow2 <<= 1;
    bits++;
  }
  Tensor r = detail::const_tensor(int64_t{0}, dt, {pow2}, device);
  for (int b = 0; b < bits; b++) {
    Tensor bit = detail::const_tensor(int64_t{1} << b, dt, {1, 1, 1}, device).pad({{0, 0}, {1, 0}, {0, 0}});
    Tensor term = bit.expand({pow2 >> (b + 1), 2, int64_t{1} << b}).reshape({pow2});
    r = b == 0 ? term : r + term;
  }
  return pow2 == n ? r : r.shrink({{0, n}});
}

}  // namespace

Tensor Tensor::empty(Shape shape, DType dtype, std::string_view device) {
  check_shape(shape, "empty");
  std::string dev = pick_device(device);
  engine::RealizedBuffer rb =
      engine::buffer_empty(dev, dtype, detail::prod(shape).max());  // room for the largest size
  return Tensor(engine::realized_view(rb.buffer, shape), dev, {rb.hold});
}

Tensor Tensor::full(Shape shape, Number fill, std::optional<DType> dtype, std::string_view device) {
  check_shape(shape, "full");
  return detail::const_tensor(fill.value(), dtype.value_or(fill.default_dtype()), shape, pick_device(device));
}

Tensor Tensor::zeros(Shape shape, DType dtype, std::string_view device) {
  return full(std::move(shape), 0, dtype, device);
}
Tensor Tensor::ones(Shape shape, DType dtype, std::string_view device) {
  return full(std::move(shape), 1, dtype, device);
}

Tensor Tensor::empty_like(std::optional<DType> dtype) const {
  return empty(shape(), dtype.value_or(this->dtype()), device());
}
Tensor Tensor::zeros_like(std::optional<DType> dtype) const {
  return full(shape(), 0, dtype.value_or(this->dtype()), device());
}
Tensor Tensor::ones_like(std::optional<DType> dtype) const {
  return full(shape(), 1, dtype.value_or(this->dtype()), device());
}
Tensor Tensor::full_like(Number fill, std::optional<DType> dtype) const {
  return full(shape(), fill, dtype.value_or(this->dtype()), device());
}

Tensor Tensor::arange(Number stop, std::optional<DType> dtype, std::string_view device) {
  return arange(0, stop, 1, dtype, device);
}

Tensor Tensor::arange(Number start, Number stop, Number step, std::optional<DType> dtype,
                      std::string_view device) {
  std::string dev = pick_device(device);
  bool floats = start.is_float() || stop.is_float() || step.is_float();
  double a = start.to_double(), b = stop.to_double(), s = step.to_double();
  if (s == 0) throw ValueError("arange", "step must not be zero");
  auto count = static_cast<int64_t>(std::max(0.0, std::ceil((b - a) / s)));
  DType dt = dtype.value_or(floats ? dtypes::default_float : dtypes::default_int);
  if (!floats && !dtype && std::max(std::abs(a), std::abs(b)) > std::numeric_limits<int32_t>::max())
    dt = dtypes::int64;
  if (count == 0) return full({0}, 0, dt, dev);
  DType idx_dt = count - 1 > std::numeric_limits<int32_t>::max() ? dtypes::int64 : dtypes::int32;
  Tensor idx = index_range(count, idx_dt, dev);
  if (!floats && !dt.is_float()) return (idx.cast(dtypes::least_upper(idx_dt, dt)) * step + start).cast(dt);
  DType fdt = dt.is_float() ? dt : dtypes::default_float;
  return (idx.cast(fdt) * step + start).cast(dt);
}

Tensor Tensor::linspace(Number start, Number stop, int64_t steps, DType dtype, std::string_view device) {
  if (steps < 0) throw ValueError("linspace", fmt::format("steps must be non-negative, got {}", steps));
  if (dtype.is_bool()) throw DTypeError("linspace", "bool is not supported");
  if (steps <= 1) return full({steps}, start, dtype, device);
  double delta = (stop.to_double() - start.to_double()) / static_cast<double>(steps - 1);
  return (arange(steps, dtypes::default_float, device) * delta + start).cast(dtype);
}

Tensor Tensor::from_size(const sint& size, DType dtype, std::string_view device) {
  if (!dtype.is_int() && !dtype.is_float())
    throw DTypeError("from_size", fmt::format("a size is a number; {} cannot hold it", dtype.name()));
  std::string dev = pick_device(device);
  if (size.is_number()) return detail::const_tensor(static_cast<int64_t>(size), dtype, {}, dev);
  // zero + size: the constant carries the device a lone variable has not
  Tensor zero = detail::const_tensor(int64_t{0}, dtype, {}, dev);
  UOpRef value = UOp::make(Ops::CAST, dtype, {size.expr()});
  return Tensor(UOp::make(Ops::ADD, dtype, {zero.uop(), value}), dev);
}

bool Tensor::holds_size() const {
  const UOpRef& u = uop();
  return u->op() == Ops::ADD && u->src(0)->op() == Ops::CONST && u->src(1)->op() == Ops::CAST &&
         u->src(1)->src(0)->dtype() == dtypes::index;
}

sint Tensor::as_size() const {
  if (!holds_size())
    throw ValueError("as_size", "the tensor was not made by Tensor::from_size of a variable size");
  return sint::of(uop()->src(1)->src(0));
}

Tensor Tensor::eye(int64_t n, std::optional<int64_t> m, DType dtype, std::string_view device) {
  int64_t cols = m.value_or(n);
  if (n < 0 || cols < 0)
    throw ValueError("eye", fmt::format("sizes must be non-negative, got {} and {}", n, cols));
  return arange(n, {}, device).unsqueeze(-1).eq(arange(cols, {}, device)).cast(dtype);
}

}  // namespace tg
