// Rewrites for ops a renderer lacks (RendererCaps::native_ops). One rule per op, added only when missing.
#include <cmath>
#include <functional>

#include "codegen/lower.hpp"
#include "codegen/passes.hpp"

namespace tg::codegen {

namespace {

const DTypeSet& wide_floats() {
  static const DTypeSet s{dtypes::float32, dtypes::float64};
  return s;
}
const DTypeSet& narrow_floats() {
  static const DTypeSet s{dtypes::float16, dtypes::bfloat16, dtypes::fp8e4m3, dtypes::fp8e5m2};
  return s;
}

// The same op computed in float32 and rounded back: narrow floats reuse the float32 decompositions.
UOpRef via_float32(Match& m) {
  const UOpRef& x = m.root();
  const DType f32 = DType(Scalar::FLOAT32, x->dtype().count());
  std::vector<UOpRef> src;
  for (const UOpRef& s : x->src()) src.push_back(s->cast(f32));
  return UOp::make(x->op(), f32, std::move(src), x->arg())->cast(x->dtype());
}

UPat unary(Ops op, const DTypeSet& d) {
  return UPat(OpSet{op}, d, std::vector<UPat>{UPat::var("a")}, std::nullopt, "x");
}
UPat binary(Ops op, const DTypeSet& d = {}) {
  return UPat(OpSet{op}, d, std::vector<UPat>{UPat::var("a"), UPat::var("b")}, std::nullopt, "x");
}

UOpRef trunc_float(const UOpRef& a) {
  bool f64 = a->dtype().scalar() == Scalar::FLOAT64;
  UOpRef mag = a->lt(a->const_like(0.0))->where(-a, a);
  UOpRef whole = a->cast(DType(f64 ? Scalar::INT64 : Scalar::INT32, a->dtype().count()))->cast(a->dtype());
  whole = whole->ne(a->const_like(0.0))->where(whole, a * a->const_like(0.0));  // trunc(-0.5) = -0
  return mag->lt(a->const_like(f64 ? 4503599627370496.0 : 8388608.0))
      ->where(whole, a);  // |a| >= 2^mantissa is whole
}

// float64 -> half/bfloat16 with one rounding. C (clang 14 calls a runtime helper with the wrong ABI for it)
// and GLSL narrow through float32, which rounds twice (1 + 2^-11 + 2^-40 -> 1, not 1 + 2^-10); rounding to
// float32 with round-to-odd first (the odd float next to x toward zero when inexact) keeps the second
// rounding right, as float32 has more than two bits beyond half's and bfloat16's mantissas.
UOpRef narrow_from_double(Match& m) {
  const UOpRef& x = m["a"];
  int n = x->dtype().count();
  DType f32(Scalar::FLOAT32, n), u32(Scalar::UINT32, n);
  auto abs = [](const UOpRef& v) { return v->lt(v->const_like(0.0))->where(-v, v); };
  UOpRef f = x->cast(f32), back = f->cast(x->dtype()), bits = f->bitcast(u32);
  UOpRef toward_zero = abs(back)->lt(abs(x))->where(bits, bits - int64_t{1});
  UOpRef odd = x->ne(back)->where((toward_zero | bits->const_like(int64_t{1})), bits);
  return odd->bitcast(f32)->cast(m.root()->dtype());
}

}  // namespace

PatternMatcher decompositions(const sdk::RendererCaps& caps) {
  std::vector<Rule> rules;
  rules.push_back({UPat(OpSet{Ops::CAST}, DTypeSet{dtypes::float16, dtypes::bfloat16},
                        std::vector<UPat>{UPat::var("a", DTypeSet{dtypes::float64})}, std::nullopt, "x"),
                   narrow_from_double});
  auto missing = [&](Ops op) { return !native_op(caps, op); };
  auto float_rule = [&](Ops op, std::function<UOpRef(Match&)> f) {
    rules.push_back({op == Ops::POW ? binary(op, wide_floats()) : unary(op, wide_floats()), std::move(f)});
    rules.push_back({op == Ops::POW ? binary(op, narrow_floats()) : unary(op, narrow_floats()), via_float32});
  };
  if (missing(Ops::EXP2)) float_rule(Ops::EXP2, [](Match& m) { return xexp2(m["a"]); });
  if (missing(Ops::LOG2)) float_rule(Ops::LOG2, [](Match& m) { return xlog2(m["a"]); });
  if (missing(Ops::SIN)) float_rule(Ops::SIN, [](Match& m) { return xsin(m["a"]); });
  if (missing(Ops::POW)) float_rule(Ops::POW, [](Match& m) { return xpow(m["a"], m["b"]); });
  if (missing(Ops::SQRT))
    float_rule(Ops::SQRT, [](Match& m) {
      // x ** 0.5, except sqrt(x < 0) = NaN (pow(-inf, 0.5) is inf) and sqrt(-0) = -0 (pow gives +0)
      const UOpRef& a = m["a"];
      UOpRef zero = a->const_like(0.0);
      return a->lt(zero)->where(a->const_like(NAN), a->ne(zero)->where(xpow(a, a->const_like(0.5)), a));
    });
  if (missing(Ops::TRUNC)) float_rule(Ops::TRUNC, [](Match& m) { return trunc_float(m["a"]); });
  if (missing(Ops::FDIV))  // a / b -> a * (1/b)
    rules.push_back({binary(Ops::FDIV), [](Match& m) { return m["a"] * m["b"]->alu(Ops::RECIPROCAL); }});
  if (missing(Ops::RECIPROCAL) && !missing(Ops::FDIV))  // 1/x as a division
    rules.push_back({unary(Ops::RECIPROCAL, {}),
                     [](Match& m) { return m["a"]->const_like(1.0)->alu(Ops::FDIV, m["a"]); }});
  if (missing(Ops::MAX))  // max(a, b) -> a < b ? b : a
    rules.push_back({binary(Ops::MAX), [](Match& m) { return m["a"]->lt(m["b"])->where(m["b"], m["a"]); }});
  if (missing(Ops::CMPEQ))  // a == b -> !(a != b)
    rules.push_back({binary(Ops::CMPEQ), [](Match& m) {
                       UOpRef ne = m["a"]->ne(m["b"]);
                       return ne->ne(ne->const_like(true));
                     }});
  if (missing(Ops::MULACC))  // a*b+c as two roundings: the nearest a target without fma gets
    rules.push_back({UPat(Ops::MULACC, std::vector<UPat>{UPat::var("a"), UPat::var("b"), UPat::var("c")}),
                     [](Match& m) { return m["a"] * m["b"] + m["c"]; }});
  if (missing(Ops::NEG))  // -x -> x * -1, !x for bools
    rules.push_back({unary(Ops::NEG, {}), [](Match& m) {
                       const UOpRef& a = m["a"];
                       if (a->dtype().is_bool()) return a->ne(a->const_like(true));
                       return a * (a->dtype().is_float() ? a->const_like(-1.0) : a->const_like(int64_t{-1}));
                     }});
  if (missing(Ops::THREEFRY))
    rules.push_back({binary(Ops::THREEFRY), [](Match& m) { return threefry2x32(m["a"], m["b"]); }});
  return PatternMatcher(std::move(rules));
}

PatternMatcher form_mulacc(const sdk::RendererCaps& caps) {
  std::vector<Rule> rules;
  if (!native_op(caps, Ops::MULACC)) return PatternMatcher(std::move(rules));
  // a*b+c -> fma(a, b, c), one rounding: float32 and its vectors (fused lane by lane). Narrow floats stay
  // a*b+c in their type (a float32 fma rounded to half is not a half fma); float64 too (a device without a
  // fused double fma, as Vulkan's fma() may be, could not match). The MUL keeps its other users.
  UPat mul = UPat(Ops::MUL, std::vector<UPat>{UPat::var("a"), UPat::var("b")});
  UPat add =
      UPat(OpSet{Ops::ADD}, dtypes::float32, std::vector<UPat>{mul, UPat::var("c")}, std::nullopt, "x");
  rules.push_back({add.permuted(), [](Match& m) -> UOpRef {
                     return UOp::make(Ops::MULACC, m.root()->dtype(), {m["a"], m["b"], m["c"]});
                   }});
  return PatternMatcher(std::move(rules));
}

}  // namespace tg::codegen
