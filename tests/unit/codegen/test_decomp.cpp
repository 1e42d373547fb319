// Decompositions for renderers without an op: EXP2/LOG2/SIN/POW/SQRT against the C library over many
// points (float32 and float64), THREEFRY against Random123's answers, the small rewrites exactly.
#define BOOST_TEST_MODULE codegen_decomp
#include <boost/test/unit_test.hpp>

#include <bit>
#include <cmath>
#include <functional>
#include <limits>

#include "helpers.hpp"

using namespace tgtest;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
const sdk::RendererCaps kNoMath =
    caps_without({Ops::EXP2, Ops::LOG2, Ops::SIN, Ops::POW, Ops::SQRT, Ops::TRUNC, Ops::THREEFRY, Ops::FDIV,
                  Ops::MAX, Ops::CMPEQ, Ops::MULACC, Ops::NEG});

// out[i] = op(x[i] [, y[i]]) lowered for caps and run on INTERP.
template <typename T>
std::vector<T> apply(Ops op, DType d, const std::vector<T>& x, const std::vector<T>& y = {},
                     const sdk::RendererCaps& caps = kNoMath, codegen::LinearProgram* prog = nullptr) {
  int64_t n = static_cast<int64_t>(x.size());
  UOpRef r = range(n, 0);
  std::vector<UOpRef> src{load(glob(1, d, n), r)};
  std::vector<std::vector<std::byte>> bufs{std::vector<std::byte>(x.size() * sizeof(T)), bytes(x)};
  if (!y.empty()) src.push_back(load(glob(2, d, n), r)), bufs.push_back(bytes(y));
  DType out_t = group::Comparison.contains(op) ? dtypes::bool_ : d;
  UOpRef ast = UOp::sink({end(store(glob(0, out_t, n), r, UOp::make(op, out_t, std::move(src))), {r})});
  codegen::LinearProgram p = codegen::lower_kernel(ast, caps);
  for (const UOpRef& u : p.uops) BOOST_TEST_REQUIRE(u->op() != op, "not decomposed: " << p.str());
  if (prog) *prog = p;
  run_interp(p, bufs);
  return values<T>(bufs[0]);
}

// Distance in units in the last place between two floats of the same type.
template <typename T>
double ulps(T got, T want) {
  if (std::isnan(want)) return std::isnan(got) ? 0 : kInf;
  if (std::isinf(want) || std::isinf(got)) return got == want ? 0 : kInf;
  if (got == want) return 0;
  T gap = std::nextafter(std::fabs(want), std::numeric_limits<T>::infinity()) - std::fabs(want);
  return std::fabs(static_cast<double>(got) - static_cast<double>(want)) / static_cast<double>(gap);
}

template <typename T>
std::vector<T> points(double lo, double hi, int n) {
  std::vector<T> v;
  for (int i = 0; i < n; i++) v.push_back(static_cast<T>(lo + (hi - lo) * i / (n - 1)));
  return v;
}

// Worst ulp error of got against ref over xs; for sin the error is measured against max(|ref|, 1) so a
// result near a zero crossing is judged by its absolute error.
template <typename T>
double worst(const std::vector<T>& xs, const std::vector<T>& got, const std::function<double(double)>& ref,
             bool absolute_near_zero = false) {
  double w = 0;
  for (size_t i = 0; i < xs.size(); i++) {
    T want = static_cast<T>(ref(static_cast<double>(xs[i])));
    double e = ulps(got[i], want);
    if (absolute_near_zero && std::fabs(want) < 1 && std::isfinite(want))
      e = std::fabs(static_cast<double>(got[i]) - static_cast<double>(want)) /
          std::numeric_limits<T>::epsilon();
    if (e > w)
      BOOST_TEST_MESSAGE("x=" << xs[i] << " got " << got[i] << " want " << want << " (" << e << " ulp)");
    w = std::max(w, e);
  }
  return w;
}

