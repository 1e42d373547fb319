// Trace graph -> dot -> SVG with graphviz's libgvc (layout by the dot engine, never by hand).
#include "viz/graph.hpp"

#include <graphviz/gvc.h>

#include <array>
#include <mutex>

#include <fmt/format.h>

#include "base/error.hpp"
#include "uop/ops.hpp"

namespace tg::viz {

namespace {

// Labels are one line per field; long args are cut so a node stays readable.
std::string escape(std::string_view s, size_t max = 48) {
  std::string out;
  for (char c : s.substr(0, max)) {
    if (c == '"' || c == '\\') out += '\\';
    out += c == '\n' ? ' ' : c;
  }
  if (s.size() > max) out += "...";
  return out;
}

std::string_view short_dtype(std::string_view d) { return d.starts_with("dtypes.") ? d.substr(7) : d; }

std::string_view color(std::string_view group) {
  if (group == "alu") return "#ffe9a8";
  if (group == "movement") return "#f6c3a0";
  if (group == "memory") return "#a9d3f5";
  if (group == "loop") return "#cdbff5";
  if (group == "const") return "#e3e3e3";
  if (group == "sink") return "#b9e6b0";
  return "#ffffff";
}

}  // namespace

std::string_view op_group(std::string_view op) {
  static const std::array<std::pair<OpSet, std::string_view>, 6> groups = {{
      {group::ALU | OpSet{Ops::CAST, Ops::BITCAST, Ops::POW, Ops::THREEFRY, Ops::WMMA}, "alu"},
      {group::Movement, "movement"},
      {OpSet{Ops::BUFFER, Ops::BUFFER_VIEW, Ops::DEFINE_GLOBAL, Ops::DEFINE_LOCAL, Ops::DEFINE_REG,
             Ops::INDEX, Ops::LOAD, Ops::STORE, Ops::COPY, Ops::ASSIGN, Ops::CONTIGUOUS, Ops::AFTER},
       "memory"},
      {OpSet{Ops::RANGE, Ops::END, Ops::REDUCE, Ops::REDUCE_AXIS, Ops::SPECIAL, Ops::BARRIER, Ops::IF,
             Ops::ENDIF},
       "loop"},
      {OpSet{Ops::CONST, Ops::DEFINE_VAR, Ops::BIND, Ops::UNIQUE, Ops::DEVICE}, "const"},
      {OpSet{Ops::SINK, Ops::NOOP, Ops::KERNEL}, "sink"},
  }};
  for (int i = 0; i < kOpsCount; i++) {
    if (op_name(static_cast<Ops>(i)) != op) continue;
    for (const auto& [set, name] : groups)
      if (set.contains(static_cast<Ops>(i))) return name;
  }
  return "other";
}

std::string to_dot(const Trace& t, std::span<const int> nodes, const std::map<int, Mark>& marks) {
  std::string dot =
      "digraph G {\n  node [shape=box style=\"rounded,filled\" fontname=\"Helvetica\" fontsize=10 "
      "margin=\"0.08,0.03\" height=0.3];\n  edge [color=\"#777777\" arrowsize=0.6];\n";
  std::vector<char> listed(t.nodes.size(), 0);
  for (int i : nodes) listed[static_cast<size_t>(i)] = 1;
  for (int i : nodes) {
    const Node& n = t.nodes[static_cast<size_t>(i)];
    std::string_view g = op_group(n.op);
    std::string label = escape(n.op) + "\\n" + escape(short_dtype(n.dtype));
    if (!n.arg.empty() && n.arg != "None") label += "\\n" + escape(n.arg);
    auto m = marks.find(i);
    std::string extra;
    if (m != marks.end() && m->second == Mark::matched) extra = " color=\"#d62728\" penwidth=3";
    if (m != marks.end() && m->second == Mark::added) extra = " color=\"#2ca02c\" penwidth=3";
    dot +=
        fmt::format("  n{0} [id=\"n{0}\" label=\"{1}\" fillcolor=\"{2}\"{3}];\n", i, label, color(g), extra);
  }
  for (int i : nodes)
    for (int s : t.nodes[static_cast<size_t>(i)].src)
      if (listed[static_cast<size_t>(s)]) dot += fmt::format("  n{} -> n{};\n", s, i);
  return dot + "}\n";
}

std::string render_svg(const std::string& dot) {
  // libgvc keeps global state: one layout at a time, one context for the process.
  static std::mutex mu;
  std::lock_guard lock(mu);
  static GVC_t* gvc = gvContext();
  Agraph_t* g = agmemread(dot.c_str());
  if (g == nullptr) throw ValueError("viz", "graphviz could not read the generated dot text");
  if (gvLayout(gvc, g, "dot") != 0) {
    agclose(g);
    throw NotSupportedError("viz",
                            "graphviz has no 'dot' layout engine (is libgvc's plugin config installed?)");
  }
  char* data = nullptr;
  unsigned int len = 0;
  int rc = gvRenderData(gvc, g, "svg", &data, &len);
  std::string svg = rc == 0 && data ? std::string(data, len) : std::string();
  if (data) gvFreeRenderData(data);
  gvFreeLayout(gvc, g);
  agclose(g);
  if (rc != 0) throw NotSupportedError("viz", "graphviz could not render SVG");
  return svg;
}

}  // namespace tg::viz
