// EXP2, LOG2, SIN and POW from + * / , comparisons, WHERE and bit casts, for targets without them. The
// algorithms (range reduction, polynomial coefficients) are those of SLEEF as tinygrad uses them: about
// 1 ulp for float32 and float64. Other float dtypes go through float32 (see decomp.cpp).
#include <array>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <numbers>
#include <utility>

#include "codegen/passes.hpp"

namespace tg::codegen {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

bool is_f64(const UOpRef& d) { return d->dtype().scalar() == Scalar::FLOAT64; }
DType with_scalar(const UOpRef& d, Scalar s) { return DType(s, d->dtype().count()); }
DType int_of(const UOpRef& d) { return with_scalar(d, is_f64(d) ? Scalar::INT64 : Scalar::INT32); }
DType uint_of(const UOpRef& d) { return with_scalar(d, is_f64(d) ? Scalar::UINT64 : Scalar::UINT32); }
int mantissa_bits(bool f64) { return f64 ? 52 : 23; }
int64_t exponent_bias(bool f64) { return f64 ? 1023 : 127; }
int64_t exponent_mask(bool f64) { return f64 ? 2047 : 255; }

UOpRef cf(const UOpRef& like, double v) { return like->const_like(v); }
UOpRef ci(const UOpRef& like, int64_t v) { return like->const_like(v); }
UOpRef lt(const UOpRef& a, double b) { return a->lt(cf(a, b)); }
UOpRef ne(const UOpRef& a, double b) { return a->ne(cf(a, b)); }
UOpRef band(const UOpRef& a, int64_t m) { return a & ci(a, m); }
UOpRef shr(const UOpRef& x, int y) { return x / (int64_t{1} << y); }  // as IDIV: only for x >= 0
UOpRef shl(const UOpRef& x, int y) { return x * (int64_t{1} << y); }

UOpRef poly(const UOpRef& x, std::initializer_list<double> coeffs) {
  UOpRef acc;
  for (double c : coeffs) acc = acc ? acc * x + c : cf(x, c);
  return acc;
}

// inf -> inf, -inf -> _inf, nan -> nan, anything else -> ratio
UOpRef map_numbers(const UOpRef& x, const UOpRef& inf, const UOpRef& _inf, const UOpRef& nan,
                   const UOpRef& ratio) {
  return ne(x, kInf)->where(x->ne(x)->where(nan, ne(x, -kInf)->where(ratio, _inf)), inf);
}

// Rounds to the nearest integer, halves away from zero.
UOpRef rintk(const UOpRef& d) { return (d + lt(d, 0.0)->where(cf(d, -0.5), cf(d, 0.5)))->cast(int_of(d)); }

// 2^q as a float, for integer q in the normal exponent range (int64 -> float64, int32 -> float32).
UOpRef pow2if(const UOpRef& q) {
  bool f64 = q->dtype().scalar() == Scalar::INT64;
  return shl(q + exponent_bias(f64), mantissa_bits(f64))
      ->bitcast(with_scalar(q, f64 ? Scalar::FLOAT64 : Scalar::FLOAT32));
}

// Integer part of log2(d) for a normal d >= 0.
UOpRef ilogb2k(const UOpRef& d) {
  bool f64 = is_f64(d);
  return band(shr(d->bitcast(int_of(d)), mantissa_bits(f64)), exponent_mask(f64)) - exponent_bias(f64);
}

// d * 2^e by adding e to the exponent field; e is an integer-valued float in [-127, 127].
UOpRef ldexp3k(const UOpRef& d, const UOpRef& e) {
  return (d->bitcast(int_of(d)) + shl(e->cast(int_of(d)), mantissa_bits(is_f64(d))))->bitcast(d->dtype());
}

// d * 2^e for a normal d > 0, in two steps so 2^e itself need not be representable.
UOpRef ldexp2k(const UOpRef& d, const UOpRef& e) {
  UOpRef half = e / int64_t{2};  // truncating: half + (e - half) == e for either sign
  return (d * pow2if(half)) * pow2if(e - half);
}

// (mantissa in [0.5, 1), exponent) of v != 0; the exponent is unsigned and wraps below the bias.
std::pair<UOpRef, UOpRef> frexp(const UOpRef& v) {
  bool f64 = is_f64(v);
  UOpRef bits = v->bitcast(uint_of(v));
  UOpRef exponent = band(shr(bits, mantissa_bits(f64)), exponent_mask(f64));
  int64_t m1 = f64 ? 0x000FFFFFFFFFFFFF : 0x807FFFFF, m2 = f64 ? 0x3FE0000000000000 : 0x3F000000;
  UOpRef mantissa = (band(bits, m1) | ci(bits, m2))->bitcast(v->dtype());
  return {mantissa, exponent - exponent_bias(f64) + 1};
}

// x mod pi/2 for 39800 <= |x| (valid down to pi/4): 190 bits of 2/pi (Payne-Hanek). Returns (r, quadrant).
std::pair<UOpRef, UOpRef> payne_hanek_reduction(const UOpRef& d) {
  static constexpr std::array<int64_t, 7> kTwoOverPi{0x00000000, 0x28be60db, 0x9391054a, 0x7f09d5f4,
                                                     0x7d4d3770, 0x36d8a566, 0x4f10e410};
  const DType u32 = with_scalar(d, Scalar::UINT32), u64 = with_scalar(d, Scalar::UINT64),
              i32 = with_scalar(d, Scalar::INT32);
  auto [f, e0] = frexp(d);
  UOpRef ia = (f * 4.294967296e9)->cast(u64);
  UOpRef i = shr(e0->cast(u64), 5);
  UOpRef e = band(e0->cast(i32), 31);
  UOpRef offset = ci(e, 32) - e;
  // two_over_pi[i + k], chosen with a chain of WHEREs
  auto take = [&](int k) {
    UOpRef an = UOp::const_(u32, ConstValue{int64_t{0}});
    for (int c = static_cast<int>(kTwoOverPi.size()) - 2 - k; c >= 0; c--)
      an = ne(i, static_cast<double>(c))
               ->where(an, UOp::const_(u32, ConstValue{kTwoOverPi[static_cast<size_t>(c + k)]}));
    return an;
  };
  // x << y and x >> y on 32 bits through multiplications by 2^y (some targets lack wide shifts)
  auto shl_lazy = [&](const UOpRef& x, const UOpRef& y) {
    return (x->cast(u64) * pow2if(y)->cast(u64))->cast(u32);
  };
  auto shr_lazy = [&](const UOpRef& x, const UOpRef& y) {
    return (x->cast(u64) / pow2if(y)->cast(u64))->cast(u32);
  };
  UOpRef a0 = take(0), a1 = take(1), a2 = take(2), a3 = take(3);
  UOpRef hi = shl_lazy(a0, e) | shr_lazy(a1, offset);
  UOpRef mi = shl_lazy(a1, e) | shr_lazy(a2, offset);
  UOpRef lo = shl_lazy(a2, e) | shr_lazy(a3, offset);
  auto hp_mul = [&](const UOpRef& x, const UOpRef& y) { return x->cast(u64) * y->cast(u64); };
  UOpRef p = shl(hp_mul(ia, hi), 32) + hp_mul(ia, mi) + shr(hp_mul(ia, lo), 32);
  UOpRef q = shr(p, 62)->cast(i32);
  p = band(p, 0x3fffffffffffffff);
  UOpRef r = p->cast(d->dtype()) * 3.4061215800865545e-19;
  UOpRef small = lt(f, 0.5);
  return {small->where(r, r - std::numbers::pi / 2), small->where(q, q + 1)};
}

// x mod pi/2 for |x| <= 39800 with pi split into exactly representable parts (Cody-Waite).
std::pair<UOpRef, UOpRef> cody_waite_reduction(const UOpRef& d) {
  constexpr double m_1_pi = 0.318309886183790671537767526745028724;
  if (is_f64(d)) {
    UOpRef qdh =
        (d * (m_1_pi / 16777216.0))->cast(with_scalar(d, Scalar::INT64))->cast(d->dtype()) * 16777216.0;
    UOpRef quadrant = rintk(d * m_1_pi - qdh);
    UOpRef q = quadrant->cast(d->dtype());
    constexpr double pa = 3.1415926218032836914, pb = 3.1786509424591713469e-08,
                     pc = 1.2246467864107188502e-16, pd = 1.2736634327021899816e-24;
    UOpRef x = qdh * -pa + d;
    x = q * -pa + x;
    x = qdh * -pb + x;
    x = q * -pb + x;
    x = qdh * -pc + x;
    x = q * -pc + x;
    x = (qdh + q) * -pd + x;
    return {x, quadrant->cast(with_scalar(d, Scalar::INT32))};
  }
  UOpRef quadrant = rintk(d * m_1_pi);
  UOpRef q = quadrant->cast(d->dtype());
  UOpRef x = q * -3.1414794921875 + d;
  x = q * -0.00011315941810607910156 + x;
  x = q * -1.9841872589410058936e-09 + x;
  x = q * -1.2154201256553420762e-10 + x;
  return {x, quadrant};
}

// sin on [-pi/2, pi/2]
UOpRef sin_poly(const UOpRef& d) {
  UOpRef d2 = d * d;
  if (is_f64(d))
    return d * poly(d2, {-7.97255955009037868891952e-18, 2.81009972710863200091251e-15,
                         -7.64712219118158833288484e-13, 1.60590430605664501629054e-10,
                         -2.50521083763502045810755e-08, 2.75573192239198747630416e-06,
                         -0.000198412698412696162806809, 0.00833333333333332974823815,
                         -0.166666666666666657414808, 1.0});
  return d * poly(d2, {2.6083159809786593541503e-06, -0.0001981069071916863322258,
                       0.00833307858556509017944336, -0.166666597127914428710938, 1.0});
}

UOpRef bit_set(const UOpRef& q, int64_t n) { return band(q, n)->ne(ci(q, 0)); }

UOpRef sin_poly_small(const UOpRef& d, const UOpRef& q) {
  UOpRef r = sin_poly(d);
  return r * bit_set(q, 1)->where(cf(r, -1.0), cf(r, 1.0));
}

UOpRef sin_poly_large(const UOpRef& d, const UOpRef& q) {
  UOpRef r = sin_poly(d + bit_set(q, 1)->where(cf(d, std::numbers::pi / 2), cf(d, 0.0)));
  return r * bit_set(q, 2)->where(cf(r, -1.0), cf(r, 1.0));
}

}  // namespace

