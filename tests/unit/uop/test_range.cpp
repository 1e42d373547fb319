// Range analysis (vmin/vmax): hand-derived bounds for each op, and wrap-around seen as the full dtype.
#define BOOST_TEST_MODULE range
#include <boost/test/unit_test.hpp>

#include <cmath>

#include "uop/range.hpp"

using namespace tg;

namespace {

UOpRef var(const char* n, int64_t lo, int64_t hi, DType d = dtypes::index) {
  return UOp::variable(n, lo, hi, d);
}
UOpRef num(int64_t v, DType d = dtypes::index) { return UOp::const_(d, v); }
int64_t lo(const UOpRef& u) { return std::get<int64_t>(u->vmin()); }
int64_t hi(const UOpRef& u) { return std::get<int64_t>(u->vmax()); }
// Checks both bounds; failures name the line of the call.
#define bounds(u, l, h)        \
  do {                         \
    UOpRef u_ = (u);           \
    BOOST_TEST(lo(u_) == (l)); \
    BOOST_TEST(hi(u_) == (h)); \
  } while (0)
bool blo(const UOpRef& u) { return std::get<bool>(u->vmin()); }
bool bhi(const UOpRef& u) { return std::get<bool>(u->vmax()); }

}  // namespace

BOOST_AUTO_TEST_CASE(arithmetic) {
  UOpRef a = var("a", -3, 5), b = var("b", 2, 4);
  bounds(a + b, -1, 9);
  bounds(a * b, -12, 20);
  bounds(a * -2, -10, 6);
  BOOST_TEST(lo(UOp::make(Ops::NEG, dtypes::index, {a})) == -5);
  bounds(a->maximum(b), 2, 5);
  bounds(num(7), 7, 7);
}

BOOST_AUTO_TEST_CASE(division_truncates_toward_zero) {
  bounds(var("a", -7, 9) / 2, -3, 4);
  bounds(var("a", -7, 9) / -2, -4, 3);
  bounds(var("a", 10, 20) / var("b", 2, 5), 2, 10);
  // a divisor range through zero: the nonzero parts bound it (x/0 is undefined anyway)
  bounds(var("a", 1, 6) / var("b", -2, 3), -6, 6);
  bounds(var("a", 0, 100) % 7, 0, 6);
  bounds(var("a", -100, 0) % 7, -6, 0);
  bounds(var("a", -3, 100) % 7, -3, 6);
  bounds(var("a", 9, 12) % 7, 2, 5);  // one quotient
  bounds(var("a", 0, 100) % var("b", -4, 3), 0, 3);
}

BOOST_AUTO_TEST_CASE(bitwise_and_shifts) {
  UOpRef a = var("a", 0, 100, dtypes::int32);
  bounds(a & num(15, dtypes::int32), 0, 15);
  BOOST_TEST(lo(var("n", -50, -1, dtypes::int32) & num(6, dtypes::int32)) == 0);
  BOOST_TEST(hi(var("n", -50, -1, dtypes::int32) & num(6, dtypes::int32)) == 6);
  bounds(a | num(64, dtypes::int32), 64, 127);
  BOOST_TEST(hi(a ^ num(1, dtypes::int32)) == 127);
  bounds(a << num(2, dtypes::int32), 0, 400);
  BOOST_TEST(lo(var("n", -9, 9, dtypes::int32) >> num(1, dtypes::int32)) == -5);  // arithmetic shift floors
  BOOST_TEST(hi(var("n", -9, 9, dtypes::int32) >> num(1, dtypes::int32)) == 4);
  BOOST_TEST(lo(a << num(40, dtypes::int32)) == -2147483648LL);  // undefined shift: anything
}

