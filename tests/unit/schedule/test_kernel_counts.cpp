#define BOOST_TEST_MODULE schedule_kernel_counts
#include <boost/test/unit_test.hpp>

#include "graph.hpp"

using namespace tgt;

// The kernel-count targets; inputs are realized buffers.
BOOST_AUTO_TEST_CASE(elementwise_chain_is_one_kernel) {
  UOpRef a = input({4, 4}), b = input({4, 4}), c = input({4, 4});
  BOOST_TEST(kernels({add(add(a, b), c)}) == 1u);
}

BOOST_AUTO_TEST_CASE(reduce_fuses_with_elementwise_before_and_after) {
  UOpRef a = input({16}), b = input({16});
  UOpRef s = sum(mul(a, b), {0});
  BOOST_TEST(kernels({s}) == 1u);
  BOOST_TEST(kernels({maximum(s, full({1}, 0.0))}) == 1u);  // .relu()
}

BOOST_AUTO_TEST_CASE(subtracting_an_expanded_mean_is_two_kernels) {
  UOpRef x = input({8, 16});
  BOOST_TEST(kernels({sub(x, bcast(mean(x, {0}), x))}) == 2u);
}

BOOST_AUTO_TEST_CASE(argmax_is_two_kernels) { BOOST_TEST(kernels({argmax_last(input({4, 10}))}) == 2u); }

BOOST_AUTO_TEST_CASE(softmax_is_three_kernels) { BOOST_TEST(kernels({softmax_last(input({4, 10}))}) == 3u); }

BOOST_AUTO_TEST_CASE(reduces_with_the_same_output_share_a_kernel) {
  UOpRef x = input({4, 10}), y = input({4, 10});
  BOOST_TEST(kernels({add(sum(y, {1}), sum(x, {1}))}) == 1u);
}

BOOST_AUTO_TEST_CASE(two_matmuls_added_are_one_kernel) {
  UOpRef a = input({4, 3}), b = input({3, 5}), c = input({4, 6}), d = input({6, 5});
  auto items = schedule({add(matmul(a, b), matmul(c, d))});
  BOOST_REQUIRE(items.size() == 1u);
  BOOST_TEST(items[0].name() == "r_4_5_3_6");
  BOOST_TEST(items[0].bufs.size() == 5u);
}

BOOST_AUTO_TEST_CASE(matmul_is_one_kernel_reducing_over_k) {
  auto items = schedule({matmul(input({4, 3}), input({3, 5}))});
  BOOST_REQUIRE(items.size() == 1u);
  BOOST_TEST(items[0].name() == "r_4_5_3");
}

BOOST_AUTO_TEST_CASE(layernorm_over_the_last_two_axes_is_three_kernels) {
  BOOST_TEST(kernels({layernorm(input({2, 3, 4}), {1, 2})}) == 3u);
}

BOOST_AUTO_TEST_CASE(sparse_categorical_crossentropy_is_three_kernels) {
  UOpRef logits = input({4, 10}), labels = input({4}, dtypes::int32);
  BOOST_TEST(kernels({sparse_categorical_crossentropy(logits, labels)}) == 3u);
}

BOOST_AUTO_TEST_CASE(arange_reshape_sum_is_one_kernel) {
  BOOST_TEST(kernels({sum(reshape(arange(0, 6, 1), {3, 2}), {1})}) == 1u);
}

BOOST_AUTO_TEST_CASE(constants_fold_to_no_kernel) {
  UOpRef two = full({}, 2.0), four = full({}, 4.0);
  UOpRef prod = mul(two, four);
  sched::BecomesMap becomes;
  BOOST_TEST(schedule({prod}, &becomes).empty());
  BOOST_REQUIRE(becomes.count(prod));
  const UOpRef& v = becomes.at(prod);
  BOOST_REQUIRE(v->op() == Ops::CONST);
  BOOST_TEST(std::get<double>(*v->const_value()) == 8.0);

  UOpRef s = sum(full({3, 4}, 2.0), {1});  // 2+2+2+2 per row
  becomes.clear();
  BOOST_TEST(schedule({s}, &becomes).empty());
  UOpRef folded = becomes.at(s);
  BOOST_TEST(shp(folded) == (IntVec{3, 1}), boost::test_tools::per_element());
  while (folded->op() != Ops::CONST) folded = folded->src(0);
  BOOST_TEST(std::get<double>(*folded->const_value()) == 8.0);
}

