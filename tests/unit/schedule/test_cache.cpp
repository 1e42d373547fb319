#define BOOST_TEST_MODULE schedule_cache
#include <boost/test/unit_test.hpp>

#include "graph.hpp"

using namespace tgt;

namespace {

int64_t unique_of(const UOpRef& buffer) { return buffer->src(0)->arg_as<int64_t>(); }

void check_close(const std::vector<double>& got, const std::vector<double>& want) {
  BOOST_REQUIRE_EQUAL(got.size(), want.size());
  for (size_t i = 0; i < got.size(); i++) BOOST_TEST(got[i] == want[i], boost::test_tools::tolerance(1e-9));
}

struct Scheduled {
  std::vector<tg::sched::ScheduleItem> items;
  tg::sched::BecomesMap becomes;
  tg::sched::VarVals var_vals;
};
Scheduled schedule_roots(const std::vector<UOpRef>& roots) {
  Scheduled s;
  s.items = tg::sched::create_schedule(UOp::sink(roots), s.becomes, &s.var_vals);
  return s;
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_same_graph_again_is_replayed_with_new_buffers) {
  Memory mem;
  UOpRef x = input({4, 3});
  mem.set(x, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  UOpRef s = sum(x, {1});  // realized: read by every element of the root
  UOpRef root = UOp::make(Ops::CONTIGUOUS, dtypes::float32, {mul(x, bcast(s, x))});
  size_t hits = tg::sched::schedule_cache_hits();
  Scheduled a = schedule_roots({root});
  BOOST_TEST(tg::sched::schedule_cache_hits() == hits);
  Scheduled b = schedule_roots({root});
  BOOST_TEST(tg::sched::schedule_cache_hits() == hits + 1);
  BOOST_REQUIRE(a.items.size() == 2u);
  BOOST_REQUIRE(b.items.size() == 2u);
  for (size_t i = 0; i < a.items.size(); i++) {
    BOOST_TEST((a.items[i].ast == b.items[i].ast));  // the same kernels...
    BOOST_REQUIRE(a.items[i].bufs.size() == b.items[i].bufs.size());
  }
  // ...writing new buffers (the output and the intermediate), reading the same input
  BOOST_TEST(unique_of(b.items[0].bufs[0]) > unique_of(a.items[0].bufs[0]));
  BOOST_TEST(unique_of(b.items[1].bufs[0]) > unique_of(a.items[1].bufs[0]));
  BOOST_TEST((b.items[1].bufs[0] != b.items[0].bufs[0]));
  BOOST_TEST((a.items[0].bufs[1] == b.items[0].bufs[1]));
  BOOST_TEST((b.items[1].bufs[2] == b.items[0].bufs[0]));  // the second kernel reads this run's sum
  BOOST_TEST((b.becomes.at(root) == b.items[1].bufs[0]));
  BOOST_TEST((a.becomes.at(root) != b.becomes.at(root)));
  mem.run(b.items);
  check_close(mem.at(b.becomes.at(root)), {6, 12, 18, 60, 75, 90, 168, 192, 216, 330, 363, 396});
}

// The next layer of a model: the same graph over other buffers replays the schedule with its own buffers,
// reads and in-place writes alike; a graph that reads one buffer twice is not one that reads two.
BOOST_AUTO_TEST_CASE(the_same_graph_over_other_buffers_is_replayed_with_them) {
  Memory mem;
  auto layer = [](const UOpRef& x, const UOpRef& acc) {
    UOpRef s = sum(x, {1});
    UOpRef y = UOp::make(Ops::CONTIGUOUS, dtypes::float32, {mul(x, bcast(s, x))});
    return std::pair{y, UOp::make(Ops::ASSIGN, dtypes::float32, {acc, add(acc, reshape(s, {2}))})};
  };
  UOpRef x1 = input({2, 3}), x2 = input({2, 3}), acc1 = input({2}), acc2 = input({2});
  mem.set(x1, {1, 2, 3, 4, 5, 6});
  mem.set(x2, {1, 0, 1, 2, 2, 2});
  mem.set(acc1, {100, 200});
  mem.set(acc2, {10, 20});
  auto [y1, w1] = layer(x1, acc1);
  auto [y2, w2] = layer(x2, acc2);
  size_t hits = tg::sched::schedule_cache_hits();
  Scheduled a = schedule_roots({y1, w1});
  Scheduled b = schedule_roots({y2, w2});
  BOOST_TEST(tg::sched::schedule_cache_hits() == hits + 1);
  BOOST_REQUIRE(a.items.size() == b.items.size());
  for (size_t i = 0; i < a.items.size(); i++) {
    BOOST_TEST((a.items[i].ast == b.items[i].ast));
    for (const UOpRef& buf : b.items[i].bufs)  // none of the first graph's buffers
      for (const UOpRef& old : {x1->src(0), acc1->src(0), a.becomes.at(y1)}) BOOST_TEST((buf != old));
  }
  BOOST_TEST((b.becomes.at(w2) == acc2->src(0)));
  mem.run(a.items);
  mem.run(b.items);
  check_close(mem.at(b.becomes.at(y2)), {2, 0, 2, 12, 12, 12});  // row sums 2 and 6
  check_close(mem.at(acc2->src(0)), {12, 26});
  check_close(mem.at(a.becomes.at(y1)), {6, 12, 18, 60, 75, 90});
  check_close(mem.at(acc1->src(0)), {106, 215});
  UOpRef twice = UOp::make(Ops::CONTIGUOUS, dtypes::float32, {add(x1, x1)});
  UOpRef pair = UOp::make(Ops::CONTIGUOUS, dtypes::float32, {add(x1, x2)});
  hits = tg::sched::schedule_cache_hits();
  Scheduled t = schedule_roots({twice}), p = schedule_roots({pair});
  BOOST_TEST(tg::sched::schedule_cache_hits() == hits);
  mem.run(p.items);
  check_close(mem.at(p.becomes.at(pair)), {2, 2, 4, 6, 7, 8});
}

BOOST_AUTO_TEST_CASE(a_copy_of_an_intermediate_reads_the_new_buffer) {
  UOpRef x = input({4});
  UOpRef moved = UOp::make(Ops::COPY, dtypes::float32, {add(x, x), device("OTHER")});
  UOpRef root = UOp::make(Ops::CONTIGUOUS, dtypes::float32, {add(moved, moved)});
  Scheduled a = schedule_roots({root}), b = schedule_roots({root});
  BOOST_REQUIRE(b.items.size() == 3u);
  BOOST_REQUIRE(b.items[1].is_copy());
  BOOST_TEST((b.items[1].bufs[1] == b.items[0].bufs[0]));  // copies what this run computed
  BOOST_TEST((b.items[1].ast->src(0) == b.items[0].bufs[0]));
  BOOST_TEST((b.items[2].bufs[1] == b.items[1].bufs[0]));
  BOOST_TEST((a.items[1].bufs[0] != b.items[1].bufs[0]));
}

BOOST_AUTO_TEST_CASE(an_assign_again_writes_its_target_again) {
  Memory mem;
  UOpRef a = input({3});
  mem.set(a, {1, 2, 3});
  UOpRef inc = UOp::make(Ops::ASSIGN, dtypes::float32, {a, add(a, full({3}, 1.0))});
  for (int i = 0; i < 3; i++) {
    Scheduled s = schedule_roots({inc});
    BOOST_REQUIRE(s.items.size() == 1u);
    BOOST_TEST((s.items[0].bufs[0] == a->src(0)));
    BOOST_TEST((s.becomes.at(inc) == a->src(0)));
    mem.run(s.items);
  }
  check_close(mem.at(a->src(0)), {4, 5, 6});
}

BOOST_AUTO_TEST_CASE(bound_variables_come_back_from_the_cache) {
  UOpRef v = UOp::variable("n", 1, 10),
         bound = UOp::make(Ops::BIND, dtypes::index, {v, UOp::const_(dtypes::index, 7)});
  UOpRef x = input({4});
  UOpRef root = UOp::make(Ops::CONTIGUOUS, dtypes::float32,
                          {mul(x, expand(reshape(cast(bound, dtypes::float32), {1}), {4}))});
  Scheduled a = schedule_roots({root}), b = schedule_roots({root});
  BOOST_TEST(b.var_vals.size() == 1u);
  BOOST_TEST(b.var_vals.at(v) == 7);
}

BOOST_AUTO_TEST_CASE(size_zero_turns_it_off) {
  UOpRef x = input({5});
  UOpRef root = UOp::make(Ops::CONTIGUOUS, dtypes::float32, {add(x, x)});
  size_t old = tg::sched::set_schedule_cache_size(0);
  size_t hits = tg::sched::schedule_cache_hits();
  schedule_roots({root}), schedule_roots({root});
  BOOST_TEST(tg::sched::schedule_cache_hits() == hits);
  tg::sched::set_schedule_cache_size(old);
  schedule_roots({root}), schedule_roots({root});
  BOOST_TEST(tg::sched::schedule_cache_hits() == hits + 1);
}

// A symbolic axis: 12 values viewed as (n, 4) with n bound to 3. The kernel ranges over the variable, so
// the same kernel serves another value; the output buffer has room for n's largest value.
BOOST_AUTO_TEST_CASE(a_symbolic_axis_becomes_a_variable_range) {
  Memory mem;
  UOpRef x = input({12});
  mem.set(x, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  UOpRef var = UOp::variable("n", 1, 3);
  sint n = sint::of(UOp::make(Ops::BIND, dtypes::index, {var, UOp::const_(dtypes::index, 3)}));
  UOpRef rows = UOp::make(Ops::RESHAPE, dtypes::float32, {x}, Shape{n, 4});
  BOOST_TEST(rows->shape()->at(0).str() == "n");
  UOpRef root = UOp::make(Ops::CONTIGUOUS, dtypes::float32, {sum(rows, {1})});
  Scheduled s = schedule_roots({root});
  BOOST_REQUIRE(s.items.size() == 1u);
  BOOST_TEST(s.var_vals.at(var) == 3);
  const UOpRef& out = s.items[0].bufs[0];
  BOOST_TEST(out->arg_as<int64_t>() == 3);
  mem.run(s.items, s.var_vals);
  check_close(mem.at(out), {10, 26, 42});
  mem.at(out) = {0, 0, 0};
  mem.run(s.items, {{var, 2}});
  check_close(mem.at(out), {10, 26, 0});
}