UOpRef xexp2(const UOpRef& d) {
  bool f64 = is_f64(d);
  // Clamped to [lower, upper] (NaN to upper, so the integer conversion below stays defined): there 2^x
  // already overflows to inf and underflows to 0 through the two-step ldexp, so only NaN needs its own
  // select at the end. (Mapping inf, -inf and NaN first and testing the bounds last took 18 vector ops of
  // the 53 per 8 values on AVX2.)
  double upper = f64 ? 1024 : 128, lower = f64 ? -2000 : -150;
  UOpRef x = lt(d, upper)->where(d, cf(d, upper));
  x = lt(x, lower)->where(cf(d, lower), x);
  UOpRef q = rintk(x);
  UOpRef s = x - q->cast(d->dtype());
  // minimax polynomial for 2^s on [-0.5, 0.5]
  UOpRef u = f64 ? poly(s, {0.4434359082926529454e-9, 0.7073164598085707425e-8, 0.1017819260921760451e-6,
                            0.1321543872511327615e-5, 0.1525273353517584730e-4, 0.1540353045101147808e-3,
                            0.1333355814670499073e-2, 0.9618129107597600536e-2, 0.5550410866482046596e-1,
                            0.2402265069591012214e+0, 0.6931471805599452862e+0, 0.1000000000000000000e+1})
                 : poly(s, {0.1535920892e-3, 0.1339262701e-2, 0.9618384764e-2, 0.5550347269e-1,
                            0.2402264476e+0, 0.6931471825e+0, 1.0});
  return d->ne(d)->where(cf(d, kNan), ldexp2k(u, q));
}