BOOST_AUTO_TEST_CASE(buffers_need_no_kernel) {
  UOpRef a = input({3, 4});
  sched::BecomesMap becomes;
  BOOST_TEST(schedule({a, permute(a, {1, 0})}, &becomes).empty());
  BOOST_TEST(becomes.empty());
  // contiguous() of a buffer already in row-major order is that buffer
  UOpRef c = UOp::make(Ops::CONTIGUOUS, a->dtype(), {a});
  BOOST_TEST(schedule({c}, &becomes).empty());
  BOOST_TEST((becomes.at(c) == a->src(0)));
  // but a transposed one needs a kernel
  BOOST_TEST(kernels({UOp::make(Ops::CONTIGUOUS, a->dtype(), {permute(a, {1, 0})})}) == 1u);
}

BOOST_AUTO_TEST_CASE(cheap_expanded_values_are_recomputed) {
  // (a*2) broadcast into a bigger kernel is recomputed, not stored: no reduce to repeat.
  UOpRef a = input({4, 1}), b = input({4, 8});
  BOOST_TEST(kernels({add(expand(mul(a, full({4, 1}, 2.0)), {4, 8}), b)}) == 1u);
}

BOOST_AUTO_TEST_CASE(a_reduce_read_twice_differently_is_realized_once) {
  UOpRef x = input({4, 8});
  UOpRef s = reshape(sum(x, {1}), {4});
  BOOST_TEST(kernels({add(s, flip(s, {1}))}) == 2u);
  // read by two roots: one kernel for s, one per root
  BOOST_TEST(kernels({add(s, full({4}, 1.0)), mul(s, full({4}, 2.0))}) == 3u);
  // only the outermost value read twice is stored, not the reduce inside it
  UOpRef t = add(s, full({4}, 1.0));
  BOOST_TEST(kernels({add(t, flip(t, {1}))}) == 2u);
  // read twice at the same index: no need to store it
  BOOST_TEST(kernels({mul(add(s, full({4}, 1.0)), add(s, full({4}, 2.0)))}) == 1u);
}

BOOST_AUTO_TEST_CASE(copies_move_whole_buffers) {
  UOpRef x = input({3, 4});
  UOpRef cpu = device("CLANG");
  auto items = schedule({UOp::make(Ops::COPY, x->dtype(), {x, cpu})});
  BOOST_REQUIRE(items.size() == 1u);
  BOOST_TEST(items[0].is_copy());
  BOOST_TEST(items[0].name() == "copy_12");
  BOOST_TEST((items[0].bufs[1] == x->src(0)));
  BOOST_TEST((items[0].bufs[0]->src(1) == cpu));
  // a computed or reordered source is made contiguous first
  BOOST_TEST(kernels({UOp::make(Ops::COPY, x->dtype(), {permute(x, {1, 0}), cpu})}) == 2u);
  // a copy to the device it is already on is nothing
  BOOST_TEST(kernels({UOp::make(Ops::COPY, x->dtype(), {x, device()})}) == 0u);
}

BOOST_AUTO_TEST_CASE(empty_tensors_need_no_kernel) {
  UOpRef e = add(input({0, 3}), input({0, 3}));
  sched::BecomesMap becomes;
  BOOST_TEST(schedule({e}, &becomes).empty());
  BOOST_TEST(becomes.at(e)->arg_as<int64_t>() == 0);
  // a sum over an empty axis is the identity element, a constant
  UOpRef s = sum(input({3, 0}), {1});
  BOOST_TEST(schedule({s}, &becomes).empty());
  UOpRef c = becomes.at(s);
  while (c->op() != Ops::CONST) c = c->src(0);
  BOOST_TEST(std::get<double>(*c->const_value()) == 0.0);
}

BOOST_AUTO_TEST_CASE(deep_elementwise_chains_fuse_without_recursion) {
  UOpRef x = input({8}), one = full({8}, 1.0), acc = x;
  for (int i = 0; i < 20000; i++) acc = add(acc, one);
  BOOST_TEST(kernels({acc}) == 1u);
}
