#define BOOST_TEST_MODULE tensor_elementwise
#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "helpers.hpp"

using namespace tg;
using tg::test::expect_error;
using tg::test::expect_exact;
using tg::test::expect_values;

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kPi = std::numbers::pi, kE = std::numbers::e, kLn2 = std::numbers::ln2;
Tensor f32(std::vector<float> v) { return Tensor(std::move(v)); }
Tensor b8(std::vector<bool> v) { return Tensor(std::move(v)); }
}  // namespace

BOOST_AUTO_TEST_CASE(arithmetic) {
  Tensor a = f32({1, 2, 3}), b = f32({4, 5, 6});
  expect_values(a + b, {5, 7, 9});
  expect_values(a - b, {-3, -3, -3});
  expect_values(a * b, {4, 10, 18});
  expect_values(b / a, {4, 2.5, 2});
  expect_values(10 - a, {9, 8, 7});
  expect_values(1 / b, {0.25, 0.2, 1.0 / 6});
  expect_values(-a, {-1, -2, -3});
  expect_values(a.square(), {1, 4, 9});
  expect_error<DTypeError>([] { b8({true}) - b8({true}); },
                           "[sub] subtracting bool tensors is not supported, use logical_xor");
}

BOOST_AUTO_TEST_CASE(integer_division_and_modulo) {
  Tensor n = Tensor({7, -7, 7, -7}), d = Tensor({2, 2, -2, -2});
  expect_exact<int32_t>(n.div(d, Rounding::TRUNC), {3, -3, -3, 3});
  expect_exact<int32_t>(n.div(d, Rounding::FLOOR), {3, -4, -4, 3});
  expect_exact<int32_t>(n % d, {1, 1, -1, -1});      // Python: sign of the divisor
  expect_exact<int32_t>(n.fmod(d), {1, -1, 1, -1});  // C: sign of the dividend
  expect_values(n / d, {3.5, -3.5, -3.5, 3.5});
  expect_values(f32({5.5f, -5.5f}) % 2, {1.5, 0.5});
  expect_values(f32({5.5f, -5.5f}).fmod(2), {1.5, -1.5});
  expect_values(f32({7, -7}).div(2, Rounding::FLOOR), {3, -4});
}

// Comparisons of constant tensors fold in the scheduler on the operands' values, not on them as bools
// (3 == 4 once folded to true: both are true as bools).
BOOST_AUTO_TEST_CASE(constant_comparisons) {
  expect_exact<bool>(Tensor(3).eq(4), {false});
  expect_exact<bool>(Tensor(3).ne(4), {true});
  expect_exact<bool>(Tensor(3).eq(3), {true});
  expect_exact<bool>(Tensor(2.5).lt(2.0), {false});
  expect_exact<bool>(Tensor(-1).lt(1), {true});
  expect_exact<bool>(Tensor::full({2}, 7).eq(5), {false, false});
  expect_exact<bool>(Tensor::from_size(3, dtypes::int64).ne(4), {true});
  expect_exact<int32_t>(Tensor(3).eq(4).where(1, 2), {2});
}

BOOST_AUTO_TEST_CASE(pow_max_min_where_clamp) {
  expect_values(f32({2, 3}).pow(2), {4, 9});
  expect_values(f32({1, 2, 3}).pow(2, true), {2, 4, 8});  // 2 ** x
  expect_values(f32({4, 9}).pow(0.5), {2, 3});
  expect_exact<int32_t>(Tensor({2, 3}).pow(3), {8, 27});
  Tensor a = Tensor({1, 5, -3}), b = Tensor({4, 2, -3});
  expect_exact<int32_t>(a.maximum(b), {4, 5, -3});
  expect_exact<int32_t>(a.minimum(b), {1, 2, -3});
  expect_values(f32({1, -2}).minimum(0), {0, -2});
  expect_exact<uint8_t>(Tensor(std::vector<uint8_t>{0, 200}).minimum(Tensor(std::vector<uint8_t>{255, 100})),
                        {0, 100});
  expect_exact<bool>(b8({true, true, false}).minimum(b8({true, false, false})), {true, false, false});
  Tensor c = b8({true, false, true});
  BOOST_TEST(c.where(1, 0).dtype() == dtypes::int32);
  expect_exact<int32_t>(c.where(1, 0), {1, 0, 1});
  expect_values(c.where(f32({1.5f, 2, 3}), 0), {1.5, 0, 3});
  expect_values(c.where(0.5, f32({7, 8, 9})), {0.5, 8, 0.5});
  expect_values(b8({true, false}).reshape({2, 1}).where(f32({1, 2}), -1), {1, 2, -1, -1});  // broadcasts
  // a constant condition folds a buffer's only read away: the kernel's other arguments still line up
  Tensor two = Tensor::full({3}, 2.0f), u = f32({1, 2, 3}), w = f32({4, 5, 6});
  expect_values(two.eq(0).where(f32({7, 8, 9}), u), {1, 2, 3});
  expect_values(two.eq(0).where(f32({7, 8, 9}).lt(0).where(u * w, 0), u * w), {4, 10, 18});
  Tensor x = Tensor({-5, 0, 5, 10});
  expect_exact<int32_t>(x.clamp(0, 6), {0, 0, 5, 6});
  expect_exact<int32_t>(x.clamp({}, 3), {-5, 0, 3, 3});
  expect_exact<int32_t>(x.clamp(Tensor({0, 1, 2, 3}), Tensor({1, 1, 4, 4})), {0, 1, 4, 4});
  expect_error<ValueError>([&] { x.clamp(std::nullopt, std::nullopt); },
                           "[clamp] needs at least one of min and max");
}