template <typename T>
void check_transcendentals(DType d) {
  using L = std::numeric_limits<T>;
  auto xs = points<T>(-160, 140, 3001);
  for (T s : {T(0), T(-0.0), T(1e-30), T(-1e-30), T(L::infinity()), T(-L::infinity()), T(L::quiet_NaN())})
    xs.push_back(s);
  // around both types' overflow and underflow (the input is clamped there) and far past them
  for (T s : {T(127.99), T(128), T(-149.5), T(-150), T(-151), T(1023.9), T(1024.5), T(-1074.5), T(-2100),
              T(1e30), T(-1e30)})
    xs.push_back(s);
  BOOST_TEST(worst(xs, apply(Ops::EXP2, d, xs), [](double v) { return std::exp2(v); }) <= 2.0);

  std::vector<T> ls;
  for (double e = -140; e <= 127; e += 0.37) ls.push_back(static_cast<T>(std::exp2(e)));
  for (T s : {T(0), T(-0.0), T(-1), T(L::denorm_min()), T(L::infinity()), T(L::quiet_NaN()), T(1), T(0.75)})
    ls.push_back(s);
  BOOST_TEST(worst(ls, apply(Ops::LOG2, d, ls), [](double v) { return std::log2(v); }) <= 2.0);

  auto ss = points<T>(-100, 100, 4001);
  for (T s : {T(1e4), T(-31.4), T(39800), T(123456.7), T(1e7), T(1e13), T(-3e12), T(L::infinity()),
              T(L::quiet_NaN())})
    ss.push_back(s);
  if (d == dtypes::float32)  // float32's Payne-Hanek reduction covers its whole range
    for (T s : {T(1e20), T(-3e30), T(3e38)}) ss.push_back(s);
  BOOST_TEST(worst(
                 ss, apply(Ops::SIN, d, ss), [](double v) { return std::sin(v); }, true) <= 2.0);

  auto base = points<T>(0.01, 40, 400), ex = points<T>(-6, 6, 400);
  base.push_back(T(-2)), ex.push_back(T(3));    // odd integer power of a negative base: -8
  base.push_back(T(-2)), ex.push_back(T(0.5));  // non-integer power of a negative base: nan
  base.push_back(T(0)), ex.push_back(T(0));     // 0 ** 0 = 1
  auto pw = apply(Ops::POW, d, base, ex);
  double w = 0;
  for (size_t i = 0; i < base.size(); i++)
    w = std::max(w, ulps(pw[i], static_cast<T>(std::pow(double(base[i]), double(ex[i])))));
  BOOST_TEST(w <= 64.0);  // exp2(y * log2(x)) magnifies the log's rounding by |y log2 x|

  auto qs = points<T>(0, 1000, 500);
  BOOST_TEST(worst(qs, apply(Ops::SQRT, d, qs), [](double v) { return std::sqrt(v); }) <=
             8.0);  // through pow
}

}  // namespace

BOOST_AUTO_TEST_CASE(transcendentals_float32) { check_transcendentals<float>(dtypes::float32); }
BOOST_AUTO_TEST_CASE(transcendentals_float64) { check_transcendentals<double>(dtypes::float64); }

BOOST_AUTO_TEST_CASE(half_goes_through_float32) {
  // exp2 on float16: computed in float32 and rounded: 2^3 = 8 (0x4800), 2^-1 = 0.5 (0x3800), 2^0.5 = 1.414 ->
  // 0x3da8
  auto got = apply<uint16_t>(Ops::EXP2, dtypes::float16, {0x4200, 0xbc00, 0x3800});
  BOOST_TEST(got[0] == 0x4800);
  BOOST_TEST(got[1] == 0x3800);
  BOOST_TEST(got[2] == 0x3da8);
}

