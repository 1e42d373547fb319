// Constant folding against hand-checked values: integer wrap, C division and shifts, float precision.
#define BOOST_TEST_MODULE fold
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <limits>

#include "uop/symbolic.hpp"

using namespace tg;

namespace {

std::optional<ConstValue> fold(Ops op, DType d, std::initializer_list<ConstValue> v) {
  return fold_const(op, d, std::span(v.begin(), v.size()));
}
int64_t fold_i(Ops op, DType d, int64_t a, int64_t b) { return std::get<int64_t>(*fold(op, d, {a, b})); }
bool fold_b(Ops op, DType d, ConstValue a, ConstValue b) { return std::get<bool>(*fold(op, d, {a, b})); }
double fold_f(Ops op, DType d, double a, double b) { return std::get<double>(*fold(op, d, {a, b})); }
double fold_f1(Ops op, DType d, double a) { return std::get<double>(*fold(op, d, {a})); }
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN(),
                 kInf = std::numeric_limits<double>::infinity();

}  // namespace

BOOST_AUTO_TEST_CASE(integer_arithmetic_wraps_at_the_width) {
  BOOST_TEST(fold_i(Ops::ADD, dtypes::int32, 2147483647, 1) == -2147483648LL);
  BOOST_TEST(fold_i(Ops::ADD, dtypes::int8, 127, 1) == -128);
  BOOST_TEST(fold_i(Ops::ADD, dtypes::uint8, 255, 1) == 0);
  BOOST_TEST(fold_i(Ops::MUL, dtypes::int16, 300, 300) == 24464);       // 90000 - 65536
  BOOST_TEST(fold_i(Ops::MUL, dtypes::uint32, 65536, 65537) == 65536);  // 2^32 + 2^16 wraps to 2^16
  BOOST_TEST(std::get<int64_t>(*fold(Ops::NEG, dtypes::uint32, {int64_t{1}})) == 4294967295LL);
  BOOST_TEST(std::get<int64_t>(*fold(Ops::NEG, dtypes::int32, {int64_t{-2147483648LL}})) == -2147483648LL);
  // uint64 keeps its bit pattern in int64: max + 1 == 0, and 2^63 compares as unsigned
  BOOST_TEST(fold_i(Ops::ADD, dtypes::uint64, -1, 1) == 0);
  BOOST_TEST(!fold_b(Ops::CMPLT, dtypes::uint64, std::numeric_limits<int64_t>::min(), int64_t{1}));
  BOOST_TEST(fold_b(Ops::CMPLT, dtypes::int64, std::numeric_limits<int64_t>::min(), int64_t{1}));
  BOOST_TEST(fold_i(Ops::MAX, dtypes::uint32, 4294967295LL, 1) == 4294967295LL);
  BOOST_TEST(fold_i(Ops::MAX, dtypes::int32, -5, -7) == -5);
  // INDEX folds as int64
  BOOST_TEST(fold_i(Ops::ADD, dtypes::index, std::numeric_limits<int64_t>::max(), 1) ==
             std::numeric_limits<int64_t>::min());
}

BOOST_AUTO_TEST_CASE(division_truncates_and_mod_takes_the_dividend_sign) {
  BOOST_TEST(fold_i(Ops::IDIV, dtypes::int32, 7, 2) == 3);
  BOOST_TEST(fold_i(Ops::IDIV, dtypes::int32, -7, 2) == -3);
  BOOST_TEST(fold_i(Ops::IDIV, dtypes::int32, 7, -2) == -3);
  BOOST_TEST(fold_i(Ops::IDIV, dtypes::int32, -7, -2) == 3);
  BOOST_TEST(fold_i(Ops::MOD, dtypes::int32, 7, 3) == 1);
  BOOST_TEST(fold_i(Ops::MOD, dtypes::int32, -7, 3) == -1);
  BOOST_TEST(fold_i(Ops::MOD, dtypes::int32, 7, -3) == 1);
  BOOST_TEST(fold_i(Ops::MOD, dtypes::int32, -7, -3) == -1);
  BOOST_TEST(fold_i(Ops::IDIV, dtypes::int32, -2147483648LL, -1) == -2147483648LL);  // wraps
  BOOST_TEST(fold_i(Ops::MOD, dtypes::int32, -2147483648LL, -1) == 0);
  BOOST_TEST(fold_i(Ops::IDIV, dtypes::uint32, 4294967295LL, 2) == 2147483647);  // unsigned division
  BOOST_TEST(fold_i(Ops::MOD, dtypes::uint8, 200, 7) == 4);
  BOOST_TEST(!fold(Ops::IDIV, dtypes::int32, {int64_t{5}, int64_t{0}}));  // division by zero is not folded
  BOOST_TEST(!fold(Ops::MOD, dtypes::int32, {int64_t{5}, int64_t{0}}));
}

