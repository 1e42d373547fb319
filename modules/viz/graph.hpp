#pragma once
// A trace graph drawn as a DAG: graphviz (dot) lays it out and renders SVG on the server.
#include <map>
#include <span>
#include <string>

#include "viz/trace.hpp"

namespace tg::viz {

// How a node is marked in a drawn step of a rewrite.
enum class Mark { none, matched, added };

// The op group a node is coloured by: "alu", "movement", "memory", "loop", "const", "sink" or "other".
std::string_view op_group(std::string_view op);
// The dot text for nodes (indices into t.nodes; edges only between listed nodes). Graphviz's SVG keeps
// each node as <g id="nN" class="node">, so the page and tests can find them.
std::string to_dot(const Trace& t, std::span<const int> nodes, const std::map<int, Mark>& marks = {});
// Lays dot text out with graphviz's dot engine; throws NotSupportedError when graphviz cannot.
std::string render_svg(const std::string& dot);

}  // namespace tg::viz
