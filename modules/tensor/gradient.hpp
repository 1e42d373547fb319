#pragma once
// Reverse-mode autodiff on tensor-graph UOps (docs/ir-stages.md, stage 1): one gradient rule per op as a
// PatternMatcher, and the reverse walk that applies them. Composite ops (softmax, matmul, losses, conv...)
// are built from these ops, so their gradients come for free.
#include <string>
#include <unordered_map>
#include <vector>

#include "uop/pattern.hpp"

namespace tg {

// The context a gradient rule sees: the gradient flowing into the matched node (same shape and dtype).
struct GradientCtx {
  UOpRef grad;
  std::unordered_map<const UOp*, std::string> devices;  // memo for the device a node computes on
};

// Rules match a node and return SINK(gradient of src 0, of src 1, ...), with a NOOP for a source that gets
// none (conditions, integer paths, device names). Use with `pm_gradient().rewrite(node, &ctx)`.
const PatternMatcher& pm_gradient();

// Gradients of root, seeded with root_grad (same shape and dtype), of every node on a path from root to
// a target; DETACH and ASSIGN stop the flow. A target root does not depend on gets no entry.
std::unordered_map<UOpRef, UOpRef> compute_gradient(const UOpRef& root, const UOpRef& root_grad,
                                                    const std::vector<UOpRef>& targets);

}  // namespace tg
