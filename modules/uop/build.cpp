// Builders and operators: constants, variables, ALU nodes, and the a + b / x * 4 algebra.
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "base/error.hpp"
#include "uop/intern.hpp"

namespace tg {

namespace {

// Truncates toward zero and wraps modulo 2^64, as a cast from a wide float to an integer register would.
int64_t double_to_int(double v) {
  if (std::isnan(v)) return 0;
  double t = std::trunc(v);
  if (t >= -9223372036854775808.0 && t < 9223372036854775808.0) return static_cast<int64_t>(t);
  double m = std::fmod(t, 18446744073709551616.0);
  if (m < 0) m += 18446744073709551616.0;
  return m >= 9223372036854775808.0 ? static_cast<int64_t>(static_cast<uint64_t>(m))
                                    : static_cast<int64_t>(m);
}

// The value v as dtype d holds it: bools are 0/1, ints wrap to the width, floats round to the precision.
Arg canonical_const(DType d, const ConstValue& v) {
  if (d.is_ptr() || d.scalar() == Scalar::VOID)
    throw DTypeError("const", fmt::format("cannot make a constant of {}", d.str()));
  if (d.is_bool()) return std::visit([](auto x) { return static_cast<bool>(x != 0); }, v);
  if (d.is_int()) {
    int64_t i = std::holds_alternative<double>(v)
                    ? double_to_int(std::get<double>(v))
                    : std::visit([](auto x) { return static_cast<int64_t>(x); }, v);
    return dtypes::wrap_int(d, i);
  }
  double f = std::visit(
      [&](auto x) {
        if constexpr (std::is_same_v<decltype(x), int64_t>)  // uint64 constants keep their bit pattern
          return d.is_unsigned() ? static_cast<double>(static_cast<uint64_t>(x)) : static_cast<double>(x);
        else
          return static_cast<double>(x);
      },
      v);
  if (std::isnan(f)) f = std::numeric_limits<double>::quiet_NaN();
  return dtypes::truncate_float(d, f);
}

// b: the second source, if any (WHERE takes its dtype).
DType alu_dtype(Ops op, DType first, const UOp* b) {
  if (group::Comparison.contains(op)) return dtypes::bool_.vec(first.count());
  if (op == Ops::WHERE && b) return b->dtype();
  return first;
}

}  // namespace

UOpRef UOp::const_(DType dtype, ConstValue v) {
  return detail::make_view(Ops::CONST, dtype, {}, canonical_const(dtype, v));
}
UOpRef UOp::const_(DType dtype, double v) { return const_(dtype, ConstValue{v}); }

UOpRef UOp::variable(std::string name, int64_t min, int64_t max, DType dtype) {
  if (min > max) throw ValueError("variable", fmt::format("'{}' has min {} > max {}", name, min, max));
  return detail::make_view(Ops::DEFINE_VAR, dtype, {}, VarArg{std::move(name), min, max});
}

UOpRef UOp::range(const UOpRef& end, int64_t id, AxisType type) {
  const UOp* src[] = {end.get()};
  return detail::make_view(Ops::RANGE, end->dtype(), src, AxisArg{id, type});
}

UOpRef UOp::sink(std::vector<UOpRef> srcs) { return make(Ops::SINK, dtypes::void_, std::move(srcs)); }

UOpRef UOp::alu(Ops op, std::span<const UOpRef> others) const {
  std::vector<const UOp*> src{this};
  for (const UOpRef& o : others) src.push_back(o.get());
  return detail::make_view(op, alu_dtype(op, dtype_, others.empty() ? nullptr : others[0].get()), src);
}
UOpRef UOp::alu(Ops op, const UOpRef& b) const {
  const UOp* src[] = {this, b.get()};
  return detail::make_view(op, alu_dtype(op, dtype_, b.get()), src);
}
UOpRef UOp::alu(Ops op, const UOpRef& b, const UOpRef& c) const {
  const UOp* src[] = {this, b.get(), c.get()};
  return detail::make_view(op, alu_dtype(op, dtype_, b.get()), src);
}

UOpRef UOp::cast(DType d) const {
  const UOp* src[] = {this};
  return d == dtype_ ? ref() : detail::make_view(Ops::CAST, d, src);
}
UOpRef UOp::bitcast(DType d) const {
  const UOp* src[] = {this};
  return d == dtype_ ? ref() : detail::make_view(Ops::BITCAST, d, src);
}
UOpRef UOp::lt(const UOpRef& b) const { return alu(Ops::CMPLT, b); }
UOpRef UOp::ne(const UOpRef& b) const { return alu(Ops::CMPNE, b); }
UOpRef UOp::eq(const UOpRef& b) const { return alu(Ops::CMPEQ, b); }
UOpRef UOp::where(const UOpRef& a, const UOpRef& b) const { return alu(Ops::WHERE, a, b); }
UOpRef UOp::maximum(const UOpRef& b) const { return alu(Ops::MAX, b); }
UOpRef UOp::const_like(ConstValue v) const { return const_(dtype_.is_ptr() ? dtype_.base() : dtype_, v); }

// ---- operators ----

UOpRef operator+(const UOpRef& a, const UOpRef& b) { return a->alu(Ops::ADD, b); }
UOpRef operator*(const UOpRef& a, const UOpRef& b) { return a->alu(Ops::MUL, b); }
UOpRef operator-(const UOpRef& a, const UOpRef& b) { return a + (-b); }
UOpRef operator-(const UOpRef& a) {
  if (a->dtype().is_bool()) return a->ne(a->const_like(true));
  return a->dtype().is_float() ? a * a->const_like(-1.0) : a * a->const_like(int64_t{-1});
}
UOpRef operator/(const UOpRef& a, const UOpRef& b) {
  return a->alu(a->dtype().is_float() ? Ops::FDIV : Ops::IDIV, b);
}
UOpRef operator%(const UOpRef& a, const UOpRef& b) { return a->alu(Ops::MOD, b); }
UOpRef operator&(const UOpRef& a, const UOpRef& b) { return a->alu(Ops::AND, b); }
UOpRef operator|(const UOpRef& a, const UOpRef& b) { return a->alu(Ops::OR, b); }
UOpRef operator^(const UOpRef& a, const UOpRef& b) { return a->alu(Ops::XOR, b); }
UOpRef operator<<(const UOpRef& a, const UOpRef& b) { return a->alu(Ops::SHL, b); }
UOpRef operator>>(const UOpRef& a, const UOpRef& b) { return a->alu(Ops::SHR, b); }

#define TG_UOP_SCALAR_IMPL(OP)                                                     \
  UOpRef operator OP(const UOpRef& a, int64_t b) { return a OP a->const_like(b); } \
  UOpRef operator OP(int64_t a, const UOpRef& b) { return b->const_like(a) OP b; } \
  UOpRef operator OP(const UOpRef& a, double b) { return a OP a->const_like(b); }  \
  UOpRef operator OP(double a, const UOpRef& b) { return b->const_like(a) OP b; }
TG_UOP_SCALAR_IMPL(+)
TG_UOP_SCALAR_IMPL(*)
TG_UOP_SCALAR_IMPL(/)
TG_UOP_SCALAR_IMPL(%)
#undef TG_UOP_SCALAR_IMPL

// a - c adds the negated constant, so x - 3 is the same node as x + (-3).
UOpRef operator-(const UOpRef& a, int64_t b) {
  return a + a->const_like(static_cast<int64_t>(0 - static_cast<uint64_t>(b)));  // wraps like the dtype
}
UOpRef operator-(int64_t a, const UOpRef& b) { return b->const_like(a) - b; }
UOpRef operator-(const UOpRef& a, double b) { return a + a->const_like(-b); }
UOpRef operator-(double a, const UOpRef& b) { return b->const_like(a) - b; }

}  // namespace tg
