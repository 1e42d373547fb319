#pragma once
// The IR checker ("spec"): which nodes may appear in a tensor graph and in a kernel graph, written as
// rule tables in the same language as every other pass. Stages call these in debug builds and tests.
#include "uop/pattern.hpp"

namespace tg {

// Throws tg::ValueError "[spec] <pass>: <rule that failed> at <node str>" on the first invalid node.
void verify_tensor_graph(const UOpRef& root);
void verify_kernel_graph(const UOpRef& root);

// The rule tables: a rule returns spec_ok() to accept a node, spec_fail(why) to reject it, or nullptr to
// leave it to the next rule; a node no rule accepts is rejected. Extend them with `+`.
const PatternMatcher& tensor_spec();
const PatternMatcher& kernel_spec();
UOpRef spec_ok();
UOpRef spec_fail(std::string_view why);
// Checks every node under root against pm; `pass` names the graph in the error.
void verify_graph(const UOpRef& root, const PatternMatcher& pm, std::string_view pass);

// True when stages should verify their output: debug builds (no NDEBUG) or SPEC=1.
bool spec_enabled();

}  // namespace tg
