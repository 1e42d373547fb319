// The one table of scalar semantics (scalar.hpp). Written for obviousness, not speed.
#include "uop/scalar.hpp"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>

#include <fmt/format.h>

#include "base/error.hpp"

namespace tg::scalar {

namespace {

// volatile forces each product to be rounded on its own, so an unfused a*b+c stays two roundings.
template <typename T>
T mul(T a, T b) {
  volatile T t = a * b;
  return t;
}

// Truncates toward zero, then wraps modulo 2^64 (NaN gives 0).
int64_t float_to_int(double v) {
  if (std::isnan(v)) return 0;
  double t = std::trunc(v);
  if (t >= -9223372036854775808.0 && t < 9223372036854775808.0) return static_cast<int64_t>(t);
  double m = std::fmod(t, 18446744073709551616.0);
  if (m < 0) m += 18446744073709551616.0;
  return static_cast<int64_t>(static_cast<uint64_t>(m));
}

std::optional<Value> int_alu(Ops op, DType out, DType in, std::span<const Value> s) {
  const bool sgn = !in.is_unsigned();
  const int bits = bits_of(in);
  auto wrap = [&](uint64_t x) { return int_value(dtypes::wrap_int(out, static_cast<int64_t>(x))); };
  auto less = [&](const Value& a, const Value& b) { return sgn ? a.i < b.i : a.u < b.u; };
  auto shift_out = [&](const Value& b) { return (sgn && b.i < 0) || b.u >= static_cast<uint64_t>(bits); };
  const Value &a = s[0], b = s.size() > 1 ? s[1] : Value{};
  switch (op) {
    case Ops::ADD:
      return wrap(a.u + b.u);
    case Ops::MUL:
      return wrap(a.u * b.u);
    case Ops::NEG:
      return wrap(0 - a.u);
    case Ops::MULACC:
      return wrap(a.u * b.u + s[2].u);
    case Ops::IDIV:
      if (b.u == 0) return int_value(0);
      if (!sgn) return wrap(a.u / b.u);
      if (b.i == -1) return wrap(0 - a.u);  // INT_MIN / -1 wraps instead of trapping
      return wrap(static_cast<uint64_t>(a.i / b.i));
    case Ops::MOD:
      if (b.u == 0 || (sgn && b.i == -1)) return int_value(0);
      return sgn ? wrap(static_cast<uint64_t>(a.i % b.i)) : wrap(a.u % b.u);
    case Ops::MAX:
      return less(a, b) ? b : a;
    case Ops::CMPLT:
      return int_value(less(a, b));
    case Ops::CMPNE:
      return int_value(a.u != b.u);
    case Ops::CMPEQ:
      return int_value(a.u == b.u);
    case Ops::AND:
      return wrap(a.u & b.u);
    case Ops::OR:
      return wrap(a.u | b.u);
    case Ops::XOR:
      return wrap(a.u ^ b.u);
    case Ops::SHL:
      return shift_out(b) ? int_value(0) : wrap(a.u << b.u);
    case Ops::SHR:
      if (shift_out(b)) return int_value(sgn && a.i < 0 ? -1 : 0);
      return sgn ? wrap(static_cast<uint64_t>(a.i >> b.u)) : wrap(a.u >> b.u);
    case Ops::TRUNC:
      return a;
    case Ops::THREEFRY:
      if (in.scalar() != Scalar::UINT64) return std::nullopt;
      return wrap(threefry2x32(a.u, b.u));
    default:
      return std::nullopt;
  }
}

std::optional<Value> bool_alu(Ops op, std::span<const Value> s) {
  const bool a = s[0].i != 0, b = s.size() > 1 && s[1].i != 0;
  switch (op) {
    case Ops::ADD:
    case Ops::OR:
    case Ops::MAX:
      return int_value(a || b);
    case Ops::MUL:
    case Ops::AND:
      return int_value(a && b);
    case Ops::XOR:
    case Ops::CMPNE:
      return int_value(a != b);
    case Ops::CMPEQ:
      return int_value(a == b);
    case Ops::CMPLT:
      return int_value(!a && b);
    case Ops::NEG:
      return int_value(!a);
    case Ops::TRUNC:
      return int_value(a);
    case Ops::MULACC:
      return int_value((a && b) || s[2].i != 0);
    default:
      return std::nullopt;
  }
}

// T is float (for float32 and the narrower floats) or double.
template <typename T>
std::optional<Value> float_alu(Ops op, DType out, DType in, std::span<const Value> s) {
  const T a = static_cast<T>(s[0].f), b = s.size() > 1 ? static_cast<T>(s[1].f) : T(0);
  auto ret = [&](T v) { return float_value(dtypes::truncate_float(out, static_cast<double>(v))); };
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
      return ret(a < b ? b : a);  // a NaN first operand wins
    case Ops::MULACC:
      if (in.scalar() == Scalar::FLOAT32 || in.scalar() == Scalar::FLOAT64)
        return ret(std::fma(a, b, static_cast<T>(s[2].f)));
      return ret(mul(a, b) + static_cast<T>(s[2].f));
    case Ops::CMPLT:
      return int_value(a < b);
    case Ops::CMPNE:
      return int_value(a != b);
    case Ops::CMPEQ:
      return int_value(a == b);
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
      return std::nullopt;
  }
}

std::optional<Value> try_alu(Ops op, DType out, DType in, std::span<const Value> src) {
  if (op == Ops::WHERE) return src[0].i != 0 ? src[1] : src[2];
  if (in.scalar() == Scalar::FLOAT64) return float_alu<double>(op, out, in, src);
  if (in.is_float()) return float_alu<float>(op, out, in, src);
  if (in.is_bool()) return bool_alu(op, src);
  return int_alu(op, out, in, src);
}

// Bits of a value exactly representable in a binary float with ebits/mbits (IEEE layout; without
// infinities only the all-ones pattern is NaN, as in fp8e4m3), and back.
uint64_t minifloat_bits(double v, int ebits, int mbits, bool has_inf) {
  const uint64_t sign = std::signbit(v) ? uint64_t{1} << (ebits + mbits) : 0;
  const int bias = (1 << (ebits - 1)) - 1;
  const uint64_t emax = (uint64_t{1} << ebits) - 1, mmask = (uint64_t{1} << mbits) - 1;
  if (std::isnan(v) || (std::isinf(v) && !has_inf))
    return sign | emax << mbits | (has_inf ? uint64_t{1} << (mbits - 1) : mmask);
  if (std::isinf(v)) return sign | emax << mbits;
  double a = std::fabs(v);
  if (a == 0) return sign;
  int e;
  std::frexp(a, &e);  // a in [2^(e-1), 2^e)
  if (e - 1 < 1 - bias) return sign | static_cast<uint64_t>(std::ldexp(a, bias - 1 + mbits));
  uint64_t m = static_cast<uint64_t>(std::ldexp(a, mbits - (e - 1))) & mmask;
  return sign | static_cast<uint64_t>(e - 1 + bias) << mbits | m;
}

double minifloat_value(uint64_t bits, int ebits, int mbits, bool has_inf) {
  const int bias = (1 << (ebits - 1)) - 1;
  const uint64_t emax = (uint64_t{1} << ebits) - 1, mmask = (uint64_t{1} << mbits) - 1;
  const uint64_t e = bits >> mbits & emax, m = bits & mmask;
  const double sign = bits >> (ebits + mbits) & 1 ? -1.0 : 1.0;
  if (e == emax && has_inf) return m == 0 ? sign * std::numeric_limits<double>::infinity() : std::nan("");
  if (e == emax && m == mmask) return std::nan("");
  if (e == 0) return sign * std::ldexp(static_cast<double>(m), 1 - bias - mbits);
  return sign *
         std::ldexp(static_cast<double>(m + (uint64_t{1} << mbits)), static_cast<int>(e) - bias - mbits);
}

}  // namespace

