#define BOOST_TEST_MODULE tensor_nn
#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

#include "helpers.hpp"

using namespace tg;
using tg::test::expect_close;
using tg::test::expect_error;
using tg::test::expect_exact;
using tg::test::expect_values;

namespace {
Tensor f32(std::vector<float> v, Shape s = {}) { return Tensor(std::move(v), std::move(s)); }
// log_softmax([1,2,3]) = x - log(e + e^2 + e^3)
constexpr double kLs0 = -2.4076059644443806, kLs1 = -1.4076059644443806, kLs2 = -0.40760596444438063;
}  // namespace

BOOST_AUTO_TEST_CASE(matmul_and_dot) {
  Tensor a = f32({1, 2, 3, 4}, {2, 2}), b = f32({5, 6, 7, 8}, {2, 2});
  Tensor c = a.matmul(b);
  BOOST_TEST((c.shape() == Shape{2, 2}));
  expect_values(c, {19, 22, 43, 50});
  expect_values(f32({1, 2, 3, 4, 5, 6}, {2, 3}).dot(f32({1, 0, -1})), {-2, -2});
  expect_values(f32({1, 2, 3}).dot(f32({1, 2, 3, 4, 5, 6}, {3, 2})), {22, 28});
  Tensor d = f32({1, 2, 3}).dot(f32({4, 5, 6}));
  BOOST_TEST(d.shape().empty());
  BOOST_TEST(d.item<float>() == 32.0f);
  Tensor batched = f32({1, 0, 0, 1}, {2, 1, 2}).matmul(b);  // (2,1,2) @ (2,2)
  BOOST_TEST((batched.shape() == Shape{2, 1, 2}));
  expect_values(batched, {5, 6, 7, 8});
  Tensor ints = Tensor({1, 2, 3, 4}, {2, 2}).matmul(Tensor({1, 1, 1, 1}, {2, 2}));
  BOOST_TEST(ints.dtype() == dtypes::int32);
  expect_exact<int32_t>(ints, {3, 3, 7, 7});
  BOOST_TEST(a.cast(dtypes::float16).matmul(b.cast(dtypes::float16)).dtype() == dtypes::float16);
  expect_values(a.cast(dtypes::float16).matmul(b.cast(dtypes::float16)), {19, 22, 43, 50});
  expect_error<ShapeError>(
      [] {
        Tensor::ones({2, 3}).matmul(Tensor::ones({2, 3}));
      },
      "[dot] cannot multiply (2,3) by (2,3)");
  // no MATMUL op: a multiply under a sum
  Tensor lazy = a.matmul(b);
  BOOST_TEST((lazy.uop()->op() == Ops::RESHAPE));
  BOOST_TEST((lazy.uop()->src(0)->op() == Ops::REDUCE_AXIS));
  BOOST_TEST((lazy.uop()->src(0)->src(0)->op() == Ops::MUL));
  Tensor x = f32({1, 2}, {1, 2}), w = f32({1, 0, 1, 0, 1, 1}, {2, 3});
  expect_values(x.linear(w, f32({1, 1, 1})), {2, 3, 4});
  expect_values(x.linear(f32({2, 3})), {2, 6});
}

BOOST_AUTO_TEST_CASE(einsum) {
  Tensor a = f32({1, 2, 3, 4}, {2, 2}), b = f32({5, 6, 7, 8}, {2, 2});
  expect_values(Tensor::einsum("ij,jk->ik", {a, b}), {19, 22, 43, 50});
  expect_values(Tensor::einsum("ij,jk", {a, b}), {19, 22, 43, 50});  // implicit output: sorted free letters
  expect_values(Tensor::einsum("ij->ji", {a}), {1, 3, 2, 4});
  expect_values(Tensor::einsum("ii->", {a}), {5});
  expect_values(Tensor::einsum("ii->i", {a}), {1, 4});
  expect_values(Tensor::einsum("i,i->", {f32({1, 2, 3}), f32({4, 5, 6})}), {32});
  expect_values(Tensor::einsum("i,j->ij", {f32({1, 2}), f32({3, 4, 5})}), {3, 4, 5, 6, 8, 10});
  expect_values(Tensor::einsum("ij->", {a}), {10});
  Tensor bb = f32({1, 0, 0, 1, 2, 0, 0, 2}, {2, 2, 2});
  expect_values(Tensor::einsum("bij,bjk->bik", {bb, bb}), {1, 0, 0, 1, 4, 0, 0, 4});
  // "..." names the axes the letters leave: here b, in front; without "->" they come first in the output
  expect_values(Tensor::einsum("...ij,...jk->...ik", {bb, bb}), {1, 0, 0, 1, 4, 0, 0, 4});
  expect_values(Tensor::einsum("...ij,...jk", {bb, bb}), {1, 0, 0, 1, 4, 0, 0, 4});
  expect_values(Tensor::einsum("...j,j->...", {bb, f32({1, 2})}), {1, 2, 2, 4});
  expect_error<ShapeError>(
      [&] {
        Tensor::einsum("ij,jk->ik", {a, Tensor::ones({3, 2})});
      },
      "[einsum] 'j' has size 2 in one operand and 3 in another");
  expect_error<ValueError>([&] { Tensor::einsum("ij,jk->ik", {a}); },
                           "[einsum] 'ij,jk->ik' names 2 operands but 1 were given");
}

