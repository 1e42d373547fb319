// INTERP scalar semantics (values.hpp). Written for obviousness, not speed.
#include "runtime/interp/values.hpp"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "base/error.hpp"

namespace tg::interp {

namespace {

[[noreturn]] void undefined(Ops op, DType d) {
  throw ValueError("INTERP", fmt::format("{} is not defined on {}", op_name(op), d.str()));
}

// volatile forces each product to be rounded on its own, so an unfused a*b+c stays two roundings.
template <typename T>
T mul(T a, T b) {
  volatile T t = a * b;
  return t;
}

int bits_of(DType d) { return d.scalar() == Scalar::INDEX ? 64 : static_cast<int>(d.scalar_itemsize() * 8); }

// Truncates toward zero, then wraps modulo 2^64 (NaN gives 0).
int64_t float_to_int(double v) {
  if (std::isnan(v)) return 0;
  double t = std::trunc(v);
  if (t >= -9223372036854775808.0 && t < 9223372036854775808.0) return static_cast<int64_t>(t);
  double m = std::fmod(t, 18446744073709551616.0);
  if (m < 0) m += 18446744073709551616.0;
  return static_cast<int64_t>(static_cast<uint64_t>(m));
}

Val int_alu(Ops op, DType out, DType in, std::span<const Val> s) {
  const bool sgn = !in.is_unsigned();
  const int bits = bits_of(in);
  auto wrap = [&](uint64_t x) { return int_val(dtypes::wrap_int(out, static_cast<int64_t>(x))); };
  auto less = [&](const Val& a, const Val& b) { return sgn ? a.i < b.i : a.u < b.u; };
  auto shift_out = [&](const Val& b) { return (sgn && b.i < 0) || b.u >= static_cast<uint64_t>(bits); };
  const Val& a = s[0];
  switch (op) {
    case Ops::ADD:
      return wrap(a.u + s[1].u);
    case Ops::MUL:
      return wrap(a.u * s[1].u);
    case Ops::NEG:
      return wrap(0 - a.u);
    case Ops::MULACC:
      return wrap(a.u * s[1].u + s[2].u);
    case Ops::IDIV:
      if (s[1].u == 0) return int_val(0);
      if (!sgn) return wrap(a.u / s[1].u);
      if (s[1].i == -1) return wrap(0 - a.u);  // INT_MIN / -1 wraps instead of trapping
      return wrap(static_cast<uint64_t>(a.i / s[1].i));
    case Ops::MOD:
      if (s[1].u == 0) return int_val(0);
      if (!sgn) return wrap(a.u % s[1].u);
      if (s[1].i == -1) return int_val(0);
      return wrap(static_cast<uint64_t>(a.i % s[1].i));
    case Ops::MAX:
      return less(a, s[1]) ? s[1] : a;
    case Ops::CMPLT:
      return int_val(less(a, s[1]));
    case Ops::CMPNE:
      return int_val(a.u != s[1].u);
    case Ops::CMPEQ:
      return int_val(a.u == s[1].u);
    case Ops::AND:
      return wrap(a.u & s[1].u);
    case Ops::OR:
      return wrap(a.u | s[1].u);
    case Ops::XOR:
      return wrap(a.u ^ s[1].u);
    case Ops::SHL:
      return shift_out(s[1]) ? int_val(0) : wrap(a.u << s[1].u);
    case Ops::SHR:
      if (shift_out(s[1])) return int_val(sgn && a.i < 0 ? -1 : 0);
      return sgn ? wrap(static_cast<uint64_t>(a.i >> s[1].u)) : wrap(a.u >> s[1].u);
    case Ops::TRUNC:
      return a;
    case Ops::THREEFRY:
      if (in.scalar() != Scalar::UINT64) undefined(op, in);
      return wrap(threefry2x32(a.u, s[1].u));
    default:
      undefined(op, in);
  }
}

Val bool_alu(Ops op, DType in, std::span<const Val> s) {
  const bool a = s[0].i != 0, b = s.size() > 1 && s[1].i != 0;
  switch (op) {
    case Ops::ADD:
    case Ops::OR:
    case Ops::MAX:
      return int_val(a || b);
    case Ops::MUL:
    case Ops::AND:
      return int_val(a && b);
    case Ops::XOR:
    case Ops::CMPNE:
      return int_val(a != b);
    case Ops::CMPEQ:
      return int_val(a == b);
    case Ops::CMPLT:
      return int_val(!a && b);
    case Ops::NEG:
      return int_val(!a);
    case Ops::MULACC:
      return int_val((a && b) || s[2].i != 0);
    default:
      undefined(op, in);
  }
}

// T is float (for float32 and the narrower floats) or double.
template <typename T>
Val float_alu(Ops op, DType out, DType in, std::span<const Val> s) {
  const T a = static_cast<T>(s[0].f), b = s.size() > 1 ? static_cast<T>(s[1].f) : T(0);
  auto ret = [&](T v) { return float_val(dtypes::truncate_float(out, static_cast<double>(v))); };
  switch (op) {
    case Ops::ADD:
      return ret(a + b);
    case Ops::MUL:
      return ret(a * b);
    case Ops::NEG:
      return ret(-a);
    case Ops::FDIV:
      return ret(a / b);
    case Ops::MAX:
      return ret(a < b ? b : a);
    case Ops::MULACC:  // fused (one rounding) on float32/float64; narrow floats round a*b, then the sum
      if (in.scalar() == Scalar::FLOAT32 || in.scalar() == Scalar::FLOAT64)
        return ret(std::fma(a, b, static_cast<T>(s[2].f)));
      return ret(mul(a, b) + static_cast<T>(s[2].f));
    case Ops::CMPLT:
      return int_val(a < b);
    case Ops::CMPNE:
      return int_val(a != b);
    case Ops::CMPEQ:
      return int_val(a == b);
    case Ops::EXP2:
      return ret(std::exp2(a));
    case Ops::LOG2:
      return ret(std::log2(a));
    case Ops::SIN:
      return ret(std::sin(a));
    case Ops::SQRT:
      return ret(std::sqrt(a));
    case Ops::RECIPROCAL:
      return ret(T(1) / a);
    case Ops::TRUNC:
      return ret(std::trunc(a));
    case Ops::POW:
      return ret(std::pow(a, b));
    default:
      undefined(op, in);
  }
}

// A value that is exactly representable in a binary float with ebits/mbits (IEEE layout; without
// infinities the all-ones pattern is NaN, as in fp8e4m3) -> its bits, and back.
uint32_t minifloat_bits(double v, int ebits, int mbits, bool has_inf) {
  const uint32_t sign = std::signbit(v) ? 1u << (ebits + mbits) : 0u;
  const int bias = (1 << (ebits - 1)) - 1;
  const uint32_t emax = (1u << ebits) - 1, mmask = (1u << mbits) - 1;
  if (std::isnan(v) || (std::isinf(v) && !has_inf))
    return sign | emax << mbits | (has_inf ? 1u << (mbits - 1) : mmask);
  if (std::isinf(v)) return sign | emax << mbits;
  double a = std::fabs(v);
  if (a == 0) return sign;
  int e;
  std::frexp(a, &e);  // a in [2^(e-1), 2^e)
  if (e - 1 < 1 - bias) return sign | static_cast<uint32_t>(std::ldexp(a, bias - 1 + mbits));
  uint32_t m = static_cast<uint32_t>(std::ldexp(a, mbits - (e - 1))) & mmask;
  return sign | static_cast<uint32_t>(e - 1 + bias) << mbits | m;
}

double minifloat_value(uint32_t bits, int ebits, int mbits, bool has_inf) {
  const int bias = (1 << (ebits - 1)) - 1;
  const uint32_t emax = (1u << ebits) - 1, mmask = (1u << mbits) - 1;
  const uint32_t e = bits >> mbits & emax, m = bits & mmask;
  const double sign = bits >> (ebits + mbits) & 1 ? -1.0 : 1.0;
  if (e == emax && has_inf) return m == 0 ? sign * std::numeric_limits<double>::infinity() : std::nan("");
  if (e == emax && m == mmask) return std::nan("");
  if (e == 0) return sign * std::ldexp(m, 1 - bias - mbits);
  return sign * std::ldexp(m + (1u << mbits), static_cast<int>(e) - bias - mbits);
}

template <typename T>
void put(std::byte* p, T v) {
  std::memcpy(p, &v, sizeof(T));
}
template <typename T>
T get(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

}  // namespace

Val from_const(const ConstValue& c, DType d) {
  if (d.is_float())
    return float_val(dtypes::truncate_float(d, std::visit([](auto x) { return static_cast<double>(x); }, c)));
  if (d.is_bool()) return int_val(std::visit([](auto x) { return static_cast<int64_t>(x != 0); }, c));
  if (const double* f = std::get_if<double>(&c)) return int_val(dtypes::wrap_int(d, float_to_int(*f)));
  return int_val(dtypes::wrap_int(d, std::visit([](auto x) { return static_cast<int64_t>(x); }, c)));
}

Val alu(Ops op, DType out, DType in, std::span<const Val> src) {
  if (op == Ops::WHERE) return src[0].i != 0 ? src[1] : src[2];
  if (in.scalar() == Scalar::FLOAT64) return float_alu<double>(op, out, in, src);
  if (in.is_float()) return float_alu<float>(op, out, in, src);
  if (in.is_bool()) return bool_alu(op, in, src);
  return int_alu(op, out, in, src);
}

Val cast(const Val& v, DType from, DType to) {
  if (to.is_bool()) return int_val(from.is_float() ? v.f != 0 : v.u != 0);
  if (to.is_float()) {
    if (from.is_float()) return float_val(dtypes::truncate_float(to, v.f));
    // one rounding from the integer: float32 directly, the rest through an exact-enough double
    bool single = to.scalar() == Scalar::FLOAT32;
    double x = from.is_unsigned() ? (single ? static_cast<float>(v.u) : static_cast<double>(v.u))
                                  : (single ? static_cast<float>(v.i) : static_cast<double>(v.i));
    return float_val(dtypes::truncate_float(to, x));
  }
  return int_val(dtypes::wrap_int(to, from.is_float() ? float_to_int(v.f) : v.i));
}

void store_scalar(std::byte* p, DType d, const Val& v) {
  switch (d.scalar()) {
    case Scalar::BOOL:
      put<uint8_t>(p, v.i != 0);
      break;
    case Scalar::INT8:
    case Scalar::UINT8:
      put<uint8_t>(p, static_cast<uint8_t>(v.u));
      break;
    case Scalar::INT16:
    case Scalar::UINT16:
      put<uint16_t>(p, static_cast<uint16_t>(v.u));
      break;
    case Scalar::INT32:
    case Scalar::UINT32:
      put<uint32_t>(p, static_cast<uint32_t>(v.u));
      break;
    case Scalar::INT64:
    case Scalar::UINT64:
    case Scalar::INDEX:
      put<uint64_t>(p, v.u);
      break;
    case Scalar::FLOAT32:
      put<float>(p, static_cast<float>(v.f));
      break;
    case Scalar::FLOAT64:
      put<double>(p, v.f);
      break;
    case Scalar::FLOAT16:
      put<uint16_t>(p, static_cast<uint16_t>(minifloat_bits(dtypes::truncate_float(d, v.f), 5, 10, true)));
      break;
    case Scalar::BFLOAT16:
      put<uint16_t>(p,
                    static_cast<uint16_t>(
                        std::bit_cast<uint32_t>(static_cast<float>(dtypes::truncate_float(d, v.f))) >> 16));
      break;
    case Scalar::FP8E4M3:
      put<uint8_t>(p, static_cast<uint8_t>(minifloat_bits(dtypes::truncate_float(d, v.f), 4, 3, false)));
      break;
    case Scalar::FP8E5M2:
      put<uint8_t>(p, static_cast<uint8_t>(minifloat_bits(dtypes::truncate_float(d, v.f), 5, 2, true)));
      break;
    case Scalar::VOID:
      throw ValueError("INTERP", "store of a void value");
  }
}

Val load_scalar(const std::byte* p, DType d) {
  switch (d.scalar()) {
    case Scalar::BOOL:
      return int_val(get<uint8_t>(p) != 0);
    case Scalar::INT8:
      return int_val(get<int8_t>(p));
    case Scalar::UINT8:
      return int_val(get<uint8_t>(p));
    case Scalar::INT16:
      return int_val(get<int16_t>(p));
    case Scalar::UINT16:
      return int_val(get<uint16_t>(p));
    case Scalar::INT32:
      return int_val(get<int32_t>(p));
    case Scalar::UINT32:
      return int_val(get<uint32_t>(p));
    case Scalar::INT64:
    case Scalar::UINT64:
    case Scalar::INDEX:
      return int_val(get<int64_t>(p));
    case Scalar::FLOAT32:
      return float_val(get<float>(p));
    case Scalar::FLOAT64:
      return float_val(get<double>(p));
    case Scalar::FLOAT16:
      return float_val(minifloat_value(get<uint16_t>(p), 5, 10, true));
    case Scalar::BFLOAT16:
      return float_val(std::bit_cast<float>(static_cast<uint32_t>(get<uint16_t>(p)) << 16));
    case Scalar::FP8E4M3:
      return float_val(minifloat_value(get<uint8_t>(p), 4, 3, false));
    case Scalar::FP8E5M2:
      return float_val(minifloat_value(get<uint8_t>(p), 5, 2, true));
    case Scalar::VOID:
      break;
  }
  throw ValueError("INTERP", "load of a void value");
}

uint64_t threefry2x32(uint64_t x, uint64_t key) {
  auto rotl = [](uint32_t v, int r) { return (v << r) | (v >> (32 - r)); };
  static constexpr int kRot[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};
  const uint32_t k0 = static_cast<uint32_t>(key), k1 = static_cast<uint32_t>(key >> 32);
  const uint32_t ks[3] = {k0, k1, k0 ^ k1 ^ 0x1BD11BDAu};
  uint32_t x0 = static_cast<uint32_t>(x) + ks[0], x1 = static_cast<uint32_t>(x >> 32) + ks[1];
  for (uint32_t i = 0; i < 5; i++) {
    for (int r : kRot[i % 2]) {
      x0 += x1;
      x1 = rotl(x1, r) ^ x0;
    }
    x0 += ks[(i + 1) % 3];
    x1 += ks[(i + 2) % 3] + i + 1;
  }
  return static_cast<uint64_t>(x1) << 32 | x0;
}

}  // namespace tg::interp