BOOST_AUTO_TEST_CASE(shifts_and_bitwise) {
  BOOST_TEST(fold_i(Ops::SHL, dtypes::int8, 1, 7) == -128);
  BOOST_TEST(fold_i(Ops::SHL, dtypes::uint8, 3, 7) == 128);   // 384 wraps
  BOOST_TEST(fold_i(Ops::SHR, dtypes::uint8, 128, 7) == 1);   // logical
  BOOST_TEST(fold_i(Ops::SHR, dtypes::int8, -128, 7) == -1);  // arithmetic
  BOOST_TEST(fold_i(Ops::SHR, dtypes::uint32, 4294967295LL, 31) == 1);
  BOOST_TEST(fold_i(Ops::SHR, dtypes::int32, -8, 1) == -4);
  BOOST_TEST(!fold(Ops::SHL, dtypes::int8, {int64_t{1}, int64_t{8}}));  // shift by the width: undefined
  BOOST_TEST(!fold(Ops::SHR, dtypes::int32, {int64_t{1}, int64_t{-1}}));
  BOOST_TEST(fold_i(Ops::AND, dtypes::int32, 12, 10) == 8);
  BOOST_TEST(fold_i(Ops::OR, dtypes::int32, 12, 10) == 14);
  BOOST_TEST(fold_i(Ops::XOR, dtypes::int32, 12, 10) == 6);
  BOOST_TEST(fold_i(Ops::AND, dtypes::int8, -1, 0x7f) == 127);
  BOOST_TEST(fold_i(Ops::XOR, dtypes::uint16, 0xffff, 1) == 0xfffe);
}

BOOST_AUTO_TEST_CASE(comparisons_and_bools) {
  BOOST_TEST(fold_b(Ops::CMPLT, dtypes::int32, int64_t{-1}, int64_t{0}));
  BOOST_TEST(!fold_b(Ops::CMPLT, dtypes::uint32, int64_t{4294967295LL}, int64_t{0}));
  BOOST_TEST(fold_b(Ops::CMPNE, dtypes::int32, int64_t{1}, int64_t{2}));
  BOOST_TEST(fold_b(Ops::CMPEQ, dtypes::int8, int64_t{-3}, int64_t{-3}));
  BOOST_TEST(fold_b(Ops::ADD, dtypes::bool_, true, true));  // bool + is or
  BOOST_TEST(!fold_b(Ops::MUL, dtypes::bool_, true, false));
  BOOST_TEST(fold_b(Ops::CMPLT, dtypes::bool_, false, true));
  BOOST_TEST(!fold_b(Ops::CMPLT, dtypes::bool_, true, true));
  BOOST_TEST(!fold_b(Ops::XOR, dtypes::bool_, true, true));
  BOOST_TEST(fold_b(Ops::MAX, dtypes::bool_, false, true));
  BOOST_TEST(std::get<int64_t>(*fold(Ops::WHERE, dtypes::int32, {true, int64_t{3}, int64_t{4}})) == 3);
  BOOST_TEST(std::get<int64_t>(*fold(Ops::WHERE, dtypes::int32, {false, int64_t{3}, int64_t{4}})) == 4);
  BOOST_TEST(std::get<int64_t>(*fold(Ops::MULACC, dtypes::int32, {int64_t{3}, int64_t{4}, int64_t{5}})) ==
             17);
}

