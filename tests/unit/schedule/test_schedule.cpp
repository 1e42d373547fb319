#define BOOST_TEST_MODULE schedule
#include <algorithm>
#include <boost/test/unit_test.hpp>

#include "base/env.hpp"
#include "base/error.hpp"
#include "graph.hpp"

using namespace tgt;
namespace tt = boost::test_tools;

namespace {

// ---- kernel ASTs written by hand (docs/ir-stages.md stage 2) ----
UOpRef ic(int64_t v) { return UOp::const_(dtypes::index, v); }
UOpRef loop(int64_t n, int64_t id) { return UOp::range(ic(n), id, AxisType::LOOP); }
UOpRef reduce_range(int64_t n, int64_t id) { return UOp::range(ic(n), id, AxisType::REDUCE); }
UOpRef global(int64_t i, int64_t n, DType dt = dtypes::float32) {
  return UOp::make(Ops::DEFINE_GLOBAL, dt.ptr(AddrSpace::GLOBAL, n), {}, i);
}
UOpRef at(const UOpRef& g, const UOpRef& idx) { return UOp::make(Ops::INDEX, g->dtype(), {g, idx}); }
UOpRef load(const UOpRef& g, const UOpRef& idx, DType dt = dtypes::float32) {
  return UOp::make(Ops::LOAD, dt, {at(g, idx)});
}
UOpRef kernel(const UOpRef& store, std::vector<UOpRef> loops) {
  loops.insert(loops.begin(), store);
  return UOp::sink({UOp::make(Ops::END, dtypes::void_, std::move(loops))})->simplify();
}
UOpRef store(const UOpRef& g, const UOpRef& idx, const UOpRef& v) {
  return UOp::make(Ops::STORE, dtypes::void_, {at(g, idx), v});
}

UOpRef buffer_of(UOpRef v) {
  while (v->op() == Ops::RESHAPE) v = v->src(0);
  return v;
}

void check_close(const std::vector<double>& got, const std::vector<double>& want, double tol = 1e-6) {
  BOOST_REQUIRE_EQUAL(got.size(), want.size());
  for (size_t i = 0; i < got.size(); i++) BOOST_TEST(got[i] == want[i], tt::tolerance(tol));
}

// Schedules roots, runs every kernel on host memory and returns each root's values.
std::vector<std::vector<double>> run(Memory& mem, std::vector<UOpRef> roots, size_t want_kernels) {
  sched::BecomesMap becomes;
  auto items = schedule(roots, &becomes);
  BOOST_TEST(items.size() == want_kernels);
  mem.run(items);
  std::vector<std::vector<double>> out;
  for (const UOpRef& r : roots) out.push_back(mem.at(buffer_of(becomes.at(buffer_of(r)))));  // keys are bases
  return out;
}

std::vector<double> iota(int n, double start = 0) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int i = 0; i < n; i++) v[static_cast<size_t>(i)] = start + i;
  return v;
}

}  // namespace

// ---- exact ASTs ----

BOOST_AUTO_TEST_CASE(elementwise_ast) {
  UOpRef a = input({3, 4}), b = input({3, 4});
  auto items = schedule({add(a, b)});
  BOOST_REQUIRE(items.size() == 1u);
  UOpRef r0 = loop(3, 0), r1 = loop(4, 1), idx = r0 * 4 + r1;
  UOpRef want =
      kernel(store(global(0, 12), idx, add(load(global(1, 12), idx), load(global(2, 12), idx))), {r0, r1});
  BOOST_TEST((items[0].ast == want));
  BOOST_TEST(items[0].name() == "E_3_4");
  BOOST_REQUIRE(items[0].bufs.size() == 3u);
  BOOST_TEST((items[0].bufs[1] == a->src(0) && items[0].bufs[2] == b->src(0)));
}

