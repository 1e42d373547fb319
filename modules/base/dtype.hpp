#pragma once
// Data types: scalars, vectors (float.vec(4)) and pointers (global/local/register address space),
// with tinygrad's promotion lattice.
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace tg {

// Order is ABI: RendererCaps::dtypes is a bitmask indexed by this enum. Append only.
enum class Scalar : uint8_t {
  VOID, BOOL, INT8, UINT8, INT16, UINT16, INT32, UINT32, INT64, UINT64,
  FLOAT16, BFLOAT16, FLOAT32, FLOAT64, FP8E4M3, FP8E5M2,
  INDEX,  // integer of unspecified width for index arithmetic; lowered to int32/int64 before rendering
};
inline constexpr int kScalarCount = static_cast<int>(Scalar::INDEX) + 1;

enum class AddrSpace : uint8_t { NONE, GLOBAL, LOCAL, REG };

class DType {
 public:
  constexpr DType() = default;
  constexpr explicit DType(Scalar s, uint16_t count = 1) : scalar_(s), count_(count) {}

  constexpr Scalar scalar() const { return scalar_; }
  constexpr uint16_t count() const { return count_; }  // vector width (1 = scalar)
  constexpr bool is_ptr() const { return addr_ != AddrSpace::NONE; }
  constexpr AddrSpace addrspace() const { return addr_; }
  constexpr int64_t ptr_size() const { return ptr_size_; }  // elements behind a pointer, -1 = unknown

  constexpr DType vec(uint16_t n) const { DType d = *this; d.count_ = n; return d; }
  constexpr DType ptr(AddrSpace a = AddrSpace::GLOBAL, int64_t size = -1) const {
    DType d = *this; d.addr_ = a, d.ptr_size_ = size; return d;
  }
  constexpr DType base() const { DType d = *this; d.addr_ = AddrSpace::NONE, d.ptr_size_ = -1; return d; }  // pointee
  constexpr DType scalar_type() const { return DType(scalar_); }  // element type, no vector, no pointer

  size_t itemsize() const;  // bytes of the whole (vector) value; pointers are 8
  size_t scalar_itemsize() const;
  bool is_float() const;     // float16/bfloat16/float32/float64/fp8
  bool is_int() const;       // signed or unsigned integers and INDEX (not bool)
  bool is_unsigned() const;
  bool is_bool() const { return scalar_ == Scalar::BOOL; }
  // Smallest and largest finite value of the scalar type (as double; exact for ints up to 2^53,
  // see min_int/max_int for exact integer bounds).
  double min() const;
  double max() const;
  int64_t min_int() const;
  uint64_t max_uint() const;

  std::string_view name() const;  // "float", "half", "int", "unsigned char"... (tinygrad names)
  std::string str() const;        // "dtypes.float.vec(4).ptr()" style, for printing graphs

  friend constexpr bool operator==(const DType&, const DType&) = default;

 private:
  Scalar scalar_ = Scalar::VOID;
  uint16_t count_ = 1;
  AddrSpace addr_ = AddrSpace::NONE;
  int64_t ptr_size_ = -1;
};

std::ostream& operator<<(std::ostream& os, DType d);  // d.str()

namespace dtypes {
inline constexpr DType void_{Scalar::VOID}, bool_{Scalar::BOOL}, int8{Scalar::INT8}, uint8{Scalar::UINT8},
    int16{Scalar::INT16}, uint16{Scalar::UINT16}, int32{Scalar::INT32}, uint32{Scalar::UINT32},
    int64{Scalar::INT64}, uint64{Scalar::UINT64}, float16{Scalar::FLOAT16}, bfloat16{Scalar::BFLOAT16},
    float32{Scalar::FLOAT32}, float64{Scalar::FLOAT64}, fp8e4m3{Scalar::FP8E4M3}, fp8e5m2{Scalar::FP8E5M2},
    index{Scalar::INDEX};
inline constexpr DType half = float16, float_ = float32, double_ = float64, int_ = int32;
inline constexpr DType default_float = float32, default_int = int32;

// Least upper bound on tinygrad's promotion lattice (bool < ints < floats, signed/unsigned joins).
DType least_upper(std::span<const DType> ds);
inline DType least_upper(DType a, DType b) { const DType ds[] = {a, b}; return least_upper(ds); }
// The float type an op that needs floats (exp, division) computes in: least_upper(d, default_float).
DType least_upper_float(DType d);
// Accumulator type for sum, as tinygrad: ints widen to (u)int32 at least, floats to float32 at least.
DType sum_acc_dtype(DType d);
// Python-like weak scalar constants: int_tensor * 2 stays int, half_tensor * 2.5 stays half, int * 2.5 goes
// to default_float and bool * 2 to default_int (tinygrad's weakint/weakfloat lattice positions).
enum class WeakKind : uint8_t { BOOL, INT, FLOAT };
DType least_upper_weak(DType d, WeakKind scalar);
std::optional<DType> from_name(std::string_view name);  // "float32", "float", "half", "int64"...
std::span<const DType> all_scalars();                   // every concrete scalar (no VOID/INDEX)
// Value conversion as the hardware does it, for constant folding and CONST canonicalization:
// round v to float type d (half, bfloat16, fp8: round to nearest even, overflow to inf/max as tinygrad),
double truncate_float(DType d, double v);
// and wrap v to integer type d's width (two's complement; uint64 keeps its bit pattern, INDEX is int64).
int64_t wrap_int(DType d, int64_t v);
}  // namespace dtypes

}  // namespace tg