int bits_of(DType d) { return d.scalar() == Scalar::INDEX ? 64 : static_cast<int>(d.scalar_itemsize() * 8); }

ConstValue identity_element(Ops op, DType d) {
  if (op == Ops::ADD) return int64_t{0};
  if (op == Ops::MUL) return int64_t{1};
  if (d.is_float()) return -std::numeric_limits<double>::infinity();
  if (d.is_bool()) return false;
  return d.min_int();
}

bool defined(Ops op, DType in) {
  Value zeros[3];
  if (op == Ops::WHERE) return true;
  DType d = in.scalar_type();
  return try_alu(op, d, d, std::span(zeros, 3)).has_value();
}

std::optional<Value> alu_if_defined(Ops op, DType out, DType in, std::span<const Value> src) {
  return try_alu(op, out, in, src);
}

Value alu(Ops op, DType out, DType in, std::span<const Value> src) {
  if (std::optional<Value> v = try_alu(op, out, in, src)) return *v;
  throw ValueError("alu", fmt::format("{} is not defined on {}", op_name(op), in.str()));
}

Value cast(Value v, DType from, DType to) {
  if (to.is_bool()) return int_value(from.is_float() ? v.f != 0 : v.u != 0);
  if (to.is_float()) {
    if (from.is_float()) return float_value(dtypes::truncate_float(to, v.f));
    // one rounding from the integer: float32 directly, the rest through an exact-enough double
    bool single = to.scalar() == Scalar::FLOAT32;
    double x = from.is_unsigned() ? (single ? static_cast<float>(v.u) : static_cast<double>(v.u))
                                  : (single ? static_cast<float>(v.i) : static_cast<double>(v.i));
    return float_value(dtypes::truncate_float(to, x));
  }
  return int_value(dtypes::wrap_int(to, from.is_float() ? float_to_int(v.f) : v.i));
}

