// The symbolic simplifier: rule tables, one rule per line with its algebra. The deeper integer work
// (canonical sums, div/mod, comparisons) lives in uop/algebra.cpp.
#include "uop/symbolic.hpp"

#include <array>

#include "uop/algebra.hpp"

namespace tg {

namespace {

using M = Match;

DTypeSet int_or_bool() {
  return {dtypes::bool_, dtypes::int8,   dtypes::uint8, dtypes::int16,  dtypes::uint16,
          dtypes::int32, dtypes::uint32, dtypes::int64, dtypes::uint64, dtypes::index};
}

bool scalar_int(const UOpRef& u) { return is_intlike(u->dtype()) && u->dtype().count() == 1; }
bool int_or_bool_dtype(DType d) { return !d.is_ptr() && (d.is_int() || d.is_bool()); }
i128 ival(const UOpRef& c) { return int_value(c->dtype(), *c->const_value()); }
bool truthy(const UOpRef& c) {
  return std::visit([](auto v) { return v != 0; }, *c->const_value());
}
UOpRef not_(const UOpRef& x) { return x->ne(x->const_like(true)); }

UOpRef fold_alu(M& m) {
  const UOp& u = *m.root();
  std::array<ConstValue, 3> v;
  for (size_t i = 0; i < u.src().size(); i++) v[i] = *u.src(i)->const_value();
  DType operands = (u.op() == Ops::WHERE ? u.src(1) : u.src(0))->dtype();
  auto r = fold_const(u.op(), operands, std::span(v.data(), u.src().size()));
  return r ? UOp::const_(u.dtype(), *r) : UOpRef{};
}

UOpRef fold_cast(M& m, bool bit) {
  const UOpRef &c = m["c"], &r = m.root();
  auto v = bit ? bitcast_const(*c->const_value(), c->dtype(), r->dtype())
               : cast_const(*c->const_value(), c->dtype(), r->dtype());
  return v ? UOp::const_(r->dtype(), *v) : UOpRef{};
}

// Every value of x survives a round trip through dtype `to`.
bool lossless(const UOpRef& x, DType to) {
  DType from = x->dtype();
  if (from == to) return true;
  if (to.is_bool() || to.is_ptr()) return false;
  if (int_or_bool_dtype(from)) {
    IntRange r = int_range(*x);
    if (!to.is_float()) return r.lo >= dtype_lo(to) && r.hi <= dtype_hi(to);
    static constexpr int kMantissa[kScalarCount] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 11, 8, 24, 53, 4, 3, 0};
    i128 lim = i128{1} << kMantissa[static_cast<int>(to.scalar())];  // every integer up to 2^p is exact
    return r.lo >= -lim && r.hi <= lim;
  }
  if (!from.is_float() || !to.is_float()) return false;
  Scalar f = from.scalar(), t = to.scalar();
  bool fp8 = f == Scalar::FP8E4M3 || f == Scalar::FP8E5M2;
  if (t == Scalar::FLOAT64) return true;
  if (t == Scalar::FLOAT32) return f != Scalar::FLOAT64;
  return (t == Scalar::FLOAT16 || t == Scalar::BFLOAT16) && fp8;
}

UOpRef range_const(M& m) {
  const UOpRef& x = m.root();
  if (!int_or_bool_dtype(x->dtype())) return {};
  IntRange r = int_range(*x);
  return r.lo == r.hi ? int_const(x->dtype(), r.lo) : UOpRef{};
}

UOpRef flip(M& m) {  // commutative ops of ints and bools: sources in canonical order, constants last
  const UOpRef& x = m.root();
  if (!int_or_bool_dtype(x->src(0)->dtype()) || x->dtype().count() != 1) return {};
  if (uop_order(x->src(1).get(), x->src(0).get()) >= 0) return {};
  return x->with_src({x->src(1), x->src(0)});
}

UOpRef assoc_const(M& m) {  // (x op c1) op c2 -> x op (c1 op c2) for AND, OR, XOR, MAX
  const UOpRef &r = m.root(), &c1 = m["c1"], &c2 = m["c2"];
  if (m["i"]->op() != r->op() || !int_or_bool_dtype(r->dtype())) return {};
  const ConstValue v[] = {*c1->const_value(), *c2->const_value()};
  auto c = fold_const(r->op(), r->dtype(), v);
  return c ? m["x"]->alu(r->op(), UOp::const_(r->dtype(), *c)) : UOpRef{};
}

UOpRef where_merge(M& m) {  // alu(c?t:f, c?tt:ff) -> c ? alu(t,tt) : alu(f,ff) when a side folds
  const UOpRef &t = m["t"], &f = m["f"], &tt = m["tt"], &ff = m["ff"];
  if (!(t->is_const() && tt->is_const()) && !(f->is_const() && ff->is_const())) return {};
  Ops op = m.root()->op();
  return m["c"]->where(t->alu(op, tt), f->alu(op, ff));
}

UOpRef same_dtype_cast(M& m) { return m.root()->dtype() == m["x"]->dtype() ? m["x"] : UOpRef{}; }
UOpRef cast_cast(M& m) {
  return lossless(m["x"], m["a"]->dtype()) ? m["x"]->cast(m.root()->dtype()) : UOpRef{};
}
UOpRef cast_to_bool(M& m) {
  const UOpRef& x = m["x"];
  return x->dtype().is_bool() ? UOpRef{} : x->ne(x->const_like(int64_t{0}));
}

UOpRef div_div(M& m) {
  i128 a = ival(m["c1"]), b = ival(m["c2"]);
  DType d = m["x"]->dtype();
  return a > 0 && b > 0 && a * b <= dtype_hi(d) ? m["x"] / int_const(d, a * b) : UOpRef{};
}
UOpRef mod_div(M& m) {  // valid for any sign: both sides are odd functions of x
  i128 a = ival(m["c1"]), b = ival(m["c2"]);
  return a > 0 && b > 0 && a % b == 0 ? (m["x"] / m["c2"]) % int_const(m["x"]->dtype(), a / b) : UOpRef{};
}
UOpRef mod_mod(M& m) {
  i128 a = ival(m["c1"]), b = ival(m["c2"]);
  return b != 0 && a % b == 0 ? m["x"] % m["c2"] : UOpRef{};
}
UOpRef distribute_const(M& m) { return m["x"] * m["c2"] + m["c1"] * m["c2"]; }
UOpRef shift_const(M& m) { return int_const(m["x"]->dtype(), ival(m["c1"]) - ival(m["c0"])); }
UOpRef max_by_range(M& m) {
  const UOpRef &a = m["x"], &b = m["y"];
  if (!int_or_bool_dtype(a->dtype())) return {};
  IntRange ra = int_range(*a), rb = int_range(*b);
  return ra.lo >= rb.hi ? a : ra.hi <= rb.lo ? b : UOpRef{};
}

// x & (2^k - 1) -> x when x is known to lie in [0, 2^k - 1]: the high nibble of a byte, (b >> 4) & 15.
UOpRef and_by_range(M& m) {
  const UOpRef& x = m["x"];
  const ConstValue* v = m["c1"]->const_value();
  const int64_t* c = v ? std::get_if<int64_t>(v) : nullptr;
  if (!c || *c < 0 || x->dtype().is_bool()) return {};
  if (uint64_t u = static_cast<uint64_t>(*c); (u & (u + 1)) != 0) return {};  // unsigned: INT64_MAX + 1
  IntRange r = int_range(*x);
  return r.lo >= 0 && r.hi <= *c ? x : UOpRef{};
}

UOpRef where_and(M& m) { return (m["a"] & m["b"])->where(m["c"], m["d"]); }
UOpRef where_or(M& m) { return (m["a"] | m["b"])->where(m["c"], m["d"]); }
UOpRef where_not(M& m) { return m["x"]->where(m["b"], m["a"]); }
// (0<y) ? c : 0 -> y*c for an integer y that is 0 or 1: a padded constant's mask becomes arithmetic, so
// arange's bit terms, (0<(i//2))?2:0 + (0<i%2)?1:0, recombine to i.
UOpRef where_bit(M& m) {
  const UOpRef &y = m["y"], &c = m["c"], &r = m.root();
  if (ival(m["z"]) != 0 || ival(m["zz"]) != 0 || !scalar_int(y) || !scalar_int(r)) return {};
  IntRange yr = int_range(*y);
  if (!yr.exact || yr.lo < 0 || yr.hi > 1) return {};
  return y->dtype() == r->dtype() ? y * c : y->cast(r->dtype()) * c;
}
// int(a) + int(b) -> int(a+b) and int(a)*c -> int(a*c) when no value wraps in either type, so index math
// that became a tensor's value (arange) simplifies as one sum.
bool exact_in(const UOpRef& x, DType to) {
  IntRange r = int_range(*x);
  return r.exact && r.lo >= dtype_lo(to) && r.hi <= dtype_hi(to) && r.lo >= dtype_lo(x->dtype()) &&
         r.hi <= dtype_hi(x->dtype());
}
UOpRef add_casts(M& m) {
  const UOpRef &a = m["a"], &b = m["b"], &r = m.root();
  if (a->dtype() != b->dtype() || !scalar_int(a) || !scalar_int(r)) return {};
  UOpRef sum = a + b;
  return exact_in(a, r->dtype()) && exact_in(b, r->dtype()) && exact_in(sum, r->dtype())
             ? sum->cast(r->dtype())
             : UOpRef{};
}
UOpRef mul_cast(M& m) {
  const UOpRef &a = m["a"], &r = m.root();
  if (!scalar_int(a) || !scalar_int(r)) return {};
  UOpRef prod = a * int_const(a->dtype(), ival(m["c1"]));
  return exact_in(a, r->dtype()) && exact_in(prod, r->dtype()) ? prod->cast(r->dtype()) : UOpRef{};
}
UOpRef bitcast_bitcast(M& m) { return m["x"]->bitcast(m.root()->dtype()); }
UOpRef cmplt(M& m) { return scalar_int(m["x"]) ? fold_cmplt(m["x"], m["y"]) : UOpRef{}; }

// Short spellings for the tables: op(Ops::SHL, {x, zero}) is a pattern, to("x") returns a capture.
UPat op(Ops o, std::vector<UPat> src) { return UPat(o, std::move(src)); }
RewriteFn to(std::string name) {
  return [name = std::move(name)](M& m) { return m[name]; };
}
RewriteFn to_const(ConstValue v) {
  return [v](M& m) { return m.root()->const_like(v); };
}

}  // namespace