BOOST_AUTO_TEST_CASE(comparisons) {
  Tensor a = Tensor({1, 2, 3}), b = Tensor({3, 2, 1});
  expect_exact<bool>(a < b, {true, false, false});
  expect_exact<bool>(a <= b, {true, true, false});
  expect_exact<bool>(a > b, {false, false, true});
  expect_exact<bool>(a >= b, {false, true, true});
  expect_exact<bool>(a == b, {false, true, false});
  expect_exact<bool>(a != b, {true, false, true});
  expect_exact<bool>(2 < a, {false, false, true});
  expect_exact<bool>(a.eq(2), {false, true, false});
  Tensor n = f32({std::numeric_limits<float>::quiet_NaN()});
  expect_exact<bool>(n <= 1, {false});  // NaN compares false
  expect_exact<bool>(n >= 1, {false});
  expect_exact<bool>(n != n, {true});
}

BOOST_AUTO_TEST_CASE(logic_and_bits) {
  Tensor t = b8({true, false, true, false}), u = b8({true, true, false, false});
  expect_exact<bool>(t.logical_and(u), {true, false, false, false});
  expect_exact<bool>(t.logical_or(u), {true, true, true, false});
  expect_exact<bool>(t.logical_xor(u), {false, true, true, false});
  expect_exact<bool>(t.logical_not(), {false, true, false, true});
  expect_exact<bool>(Tensor({0, 3}).logical_and(1), {false, true});
  expect_exact<int32_t>(Tensor({12, 10}) & 6, {4, 2});
  expect_exact<int32_t>(Tensor({12, 10}) | 1, {13, 11});
  expect_exact<int32_t>(Tensor({12, 10}) ^ 15, {3, 5});
  expect_exact<int32_t>(~Tensor({0, -1}), {-1, 0});
  expect_exact<uint8_t>(~Tensor(std::vector<uint8_t>{0, 255}), {255, 0});
  expect_exact<bool>(~t, {false, true, false, true});
  expect_exact<int32_t>(Tensor({1, 3}) << 2, {4, 12});
  expect_exact<int32_t>(Tensor({-8, 8}) >> 1, {-4, 4});
  expect_exact<uint8_t>(Tensor(std::vector<uint8_t>{255}) >> 4, {15});
}

// Narrow ints wrap after every op, also inside a fused expression that C would compute in int:
// int8 100*2 = -56 (200 - 256), 60*3 = -76, -100*3 = -44 (-300 + 256); uint8 200*2 = 144.
BOOST_AUTO_TEST_CASE(narrow_ints_wrap_inside_fused_expressions) {
  Tensor a(std::vector<int8_t>{100, 60, -100}), b(std::vector<int8_t>{2, 3, 3});
  expect_exact<bool>((a * b) < 0, {true, true, true});
  expect_exact<int32_t>((a * b).cast(dtypes::int32), {-56, -76, -44});
  expect_exact<int8_t>((a * b).div(4, Rounding::TRUNC), {-14, -19, -11});
  Tensor u(std::vector<uint8_t>{200, 130});
  expect_exact<int32_t>((u * 2).cast(dtypes::int32), {144, 4});
  // 400 wraps to 144 and 260 to 4 before the shift or division sees them (as in PyTorch)
  expect_exact<uint8_t>((u + u) >> 1, {72, 2});
  expect_exact<uint8_t>((u * 2) >> 1, {72, 2});
  expect_exact<uint8_t>((u * 2).div(2, Rounding::TRUNC), {72, 2});
  Tensor c(std::vector<int8_t>{100, -100, 60});  // 200 -> -56, -200 -> 56, 120 stays
  expect_exact<int8_t>((c * 2).div(2, Rounding::TRUNC), {-28, 28, 60});
  expect_exact<int8_t>((c + c) >> 1, {-28, 28, 60});
  expect_exact<int8_t>((c + c).div(2, Rounding::FLOOR), {-28, 28, 60});
}

