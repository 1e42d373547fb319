// The symbolic simplifier: identities, canonical order, like terms, div/mod, comparisons, where, casts,
// the index expressions kernels produce (with their known minimal forms), and a seeded property test.
#define BOOST_TEST_MODULE symbolic
#include <boost/test/unit_test.hpp>

#include <cstdint>

#include "symbolic_fuzz.hpp"
#include "uop/symbolic.hpp"

using namespace tg;

namespace {

UOpRef var(const char* n, int64_t lo, int64_t hi, DType d = dtypes::index) {
  return UOp::variable(n, lo, hi, d);
}
UOpRef num(int64_t v, DType d = dtypes::index) { return UOp::const_(d, v); }
UOpRef flag(bool v) { return UOp::const_(dtypes::bool_, v); }

// simplify(e) must be exactly the hand-written node `want` (structural equality is pointer equality).
#define CHECK_SIMPLIFIES(e, want)                                                                    \
  do {                                                                                               \
    UOpRef got_ = (e)->simplify(), want_ = (want);                                                   \
    BOOST_TEST(got_ == want_, fuzz::show((e).get()) << " -> " << fuzz::show(got_.get()) << ", want " \
                                                    << fuzz::show(want_.get()));                     \
  } while (0)

}  // namespace

BOOST_AUTO_TEST_CASE(identities) {
  UOpRef x = var("x", -10, 10), y = var("y", 0, 10);
  CHECK_SIMPLIFIES(x + 0, x);
  CHECK_SIMPLIFIES(x * 1, x);
  CHECK_SIMPLIFIES(x * 0, num(0));
  CHECK_SIMPLIFIES(x / 1, x);
  CHECK_SIMPLIFIES(x % 1, num(0));
  CHECK_SIMPLIFIES(x / -1, x * -1);
  CHECK_SIMPLIFIES(y / y, num(1));
  CHECK_SIMPLIFIES(y % y, num(0));
  CHECK_SIMPLIFIES(x ^ x, num(0));
  CHECK_SIMPLIFIES(x & x, x);
  CHECK_SIMPLIFIES(x->maximum(x), x);
  CHECK_SIMPLIFIES(x->lt(x), flag(false));
  CHECK_SIMPLIFIES(x->ne(x), flag(false));
  CHECK_SIMPLIFIES(x - x, num(0));
  CHECK_SIMPLIFIES((x % y) % y, x % y);
  CHECK_SIMPLIFIES(UOp::make(Ops::NEG, dtypes::index, {x}), x * -1);
  UOpRef f = UOp::variable("f", 0, 1, dtypes::int32)->cast(dtypes::float32);
  CHECK_SIMPLIFIES(f + 0.0, f);
  CHECK_SIMPLIFIES(f * 1.0, f);
  CHECK_SIMPLIFIES(f * 0.0, f * 0.0);  // NaN * 0 is NaN: not folded for floats
  CHECK_SIMPLIFIES(f - f, f - f);      // inf - inf is NaN: not folded for floats
}

BOOST_AUTO_TEST_CASE(bool_and_where) {
  UOpRef x = var("x", 0, 10), c = x->lt(num(5)), d = x->lt(num(7));
  UOpRef notc = c->ne(flag(true));
  CHECK_SIMPLIFIES(c & flag(true), c);
  CHECK_SIMPLIFIES(c & flag(false), flag(false));
  CHECK_SIMPLIFIES(c | flag(true), flag(true));
  CHECK_SIMPLIFIES(c->eq(flag(false)), notc);
  CHECK_SIMPLIFIES(notc->ne(flag(true)), c);
  CHECK_SIMPLIFIES(c | notc, flag(true));
  CHECK_SIMPLIFIES(c & notc, flag(false));
  CHECK_SIMPLIFIES(c->where(flag(true), flag(false)), c);
  CHECK_SIMPLIFIES(c->where(flag(false), flag(true)), notc);
  CHECK_SIMPLIFIES(c->where(x, x), x);
  CHECK_SIMPLIFIES(flag(true)->where(x, num(3)), x);
  CHECK_SIMPLIFIES(notc->where(x, num(3)), c->where(num(3), x));
  CHECK_SIMPLIFIES(c->where(d->where(x, num(3)), num(3)), (c & d)->where(x, num(3)));
  CHECK_SIMPLIFIES(c->where(x, num(1)) + c->where(num(2), num(1)), c->where(x + 2, num(2)));
  CHECK_SIMPLIFIES((x * flag(true)->cast(dtypes::index)), x);
}