BOOST_AUTO_TEST_CASE(softmax_family) {
  Tensor x = f32({1, 2, 3});
  expect_values(x.softmax(), {std::exp(kLs0), std::exp(kLs1), std::exp(kLs2)});
  expect_values(x.log_softmax(), {kLs0, kLs1, kLs2});
  expect_values(f32({1000, 1000}).softmax(), {0.5, 0.5});  // the max is subtracted first
  Tensor m = f32({1, 1, 2, 3}, {2, 2});
  expect_values(
      m.softmax(0),
      {std::exp(kLs0 + 1) / (std::exp(kLs0 + 1) + std::exp(kLs1 + 1)), 1 / (1 + std::exp(2.0)),
       std::exp(kLs1 + 1) / (std::exp(kLs0 + 1) + std::exp(kLs1 + 1)), std::exp(2.0) / (1 + std::exp(2.0))});
  BOOST_TEST(Tensor({1, 2}).softmax().dtype() == dtypes::float32);
}

BOOST_AUTO_TEST_CASE(layernorm) {
  // mean 2.5, population variance 1.25
  double s = std::sqrt(1.25);
  expect_values(f32({1, 2, 3, 4}).layernorm(-1, 0.0), {-1.5 / s, -0.5 / s, 0.5 / s, 1.5 / s});
  expect_values(f32({1, 2, 3, 4}, {1, 2, 2}).layernorm({-2, -1}, 0.0),
                {-1.5 / s, -0.5 / s, 0.5 / s, 1.5 / s});
  expect_values(f32({1, 3, 10, 20}, {2, 2}).layernorm(-1, 0.0), {-1, 1, -1, 1});
}

BOOST_AUTO_TEST_CASE(cross_entropy_losses) {
  Tensor logits = f32({1, 2, 3, 1, 2, 3}, {2, 3});
  Tensor y = Tensor({2, 0});
  expect_values(logits.sparse_categorical_crossentropy(y), {(-kLs2 - kLs0) / 2});
  expect_values(logits.sparse_categorical_crossentropy(y, 0), {-kLs2});  // label 0 ignored
  expect_values(logits.sparse_categorical_crossentropy(y, -1, 0.0, Reduction::SUM), {-kLs2 - kLs0});
  expect_values(logits.sparse_categorical_crossentropy(y, -1, 0.0, Reduction::NONE), {-kLs2, -kLs0});
  double mean_lp = (kLs0 + kLs1 + kLs2) / 3;  // smoothing spreads 0.1 over every class
  expect_values(f32({1, 2, 3}, {1, 3}).sparse_categorical_crossentropy(Tensor({2}), -1, 0.1),
                {-(0.9 * kLs2 + 0.1 * mean_lp)});
  expect_values(logits.cross_entropy(y), {(-kLs2 - kLs0) / 2});
  expect_values(logits.cross_entropy(f32({0, 0, 1, 1, 0, 0}, {2, 3})), {(-kLs2 - kLs0) / 2});
  expect_values(f32({1, 2, 3}, {1, 3}).cross_entropy(Tensor({2}), Reduction::MEAN, 0.1),
                {-(0.9 * kLs2 + 0.1 * mean_lp)});
  expect_values(f32({0.5f, 0.8f}).binary_crossentropy(f32({1, 0})), {(std::log(2.0) + -std::log(0.2)) / 2},
                1e-5);
  expect_values(f32({0, 2}).binary_crossentropy_logits(f32({1, 0})),
                {(std::log(2.0) + std::log(1 + std::exp(2.0))) / 2});
  expect_error<ShapeError>(
      [&] {
        logits.sparse_categorical_crossentropy(Tensor({1, 2, 0}));
      },
      "[sparse_categorical_crossentropy] labels (3,) do not match logits (2,3)");
  expect_error<ValueError>([&] { logits.cross_entropy(y, Reduction::MEAN, 2.0); },
                           "[cross_entropy] label_smoothing must be in [0, 1], got 2");
}

