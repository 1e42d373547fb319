#define BOOST_TEST_MODULE tensor_reduce_movement
#include <numbers>

#include "helpers.hpp"

using namespace tg;
using tg::test::expect_error;
using tg::test::expect_exact;
using tg::test::expect_values;

namespace {
constexpr double kLn2 = std::numbers::ln2;
Tensor a23() { return Tensor::arange(6).reshape({2, 3}); }  // [[0,1,2],[3,4,5]]
Tensor f32(std::vector<float> v, Shape s = {}) { return Tensor(std::move(v), std::move(s)); }
}  // namespace

BOOST_AUTO_TEST_CASE(sum_and_prod) {
  Tensor a = a23();
  BOOST_TEST(a.sum().item<int>() == 15);
  BOOST_TEST(a.sum().shape().empty());
  expect_exact<int32_t>(a.sum(0), {3, 5, 7});
  expect_exact<int32_t>(a.sum(1), {3, 12});
  expect_exact<int32_t>(a.sum(-1), {3, 12});
  BOOST_TEST((a.sum(1, true).shape() == Shape{2, 1}));
  BOOST_TEST(a.sum({0, 1}).item<int>() == 15);
  BOOST_TEST((a.sum(std::vector<int>{}).shape() == Shape{2, 3}));  // no axes: nothing reduced
  // accumulation dtypes
  BOOST_TEST(Tensor::ones({3}, dtypes::int8).sum().dtype() == dtypes::int32);
  BOOST_TEST(Tensor::ones({3}, dtypes::uint8).sum().dtype() == dtypes::uint32);
  BOOST_TEST(Tensor::ones({3}, dtypes::float16).sum().dtype() == dtypes::float16);
  Tensor b(std::vector<bool>{true, true, false});
  BOOST_TEST(b.sum().dtype() == dtypes::int32);
  BOOST_TEST(b.sum().item<int>() == 2);
  BOOST_TEST(Tensor::full({200}, 100, dtypes::int8).sum().item<int>() == 20000);  // no int8 overflow
  Tensor p = Tensor({1, 2, 3, 4, 5, 6}, {2, 3});
  expect_exact<int32_t>(p.prod(1), {6, 120});
  BOOST_TEST(p.prod().item<int>() == 720);
  BOOST_TEST(Tensor::arange(6).sum().item<int>() == 15);
  expect_exact<int32_t>(Tensor::arange(6).reshape({3, 2}).sum(1), {1, 5, 9});
}

BOOST_AUTO_TEST_CASE(max_min_mean_var) {
  Tensor a = a23();
  expect_exact<int32_t>(a.max(1), {2, 5});
  expect_exact<int32_t>(a.max(0), {3, 4, 5});
  expect_exact<int32_t>(a.min(1), {0, 3});
  BOOST_TEST(Tensor(std::vector<uint8_t>{5, 3, 200}).min().item<int>() == 3);
  BOOST_TEST(f32({-1, -5, 2}).min().item<float>() == -5.0f);
  BOOST_TEST(f32({-1, -5, 2}).max().item<float>() == 2.0f);
  Tensor f = f32({1, 2, 3, 4}, {2, 2});
  BOOST_TEST(f.mean().item<float>() == 2.5f);
  expect_values(f.mean(0), {2, 3});
  BOOST_TEST(a.mean().dtype() == dtypes::float32);
  BOOST_TEST(a.mean().item<float>() == 2.5f);
  Tensor v = f32({1, 2, 3, 4});
  expect_values(v.var(), {5.0 / 3});  // squared deviations 2.25+0.25+0.25+2.25 over n-1
  expect_values(v.var({}, false, 0), {1.25});
  expect_values(v.std(), {std::sqrt(5.0 / 3)});
  expect_values(f.var(1), {0.5, 0.5});
}

BOOST_AUTO_TEST_CASE(any_all_logsumexp) {
  Tensor t(std::vector<bool>{true, false, false, false}, {2, 2});
  expect_exact<bool>(t.any(1), {true, false});
  expect_exact<bool>(t.all(1), {false, false});
  BOOST_TEST(Tensor(std::vector<bool>{true, true}).all().item<bool>());
  BOOST_TEST(Tensor({0, 0, 3}).any().item<bool>());
  BOOST_TEST(!Tensor({0, 0, 0}).any().item<bool>());
  expect_values(f32({0, static_cast<float>(std::log(3.0))}).logsumexp(), {std::log(4.0)});
  expect_values(f32({0, 0, 1000, 1000}, {2, 2}).logsumexp(1), {kLn2, 1000 + kLn2});
  BOOST_TEST((f32({0, 0, 1000, 1000}, {2, 2}).logsumexp(1, true).shape() == Shape{2, 1}));
}

