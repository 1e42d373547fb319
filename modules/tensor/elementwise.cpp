// Elementwise ops: broadcasting, dtype promotion with weak number constants, and every unary/binary op
// derived from the few ALU UOps (exp via EXP2, cos via SIN, ...).
#include <cmath>
#include <numbers>
#include <tuple>

#include <fmt/format.h>

#include "base/error.hpp"
#include "tensor/internal.hpp"

namespace tg {

using detail::alu;

namespace detail {

void check_same_device(const Tensor& a, const Tensor& b, std::string_view op) {
  if (a.device() != b.device())
    throw DeviceError(op, fmt::format("tensors are on different devices: {} and {}", a.device(), b.device()));
}

dtypes::WeakKind weak_kind(const Number& n) {
  return n.is_bool() ? dtypes::WeakKind::BOOL : n.is_int() ? dtypes::WeakKind::INT : dtypes::WeakKind::FLOAT;
}

Shape broadcast_shape(const Shape& a, const Shape& b, std::string_view op) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; i++) {
    sint x = i < n - a.size() ? sint(1) : a[i - (n - a.size())],
         y = i < n - b.size() ? sint(1) : b[i - (n - b.size())];
    if (!(x == y) && !(x == 1) && !(y == 1))
      throw ShapeError(op, fmt::format("cannot broadcast {} with {}", shape_str(a), shape_str(b)));
    out[i] = x == 1 ? y : x;
  }
  return out;
}

Tensor broadcast_to(const Tensor& t, const Shape& shape, std::string_view op) {
  if (t.shape() == shape) return t;
  if (broadcast_shape(t.shape(), shape, op) != shape)
    throw ShapeError(op, fmt::format("cannot broadcast {} to {}", shape_str(t.shape()), shape_str(shape)));
  Shape padded(shape.size() - t.shape().size(), 1);
  padded.insert(padded.end(), t.shape().begin(), t.shape().end());
  return t.reshape(padded).expand(shape);
}

std::pair<Tensor, Tensor> broadcasted(const Tensor& x, const Operand& y, bool reverse, std::string_view op) {
  Tensor a = x, b;
  if (const Number* n = y.number()) {
    DType out = dtypes::least_upper_weak(x.dtype(), weak_kind(*n));
    a = x.cast(out);
    b = const_tensor(n->value(), out, x.shape(), x.device());
  } else {
    b = *y.tensor();
    check_same_device(a, b, op);
    DType out = dtypes::least_upper(a.dtype(), b.dtype());
    Shape shape = broadcast_shape(a.shape(), b.shape(), op);
    a = broadcast_to(a.cast(out), shape, op);
    b = broadcast_to(b.cast(out), shape, op);
  }
  return reverse ? std::pair{b, a} : std::pair{a, b};
}

Tensor to_float(const Tensor& x) { return x.cast(dtypes::least_upper_float(x.dtype())); }

Tensor inverse(const Tensor& x) { return x.dtype().is_float() ? x.neg() : x.bitwise_not(); }

}  // namespace detail

namespace {

Tensor binop(Ops op, const Tensor& x, const Operand& y, bool reverse, std::string_view name) {
  auto [a, b] = detail::broadcasted(x, y, reverse, name);
  return alu(op, a, b);
}

void require_int(const Tensor& a, std::string_view op, bool allow_bool = true) {
  if (!(a.dtype().is_int() || (allow_bool && a.dtype().is_bool())))
    throw DTypeError(
        op, fmt::format("needs integer{} tensors, got {}", allow_bool ? " or bool" : "", a.dtype().name()));
}

Tensor int_binop(Ops op, const Tensor& x, const Operand& y, bool reverse, std::string_view name,
                 bool allow_bool) {
  auto [a, b] = detail::broadcasted(x, y, reverse, name);
  require_int(a, name, allow_bool);
  return alu(op, a, b);
}

// r, or NaN where a or b is NaN (MAX alone keeps whichever operand its comparison picks).
Tensor nan_through(const Tensor& a, const Tensor& b, const Tensor& r) {
  if (!a.dtype().is_float()) return r;
  return a.ne(a).logical_or(b.ne(b)).where(a + b, r);
}

Operand as_bool(const Operand& x) {
  if (const Tensor* t = x.tensor()) return t->cast(dtypes::bool_);
  return Number(x.number()->to_double() != 0);
}

// a - round(a / b) * b, in at least float32 so half inputs lose nothing before the final rounding.
Tensor float_remainder(const Tensor& a, const Tensor& b, Rounding mode) {
  DType wide = dtypes::least_upper(a.dtype(), dtypes::float32);
  Tensor x = a.cast(wide), y = b.cast(wide);
  Tensor r = x - x.div(y, mode) * y;
  return r.eq(0).where(x * 0, r).cast(a.dtype());  // a zero remainder has the sign of a, as C fmod
}

// Computes in at least float32 and casts back, so half and bfloat16 keep their accuracy.
Tensor in_float32(const Tensor& x, Tensor (*f)(const Tensor&)) {
  Tensor xf = detail::to_float(x);
  return f(xf.cast(dtypes::least_upper(xf.dtype(), dtypes::float32))).cast(xf.dtype());
}

}  // namespace

