#pragma once
// A tensor holding a copy of row-major host bytes of any dtype (nn's loaders; not installed).
#include <span>
#include <string>
#include <string_view>

#include "tensor/realize.hpp"
#include "tensor/tensor.hpp"

namespace tg::nn::detail {

inline Tensor tensor_from_bytes(std::span<const std::byte> bytes, DType dtype, const Shape& shape,
                                std::string_view device) {
  std::string dev = device.empty() ? engine::default_device_name() : engine::canonical_device(device);
  engine::RealizedBuffer rb = engine::buffer_from_host(dev, dtype, bytes);
  return Tensor(UOp::make(Ops::RESHAPE, dtype, {rb.buffer}, shape), dev, {rb.hold});
}

}  // namespace tg::nn::detail
