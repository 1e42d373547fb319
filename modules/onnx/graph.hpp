#pragma once
// An ONNX model as plain values: the protobuf is read once (proto.cpp) into these structs, so the operators
// and the runner never see protobuf types. Tensors (initializers, Constant values, tensor attributes) are
// tg::Tensors holding the file's data on the default device.
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "tensor/tensor.hpp"

namespace tg::onnx {

struct Graph;

// A value flowing between nodes: absent (an omitted optional input), a tensor, or a sequence of tensors.
using Sequence = std::vector<Tensor>;
using Value = std::variant<std::monostate, Tensor, Sequence>;

using AttrValue =
    std::variant<int64_t, double, std::string, Tensor, std::shared_ptr<const Graph>, std::vector<int64_t>,
                 std::vector<double>, std::vector<std::string>, std::vector<Tensor>>;

// A small tensor whose elements are known on the host without running a kernel: an initializer, a Constant,
// a Shape or Size, or what an operator computes from such values alone (the runner folds those, runner.cpp).
// Integer and bool elements are in ints, float ones in floats.
struct HostValue {
  DType dtype;
  Shape shape;
  std::vector<int64_t> ints;
  std::vector<double> floats;
  size_t size() const { return dtype.is_float() ? floats.size() : ints.size(); }
};

struct Node {
  std::string name, op_type, domain;  // domain "" is ai.onnx
  std::vector<std::string> inputs;    // "" marks an omitted optional input
  std::vector<std::string> outputs;   // "" marks an unused optional output
  std::map<std::string, AttrValue, std::less<>> attrs;
  std::string label() const;  // "node 'name' (OpType)" for error messages
};

// A graph input or output: its element type (ONNX TensorProto.DataType, 0 when unknown) and dims, each a
// size or a named dynamic axis ("" for an unnamed unknown one).
struct ValueInfo {
  using Dim = std::variant<int64_t, std::string>;
  std::string name;
  int32_t elem_type = 0;
  bool has_shape = false;
  std::vector<Dim> dims;
  bool is_sequence = false;
  bool is_optional = false;
};

struct Graph {
  std::string name;
  std::vector<Node> nodes;  // in file order; the runner sorts them and checks for cycles
  std::map<std::string, Tensor, std::less<>> initializers;
  std::vector<ValueInfo> inputs, outputs;  // inputs exclude names that are initializers
};

struct Model {
  int64_t ir_version = 0;
  std::map<std::string, int64_t, std::less<>> opsets;  // domain ("" for ai.onnx) -> version
  std::string producer;
  Graph graph;
  int64_t opset() const;  // the ai.onnx version
};

// Reads a .onnx file; external data is read from files beside it. Malformed files are FormatErrors.
Model load_model(const std::filesystem::path& path, std::string_view device = {});
Model parse_model(std::span<const std::byte> bytes, const std::filesystem::path& dir = {},
                  std::string_view device = {});
// A serialized TensorProto (the .pb files of ONNX's test data) as a tensor.
Tensor parse_tensor(std::span<const std::byte> bytes, std::string_view device = {});
// A serialized TensorProto, SequenceProto or OptionalProto, as info (a graph input or output) says.
Value parse_value(std::span<const std::byte> bytes, const ValueInfo& info, std::string_view device = {});

// The tg dtype of an ONNX TensorProto.DataType; NotSupportedError naming the type for the others.
DType dtype_from_onnx(int32_t elem_type, std::string_view what);
int32_t dtype_to_onnx(DType dtype);
std::string onnx_type_name(int32_t elem_type);

}  // namespace tg::onnx