// ---- arithmetic ----
Tensor Tensor::add(const Operand& x, bool reverse) const { return binop(Ops::ADD, *this, x, reverse, "add"); }
Tensor Tensor::mul(const Operand& x, bool reverse) const { return binop(Ops::MUL, *this, x, reverse, "mul"); }

Tensor Tensor::sub(const Operand& x, bool reverse) const {
  auto [a, b] = detail::broadcasted(*this, x, reverse, "sub");
  if (a.dtype().is_bool())
    throw DTypeError("sub", "subtracting bool tensors is not supported, use logical_xor");
  return alu(Ops::ADD, a, b.neg());
}

Tensor Tensor::div(const Operand& x, std::optional<Rounding> mode, bool reverse) const {
  auto [a, b] = detail::broadcasted(*this, x, reverse, "div");
  if (a.dtype().is_int() && mode) {
    Tensor q = alu(Ops::IDIV, a, b);
    if (*mode == Rounding::TRUNC) return q;
    // C division truncates; step down when the remainder is nonzero and the signs differ
    Tensor fix = alu(Ops::MOD, a, b).ne(0).logical_and(a.lt(0).ne(b.lt(0)));
    return fix.where(q - 1, q);
  }
  if (!a.dtype().is_float()) {
    a = a.cast(dtypes::default_float);
    b = b.cast(dtypes::default_float);
  }
  if (!mode) return alu(Ops::FDIV, a, b);
  // a half quotient would round before trunc/floor: round once, after them
  DType wide = dtypes::least_upper(a.dtype(), dtypes::float32);
  Tensor d = alu(Ops::FDIV, a.cast(wide), b.cast(wide));
  return (*mode == Rounding::TRUNC ? d.trunc() : d.floor()).cast(a.dtype());
}

Tensor Tensor::mod(const Operand& x, bool reverse) const {
  auto [a, b] = detail::broadcasted(*this, x, reverse, "mod");
  if (a.dtype().is_bool()) throw DTypeError("mod", "needs numeric tensors, got bool");
  if (a.dtype().is_float()) return float_remainder(a, b, Rounding::FLOOR);
  Tensor r = alu(Ops::MOD, a, b);
  return r.ne(0).logical_and(r.lt(0).ne(b.lt(0))).where(r + b, r);
}

Tensor Tensor::fmod(const Operand& x) const {
  auto [a, b] = detail::broadcasted(*this, x, false, "fmod");
  if (a.dtype().is_bool()) throw DTypeError("fmod", "needs numeric tensors, got bool");
  if (a.dtype().is_float()) return float_remainder(a, b, Rounding::TRUNC);
  return alu(Ops::MOD, a, b);
}

Tensor Tensor::pow(const Operand& x, bool reverse) const {
  auto [a, b] = detail::broadcasted(*this, x, reverse, "pow");
  if (!a.dtype().is_int()) return alu(Ops::POW, a, b);
  // POW is a float op: integer powers go through float64 on |base|, rounded, with the sign put back. The
  // result wraps through int64 like integer multiplication (float to narrow int overflow is UB in C).
  Tensor mag = alu(Ops::POW, a.abs().cast(dtypes::float64), b.cast(dtypes::float64)).round();
  mag = mag.cast(dtypes::int64).cast(a.dtype());
  Tensor negative = (a < 0) & (b % 2).ne(0);
  return negative.where(-mag, mag);
}
Tensor Tensor::maximum(const Operand& x) const {
  auto [a, b] = detail::broadcasted(*this, x, false, "maximum");
  return nan_through(a, b, alu(Ops::MAX, a, b));
}

Tensor Tensor::minimum(const Operand& x) const {
  auto [a, b] = detail::broadcasted(*this, x, false, "minimum");
  return nan_through(a, b, detail::inverse(alu(Ops::MAX, detail::inverse(a), detail::inverse(b))));
}