BOOST_AUTO_TEST_CASE(casts) {
  UOpRef i8 = var("a", -100, 100, dtypes::int8), i32 = var("b", 0, 100, dtypes::int32);
  CHECK_SIMPLIFIES(i8->cast(dtypes::int32)->cast(dtypes::int8), i8);
  CHECK_SIMPLIFIES(i32->cast(dtypes::int8)->cast(dtypes::int32), i32);  // 0..100 fits in int8
  UOpRef w = var("w", 0, 1000, dtypes::int32);
  CHECK_SIMPLIFIES(w->cast(dtypes::int8)->cast(dtypes::int32), w->cast(dtypes::int8)->cast(dtypes::int32));
  UOpRef f = i32->cast(dtypes::float32);
  CHECK_SIMPLIFIES(f->cast(dtypes::float64)->cast(dtypes::float32), f);
  UOpRef dbl = i32->cast(dtypes::float64) / 3.0;
  CHECK_SIMPLIFIES(dbl->cast(dtypes::float32)->cast(dtypes::float64),
                   dbl->cast(dtypes::float32)->cast(dtypes::float64));
  CHECK_SIMPLIFIES(i32->cast(dtypes::float32)->cast(dtypes::int64),
                   i32->cast(dtypes::int64));  // exact in float
  CHECK_SIMPLIFIES(w->cast(dtypes::bool_), w->ne(num(0, dtypes::int32)));
  CHECK_SIMPLIFIES(UOp::make(Ops::CAST, dtypes::int32, {w}), w);
}

// arange is a sum of padded constants, one a bit: (0<(i//4)%2)?4:0 + (0<(i//2)%2)?2:0 + (0<i%2)?1:0 in
// int32 over an index i. It must come back as int(i): kernels compare it, and on CUDA 13 ptxas turned
// that sum's != 0 into != 3 (sort on CUDA ranked every row's first element one too far).
BOOST_AUTO_TEST_CASE(arange_bits_recombine_to_the_index) {
  UOpRef i = var("i", 0, 7);
  auto bit = [](const UOpRef& y, int64_t c) {
    return num(0)->lt(y)->where(num(c, dtypes::int32), num(0, dtypes::int32));
  };
  CHECK_SIMPLIFIES(bit(i / 4, 4) + bit((i / 2) % 2, 2) + bit(i % 2, 1), i->cast(dtypes::int32));
  CHECK_SIMPLIFIES(bit(i % 2, 5), ((i % 2) * 5)->cast(dtypes::int32));
  UOpRef y = var("y", 0, 2);  // 2 is not a bit: (0<2)?5:0 is 5, not 10
  CHECK_SIMPLIFIES(bit(y, 5), bit(y, 5));
  // casts merge only when neither side nor the result wraps
  UOpRef a = var("a", 0, 100, dtypes::int32), b = var("b", 0, 100, dtypes::int32);
  CHECK_SIMPLIFIES(a->cast(dtypes::int64) + b->cast(dtypes::int64), (a + b)->cast(dtypes::int64));
  CHECK_SIMPLIFIES(a->cast(dtypes::int64) * 3, (a * 3)->cast(dtypes::int64));
  UOpRef wide = a->cast(dtypes::int8) + b->cast(dtypes::int8);  // 100 + 100 wraps in int8
  CHECK_SIMPLIFIES(wide, wide);
  UOpRef big = var("g", 0, 2000000000, dtypes::int32);
  CHECK_SIMPLIFIES(big->cast(dtypes::int64) * 4, big->cast(dtypes::int64) * 4);  // 8e9 wraps in int32
}