BOOST_AUTO_TEST_CASE(floats_fold_in_their_own_precision) {
  // float32: 0.1f + 0.2f is the float 0x3E99999A, not the double 0.30000000000000004
  BOOST_TEST(fold_f(Ops::ADD, dtypes::float32, 0.1, 0.2) == 0.300000011920928955078125);
  BOOST_TEST(fold_f(Ops::ADD, dtypes::float64, 0.1, 0.2) == 0.30000000000000004);
  BOOST_TEST(fold_f1(Ops::SQRT, dtypes::float32, 2.0) == 1.41421353816986083984375);  // 0x3FB504F3
  // half: 1 + 2^-11 is a tie that rounds to even (1.0); 1 + 3*2^-11 rounds up to 1 + 2^-9
  BOOST_TEST(fold_f(Ops::ADD, dtypes::float16, 1.0, 0.00048828125) == 1.0);
  BOOST_TEST(fold_f(Ops::ADD, dtypes::float16, 1.0, 0.00146484375) == 1.001953125);
  BOOST_TEST(fold_f(Ops::ADD, dtypes::float16, 65504.0, 16.0) == kInf);    // 65520 rounds to infinity
  BOOST_TEST(fold_f(Ops::ADD, dtypes::bfloat16, 1.0, 0.00390625) == 1.0);  // 1 + 2^-8: tie to even
  BOOST_TEST(fold_f(Ops::MUL, dtypes::bfloat16, 3.0, 3.0) == 9.0);
  BOOST_TEST(fold_f1(Ops::EXP2, dtypes::float32, 3.0) == 8.0);
  BOOST_TEST(fold_f1(Ops::LOG2, dtypes::float64, 1024.0) == 10.0);
  BOOST_TEST(fold_f1(Ops::TRUNC, dtypes::float32, -2.5) == -2.0);
  BOOST_TEST(fold_f1(Ops::NEG, dtypes::float32, 2.5) == -2.5);
  BOOST_TEST(fold_f1(Ops::RECIPROCAL, dtypes::float32, 4.0) == 0.25);
  BOOST_TEST(fold_f(Ops::FDIV, dtypes::float32, 1.0, 3.0) == 0.3333333432674407958984375);  // 0x3EAAAAAB
  BOOST_TEST(fold_f(Ops::POW, dtypes::float32, 2.0, 10.0) == 1024.0);
  BOOST_TEST(!fold(Ops::FDIV, dtypes::float32, {1.0, 0.0}));  // division by a zero constant is not folded
  BOOST_TEST(!fold(Ops::RECIPROCAL, dtypes::float32, {0.0}));
  BOOST_TEST(std::isnan(fold_f(Ops::MAX, dtypes::float32, kNaN, 1.0)));  // a if not b > a
  BOOST_TEST(fold_f(Ops::MAX, dtypes::float32, 1.0, kNaN) == 1.0);
  BOOST_TEST(!fold_b(Ops::CMPLT, dtypes::float32, kNaN, 1.0));
  BOOST_TEST(fold_b(Ops::CMPNE, dtypes::float32, kNaN, kNaN));
  BOOST_TEST(std::get<double>(*fold(Ops::MULACC, dtypes::float32, {2.0, 3.0, 1.0})) == 7.0);
  // integer-only ops are not float ops
  BOOST_TEST(!fold(Ops::IDIV, dtypes::float32, {1.0, 2.0}));
  BOOST_TEST(!fold(Ops::AND, dtypes::float32, {1.0, 2.0}));
}

BOOST_AUTO_TEST_CASE(threefry_matches_the_random123_known_answers) {
  // Threefry-2x32-20 known-answer vectors (counter, key -> output), words packed low | high << 32
  BOOST_TEST(fold_i(Ops::THREEFRY, dtypes::uint64, 0, 0) == static_cast<int64_t>(0x99ba4efe6b200159ull));
  BOOST_TEST(fold_i(Ops::THREEFRY, dtypes::uint64, -1, -1) == static_cast<int64_t>(0xbb002be71cb996fcull));
  BOOST_TEST(fold_i(Ops::THREEFRY, dtypes::uint64, static_cast<int64_t>(0x85a308d3243f6a88ull),
                    static_cast<int64_t>(0x0370734413198a2eull)) ==
             static_cast<int64_t>(0x483df7a0c4923a9cull));
}

BOOST_AUTO_TEST_CASE(casts_convert_values) {
  auto cast = [](ConstValue v, DType from, DType to) { return cast_const(v, from, to); };
  BOOST_TEST(std::get<int64_t>(*cast(3.7, dtypes::float32, dtypes::int32)) == 3);
  BOOST_TEST(std::get<int64_t>(*cast(-3.7, dtypes::float32, dtypes::int32)) == -3);
  BOOST_TEST(!cast(1e10, dtypes::float32, dtypes::int32));  // out of range: undefined, not folded
  BOOST_TEST(!cast(kNaN, dtypes::float32, dtypes::int64));
  BOOST_TEST(std::get<int64_t>(*cast(int64_t{-1}, dtypes::int32, dtypes::uint32)) == 4294967295LL);
  BOOST_TEST(std::get<int64_t>(*cast(int64_t{255}, dtypes::uint8, dtypes::int8)) == -1);
  BOOST_TEST(std::get<int64_t>(*cast(int64_t{300}, dtypes::int32, dtypes::uint8)) == 44);
  BOOST_TEST(std::get<bool>(*cast(int64_t{5}, dtypes::int32, dtypes::bool_)));
  BOOST_TEST(!std::get<bool>(*cast(0.0, dtypes::float32, dtypes::bool_)));
  BOOST_TEST(std::get<bool>(*cast(kNaN, dtypes::float32, dtypes::bool_)));
  BOOST_TEST(std::get<double>(*cast(int64_t{16777217}, dtypes::int32, dtypes::float32)) == 16777216.0);
  BOOST_TEST(std::get<double>(*cast(int64_t{-1}, dtypes::uint64, dtypes::float32)) == 18446744073709551616.0);
  BOOST_TEST(std::get<double>(*cast(int64_t{65520}, dtypes::int32, dtypes::float16)) == kInf);
  BOOST_TEST(std::get<double>(*cast(0.1, dtypes::float64, dtypes::float32)) == 0.100000001490116119384765625);
  BOOST_TEST(std::get<int64_t>(*cast(true, dtypes::bool_, dtypes::int32)) == 1);
}