Tensor Tensor::where(const Operand& x, const Operand& y) const {
  Tensor cond = cast(dtypes::bool_), a, b;
  if (x.tensor())
    std::tie(a, b) = detail::broadcasted(*x.tensor(), y, false, "where");
  else if (y.tensor())
    std::tie(a, b) = detail::broadcasted(*y.tensor(), x, true, "where");
  else {
    DType d = dtypes::least_upper(x.number()->default_dtype(), y.number()->default_dtype());
    a = detail::const_tensor(x.number()->value(), d, {}, device());
    b = detail::const_tensor(y.number()->value(), d, {}, device());
  }
  detail::check_same_device(cond, a, "where");
  Shape shape = detail::broadcast_shape(cond.shape(), a.shape(), "where");
  cond = detail::broadcast_to(cond, shape, "where");
  return alu(Ops::WHERE, cond, detail::broadcast_to(a, shape, "where"),
             detail::broadcast_to(b, shape, "where"));
}

Tensor Tensor::clamp(std::optional<Number> min, std::optional<Number> max) const {
  if (!min && !max) throw ValueError("clamp", "needs at least one of min and max");
  Tensor r = *this;
  if (min) r = r.lt(*min).where(*min, r);
  if (max) r = r.gt(*max).where(*max, r);
  return r;
}

Tensor Tensor::clamp(const Tensor& min, const Tensor& max) const {
  Tensor r = lt(min).where(min, *this);
  return r.gt(max).where(max, r);
}

// ---- comparisons and logic ----
Tensor Tensor::lt(const Operand& x) const { return binop(Ops::CMPLT, *this, x, false, "lt"); }
Tensor Tensor::gt(const Operand& x) const { return binop(Ops::CMPLT, *this, x, true, "gt"); }
Tensor Tensor::eq(const Operand& x) const { return binop(Ops::CMPEQ, *this, x, false, "eq"); }
Tensor Tensor::ne(const Operand& x) const { return binop(Ops::CMPNE, *this, x, false, "ne"); }
Tensor Tensor::le(const Operand& x) const { return lt(x).logical_or(eq(x)); }
Tensor Tensor::ge(const Operand& x) const { return gt(x).logical_or(eq(x)); }

Tensor Tensor::logical_not() const { return cast(dtypes::bool_).ne(true); }
Tensor Tensor::logical_and(const Operand& x) const {
  return binop(Ops::AND, cast(dtypes::bool_), as_bool(x), false, "logical_and");
}
Tensor Tensor::logical_or(const Operand& x) const {
  return binop(Ops::OR, cast(dtypes::bool_), as_bool(x), false, "logical_or");
}
Tensor Tensor::logical_xor(const Operand& x) const {
  return binop(Ops::XOR, cast(dtypes::bool_), as_bool(x), false, "logical_xor");
}

Tensor Tensor::bitwise_not() const {
  if (dtype().is_bool()) return logical_not();
  require_int(*this, "bitwise_not");
  return alu(Ops::XOR, *this, detail::const_tensor(int64_t{-1}, dtype(), shape(), device()));  // all ones
}
Tensor Tensor::bitwise_and(const Operand& x, bool reverse) const {
  return int_binop(Ops::AND, *this, x, reverse, "bitwise_and", true);
}
Tensor Tensor::bitwise_or(const Operand& x, bool reverse) const {
  return int_binop(Ops::OR, *this, x, reverse, "bitwise_or", true);
}
Tensor Tensor::bitwise_xor(const Operand& x, bool reverse) const {
  return int_binop(Ops::XOR, *this, x, reverse, "bitwise_xor", true);
}
Tensor Tensor::lshift(const Operand& x, bool reverse) const {
  return int_binop(Ops::SHL, *this, x, reverse, "lshift", false);
}
Tensor Tensor::rshift(const Operand& x, bool reverse) const {
  return int_binop(Ops::SHR, *this, x, reverse, "rshift", false);
}

Tensor Tensor::isnan() const { return ne(*this); }
Tensor Tensor::isinf(bool detect_positive, bool detect_negative) const {
  Tensor r = zeros_like(dtypes::bool_);
  if (detect_positive) r = r.logical_or(eq(INFINITY));
  if (detect_negative) r = r.logical_or(eq(-INFINITY));
  return r;
}
Tensor Tensor::isfinite() const { return isinf().logical_or(isnan()).logical_not(); }

Tensor Tensor::logaddexp(const Operand& x) const {
  auto [ai, bi] = detail::broadcasted(*this, x, false, "logaddexp");
  Tensor a = detail::to_float(ai), b = detail::to_float(bi), m = a.maximum(b);
  return ((a - m).exp() + (b - m).exp()).log() + m;
}