BOOST_AUTO_TEST_CASE(canonical_order_and_like_terms) {
  UOpRef x = var("x", 0, 10), y = var("y", 0, 10), z = var("z", 0, 10);
  CHECK_SIMPLIFIES(y + x, x + y);
  CHECK_SIMPLIFIES(num(3) + x, x + 3);
  CHECK_SIMPLIFIES(x->const_like(int64_t{3})->maximum(x), x->maximum(num(3)));
  CHECK_SIMPLIFIES(z + (y + x), x + y + z);
  CHECK_SIMPLIFIES(x * 2 + y + x * 3, x * 5 + y);
  CHECK_SIMPLIFIES(x + 2 + y + 3, x + y + 5);
  CHECK_SIMPLIFIES((x + y) - y, x);
  CHECK_SIMPLIFIES((x + 5) - (x + 2), num(3));
  CHECK_SIMPLIFIES(x * 3 - x, x * 2);
  CHECK_SIMPLIFIES((y * 2) * x * 3, x * y * 6);
  CHECK_SIMPLIFIES((x + 3) * 4, x * 4 + 12);
  CHECK_SIMPLIFIES((x & num(12)) & num(10), x & num(8));
  CHECK_SIMPLIFIES(x % 4 + (x / 4) * 4, x);                     // (x%c)+(x//c)*c -> x
  CHECK_SIMPLIFIES((x / 2) % 3 + (x / 6) * 3, x / 2);           // ((x//a)%c)+(x//(a*c))*c -> x//a
  CHECK_SIMPLIFIES(y + (x % 8) * 2 + (x / 8) * 16, x * 2 + y);  // in a longer sum, scaled
}

BOOST_AUTO_TEST_CASE(flat_distributes_over_sums) {
  UOpRef x = var("x", 0, 10), y = var("y", 0, 10);
  UOpRef e = (x + y) * 4;
  BOOST_TEST(graph_rewrite(e, symbolic()) == e);
  BOOST_TEST(graph_rewrite(e, symbolic_flat()) == x * 4 + y * 4);
  BOOST_TEST(graph_rewrite(((x + y) * 4 + x) * 2, symbolic_flat()) == x * 10 + y * 8);
}

BOOST_AUTO_TEST_CASE(comparisons) {
  UOpRef x = var("x", 0, 10), y = var("y", 0, 3);
  CHECK_SIMPLIFIES(x->lt(num(11)), flag(true));
  CHECK_SIMPLIFIES(x->lt(num(0)), flag(false));
  CHECK_SIMPLIFIES((x + 3)->lt(num(5)), x->lt(num(2)));
  CHECK_SIMPLIFIES((x * 4)->lt(num(13)), x->lt(num(4)));
  CHECK_SIMPLIFIES((x * -2)->lt(num(-3)), num(1)->lt(x));
  CHECK_SIMPLIFIES((x / 4)->lt(num(2)), x->lt(num(8)));
  CHECK_SIMPLIFIES((x * 4 + y)->lt(num(16)), x->lt(num(4)));
  CHECK_SIMPLIFIES((x * -1)->lt(y * -1), y->lt(x));
  CHECK_SIMPLIFIES((x + 3)->ne(num(5)), x->ne(num(2)));
  CHECK_SIMPLIFIES(var("a", 3, 4)->lt(var("b", 5, 6)), flag(true));
  CHECK_SIMPLIFIES(x->maximum(var("n", -5, 0)), x);
}

