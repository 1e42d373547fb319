#define BOOST_TEST_MODULE tensor_indexing
#include "codegen/lower.hpp"
#include "helpers.hpp"
#include "runtime/device.hpp"
#include "runtime/registry.hpp"
#include "tensor/realize.hpp"

using namespace tg;
using tg::test::expect_error;
using tg::test::expect_exact;
using tg::test::expect_values;

namespace {
Tensor a34() { return Tensor::arange(12).reshape({3, 4}); }  // [[0,1,2,3],[4,5,6,7],[8,9,10,11]]
}  // namespace

BOOST_AUTO_TEST_CASE(integers_and_slices) {
  Tensor a = a34();
  BOOST_TEST((a[1].shape() == Shape{4}));
  expect_exact<int32_t>(a[1], {4, 5, 6, 7});
  expect_exact<int32_t>(a[-1], {8, 9, 10, 11});
  BOOST_TEST((a[{1, 2}].shape().empty()));
  BOOST_TEST((a[{1, 2}].item<int>() == 6));
  expect_exact<int32_t>(a[{Slice{}, 1}], {1, 5, 9});
  BOOST_TEST((a[Slice{1, {}}].shape() == Shape{2, 4}));
  expect_exact<int32_t>(a[Slice{{}, {}, 2}], {0, 1, 2, 3, 8, 9, 10, 11});
  expect_exact<int32_t>(a[{Slice{}, Slice{{}, {}, -1}}], {3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8});
  expect_exact<int32_t>(a[{Slice{}, Slice{3, 0, -2}}], {3, 1, 7, 5, 11, 9});
  expect_exact<int32_t>(a[{Slice{-2, {}}, Slice{1, 3}}], {5, 6, 9, 10});
  expect_exact<int32_t>(Tensor::arange(10)[Slice{1, 8, 3}], {1, 4, 7});
  expect_exact<int32_t>(Tensor::arange(10)[Slice{8, 1, -3}], {8, 5, 2});
  expect_exact<int32_t>(Tensor::arange(5)[Slice{-100, 100}], {0, 1, 2, 3, 4});  // clipped like Python
  BOOST_TEST((Tensor::arange(5)[Slice{3, 1}].shape() == Shape{0}));
}

BOOST_AUTO_TEST_CASE(newaxis_and_ellipsis) {
  Tensor a = a34();
  BOOST_TEST((a[{newaxis, 1}].shape() == Shape{1, 4}));
  expect_exact<int32_t>(a[{ellipsis, 0}], {0, 4, 8});
  expect_exact<int32_t>(a[{1, ellipsis}], {4, 5, 6, 7});
  Tensor c = a[{Slice{}, newaxis, 0}];
  BOOST_TEST((c.shape() == Shape{3, 1}));
  expect_exact<int32_t>(c, {0, 4, 8});
  BOOST_TEST((a[ellipsis].shape() == Shape{3, 4}));
}

BOOST_AUTO_TEST_CASE(integer_tensors) {
  Tensor a = a34();
  Tensor rows = a[Tensor({2, 0})];
  BOOST_TEST((rows.shape() == Shape{2, 4}));
  expect_exact<int32_t>(rows, {8, 9, 10, 11, 0, 1, 2, 3});
  expect_exact<int32_t>(a[Tensor({-1})], {8, 9, 10, 11});
  expect_exact<int32_t>(a[{Slice{}, Tensor({3, 0})}], {3, 0, 7, 4, 11, 8});
  expect_exact<int32_t>(a[{Tensor({0, 2}), Tensor({1, 3})}], {1, 11});
  Tensor grid = a[{Tensor({0, 2}).reshape({2, 1}), Tensor({1, 3})}];  // index shapes broadcast
  BOOST_TEST((grid.shape() == Shape{2, 2}));
  expect_exact<int32_t>(grid, {1, 3, 9, 11});
  Tensor b = Tensor::arange(24).reshape({2, 3, 4});
  Tensor apart = b[{Tensor({0, 1}), Slice{}, Tensor({1, 2})}];  // separated: the index axis goes first
  BOOST_TEST((apart.shape() == Shape{2, 3}));
  expect_exact<int32_t>(apart, {1, 5, 9, 14, 18, 22});
  Tensor together = b[{Slice{}, Tensor({0, 2}), Tensor({1, 3})}];  // adjacent: stays in place
  BOOST_TEST((together.shape() == Shape{2, 2}));
  expect_exact<int32_t>(together, {1, 11, 13, 23});
  expect_values(Tensor(std::vector<float>{0.5f, -1.5f, 2})[Tensor({2, 1})], {2, -1.5});
  expect_exact<bool>(Tensor(std::vector<bool>{true, false})[Tensor({1, 0, 0})], {false, true, true});
  expect_exact<int8_t>(Tensor(std::vector<int8_t>{-7, 9})[Tensor({1, 0})], {9, -7});
}