BOOST_AUTO_TEST_CASE(threefry_from_integer_ops) {
  auto word = [](uint64_t lo, uint64_t hi) { return hi << 32 | lo; };
  std::vector<uint64_t> x{0, word(0xffffffff, 0xffffffff), word(0x243f6a88, 0x85a308d3)};
  std::vector<uint64_t> key{0, word(0xffffffff, 0xffffffff), word(0x13198a2e, 0x03707344)};
  auto got = apply(Ops::THREEFRY, dtypes::uint64, x, key);
  BOOST_TEST(got[0] == word(0x6b200159, 0x99ba4efe));  // Random123 kat_vectors
  BOOST_TEST(got[1] == word(0x1cb996fc, 0xbb002be7));
  BOOST_TEST(got[2] == word(0xc4923a9c, 0x483df7a0));
}

BOOST_AUTO_TEST_CASE(small_rewrites_keep_values) {
  std::vector<float> a{1, -2, 3, std::nanf(""), -0.5f}, b{4, -8, 3, 1, 2};
  auto div = apply(Ops::FDIV, dtypes::float32, a, b);
  BOOST_TEST(div[0] == 0.25f);  // 1 * (1/4)
  BOOST_TEST(div[1] == 0.25f);
  BOOST_TEST(div[4] == -0.25f);
  auto mx = apply(Ops::MAX, dtypes::float32, a, b);
  std::vector<float> want_max{4, -2, 3, std::nanf(""), 2};
  for (size_t i = 0; i < 5; i++)
    if (i != 3) BOOST_TEST(mx[i] == want_max[i]);
  BOOST_TEST(std::isnan(mx[3]));  // nan < 1 is false: the first operand, as INTERP's MAX
  std::vector<int32_t> p{3, -7, 0}, q{3, 7, 1}, c{1, 1, 1};
  UOpRef r = range(3, 0);
  UOpRef ast =
      UOp::sink({end(store(glob(0, dtypes::int32, 3), r,
                           UOp::make(Ops::MULACC, dtypes::int32,
                                     {load(glob(1, dtypes::int32, 3), r), load(glob(2, dtypes::int32, 3), r),
                                      load(glob(3, dtypes::int32, 3), r)})),
                     {r})});
  std::vector<std::vector<std::byte>> bufs{bytes(std::vector<int32_t>(3)), bytes(p), bytes(q), bytes(c)};
  run_interp(codegen::lower_kernel(ast, kNoMath), bufs);
  std::vector<int32_t> want{10, -48, 1};  // p*q + 1
  BOOST_TEST(values<int32_t>(bufs[0]) == want, boost::test_tools::per_element());
  auto tr = apply(Ops::TRUNC, dtypes::float32, std::vector<float>{-2.7f, 2.5f, 1e9f, -0.25f, 16777215.5f});
  BOOST_TEST(tr[0] == -2.0f);
  BOOST_TEST(tr[1] == 2.0f);
  BOOST_TEST(tr[2] == 1e9f);  // already whole
  BOOST_TEST(tr[3] == 0.0f);
  auto neg = apply(Ops::NEG, dtypes::float32, std::vector<float>{1.5f, -2.0f});
  BOOST_TEST(neg[0] == -1.5f);
  BOOST_TEST(neg[1] == 2.0f);
}

BOOST_AUTO_TEST_CASE(cmpeq_from_cmpne) {
  int64_t n = 4;
  UOpRef r = range(n, 0);
  UOpRef a = load(glob(1, dtypes::int32, n), r), b = load(glob(2, dtypes::int32, n), r);
  UOpRef ast = UOp::sink({end(store(glob(0, dtypes::bool_, n), r, a->eq(b)), {r})});
  codegen::LinearProgram p = codegen::lower_kernel(ast, kNoMath);
  for (const UOpRef& u : p.uops) BOOST_TEST(u->op() != Ops::CMPEQ);
  std::vector<std::vector<std::byte>> bufs{std::vector<std::byte>(4),
                                           bytes(std::vector<int32_t>{1, 2, 3, -4}),
                                           bytes(std::vector<int32_t>{1, 0, 3, 4})};
  run_interp(p, bufs);
  std::vector<uint8_t> want{1, 0, 1, 0};
  BOOST_TEST(values<uint8_t>(bufs[0]) == want, boost::test_tools::per_element());
}