BOOST_AUTO_TEST_CASE(float_classes) {
  Tensor x = f32({1, std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                  std::numeric_limits<float>::quiet_NaN()});
  expect_exact<bool>(x.isnan(), {false, false, false, true});
  expect_exact<bool>(x.isinf(), {false, true, true, false});
  expect_exact<bool>(x.isinf(false, true), {false, false, true, false});
  expect_exact<bool>(x.isfinite(), {true, false, false, false});
}

BOOST_AUTO_TEST_CASE(rounding) {
  Tensor x = f32({-2.5f, -1.5f, -0.5f, 0.5f, 1.5f, 2.7f});
  expect_values(x.trunc(), {-2, -1, 0, 0, 1, 2});
  expect_values(x.floor(), {-3, -2, -1, 0, 1, 2});
  expect_values(x.ceil(), {-2, -1, 0, 1, 2, 3});
  expect_values(x.round(), {-2, -2, 0, 0, 2, 3});  // halves go to the even neighbour
  expect_values(f32({2.5f, 3.5f, 1.2f, -3.5f}).round(), {2, 4, 1, -4});
  expect_exact<int32_t>(Tensor({3}).floor(), {3});
}

BOOST_AUTO_TEST_CASE(unary_math) {
  Tensor x = f32({-2, -0.5f, 0, 1.5f, 3});
  expect_values(x.abs(), {2, 0.5, 0, 1.5, 3});
  expect_values(x.sign(), {-1, -1, 0, 1, 1});
  expect_exact<int32_t>(Tensor({-4, 0, 9}).sign(), {-1, 0, 1});
  expect_values(x.relu(), {0, 0, 0, 1.5, 3});
  expect_values(x.leaky_relu(0.1), {-0.2, -0.05, 0, 1.5, 3});
  expect_values(f32({0, 1, 4, 9}).sqrt(), {0, 1, 2, 3});
  expect_values(f32({1, 4, 16}).rsqrt(), {1, 0.5, 0.25});
  expect_values(f32({2, -4, 0.5f}).reciprocal(), {0.5, -0.25, 2});
  expect_values(f32({0, 1, -1}).exp(), {1, kE, 1 / kE});
  expect_values(f32({0, 3, -1}).exp2(), {1, 8, 0.5});
  expect_values(f32({1, static_cast<float>(kE), 0.5f}).log(), {0, 1, -kLn2});
  expect_values(f32({1, 8, 0.5f}).log2(), {0, 3, -1});
  expect_values(f32({0, static_cast<float>(kPi / 2), static_cast<float>(kPi / 6)}).sin(), {0, 1, 0.5});
  expect_values(f32({0, static_cast<float>(kPi / 3), static_cast<float>(kPi)}).cos(), {1, 0.5, -1});
  expect_values(f32({0, static_cast<float>(kPi / 4)}).tan(), {0, 1});
  expect_values(f32({0, 1}).tanh(), {0, 0.7615941559557649});
  expect_values(f32({0, 2}).sigmoid(), {0.5, 0.8807970779778823});
  expect_values(f32({0, 1, -1}).gelu(), {0, 0.8411919906082768, -0.15880800939172324});
  expect_values(f32({0, 1}).silu(), {0, 0.7310585786300049});
  expect_values(f32({0, 1}).softplus(), {kLn2, 1.3132616875182228});
  expect_values(f32({0}).logsigmoid(), {-kLn2});
  expect_values(f32({0, 1000}).logaddexp(f32({0, 1000})), {kLn2, 1000 + kLn2});  // no overflow
  // ints compute in float32
  BOOST_TEST(Tensor({1, 4}).sqrt().dtype() == dtypes::float32);
  expect_values(Tensor({1, 4}).sqrt(), {1, 2});
  Tensor h = f32({1}).cast(dtypes::float16).exp();  // e rounded to half: 1392 * 2^-9
  BOOST_TEST(h.dtype() == dtypes::float16);
  expect_values(h, {2.71875}, 0);
  expect_values(f32({-1, 1}).div(0), {-kInf, kInf});
  expect_values(f32({-1}).sqrt(), {kNan});
}