BOOST_AUTO_TEST_CASE(argmax_argmin) {
  BOOST_TEST(Tensor({1, 3, 3, 2}).argmax().item<int>() == 1);  // the first maximum
  Tensor m = Tensor({1, 5, 2, 7, 0, 7}, {2, 3});
  expect_exact<int32_t>(m.argmax(1), {1, 0});
  expect_exact<int32_t>(m.argmax(0), {1, 0, 1});
  expect_exact<int32_t>(m.argmin(1), {0, 1});
  BOOST_TEST(m.argmax().item<int>() == 3);
  BOOST_TEST((m.argmax(1, true).shape() == Shape{2, 1}));
  BOOST_TEST(m.argmax(1).dtype() == dtypes::int32);
  expect_exact<int32_t>(f32({0.5f, -2, 9, -3}, {2, 2}).argmin(1), {1, 1});
}

BOOST_AUTO_TEST_CASE(cumsum) {
  expect_exact<int32_t>(Tensor({1, 2, 3, 4}).cumsum(), {1, 3, 6, 10});
  Tensor m = Tensor({1, 2, 3, 4}, {2, 2});
  expect_exact<int32_t>(m.cumsum(0), {1, 2, 4, 6});
  expect_exact<int32_t>(m.cumsum(1), {1, 3, 3, 7});
  expect_values(f32({0.5f, 0.25f, -1}).cumsum(), {0.5, 0.75, -0.25});
}

BOOST_AUTO_TEST_CASE(reshape_permute_expand) {
  Tensor a = a23();
  Tensor r = a.reshape({-1, 2});
  BOOST_TEST((r.shape() == Shape{3, 2}));
  expect_exact<int32_t>(r, {0, 1, 2, 3, 4, 5});
  expect_exact<int32_t>(a.permute({1, 0}), {0, 3, 1, 4, 2, 5});
  expect_exact<int32_t>(a.transpose(), {0, 3, 1, 4, 2, 5});
  expect_exact<int32_t>(a.permute({-1, 0}), {0, 3, 1, 4, 2, 5});
  expect_exact<int32_t>(Tensor({1, 2}).reshape({2, 1}).expand({2, 3}), {1, 1, 1, 2, 2, 2});
  Tensor e = Tensor({1, 2}).expand({3, -1});
  BOOST_TEST((e.shape() == Shape{3, 2}));
  expect_exact<int32_t>(e, {1, 2, 1, 2, 1, 2});
  BOOST_TEST(a.reshape({2, 3}).uop() == a.uop());  // no-op movement adds no node
}

BOOST_AUTO_TEST_CASE(padding) {
  Tensor x = Tensor({1, 2});
  expect_exact<int32_t>(x.pad({{1, 2}}), {0, 1, 2, 0, 0});
  expect_exact<int32_t>(x.pad({{1, 2}}, PadMode::CONSTANT, 9), {9, 1, 2, 9, 9});
  expect_exact<int32_t>(x.pad({{-1, 1}}), {2, 0});  // negative pads crop
  expect_values(f32({1}).pad({{1, 0}}, PadMode::CONSTANT, -INFINITY), {-INFINITY, 1});
  expect_exact<int32_t>(Tensor({1, 2, 3, 4}).pad({{2, 1}}, PadMode::REFLECT), {3, 2, 1, 2, 3, 4, 3});
  expect_exact<int32_t>(Tensor({1, 2, 3}).pad({{2, 1}}, PadMode::REPLICATE), {1, 1, 1, 2, 3, 3});
  expect_exact<int32_t>(Tensor({1, 2, 3}).pad({{1, 2}}, PadMode::CIRCULAR), {3, 1, 2, 3, 1, 2});
  Tensor m = Tensor({1, 2, 3, 4}, {2, 2});
  expect_exact<int32_t>(m.pad({{1, 0}, {0, 1}}, PadMode::REFLECT), {3, 4, 3, 1, 2, 1, 3, 4, 3});
  expect_exact<int32_t>(Tensor({1, 2, 3, 4}).pad({{-1, 2}}, PadMode::REPLICATE), {2, 3, 4, 4, 4});
  expect_error<ValueError>(
      [] {
        Tensor({1, 2}).pad({{2, 0}}, PadMode::REFLECT);
      },
      "[pad] reflect padding (2,0) must be smaller than axis 0 of size 2");
  expect_error<ShapeError>(
      [] {
        Tensor({1, 2}).pad({{1, 1}, {1, 1}});
      },
      "[pad] 2 pads for the 1-d shape (2,)");
}

