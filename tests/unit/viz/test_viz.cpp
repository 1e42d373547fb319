#define BOOST_TEST_MODULE viz
#include <boost/test/unit_test.hpp>

#include <httplib.h>

#include <regex>
#include <thread>

#include "base/error.hpp"
#include "uop/pattern.hpp"
#include "viz/graph.hpp"
#include "viz/record_build.hpp"
#include "viz/server.hpp"
#include "viz/trace.hpp"

using namespace tg;
using namespace tg::viz;

namespace {

UOpRef var(const char* name) { return UOp::variable(name, 0, 10); }
const PatternMatcher mul_one{{UPat::var("x") * 1, [](Match& m) { return m["x"]; }}};  // x*1 -> x

// (a*1 + b*1) rewritten by x*1 -> x: two steps, input of 7 nodes (a, b, 1, a*1, b*1, +, and none shared
// but the constant), output a + b of 3.
Trace traced_pass() {
  set_rewrite_tracing(true);
  take_rewrite_traces();
  graph_rewrite(var("a") * 1 + var("b") * 1, mul_one, nullptr, {.name = "drop ones"});
  graph_rewrite(var("a") + 0, mul_one);  // unnamed: left out of the trace
  set_rewrite_tracing(false);
  return build_trace(take_rewrite_traces(), {}, {}, {}, {});
}

int count(const std::string& s, const std::string& what) {
  int n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) n++;
  return n;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_traced_pass_becomes_steps_with_their_rule) {
  Trace t = traced_pass();
  BOOST_TEST_REQUIRE(t.rewrites.size() == 1u);
  const Rewrite& r = t.rewrites[0];
  BOOST_TEST(r.name == "drop ones");
  BOOST_TEST(r.kernel == -1);
  BOOST_TEST(subgraph(t, r.before).size() == 6u);  // a, b, 1, a*1, b*1, +
  BOOST_TEST(subgraph(t, r.after).size() == 3u);   // a, b, a+b
  BOOST_TEST(t.nodes[static_cast<size_t>(r.after)].op == "ADD");
  BOOST_TEST_REQUIRE(r.steps.size() == 2u);
  BOOST_TEST(t.nodes[static_cast<size_t>(r.steps[0].from)].op == "MUL");
  BOOST_TEST(t.nodes[static_cast<size_t>(r.steps[0].to)].op == "DEFINE_VAR");
  BOOST_TEST_REQUIRE(t.rules.size() == 1u);  // both steps are the same rule
  BOOST_TEST(t.rules[0].loc == "tests/unit/viz/test_viz.cpp:22");
  BOOST_TEST(t.rules[0].code.find("// x*1 -> x") != std::string::npos);
  BOOST_TEST_REQUIRE(t.order.size() == 1u);
  BOOST_TEST(t.order[0].kind == "rewrite");
}

BOOST_AUTO_TEST_CASE(a_lowered_kernel_owns_the_rewrites_that_lowered_it) {
  // One lowering on this thread around a named pass; the kernel's "AST" is any graph here.
  set_rewrite_tracing(true);
  take_rewrite_traces();
  uint64_t begin = next_trace_seq();
  graph_rewrite(var("a") * 1, mul_one, nullptr, {.name = "inside"});
  uint64_t end = next_trace_seq();
  graph_rewrite(var("a") * 1, mul_one, nullptr, {.name = "after"});
  set_rewrite_tracing(false);
  LiveKernel k{var("a") + 1, "E_4", "[]", "0 DEFINE_VAR", 8, 32, "CLANG:0", "void E_4() {}", "ret"};
  LiveLowering l{begin, end, std::this_thread::get_id(), 0, true};
  Trace t = build_trace(take_rewrite_traces(), {k}, {l}, {LiveRun{0, 0.5, 0.25}}, {});
  BOOST_TEST_REQUIRE(t.kernels.size() == 1u);
  BOOST_TEST(t.kernels[0].rewrites == std::vector<int>{0});
  BOOST_TEST(t.rewrites[0].kernel == 0);
  BOOST_TEST(t.rewrites[1].kernel == -1);
  BOOST_TEST_REQUIRE(t.order.size() == 2u);  // the kernel (its rewrite nested), then the later pass
  BOOST_TEST(t.order[0].kind == "kernel");
  BOOST_TEST(t.order[1].kind == "rewrite");
  BOOST_TEST(t.order[1].index == 1);
  BOOST_TEST(subgraph(t, t.kernels[0].ast).size() == 3u);  // a, 1, a+1
  BOOST_TEST(t.runs[0].us == 0.25e6);
}

