// The only file that sees protobuf: ONNX's generated classes (libonnx-dev) parse the file, and everything
// is checked and copied into graph.hpp's plain structs before any tensor is made.
#include <fmt/format.h>

#include <limits>

#include "base/error.hpp"
#include "nn/host_bytes.hpp"
#include "nn/host_file.hpp"
#include "onnx/graph.hpp"
// libonnx-dev's classes are built with ONNX_ML (onnx-ml.proto, namespace onnx).
#define ONNX_ML 1
#define ONNX_NAMESPACE onnx
#include "onnx/onnx-data_pb.h"
#include "onnx/onnx_pb.h"

namespace tg::onnx {
namespace {

constexpr std::string_view kOp = "onnx_load";
using Proto = ::onnx::TensorProto;

[[noreturn]] void bad(std::string_view what) { throw FormatError(kOp, what); }

std::vector<std::byte> read_file(const std::filesystem::path& path, uint64_t offset = 0,
                                 std::optional<uint64_t> length = {}) {
  nn::detail::HostFile f(path, kOp);
  if (offset > f.size() || (length && *length > f.size() - offset))
    bad(fmt::format("'{}' has {} bytes; the tensor wants {} at offset {}", path.string(), f.size(),
                    length ? *length : f.size() - offset, offset));
  std::vector<std::byte> out(length ? *length : f.size() - offset);
  if (f.read_at(offset, out) != out.size()) bad(fmt::format("'{}' shrank while it was read", path.string()));
  return out;
}

// Where a tensor's external data is: a relative file below the model's folder, never an absolute path or ../
std::vector<std::byte> external_bytes(const Proto& t, const std::filesystem::path& dir) {
  std::string location;
  uint64_t offset = 0;
  std::optional<uint64_t> length;
  for (const auto& kv : t.external_data()) {
    try {
      if (kv.key() == "location")
        location = kv.value();
      else if (kv.key() == "offset")
        offset = std::stoull(kv.value());
      else if (kv.key() == "length")
        length = std::stoull(kv.value());
    } catch (const std::exception&) {
      bad(fmt::format("tensor '{}': external_data {} '{}' is not a number", t.name(), kv.key(), kv.value()));
    }
  }
  std::filesystem::path rel(location);
  if (location.empty() || rel.is_absolute() || location.find("..") != std::string::npos)
    bad(fmt::format("tensor '{}': external_data location '{}' must be a file beside the model", t.name(),
                    location));
  if (dir.empty())
    bad(fmt::format("tensor '{}' has external data but the model was not read from a file", t.name()));
  return read_file(dir / rel, offset, length);
}

template <typename Field>
void check_count(const Proto& t, const Field& f, int64_t numel, std::string_view field) {
  if (static_cast<int64_t>(f.size()) != numel)
    bad(fmt::format("tensor '{}': {} has {} values for {} elements", t.name(), field, f.size(), numel));
}

template <typename To, typename Field>
std::vector<std::byte> pack(const Field& f) {
  std::vector<std::byte> out(f.size() * sizeof(To));
  for (int i = 0; i < f.size(); i++) {
    To v = static_cast<To>(f.Get(i));
    std::memcpy(out.data() + i * sizeof(To), &v, sizeof(To));
  }
  return out;
}

Tensor to_tensor(const Proto& t, const std::filesystem::path& dir, std::string_view device) {
  Shape shape;
  int64_t numel = 1;
  for (int64_t d : t.dims()) {
    if (d < 0) bad(fmt::format("tensor '{}' has a negative dimension {}", t.name(), d));
    if (d > 0 && numel > std::numeric_limits<int64_t>::max() / 8 / d)
      bad(fmt::format("tensor '{}' is too large", t.name()));
    numel *= d;
    shape.push_back(d);
  }
  int32_t type = t.data_type();
  if (type == Proto::STRING)
    throw NotSupportedError(kOp, fmt::format("tensor '{}': string tensors are not supported", t.name()));
  DType dtype = dtype_from_onnx(type, fmt::format("tensor '{}'", t.name()));
  std::vector<std::byte> bytes;
  if (t.data_location() == Proto::EXTERNAL) {
    bytes = external_bytes(t, dir);
  } else if (t.has_raw_data()) {
    const std::string& raw = t.raw_data();
    bytes.resize(raw.size());
    if (!raw.empty()) std::memcpy(bytes.data(), raw.data(), raw.size());
  } else if (dtype == dtypes::float32) {
    check_count(t, t.float_data(), numel, "float_data");
    bytes = pack<float>(t.float_data());
  } else if (dtype == dtypes::float64) {
    check_count(t, t.double_data(), numel, "double_data");
    bytes = pack<double>(t.double_data());
  } else if (dtype == dtypes::int64) {
    check_count(t, t.int64_data(), numel, "int64_data");
    bytes = pack<int64_t>(t.int64_data());
  } else if (dtype == dtypes::uint32 || dtype == dtypes::uint64) {
    check_count(t, t.uint64_data(), numel, "uint64_data");
    bytes = dtype == dtypes::uint32 ? pack<uint32_t>(t.uint64_data()) : pack<uint64_t>(t.uint64_data());
  } else {  // int32_data carries the narrow types, float16/bfloat16 as their bits
    check_count(t, t.int32_data(), numel, "int32_data");
    size_t isz = dtype.itemsize();
    if (isz == 4)
      bytes = pack<int32_t>(t.int32_data());
    else if (isz == 2)
      bytes = pack<uint16_t>(t.int32_data());
    else
      bytes = pack<uint8_t>(t.int32_data());
  }
  if (bytes.size() != static_cast<size_t>(numel) * dtype.itemsize())
    bad(fmt::format("tensor '{}': {} bytes of data for {} elements of {}", t.name(), bytes.size(), numel,
                    dtype.name()));
  if (dtype == dtypes::bool_)
    for (auto& b : bytes) b = b != std::byte{0} ? std::byte{1} : std::byte{0};
  return nn::detail::tensor_from_bytes(bytes, dtype, shape, device);
}

ValueInfo to_value_info(const ::onnx::ValueInfoProto& v) {
  ValueInfo out;
  out.name = v.name();
  const auto& type = v.type();
  const ::onnx::TypeProto* tensor_type = &type;
  if (type.has_optional_type()) {
    out.is_optional = true;
    tensor_type = &type.optional_type().elem_type();
  }
  if (tensor_type->has_sequence_type()) {
    out.is_sequence = true;
    tensor_type = &tensor_type->sequence_type().elem_type();
  }
  if (tensor_type->has_tensor_type()) {
    const auto& tt = tensor_type->tensor_type();
    out.elem_type = tt.elem_type();
    if (tt.has_shape()) {
      out.has_shape = true;
      for (const auto& d : tt.shape().dim()) {
        if (d.has_dim_value())
          out.dims.emplace_back(static_cast<int64_t>(d.dim_value()));
        else
          out.dims.emplace_back(d.dim_param());
      }
    }
  }
  return out;
}

Graph to_graph(const ::onnx::GraphProto& g, const std::filesystem::path& dir, std::string_view device,
               int depth);

AttrValue to_attr(const ::onnx::AttributeProto& a, const Node& node, const std::filesystem::path& dir,
                  std::string_view device, int depth) {
  using A = ::onnx::AttributeProto;
  if (!a.ref_attr_name().empty())
    throw NotSupportedError(
        kOp, fmt::format("{}: attribute '{}' refers to a function attribute", node.label(), a.name()));
  switch (a.type()) {
    case A::INT:
      return static_cast<int64_t>(a.i());
    case A::FLOAT:
      return static_cast<double>(a.f());
    case A::STRING:
      return a.s();
    case A::TENSOR:
      return to_tensor(a.t(), dir, device);
    case A::GRAPH:
      return std::make_shared<const Graph>(to_graph(a.g(), dir, device, depth + 1));
    case A::INTS:
      return std::vector<int64_t>(a.ints().begin(), a.ints().end());
    case A::FLOATS:
      return std::vector<double>(a.floats().begin(), a.floats().end());
    case A::STRINGS:
      return std::vector<std::string>(a.strings().begin(), a.strings().end());
    case A::TENSORS: {
      std::vector<Tensor> ts;
      for (const auto& t : a.tensors()) ts.push_back(to_tensor(t, dir, device));
      return ts;
    }
    case A::TYPE_PROTO:
      return int64_t{0};  // Optional's declared type: only its presence is read
    default:
      throw NotSupportedError(kOp, fmt::format("{}: attribute '{}' has type {}, which is not supported",
                                               node.label(), a.name(), static_cast<int>(a.type())));
  }
}

Graph to_graph(const ::onnx::GraphProto& g, const std::filesystem::path& dir, std::string_view device,
               int depth) {
  if (depth > 64) bad("sub-graphs are nested more than 64 deep");
  Graph out;
  out.name = g.name();
  for (const auto& t : g.initializer()) {
    if (t.name().empty()) bad(fmt::format("graph '{}' has an initializer without a name", g.name()));
    out.initializers.insert_or_assign(t.name(), to_tensor(t, dir, device));
  }
  if (g.sparse_initializer_size() > 0)
    throw NotSupportedError(kOp, fmt::format("graph '{}': sparse initializers are not supported", g.name()));
  for (const auto& v : g.input())
    if (!out.initializers.contains(v.name())) out.inputs.push_back(to_value_info(v));
  for (const auto& v : g.output()) out.outputs.push_back(to_value_info(v));
  out.nodes.reserve(g.node_size());
  for (const auto& n : g.node()) {
    Node node;
    node.name = n.name();
    node.op_type = n.op_type();
    node.domain = n.domain() == "ai.onnx" ? "" : n.domain();
    node.inputs.assign(n.input().begin(), n.input().end());
    node.outputs.assign(n.output().begin(), n.output().end());
    if (node.op_type.empty()) bad(fmt::format("graph '{}': node '{}' has no op_type", g.name(), n.name()));
    for (const auto& a : n.attribute())
      node.attrs.insert_or_assign(a.name(), to_attr(a, node, dir, device, depth));
    out.nodes.push_back(std::move(node));
  }
  return out;
}

template <typename Msg>
void parse_or_throw(Msg& msg, std::span<const std::byte> bytes, std::string_view what) {
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max()))
    bad(fmt::format("{} is over 2 GiB: keep the weights as external data", what));
  if (!msg.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    bad(fmt::format("{} is not a valid protobuf message (truncated or not ONNX)", what));
}

Value to_value(const ::onnx::SequenceProto& s, std::string_view device);
Value to_value(const ::onnx::OptionalProto& o, std::string_view device) {
  if (o.has_tensor_value()) return to_tensor(o.tensor_value(), {}, device);
  if (o.has_sequence_value()) return to_value(o.sequence_value(), device);
  return std::monostate{};
}
Value to_value(const ::onnx::SequenceProto& s, std::string_view device) {
  Sequence seq;
  for (const auto& t : s.tensor_values()) seq.push_back(to_tensor(t, {}, device));
  if (s.sequence_values_size() > 0 || s.map_values_size() > 0)
    throw NotSupportedError(kOp, "sequences of sequences or maps are not supported");
  return seq;
}

}  // namespace