Tensor Tensor::threefry(const Tensor& key) const {
  if (dtype() != dtypes::uint64 || key.dtype() != dtypes::uint64)
    throw DTypeError("threefry", fmt::format("needs uint64 counters and key, got {} and {}", dtype().name(),
                                             key.dtype().name()));
  auto [a, b] = detail::broadcasted(*this, key, false, "threefry");
  return alu(Ops::THREEFRY, a, b);
}

// ---- unary ----
Tensor Tensor::neg() const {
  if (dtype().is_bool()) return logical_not();
  return alu(Ops::NEG, *this);
}
Tensor Tensor::reciprocal() const { return alu(Ops::RECIPROCAL, detail::to_float(*this)); }
Tensor Tensor::sqrt() const { return alu(Ops::SQRT, detail::to_float(*this)); }
Tensor Tensor::rsqrt() const { return sqrt().reciprocal(); }
Tensor Tensor::exp2() const { return alu(Ops::EXP2, detail::to_float(*this)); }
Tensor Tensor::log2() const { return alu(Ops::LOG2, detail::to_float(*this)); }
Tensor Tensor::exp() const {
  return in_float32(*this,
                    [](const Tensor& x) { return x.mul(std::numbers::log2e).exp2(); });  // e^x = 2^(x log2 e)
}
Tensor Tensor::log() const { return log2().mul(std::numbers::ln2); }  // ln x = log2 x * ln 2
Tensor Tensor::sin() const { return alu(Ops::SIN, detail::to_float(*this)); }
Tensor Tensor::cos() const {
  return in_float32(
      *this, [](const Tensor& x) { return (std::numbers::pi / 2 - x).sin(); });  // cos x = sin(pi/2 - x)
}
Tensor Tensor::tan() const { return sin() / cos(); }
Tensor Tensor::sigmoid() const {
  return (1 + detail::to_float(*this).mul(-std::numbers::log2e).exp2()).reciprocal();  // 1 / (1 + e^-x)
}
Tensor Tensor::tanh() const {
  // tanh x = 2 sigmoid(2x) - 1, which cancels near 0: there tanh x = x (error x^3/3), keeping -0 too
  return in_float32(
      *this, [](const Tensor& x) { return (x * x).lt(1e-8).where(x, 2.0 * x.mul(2.0).sigmoid() - 1.0); });
}
Tensor Tensor::relu() const { return gt(0).where(*this, 0); }
Tensor Tensor::leaky_relu(double neg_slope) const { return lt(0).where(*this * neg_slope, *this); }
Tensor Tensor::silu() const { return *this * sigmoid(); }
Tensor Tensor::softplus(double beta) const { return mul(beta).logaddexp(0.0) / beta; }
Tensor Tensor::logsigmoid() const { return -(-*this).softplus(); }
Tensor Tensor::square() const { return *this * *this; }

Tensor Tensor::abs() const {
  if (dtype().is_bool() || dtype().is_unsigned()) return *this;
  if (dtype().is_float()) return lt(0).where(neg(), eq(0).where(0.0, *this));  // abs(-0) = +0
  return lt(0).where(neg(), *this);
}

Tensor Tensor::sign() const {
  if (dtype().is_bool()) return *this;
  Tensor s = ne(0).where(lt(0).where(-1, 1), 0).cast(dtype());
  return dtype().is_float() ? ne(*this).where(*this, s) : s;  // sign(NaN) is NaN
}

Tensor Tensor::trunc() const { return dtype().is_float() ? alu(Ops::TRUNC, *this) : *this; }
Tensor Tensor::floor() const {
  if (!dtype().is_float()) return *this;
  Tensor t = trunc();
  return lt(t).where(t - 1, t);
}
Tensor Tensor::ceil() const {
  if (!dtype().is_float()) return *this;
  Tensor t = trunc();
  return gt(t).where(t + 1, t);
}
Tensor Tensor::round() const {
  if (!dtype().is_float()) return *this;
  // x.5 goes to the even neighbour: up (ceil(x-0.5)) exactly when sign and parity of trunc(x) agree
  Tensor half_t = trunc() / 2.0;
  Tensor up = gt(0).eq(half_t.trunc().eq(half_t));
  Tensor r = up.where((*this - 0.5).ceil(), (*this + 0.5).floor());
  return r.eq(0).where(*this * 0, r);  // a zero result keeps the sign of x
}

}  // namespace tg
