#pragma once
// Integer range analysis, exact in 128 bits so int64/uint64 wrap-around is detected. UOp::vmin/vmax are
// the public face; the simplifier also needs to know whether a node can wrap.
#include "uop/uop.hpp"

namespace tg {

__extension__ typedef __int128 i128;

struct IntRange {
  i128 lo = 0, hi = 0;
  bool exact = true;  // the node's value is the mathematical result of its op (no wrap-around)
};

// Bounds of an int, INDEX or bool node (bools as 0/1). Other dtypes give {0, 0, exact=false}.
IntRange int_range(const UOp& u);

bool is_intlike(DType d);  // signed/unsigned ints and INDEX (not bool)
i128 dtype_lo(DType d);    // smallest/largest value of the scalar type (INDEX as int64, bool as 0/1)
i128 dtype_hi(DType d);
i128 wrap_to(DType d, i128 v);                 // two's complement wrap to d's width
i128 int_value(DType d, const ConstValue& v);  // a CONST value of int/bool dtype d, uint64 read unsigned
UOpRef int_const(DType d, i128 v);             // CONST of d holding v (wrapped)
// The bounds of a float node: its value for a CONST, else -inf..inf.
std::pair<double, double> float_range(const UOp& u);

}  // namespace tg
