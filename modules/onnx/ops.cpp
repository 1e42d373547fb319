// OpContext: a node's inputs and attributes as the operator tables read them, with errors naming the node.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.hpp"
#include "onnx/ops.hpp"

namespace tg::onnx {
namespace {

std::string_view kind_name(const AttrValue& v) {
  constexpr std::string_view names[] = {"int",  "float",  "string",  "tensor", "graph",
                                        "ints", "floats", "strings", "tensors"};
  return names[v.index()];
}

}  // namespace

void OpContext::fail(std::string_view what) const {
  throw ValueError("onnx", fmt::format("{}: {}", node_.label(), what));
}

void OpContext::unsupported(std::string_view what) const {
  throw NotSupportedError("onnx", fmt::format("{}: {}", node_.label(), what));
}

bool OpContext::has(size_t i) const {
  return i < inputs_.size() && !std::holds_alternative<std::monostate>(inputs_[i]);
}

const Value& OpContext::value(size_t i) const {
  static const Value absent;
  return i < inputs_.size() ? inputs_[i] : absent;
}

const Tensor& OpContext::in(size_t i) const {
  if (!has(i)) fail(fmt::format("input {} is required", i));
  const Tensor* t = std::get_if<Tensor>(&inputs_[i]);
  if (!t) fail(fmt::format("input {} is a sequence where a tensor is needed", i));
  return *t;
}

std::optional<Tensor> OpContext::opt(size_t i) const {
  if (!has(i)) return std::nullopt;
  return in(i);
}

const Sequence& OpContext::seq(size_t i) const {
  if (!has(i)) fail(fmt::format("input {} is required", i));
  const Sequence* s = std::get_if<Sequence>(&inputs_[i]);
  if (!s) fail(fmt::format("input {} is a tensor where a sequence is needed", i));
  return *s;
}

std::vector<int64_t> OpContext::ints(size_t i) const {
  const Tensor& t = in(i);
  if (!t.dtype().is_int() && t.dtype() != dtypes::bool_)
    fail(fmt::format("input {} must hold integers, not {}", i, t.dtype().name()));
  if (t.ndim() > 1) fail(fmt::format("input {} must be a scalar or 1-d, not {}-d", i, t.ndim()));
  if (const HostValue* k = known(i)) return k->ints;
  return t.to_vector<int64_t>();
}

std::vector<double> OpContext::floats(size_t i) const {
  const Tensor& t = in(i);
  if (t.ndim() > 1) fail(fmt::format("input {} must be a scalar or 1-d, not {}-d", i, t.ndim()));
  if (const HostValue* k = known(i))
    return k->dtype.is_float() ? k->floats : std::vector<double>(k->ints.begin(), k->ints.end());
  return t.to_vector<double>();
}

std::vector<Tensor> OpContext::variadic(size_t from) const {
  std::vector<Tensor> out;
  for (size_t i = from; i < inputs_.size(); i++)
    if (has(i)) out.push_back(in(i));
  return out;
}

bool OpContext::has_attr(std::string_view name) const { return node_.attrs.find(name) != node_.attrs.end(); }

namespace {
template <typename T>
T attr_as(const OpContext& c, std::string_view name, const std::optional<T>& fallback) {
  auto it = c.node().attrs.find(name);
  if (it == c.node().attrs.end()) {
    if (fallback) return *fallback;
    c.fail(fmt::format("attribute '{}' is required", name));
  }
  if (const T* v = std::get_if<T>(&it->second)) return *v;
  // An empty list or a single value where a list is wanted are both common in exporters' output.
  if constexpr (std::is_same_v<T, std::vector<int64_t>>)
    if (const int64_t* v = std::get_if<int64_t>(&it->second)) return {*v};
  if constexpr (std::is_same_v<T, std::vector<double>>) {
    if (const double* v = std::get_if<double>(&it->second)) return {*v};
    if (const auto* v = std::get_if<std::vector<int64_t>>(&it->second)) return T(v->begin(), v->end());
  }
  if constexpr (std::is_same_v<T, double>)
    if (const int64_t* v = std::get_if<int64_t>(&it->second)) return static_cast<double>(*v);
  c.fail(fmt::format("attribute '{}' is a {}", name, kind_name(it->second)));
}
}  // namespace

int64_t OpContext::attr_int(std::string_view name, std::optional<int64_t> fallback) const {
  return attr_as(*this, name, fallback);
}
double OpContext::attr_float(std::string_view name, std::optional<double> fallback) const {
  return attr_as(*this, name, fallback);
}
std::string OpContext::attr_str(std::string_view name, std::optional<std::string> fallback) const {
  return attr_as(*this, name, fallback);
}
std::vector<int64_t> OpContext::attr_ints(std::string_view name,
                                          std::optional<std::vector<int64_t>> fallback) const {
  return attr_as(*this, name, fallback);
}
std::vector<double> OpContext::attr_floats(std::string_view name,
                                           std::optional<std::vector<double>> fallback) const {
  return attr_as(*this, name, fallback);
}
std::vector<std::string> OpContext::attr_strs(std::string_view name,
                                              std::optional<std::vector<std::string>> fallback) const {
  return attr_as(*this, name, fallback);
}
Tensor OpContext::attr_tensor(std::string_view name) const {
  return attr_as<Tensor>(*this, name, std::nullopt);
}
const Graph& OpContext::attr_graph(std::string_view name) const {
  auto g = attr_as<std::shared_ptr<const Graph>>(*this, name, std::nullopt);
  return *g;  // the node's attribute map owns the graph
}

int normalize_axis(const OpContext& c, int64_t axis, int64_t ndim) {
  int64_t a = axis < 0 ? axis + ndim : axis;
  if (a < 0 || a >= std::max<int64_t>(ndim, 1))
    c.fail(fmt::format("axis {} is out of range for {} dimensions", axis, ndim));
  return static_cast<int>(a);
}

std::vector<int> normalize_axes(const OpContext& c, const std::vector<int64_t>& axes, int64_t ndim) {
  std::vector<int> out;
  for (int64_t a : axes) {
    int n = normalize_axis(c, a, ndim);
    if (std::find(out.begin(), out.end(), n) != out.end()) c.fail(fmt::format("axis {} is repeated", a));
    out.push_back(n);
  }
  return out;
}

std::vector<int64_t> ints_or(const OpContext& c, std::string_view name, size_t n, int64_t fill) {
  std::vector<int64_t> v = c.attr_ints(name, std::vector<int64_t>(n, fill));
  if (v.size() != n) c.fail(fmt::format("{} has {} values for {} spatial axes", name, v.size(), n));
  return v;
}

// Spatial (begin, end) padding: explicit pads or auto_pad's SAME_UPPER/SAME_LOWER/VALID.
std::vector<std::pair<int64_t, int64_t>> spatial_pads(const OpContext& c, const Tensor& x,
                                                      const std::vector<int64_t>& kernel,
                                                      const std::vector<int64_t>& stride,
                                                      const std::vector<int64_t>& dilation) {
  size_t n = kernel.size();
  std::string auto_pad = c.attr_str("auto_pad", "NOTSET");
  std::vector<std::pair<int64_t, int64_t>> out(n, {0, 0});
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (size_t i = 0; i < n; i++) {
      int64_t in = static_cast<int64_t>(x.shape()[i + 2]);
      int64_t want = (in + stride[i] - 1) / stride[i];
      int64_t total = std::max<int64_t>(0, (want - 1) * stride[i] + (kernel[i] - 1) * dilation[i] + 1 - in);
      int64_t small = total / 2;
      out[i] = auto_pad == "SAME_UPPER" ? std::pair{small, total - small} : std::pair{total - small, small};
    }
  } else if (auto_pad == "NOTSET") {
    std::vector<int64_t> pads = ints_or(c, "pads", 2 * n, 0);
    for (size_t i = 0; i < n; i++) out[i] = {pads[i], pads[i + n]};
  } else if (auto_pad != "VALID") {
    c.fail(fmt::format("auto_pad '{}' is not NOTSET, SAME_UPPER, SAME_LOWER or VALID", auto_pad));
  }
  return out;
}

Tensor int64_tensor(const std::vector<int64_t>& v, std::string_view device) {
  return Tensor(v, Shape{static_cast<int64_t>(v.size())}, dtypes::int64, device);
}

const OpTable& op_table() {
  static const OpTable table = [] {
    OpTable t;
    add_elementwise_ops(t);
    add_reduce_ops(t);
    add_shape_ops(t);
    add_nn_ops(t);
    add_control_ops(t);
    add_loss_ops(t);
    add_resize_ops(t);
    return t;
  }();
  return table;
}

}  // namespace tg::onnx
