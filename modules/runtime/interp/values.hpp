#pragma once
// INTERP's scalar semantics, the reference every device is compared against: the table in uop/scalar.hpp
// (shared with constant folding and the host evaluator) on INTERP's lanes, which also carry pointers.
#include <cstddef>
#include <cstdint>
#include <span>

#include "base/dtype.hpp"
#include "uop/ops.hpp"
#include "uop/uop.hpp"

namespace tg::runtime::interp {

// One lane of one value. Ints are held sign- or zero-extended to 64 bits, bools as 0/1, floats as the
// exact value in a double; pointers as a memory id plus an element offset and the INDEX's validity.
struct Val {
  union {
    int64_t i = 0;
    uint64_t u;
    double f;
  };
  int64_t off = 0;
  int32_t mem = -1;
  bool valid = true;
};

inline Val int_val(int64_t v) {
  Val r;
  r.i = v;
  return r;
}
inline Val float_val(double v) {
  Val r;
  r.f = v;
  return r;
}

Val from_const(const ConstValue& c, DType d);
// op on scalar operands of dtype `in` (WHERE: the dtype of its second operand), giving dtype `out`.
// Throws ValueError for an op that has no meaning on the dtype (IDIV on floats, EXP2 on ints...).
Val alu(Ops op, DType out, DType in, std::span<const Val> src);
Val cast(const Val& v, DType from, DType to);
// Memory layout of one scalar (little-endian, floats in their IEEE/bfloat16/fp8 bit patterns).
void store_scalar(std::byte* p, DType d, const Val& v);
Val load_scalar(const std::byte* p, DType d);
// Threefry-2x32 with 20 rounds: counter x and key as (high << 32 | low) words.
uint64_t threefry2x32(uint64_t x, uint64_t key);

}  // namespace tg::runtime::interp
