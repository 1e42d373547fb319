#define BOOST_TEST_MODULE rewrite
#include <boost/test/unit_test.hpp>

#include <map>

#include "base/error.hpp"
#include "uop/pattern.hpp"

using namespace tg;

namespace {
UOpRef var(const char* name) { return UOp::variable(name, 0, 10); }
const PatternMatcher add_zero{{UPat::var("x") + 0, [](Match& m) { return m["x"]; }}};  // x+0 -> x
}  // namespace

BOOST_AUTO_TEST_CASE(rewrites_the_whole_graph_to_a_fixed_point) {
  UOpRef a = var("a"), b = var("b");
  BOOST_TEST(graph_rewrite(((a + 0) * (b + 0)) + 0, add_zero) == a * b);
  // (x+c1)+c2 -> x+(c1+c2), applied until nothing matches.
  PatternMatcher fold{{(UPat::var("x") + UPat::cvar("c1")) + UPat::cvar("c2"), [](Match& m) {
                         int64_t c = std::get<int64_t>(*m["c1"]->const_value()) +
                                     std::get<int64_t>(*m["c2"]->const_value());
                         return m["x"] + c;
                       }}};
  BOOST_TEST(graph_rewrite((((a + 1) + 2) + 3) + 4, fold) == a + 10);
  BOOST_TEST(graph_rewrite(a, fold) == a);
}

BOOST_AUTO_TEST_CASE(top_down_and_bottom_up_differ) {
  // The second rule only sees (y+0)*2 if the parent is rewritten before its sources.
  PatternMatcher pm =
      add_zero + PatternMatcher{{(UPat::var("y") + 0) * 2, [](Match& m) { return m["y"] * 3; }}};
  UOpRef a = var("a");
  BOOST_TEST(graph_rewrite((a + 0) * 2, pm) == a * 2);
  BOOST_TEST(graph_rewrite((a + 0) * 2, pm, nullptr, {.name = "bu", .bottom_up = true}) == a * 3);
  // Bottom-up still rewrites what the parent's rewrite exposes.
  BOOST_TEST(graph_rewrite(((a + 0) + 0) * 5, pm, nullptr, {.name = "bu", .bottom_up = true}) == a * 5);
}

BOOST_AUTO_TEST_CASE(rule_outputs_are_rewritten_too) {
  // x*2 -> (x+0)+(x+0): the rule's output is walked again, so x+0 -> x cleans it up.
  PatternMatcher pm{{UPat::var("x") * 2, [](Match& m) { return (m["x"] + 0) + (m["x"] + 0); }}};
  UOpRef a = var("a");
  BOOST_TEST(graph_rewrite(a * 2, pm + add_zero) == a + a);
}

BOOST_AUTO_TEST_CASE(each_unique_node_is_matched_once) {
  // A DAG of 40 levels where each node uses the one below twice: 2^40 paths, 40 ADD nodes.
  UOpRef x = var("a");
  for (int i = 0; i < 40; i++) x = x + x;
  std::map<const UOp*, int> calls;
  PatternMatcher count{{UPat(Ops::ADD), [](Match& m) -> UOpRef {
                          m.ctx<std::map<const UOp*, int>>()[m.root().get()]++;
                          return nullptr;
                        }}};
  BOOST_TEST(graph_rewrite(x, count, calls) == x);
  BOOST_TEST(calls.size() == 40u);
  for (auto& [u, n] : calls) BOOST_TEST(n == 1);
  calls.clear();
  graph_rewrite(x, count, calls, {.name = "bu", .bottom_up = true});
  BOOST_TEST(calls.size() == 40u);
  for (auto& [u, n] : calls) BOOST_TEST(n == 1);
}

BOOST_AUTO_TEST_CASE(context_reaches_the_rules) {
  struct Ctx {
    std::vector<std::string> names;
  } ctx;
  PatternMatcher collect{{UPat(Ops::DEFINE_VAR, std::nullopt, std::nullopt, "v"), [](Match& m) -> UOpRef {
                            m.ctx<Ctx>().names.push_back(m["v"]->arg_as<VarArg>().name);
                            return nullptr;
                          }}};
  graph_rewrite(var("p") * var("q") + var("p"), collect, ctx);
  BOOST_TEST(ctx.names.size() == 2u);
  BOOST_TEST(ctx.names[0] == "p");
  BOOST_TEST(ctx.names[1] == "q");
}

