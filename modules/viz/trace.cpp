// The trace as JSON, and the checks that keep a damaged file from reaching the page.
#include "viz/trace.hpp"

#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "base/error.hpp"

namespace tg::viz {

namespace {

constexpr int kVersion = 1;

void check_index(int i, size_t n, std::string_view field, std::string_view what) {
  if (i < 0 || static_cast<size_t>(i) >= n)
    throw FormatError("viz", fmt::format("{}: {} {} is out of range (0..{})", what, field, i, n));
}

// Every index points at something that exists, and graphs are acyclic (sources come first).
void validate(const Trace& t, std::string_view what) {
  for (size_t i = 0; i < t.nodes.size(); i++)
    for (int s : t.nodes[i].src) check_index(s, i, "node source", what);
  size_t nn = t.nodes.size(), nk = t.kernels.size(), nr = t.rewrites.size();
  for (const Rewrite& r : t.rewrites) {
    check_index(r.before, nn, "rewrite input", what), check_index(r.after, nn, "rewrite output", what);
    if (r.kernel != -1) check_index(r.kernel, nk, "rewrite kernel", what);
    for (const Step& s : r.steps) {
      check_index(s.rule, t.rules.size(), "step rule", what);
      check_index(s.from, nn, "step node", what), check_index(s.to, nn, "step node", what);
    }
  }
  for (const Kernel& k : t.kernels) {
    check_index(k.ast, nn, "kernel ast", what);
    for (int r : k.rewrites) check_index(r, nr, "kernel rewrite", what);
  }
  for (const Run& r : t.runs) check_index(r.kernel, nk, "run kernel", what);
  for (const MemoryPlan& m : t.memory)
    for (auto [b, s] : m.placed)
      check_index(b, nn, "memory buffer", what), check_index(s, nn, "memory buffer", what);
  for (const Entry& e : t.order) {
    if (e.kind != "rewrite" && e.kind != "kernel")
      throw FormatError("viz", fmt::format("{}: unknown entry kind '{}'", what, e.kind));
    check_index(e.index, e.kind == "kernel" ? nk : nr, "entry", what);
  }
}

}  // namespace

nlohmann::json to_json(const Trace& t) {
  return {{"tinygrad_cpp_viz", kVersion}, {"nodes", t.nodes}, {"rules", t.rules},   {"rewrites", t.rewrites},
          {"kernels", t.kernels},         {"runs", t.runs},   {"memory", t.memory}, {"order", t.order}};
}

Trace trace_from_json(const nlohmann::json& j, std::string_view what) {
  if (!j.is_object() || !j.contains("tinygrad_cpp_viz"))
    throw FormatError("viz",
                      fmt::format("{}: not a VIZ trace (no \"tinygrad_cpp_viz\" version field)", what));
  if (j.at("tinygrad_cpp_viz") != kVersion)
    throw FormatError("viz", fmt::format("{}: trace version {} is not {}", what,
                                         j.at("tinygrad_cpp_viz").dump(), kVersion));
  Trace t;
  try {
    j.at("nodes").get_to(t.nodes), j.at("rules").get_to(t.rules), j.at("rewrites").get_to(t.rewrites);
    j.at("kernels").get_to(t.kernels), j.at("runs").get_to(t.runs), j.at("memory").get_to(t.memory);
    j.at("order").get_to(t.order);
  } catch (const nlohmann::json::exception& e) {
    throw FormatError("viz", fmt::format("{}: malformed trace: {}", what, e.what()));
  }
  validate(t, what);
  return t;
}

Trace parse_trace(std::string_view text, std::string_view what) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw FormatError("viz", fmt::format("{}: not JSON: {}", what, e.what()));
  }
  return trace_from_json(j, what);
}

Trace read_trace(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw FormatError("viz", fmt::format("{}: cannot open the trace file", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_trace(ss.str(), path);
}

void write_trace(const Trace& t, const std::string& path) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << to_json(t).dump();
  if (!out.flush()) throw ValueError("viz", fmt::format("cannot write the trace to {}", path));
}

std::vector<int> subgraph(const Trace& t, int root) {
  std::vector<char> seen(static_cast<size_t>(root) + 1, 0);
  seen[static_cast<size_t>(root)] = 1;
  // Sources have smaller indices than their users, so a descending sweep finds every reachable node.
  std::vector<int> out;
  for (int i = root; i >= 0; i--) {
    if (!seen[static_cast<size_t>(i)]) continue;
    out.push_back(i);
    for (int s : t.nodes[static_cast<size_t>(i)].src) seen[static_cast<size_t>(s)] = 1;
  }
  return {out.rbegin(), out.rend()};
}

}  // namespace tg::viz
