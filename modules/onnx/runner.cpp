// Graph checks (unsupported operators, missing producers, cycles) and evaluation with nested scopes.
#include "onnx/runner.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <mutex>
#include <set>

#include "base/error.hpp"
#include "onnx/ops.hpp"
#include "tensor/realize.hpp"

namespace tg::onnx {
namespace {

using Names = std::set<std::string, std::less<>>;

std::string op_key(const Node& n) { return n.domain.empty() ? n.op_type : n.domain + ":" + n.op_type; }

template <typename F>
void for_each_subgraph(const Node& n, F&& f) {
  for (const auto& [name, v] : n.attrs)
    if (const auto* g = std::get_if<std::shared_ptr<const Graph>>(&v)) f(name, **g);
}

// Names a graph reads from enclosing scopes: used by its nodes (or theirs) but defined nowhere inside.
void outer_names(const Graph& g, Names& out) {
  Names defined;
  for (const auto& [name, t] : g.initializers) defined.insert(name);
  for (const auto& v : g.inputs) defined.insert(v.name);
  for (const auto& n : g.nodes)
    for (const auto& o : n.outputs) defined.insert(o);
  Names used;
  for (const auto& n : g.nodes) {
    for (const auto& i : n.inputs) used.insert(i);
    for_each_subgraph(n, [&](const std::string&, const Graph& sub) { outer_names(sub, used); });
  }
  for (const auto& o : g.outputs) used.insert(o.name);
  for (const auto& u : used)
    if (!u.empty() && !defined.contains(u)) out.insert(u);
}

// Sorts g's nodes so each comes after its producers (sub-graphs too), checking that every name read has
// a producer and that there is no cycle.
void prepare(Graph& g, const Names& outer) {
  Names known = outer;
  for (const auto& [name, t] : g.initializers) known.insert(name);
  for (const auto& v : g.inputs) known.insert(v.name);
  std::map<std::string, size_t, std::less<>> producer;
  for (size_t i = 0; i < g.nodes.size(); i++)
    for (const auto& o : g.nodes[i].outputs) {
      if (o.empty()) continue;
      if (producer.contains(o) || known.contains(o))
        throw FormatError("onnx", fmt::format("graph '{}': '{}' is defined twice (again by {})", g.name, o,
                                              g.nodes[i].label()));
      producer[o] = i;
    }
  size_t n = g.nodes.size();
  std::vector<std::vector<size_t>> users(n);
  std::vector<size_t> waiting(n, 0);
  for (size_t i = 0; i < n; i++) {
    Names reads(g.nodes[i].inputs.begin(), g.nodes[i].inputs.end());
    for_each_subgraph(g.nodes[i], [&](const std::string&, const Graph& sub) { outer_names(sub, reads); });
    for (const auto& r : reads) {
      if (r.empty()) continue;
      if (auto it = producer.find(r); it != producer.end()) {
        users[it->second].push_back(i);
        waiting[i]++;
      } else if (!known.contains(r)) {
        throw FormatError("onnx", fmt::format("graph '{}': {} reads '{}', which no node, graph input or "
                                              "initializer defines",
                                              g.name, g.nodes[i].label(), r));
      }
    }
  }
  std::vector<size_t> order, ready;
  for (size_t i = n; i-- > 0;)
    if (waiting[i] == 0) ready.push_back(i);
  while (!ready.empty()) {
    size_t i = ready.back();
    ready.pop_back();
    order.push_back(i);
    for (size_t u : users[i])
      if (--waiting[u] == 0) ready.push_back(u);
  }
  if (order.size() != n) {
    for (size_t i = 0; i < n; i++)
      if (waiting[i] > 0)
        throw FormatError("onnx",
                          fmt::format("graph '{}' has a cycle through {}", g.name, g.nodes[i].label()));
  }
  for (const auto& o : g.outputs)
    if (!producer.contains(o.name) && !known.contains(o.name))
      throw FormatError("onnx", fmt::format("graph '{}': output '{}' is defined by no node", g.name, o.name));
  std::vector<Node> sorted;
  sorted.reserve(n);
  for (size_t i : order) sorted.push_back(std::move(g.nodes[i]));
  g.nodes = std::move(sorted);
  // Sub-graphs see everything defined in this graph (ONNX's lexical scoping).
  Names inner = known;
  for (const auto& [name, i] : producer) inner.insert(name);
  for (auto& node : g.nodes)
    for (auto& [name, v] : node.attrs)
      if (auto* sub = std::get_if<std::shared_ptr<const Graph>>(&v)) {
        auto copy = std::make_shared<Graph>(**sub);
        prepare(*copy, inner);
        v = std::shared_ptr<const Graph>(std::move(copy));
      }
}

void count_unsupported(const Graph& g, std::map<std::string, int>& out) {
  const OpTable& table = op_table();
  for (const auto& n : g.nodes) {
    if (!table.contains(op_key(n))) out[op_key(n)]++;
    for_each_subgraph(n, [&](const std::string&, const Graph& sub) { count_unsupported(sub, out); });
  }
}

struct Scope {
  const Scope* parent = nullptr;
  std::map<std::string, Value, std::less<>> values;
  std::map<std::string, HostValue, std::less<>> known;  // the values of `values` known on the host
  Names constants;  // the names of `values` that follow from initializers and Constants alone
  const Value* find(std::string_view name) const {
    for (const Scope* s = this; s; s = s->parent)
      if (auto it = s->values.find(name); it != s->values.end()) return &it->second;
    return nullptr;
  }
  bool is_constant(std::string_view name) const {
    for (const Scope* s = this; s; s = s->parent)
      if (s->values.contains(name)) return s->constants.contains(name);
    return false;
  }
  const HostValue* find_known(std::string_view name) const {
    for (const Scope* s = this; s; s = s->parent)
      if (s->values.contains(name)) {
        auto it = s->known.find(name);
        return it == s->known.end() ? nullptr : &it->second;
      }
    return nullptr;
  }
};

// ---- values folded on the host ----
constexpr int64_t kKnownMax = 1024;  // elements: shapes, axes, scales and other index arithmetic

bool concrete(const Shape& shape) {
  return std::all_of(shape.begin(), shape.end(), [](const sint& d) { return d.is_number(); });
}

// t's elements when it is small enough to be worth knowing on the host (this reads the device).
std::optional<HostValue> read_small(const Tensor& t) {
  DType d = t.dtype();
  bool fp8 = d.is_float() && d.itemsize() == 1;
  if (!(d.is_int() || d.is_bool() || d.is_float()) || fp8 || !concrete(t.shape())) return std::nullopt;
  if (static_cast<int64_t>(t.numel()) > kKnownMax) return std::nullopt;
  HostValue h{d, t.shape(), {}, {}};
  if (d.is_float())
    h.floats = t.to_vector<double>();
  else
    h.ints = t.to_vector<int64_t>();
  return h;
}

Tensor tensor_of(const HostValue& h, const std::string& device) {
  if (h.size() == 0) return Tensor::zeros(h.shape, h.dtype, device);
  Shape flat{static_cast<int64_t>(h.size())};
  Tensor t = h.dtype.is_float() ? Tensor(h.floats, flat, h.dtype, device) : Tensor(h.ints, flat, h.dtype, device);
  return t.reshape(h.shape);
}

void append_shape(std::string& key, const Shape& shape) {
  for (const sint& d : shape) fmt::format_to(std::back_inserter(key), "{},", static_cast<int64_t>(d));
}

void append_value(std::string& key, const HostValue& h) {
  fmt::format_to(std::back_inserter(key), "{}(", h.dtype.name());
  append_shape(key, h.shape);
  if (h.dtype.is_float())
    fmt::format_to(std::back_inserter(key), "){}|", fmt::join(h.floats, ","));
  else
    fmt::format_to(std::back_inserter(key), "){}|", fmt::join(h.ints, ","));
}

// Whether a node's outputs follow from its inputs alone (no randomness, no sub-graph).
bool foldable(const Node& n) {
  static const Names random{"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
                            "Bernoulli",    "Multinomial",   "Dropout"};
  if (random.contains(n.op_type)) return false;
  bool sub = false;
  for_each_subgraph(n, [&](const std::string&, const Graph&) { sub = true; });
  return !sub;
}

}  // namespace

namespace detail {
// What the runner has computed on the host, kept across calls: outputs by node and known inputs, and the
// small initializers by graph and name. Entries for other input shapes accumulate; a model with shapes
// that never repeat is capped by clearing.
struct Folds {
  struct Output {
    Tensor tensor;
    HostValue host;
  };
  std::mutex mu;
  std::map<std::string, std::vector<Output>, std::less<>> nodes;
  std::map<std::string, std::optional<HostValue>, std::less<>> inits;
  std::map<std::string, Tensor, std::less<>> kept;  // OpContext::kept, by node and key
};
}  // namespace detail

namespace {

using detail::Folds;

std::vector<Value> eval(const Graph& g, const std::vector<std::pair<std::string, Value>>& bound,
                        const Scope* parent, int64_t opset, const std::string& device, Folds& folds) {
  Scope scope{parent, {}, {}, {}};
  for (const auto& [name, t] : g.initializers) {
    scope.values[name] = t;
    scope.constants.insert(name);
    std::string key = fmt::format("{}/{}", static_cast<const void*>(&g), name);
    std::optional<HostValue> h;
    bool seen = false;
    {
      std::lock_guard lock(folds.mu);
      if (auto it = folds.inits.find(key); it != folds.inits.end()) {
        seen = true;
        h = it->second;
      }
    }
    if (!seen) {
      h = read_small(t);
      std::lock_guard lock(folds.mu);
      folds.inits[key] = h;
    }
    if (h) scope.known[name] = std::move(*h);
  }
  for (const auto& [name, v] : bound) {
    scope.values[name] = v;
    scope.known.erase(name);  // a feed overriding an initializer
    scope.constants.erase(name);
  }
  const OpTable& table = op_table();
  GraphRunner run_sub = [&](const Graph& sub, const std::vector<Value>& inputs) {
    if (inputs.size() > sub.inputs.size())
      throw ValueError("onnx", fmt::format("sub-graph '{}' takes {} inputs, not {}", sub.name,
                                           sub.inputs.size(), inputs.size()));
    std::vector<std::pair<std::string, Value>> b;
    for (size_t i = 0; i < inputs.size(); i++) b.emplace_back(sub.inputs[i].name, inputs[i]);
    return eval(sub, b, &scope, opset, device, folds);
  };
  for (const Node& node : g.nodes) {
    std::vector<Value> inputs;
    std::vector<const HostValue*> known;
    std::vector<bool> constant;
    inputs.reserve(node.inputs.size());
    bool all_known = true, all_constant = true;
    for (const auto& name : node.inputs) {
      if (name.empty()) {
        inputs.emplace_back();
        known.push_back(nullptr);
        constant.push_back(false);
        continue;
      }
      const Value* v = scope.find(name);
      if (!v) throw ValueError("onnx", fmt::format("{}: input '{}' has no value", node.label(), name));
      inputs.push_back(*v);
      known.push_back(scope.find_known(name));
      constant.push_back(scope.is_constant(name));
      all_known = all_known && known.back();
      all_constant = all_constant && constant.back();
    }
    if (all_constant && foldable(node))
      for (const auto& o : node.outputs)
        if (!o.empty()) scope.constants.insert(o);
    auto fn = table.find(op_key(node));
    if (fn == table.end())
      throw NotSupportedError("onnx",
                              fmt::format("{}: operator {} is not supported", node.label(), op_key(node)));
    // Shape and Size need only their input's shape; any other foldable node needs every input known.
    const Tensor* first = inputs.empty() ? nullptr : std::get_if<Tensor>(&inputs[0]);
    bool shape_only = (node.op_type == "Shape" || node.op_type == "Size") && node.domain.empty() && first &&
                      concrete(first->shape());
    std::string key;
    if ((all_known || shape_only) && foldable(node)) {
      key = fmt::format("{}:", static_cast<const void*>(&node));
      if (shape_only)
        append_shape(key, first->shape());
      else
        for (const HostValue* k : known)
          if (k) append_value(key, *k);
          else key += "-|";
      std::lock_guard lock(folds.mu);
      if (auto it = folds.nodes.find(key); it != folds.nodes.end()) {
        for (size_t i = 0; i < node.outputs.size() && i < it->second.size(); i++) {
          if (node.outputs[i].empty()) continue;
          scope.values[node.outputs[i]] = it->second[i].tensor;
          scope.known[node.outputs[i]] = it->second[i].host;
        }
        continue;
      }
    }
    KeepFn keep = [&folds, &node](const std::string& what, const std::function<Tensor()>& make) {
      std::string k = fmt::format("{}:{}", static_cast<const void*>(&node), what);
      {
        std::lock_guard lock(folds.mu);
        if (auto it = folds.kept.find(k); it != folds.kept.end()) return it->second;
      }
      Tensor t = make();
      std::lock_guard lock(folds.mu);
      return folds.kept.emplace(std::move(k), std::move(t)).first->second;
    };
    OpContext ctx(node, opset, std::move(inputs), run_sub, device, known, std::move(constant), std::move(keep));
    std::vector<Value> outs = fn->second(ctx);
    for (size_t i = 0; i < node.outputs.size(); i++) {
      if (node.outputs[i].empty()) continue;
      if (i >= outs.size())
        throw NotSupportedError(
            "onnx", fmt::format("{}: output {} ('{}') is not computed", node.label(), i, node.outputs[i]));
    }
    if (!key.empty()) {
      // Folded when every output is a small tensor: computed now, then a host constant for later calls.
      std::vector<Folds::Output> folded;
      for (const Value& o : outs) {
        const Tensor* t = std::get_if<Tensor>(&o);
        std::optional<HostValue> h = t ? read_small(*t) : std::nullopt;
        if (!h) break;
        folded.push_back({tensor_of(*h, device), std::move(*h)});
      }
      if (folded.size() == outs.size()) {
        for (size_t i = 0; i < node.outputs.size(); i++) {
          if (node.outputs[i].empty()) continue;
          outs[i] = folded[i].tensor;
          scope.known[node.outputs[i]] = folded[i].host;
        }
        std::lock_guard lock(folds.mu);
        if (folds.nodes.size() > 100000) folds.nodes.clear();
        folds.nodes.emplace(std::move(key), std::move(folded));
      }
    }
    for (size_t i = 0; i < node.outputs.size(); i++)
      if (!node.outputs[i].empty()) scope.values[node.outputs[i]] = std::move(outs[i]);
  }
  std::vector<Value> out;
  for (const auto& o : g.outputs) {
    const Value* v = scope.find(o.name);
    if (!v) throw ValueError("onnx", fmt::format("graph '{}': output '{}' has no value", g.name, o.name));
    out.push_back(*v);
  }
  return out;
}

std::string dims_str(const Shape& s) {
  std::vector<std::string> parts;
  for (const auto& d : s) parts.push_back(fmt::format("{}", static_cast<int64_t>(d)));
  return fmt::format("({})", fmt::join(parts, ","));
}

void check_feed(const ValueInfo& info, const Value& v, std::map<std::string, int64_t>& named) {
  auto mismatch = [&](std::string_view got) {
    throw ValueError("onnx", fmt::format("input '{}': expected {}, got {}", info.name, describe(info), got));
  };
  if (info.is_sequence) {
    if (!std::holds_alternative<Sequence>(v)) mismatch("a tensor");
    return;
  }
  const Tensor* t = std::get_if<Tensor>(&v);
  if (!t) {
    if (info.is_optional && std::holds_alternative<std::monostate>(v)) return;
    mismatch(std::holds_alternative<Sequence>(v) ? "a sequence" : "no value");
  }
  std::string got = fmt::format("{} {}", onnx_type_name(dtype_to_onnx(t->dtype())), dims_str(t->shape()));
  if (info.elem_type != 0 && dtype_to_onnx(t->dtype()) != info.elem_type) mismatch(got);
  if (!info.has_shape) return;
  if (t->ndim() != static_cast<int>(info.dims.size())) mismatch(got);
  for (size_t i = 0; i < info.dims.size(); i++) {
    int64_t size = static_cast<int64_t>(t->shape()[i]);
    if (const int64_t* d = std::get_if<int64_t>(&info.dims[i])) {
      if (*d > 0 && *d != size) mismatch(got);
    } else if (const std::string& name = std::get<std::string>(info.dims[i]); !name.empty()) {
      auto [it, fresh] = named.emplace(name, size);
      if (!fresh && it->second != size)
        throw ValueError("onnx", fmt::format("input '{}': axis '{}' is {} here but {} in an earlier input",
                                             info.name, name, size, it->second));
    }
  }
}

}  // namespace

std::string describe(const ValueInfo& info) {
  std::string type = info.elem_type ? onnx_type_name(info.elem_type) : "tensor";
  if (info.is_sequence) type = "sequence of " + type;
  if (!info.has_shape) return type;
  std::vector<std::string> dims;
  for (const auto& d : info.dims)
    dims.push_back(std::holds_alternative<int64_t>(d) ? fmt::format("{}", std::get<int64_t>(d))
                                                      : fmt::format("'{}'", std::get<std::string>(d)));
  return fmt::format("{} ({})", type, fmt::join(dims, ","));
}

Runner::Runner(Model model, std::string device)
    : model_(std::move(model)),
      device_(device.empty() ? engine::default_device_name() : engine::canonical_device(device)),
      folds_(std::make_shared<detail::Folds>()) {
  std::map<std::string, int> missing = unsupported_ops(model_);
  if (!missing.empty()) {
    std::vector<std::string> parts;
    for (const auto& [op, n] : missing)
      parts.push_back(fmt::format("{} ({} node{})", op, n, n == 1 ? "" : "s"));
    throw NotSupportedError("onnx",
                            fmt::format("the model uses {} unsupported operator{}: {}", missing.size(),
                                        missing.size() == 1 ? "" : "s", fmt::join(parts, ", ")));
  }
  for (const auto& [domain, version] : model_.opsets)
    if (!domain.empty() && domain != "com.microsoft" && domain != "ai.onnx.ml")
      throw NotSupportedError("onnx", fmt::format("operator set '{}' is not supported", domain));
  prepare(model_.graph, {});
}

Runner Runner::load(const std::filesystem::path& path, std::string device) {
  return Runner(load_model(path, device), device);
}

std::map<std::string, int> Runner::unsupported_ops(const Model& model) {
  std::map<std::string, int> out;
  count_unsupported(model.graph, out);
  return out;
}

std::map<std::string, Value> Runner::run(const std::map<std::string, Value>& feeds) const {
  const Graph& g = model_.graph;
  std::map<std::string, int64_t> named;
  std::vector<std::pair<std::string, Value>> bound;
  for (const auto& info : g.inputs) {
    auto it = feeds.find(info.name);
    if (it == feeds.end()) {
      if (info.is_optional) {
        bound.emplace_back(info.name, std::monostate{});
        continue;
      }
      throw ValueError("onnx", fmt::format("input '{}' ({}) is not given", info.name, describe(info)));
    }
    check_feed(info, it->second, named);
    Value v = it->second;
    if (auto* t = std::get_if<Tensor>(&v); t && t->device() != device_) *t = t->to(device_);
    bound.emplace_back(info.name, std::move(v));
  }
  for (const auto& feed : feeds) {
    const auto& [name, v] = feed;
    bool is_input = std::any_of(g.inputs.begin(), g.inputs.end(),
                                [&](const ValueInfo& i) { return i.name == feed.first; });
    if (is_input) continue;
    auto init = g.initializers.find(name);
    if (init == g.initializers.end())
      throw ValueError("onnx", fmt::format("'{}' is not an input of the model", name));
    const Tensor* t = std::get_if<Tensor>(&v);
    if (!t || t->dtype() != init->second.dtype() || t->shape() != init->second.shape())
      throw ValueError("onnx", fmt::format("'{}' overrides an initializer of {} {}", name,
                                           init->second.dtype().name(), dims_str(init->second.shape())));
    bound.emplace_back(name, v);
  }
  std::vector<Value> outs = eval(g, bound, nullptr, model_.opset(), device_, *folds_);
  std::map<std::string, Value> result;
  for (size_t i = 0; i < g.outputs.size(); i++) result[g.outputs[i].name] = std::move(outs[i]);
  return result;
}

}  // namespace tg::onnx