BOOST_AUTO_TEST_CASE(reduce_ast) {
  UOpRef a = input({3, 4});
  auto items = schedule({sum(a, {1})});
  BOOST_REQUIRE(items.size() == 1u);
  UOpRef r0 = loop(3, 0), r1 = reduce_range(4, 1);
  UOpRef red = UOp::make(Ops::REDUCE, dtypes::float32, {load(global(1, 12), r0 * 4 + r1), r1}, Ops::ADD);
  BOOST_TEST((items[0].ast == kernel(store(global(0, 3), r0, red), {r0})));
  BOOST_TEST(items[0].name() == "r_3_4");
}

BOOST_AUTO_TEST_CASE(transpose_ast) {
  UOpRef a = input({3, 4});
  auto items = schedule({UOp::make(Ops::CONTIGUOUS, dtypes::float32, {permute(a, {1, 0})})});
  BOOST_REQUIRE(items.size() == 1u);
  UOpRef r0 = loop(4, 0), r1 = loop(3, 1);
  BOOST_TEST((items[0].ast ==
              kernel(store(global(0, 12), r0 * 3 + r1, load(global(1, 12), r1 * 4 + r0)), {r0, r1})));
}

BOOST_AUTO_TEST_CASE(pad_ast_gates_the_load) {
  UOpRef a = sched::new_buffer(device(), 3, dtypes::float32);
  auto items = schedule({UOp::make(Ops::CONTIGUOUS, dtypes::float32, {pad(a, {{1, 1}})})});
  BOOST_REQUIRE(items.size() == 1u);
  UOpRef r0 = loop(5, 0);
  UOpRef valid = ic(0)->lt(r0) & r0->lt(ic(4));
  UOpRef gated =
      UOp::make(Ops::LOAD, dtypes::float32,
                {UOp::make(Ops::INDEX, global(1, 3)->dtype(), {global(1, 3), r0 + int64_t{-1}, valid})});
  UOpRef want = kernel(store(global(0, 5), r0, valid->where(gated, UOp::const_(dtypes::float32, 0.0))), {r0});
  BOOST_TEST((items[0].ast == want));
}

BOOST_AUTO_TEST_CASE(item_prints_name_buffers_and_tree) {
  auto items = schedule({add(input({3, 4}), input({3, 4}))});
  std::string s = items.at(0).str();
  BOOST_TEST(s.rfind("E_3_4\n", 0) == 0u);
  BOOST_TEST(s.find("buf 0: float[12] on NULL") != std::string::npos);
  BOOST_TEST(s.find("STORE") != std::string::npos);
  BOOST_TEST(s.find("RANGE") != std::string::npos);
  tg::env::Scoped debug(tg::env::DEBUG, 5);  // prints every AST; must not disturb the result
  BOOST_TEST(kernels({add(input({2}), input({2}))}) == 1u);
}

// ---- values, on host memory ----

BOOST_AUTO_TEST_CASE(movement_ops_index_correctly) {
  Memory mem;
  UOpRef x = input({4});
  mem.set(x, {0, 1, 2, 3});
  // flip -> [3,2,1,0], shrink [1,3) -> [2,1], pad (1,2) -> [0,2,1,0,0]
  UOpRef y = UOp::make(Ops::CONTIGUOUS, dtypes::float32, {pad(shrink(flip(x, {1}), {{1, 3}}), {{1, 2}})});
  check_close(run(mem, {y}, 1)[0], {0, 2, 1, 0, 0});
  // (3,4) transposed, then read as (2,6): rows of x.T are the columns of x
  UOpRef m = input({3, 4});
  mem.set(m, iota(12));
  UOpRef t = UOp::make(Ops::CONTIGUOUS, dtypes::float32, {reshape(permute(m, {1, 0}), {2, 6})});
  check_close(run(mem, {t}, 1)[0], {0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11});
  // column 1 broadcast over 3 rows plus the row index
  UOpRef col = expand(shrink(m, {{0, 3}, {1, 2}}), {3, 4});
  check_close(run(mem, {add(col, m)}, 1)[0], {1, 2, 3, 4, 9, 10, 11, 12, 17, 18, 19, 20});
}

