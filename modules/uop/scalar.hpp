#pragma once
// The scalar semantics of every ALU op and conversion on every dtype, in one table: constant folding
// (fold.cpp), the INTERP device and the host evaluator all compute through it, so they cannot disagree.
// Integers wrap to their width; IDIV/MOD truncate as in C, x/0 and x%0 give 0 and INT_MIN/-1 wraps; shifts
// by the width or more give 0 (or the sign). float32 and narrower floats compute in float and round back to
// their dtype, float64 in double; MULACC is fused on float32/float64, two roundings on narrower floats.
// float -> int truncates, then wraps modulo 2^64 (NaN gives 0).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "base/dtype.hpp"
#include "uop/ops.hpp"
#include "uop/uop.hpp"

namespace tg::scalar {

// One lane of a value: integers sign- or zero-extended to 64 bits (by their dtype), bools 0/1, floats the
// exact value, already rounded to their dtype, as a double.
union Value {
  int64_t i = 0;
  uint64_t u;
  double f;
};
inline Value int_value(int64_t v) {
  Value r;
  r.i = v;
  return r;
}
inline Value float_value(double v) {
  Value r;
  r.f = v;
  return r;
}

// op on operands of dtype `in` (WHERE: the dtype of its values), giving dtype `out` (bool for comparisons).
// ValueError "[alu] IDIV is not defined on float32" for an op that has no meaning on the dtype.
Value alu(Ops op, DType out, DType in, std::span<const Value> src);
bool defined(Ops op, DType in);  // whether alu accepts op on operands of dtype in
// alu without the error: nullopt for an op that has no meaning on the dtype.
std::optional<Value> alu_if_defined(Ops op, DType out, DType in, std::span<const Value> src);
int bits_of(DType d);  // the width of its scalar (INDEX: 64)
// The identity of a reduce with op ADD, MUL or MAX on dtype d (MAX: -inf, false or the smallest integer).
ConstValue identity_element(Ops op, DType d);
// C conversion from one dtype to another (float -> int as above, anything -> bool is != 0).
Value cast(Value v, DType from, DType to);

// A UOp constant as a lane of dtype d (rounded or wrapped to it), and back: bool for bools, int64_t for
// integers (uint64 as its bit pattern), double for floats.
Value from_const(const ConstValue& c, DType d);
ConstValue to_const(Value v, DType d);

// The dtype's storage bits (IEEE, bfloat16 and fp8 patterns; NaN keeps its sign), and one element in memory.
uint64_t to_bits(Value v, DType d);
Value from_bits(uint64_t bits, DType d);
void store(std::byte* p, DType d, Value v);
Value load(const std::byte* p, DType d);

// Threefry-2x32 with 20 rounds: counter x and key as (high << 32 | low) words, as tinygrad's THREEFRY.
uint64_t threefry2x32(uint64_t x, uint64_t key);

}  // namespace tg::scalar