BOOST_AUTO_TEST_CASE(deep_chains_do_not_overflow_the_stack) {
  UOpRef a = var("a");
  UOpRef x = a;
  for (int i = 0; i < 100000; i++) x = x + 0;
  BOOST_TEST(graph_rewrite(x, add_zero) == a);
  BOOST_TEST(graph_rewrite(x, add_zero, nullptr, {.name = "bu", .bottom_up = true}) == a);
  // A chain nothing matches comes back unchanged, and a chain rebuilt from a changed leaf.
  UOpRef y = a, z = var("b");
  for (int i = 0; i < 100000; i++) y = y * 3, z = z * 3;
  BOOST_TEST(graph_rewrite(y, add_zero) == y);
  PatternMatcher rename{{UPat(Ops::DEFINE_VAR).arg(VarArg{"a", 0, 10}), [](Match&) { return var("b"); }}};
  BOOST_TEST(graph_rewrite(y, rename) == z);
}

BOOST_AUTO_TEST_CASE(rewrite_loops_are_errors) {
  PatternMatcher swap{{UPat(Ops::DEFINE_VAR).arg(VarArg{"a", 0, 10}), [](Match&) { return var("b"); }},
                      {UPat(Ops::DEFINE_VAR).arg(VarArg{"b", 0, 10}), [](Match&) { return var("a"); }}};
  BOOST_CHECK_THROW(graph_rewrite(var("a") + 1, swap), ValueError);
  BOOST_CHECK_THROW(graph_rewrite(var("a") + 1, swap, nullptr, {.name = "bu", .bottom_up = true}),
                    ValueError);
  // x -> x*1 needs the rewrite of x to rewrite x: never settles.
  PatternMatcher grow{
      {UPat(Ops::DEFINE_VAR, std::nullopt, std::nullopt, "x"), [](Match& m) { return m["x"] * 1; }}};
  BOOST_CHECK_THROW(graph_rewrite(var("a"), grow), ValueError);
}

BOOST_AUTO_TEST_CASE(passes_are_traced_by_name) {
  set_rewrite_tracing(true);
  take_rewrite_traces();
  UOpRef a = var("a");
  graph_rewrite((a + 0) * (var("b") + 0), add_zero, nullptr, {.name = "drop zeros"});
  graph_rewrite(a, add_zero, nullptr, {.name = "nothing"});
  set_rewrite_tracing(false);
  graph_rewrite(a + 0, add_zero, nullptr, {.name = "untraced"});
  std::vector<RewriteTrace> ts = take_rewrite_traces();
  BOOST_TEST(ts.size() == 2u);
  BOOST_TEST(ts[0].name == "drop zeros");
  BOOST_TEST(ts[0].matches == 2u);
  BOOST_TEST(ts[0].before == (a + 0) * (var("b") + 0));
  BOOST_TEST(ts[0].after == a * var("b"));
  BOOST_TEST(ts[1].name == "nothing");
  BOOST_TEST(ts[1].matches == 0u);
  // Each rule that fired, with the line that wrote it (add_zero, line 13), in the order they fired.
  BOOST_TEST_REQUIRE(ts[0].steps.size() == 2u);
  BOOST_TEST(ts[0].steps[0].where.line == 13);
  BOOST_TEST(std::string(ts[0].steps[0].where.file).ends_with("test_rewrite.cpp"));
  BOOST_TEST(ts[0].steps[0].from == a + 0);
  BOOST_TEST(ts[0].steps[0].to == a);
  BOOST_TEST(ts[0].steps[1].from == var("b") + 0);
  BOOST_TEST(ts[1].steps.empty());
  BOOST_TEST(ts[0].seq < ts[1].seq);
  BOOST_TEST(take_rewrite_traces().empty());
}

BOOST_AUTO_TEST_CASE(a_memoized_matcher_skips_what_it_rewrote_before) {
  static int calls = 0;  // rule invocations (the rule itself is pure: it never changes a result)
  static const PatternMatcher counted = PatternMatcher{
      {UPat::var("x") + 0,
       [](Match& m) {
         calls++;
         return m["x"];
       }},
      {UPat(Ops::MUL), [](Match&) {
         calls++;
         return UOpRef();
       }}}.memoized();
  BOOST_TEST(counted.memo_slot() >= 0);
  UOpRef a = var("a"), b = var("b");
  UOpRef r = graph_rewrite((a + 0) * (b + 0), counted);
  BOOST_TEST(r == a * b);
  BOOST_TEST(calls == 3);  // two x+0, one MUL
  BOOST_TEST(graph_rewrite(r, counted) == r);
  BOOST_TEST(calls == 3);  // a fixed point: not walked again
  calls = 0;
  UOpRef bigger = (r + 0) * r;
  BOOST_TEST(graph_rewrite(bigger, counted) == r * r);
  BOOST_TEST(calls == 2);  // only the new nodes: r+0 and the MUL of the result
  // The same rules without the memo give the same results, and a plain + of a memoized matcher is plain.
  BOOST_TEST((counted + add_zero).memo_slot() == -1);
  BOOST_TEST(graph_rewrite(bigger, counted + add_zero) == r * r);
}