Value from_const(const ConstValue& c, DType d) {
  if (d.is_float())
    return float_value(
        dtypes::truncate_float(d, std::visit([](auto x) { return static_cast<double>(x); }, c)));
  if (d.is_bool()) return int_value(std::visit([](auto x) { return static_cast<int64_t>(x != 0); }, c));
  if (const double* f = std::get_if<double>(&c)) return int_value(dtypes::wrap_int(d, float_to_int(*f)));
  return int_value(dtypes::wrap_int(d, std::visit([](auto x) { return static_cast<int64_t>(x); }, c)));
}

ConstValue to_const(Value v, DType d) {
  if (d.is_bool()) return ConstValue{v.i != 0};
  if (d.is_float()) return ConstValue{v.f};
  return ConstValue{v.i};
}

uint64_t to_bits(Value v, DType d) {
  switch (d.scalar()) {
    case Scalar::FLOAT32:
      return std::bit_cast<uint32_t>(static_cast<float>(v.f));
    case Scalar::FLOAT64:
      return std::bit_cast<uint64_t>(v.f);
    case Scalar::FLOAT16:
      return minifloat_bits(dtypes::truncate_float(d, v.f), 5, 10, true);
    case Scalar::BFLOAT16:
      return std::bit_cast<uint32_t>(static_cast<float>(dtypes::truncate_float(d, v.f))) >> 16;
    case Scalar::FP8E4M3:
      return minifloat_bits(dtypes::truncate_float(d, v.f), 4, 3, false);
    case Scalar::FP8E5M2:
      return minifloat_bits(dtypes::truncate_float(d, v.f), 5, 2, true);
    case Scalar::BOOL:
      return v.i != 0;
    case Scalar::VOID:
      throw ValueError("alu", "bits of a void value");
    default: {
      int bits = bits_of(d);
      return bits == 64 ? v.u : v.u & ((uint64_t{1} << bits) - 1);
    }
  }
}

Value from_bits(uint64_t b, DType d) {
  switch (d.scalar()) {
    case Scalar::FLOAT32:
      return float_value(std::bit_cast<float>(static_cast<uint32_t>(b)));
    case Scalar::FLOAT64:
      return float_value(std::bit_cast<double>(b));
    case Scalar::FLOAT16:
      return float_value(minifloat_value(b & 0xffff, 5, 10, true));
    case Scalar::BFLOAT16:
      return float_value(std::bit_cast<float>(static_cast<uint32_t>(b & 0xffff) << 16));
    case Scalar::FP8E4M3:
      return float_value(minifloat_value(b & 0xff, 4, 3, false));
    case Scalar::FP8E5M2:
      return float_value(minifloat_value(b & 0xff, 5, 2, true));
    case Scalar::BOOL:
      return int_value(b != 0);
    case Scalar::VOID:
      throw ValueError("alu", "a void value from bits");
    default:
      return int_value(dtypes::wrap_int(d, static_cast<int64_t>(b)));
  }
}

void store(std::byte* p, DType d, Value v) {
  uint64_t b = to_bits(v, d);
  std::memcpy(p, &b, d.scalar_itemsize());  // little-endian: the low bytes
}

Value load(const std::byte* p, DType d) {
  uint64_t b = 0;
  std::memcpy(&b, p, d.scalar_itemsize());
  return from_bits(b, d);
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

}  // namespace tg::scalar