BOOST_AUTO_TEST_CASE(comparisons_and_where) {
  UOpRef a = var("a", 3, 8), b = var("b", 9, 12);
  BOOST_TEST(blo(a->lt(b)) == true);  // always true
  BOOST_TEST(bhi(b->lt(a)) == false);
  BOOST_TEST(blo(a->lt(num(5))) == false);
  BOOST_TEST(bhi(a->lt(num(5))) == true);
  BOOST_TEST(blo(a->ne(b)) == true);
  BOOST_TEST(bhi(a->eq(b)) == false);
  BOOST_TEST(blo(num(4)->eq(num(4))) == true);
  UOpRef w = a->lt(num(5))->where(num(-2), b);
  bounds(w, -2, 12);
  BOOST_TEST(lo(a->lt(num(100))->where(num(-2), b)) == -2);  // condition known true: only the first value
  BOOST_TEST(hi(a->lt(num(100))->where(num(-2), b)) == -2);
}

BOOST_AUTO_TEST_CASE(loops_and_launch_indices) {
  UOpRef r = UOp::range(num(16), 0);
  bounds(r, 0, 15);
  UOpRef n = var("n", 1, 64);
  BOOST_TEST(hi(UOp::range(n, 1)) == 63);
  UOpRef g = UOp::make(Ops::SPECIAL, dtypes::index, {num(32)}, std::string("gidx0"));
  bounds(g * 4 + r, 0, 139);
}

BOOST_AUTO_TEST_CASE(wrap_around_gives_the_whole_dtype) {
  UOpRef big = var("a", 0, 2147483647, dtypes::int32);
  bounds(big + 1, -2147483648LL, 2147483647);
  BOOST_TEST(!int_range(*(big + 1)).exact);
  BOOST_TEST(int_range(*(big + 0)).exact);
  UOpRef u8 = var("u", 200, 255, dtypes::uint8);
  bounds(u8 + 100, 0, 255);
  bounds(u8 * 2, 0, 255);
  // uint64 bounds are exact in 128 bits; vmax of the whole range reads back as the bit pattern of 2^64-1
  UOpRef u64 = var("w", 0, 10, dtypes::uint64) + UOp::const_(dtypes::uint64, int64_t{-1});
  bounds(u64, 0, -1);
  BOOST_TEST((int_range(*u64).hi == (i128{1} << 64) - 1));
  UOpRef l = var("l", -5, 5, dtypes::int64) * UOp::const_(dtypes::int64, int64_t{1} << 62);
  BOOST_TEST(lo(l) == std::numeric_limits<int64_t>::min());
}

BOOST_AUTO_TEST_CASE(casts) {
  UOpRef a = var("a", -3, 100, dtypes::int32);
  bounds(a->cast(dtypes::int8), -3, 100);
  bounds(a->cast(dtypes::uint8), 0, 255);  // -3 wraps
  BOOST_TEST(lo((a * 2)->cast(dtypes::int8)) == -128);
  BOOST_TEST(lo(a->lt(num(0, dtypes::int32))->cast(dtypes::int32)) == 0);
  BOOST_TEST(hi(a->lt(num(0, dtypes::int32))->cast(dtypes::int32)) == 1);
  BOOST_TEST(blo(var("p", 1, 9, dtypes::int32)->cast(dtypes::bool_)) == true);
}

BOOST_AUTO_TEST_CASE(floats_and_bools) {
  UOpRef f = UOp::const_(dtypes::float32, 1.5);
  BOOST_TEST(std::get<double>(f->vmin()) == 1.5);
  UOpRef x = UOp::variable("a", 0, 3, dtypes::int32)->cast(dtypes::float32);
  BOOST_TEST(std::isinf(std::get<double>(x->vmax())));
  BOOST_TEST(std::get<double>(x->vmin()) < 0);
  UOpRef b = var("a", 0, 3)->lt(num(2));
  BOOST_TEST(blo(b) == false);
  BOOST_TEST(bhi(b) == true);
  BOOST_TEST(bhi(b & UOp::const_(dtypes::bool_, false)) == false);
}

BOOST_AUTO_TEST_CASE(deep_graphs_do_not_overflow_the_stack) {
  UOpRef x = var("a", 0, 1);
  for (int i = 0; i < 200000; i++) x = x + var("a", 0, 1) * (i % 3);
  BOOST_TEST(lo(x) == 0);
  BOOST_TEST(hi(x) == 200000);  // 1 + sum(i%3): 66666 cycles of 0+1+2 = 199998, then 0 and 1
}
