// Elementwise operators: arithmetic, math functions, activations, comparisons, logic, bitwise ops, Cast.
// Binary ops broadcast numpy-style (Tensor's own broadcasting); outputs keep ONNX's dtypes.
#include <fmt/format.h>

#include <cmath>
#include <numeric>

#include "onnx/ops.hpp"

namespace tg::onnx {
namespace {

template <typename F>
OpFn unary(F f) {
  return [f](const OpContext& c) -> std::vector<Value> { return {f(c.in(0))}; };
}
template <typename F>
OpFn binary(F f) {
  return [f](const OpContext& c) -> std::vector<Value> { return {f(c.in(0), c.in(1))}; };
}
// Max, Min, Sum: one or more inputs folded left to right, broadcasting.
template <typename F>
OpFn variadic(F f) {
  return [f](const OpContext& c) -> std::vector<Value> {
    std::vector<Tensor> xs = c.variadic();
    if (xs.empty()) c.fail("needs at least one input");
    Tensor r = xs[0];
    for (size_t i = 1; i < xs.size(); i++) r = f(r, xs[i]);
    return {r};
  };
}

Tensor require_float(const OpContext& c, const Tensor& x) {
  if (!x.dtype().is_float()) c.fail(fmt::format("needs a floating-point input, not {}", x.dtype().name()));
  return x;
}

// ONNX Pow keeps the base's dtype. An integer base with a float exponent truncates like numpy's astype,
// but a result within rounding of an integer (3 ** 2.0 computed as 8.9999) is that integer.
Tensor onnx_pow(const Tensor& x, const Tensor& y) {
  if (!x.dtype().is_int() || !y.dtype().is_float()) return x.pow(y).cast(x.dtype());
  Tensor r = x.cast(dtypes::float64).pow(y.cast(dtypes::float64));
  Tensor near = (r - r.round()).abs() <= r.abs().maximum(1.0) * 1e-9;
  return near.where(r.round(), r.trunc()).cast(x.dtype());
}

// Clip: bounds are attributes before opset 11, optional scalar inputs after.
Tensor onnx_clip(const OpContext& c) {
  Tensor x = c.in(0);
  std::optional<Tensor> lo, hi;
  if (c.opset() < 11) {
    if (c.has_attr("min")) lo = Tensor(c.attr_float("min"), x.dtype(), x.device());
    if (c.has_attr("max")) hi = Tensor(c.attr_float("max"), x.dtype(), x.device());
  } else {
    lo = c.opt(1);
    hi = c.opt(2);
  }
  if (lo) x = x.lt(*lo).where(lo->cast(x.dtype()), x);
  if (hi) x = x.gt(*hi).where(hi->cast(x.dtype()), x);
  return x;
}

void add_arithmetic(OpTable& t) {
  t["Add"] = binary([](const Tensor& a, const Tensor& b) { return a + b; });
  t["Sub"] = binary([](const Tensor& a, const Tensor& b) { return a - b; });
  t["Mul"] = binary([](const Tensor& a, const Tensor& b) { return a * b; });
  t["Div"] = binary([](const Tensor& a, const Tensor& b) {  // integer division truncates toward zero
    return a.dtype().is_int() ? a.div(b, Rounding::TRUNC) : a / b;
  });
  t["Mod"] = [](const OpContext& c) -> std::vector<Value> {
    const Tensor &a = c.in(0), &b = c.in(1);
    return {c.attr_int("fmod", 0) ? a.fmod(b) : a.mod(b)};  // fmod: the dividend's sign, else the divisor's
  };
  t["Pow"] = [](const OpContext& c) -> std::vector<Value> {
    const Tensor &x = c.in(0), &y = c.in(1);
    // x ** 2 with a known exponent (LayerNorm's variance in exported graphs) is x * x: exact, and a
    // multiply where POW costs a log and an exp per element.
    const HostValue* k = c.known(1);
    if (k && k->size() == 1 && x.dtype().is_float() && y.ndim() <= x.ndim() &&
        (k->dtype.is_float() ? k->floats[0] : static_cast<double>(k->ints[0])) == 2.0)
      return {x * x};
    return {onnx_pow(x, y)};
  };
  t["Max"] = variadic([](const Tensor& a, const Tensor& b) { return a.maximum(b); });
  t["Min"] = variadic([](const Tensor& a, const Tensor& b) { return a.minimum(b); });
  t["Sum"] = variadic([](const Tensor& a, const Tensor& b) { return a + b; });
  t["Mean"] = [](const OpContext& c) -> std::vector<Value> {
    std::vector<Tensor> xs = c.variadic();
    if (xs.empty()) c.fail("needs at least one input");
    Tensor total = xs[0];
    for (size_t i = 1; i < xs.size(); i++) total = total + xs[i];
    return {(total / static_cast<int64_t>(xs.size())).cast(xs[0].dtype())};
  };
  t["Clip"] = [](const OpContext& c) -> std::vector<Value> { return {onnx_clip(c)}; };
  t["Neg"] = unary([](const Tensor& x) { return x.neg(); });
  t["Abs"] = unary([](const Tensor& x) { return x.abs(); });
  t["Sign"] = unary([](const Tensor& x) { return x.sign(); });
  t["Reciprocal"] = unary([](const Tensor& x) { return x.reciprocal(); });
  t["Floor"] = unary([](const Tensor& x) { return x.floor(); });
  t["Ceil"] = unary([](const Tensor& x) { return x.ceil(); });
  t["Round"] = unary([](const Tensor& x) { return x.round(); });  // half to even, as ONNX
}

void add_math(OpTable& t) {
  t["Sqrt"] = unary([](const Tensor& x) { return x.sqrt(); });
  t["Exp"] = unary([](const Tensor& x) { return x.exp(); });
  t["Log"] = unary([](const Tensor& x) { return x.log(); });
  t["Sin"] = unary([](const Tensor& x) { return x.sin(); });
  t["Cos"] = unary([](const Tensor& x) { return x.cos(); });
  t["Tan"] = unary([](const Tensor& x) { return x.tan(); });
  t["Asin"] = unary([](const Tensor& x) { return x.asin(); });
  t["Acos"] = unary([](const Tensor& x) { return x.acos(); });
  t["Atan"] = unary([](const Tensor& x) { return x.atan(); });
  t["Sinh"] = unary([](const Tensor& x) { return x.sinh(); });
  t["Cosh"] = unary([](const Tensor& x) { return x.cosh(); });
  t["Asinh"] = unary([](const Tensor& x) { return x.asinh(); });
  t["Acosh"] = unary([](const Tensor& x) { return x.acosh(); });
  t["Atanh"] = unary([](const Tensor& x) { return x.atanh(); });
  t["Erf"] = unary([](const Tensor& x) { return x.erf().cast(x.dtype()); });
  t["Tanh"] = unary([](const Tensor& x) { return x.tanh(); });
}

void add_activations(OpTable& t) {
  t["Relu"] = unary([](const Tensor& x) { return x.relu(); });
  t["Sigmoid"] = unary([](const Tensor& x) { return x.sigmoid(); });
  t["Softplus"] = unary([](const Tensor& x) { return x.softplus(); });
  t["Softsign"] = unary([](const Tensor& x) { return x.softsign(); });
  t["HardSwish"] = unary([](const Tensor& x) { return x.hardswish(); });
  t["Mish"] = unary([](const Tensor& x) { return x.mish(); });
  t["LeakyRelu"] = [](const OpContext& c) -> std::vector<Value> {
    return {c.in(0).leaky_relu(c.attr_float("alpha", 0.01))};
  };
  t["PRelu"] = binary([](const Tensor& x, const Tensor& slope) { return x.lt(0).where(x * slope, x); });
  t["Elu"] = [](const OpContext& c) -> std::vector<Value> {
    return {c.in(0).elu(c.attr_float("alpha", 1.0))};
  };
  t["Celu"] = [](const OpContext& c) -> std::vector<Value> {
    return {c.in(0).celu(c.attr_float("alpha", 1.0))};
  };
  t["Selu"] = [](const OpContext& c) -> std::vector<Value> {
    const Tensor& x = require_float(c, c.in(0));
    double alpha = c.attr_float("alpha", 1.67326319217681884765625);
    double gamma = c.attr_float("gamma", 1.05070102214813232421875);
    Tensor xf = x.cast(dtypes::least_upper(x.dtype(), dtypes::float32));
    return {(gamma * xf.gt(0).where(xf, alpha * (xf.minimum(0).exp() - 1))).cast(x.dtype())};
  };
  t["HardSigmoid"] = [](const OpContext& c) -> std::vector<Value> {
    const Tensor& x = c.in(0);
    return {(x * c.attr_float("alpha", 0.2) + c.attr_float("beta", 0.5)).clamp(0.0, 1.0)};
  };
  t["ThresholdedRelu"] = [](const OpContext& c) -> std::vector<Value> {
    const Tensor& x = c.in(0);
    return {x.gt(c.attr_float("alpha", 1.0)).where(x, 0)};
  };
  t["Gelu"] = [](const OpContext& c) -> std::vector<Value> {
    std::string approximate = c.attr_str("approximate", "none");
    if (approximate != "none" && approximate != "tanh")
      c.fail(fmt::format("approximate must be 'none' or 'tanh', not '{}'", approximate));
    return {c.in(0).gelu(approximate)};
  };
  t["Shrink"] = [](const OpContext& c) -> std::vector<Value> {
    const Tensor& x = c.in(0);
    double bias = c.attr_float("bias", 0.0), lambd = c.attr_float("lambd", 0.5);
    return {x.lt(-lambd).where(x + bias, x.gt(lambd).where(x - bias, 0)).cast(x.dtype())};
  };
  t["ai.onnx.ml:Binarizer"] = [](const OpContext& c) -> std::vector<Value> {
    const Tensor& x = c.in(0);
    return {x.gt(c.attr_float("threshold", 0.0)).cast(x.dtype())};
  };
}

void add_logic(OpTable& t) {
  t["Equal"] = binary([](const Tensor& a, const Tensor& b) { return a.eq(b); });
  t["Less"] = binary([](const Tensor& a, const Tensor& b) { return a.lt(b); });
  t["LessOrEqual"] = binary([](const Tensor& a, const Tensor& b) { return a.le(b); });
  t["Greater"] = binary([](const Tensor& a, const Tensor& b) { return a.gt(b); });
  t["GreaterOrEqual"] = binary([](const Tensor& a, const Tensor& b) { return a.ge(b); });
  t["And"] = binary([](const Tensor& a, const Tensor& b) { return a.logical_and(b); });
  t["Or"] = binary([](const Tensor& a, const Tensor& b) { return a.logical_or(b); });
  t["Xor"] = binary([](const Tensor& a, const Tensor& b) { return a.logical_xor(b); });
  t["Not"] = unary([](const Tensor& x) { return x.logical_not(); });
  t["BitwiseAnd"] = binary([](const Tensor& a, const Tensor& b) { return a & b; });
  t["BitwiseOr"] = binary([](const Tensor& a, const Tensor& b) { return a | b; });
  t["BitwiseXor"] = binary([](const Tensor& a, const Tensor& b) { return a ^ b; });
  t["BitwiseNot"] = unary([](const Tensor& x) { return ~x; });
  t["BitShift"] = [](const OpContext& c) -> std::vector<Value> {
    std::string direction = c.attr_str("direction");
    const Tensor &x = c.in(0), &y = c.in(1);
    if (direction == "LEFT") return {x << y};
    if (direction == "RIGHT") return {x >> y};
    c.fail(fmt::format("direction must be LEFT or RIGHT, not '{}'", direction));
  };
  t["IsNaN"] = unary([](const Tensor& x) { return x.isnan(); });
  t["IsInf"] = [](const OpContext& c) -> std::vector<Value> {
    return {c.in(0).isinf(c.attr_int("detect_positive", 1) != 0, c.attr_int("detect_negative", 1) != 0)};
  };
  t["Where"] = [](const OpContext& c) -> std::vector<Value> {
    const Tensor &x = c.in(1), &y = c.in(2);
    return {c.in(0).where(x, y)};
  };
}

void add_casts(OpTable& t) {
  // saturate only changes float8 results, and float8 has no dtype here: dtype_from_onnx refuses it
  t["Cast"] = [](const OpContext& c) -> std::vector<Value> {
    DType to = dtype_from_onnx(static_cast<int32_t>(c.attr_int("to")), c.node().label());
    return {c.in(0).cast(to)};
  };
  t["CastLike"] = [](const OpContext& c) -> std::vector<Value> { return {c.in(0).cast(c.in(1).dtype())}; };
}

}  // namespace

void add_elementwise_ops(OpTable& t) {
  add_arithmetic(t);
  add_math(t);
  add_activations(t);
  add_logic(t);
  add_casts(t);
}

}  // namespace tg::onnx
