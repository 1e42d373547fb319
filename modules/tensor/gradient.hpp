#pragma once
// Reverse-mode autodiff on tensor-graph UOps (docs/ir-stages.md, stage 1): one gradient rule per op as a
// PatternMatcher, and the reverse walk that applies them. Composite ops (softmax, matmul, losses, conv...)
// are built from these ops, so their gradients come for free.
#include <functional>
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

// A custom-gradient node (as torch.autograd.Function): DETACH(forward) whose arg is a CustomGrad. Later
// stages see a plain DETACH (identity); the reverse walk calls backward(g) instead of differentiating
// forward, and gives its results to inputs (one gradient per input, a null ref for none; every input
// must be in forward's graph, so the walk reaches it after the node). Use it when
// the derived gradient of a composite op would be slow (conv: dx and dw are convs of their own).
using CustomBackward = std::function<std::vector<UOpRef>(const UOpRef& grad)>;
struct CustomGrad final : OpaqueArg {
  std::string name;
  std::vector<UOpRef> inputs;
  CustomBackward backward;
  CustomGrad(std::string n, std::vector<UOpRef> in, CustomBackward b)
      : name(std::move(n)), inputs(std::move(in)), backward(std::move(b)) {}
  uint64_t hash() const override { return std::hash<const void*>{}(this); }
  bool equals(const OpaqueArg& o) const override { return this == &o; }  // each node is its own function
  std::string str() const override { return "custom_grad:" + name; }
};
UOpRef custom_gradient(const UOpRef& forward, std::vector<UOpRef> inputs, CustomBackward backward,
                       std::string name);

// Gradients of root, seeded with root_grad (same shape and dtype), of every node on a path from root to
// a target; DETACH and ASSIGN stop the flow. A target root does not depend on gets no entry.
std::unordered_map<UOpRef, UOpRef> compute_gradient(const UOpRef& root, const UOpRef& root_grad,
                                                    const std::vector<UOpRef>& targets);

}  // namespace tg
