#pragma once
// Reverse-mode autodiff on tensor-graph UOps (docs/ir-stages.md, stage 1): one gradient rule per op as a
// PatternMatcher, and the reverse walk that applies them. Composite ops (softmax, matmul, losses, conv...)
// are built from these ops, so their gradients come for free.
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "tensor/realize.hpp"
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
// Two nodes with the same forward, inputs, name and key are one node: `key` must name every parameter
// backward depends on beyond those (conv's stride and padding), so a step that builds its graph again gets
// the same graph again, and the schedule cache finds it.
using CustomBackward = std::function<std::vector<UOpRef>(const UOpRef& grad)>;
struct CustomGrad final : OpaqueArg {
  std::string name, key;
  std::vector<UOpRef> inputs;
  CustomBackward backward;
  CustomGrad(std::string n, std::string k, std::vector<UOpRef> in, CustomBackward b)
      : name(std::move(n)), key(std::move(k)), inputs(std::move(in)), backward(std::move(b)) {}
  uint64_t hash() const override;
  bool equals(const OpaqueArg& o) const override;
  std::string str() const override { return "custom_grad:" + name; }
};
UOpRef custom_gradient(const UOpRef& forward, std::vector<UOpRef> inputs, CustomBackward backward,
                       std::string name, std::string key = "");

// Realized views (RESHAPE(BUFFER)) and the graphs they were computed by: the walk goes on through them.
using KeptGraphs = std::unordered_map<const UOp*, UOpRef>;

// Every node the walk from root visits, sources before users; a kept view has its graph as a last source.
std::vector<const UOp*> gradient_toposort(const UOpRef& root, const KeptGraphs& kept);

// Gradients of root, seeded with root_grad (same shape and dtype), of every node on a path from root to
// a target; DETACH and ASSIGN stop the flow. A target root does not depend on gets no entry. A kept view
// passes its gradient, stored, to its graph, and the targets' gradients read the view where they would
// recompute its graph.
std::unordered_map<UOpRef, UOpRef> compute_gradient(const UOpRef& root, const UOpRef& root_grad,
                                                    const std::vector<UOpRef>& targets,
                                                    const KeptGraphs& kept = {});

// ---- graphs kept for realized tensors (kept_graph.cpp) ----
// realize() turns a tensor into a view of its buffer. For a tensor computed from one that requires grad,
// the graph it was computed by is kept by that view while any graph still refers to the view, so
// realizing or reading a tensor never changes a gradient. A null graph marks one backward() freed.
void keep_graph(const UOpRef& view, const UOpRef& graph, std::vector<engine::BufferHold> holds);
// The view's values no longer come from its graph: it was assigned, or is a result without history (JIT).
void forget_graph(const UOpRef& view);
UOpRef kept_graph(const UOpRef& view);  // null when none is kept
// The kept graphs a walk from root goes through (transitively), the holds of the buffers they read, and
// the views on the way whose graph was freed.
struct KeptUnder {
  KeptGraphs graphs;
  std::vector<engine::BufferHold> holds;
  std::vector<const UOp*> freed;
};
KeptUnder kept_graphs_under(const UOpRef& root);
// backward() frees the graphs it went through, as PyTorch does without retain_graph.
void free_graphs(const KeptGraphs& used);
size_t kept_graph_count();  // views whose graph is kept now (for tests)

// While alive, every op result that requires grad is realized as it is built (this thread): eager, as in
// PyTorch, to check that gradients do not depend on what was realized.
class RealizeEachOp {
 public:
  RealizeEachOp();
  ~RealizeEachOp();
  RealizeEachOp(const RealizeEachOp&) = delete;
  RealizeEachOp& operator=(const RealizeEachOp&) = delete;
  static bool active();

 private:
  bool prev_;
};

}  // namespace tg