BOOST_AUTO_TEST_CASE(subtract_mean_values) {
  Memory mem;
  UOpRef x = input({3, 4});
  mem.set(x, iota(12));  // column means 4 5 6 7
  check_close(run(mem, {sub(x, bcast(mean(x, {0}), x))}, 2)[0], {-4, -4, -4, -4, 0, 0, 0, 0, 4, 4, 4, 4});
}

BOOST_AUTO_TEST_CASE(softmax_values) {
  Memory mem;
  UOpRef x = input({2, 3});
  mem.set(x, {0, 1, 2, 5, 5,
              5});  // exp(x - max) over exp sums: (e^-2, e^-1, 1) / (e^-2 + e^-1 + 1); equal inputs give 1/3
  double e2 = std::exp(-2.0), e1 = std::exp(-1.0), z = e2 + e1 + 1;
  check_close(run(mem, {softmax_last(x)}, 3)[0], {e2 / z, e1 / z, 1 / z, 1.0 / 3, 1.0 / 3, 1.0 / 3});
}

BOOST_AUTO_TEST_CASE(big_reduce_is_split_in_two) {
  // 2^16 values into one, split along the last axis as (4, 256, 64): 4 x 64 partial sums of 256 values each,
  // neighbouring partials reading neighbouring values (r_4_64_256), then their sum (r_4_64).
  Memory mem;
  UOpRef x = input({1 << 16});
  std::vector<double> xv(1 << 16);
  for (size_t i = 0; i < xv.size(); i++) xv[i] = static_cast<double>(i % 16);  // partial sums stay exact
  mem.set(x, xv);
  sched::BecomesMap becomes;
  auto items = schedule({sum(x, {0})}, &becomes);
  BOOST_REQUIRE(items.size() == 2u);
  BOOST_TEST(items[0].name() == "r_4_64_256");
  BOOST_TEST(items[1].name() == "r_4_64");
  check_close(run(mem, {sum(x, {0})}, 2)[0], {4096.0 * 120});
  // max over rows of 2^15, two outputs: each row's 2^15 values in 128 partials of 256.
  UOpRef y = input({2, 1 << 15});
  std::vector<double> yv(1 << 16);
  for (size_t i = 0; i < yv.size(); i++) yv[i] = static_cast<double>((i * 7919) % 65521);
  mem.set(y, yv);
  double m0 = *std::max_element(yv.begin(), yv.begin() + (1 << 15));
  double m1 = *std::max_element(yv.begin() + (1 << 15), yv.end());
  check_close(run(mem, {reduce(y, Ops::MAX, {1})}, 2)[0], {m0, m1});
  // A sum over both axes of 2 x 2^15: the trailing reduced axes merge, 2^16 contiguous values split as the
  // 1-d sum's (4, 256, 64).
  UOpRef z = input({2, 1 << 15});
  mem.set(z, xv);
  auto zitems = schedule({sum(z, {0, 1})});
  BOOST_REQUIRE(zitems.size() == 2u);
  BOOST_TEST(zitems[0].name() == "r_4_64_256");
  check_close(run(mem, {sum(z, {0, 1})}, 2)[0], {4096.0 * 120});
  // batchnorm's sum over (N, H, W) of 20x20 images: the 400 values of an image split as (1, 25, 16), 16
  // neighbouring partials per channel, each summing 25 values of every sample (r_2_16_128_25), then those.
  UOpRef bn = input({128, 2, 20, 20});
  std::vector<double> bv(128 * 2 * 400);
  for (size_t i = 0; i < bv.size(); i++) bv[i] = static_cast<double>((i / 400) % 2 + 1);  // channel + 1
  mem.set(bn, bv);
  auto bitems = schedule({sum(bn, {0, 2, 3})});
  BOOST_REQUIRE(bitems.size() == 2u);
  BOOST_TEST(bitems[0].name() == "r_2_16_128_25");
  check_close(run(mem, {sum(bn, {0, 2, 3})}, 2)[0], {128.0 * 400, 2 * 128.0 * 400});
  // A conv weight gradient's shape: 300 outputs (more than 256, up to 4096 split), each a sum over the
  // batch (32) and 1024 positions, the output axis last: one partial per sample (r_32_300_1024), then
  // their sum over the batch. As one kernel, each register tile of outputs streamed all inputs again.
  UOpRef w = input({32, 1024, 300});
  std::vector<double> wv(32 * 1024 * 300);
  for (size_t i = 0; i < wv.size(); i++) wv[i] = static_cast<double>((i / 300) % 16);  // i's position
  mem.set(w, wv);
  auto witems = schedule({sum(w, {0, 1})});
  BOOST_REQUIRE(witems.size() == 2u);
  BOOST_TEST(witems[0].name() == "r_32_300_1024");
  BOOST_TEST(witems[1].name() == "r_300_32");
  check_close(run(mem, {sum(w, {0, 1})}, 2)[0], std::vector<double>(300, 32.0 * 64 * 120));
  // Below the threshold (2^15 values per output) one kernel does it all.
  BOOST_TEST(schedule({sum(input({1 << 14}), {0})}).size() == 1u);
}