BOOST_AUTO_TEST_CASE(masks_by_range) {
  // x & (2^k - 1) is x when x lies in [0, 2^k - 1] (the high nibble of a byte: (b >> 4) & 15)
  UOpRef b = var("b", 0, 255, dtypes::int32), m15 = num(15, dtypes::int32);
  CHECK_SIMPLIFIES((b >> num(4, dtypes::int32)) & m15, b >> num(4, dtypes::int32));
  CHECK_SIMPLIFIES(var("n", 0, 15, dtypes::int32) & m15, var("n", 0, 15, dtypes::int32));
  UOpRef low = b & m15;  // 0..255 needs the mask
  CHECK_SIMPLIFIES(low, low);
  UOpRef neg = var("s", -1, 3, dtypes::int32) & m15;  // -1 & 15 is 15
  CHECK_SIMPLIFIES(neg, neg);
  UOpRef odd = var("t", 0, 5, dtypes::int32) & num(6, dtypes::int32);  // not a low-bit mask: 5 & 6 is 4
  CHECK_SIMPLIFIES(odd, odd);
  UOpRef all = var("w", 0, 1000, dtypes::int64);  // the largest mask, 2^63 - 1
  CHECK_SIMPLIFIES(all & num(INT64_MAX, dtypes::int64), all);
}

BOOST_AUTO_TEST_CASE(wrap_around_is_respected) {
  // folds that hold over the integers but not modulo 2^bits must not fire when a node can wrap
  UOpRef big = var("x", 0, 2147483647, dtypes::int32), zero = num(0, dtypes::int32);
  UOpRef lt = (big + 1)->lt(zero);
  CHECK_SIMPLIFIES(lt, lt);  // x+1 < 0 is true for x = INT_MAX
  UOpRef twice = (big * 2) / num(2, dtypes::int32);
  CHECK_SIMPLIFIES(twice, twice);
  UOpRef u = var("a", 4, 255, dtypes::uint8);
  UOpRef sq = (u * u) / u;  // found by the fuzzer: a*a wraps in uint8
  CHECK_SIMPLIFIES(sq, sq);
  // narrow dtypes wrap first: uint8 200+200 is 144, so (x+x)>>1, (x*2)>>1 and (x*2)//2 are not x
  UOpRef b = var("b", 0, 255, dtypes::uint8), one8 = num(1, dtypes::uint8), two8 = num(2, dtypes::uint8);
  CHECK_SIMPLIFIES((b + b) >> one8, (b * 2) >> one8);
  CHECK_SIMPLIFIES((b * 2) >> one8, (b * 2) >> one8);
  CHECK_SIMPLIFIES((b * 2) / two8, (b * 2) / two8);
  UOpRef i8 = var("c", -128, 127, dtypes::int8), two_i8 = num(2, dtypes::int8);
  CHECK_SIMPLIFIES((i8 * 2) / two_i8, (i8 * 2) / two_i8);
  CHECK_SIMPLIFIES((i8 + i8) >> num(1, dtypes::int8), (i8 * 2) >> num(1, dtypes::int8));
  // without wrap (the range fits the dtype) the folds still fire
  UOpRef small = var("d", 0, 100, dtypes::uint8);
  CHECK_SIMPLIFIES((small * 2) / two8, small);
  // ring identities still hold under wrap
  CHECK_SIMPLIFIES((big + 5) - 5, big);
  UOpRef s = var("s", -5, 2147483647, dtypes::int32);
  CHECK_SIMPLIFIES((s + 1)->ne(zero), s->ne(num(-1, dtypes::int32)));
}

