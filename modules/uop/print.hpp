#pragma once
// Text output of UOp graphs: a readable tree, a numbered list (for linearized kernels), and C++ source
// that rebuilds a graph (the counterpart of tinygrad's pyrender, for bug reports and tests).
#include <span>
#include <string>

#include "uop/uop.hpp"

namespace tg {

// One node per line, children indented under their user. A node used more than once is printed once as
// "x3:=UOp(...)" and referred to as "x3" afterwards.
std::string print_tree(const UOpRef& root);

// One line per node: index, op, dtype, source indices (constants inline) and arg, as DEBUG shows a
// linearized kernel. Sources not in the list print as "--".
std::string print_uops(std::span<const UOp* const> uops);

// C++ statements that rebuild root with the builders and operators (`UOpRef c2 = (c0 + c1) * 4;` ...),
// the last one assigning `ast`. Nodes used once are inlined, constants always; the code expects
// `using namespace tg;`. OpaqueArg payloads cannot be rebuilt and render as a commented placeholder.
std::string render_cpp(const UOpRef& root);

// The C++ expression for a dtype ("dtypes::float32.vec(4)") and for an arg ("AxisArg{0, AxisType::LOOP}").
std::string render_cpp(DType d);
std::string render_cpp(const Arg& a);

}  // namespace tg