BOOST_AUTO_TEST_CASE(arange_and_argmax_values) {
  Memory mem;
  check_close(run(mem, {sum(reshape(arange(0, 6, 1), {3, 2}), {1})}, 1)[0], {1, 5, 9});
  check_close(run(mem, {UOp::make(Ops::CONTIGUOUS, dtypes::int32, {arange(4, 0, -1)})}, 1)[0], {4, 3, 2, 1});
  UOpRef x = input({2, 3});
  mem.set(x, {1, 3, 2, 5, 4, 5});  // ties pick the first
  check_close(run(mem, {argmax_last(x)}, 2)[0], {1, 0});
}

BOOST_AUTO_TEST_CASE(matmul_values) {
  Memory mem;
  UOpRef a = input({2, 3}), b = input({3, 2}), c = input({2, 1}), d = input({1, 2});
  mem.set(a, {1, 2, 3, 4, 5, 6});
  mem.set(b, {1, 0, 0, 1, 1, 1});
  mem.set(c, {1, 2});
  mem.set(d, {10, 20});
  // a@b = [[4,5],[10,11]], c@d = [[10,20],[20,40]]
  check_close(run(mem, {add(matmul(a, b), matmul(c, d))}, 1)[0], {14, 25, 30, 51});
}

BOOST_AUTO_TEST_CASE(layernorm_values) {
  Memory mem;
  UOpRef x = input({1, 2, 2});
  mem.set(x, {1, 2, 3, 4});  // mean 2.5, variance 1.25
  double s = std::sqrt(1.25);
  check_close(run(mem, {layernorm(x, {1, 2}, 0.0)}, 3)[0], {-1.5 / s, -0.5 / s, 0.5 / s, 1.5 / s});
}

BOOST_AUTO_TEST_CASE(crossentropy_values) {
  Memory mem;
  UOpRef logits = input({2, 2}), labels = input({2}, dtypes::int32);
  mem.set(logits, {0, std::log(3.0), 7, 7});
  mem.set(labels, {1, -1});  // row 0: -log(3/4); row 1 ignored
  check_close(run(mem, {sparse_categorical_crossentropy(logits, labels)}, 3)[0], {std::log(4.0 / 3.0)});
}

BOOST_AUTO_TEST_CASE(a_reduce_read_twice_is_stored_once) {
  Memory mem;
  UOpRef x = input({2, 3});
  mem.set(x, {1, 2, 3, 4, 5, 6});
  UOpRef s = reshape(sum(x, {1}), {2});  // [6, 15]
  check_close(run(mem, {add(s, flip(s, {1}))}, 2)[0], {21, 21});
}

// ---- assign, ordering and memory ----

