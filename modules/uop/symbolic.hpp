#pragma once
// The symbolic simplifier as rule tables. Each table is a function-local static (no init-order issues);
// combine them with `+` like any PatternMatcher.
#include <optional>
#include <span>

#include "uop/pattern.hpp"

namespace tg {

const PatternMatcher& symbolic_simple();  // constant folding + identities, cheap
const PatternMatcher& symbolic();         // + canonical order, like terms, div/mod, comparisons, where, casts
const PatternMatcher& symbolic_flat();    // symbolic + distributing mul over add (for index math)

// Folds an ALU op over constants with the exact semantics of `dtype`, the dtype of the operands (for WHERE,
// of the two values). Comparisons give bool. nullopt when the result is not defined at compile time
// (division by zero, shift by the width or more) or op is not an ALU op of that dtype.
std::optional<ConstValue> fold_const(Ops op, DType dtype, std::span<const ConstValue> srcs);
// Value conversion (CAST) and bit reinterpretation (BITCAST) of a constant; nullopt when undefined
// (float to int out of range, NaN to int) or the sizes differ.
std::optional<ConstValue> cast_const(const ConstValue& v, DType from, DType to);
std::optional<ConstValue> bitcast_const(const ConstValue& v, DType from, DType to);

}  // namespace tg
