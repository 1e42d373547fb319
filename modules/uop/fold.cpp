// Constant folding through the one table of scalar semantics (scalar.hpp), except where the result is only
// defined at run time: division by zero, shifts by the width or more, float to int out of range.
#include <cmath>

#include "uop/range.hpp"
#include "uop/scalar.hpp"
#include "uop/symbolic.hpp"

namespace tg {

namespace {

int arity(Ops op) {
  if (group::Unary.contains(op)) return 1;
  if (group::Ternary.contains(op)) return 3;
  return group::Binary.contains(op) ? 2 : -1;
}

bool foldable(DType d) { return !d.is_ptr() && (d.is_bool() || d.is_int() || d.is_float()); }

// What C leaves to run time (or traps on), so it stays a kernel op: x/0, x%0, shifts out of range, 1/0.
bool run_time_only(Ops op, DType d, std::span<const scalar::Value> s) {
  if (d.is_bool()) return op == Ops::NEG;  // C's -true is true; left to the device
  if (d.is_float()) return (op == Ops::FDIV && s[1].f == 0) || (op == Ops::RECIPROCAL && s[0].f == 0);
  if (op == Ops::IDIV || op == Ops::MOD) return s[1].u == 0;
  if (op == Ops::SHL || op == Ops::SHR) return s[1].i < 0 || s[1].i >= scalar::bits_of(d);
  return false;
}

}  // namespace

std::optional<ConstValue> fold_const(Ops op, DType dtype, std::span<const ConstValue> srcs) {
  if (arity(op) != static_cast<int>(srcs.size())) return std::nullopt;
  DType d = dtype.scalar_type();
  if (!foldable(d)) return std::nullopt;
  scalar::Value v[3];
  for (size_t i = 0; i < srcs.size(); i++)
    v[i] = scalar::from_const(srcs[i], op == Ops::WHERE && i == 0 ? dtypes::bool_ : d);
  std::span<const scalar::Value> s(v, srcs.size());
  if (op != Ops::WHERE && run_time_only(op, d, s)) return std::nullopt;
  DType out = group::Comparison.contains(op) ? dtypes::bool_ : d;
  std::optional<scalar::Value> r = scalar::alu_if_defined(op, out, d, s);
  return r ? std::optional(scalar::to_const(*r, out)) : std::nullopt;
}

std::optional<ConstValue> cast_const(const ConstValue& v, DType from, DType to) {
  from = from.scalar_type(), to = to.scalar_type();
  if (!foldable(from) || !foldable(to)) return std::nullopt;
  scalar::Value x = scalar::from_const(v, from);
  if (from.is_float() && !to.is_float() && !to.is_bool()) {  // float to int out of range is undefined
    double t = std::trunc(x.f);
    if (!std::isfinite(t) || t < static_cast<double>(dtype_lo(to)) ||
        t >= static_cast<double>(dtype_hi(to)) + 1.0)
      return std::nullopt;
  }
  return scalar::to_const(scalar::cast(x, from, to), to);
}

std::optional<ConstValue> bitcast_const(const ConstValue& v, DType from, DType to) {
  from = from.scalar_type(), to = to.scalar_type();
  if (!foldable(from) || !foldable(to) || scalar::bits_of(from) != scalar::bits_of(to)) return std::nullopt;
  return scalar::to_const(scalar::from_bits(scalar::to_bits(scalar::from_const(v, from), from), to), to);
}

}  // namespace tg