BOOST_AUTO_TEST_CASE(random_is_threefry) {
  // element 0 of the first draw after manual_seed(0) is threefry(0, key 0) = 0x99ba4efe6b200159;
  // its top 23 bits 0x4CDD27 are the mantissa: 5037351 / 2^23
  Tensor::manual_seed(0);
  BOOST_TEST(Tensor::rand({1}).item<float>() == 5037351.0f / 8388608.0f);
  Tensor::manual_seed(7);
  std::vector<float> a = Tensor::rand({5}).to_vector<float>(), b = Tensor::rand({5}).to_vector<float>();
  Tensor::manual_seed(7);
  std::vector<float> again = Tensor::rand({5}).to_vector<float>();
  BOOST_TEST(a == again);  // deterministic for a seed
  BOOST_TEST(a != b);      // the counter moves on
  Tensor u = Tensor::rand({4000});
  std::vector<float> v = u.to_vector<float>();
  BOOST_TEST(*std::min_element(v.begin(), v.end()) >= 0.0f);
  BOOST_TEST(*std::max_element(v.begin(), v.end()) < 1.0f);
  BOOST_TEST(std::abs(u.mean().item<float>() - 0.5f) < 0.02f);
  Tensor h = Tensor::rand({100}, dtypes::float16);
  BOOST_TEST(h.dtype() == dtypes::float16);
  BOOST_TEST(h.max().item<float>() < 1.0f);
  BOOST_TEST(h.min().item<float>() >= 0.0f);
}

BOOST_AUTO_TEST_CASE(distributions_and_initializers) {
  Tensor::manual_seed(1);
  Tensor n = Tensor::randn({4000});
  BOOST_TEST(std::abs(n.mean().item<float>()) < 0.05f);
  BOOST_TEST(std::abs(n.std().item<float>() - 1.0f) < 0.05f);
  Tensor g = Tensor::normal({4000}, 10.0, 2.0);
  BOOST_TEST(std::abs(g.mean().item<float>() - 10.0f) < 0.1f);
  Tensor r = Tensor::randint({500}, 5, 10);
  BOOST_TEST(r.dtype() == dtypes::int32);
  BOOST_TEST(r.min().item<int>() == 5);
  BOOST_TEST(r.max().item<int>() == 9);
  Tensor un = Tensor::uniform({500}, 2.0, 10.0);
  BOOST_TEST(un.min().item<float>() >= 2.0f);
  BOOST_TEST(un.max().item<float>() < 10.0f);
  float kaiming = static_cast<float>(std::sqrt(6.0 / (1 + 0.01 * 0.01) / 10));
  BOOST_TEST(Tensor::kaiming_uniform({784, 10}).abs().max().item<float>() <= kaiming);
  float glorot = static_cast<float>(std::sqrt(6.0 / (3 + 4)));
  BOOST_TEST(Tensor::glorot_uniform({3, 4}).abs().max().item<float>() <= glorot);
  BOOST_TEST((Tensor::kaiming_normal({8, 3}).shape() == Shape{8, 3}));
  BOOST_TEST(Tensor::ones({2, 2}).rand_like().dtype() == dtypes::float32);
  expect_error<ValueError>([] { Tensor::randint({2}, 3, 3); }, "[randint] needs low < high, got 3 and 3");
}

