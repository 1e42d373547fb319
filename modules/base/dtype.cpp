#include "base/dtype.hpp"

#include <array>
#include <bit>
#include <cmath>
#include <limits>
#include <ostream>

#include <fmt/format.h>

#include "base/error.hpp"

namespace tg {

namespace {

struct ScalarInfo {
  std::string_view c_name;     // tinygrad's DType.name (C spelling)
  std::string_view attr_name;  // tinygrad's dtypes.<attr> for printing
  std::string_view cpp_name;   // our dtypes::<name>
  uint8_t bits;
};

constexpr std::array<ScalarInfo, kScalarCount> kInfo = {{
    {"void", "void", "void_", 0},
    {"bool", "bool", "bool_", 8},
    {"signed char", "char", "int8", 8},
    {"unsigned char", "uchar", "uint8", 8},
    {"short", "short", "int16", 16},
    {"unsigned short", "ushort", "uint16", 16},
    {"int", "int", "int32", 32},
    {"unsigned int", "uint", "uint32", 32},
    {"long", "long", "int64", 64},
    {"unsigned long", "ulong", "uint64", 64},
    {"half", "half", "float16", 16},
    {"__bf16", "bfloat16", "bfloat16", 16},
    {"float", "float", "float32", 32},
    {"double", "double", "float64", 64},
    {"float8_e4m3", "fp8e4m3", "fp8e4m3", 8},
    {"float8_e5m2", "fp8e5m2", "fp8e5m2", 8},
    {"index", "index", "index", 64},
}};

const ScalarInfo& info(Scalar s) { return kInfo[static_cast<int>(s)]; }

// Promotion lattice nodes in tinygrad's priority order (the least upper bound is the lowest common
// ancestor in this order). WEAKINT and WEAKFLOAT are the positions of Python scalar constants.
enum Node : uint8_t {
  N_BOOL,
  N_WEAKINT,
  N_INT8,
  N_UINT8,
  N_INT16,
  N_UINT16,
  N_INT32,
  N_UINT32,
  N_INT64,
  N_UINT64,
  N_WEAKFLOAT,
  N_FP8E4M3,
  N_FP8E5M2,
  N_FLOAT16,
  N_BFLOAT16,
  N_FLOAT32,
  N_FLOAT64,
  N_COUNT
};

constexpr uint32_t bit(Node n) { return uint32_t{1} << n; }

// Direct parents of each node (jax-style lattice, as tinygrad's promo_lattice).
constexpr std::array<uint32_t, N_COUNT> kParents = {
    bit(N_WEAKINT),                    // bool
    bit(N_INT8) | bit(N_UINT8),        // weakint
    bit(N_INT16),                      // int8
    bit(N_INT16) | bit(N_UINT16),      // uint8
    bit(N_INT32),                      // int16
    bit(N_INT32) | bit(N_UINT32),      // uint16
    bit(N_INT64),                      // int32
    bit(N_INT64) | bit(N_UINT64),      // uint32
    bit(N_WEAKFLOAT),                  // int64
    bit(N_WEAKFLOAT),                  // uint64
    bit(N_FP8E4M3) | bit(N_FP8E5M2),   // weakfloat
    bit(N_FLOAT16) | bit(N_BFLOAT16),  // fp8e4m3
    bit(N_FLOAT16) | bit(N_BFLOAT16),  // fp8e5m2
    bit(N_FLOAT32),                    // float16
    bit(N_FLOAT32),                    // bfloat16
    bit(N_FLOAT64),                    // float32
    0,                                 // float64
};

constexpr uint32_t ancestors(int n) {
  uint32_t r = uint32_t{1} << n;
  for (int p = 0; p < N_COUNT; p++)
    if (kParents[n] & (uint32_t{1} << p)) r |= ancestors(p);
  return r;
}

Node node_of(Scalar s) {
  switch (s) {
    case Scalar::BOOL:
      return N_BOOL;
    case Scalar::INT8:
      return N_INT8;
    case Scalar::UINT8:
      return N_UINT8;
    case Scalar::INT16:
      return N_INT16;
    case Scalar::UINT16:
      return N_UINT16;
    case Scalar::INT32:
      return N_INT32;
    case Scalar::UINT32:
      return N_UINT32;
    case Scalar::INT64:
    case Scalar::INDEX:
      return N_INT64;
    case Scalar::UINT64:
      return N_UINT64;
    case Scalar::FLOAT16:
      return N_FLOAT16;
    case Scalar::BFLOAT16:
      return N_BFLOAT16;
    case Scalar::FLOAT32:
      return N_FLOAT32;
    case Scalar::FLOAT64:
      return N_FLOAT64;
    case Scalar::FP8E4M3:
      return N_FP8E4M3;
    case Scalar::FP8E5M2:
      return N_FP8E5M2;
    case Scalar::VOID:
      break;
  }
  throw DTypeError("least_upper", "void has no place in the promotion lattice");
}

// Weak results become the default dtypes, as tinygrad's strong_dtype.
DType strong(int n) {
  constexpr std::array<Scalar, N_COUNT> kScalar = {
      Scalar::BOOL,    Scalar::INT32,   Scalar::INT8,     Scalar::UINT8,   Scalar::INT16,   Scalar::UINT16,
      Scalar::INT32,   Scalar::UINT32,  Scalar::INT64,    Scalar::UINT64,  Scalar::FLOAT32, Scalar::FP8E4M3,
      Scalar::FP8E5M2, Scalar::FLOAT16, Scalar::BFLOAT16, Scalar::FLOAT32, Scalar::FLOAT64};
  if (n == N_WEAKINT) return dtypes::default_int;
  if (n == N_WEAKFLOAT) return dtypes::default_float;
  return DType(kScalar[n]);
}

int lub_node(uint32_t common) { return std::countr_zero(common); }

// Rounds to a binary float with `mant` stored mantissa bits and exponent bias `bias` (nearest even),
// then handles overflow by saturating or going to infinity.
double round_minifloat(double v, int mant, int bias, double max_finite, bool saturate) {
  if (!std::isfinite(v) || v == 0) return v;
  int e;
  std::frexp(v, &e);  // |v| in [2^(e-1), 2^e)
  int exp = std::max(e - 1, 1 - bias);
  double step = std::ldexp(1.0, exp - mant);
  double r = std::nearbyint(v / step) * step;
  if (std::fabs(r) > max_finite) return saturate ? std::copysign(max_finite, v) : std::copysign(INFINITY, v);
  return r;
}

double to_bfloat16(double v) {
  if (!std::isfinite(v)) return v;
  uint32_t u = std::bit_cast<uint32_t>(static_cast<float>(v));
  u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000u;
  return std::bit_cast<float>(u);
}

}  // namespace

size_t DType::scalar_itemsize() const { return (info(scalar_).bits + 7) / 8; }
size_t DType::itemsize() const { return is_ptr() ? 8 : scalar_itemsize() * count_; }

bool DType::is_float() const {
  switch (scalar_) {
    case Scalar::FLOAT16:
    case Scalar::BFLOAT16:
    case Scalar::FLOAT32:
    case Scalar::FLOAT64:
    case Scalar::FP8E4M3:
    case Scalar::FP8E5M2:
      return true;
    default:
      return false;
  }
}
bool DType::is_int() const {
  return scalar_ >= Scalar::INT8 && scalar_ <= Scalar::UINT64 ? true : scalar_ == Scalar::INDEX;
}
bool DType::is_unsigned() const {
  return scalar_ == Scalar::UINT8 || scalar_ == Scalar::UINT16 || scalar_ == Scalar::UINT32 ||
         scalar_ == Scalar::UINT64;
}

int64_t DType::min_int() const {
  if (!is_int() || is_unsigned()) return 0;
  int bits = info(scalar_).bits;
  return bits == 64 ? std::numeric_limits<int64_t>::min() : -(int64_t{1} << (bits - 1));
}
uint64_t DType::max_uint() const {
  if (is_bool()) return 1;
  if (!is_int()) return 0;
  int bits = info(scalar_).bits - (is_unsigned() ? 0 : 1);
  return bits == 64 ? std::numeric_limits<uint64_t>::max() : (uint64_t{1} << bits) - 1;
}

static double float_max(Scalar s) {
  switch (s) {
    case Scalar::FLOAT16:
      return 65504.0;
    case Scalar::BFLOAT16:
      return 3.3895313892515355e38;
    case Scalar::FLOAT32:
      return std::numeric_limits<float>::max();
    case Scalar::FLOAT64:
      return std::numeric_limits<double>::max();
    case Scalar::FP8E4M3:
      return 448.0;
    case Scalar::FP8E5M2:
      return 57344.0;
    default:
      return 0;
  }
}

double DType::min() const { return is_float() ? -float_max(scalar_) : static_cast<double>(min_int()); }
double DType::max() const { return is_float() ? float_max(scalar_) : static_cast<double>(max_uint()); }

std::string_view DType::name() const { return info(scalar_).c_name; }

std::string DType::str() const {
  std::string s = fmt::format("dtypes.{}", info(scalar_).attr_name);
  if (count_ != 1) s += fmt::format(".vec({})", count_);
  if (is_ptr()) {
    static constexpr std::string_view kSpace[] = {"NONE", "GLOBAL", "LOCAL", "REG"};
    std::string size = ptr_size_ >= 0 ? std::to_string(ptr_size_) : "";
    if (addr_ == AddrSpace::GLOBAL)
      s += fmt::format(".ptr({})", size);
    else
      s += fmt::format(".ptr({}{}AddrSpace.{})", size, size.empty() ? "" : ", ",
                       kSpace[static_cast<int>(addr_)]);
  }
  return s;
}

std::ostream& operator<<(std::ostream& os, DType d) { return os << d.str(); }

namespace dtypes {

DType least_upper(std::span<const DType> ds) {
  if (ds.empty()) throw DTypeError("least_upper", "needs at least one dtype");
  bool all_index = true, any_index = false, any_float = false;
  uint32_t common = ~uint32_t{0};
  for (DType d : ds) {
    if (d.is_ptr() || d.count() != ds[0].count())
      throw DTypeError("least_upper", fmt::format("cannot promote {} with {}", ds[0].str(), d.str()));
    bool idx = d.scalar() == Scalar::INDEX;
    all_index &= idx || d.is_bool() || d.is_int(), any_index |= idx, any_float |= d.is_float();
    common &= ancestors(node_of(d.scalar()));
  }
  uint16_t n = ds[0].count();
  // INDEX absorbs every integer; next to floats it behaves as int64.
  if (any_index && all_index && !any_float) return index.vec(n);
  return strong(lub_node(common)).vec(n);
}

DType least_upper_float(DType d) { return d.is_float() ? d : least_upper(d, default_float); }

DType least_upper_weak(DType d, WeakKind scalar) {
  if (d.is_ptr()) throw DTypeError("least_upper", fmt::format("cannot promote pointer {}", d.str()));
  if (d.scalar() == Scalar::INDEX) return scalar == WeakKind::FLOAT ? default_float.vec(d.count()) : d;
  Node w = scalar == WeakKind::BOOL ? N_BOOL : scalar == WeakKind::INT ? N_WEAKINT : N_WEAKFLOAT;
  return strong(lub_node(ancestors(node_of(d.scalar())) & ancestors(w))).vec(d.count());
}

DType sum_acc_dtype(DType d) {
  if (d.is_unsigned()) return least_upper(d, uint32);
  if (d.is_int() || d.is_bool()) return least_upper(d, int32);
  return least_upper(d, float32);
}

std::optional<DType> from_name(std::string_view name) {
  static constexpr std::pair<std::string_view, Scalar> kAliases[] = {
      {"half", Scalar::FLOAT16},  {"float", Scalar::FLOAT32},  {"double", Scalar::FLOAT64},
      {"char", Scalar::INT8},     {"uchar", Scalar::UINT8},    {"short", Scalar::INT16},
      {"ushort", Scalar::UINT16}, {"int", Scalar::INT32},      {"uint", Scalar::UINT32},
      {"long", Scalar::INT64},    {"ulong", Scalar::UINT64},   {"bf16", Scalar::BFLOAT16},
      {"bool_", Scalar::BOOL},    {"float_", Scalar::FLOAT32}, {"double_", Scalar::FLOAT64},
      {"int_", Scalar::INT32},    {"void_", Scalar::VOID}};
  for (auto [alias, s] : kAliases)
    if (alias == name) return DType(s);
  for (int i = 0; i < kScalarCount; i++) {
    const ScalarInfo& in = kInfo[i];
    if (name == in.c_name || name == in.attr_name || name == in.cpp_name)
      return DType(static_cast<Scalar>(i));
  }
  return std::nullopt;
}

std::span<const DType> all_scalars() {
  static constexpr DType kAll[] = {bool_,  int8,    uint8,    int16,   uint16,  int32,   uint32, int64,
                                   uint64, float16, bfloat16, float32, float64, fp8e4m3, fp8e5m2};
  return kAll;
}

double truncate_float(DType d, double v) {
  switch (d.scalar()) {
    case Scalar::FLOAT64:
      return v;
    case Scalar::FLOAT32:
      return static_cast<float>(v);
    case Scalar::FLOAT16:
      return round_minifloat(v, 10, 15, 65504.0, false);
    case Scalar::BFLOAT16:
      return to_bfloat16(v);
    case Scalar::FP8E4M3: {  // as PyTorch's .to(): no infinities, so inf and overflow become NaN
      double r = round_minifloat(v, 3, 7, 448.0, false);
      return std::isinf(r) ? std::numeric_limits<double>::quiet_NaN() : r;
    }
    case Scalar::FP8E5M2:  // as PyTorch's .to(): overflow becomes infinity
      return round_minifloat(v, 2, 15, 57344.0, false);
    default:
      throw DTypeError("truncate_float", fmt::format("{} is not a float dtype", d.str()));
  }
}

int64_t wrap_int(DType d, int64_t v) {
  switch (d.scalar()) {
    case Scalar::BOOL:
      return v != 0;
    case Scalar::INT8:
      return static_cast<int8_t>(v);
    case Scalar::UINT8:
      return static_cast<uint8_t>(v);
    case Scalar::INT16:
      return static_cast<int16_t>(v);
    case Scalar::UINT16:
      return static_cast<uint16_t>(v);
    case Scalar::INT32:
      return static_cast<int32_t>(v);
    case Scalar::UINT32:
      return static_cast<uint32_t>(v);
    case Scalar::INT64:
    case Scalar::UINT64:
    case Scalar::INDEX:
      return v;
    default:
      throw DTypeError("wrap_int", fmt::format("{} is not an integer dtype", d.str()));
  }
}

}  // namespace dtypes

}  // namespace tg
