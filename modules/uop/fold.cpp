// Constant folding with the exact semantics of each dtype: integers wrap at their width, IDIV truncates,
// MOD takes the dividend's sign, shifts of unsigned are logical, floats compute in their own precision.
#include <bit>
#include <cmath>
#include <limits>

#include "uop/range.hpp"
#include "uop/symbolic.hpp"

namespace tg {

namespace {

int arity(Ops op) {
  if (group::Unary.contains(op)) return 1;
  if (group::Ternary.contains(op)) return 3;
  return group::Binary.contains(op) ? 2 : -1;
}

int bits_of(DType d) { return d.scalar() == Scalar::INDEX ? 64 : static_cast<int>(d.scalar_itemsize() * 8); }

bool truthy(const ConstValue& v) {
  return std::visit([](auto x) { return x != 0; }, v);
}

double as_double(DType d, const ConstValue& v) {
  if (const double* f = std::get_if<double>(&v)) return *f;
  return static_cast<double>(int_value(d.is_float() ? dtypes::int64 : d, v));
}

ConstValue encode(DType d, i128 v) {
  if (d.is_bool()) return ConstValue{v != 0};
  return ConstValue{static_cast<int64_t>(static_cast<uint64_t>(wrap_to(d, v)))};
}

uint32_t rotl32(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }

// Threefry-2x32 with 20 rounds on (low, high) words of x, keyed by key, as tinygrad's THREEFRY.
uint64_t threefry2x32(uint64_t x, uint64_t key) {
  static constexpr int kRot[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};
  uint32_t k0 = static_cast<uint32_t>(key), k1 = static_cast<uint32_t>(key >> 32);
  const uint32_t ks[3] = {k1, k0 ^ k1 ^ 0x1BD11BDAu, k0};
  uint32_t x0 = static_cast<uint32_t>(x) + ks[2], x1 = static_cast<uint32_t>(x >> 32) + ks[0];
  for (int i = 0; i < 5; i++) {
    for (int r : kRot[i % 2]) {
      uint32_t s = x0 + x1;
      x1 = s ^ rotl32(x1, r), x0 = s;
    }
    x0 += ks[i % 3], x1 += ks[(i + 1) % 3] + static_cast<uint32_t>(i + 1);
  }
  return uint64_t{x1} << 32 | x0;
}

std::optional<ConstValue> fold_bool(Ops op, std::span<const ConstValue> s) {
  bool a = truthy(s[0]), b = s.size() > 1 && truthy(s[1]);
  switch (op) {
    case Ops::ADD:
    case Ops::OR:
    case Ops::MAX:
      return ConstValue{a || b};
    case Ops::MUL:
    case Ops::AND:
      return ConstValue{a && b};
    case Ops::XOR:
    case Ops::CMPNE:
      return ConstValue{a != b};
    case Ops::CMPEQ:
      return ConstValue{a == b};
    case Ops::CMPLT:
      return ConstValue{!a && b};
    case Ops::TRUNC:
      return ConstValue{a};
    case Ops::MULACC:
      return ConstValue{(a && b) || truthy(s[2])};
    default:
      return std::nullopt;
  }
}

std::optional<ConstValue> fold_int(Ops op, DType d, std::span<const ConstValue> s) {
  i128 a = int_value(d, s[0]), b = s.size() > 1 ? int_value(d, s[1]) : 0;
  uint64_t ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);  // wrapping arithmetic mod 2^64
  switch (op) {
    case Ops::ADD:
      return encode(d, ua + ub);
    case Ops::MUL:
      return encode(d, ua * ub);
    case Ops::NEG:
      return encode(d, uint64_t{0} - ua);
    case Ops::TRUNC:
      return encode(d, a);
    case Ops::IDIV:
      if (b == 0) return std::nullopt;
      return encode(d, a / b);
    case Ops::MOD:
      if (b == 0) return std::nullopt;
      return encode(d, a % b);
    case Ops::MAX:
      return encode(d, a > b ? a : b);
    case Ops::CMPLT:
      return ConstValue{a < b};
    case Ops::CMPNE:
      return ConstValue{a != b};
    case Ops::CMPEQ:
      return ConstValue{a == b};
    case Ops::AND:
      return encode(d, ua & ub);
    case Ops::OR:
      return encode(d, ua | ub);
    case Ops::XOR:
      return encode(d, ua ^ ub);
    case Ops::SHL:
    case Ops::SHR:  // shifting by the width or more is undefined in C: leave it to run time
      if (b < 0 || b >= bits_of(d)) return std::nullopt;
      return encode(d,
                    op == Ops::SHL ? static_cast<i128>(ua << static_cast<int>(b)) : a >> static_cast<int>(b));
    case Ops::MULACC:
      return encode(d, ua * ub + static_cast<uint64_t>(int_value(d, s[2])));
    case Ops::THREEFRY:
      if (d.scalar() != Scalar::UINT64) return std::nullopt;
      return encode(d, threefry2x32(ua, ub));
    default:
      return std::nullopt;
  }
}

// One op in the arithmetic type F (float for float32 and narrower, double for float64).
template <typename F>
std::optional<ConstValue> fold_float_in(Ops op, DType d, F a, F b, F c) {
  auto out = [&](F v) { return ConstValue{dtypes::truncate_float(d, static_cast<double>(v))}; };
  switch (op) {
    case Ops::ADD:
      return out(a + b);
    case Ops::MUL:
      return out(a * b);
    case Ops::NEG:
      return out(-a);
    case Ops::FDIV:
      if (b == 0) return std::nullopt;
      return out(a / b);
    case Ops::RECIPROCAL:
      if (a == 0) return std::nullopt;
      return out(F(1) / a);
    case Ops::SQRT:
      return out(std::sqrt(a));
    case Ops::EXP2:
      return out(std::exp2(a));
    case Ops::LOG2:
      return out(std::log2(a));
    case Ops::SIN:
      return out(std::sin(a));
    case Ops::TRUNC:
      return out(std::trunc(a));
    case Ops::POW:
      return out(std::pow(a, b));
    case Ops::MAX:
      return out(b > a ? b : a);  // as `a if not b > a`: a NaN first operand wins
    case Ops::MULACC: {
      if (d.scalar() == Scalar::FLOAT32 || d.scalar() == Scalar::FLOAT64) return out(std::fma(a, b, c));
      F m = a * b;  // narrow floats: a*b (exact in float), then the sum, as INTERP
      return out(m + c);
    }
    case Ops::CMPLT:
      return ConstValue{a < b};
    case Ops::CMPNE:
      return ConstValue{a != b};
    case Ops::CMPEQ:
      return ConstValue{a == b};
    default:
      return std::nullopt;
  }
}

std::optional<ConstValue> fold_float(Ops op, DType d, std::span<const ConstValue> s) {
  double v[3] = {0, 0, 0};
  for (size_t i = 0; i < s.size(); i++) v[i] = dtypes::truncate_float(d, as_double(d, s[i]));
  if (d.scalar() == Scalar::FLOAT64) return fold_float_in<double>(op, d, v[0], v[1], v[2]);
  // float32 and narrower: the rounded operands are exact floats, and one float op then rounding to the
  // narrow type is correctly rounded (float has more than twice their precision).
  return fold_float_in<float>(op, d, static_cast<float>(v[0]), static_cast<float>(v[1]),
                              static_cast<float>(v[2]));
}

// ---- bit patterns of the narrow float types ----
struct MiniFormat {
  int mbits, bias;
  bool has_inf;  // false: e4m3fn, whose all-ones exponent still holds numbers
};

std::optional<MiniFormat> mini_format(Scalar s) {
  switch (s) {
    case Scalar::FLOAT16:
      return MiniFormat{10, 15, true};
    case Scalar::BFLOAT16:
      return MiniFormat{7, 127, true};
    case Scalar::FP8E4M3:
      return MiniFormat{3, 7, false};
    case Scalar::FP8E5M2:
      return MiniFormat{2, 15, true};
    default:
      return std::nullopt;
  }
}

uint64_t mini_bits(const MiniFormat& f, int total_bits, double v) {
  int ebits = total_bits - 1 - f.mbits;
  uint64_t sign = std::signbit(v) ? uint64_t{1} << (total_bits - 1) : 0, emax = (uint64_t{1} << ebits) - 1;
  uint64_t mmask = (uint64_t{1} << f.mbits) - 1;
  if (std::isnan(v))
    return f.has_inf ? (emax << f.mbits) | (uint64_t{1} << (f.mbits - 1)) : sign | (emax << f.mbits) | mmask;
  if (std::isinf(v)) return sign | (emax << f.mbits);
  double a = std::fabs(v);
  if (a == 0) return sign;
  int e;
  std::frexp(a, &e);
  int exp = e - 1 + f.bias;
  if (exp <= 0) return sign | static_cast<uint64_t>(std::ldexp(a, f.bias - 1 + f.mbits));  // subnormal
  uint64_t m = static_cast<uint64_t>(std::ldexp(a, f.mbits - (e - 1))) & mmask;
  return sign | (static_cast<uint64_t>(exp) << f.mbits) | m;
}

double mini_value(const MiniFormat& f, int total_bits, uint64_t b) {
  int ebits = total_bits - 1 - f.mbits;
  uint64_t emax = (uint64_t{1} << ebits) - 1, mmask = (uint64_t{1} << f.mbits) - 1;
  uint64_t e = (b >> f.mbits) & emax, m = b & mmask;
  double sign = (b >> (total_bits - 1)) & 1 ? -1.0 : 1.0;
  if (f.has_inf && e == emax) return m ? std::numeric_limits<double>::quiet_NaN() : sign * HUGE_VAL;
  if (!f.has_inf && e == emax && m == mmask) return std::numeric_limits<double>::quiet_NaN();
  if (e == 0) return sign * std::ldexp(static_cast<double>(m), 1 - f.bias - f.mbits);
  return sign * std::ldexp(static_cast<double>(m | (mmask + 1)), static_cast<int>(e) - f.bias - f.mbits);
}

uint64_t to_bits(DType d, const ConstValue& v) {
  int bits = bits_of(d);
  if (d.is_float()) {
    double f = dtypes::truncate_float(d, as_double(d, v));
    if (d.scalar() == Scalar::FLOAT64) return std::bit_cast<uint64_t>(f);
    if (d.scalar() == Scalar::FLOAT32) return std::bit_cast<uint32_t>(static_cast<float>(f));
    return mini_bits(*mini_format(d.scalar()), bits, f);
  }
  uint64_t u = static_cast<uint64_t>(int_value(d, v));
  return bits == 64 ? u : u & ((uint64_t{1} << bits) - 1);
}

ConstValue from_bits(DType d, uint64_t b) {
  if (d.is_bool()) return ConstValue{b != 0};
  if (!d.is_float()) return encode(d, static_cast<i128>(b));
  if (d.scalar() == Scalar::FLOAT64) return ConstValue{std::bit_cast<double>(b)};
  if (d.scalar() == Scalar::FLOAT32)
    return ConstValue{static_cast<double>(std::bit_cast<float>(static_cast<uint32_t>(b)))};
  return ConstValue{mini_value(*mini_format(d.scalar()), bits_of(d), b)};
}

bool foldable(DType d) { return !d.is_ptr() && (d.is_bool() || d.is_int() || d.is_float()); }

}  // namespace