BOOST_AUTO_TEST_CASE(shrink_flip_flatten_squeeze) {
  Tensor a = a23();
  expect_exact<int32_t>(a.shrink({{0, 2}, {1, 3}}), {1, 2, 4, 5});
  expect_exact<int32_t>(a.flip({1}), {2, 1, 0, 5, 4, 3});
  expect_exact<int32_t>(a.flip({0, 1}), {5, 4, 3, 2, 1, 0});
  expect_error<ShapeError>(
      [&] {
        a.shrink({{0, 3}, {0, 3}});
      },
      "[shrink] bounds (0,3) do not fit axis 0 of (2,3)");
  Tensor z = Tensor::zeros({2, 3, 4});
  BOOST_TEST((z.flatten(1).shape() == Shape{2, 12}));
  BOOST_TEST((z.flatten().shape() == Shape{24}));
  BOOST_TEST((z.flatten(1).unflatten(1, {3, 4}).shape() == Shape{2, 3, 4}));
  BOOST_TEST((Tensor::zeros({6}).unflatten(0, {-1, 3}).shape() == Shape{2, 3}));
  Tensor s = Tensor::zeros({1, 3, 1});
  BOOST_TEST((s.squeeze().shape() == Shape{3}));
  BOOST_TEST((s.squeeze(0).shape() == Shape{3, 1}));
  BOOST_TEST((s.squeeze(1).shape() == Shape{1, 3, 1}));
  BOOST_TEST((Tensor::zeros({3}).unsqueeze(0).shape() == Shape{1, 3}));
  BOOST_TEST((Tensor::zeros({3}).unsqueeze(-1).shape() == Shape{3, 1}));
}

BOOST_AUTO_TEST_CASE(repeat_cat_stack_split) {
  Tensor r = Tensor({1, 2}).repeat({2, 2});
  BOOST_TEST((r.shape() == Shape{2, 4}));
  expect_exact<int32_t>(r, {1, 2, 1, 2, 1, 2, 1, 2});
  expect_exact<int32_t>(Tensor::cat({Tensor({1, 2}), Tensor({3})}), {1, 2, 3});
  Tensor c = Tensor::cat({Tensor({1, 2}, {2, 1}), Tensor({3, 4, 5, 6}, {2, 2})}, 1);
  expect_exact<int32_t>(c, {1, 3, 4, 2, 5, 6});
  BOOST_TEST(Tensor::cat({Tensor({1}), f32({0.5f})}).dtype() == dtypes::float32);
  expect_exact<bool>(Tensor::cat({Tensor(std::vector<bool>{true}), Tensor(std::vector<bool>{false, true})}),
                     {true, false, true});
  expect_error<ShapeError>(
      [] {
        Tensor::cat({Tensor::zeros({2, 3}), Tensor::zeros({3, 3})}, 1);
      },
      "[cat] shapes (2,3) and (3,3) differ outside axis 1");
  Tensor s = Tensor::stack({Tensor({1, 2}), Tensor({3, 4})});
  BOOST_TEST((s.shape() == Shape{2, 2}));
  expect_exact<int32_t>(s, {1, 2, 3, 4});
  expect_exact<int32_t>(Tensor::stack({Tensor({1, 2}), Tensor({3, 4})}, 1), {1, 3, 2, 4});
  std::vector<Tensor> parts = Tensor::arange(5).split(2);
  BOOST_TEST(parts.size() == 3u);
  expect_exact<int32_t>(parts[2], {4});
  std::vector<Tensor> sized = Tensor::arange(5).split({1, 4});
  expect_exact<int32_t>(sized[1], {1, 2, 3, 4});
  std::vector<Tensor> chunks = Tensor::arange(5).chunk(3);
  BOOST_TEST(chunks.size() == 3u);
  expect_exact<int32_t>(chunks[1], {2, 3});
  expect_error<ShapeError>(
      [] {
        Tensor::arange(5).split({1, 2}, 0);
      },
      "[split] sizes (1,2) do not add up to axis 0 of (5,)");
}

