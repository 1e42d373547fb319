#pragma once
// The operator table: each ONNX operator is a function from an OpContext (the node, its input values, its
// attributes, the model's opset) to its output values, built from Tensor ops only (no kernels of its own).
// The tables live in ops_*.cpp by family; op_table() joins them.
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "onnx/graph.hpp"

namespace tg::onnx {

class OpContext;
using OpFn = std::function<std::vector<Value>(const OpContext&)>;
using OpTable = std::map<std::string, OpFn, std::less<>>;

// Runs a sub-graph (If, Loop, Scan bodies): the values of the enclosing scopes stay visible by name.
using GraphRunner = std::function<std::vector<Value>(const Graph&, const std::vector<Value>& inputs)>;
// The runner's store of tensors prepared once from constants (OpContext::kept): by key, made on a miss.
using KeepFn = std::function<Tensor(const std::string& key, const std::function<Tensor()>& make)>;

class OpContext {
 public:
  // known: per input, its elements when the runner knows them on the host (null otherwise, or shorter);
  // constant: per input, whether it follows from initializers alone; keep: the runner's store for kept().
  OpContext(const Node& node, int64_t opset, std::vector<Value> inputs, GraphRunner run_graph,
            std::string device, std::vector<const HostValue*> known = {}, std::vector<bool> constant = {},
            KeepFn keep = {})
      : node_(node),
        opset_(opset),
        inputs_(std::move(inputs)),
        run_graph_(std::move(run_graph)),
        device_(std::move(device)),
        known_(std::move(known)),
        constant_(std::move(constant)),
        keep_(std::move(keep)) {}

  const Node& node() const { return node_; }
  int64_t opset() const { return opset_; }
  const std::string& device() const { return device_; }

  // ---- inputs ----
  size_t num_inputs() const { return inputs_.size(); }
  bool has(size_t i) const;                    // present (not omitted, not past the end)
  const Tensor& in(size_t i) const;            // a required tensor input; fail() when missing
  std::optional<Tensor> opt(size_t i) const;   // an optional tensor input
  const Sequence& seq(size_t i) const;         // a sequence input
  const Value& value(size_t i) const;          // anything (Identity, Optional ops)
  // A small integer input on the host (shape, axes) and a small float one (scales): from the runner's
  // known values when it has them, else read from the device (which a JIT capture refuses).
  std::vector<int64_t> ints(size_t i) const;
  std::vector<double> floats(size_t i) const;
  const HostValue* known(size_t i) const { return i < known_.size() ? known_[i] : nullptr; }
  // Whether input i is the same on every call: it follows from initializers and Constants alone.
  bool constant(size_t i) const { return i < constant_.size() && constant_[i]; }
  // A tensor made once from constants and kept by the runner for this node and key across calls (a weight
  // packed for matmul); without a runner's store, make() on every call.
  Tensor kept(const std::string& key, const std::function<Tensor()>& make) const {
    return keep_ ? keep_(key, make) : make();
  }
  std::vector<Tensor> variadic(size_t from = 0) const;  // every present tensor input from `from` on

  // ---- attributes (fail() when one has the wrong kind) ----
  bool has_attr(std::string_view name) const;
  int64_t attr_int(std::string_view name, std::optional<int64_t> fallback = {}) const;
  double attr_float(std::string_view name, std::optional<double> fallback = {}) const;
  std::string attr_str(std::string_view name, std::optional<std::string> fallback = {}) const;
  std::vector<int64_t> attr_ints(std::string_view name,
                                 std::optional<std::vector<int64_t>> fallback = {}) const;
  std::vector<double> attr_floats(std::string_view name,
                                  std::optional<std::vector<double>> fallback = {}) const;
  std::vector<std::string> attr_strs(std::string_view name,
                                     std::optional<std::vector<std::string>> fallback = {}) const;
  Tensor attr_tensor(std::string_view name) const;
  const Graph& attr_graph(std::string_view name) const;

  std::vector<Value> run_graph(const Graph& g, const std::vector<Value>& inputs) const {
    return run_graph_(g, inputs);
  }
  // NotSupportedError or ValueError "[onnx] node 'name' (Op): what".
  [[noreturn]] void unsupported(std::string_view what) const;
  [[noreturn]] void fail(std::string_view what) const;

 private:
  const Node& node_;
  int64_t opset_;
  std::vector<Value> inputs_;
  GraphRunner run_graph_;
  std::string device_;
  std::vector<const HostValue*> known_;
  std::vector<bool> constant_;
  KeepFn keep_;
};

// Every operator of the default domain (ai.onnx) and the few com.microsoft ones transformer exports use,
// keyed "OpType" or "domain:OpType".
const OpTable& op_table();

// The family tables (ops_*.cpp).
void add_elementwise_ops(OpTable& t);  // math, logic, comparison, activations, Cast
void add_reduce_ops(OpTable& t);       // Reduce*, ArgMax/Min, CumSum, TopK, Softmax family, Hardmax
void add_shape_ops(OpTable& t);    // Reshape, Transpose, Slice, Concat, Split, Pad, Gather*, Scatter*, ...
void add_nn_ops(OpTable& t);       // Conv*, pools, norms, Gemm, MatMul, Resize, Einsum, Attention, ...
void add_control_ops(OpTable& t);  // Constant*, Identity, If, Loop, Sequence*, Optional*, Shape, Size
void add_loss_ops(OpTable& t);  // NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss, (De)QuantizeLinear, ...
void add_resize_ops(OpTable& t);  // Resize, Upsample, GridSample, AffineGrid

// Helpers the tables share.
inline int64_t dim(const Tensor& t, int i) { return static_cast<int64_t>(t.shape()[i]); }  // i >= 0
int normalize_axis(const OpContext& c, int64_t axis,
                   int64_t ndim);  // negative axes; fail() when out of range
std::vector<int> normalize_axes(const OpContext& c, const std::vector<int64_t>& axes, int64_t ndim);
Tensor int64_tensor(const std::vector<int64_t>& v, std::string_view device);  // 1-d int64
// An ints attribute with one value per spatial axis (fill when absent): strides, dilations, pads (2n).
std::vector<int64_t> ints_or(const OpContext& c, std::string_view name, size_t n, int64_t fill);
// Conv and pool padding per spatial axis as (begin, end): explicit pads or auto_pad's SAME_*/VALID.
std::vector<std::pair<int64_t, int64_t>> spatial_pads(const OpContext& c, const Tensor& x,
                                                      const std::vector<int64_t>& kernel,
                                                      const std::vector<int64_t>& stride,
                                                      const std::vector<int64_t>& dilation);

}  // namespace tg::onnx