BOOST_AUTO_TEST_CASE(each_rule_of_a_table_is_told_apart) {
  const PatternMatcher table{
      {UPat::var("x") + 0, [](Match& m) { return m["x"]; }},                 // x+0 -> x
      {UPat::var("x") * 0, [](Match& m) { return m["x"]->const_like(0); }},  // x*0 -> 0
      {UPat::var("x") * 1, [](Match& m) { return m["x"]; }},                 // x*1 -> x
  };
  set_rewrite_tracing(true);
  take_rewrite_traces();
  graph_rewrite((var("a") * 1) * 0, table, nullptr, {.name = "table"});
  set_rewrite_tracing(false);
  Trace t = build_trace(take_rewrite_traces(), {}, {}, {}, {});
  BOOST_TEST_REQUIRE(t.rewrites[0].steps.size() == 2u);
  const viz::Rule& first = t.rules[static_cast<size_t>(t.rewrites[0].steps[0].rule)];
  const viz::Rule& second = t.rules[static_cast<size_t>(t.rewrites[0].steps[1].rule)];
  BOOST_TEST(first.code.find("// x*1 -> x") != std::string::npos, first.code);
  BOOST_TEST(second.code.find("// x*0 -> 0") != std::string::npos, second.code);
}

BOOST_AUTO_TEST_CASE(json_round_trip_keeps_everything) {
  Trace t = traced_pass();
  t.kernels.push_back(Kernel{"E_4", "CLANG:0", "[]", "uops", "src", "asm", 0, 8, 32, {0}});
  t.runs.push_back(Run{0, 1.5, 2.5});
  t.memory.push_back(MemoryPlan{64, 32, {{0, 1}}});
  Trace u = parse_trace(to_json(t).dump(), "test");
  BOOST_TEST(u.nodes.size() == t.nodes.size());
  BOOST_TEST(u.nodes.back().src == t.nodes.back().src);
  BOOST_TEST(u.rules[0].code == t.rules[0].code);
  BOOST_TEST(u.rewrites[0].steps.size() == 2u);
  BOOST_TEST(u.kernels[0].source == "src");
  BOOST_TEST(u.runs[0].us == 2.5);
  BOOST_TEST(u.memory[0].placed[0].second == 1);
}