UOpRef xlog2(const UOpRef& d) {
  bool f64 = is_f64(d);
  UOpRef is_denormal = lt(d, 1e-4);
  UOpRef a = is_denormal->where(d * 18446744073709551616.0, d);  // * 2^64
  UOpRef e = ilogb2k(a * (1.0 / 0.75))->cast(d->dtype());
  UOpRef m = ldexp3k(a, -e);
  e = is_denormal->where(e - 64.0, e);
  UOpRef x = (m - 1.0) / (m + 1.0);
  UOpRef x2 = x * x;
  UOpRef r;
  if (f64) {
    UOpRef t = poly(x2, {0.2211941750456081490e+0, 0.2200768693152277689e+0, 0.2623708057488514656e+0,
                         0.3205977477944495502e+0, 0.4121985945485324709e+0, 0.5770780162997058982e+0,
                         0.96179669392608091449});
    r = t * (x * x2) + e + x * 2.885390081777926774;
  } else {
    UOpRef t = poly(x2, {0.4374550283e+0, 0.5764790177e+0, 0.9618012905120});
    r = t * (x * x2) + e + x * 2.8853900432586669922 + x * 3.2734474483568488616e-08;
  }
  r = ne(d, kInf)->where(r, cf(r, kInf));                             // log2(inf) = inf
  r = ne(d, 0.0)->where(r, cf(r, -kInf));                             // log2(+-0) = -inf
  r = lt(d, -0.0)->where(cf(r, kNan), r);                             // log2(x < 0) = nan
  r = d->ne(d)->where(cf(r, kNan), r);                                // log2(nan) = nan
  return ne(d->alu(Ops::RECIPROCAL), -kInf)->where(r, cf(r, -kInf));  // -0.0, on targets where -0 == 0 fails
}

