#pragma once
// The VIZ trace: what one run of a program did, as plain data (no UOps), so a live process and a saved
// file are served by the same code. Graphs share one node table; everything else refers to it by index.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace tg::viz {

struct Node {
  std::string op, dtype, arg;
  std::vector<int> src;  // indices into Trace::nodes, always smaller than this node's
};

struct Rule {
  std::string loc;   // "modules/uop/symbolic.cpp:42"
  std::string code;  // that source line, when the file could be read
};

// One rule that fired inside a graph_rewrite: the node it matched and what it returned.
struct Step {
  int rule = 0;
  int from = 0, to = 0;
};

struct Rewrite {
  std::string name;
  int kernel = -1;  // the kernel being lowered when it ran, -1 for the stages before codegen
  int before = 0, after = 0;
  double ms = 0;
  std::vector<Step> steps;
};

struct Kernel {
  std::string name, device, opts, uops, source, disasm;
  int ast = 0;
  int64_t ops = 0, bytes = 0;  // work estimate of one launch (codegen/estimate.hpp)
  std::vector<int> rewrites;   // the rewrites that lowered it, in order
};

struct Run {
  int kernel = 0;
  double start_us = 0, us = 0;  // start since the trace began, and the kernel's own time
};

struct MemoryPlan {
  int64_t bytes_before = 0, bytes_after = 0;
  std::vector<std::pair<int, int>> placed;  // BUFFER node -> the BUFFER node it shares storage with
};

// What the page lists, in pipeline order.
struct Entry {
  std::string kind;  // "rewrite" or "kernel"
  int index = 0;
};

struct Trace {
  std::vector<Node> nodes;
  std::vector<Rule> rules;
  std::vector<Rewrite> rewrites;
  std::vector<Kernel> kernels;
  std::vector<Run> runs;
  std::vector<MemoryPlan> memory;
  std::vector<Entry> order;
};

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Node, op, dtype, arg, src)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Rule, loc, code)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Step, rule, from, to)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Rewrite, name, kernel, before, after, ms, steps)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Kernel, name, device, opts, uops, source, disasm, ast, ops, bytes,
                                   rewrites)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Run, kernel, start_us, us)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(MemoryPlan, bytes_before, bytes_after, placed)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Entry, kind, index)

nlohmann::json to_json(const Trace& t);
// Throws ValueError("[viz] <what>: ...") for anything that is not a well-formed trace (bad JSON, missing
// fields, indices out of range), so a damaged file never reaches the page.
Trace trace_from_json(const nlohmann::json& j, std::string_view what);
Trace parse_trace(std::string_view text, std::string_view what);
Trace read_trace(const std::string& path);
void write_trace(const Trace& t, const std::string& path);

// The nodes of the graph under root, sources before users (root last).
std::vector<int> subgraph(const Trace& t, int root);

}  // namespace tg::viz