BOOST_AUTO_TEST_CASE(contiguous_and_device) {
  Tensor t = Tensor({1, 2, 3, 4}, {2, 2}).transpose().contiguous();
  BOOST_TEST((t.uop()->op() == Ops::CONTIGUOUS));
  expect_exact<int32_t>(t, {1, 3, 2, 4});
  BOOST_TEST(t.contiguous().uop() == t.uop());
  BOOST_TEST(t.to(t.device()).uop() == t.uop());
}

// A variable size: the graph keeps n, results read at its bound value (hand-derived values).
BOOST_AUTO_TEST_CASE(symbolic_sizes) {
  Variable n("n", 1, 8);
  // rows [-2,-1.5,-1,-0.5], [0,0.5,1,1.5], [2,2.5,3,3.5]
  std::vector<float> v;
  for (int i = 0; i < 12; i++) v.push_back(static_cast<float>(i) * 0.5f - 2);
  Tensor xs = f32(v, {3, 4}).reshape({n.bind(3), 4});
  BOOST_TEST(xs.shape()[0].str() == "n");
  BOOST_TEST(xs.numel().str() == "(n*4)");
  expect_values(xs.sum(0), {0, 1.5, 3, 4.5});
  expect_values(xs.sum(1), {-5, 3, 11});
  BOOST_TEST(xs.sum(1).shape()[0].str() == "n");
  expect_values(xs.mean(0), {0, 0.5, 1, 1.5});
  expect_values(xs.var(0), {4, 4, 4, 4});  // each column is m-2, m, m+2
  expect_values(xs.var(0, false, 0), {8.0 / 3, 8.0 / 3, 8.0 / 3, 8.0 / 3});
  expect_values(xs.max(0), {2, 2.5, 3, 3.5});
  Tensor doubled = (xs * 2).realize();
  BOOST_TEST(doubled.shape()[0].str() == "n");
  std::vector<double> twice;
  for (float x : v) twice.push_back(x * 2.0);
  expect_values(doubled, twice);
  // a prefix of a fixed buffer: rows 0..k-1
  Variable k("k", 1, 3);
  expect_values(f32(v, {3, 4}).shrink({{0, k.bind(2)}, {0, 4}}).sum(0), {-2, -1, 0, 1});
  // a realized buffer read at a variable offset, and a variable prefix of it
  Tensor flat = f32(v).realize();
  expect_values(flat.shrink({{k.bind(2), k.bind(2) + 1}}), {-1});
  expect_values(flat.shrink({{0, k.bind(2) + 1}}), {-2, -1.5, -1});
  // cat along and across a symbolic axis; the gradient flows back through it
  Tensor row = f32({7, 8}, {1, 2}), xs2 = f32({1, 2, 3, 4, 5, 6}, {3, 2}).reshape({n.bind(3), 2});
  Tensor joined = Tensor::cat({row, xs2, row}, 0);
  BOOST_TEST(joined.shape()[0].str() == "(n+2)");
  expect_values(joined, {7, 8, 1, 2, 3, 4, 5, 6, 7, 8});
  expect_values(Tensor::cat({xs2, xs2}, 1), {1, 2, 1, 2, 3, 4, 3, 4, 5, 6, 5, 6});
  Tensor scale = f32({1, 2}).requires_grad_();
  Tensor::cat({xs2 * scale, row}, 0).sum().backward();
  expect_values(scale.grad(), {9, 12});  // the column sums of xs2
  // sizes as values
  BOOST_TEST(Tensor::from_size(n.bind(5)).item<int>() == 5);
  BOOST_TEST((Tensor::from_size(n.bind(5), dtypes::float32) * 0.5f).item<float>() == 2.5f);
  BOOST_TEST(Tensor::from_size(n.bind(6)).as_size().str() == "n");
  BOOST_TEST(Tensor::from_size(n.bind(6)).as_size().bound() == 6);
  BOOST_TEST(Tensor::empty({n.bind(2), 3}).shape()[0].bound() == 2);
  expect_error<ValueError>([] { Tensor(1).as_size(); },
                           "[as_size] the tensor was not made by Tensor::from_size of a variable size");
  expect_error<ShapeError>(
      [&] {
        xs.shrink({{0, k.bind(2)}, {0, 4}});
      },
      "[shrink] bounds (0,k) do not fit axis 0 of (n,4)");
}