UOpRef xsin(const UOpRef& d) {
  UOpRef zero = cf(d, 0.0);
  UOpRef x = map_numbers(d, zero, zero, zero, d);
  UOpRef x_sign = ne(x, 0.0)->where(lt(x, 0.0)->where(cf(x, -1.0), cf(x, 1.0)), zero);
  UOpRef x_abs = x * x_sign;
  auto [r, q] = payne_hanek_reduction(x_abs);
  auto [r_small, q_small] = cody_waite_reduction(x_abs);
  // float64 Cody-Waite (with the qdh split) holds to 1e14; the Payne-Hanek here reads 32 mantissa bits and
  // 2/pi up to 2^128, enough for every float32 but not for float64 beyond that.
  UOpRef result =
      lt(x_abs, is_f64(d) ? 1e14 : 30.0)->where(sin_poly_small(r_small, q_small), sin_poly_large(r, q));
  UOpRef nan = cf(d, kNan);
  return map_numbers(d, nan, nan, nan, result * x_sign);
}

UOpRef xpow(const UOpRef& base, const UOpRef& exponent) {
  UOpRef neg = lt(base, 0.0);
  UOpRef ret = (neg->where(-base, base)->alu(Ops::LOG2) * exponent)->alu(Ops::EXP2);
  // a negative base gives nan for a non-integer exponent and flips the sign for an odd one
  const DType i32 = with_scalar(exponent, Scalar::INT32);
  UOpRef non_int = exponent->ne(exponent->cast(i32)->cast(exponent->dtype()));
  UOpRef is_odd = (lt(exponent, 0.0)->where(-exponent, exponent)->cast(i32) % int64_t{2})
                      ->ne(UOp::const_(i32, ConstValue{int64_t{0}}));
  UOpRef neg_base = non_int->where(ne(base, -kInf)->where(cf(ret, kNan), ret), is_odd->where(-ret, ret));
  UOpRef r = ne(exponent, 0.0)
                 ->where(neg->where(neg_base, ret), cf(ret, 1.0));  // x ** 0 = 1, even 0 ** 0 and nan ** 0
  return ne(base, 1.0)->where(r, cf(ret, 1.0));                     // 1 ** y = 1, even 1 ** nan
}

UOpRef threefry2x32(const UOpRef& x, const UOpRef& key) {
  const DType u32 = with_scalar(x, Scalar::UINT32), u64 = with_scalar(x, Scalar::UINT64);
  auto k = [&](int64_t v) { return UOp::const_(u32, ConstValue{v}); };
  UOpRef x0 = x->cast(u32), x1 = (x >> ci(x, 32))->cast(u32);
  UOpRef key0 = key->cast(u32), key1 = (key >> ci(key, 32))->cast(u32);
  static constexpr int kRot[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};
  const UOpRef ks[3] = {key1, key0 ^ key1 ^ k(0x1BD11BDA), key0};
  UOpRef a = x0 + ks[2], b = x1 + ks[0];
  for (int i = 0; i < 5; i++) {
    for (int r : kRot[i % 2]) {
      UOpRef s = a + b;
      b = s ^ ((b << k(r)) + (b >> k(32 - r)));  // rotate left by r
      a = s;
    }
    a = a + ks[i % 3];
    b = b + ks[(i + 1) % 3] + k(i + 1);
  }
  return (b->cast(u64) << ci(x, 32)) | a->cast(u64);
}

}  // namespace tg::codegen