const PatternMatcher& symbolic_simple() {
  static const PatternMatcher rules = [] {
    UPat x = UPat::var("x"), y = UPat::var("y"), c = UPat::cvar("c"), cv = UPat::cvar();
    UPat xi = UPat::var("x", DTypeSet::ints()), xib = UPat::var("x", int_or_bool());
    UPat xb = UPat::var("x", DTypeSet::bools()), yb = UPat::var("y", DTypeSet::bools());
    UPat cb = UPat::cvar("c", DTypeSet::bools()), g = UPat::cvar("g");
    UPat t = UPat::cnst(ConstValue{true}, DTypeSet::bools()),
         f = UPat::cnst(ConstValue{false}, DTypeSet::bools());
    UPat zero = UPat::cnst(int64_t{0}), one = UPat::cnst(1.0);
    UPat a = UPat::var("a"), b = UPat::var("b"), cc = UPat::var("c"), d = UPat::var("d"), v = UPat::var("v");
    // clang-format off
    return PatternMatcher{
      // ** constant folding **
      {UPat(group::Unary, {}, std::vector<UPat>{cv}), fold_alu},            // op(c) -> c'
      {UPat(group::Binary, {}, std::vector<UPat>{cv, cv}), fold_alu},       // op(c0, c1) -> c'
      {UPat(group::Ternary, {}, std::vector<UPat>{cv, cv, cv}), fold_alu},  // op(c0, c1, c2) -> c'
      {op(Ops::CAST, {c}), [](M& m) { return fold_cast(m, false); }},       // cast(c) -> c'
      {op(Ops::BITCAST, {c}), [](M& m) { return fold_cast(m, true); }},     // bitcast(c) -> c'
      // ** self folding **
      {x + 0, to("x")},                                                     // x+0 -> x
      {x * 1, to("x")},                                                     // x*1 -> x
      {x / 1, to("x")},                                                     // x//1 -> x
      {op(Ops::FDIV, {x, one}), to("x")},                                   // x/1.0 -> x
      {xi / -1, [](M& m) { return m["x"] * -1; }},                          // x//-1 -> -x
      {xi % 1, to_const(int64_t{0})},                                       // x%1 -> 0
      {xib ^ 0, to("x")},                                                   // x^0 -> x
      {xib | 0, to("x")},                                                   // x|0 -> x
      {op(Ops::SHL, {x, zero}), to("x")},                                   // x<<0 -> x
      {op(Ops::SHR, {x, zero}), to("x")},                                   // x>>0 -> x
      {op(Ops::TRUNC, {xib}), to("x")},                                     // trunc(int x) -> x
      {op(Ops::NEG, {op(Ops::NEG, {x})}), to("x")},                         // --x -> x
      {op(Ops::NEG, {xi}), [](M& m) { return m["x"] * -1; }},               // -x -> x*-1 for ints
      {op(Ops::POW, {x, one}), to("x")},                                    // x**1 -> x
      {op(Ops::POW, {x, UPat::cnst(0.0)}), to_const(1.0)},                  // x**0 -> 1
      // ** zero folding (ints only: for floats x*0 is NaN when x is inf or NaN) **
      {xib * 0, to_const(int64_t{0})},                                      // x*0 -> 0
      {xib & 0, to_const(int64_t{0})},                                      // x&0 -> 0
      {xi / xi, to_const(int64_t{1})},                                      // x//x -> 1
      {xi % xi, to_const(int64_t{0})},                                      // x%x -> 0
      {xib ^ xib, to_const(int64_t{0})},                                    // x^x -> 0
      {xib.lt(xib), to_const(false)},                                       // x<x -> False
      {xib.ne(xib), to_const(false)},                                       // x!=x -> False
      {xib.eq(xib), to_const(true)},                                        // x==x -> True
      {op(Ops::AND, {x, x}), to("x")},                                      // x&x -> x
      {op(Ops::OR, {x, x}), to("x")},                                       // x|x -> x
      {x.maximum(x), to("x")},                                              // max(x,x) -> x
      {(UPat::var() % y).named("b") % y, to("b")},                          // (x%y)%y -> x%y
      {(xib ^ y) ^ y, to("x")},                                             // (x^y)^y -> x
      // ** bool **
      {xb * yb, [](M& m) { return m["x"] & m["y"]; }},                      // x*y -> x&y
      {xb + yb, [](M& m) { return m["x"] | m["y"]; }},                      // x+y -> x|y
      {xb.maximum(yb), [](M& m) { return m["x"] | m["y"]; }},               // max(x,y) -> x|y
      {xb & cb, [](M& m) { return truthy(m["c"]) ? m["x"] : m["c"]; }},     // x&True -> x
      {xb | cb, [](M& m) { return truthy(m["c"]) ? m["c"] : m["x"]; }},     // x|True -> True
      {xb.ne(f), to("x")},                                                  // x!=False -> x
      {xb.eq(t), to("x")},                                                  // x==True -> x
      {xb.eq(f), [](M& m) { return not_(m["x"]); }},                        // x==False -> !x
      {xb ^ t, [](M& m) { return not_(m["x"]); }},                          // x^True -> !x
      {xb.ne(t).ne(t), to("x")},                                            // !!x -> x
      {xb.where(t, f), to("x")},                                            // x?True:False -> x
      {xb.where(f, t), [](M& m) { return not_(m["x"]); }},                  // x?False:True -> !x
      // ** where **
      {UPat::var().where(v, v), to("v")},                                   // c?v:v -> v
      {g.where(a, b), [](M& m) { return truthy(m["g"]) ? m["a"] : m["b"]; }},  // True?a:b -> a
      {a.where(b.where(cc, d), d), where_and},                              // a?(b?c:d):d -> (a&b)?c:d
      {a.where(cc, b.where(cc, d)), where_or},                              // a?c:(b?c:d) -> (a|b)?c:d
      // ** casts **
      {UPat(OpSet{Ops::CAST, Ops::BITCAST}, {}, {{x}}), same_dtype_cast},   // cast(x, x.dtype) -> x
      {op(Ops::BITCAST, {op(Ops::BITCAST, {x})}), bitcast_bitcast},         // bitcast(bitcast(x)) -> bitcast
      {x.cast().named("a").cast(), cast_cast},                              // cast(cast(x)) -> cast(x)
      {x.cast(DTypeSet::bools()), cast_to_bool},                            // bool(x) -> x!=0
    };
    // clang-format on
  }();
  static const PatternMatcher pm = rules.memoized();  // pure rules: results are remembered in the nodes
  return pm;
}