// The index arithmetic that movement ops, upcasts and local/global splits produce, with their minimal forms.
BOOST_AUTO_TEST_CASE(kernel_index_expressions) {
  UOpRef gidx = UOp::make(Ops::SPECIAL, dtypes::index, {num(1024)}, std::string("gidx0"));
  UOpRef lidx = UOp::make(Ops::SPECIAL, dtypes::index, {num(4)}, std::string("lidx0"));
  UOpRef r0 = UOp::range(num(4), 0), r1 = UOp::range(num(8), 1), r2 = UOp::range(num(4), 2);
  UOpRef x = var("x", 0, 1000), y = var("y", 0, 3), a = var("a", 0, 124);
  // local/global split and upcast: (gidx*4+lidx)//4 -> gidx, %4 -> lidx
  CHECK_SIMPLIFIES((gidx * 4 + lidx) / 4, gidx);
  CHECK_SIMPLIFIES((gidx * 4 + lidx) % 4, lidx);
  CHECK_SIMPLIFIES((x * 4 + y) % 4, y);
  CHECK_SIMPLIFIES((x * 4 + y) / 4, x);
  CHECK_SIMPLIFIES((gidx * 4 + 3) / 4, gidx);
  CHECK_SIMPLIFIES((lidx * 4 + r2) / 2, r2 / 2 + lidx * 2);
  // reshape (32,) <-> (4, 8) and back
  CHECK_SIMPLIFIES((r0 * 8 + r1) / 8, r0);
  CHECK_SIMPLIFIES((r0 * 8 + r1) % 8, r1);
  CHECK_SIMPLIFIES(((x / 3) * 3) + x % 3, x);
  CHECK_SIMPLIFIES(((r0 * 32 + r1 * 4 + r2) / 4) % 8, r1);
  CHECK_SIMPLIFIES(((r0 * 16 + r2 * 4 + y) % 16) / 4, r2);
  // (x+3)//3*3 from padding a reshape
  CHECK_SIMPLIFIES((x + 3) / 3, x / 3 + 1);
  CHECK_SIMPLIFIES(((x + 3) / 3) * 3, (x / 3) * 3 + 3);
  CHECK_SIMPLIFIES((x + 5) / 4, (x + 1) / 4 + 1);
  // nested div and mod
  CHECK_SIMPLIFIES((x / 2) / 3, x / 6);
  CHECK_SIMPLIFIES((x % 6) % 3, x % 3);
  CHECK_SIMPLIFIES((x % 6) / 2, (x / 2) % 3);
  CHECK_SIMPLIFIES((a / 2 + 1) / 2, (a + 2) / 4);
  CHECK_SIMPLIFIES((x * 4) / 8, x / 2);
  CHECK_SIMPLIFIES((x * 8) / 4, x * 2);
  CHECK_SIMPLIFIES((x * 10) % 9, x % 9);  // 10x == x (mod 9)
  // flips and negatives
  CHECK_SIMPLIFIES((r1 * -1 + 7) / 8, num(0));
  CHECK_SIMPLIFIES((var("n", 2, 7) * -1) / 3, (var("n", 2, 7) / 3) * -1);
  CHECK_SIMPLIFIES((a * -1 + 256) / 2, ((a + 1) / 2) * -1 + 128);
  CHECK_SIMPLIFIES((a * -8 + 16) / 4, a * -2 + 4);
  // identities and ranges
  CHECK_SIMPLIFIES(x * 1 + 0, x);
  CHECK_SIMPLIFIES(var("i", 0, 4)->lt(num(5)), flag(true));
  CHECK_SIMPLIFIES((x + -1)->lt(num(0)), x->lt(num(1)));         // padding valid
  CHECK_SIMPLIFIES((x * 4 + y)->lt(num(512)), x->lt(num(128)));  // float4 bound
  UOpRef n = var("n", 1, 10), r = UOp::range(n + 2, 3);
  CHECK_SIMPLIFIES(r % (n + 2), r);
  CHECK_SIMPLIFIES(r / (n + 2), num(0));
  CHECK_SIMPLIFIES((n * x + y) / n, x + y / n);
}

BOOST_AUTO_TEST_CASE(a_new_rule_is_one_line) {
  UOpRef x = var("x", 0, 10);
  PatternMatcher mine = symbolic() + PatternMatcher{
                                         {UPat::var("x") << UPat::cnst(int64_t{1}),
                                          [](Match& m) { return m["x"] * 2; }},  // x<<1 -> x*2
                                     };
  BOOST_TEST(graph_rewrite((x << num(1)) + x, mine) == x * 3);
}

BOOST_AUTO_TEST_CASE(property_random_expressions_agree_after_simplify) {
  fuzz::Generator g(20240601);
  int checked = 0;
  for (int i = 0; i < 4000; i++) {
    UOpRef e = g.expr();
    auto f = fuzz::check(e, g, 8);
    if (f) BOOST_FAIL(fuzz::report(fuzz::minimize(*f, g)));
    checked++;
  }
  BOOST_TEST(checked == 4000);
}
