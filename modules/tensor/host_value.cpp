#include "tensor/host_value.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace tg::host {

namespace {

// Narrow float formats: exponent bits, mantissa bits, bias, and whether the top exponent means inf/NaN
// (IEEE) or only the all-ones pattern is NaN (fp8e4m3 "fn", which has no infinity).
struct FloatFormat {
  int exp_bits, man_bits, bias;
  bool ieee;
};

constexpr FloatFormat format_of(Scalar s) {
  switch (s) {
    case Scalar::FLOAT16:
      return {5, 10, 15, true};
    case Scalar::BFLOAT16:
      return {8, 7, 127, true};
    case Scalar::FP8E5M2:
      return {5, 2, 15, true};
    default:
      return {4, 3, 7, false};  // FP8E4M3
  }
}

// x must already be a value of the format (see round_float).
uint32_t encode_format(const FloatFormat& f, double x) {
  uint32_t top = (1u << f.exp_bits) - 1, sign = std::signbit(x) ? 1u : 0u;
  uint32_t sign_bit = sign << (f.exp_bits + f.man_bits);
  if (std::isnan(x)) return (top << f.man_bits) | (f.ieee ? 1u << (f.man_bits - 1) : (1u << f.man_bits) - 1);
  if (std::isinf(x)) return sign_bit | (top << f.man_bits);
  double ax = std::fabs(x);
  if (ax == 0) return sign_bit;
  int ex = 0;
  std::frexp(ax, &ex);
  int e = ex - 1, emin = 1 - f.bias;
  if (e < emin) return sign_bit | static_cast<uint32_t>(std::ldexp(ax, f.man_bits - emin));
  auto man = static_cast<uint32_t>(std::ldexp(ax / std::ldexp(1.0, e) - 1.0, f.man_bits));
  return sign_bit | (static_cast<uint32_t>(e + f.bias) << f.man_bits) | man;
}

double decode_format(const FloatFormat& f, uint32_t bits) {
  uint32_t top = (1u << f.exp_bits) - 1, man_mask = (1u << f.man_bits) - 1;
  uint32_t man = bits & man_mask, e = (bits >> f.man_bits) & top;
  double sign = (bits >> (f.exp_bits + f.man_bits)) & 1 ? -1.0 : 1.0;
  if (f.ieee && e == top) return man ? std::numeric_limits<double>::quiet_NaN() : sign * INFINITY;
  if (!f.ieee && e == top && man == man_mask) return std::numeric_limits<double>::quiet_NaN();
  if (e == 0) return sign * std::ldexp(static_cast<double>(man), 1 - f.bias - f.man_bits);
  return sign *
         std::ldexp(1.0 + std::ldexp(static_cast<double>(man), -f.man_bits), static_cast<int>(e) - f.bias);
}

template <typename T>
T read(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}
template <typename T>
void write(std::byte* p, T v) {
  std::memcpy(p, &v, sizeof(T));
}

}  // namespace

ConstValue normalize(DType d, ConstValue v) {
  if (d.is_bool()) return std::visit([](auto x) { return static_cast<bool>(x != 0); }, v);
  if (d.is_float()) return dtypes::truncate_float(d, as_double(dtypes::int64, v));
  if (auto* f = std::get_if<double>(&v)) return convert(d, dtypes::float64, *f);
  if (auto* b = std::get_if<bool>(&v)) return int64_t{*b};
  return dtypes::wrap_int(d, std::get<int64_t>(v));
}

ConstValue convert(DType to, DType from, ConstValue v) {
  if (to.is_bool()) return std::visit([](auto x) { return static_cast<bool>(x != 0); }, v);
  if (to.is_float()) return dtypes::truncate_float(to, as_double(from, v));
  if (auto* f = std::get_if<double>(&v)) {
    double t = std::trunc(*f);
    if (std::isnan(t)) return int64_t{0};
    if (t >= 0x1p63)
      return dtypes::wrap_int(to, static_cast<int64_t>(t < 0x1p64 ? static_cast<uint64_t>(t) : 0));
    if (t < -0x1p63) return dtypes::wrap_int(to, std::numeric_limits<int64_t>::min());
    return dtypes::wrap_int(to, static_cast<int64_t>(t));
  }
  if (auto* b = std::get_if<bool>(&v)) return int64_t{*b};
  return dtypes::wrap_int(to, std::get<int64_t>(v));
}

ConstValue load(DType d, const std::byte* p) {
  switch (d.scalar()) {
    case Scalar::BOOL:
      return read<uint8_t>(p) != 0;
    case Scalar::INT8:
      return int64_t{read<int8_t>(p)};
    case Scalar::UINT8:
      return int64_t{read<uint8_t>(p)};
    case Scalar::INT16:
      return int64_t{read<int16_t>(p)};
    case Scalar::UINT16:
      return int64_t{read<uint16_t>(p)};
    case Scalar::INT32:
      return int64_t{read<int32_t>(p)};
    case Scalar::UINT32:
      return int64_t{read<uint32_t>(p)};
    case Scalar::INT64:
    case Scalar::UINT64:
    case Scalar::INDEX:
      return read<int64_t>(p);
    case Scalar::FLOAT32:
      return static_cast<double>(read<float>(p));
    case Scalar::FLOAT64:
      return read<double>(p);
    case Scalar::FLOAT16:
    case Scalar::BFLOAT16:
      return decode_format(format_of(d.scalar()), read<uint16_t>(p));
    case Scalar::FP8E4M3:
    case Scalar::FP8E5M2:
      return decode_format(format_of(d.scalar()), read<uint8_t>(p));
    case Scalar::VOID:
      break;
  }
  return int64_t{0};
}

void store(DType d, ConstValue v, std::byte* p) {
  v = normalize(d, v);
  switch (d.scalar()) {
    case Scalar::BOOL:
      return write<uint8_t>(p, std::get<bool>(v));
    case Scalar::INT8:
    case Scalar::UINT8:
      return write<uint8_t>(p, static_cast<uint8_t>(std::get<int64_t>(v)));
    case Scalar::INT16:
    case Scalar::UINT16:
      return write<uint16_t>(p, static_cast<uint16_t>(std::get<int64_t>(v)));
    case Scalar::INT32:
    case Scalar::UINT32:
      return write<uint32_t>(p, static_cast<uint32_t>(std::get<int64_t>(v)));
    case Scalar::INT64:
    case Scalar::UINT64:
    case Scalar::INDEX:
      return write<int64_t>(p, std::get<int64_t>(v));
    case Scalar::FLOAT32:
      return write<float>(p, static_cast<float>(std::get<double>(v)));
    case Scalar::FLOAT64:
      return write<double>(p, std::get<double>(v));
    case Scalar::FLOAT16:
    case Scalar::BFLOAT16:
      return write<uint16_t>(
          p, static_cast<uint16_t>(encode_format(format_of(d.scalar()), std::get<double>(v))));
    case Scalar::FP8E4M3:
    case Scalar::FP8E5M2:
      return write<uint8_t>(p,
                            static_cast<uint8_t>(encode_format(format_of(d.scalar()), std::get<double>(v))));
    case Scalar::VOID:
      break;
  }
}

}  // namespace tg::host