const PatternMatcher& symbolic() {
  static const PatternMatcher rules = symbolic_simple() + [] {
    UPat x = UPat::var("x"), xi = UPat::var("x", DTypeSet::ints()), y = UPat::var("y");
    UPat c0 = UPat::cvar("c0"), c1 = UPat::cvar("c1"), c2 = UPat::cvar("c2");
    UPat xb = UPat::var("x", DTypeSet::bools()), t = UPat::cnst(ConstValue{true}, DTypeSet::bools());
    UPat wt = UPat::var("c").where(UPat::var("t"), UPat::var("f"));
    UPat wtt = UPat::var("c").where(UPat::var("tt"), UPat::var("ff"));
    UPat r = UPat(Ops::RANGE, std::vector<UPat>{UPat::var("e")}, std::nullopt, "r"), e = UPat::var("e");
    OpSet logic{Ops::AND, Ops::OR, Ops::XOR, Ops::MAX},
        ranged{Ops::DEFINE_VAR, Ops::SPECIAL, Ops::RANGE, Ops::CAST};
    UPat inner = UPat(logic, {}, std::vector<UPat>{x, c1}, std::nullopt, "i");
    auto when_int = [](UOpRef (*fn)(const UOpRef&)) {
      return [fn](M& m) { return scalar_int(m.root()) ? fn(m.root()) : UOpRef{}; };
    };
    // clang-format off
    return PatternMatcher{
      // ** canonical forms: flat sorted sums and products, like terms collected, constants last **
      {UPat(Ops::ADD), when_int(normalize_sum)},                            // b+a+a -> a*2+b
      {UPat(Ops::MUL), when_int(normalize_product)},                        // (b*2)*a*3 -> a*b*6
      {UPat(logic | OpSet{Ops::CMPNE, Ops::CMPEQ}), flip},                  // c op x -> x op c
      {(xi + c1) * c2, distribute_const},                                   // (x+c1)*c2 -> x*c2+c1*c2
      // ** a value known from its range is a constant **
      {UPat(group::ALU | ranged), range_const},                             // x in [c,c] -> c
      // ** div and mod **
      {(xi / c1) / c2, div_div},                                            // (x//c1)//c2 -> x//(c1*c2)
      {(xi % c1) / c2, mod_div},                                            // (x%(k*c))//c -> (x//c)%k
      {(xi % c1) % c2, mod_mod},                                            // (x%(k*c))%c -> x%c
      {r % e, to("r")},                                                     // r%end -> r
      {r / e, to_const(int64_t{0})},                                        // r//end -> 0
      {UPat(OpSet{Ops::IDIV, Ops::MOD}), when_int(fold_divmod)},            // (x*4+y)//4 -> x ...
      // ** comparisons **
      {xi.lt(y), cmplt},                                                    // x+a<c -> x<c-a ...
      {(xi + c0).ne(c1), [](M& m) { return m["x"]->ne(shift_const(m)); }},  // x+a!=c -> x!=c-a
      {(xi + c0).eq(c1), [](M& m) { return m["x"]->eq(shift_const(m)); }},  // x+a==c -> x==c-a
      {xb | xb.ne(t), to_const(true)},                                      // x|!x -> True
      {xb & xb.ne(t), to_const(false)},                                     // x&!x -> False
      {x | (x & y), to("x")},                                               // x|(x&y) -> x
      {x & (x | y), to("x")},                                               // x&(x|y) -> x
      // ** max **
      {x.maximum(y), max_by_range},                                         // max(x,y) -> x if x>=y
      {xi & c1, and_by_range},                                              // x&15 -> x if 0<=x<=15
      {UPat(logic, {}, std::vector<UPat>{inner, c2}), assoc_const},         // (x&c1)&c2 -> x&(c1&c2)
      // ** where **
      {xb.ne(t).where(UPat::var("a"), UPat::var("b")), where_not},          // !c?a:b -> c?b:a
      {UPat::cvar("z").lt(y).where(UPat::cvar("c"), UPat::cvar("zz")), where_bit},  // (0<y)?c:0 -> y*c
      {UPat::var("a").cast() + UPat::var("b").cast(), add_casts},         // int(a)+int(b) -> int(a+b)
      {UPat::var("a").cast() * c1, mul_cast},                               // int(a)*c -> int(a*c)
      {UPat(group::Binary, {}, std::vector<UPat>{wt, wtt}), where_merge},   // (c?t:f)+(c?u:g) -> c?t+u:f+g
    };
    // clang-format on
  }();
  static const PatternMatcher pm = rules.memoized();  // pure rules: results are remembered in the nodes
  return pm;
}

const PatternMatcher& symbolic_flat() {
  static const PatternMatcher rules =
      symbolic() + PatternMatcher{
                       {(UPat::var("x", DTypeSet::ints()) + UPat::var("y")) * UPat::cvar("c"),
                        [](M& m) { return m["x"] * m["c"] + m["y"] * m["c"]; }},  // (x+y)*c -> x*c+y*c
                   };
  static const PatternMatcher pm = rules.memoized();
  return pm;
}

UOpRef UOp::simplify() const { return graph_rewrite(ref(), symbolic(), nullptr, {.name = "simplify"}); }

}  // namespace tg