// References: hand-derived angles, and libm in double on the exact float32 inputs for the dense grid.
BOOST_AUTO_TEST_CASE(inverse_trig) {
  // Zero is exact and tiny arguments keep their relative precision (asin x = atan x = x to float32 there).
  expect_exact<float>(f32({0, -0.0f}).asin(), {0, 0});
  expect_exact<float>(f32({0}).atan(), {0});
  BOOST_TEST(std::signbit(f32({-0.0f}).asin().to_vector<float>()[0]));
  expect_exact<float>(f32({1e-8f, -1e-8f}).asin(), {1e-8f, -1e-8f});
  expect_exact<float>(f32({1e-8f, -1e-8f}).atan(), {1e-8f, -1e-8f});
  expect_values(f32({1e-4f}).asin(), {std::asin(static_cast<double>(1e-4f))}, 1e-11);
  expect_values(f32({1e-4f}).atan(), {std::atan(static_cast<double>(1e-4f))}, 1e-11);
  expect_values(f32({0, 1e-8f, 1e-4f}).acos(), {kPi / 2, kPi / 2 - 1e-8, kPi / 2 - 1e-4}, 2e-7);
  expect_values(f32({0.5f, -0.5f, 1, -1}).asin(), {kPi / 6, -kPi / 6, kPi / 2, -kPi / 2}, 2e-7);
  expect_values(f32({0.5f, -0.5f, 1, -1}).acos(), {kPi / 3, 2 * kPi / 3, 0, kPi}, 2e-7);
  expect_values(
      f32({1, -1, static_cast<float>(std::sqrt(3.0)), 1e30f, -std::numeric_limits<float>::infinity()}).atan(),
      {kPi / 4, -kPi / 4, kPi / 3, kPi / 2, -kPi / 2}, 2e-7);
  expect_values(f32({1.5f, -2, std::numeric_limits<float>::quiet_NaN()}).asin(), {kNan, kNan, kNan});
  expect_values(f32({std::numeric_limits<float>::quiet_NaN()}).atan(), {kNan});

  // Dense grid over the whole domain: absolute error under 2e-7, and odd symmetry is exact. acos gets
  // 2.4e-7, one float32 ulp of its results near pi (the correctly rounded value is already 1.2e-7 off).
  std::vector<float> g, t;
  for (int i = -20000; i <= 20000; i++) g.push_back(static_cast<float>(i / 20000.0));
  for (int i = -4000; i <= 4000; i++) t.push_back(static_cast<float>(std::sinh(i / 400.0)));  // |x| to 1e4
  std::vector<float> as = f32(g).asin().to_vector<float>(), ac = f32(g).acos().to_vector<float>();
  std::vector<float> at = f32(t).atan().to_vector<float>();
  double worst_asin = 0, worst_acos = 0, worst_atan = 0;
  for (size_t i = 0; i < g.size(); i++) {
    worst_asin = std::max(worst_asin, std::abs(as[i] - std::asin(static_cast<double>(g[i]))));
    worst_acos = std::max(worst_acos, std::abs(ac[i] - std::acos(static_cast<double>(g[i]))));
    BOOST_CHECK_EQUAL(as[i], -as[g.size() - 1 - i]);
  }
  for (size_t i = 0; i < t.size(); i++) {
    worst_atan = std::max(worst_atan, std::abs(at[i] - std::atan(static_cast<double>(t[i]))));
    BOOST_CHECK_EQUAL(at[i], -at[t.size() - 1 - i]);
  }
  BOOST_TEST_MESSAGE("max abs error asin " << worst_asin << " acos " << worst_acos << " atan " << worst_atan);
  BOOST_TEST(worst_asin < 2e-7);
  BOOST_TEST(worst_acos < 2.4e-7);
  BOOST_TEST(worst_atan < 2e-7);
}

BOOST_AUTO_TEST_CASE(threefry_known_answers) {
  // Threefry-2x32 with 20 rounds; the published Random123 answers (counter, key) -> (out0, out1),
  // packed as (hi << 32) | lo.
  auto run = [](uint64_t ctr, uint64_t key) {
    return Tensor(std::vector<uint64_t>{ctr}).threefry(Tensor(std::vector<uint64_t>{key})).item<uint64_t>();
  };
  BOOST_TEST(run(0, 0) == 0x99ba4efe6b200159ull);
  BOOST_TEST(run(~0ull, ~0ull) == 0xbb002be71cb996fcull);
  BOOST_TEST(run(0x85a308d3243f6a88ull, 0x0370734413198a2eull) == 0x483df7a0c4923a9cull);
  expect_error<DTypeError>([] { Tensor({1}).threefry(Tensor({1})); },
                           "[threefry] needs uint64 counters and key, got int and int");
}