// randperm, multinomial and random_bits cannot match PyTorch's generator: their properties are checked.
BOOST_AUTO_TEST_CASE(random_bits_randperm_multinomial) {
  Tensor::manual_seed(0);  // the words rand() is made from: the first is threefry(0, key 0)
  Tensor bits = Tensor::random_bits({3, 5});
  BOOST_TEST(bits.dtype() == dtypes::uint64);
  BOOST_TEST((bits.shape() == Shape{3, 5}));
  std::vector<uint64_t> words = bits.to_vector<uint64_t>();
  BOOST_TEST(words[0] == 0x99ba4efe6b200159ull);
  BOOST_TEST(std::set<uint64_t>(words.begin(), words.end()).size() == words.size());

  for (int64_t n : {0, 1, 7, 50}) {  // a permutation of 0..n-1
    std::vector<int> p = Tensor::randperm(n).to_vector<int>(), sorted = p;
    std::sort(sorted.begin(), sorted.end());
    std::vector<int> want(n);
    std::iota(want.begin(), want.end(), 0);
    BOOST_TEST(sorted == want);
  }
  Tensor::manual_seed(9);
  std::vector<int> a = Tensor::randperm(20).to_vector<int>();
  Tensor::manual_seed(9);
  BOOST_TEST(Tensor::randperm(20).to_vector<int>() == a);  // deterministic for a seed
  BOOST_TEST(!std::is_sorted(a.begin(), a.end()));
  BOOST_TEST(Tensor::randperm(5, dtypes::int64).dtype() == dtypes::int64);

  // with replacement: frequencies follow the weights, a zero weight is never drawn
  Tensor::manual_seed(4);
  Tensor draws = f32({1, 0, 3, 6}).multinomial(4000, true);
  BOOST_TEST(draws.dtype() == dtypes::int32);
  BOOST_TEST((draws.shape() == Shape{4000}));
  std::vector<int> d = draws.to_vector<int>();
  for (int k : {0, 1, 2, 3}) {
    double freq = static_cast<double>(std::count(d.begin(), d.end(), k)) / 4000.0;
    BOOST_TEST(std::abs(freq - std::vector<double>{0.1, 0.0, 0.3, 0.6}[k]) < 0.03,
               "class " << k << ": " << freq);
  }
  BOOST_TEST(std::count(d.begin(), d.end(), 1) == 0);
  Tensor rows = f32({0, 0, 1, 0, 1, 1, 0, 0}, {2, 4}).multinomial(6, true);
  BOOST_TEST((rows.shape() == Shape{2, 6}));
  std::vector<int> r = rows.to_vector<int>();
  BOOST_TEST(std::all_of(r.begin(), r.begin() + 6, [](int k) { return k == 2; }));
  BOOST_TEST(std::all_of(r.begin() + 6, r.end(), [](int k) { return k == 0 || k == 1; }));

  // without replacement: distinct classes, all nonzero-weight ones when asked for as many; the first draw
  // follows the weights
  std::vector<int> all = f32({1, 2, 3, 4, 0}).multinomial(4).to_vector<int>();
  std::sort(all.begin(), all.end());
  BOOST_TEST((all == std::vector<int>{0, 1, 2, 3}));
  std::vector<int> first =
      f32({1, 2, 3, 4}).reshape({1, 4}).expand({3000, 4}).multinomial(1).to_vector<int>();
  for (int k : {0, 1, 2, 3}) {
    double freq = static_cast<double>(std::count(first.begin(), first.end(), k)) / 3000.0;
    BOOST_TEST(std::abs(freq - (k + 1) / 10.0) < 0.03, "class " << k << ": " << freq);
  }

  expect_error<ValueError>([] { Tensor::randperm(-1); }, "[randperm] n must be non-negative, got -1");
  expect_error<ValueError>(
      [] {
        f32({1, 2}).multinomial(0);
      },
      "[multinomial] num_samples must be positive, got 0");
  expect_error<ValueError>(
      [] {
        f32({1, 2}).multinomial(3);
      },
      "[multinomial] cannot draw 3 samples without replacement from 2 classes");
  expect_error<DTypeError>(
      [] {
        Tensor({1, 2}).multinomial(1);
      },
      "[multinomial] needs float weights, got int");
  expect_error<ShapeError>(
      [] {
        Tensor::ones({2, 2, 2}).multinomial(1);
      },
      "[multinomial] needs 1-d or 2-d weights, got (2,2,2)");
}