BOOST_AUTO_TEST_CASE(assign_orders_reads_of_the_old_value_first) {
  Memory mem;
  UOpRef a = input({4}), b = input({4});
  mem.set(a, {1, 2, 3, 4});
  mem.set(b, {10, 20, 30, 40});
  UOpRef old_sum = add(a, b);
  UOpRef asg = UOp::make(Ops::ASSIGN, dtypes::float32, {a, mul(b, full({4}, 2.0))});
  UOpRef after = add(asg, full({4}, 1.0));
  sched::BecomesMap becomes;
  auto items = schedule({asg, after, old_sum}, &becomes);
  BOOST_REQUIRE(items.size() == 3u);
  BOOST_TEST((becomes.at(asg) == a->src(0)));
  mem.run(items);
  check_close(mem.at(a->src(0)), {20, 40, 60, 80});
  check_close(mem.at(becomes.at(old_sum)), {11, 22, 33, 44});
  check_close(mem.at(becomes.at(after)), {21, 41, 61, 81});
}

BOOST_AUTO_TEST_CASE(assign_reading_its_target_elsewhere_copies_first) {
  Memory mem;
  UOpRef a = input({2, 2});
  mem.set(a, {1, 2, 3, 4});
  UOpRef asg = UOp::make(Ops::ASSIGN, dtypes::float32, {a, permute(a, {1, 0})});
  run(mem, {asg}, 2);
  check_close(mem.at(a->src(0)), {1, 3, 2, 4});
  UOpRef inc =
      UOp::make(Ops::ASSIGN, dtypes::float32, {a, add(a, full({2, 2}, 1.0))});  // same element: in place
  run(mem, {inc}, 1);
  check_close(mem.at(a->src(0)), {2, 4, 3, 5});
}

// An SGD step on a weight and a bias whose gradients (fused into the updates) each read both old values:
// each update kernel would read the buffer the other overwrites. The reads get kernels of their own.
BOOST_AUTO_TEST_CASE(assigns_reading_each_others_target_through_reduces) {
  Memory mem;
  UOpRef a = input({3}), b = input({3}), x = input({2, 3});
  mem.set(a, {1, 2, 3});
  mem.set(b, {1, 1, 2});
  mem.set(x, {1, 2, 3, 4, 5, 6});
  auto rows = [&](const UOpRef& v) { return expand(reshape(v, {1, 3}), {2, 3}); };
  UOpRef y = add(mul(x, rows(a)), rows(b));       // a layer's output: [[2, 5, 11], [5, 11, 20]]
  UOpRef ga = reshape(sum(mul(y, x), {0}), {3});  // [22, 65, 153]
  UOpRef gb = reshape(sum(y, {0}), {3});          // [7, 16, 31]
  UOpRef asg_a = UOp::make(Ops::ASSIGN, dtypes::float32, {a, sub(a, mul(full({3}, 0.01), ga))});
  UOpRef asg_b = UOp::make(Ops::ASSIGN, dtypes::float32, {b, sub(b, mul(full({3}, 0.1), gb))});
  run(mem, {asg_a, asg_b}, 4);  // both gradients first, then the two updates
  check_close(mem.at(buffer_of(a)), {0.78, 1.35, 1.47});
  check_close(mem.at(buffer_of(b)), {0.3, -0.6, -1.1});
}

// The same cycle through elementwise reads, and through views of the other's buffer.
BOOST_AUTO_TEST_CASE(assigns_reading_each_others_target_elementwise) {
  Memory mem;
  UOpRef a = input({2}), b = input({2});
  mem.set(a, {1, 2});
  mem.set(b, {10, 20});
  UOpRef asg_a = UOp::make(Ops::ASSIGN, dtypes::float32, {a, add(a, mul(b, full({2}, 2.0)))});
  UOpRef asg_b = UOp::make(Ops::ASSIGN, dtypes::float32, {b, add(b, mul(a, full({2}, 3.0)))});
  run(mem, {asg_a, asg_b}, 4);
  check_close(mem.at(buffer_of(a)), {21, 42});
  check_close(mem.at(buffer_of(b)), {13, 26});
  UOpRef m = input({2, 2}), n = input({2, 2});
  mem.set(m, {1, 2, 3, 4});
  mem.set(n, {5, 6, 7, 8});
  UOpRef asg_m = UOp::make(Ops::ASSIGN, dtypes::float32, {m, permute(n, {1, 0})});  // m = n^T
  UOpRef asg_n = UOp::make(Ops::ASSIGN, dtypes::float32, {n, add(n, m)});           // n = n + m (old m)
  run(mem, {asg_m, asg_n}, 4);  // each reads a copy of the other's buffer, made first
  check_close(mem.at(buffer_of(m)), {5, 7, 6, 8});
  check_close(mem.at(buffer_of(n)), {6, 8, 10, 12});
}