std::optional<ConstValue> fold_const(Ops op, DType dtype, std::span<const ConstValue> srcs) {
  if (arity(op) != static_cast<int>(srcs.size())) return std::nullopt;
  DType d = dtype.scalar_type();
  if (!foldable(d)) return std::nullopt;
  if (op == Ops::WHERE) {
    const ConstValue& v = truthy(srcs[0]) ? srcs[1] : srcs[2];
    if (d.is_float()) return ConstValue{dtypes::truncate_float(d, as_double(d, v))};
    return encode(d, int_value(d, v));
  }
  if (d.is_bool()) return fold_bool(op, srcs);
  if (d.is_float()) return fold_float(op, d, srcs);
  return fold_int(op, d, srcs);
}

std::optional<ConstValue> cast_const(const ConstValue& v, DType from, DType to) {
  from = from.scalar_type(), to = to.scalar_type();
  if (!foldable(from) || !foldable(to)) return std::nullopt;
  if (to.is_bool()) return ConstValue{from.is_float() ? as_double(from, v) != 0 : int_value(from, v) != 0};
  if (to.is_float()) {
    if (from.is_float()) return ConstValue{dtypes::truncate_float(to, as_double(from, v))};
    i128 i = int_value(from, v);
    // int to float32 in one rounding (through double it could round twice)
    if (to.scalar() == Scalar::FLOAT32)
      return ConstValue{static_cast<double>(i < 0 ? static_cast<float>(static_cast<int64_t>(i))
                                                  : static_cast<float>(static_cast<uint64_t>(i)))};
    double f =
        i < 0 ? static_cast<double>(static_cast<int64_t>(i)) : static_cast<double>(static_cast<uint64_t>(i));
    return ConstValue{dtypes::truncate_float(to, f)};
  }
  if (!from.is_float()) return encode(to, int_value(from, v));
  double t = std::trunc(as_double(from, v));  // float to int: out of range is undefined, not folded
  if (!std::isfinite(t) || t < static_cast<double>(dtype_lo(to)) ||
      t >= static_cast<double>(dtype_hi(to)) + 1.0)
    return std::nullopt;
  return encode(to, static_cast<i128>(t));
}

std::optional<ConstValue> bitcast_const(const ConstValue& v, DType from, DType to) {
  from = from.scalar_type(), to = to.scalar_type();
  if (!foldable(from) || !foldable(to) || bits_of(from) != bits_of(to)) return std::nullopt;
  return from_bits(to, to_bits(from, v));
}

}  // namespace tg