BOOST_AUTO_TEST_CASE(index_errors) {
  Tensor a = a34();
  expect_error<IndexError>([&] { a[5]; }, "[index] index 5 is out of bounds for axis 0 with size 3");
  expect_error<IndexError>([&] { a[{0, 0, 0}]; }, "[index] too many indices (3) for a tensor of dimension 2");
  expect_error<IndexError>(
      [&] {
        a[{ellipsis, ellipsis}];
      },
      "[index] an index can only have a single ellipsis");
  expect_error<IndexError>([&] { a[Tensor::ones({1})]; },
                           "[index] tensors used as indices must be integer, got float");
  expect_error<ValueError>([&] { a[Slice{{}, {}, 0}]; }, "[index] slice step cannot be zero");
}

// Numbers index a symbolic axis up to its largest size (tinygrad's rule, its test_tiny test_symbolic); past
// the bound size the elements read as 0, whatever the buffer holds there (hand-derived values).
BOOST_AUTO_TEST_CASE(numbers_on_a_symbolic_axis) {
  Variable n("n", 1, 6);
  Tensor x = (Tensor::arange(6) + 1).realize().shrink({{0, n.bind(3)}});  // [1, 2, 3] of [1 .. 6]
  Tensor head = x[Slice{{}, 2}];
  BOOST_TEST((head.shape() == Shape{2}));
  expect_exact<int32_t>(head, {1, 2});
  expect_exact<int32_t>(x[Slice{1, 5}], {2, 3, 0, 0});
  expect_exact<int32_t>(x[Slice{{}, 100}], {1, 2, 3, 0, 0, 0});  // clipped to the largest size, 6
  expect_exact<int32_t>(x[Slice{{}, {}, -2}], {0, 0, 2});        // 5, 3, 1 of the padded 6
  BOOST_TEST(x[1].item<int>() == 2);
  BOOST_TEST(x[4].item<int>() == 0);
  BOOST_TEST(x[-1].item<int>() == 3);  // from the end of the bound size
  BOOST_TEST(x[Slice{}].shape()[0].str() == "n");
  Tensor lifted = x[{newaxis, ellipsis}];
  BOOST_TEST(lifted.shape()[1].str() == "n");
  expect_exact<int32_t>(x[Slice{}], {1, 2, 3});
  // tinygrad's test: a prefix of a computed symbolic tensor, stored, then sliced with a number
  for (int s : {2, 5}) {
    Variable i("i", 1, 10);
    Tensor ret = Tensor::ones({10}).contiguous().shrink({{0, i.bind(s)}}) + 1;
    expect_values(ret.contiguous()[Slice{{}, s}], std::vector<double>(s, 2.0));
  }
  expect_error<IndexError>([&] { x[6]; }, "[index] index 6 is out of bounds for axis 0 with size 6");
  expect_error<IndexError>([&] { x[-2]; },
                           "[index] index -2 is out of bounds for axis 0 with size n (as small as 1)");
}

// Selecting rows with an integer tensor builds a one-hot sum over every row; lowered, it must collapse to
// one gated load per element (codegen/onehot.cpp), with no loop over the table left. Indices out of range
// select nothing (0), as the sum does; negative ones count from the end.
BOOST_AUTO_TEST_CASE(row_selection_lowers_to_a_load) {
  Tensor table = Tensor::arange(5000 * 4).reshape({5000, 4}).cast(dtypes::float32).realize();
  Tensor ids = Tensor(std::vector<int32_t>{3, 4999, -1, 0, 12}).realize();
  Tensor rows = table[ids];
  UOpRef root = rows.uop();
  auto items = engine::schedule_uops(std::span(&root, 1));
  BOOST_REQUIRE(items.size() == 1);
  runtime::Device& dev = runtime::Registry::global().device(rows.device());
  codegen::LinearProgram p = codegen::lower_kernel(items[0].ast, dev.caps());
  int accumulators = 0;
  for (const UOpRef& u : p.uops) accumulators += u->op() == Ops::DEFINE_REG;
  BOOST_TEST(accumulators == 0, "the lookup lowers to a reduce (" << accumulators << " accumulators)");
  expect_values(rows, {12, 13, 14, 15, 19996, 19997, 19998, 19999, 19996, 19997, 19998, 19999, 0, 1, 2, 3,
                       48, 49, 50, 51});
  Tensor out_of_range = Tensor(std::vector<int64_t>{5000, 7}).realize();
  expect_values(table.gather(0, out_of_range.reshape({2, 1}).expand({2, 4})), {0, 0, 0, 0, 28, 29, 30, 31});
}

BOOST_AUTO_TEST_CASE(gather_and_one_hot) {
  Tensor t = Tensor({1, 2, 3, 4}, {2, 2});
  expect_exact<int32_t>(t.gather(1, Tensor({0, 0, 1, 0}, {2, 2})), {1, 1, 4, 3});
  expect_exact<int32_t>(t.gather(0, Tensor({0, 1, 1, 0}, {2, 2})), {1, 4, 3, 2});
  expect_exact<int32_t>(t.gather(1, Tensor({1, 0}, {2, 1})), {2, 3});
  expect_error<ShapeError>(
      [&] {
        t.gather(0, Tensor({0, 1}));
      },
      "[gather] index has 1 dimensions but the tensor has 2");
  Tensor oh = Tensor({0, 2}).one_hot(3);
  BOOST_TEST((oh.shape() == Shape{2, 3}));
  BOOST_TEST(oh.dtype() == dtypes::int32);
  expect_exact<int32_t>(oh, {1, 0, 0, 0, 0, 1});
}