// A swap: each value is the other's bare buffer, so there is no part to realize; the copies run first.
BOOST_AUTO_TEST_CASE(assigns_swapping_two_buffers) {
  Memory mem;
  UOpRef a = input({3}), b = input({3});
  mem.set(a, {1, 2, 3});
  mem.set(b, {4, 5, 6});
  UOpRef asg_a = UOp::make(Ops::ASSIGN, dtypes::float32, {a, b});
  UOpRef asg_b = UOp::make(Ops::ASSIGN, dtypes::float32, {b, a});
  run(mem, {asg_a, asg_b}, 4);
  check_close(mem.at(buffer_of(a)), {4, 5, 6});
  check_close(mem.at(buffer_of(b)), {1, 2, 3});
}

// One kernel reading a buffer both before and after an ASSIGN to it: the old value is read from a copy.
BOOST_AUTO_TEST_CASE(a_kernel_reading_the_old_and_the_new_value) {
  Memory mem;
  UOpRef a = input({2});
  mem.set(a, {1, 2});
  UOpRef asg = UOp::make(Ops::ASSIGN, dtypes::float32, {a, add(a, full({2}, 1.0))});
  UOpRef both = add(a, asg);  // old + new
  auto out = run(mem, {both}, 3);
  check_close(out[0], {3, 5});
  check_close(mem.at(buffer_of(a)), {2, 3});
}

BOOST_AUTO_TEST_CASE(intermediate_buffers_share_storage) {
  Memory mem;
  UOpRef x = input({4, 3});
  mem.set(x, std::vector<double>(12, 1.0));
  UOpRef a1 = sum(x, {1});                     // 3, read by the next kernel only
  UOpRef b1 = sum(mul(x, bcast(a1, x)), {1});  // 9
  UOpRef c1 = sum(mul(x, bcast(b1, x)), {1});  // 27, can reuse a1's storage
  UOpRef root = mul(x, bcast(c1, x));
  sched::BecomesMap becomes;
  auto items = schedule({root}, &becomes);
  BOOST_REQUIRE(items.size() == 4u);
  sched::MemoryPlan plan = sched::plan_memory(items, becomes);
  BOOST_TEST(plan.storage.size() == 2u);
  BOOST_TEST(plan.bytes_before == 48);
  BOOST_TEST(plan.bytes_after == 32);
  BOOST_TEST((plan.storage.at(items[0].bufs[0]) == plan.storage.at(items[2].bufs[0])));
  sched::apply_memory_plan(items, plan);
  BOOST_TEST((items[0].bufs[0] == items[2].bufs[0]));
  mem.run(items);
  check_close(mem.at(becomes.at(root)), std::vector<double>(12, 27.0));
}

BOOST_AUTO_TEST_CASE(assign_into_part_of_a_buffer) {
  Memory mem;
  UOpRef a = input({4});
  mem.set(a, {1, 2, 3, 4});
  UOpRef part = shrink(a, {{1, 3}});
  UOpRef asg = UOp::make(Ops::ASSIGN, dtypes::float32, {part, full({2}, 5.0)});
  sched::BecomesMap becomes;
  auto items = schedule({asg}, &becomes);
  BOOST_REQUIRE(items.size() == 1u);
  BOOST_TEST(items[0].name() == "E_2");
  BOOST_TEST((becomes.at(asg) == shrink(a->src(0), {{1, 3}})));  // the value lives in a view of the buffer
  mem.run(items);
  check_close(mem.at(a->src(0)), {1, 5, 5, 4});
  BOOST_CHECK_THROW(schedule({UOp::make(Ops::ASSIGN, dtypes::float32, {add(a, a), a})}), tg::ValueError);
}