BOOST_AUTO_TEST_CASE(damaged_traces_are_rejected_with_the_reason) {
  auto message = [](const std::string& text) {
    try {
      parse_trace(text, "t.json");
    } catch (const FormatError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  BOOST_TEST(message("{\"nodes\": [").find("[viz] t.json: not JSON") != std::string::npos);
  BOOST_TEST(message("[1, 2]").find("not a VIZ trace") != std::string::npos);
  nlohmann::json j = to_json(traced_pass());
  j.erase("kernels");
  BOOST_TEST(message(j.dump()).find("malformed trace") != std::string::npos);
  j = to_json(traced_pass());
  j["nodes"][0]["src"] = {99};  // a source that is not before its user: a cycle or garbage
  BOOST_TEST(message(j.dump()).find("node source 99 is out of range") != std::string::npos);
  j = to_json(traced_pass());
  j["rewrites"][0]["steps"][0]["rule"] = 5;
  BOOST_TEST(message(j.dump()).find("step rule 5 is out of range") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(graphs_are_laid_out_by_graphviz_one_svg_node_per_node) {
  Trace t = traced_pass();
  std::vector<int> nodes = subgraph(t, t.rewrites[0].before);
  std::string svg = render_svg(to_dot(t, nodes, {{t.rewrites[0].before, Mark::matched}}));
  BOOST_TEST(count(svg, "class=\"node\"") == 6);
  BOOST_TEST(count(svg, "class=\"edge\"") == 6);         // a*1: 2, b*1: 2, +: 2
  BOOST_TEST(svg.find("#d62728") != std::string::npos);  // the matched node's outline
  BOOST_TEST(op_group("ADD") == "alu");
  BOOST_TEST(op_group("RESHAPE") == "movement");
  BOOST_TEST(op_group("RANGE") == "loop");
}

BOOST_AUTO_TEST_CASE(endpoints_answer_from_the_trace_and_nothing_else) {
  Trace t = traced_pass();
  t.kernels.push_back(
      Kernel{"E_4", "CLANG:0", "[]", "uops", "void E_4(){}", "asm", t.rewrites[0].after, 8, 32, {}});
  t.order.push_back(Entry{"kernel", 0});
  t.runs.push_back(Run{0, 0, 2});
  Server s(t);
  int port = s.bind(0);
  std::thread th([&] { s.listen(); });
  httplib::Client c("127.0.0.1", port);
  auto sum = c.Get("/api/summary");
  BOOST_TEST_REQUIRE(static_cast<bool>(sum));
  nlohmann::json j = nlohmann::json::parse(sum->body);
  BOOST_TEST(j["entries"].size() == 2u);
  BOOST_TEST(j["entries"][0]["name"] == "drop ones");
  BOOST_TEST(j["entries"][1]["name"] == "E_4");
  BOOST_TEST(j["runs"][0]["us"] == 2);
  auto k = c.Get("/api/kernel/0");
  BOOST_TEST(nlohmann::json::parse(k->body)["ast_nodes"] == 3);
  BOOST_TEST(nlohmann::json::parse(k->body)["source"] == "void E_4(){}");
  auto r = c.Get("/api/rewrite/0");
  nlohmann::json rj = nlohmann::json::parse(r->body);
  BOOST_TEST(rj["steps"].size() == 2u);
  BOOST_TEST(rj["steps"][0]["loc"] == "tests/unit/viz/test_viz.cpp:22");
  BOOST_TEST(rj["before_nodes"] == 6);
  auto g = c.Get("/api/graph/" + std::to_string(t.rewrites[0].after) + ".svg");
  BOOST_TEST(count(g->body, "class=\"node\"") == 3);
  // Step 0: a*1 (3 nodes: a, 1, a*1) and its replacement a (already there): the matched node marked.
  auto st = c.Get("/api/step/0/0.svg");
  BOOST_TEST(count(st->body, "class=\"node\"") == 3);
  BOOST_TEST(c.Get("/api/step/0/2.svg")->status == 404);
  BOOST_TEST(c.Get("/api/kernel/1")->status == 404);
  BOOST_TEST(c.Get("/api/graph/99999.svg")->status == 404);
  BOOST_TEST(c.Get("/etc/passwd")->status == 404);
  BOOST_TEST(c.Get("/lib/../../../etc/passwd")->status == 404);
  BOOST_TEST(c.Get("/")->body.find("tinygrad.cpp VIZ") != std::string::npos);
  s.stop();
  th.join();
}

BOOST_AUTO_TEST_CASE(a_port_in_use_is_a_clear_error) {
  Server a(Trace{});
  int port = a.bind(0);
  Server b(Trace{});
  try {
    b.bind(port);
    BOOST_FAIL("a second server bound the same port");
  } catch (const DeviceError& e) {
    BOOST_TEST(std::string(e.what()).find("127.0.0.1:" + std::to_string(port)) != std::string::npos);
    BOOST_TEST(std::string(e.what()).find("in use") != std::string::npos);
  }
}