BOOST_AUTO_TEST_CASE(bitcasts_reinterpret_bits) {
  auto bit = [](ConstValue v, DType from, DType to) { return bitcast_const(v, from, to); };
  BOOST_TEST(std::get<int64_t>(*bit(1.0, dtypes::float32, dtypes::int32)) == 0x3F800000);
  BOOST_TEST(std::get<double>(*bit(int64_t{0x40490fdb}, dtypes::int32, dtypes::float32)) ==
             3.1415927410125732421875);
  BOOST_TEST(std::get<int64_t>(*bit(1.0, dtypes::float16, dtypes::int16)) == 0x3C00);
  BOOST_TEST(std::get<int64_t>(*bit(-2.0, dtypes::float16, dtypes::uint16)) == 0xC000);
  BOOST_TEST(std::get<int64_t>(*bit(1.0, dtypes::bfloat16, dtypes::uint16)) == 0x3F80);
  BOOST_TEST(std::get<double>(*bit(int64_t{0x7C00}, dtypes::uint16, dtypes::float16)) == kInf);
  BOOST_TEST(std::get<double>(*bit(int64_t{0x0001}, dtypes::uint16, dtypes::float16)) ==
             5.9604644775390625e-08);
  BOOST_TEST(std::get<double>(*bit(int64_t{0x7E}, dtypes::uint8, dtypes::fp8e4m3)) == 448.0);
  BOOST_TEST(std::isnan(std::get<double>(*bit(int64_t{0x7F}, dtypes::uint8, dtypes::fp8e4m3))));
  BOOST_TEST(std::get<double>(*bit(int64_t{0x7B}, dtypes::uint8, dtypes::fp8e5m2)) == 57344.0);
  BOOST_TEST(std::get<int64_t>(*bit(448.0, dtypes::fp8e4m3, dtypes::uint8)) == 0x7E);
  BOOST_TEST(std::get<int64_t>(*bit(int64_t{-1}, dtypes::int8, dtypes::uint8)) == 255);
  BOOST_TEST(std::get<int64_t>(*bit(1.0, dtypes::float64, dtypes::int64)) == 0x3FF0000000000000LL);
  BOOST_TEST(!bit(1.0, dtypes::float32, dtypes::int16));  // sizes differ
}

BOOST_AUTO_TEST_CASE(the_simplifier_folds_constant_graphs) {
  UOpRef c = UOp::const_(dtypes::int32, int64_t{2147483647});
  BOOST_TEST((c + 1)->simplify() == UOp::const_(dtypes::int32, int64_t{-2147483648LL}));
  UOpRef h = UOp::const_(dtypes::float16, 65504.0);
  BOOST_TEST((h + 16.0)->simplify() == UOp::const_(dtypes::float16, kInf));
  UOpRef z = UOp::const_(dtypes::int32, int64_t{0});
  UOpRef div0 = UOp::const_(dtypes::int32, int64_t{5}) / z;
  BOOST_TEST(div0->simplify() == div0);  // stays for run time
  UOpRef f = UOp::const_(dtypes::float32, 2.5);
  BOOST_TEST(f->cast(dtypes::int32)->simplify() == UOp::const_(dtypes::int32, int64_t{2}));
  BOOST_TEST(f->bitcast(dtypes::uint32)->simplify() == UOp::const_(dtypes::uint32, int64_t{0x40200000}));
  UOpRef cond = UOp::const_(dtypes::int32, int64_t{3})->lt(UOp::const_(dtypes::int32, int64_t{4}));
  BOOST_TEST(cond->simplify() == UOp::const_(dtypes::bool_, true));
}
