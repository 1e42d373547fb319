#pragma once
// Runs an ONNX graph: every node becomes Tensor ops (ops.hpp's table), so the whole graph is one lazy
// tensor graph that the scheduler fuses into kernels; outputs are realized when read.
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "onnx/graph.hpp"

namespace tg::onnx {

namespace detail {
struct Folds;
}  // namespace detail

class Runner {
 public:
  // Checks the model before anything runs: every operator it uses is supported (the missing ones are
  // reported together, by name), every node input has a producer, and the graph has no cycle.
  explicit Runner(Model model, std::string device = {});
  static Runner load(const std::filesystem::path& path, std::string device = {});

  const Model& model() const { return model_; }
  const std::vector<ValueInfo>& inputs() const { return model_.graph.inputs; }
  const std::vector<ValueInfo>& outputs() const { return model_.graph.outputs; }
  const std::string& device() const { return device_; }

  // feeds: one value per graph input, by name (inputs with an initializer may be left out). Each is
  // checked against the input's element type and shape; a named dynamic axis takes the size it is first
  // given and must agree wherever else it appears. Returns the graph outputs, lazy.
  // Small values that follow from initializers, constants and shapes alone (the shape arithmetic of
  // Reshape, Slice, Expand, ...) are computed once on the host and remembered by their inputs, so a later
  // call with the same input shapes builds a graph of only the data-dependent work and reads nothing back:
  // such a call can be captured by tg::jit when no operator needs the data itself on the host.
  std::map<std::string, Value> run(const std::map<std::string, Value>& feeds) const;

  // The operators of a model (sub-graphs included) that op_table() lacks, with how many nodes use each.
  static std::map<std::string, int> unsupported_ops(const Model& model);

 private:
  Model model_;
  std::string device_;
  std::shared_ptr<detail::Folds> folds_;  // runner.cpp: the values folded on the host, by node and inputs
};

// "FLOAT (1,3,'batch',224)" for messages.
std::string describe(const ValueInfo& info);

}  // namespace tg::onnx