Model parse_model(std::span<const std::byte> bytes, const std::filesystem::path& dir,
                  std::string_view device) {
  ::onnx::ModelProto m;
  parse_or_throw(m, bytes, "the model");
  if (!m.has_graph()) bad("the model has no graph");
  Model out;
  out.ir_version = m.ir_version();
  out.producer = m.producer_name();
  for (const auto& o : m.opset_import()) out.opsets[o.domain() == "ai.onnx" ? "" : o.domain()] = o.version();
  if (m.functions_size() > 0)
    throw NotSupportedError(kOp, fmt::format("the model defines {} local functions, which are not supported",
                                             m.functions_size()));
  out.graph = to_graph(m.graph(), dir, device, 0);
  return out;
}

Model load_model(const std::filesystem::path& path, std::string_view device) {
  return parse_model(read_file(path), path.parent_path().empty() ? "." : path.parent_path(), device);
}

Tensor parse_tensor(std::span<const std::byte> bytes, std::string_view device) {
  Proto t;
  parse_or_throw(t, bytes, "the tensor");
  return to_tensor(t, {}, device);
}

Value parse_value(std::span<const std::byte> bytes, const ValueInfo& info, std::string_view device) {
  if (info.is_optional) {
    ::onnx::OptionalProto o;
    parse_or_throw(o, bytes, fmt::format("the value of '{}'", info.name));
    return to_value(o, device);
  }
  if (info.is_sequence) {
    ::onnx::SequenceProto s;
    parse_or_throw(s, bytes, fmt::format("the value of '{}'", info.name));
    return to_value(s, device);
  }
  return parse_tensor(bytes, device);
}

}  // namespace tg::onnx
