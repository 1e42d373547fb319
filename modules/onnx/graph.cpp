// Graph values that need no protobuf: labels, the opset, and the mapping of ONNX element types to dtypes.
#include <fmt/format.h>

#include "base/error.hpp"
#include "onnx/graph.hpp"

namespace tg::onnx {
namespace {

struct TypeName {
  int32_t id;
  std::string_view name;
  std::optional<DType> dtype;
};
// TensorProto.DataType, in its numbering.
constexpr TypeName kTypes[] = {
    {1, "FLOAT", dtypes::float32},
    {2, "UINT8", dtypes::uint8},
    {3, "INT8", dtypes::int8},
    {4, "UINT16", dtypes::uint16},
    {5, "INT16", dtypes::int16},
    {6, "INT32", dtypes::int32},
    {7, "INT64", dtypes::int64},
    {8, "STRING", {}},
    {9, "BOOL", dtypes::bool_},
    {10, "FLOAT16", dtypes::float16},
    {11, "DOUBLE", dtypes::float64},
    {12, "UINT32", dtypes::uint32},
    {13, "UINT64", dtypes::uint64},
    {14, "COMPLEX64", {}},
    {15, "COMPLEX128", {}},
    {16, "BFLOAT16", dtypes::bfloat16},
    {17, "FLOAT8E4M3FN", {}},
    {18, "FLOAT8E4M3FNUZ", {}},
    {19, "FLOAT8E5M2", {}},
    {20, "FLOAT8E5M2FNUZ", {}},
    {21, "UINT4", {}},
    {22, "INT4", {}},
    {23, "FLOAT4E2M1", {}},
};

}  // namespace

std::string Node::label() const {
  std::string_view op = op_type;
  return domain.empty() ? fmt::format("node '{}' ({})", name, op)
                        : fmt::format("node '{}' ({}:{})", name, domain, op);
}

int64_t Model::opset() const {
  auto it = opsets.find("");
  return it == opsets.end() ? 1 : it->second;
}

std::string onnx_type_name(int32_t elem_type) {
  for (const auto& t : kTypes)
    if (t.id == elem_type) return std::string(t.name);
  return fmt::format("type {}", elem_type);
}

DType dtype_from_onnx(int32_t elem_type, std::string_view what) {
  for (const auto& t : kTypes)
    if (t.id == elem_type) {
      if (t.dtype) return *t.dtype;
      throw NotSupportedError("onnx", fmt::format("{}: element type {} is not supported", what, t.name));
    }
  throw FormatError("onnx", fmt::format("{}: element type {} is not an ONNX type", what, elem_type));
}

int32_t dtype_to_onnx(DType dtype) {
  for (const auto& t : kTypes)
    if (t.dtype && *t.dtype == dtype.scalar_type()) return t.id;
  throw DTypeError("onnx", fmt::format("{} has no ONNX element type", dtype.name()));
}

}  // namespace tg::onnx
