// Constants, shapes, control flow (If, Loop, Scan), sequences, optionals and the random and dropout ops.
// Control flow reads its conditions and trip counts on the host: a branch or an iteration count decides
// which graph gets built, so it cannot stay lazy.
#include <fmt/format.h>

#include <algorithm>

#include "onnx/ops.hpp"

namespace tg::onnx {
namespace {

Tensor on_device(const OpContext& c, const Tensor& t) {
  return t.device() == c.device() ? t : t.to(c.device());
}

Tensor int64_scalar(const OpContext& c, int64_t v) { return Tensor(v, dtypes::int64, c.device()); }

int64_t scalar_int(const OpContext& c, size_t i, std::string_view what) {
  std::vector<int64_t> v = c.ints(i);
  if (v.size() != 1) c.fail(fmt::format("{} must hold one value, not {}", what, v.size()));
  return v[0];
}

bool scalar_bool(const OpContext& c, const Value& v, std::string_view what, const HostValue* known = nullptr) {
  const Tensor* t = std::get_if<Tensor>(&v);
  if (!t || t->numel() != 1) c.fail(fmt::format("{} must be a tensor of one element", what));
  if (known) return known->dtype.is_float() ? known->floats[0] != 0 : known->ints[0] != 0;
  return t->to_vector<bool>()[0];
}

// ---- constants and shapes ----
std::vector<Value> constant(const OpContext& c) {
  if (c.has_attr("value")) return {on_device(c, c.attr_tensor("value"))};
  if (c.has_attr("value_float")) return {Tensor(c.attr_float("value_float"), dtypes::float32, c.device())};
  if (c.has_attr("value_floats")) {
    std::vector<double> v = c.attr_floats("value_floats");
    return {Tensor(v, {}, dtypes::float32, c.device())};
  }
  if (c.has_attr("value_int")) return {int64_scalar(c, c.attr_int("value_int"))};
  if (c.has_attr("value_ints")) return {int64_tensor(c.attr_ints("value_ints"), c.device())};
  if (c.has_attr("value_string") || c.has_attr("value_strings"))
    c.unsupported("string constants are not supported: tensors hold numbers only");
  if (c.has_attr("sparse_value")) c.unsupported("sparse constants are not supported");
  c.fail("has no value attribute");
}

std::vector<Value> constant_of_shape(const OpContext& c) {
  std::vector<int64_t> dims = c.ints(0);
  Tensor value =
      c.has_attr("value") ? on_device(c, c.attr_tensor("value")) : Tensor(0.0, dtypes::float32, c.device());
  if (value.numel() != 1) c.fail("value must hold one element");
  for (int64_t d : dims)
    if (d < 0) c.fail(fmt::format("shape has a negative size {}", d));
  return {value.reshape({}).expand(Shape(dims.begin(), dims.end())).contiguous()};
}

std::vector<Value> shape_of(const OpContext& c) {
  const Tensor& x = c.in(0);
  int64_t n = x.ndim();
  auto clamp = [n](int64_t i) { return std::clamp(i < 0 ? i + n : i, int64_t{0}, n); };
  int64_t start = clamp(c.attr_int("start", 0)), end = clamp(c.attr_int("end", n));
  std::vector<Tensor> sizes;
  bool symbolic = false;
  std::vector<int64_t> dims;
  for (int64_t i = start; i < end; i++) {
    const sint& d = x.shape()[i];
    symbolic = symbolic || !d.is_number();
    sizes.push_back(Tensor::from_size(d, dtypes::int64, c.device()));
    if (d.is_number()) dims.push_back(static_cast<int64_t>(d));
  }
  // a symbolic size stays a variable, so the shape follows its binding
  return {symbolic ? Tensor::stack(sizes) : int64_tensor(dims, c.device())};
}

std::vector<Value> range(const OpContext& c) {
  DType dtype = c.in(0).dtype();
  if (dtype.is_int())
    return {Tensor::arange(scalar_int(c, 0, "start"), scalar_int(c, 1, "limit"), scalar_int(c, 2, "delta"),
                           dtype, c.device())};
  auto one = [&](size_t i) {
    std::vector<double> v = c.floats(i);
    if (v.size() != 1) c.fail(fmt::format("input {} must hold one value", i));
    return v[0];
  };
  double start = one(0), limit = one(1), delta = one(2);
  if (delta == 0) c.fail("delta must not be zero");
  return {Tensor::arange(start, limit, delta, dtype, c.device())};
}

std::vector<Value> eye_like(const OpContext& c) {
  const Tensor& x = c.in(0);
  if (x.ndim() != 2) c.fail(fmt::format("needs a 2-d input, not {}-d", x.ndim()));
  DType dtype = c.has_attr("dtype")
                    ? dtype_from_onnx(static_cast<int32_t>(c.attr_int("dtype")), c.node().label())
                    : x.dtype();
  int64_t rows = static_cast<int64_t>(x.shape()[0]), cols = static_cast<int64_t>(x.shape()[1]);
  Tensor r = Tensor::arange(rows, dtypes::int64, c.device()).reshape({rows, 1}) + c.attr_int("k", 0);
  return {r.eq(Tensor::arange(cols, dtypes::int64, c.device()).reshape({1, cols})).cast(dtype)};
}

// ---- control flow ----
// Loop and Scan realize their state each iteration: an unrolled chain of lazy iterations would grow the
// graph (and the time to schedule it) with every step.
void realize_values(const std::vector<Value>& values) {
  std::vector<Tensor> ts;
  for (const Value& v : values) {
    if (const Tensor* t = std::get_if<Tensor>(&v)) ts.push_back(*t);
    if (const Sequence* s = std::get_if<Sequence>(&v)) ts.insert(ts.end(), s->begin(), s->end());
  }
  Tensor::realize_all(std::move(ts));
}

std::vector<Value> if_op(const OpContext& c) {
  bool cond = scalar_bool(c, c.value(0), "cond", c.known(0));
  return c.run_graph(c.attr_graph(cond ? "then_branch" : "else_branch"), {});
}

// A scan output of a loop that ran zero times: no iteration told its shape, so it comes from the body's
// declared output (unknown sizes as 0).
Tensor empty_scan(const OpContext& c, const ValueInfo& info) {
  DType dtype = info.elem_type ? dtype_from_onnx(info.elem_type, c.node().label()) : dtypes::float32;
  Shape shape{0};
  for (const auto& d : info.dims)
    shape.push_back(std::holds_alternative<int64_t>(d) ? std::get<int64_t>(d) : 0);
  return Tensor::zeros(shape, dtype, c.device());
}

std::vector<Value> loop(const OpContext& c) {
  const Graph& body = c.attr_graph("body");
  std::optional<int64_t> trip;
  if (c.has(0)) trip = scalar_int(c, 0, "M");
  bool cond = c.has(1) ? scalar_bool(c, c.value(1), "cond", c.known(1)) : true;
  std::vector<Value> carried;
  for (size_t i = 2; i < c.num_inputs(); i++) carried.push_back(c.value(i));
  size_t n = carried.size();
  if (body.outputs.size() < 1 + n)
    c.fail(fmt::format("the body has {} outputs for {} loop-carried values", body.outputs.size(), n));
  size_t k = body.outputs.size() - 1 - n;
  std::vector<std::vector<Tensor>> scans(k);
  for (int64_t i = 0; cond && (!trip || i < *trip); i++) {
    std::vector<Value> in{int64_scalar(c, i), Tensor(cond, dtypes::bool_, c.device())};
    in.insert(in.end(), carried.begin(), carried.end());
    std::vector<Value> out = c.run_graph(body, in);
    for (size_t j = 0; j < n; j++) carried[j] = out[1 + j];
    for (size_t j = 0; j < k; j++) {
      const Tensor* t = std::get_if<Tensor>(&out[1 + n + j]);
      if (!t) c.fail(fmt::format("scan output {} of the body is not a tensor", j));
      scans[j].push_back(*t);
    }
    std::vector<Value> state = carried;
    for (const auto& s : scans) state.emplace_back(s.back());
    state.push_back(out[0]);
    realize_values(state);
    cond = scalar_bool(c, out[0], "the body's cond output");
  }
  std::vector<Value> result = carried;
  for (size_t j = 0; j < k; j++)
    result.emplace_back(scans[j].empty() ? empty_scan(c, body.outputs[1 + n + j]) : Tensor::stack(scans[j]));
  return result;
}

// A Scan body run once per step of xs (each iterated along axis 0): the final states, then the scan outputs
// stacked on a new axis 0.
std::vector<Value> scan_steps(const OpContext& c, const Graph& body, std::vector<Value> state,
                              const std::vector<Tensor>& xs) {
  size_t n = state.size();
  if (body.outputs.size() < n) c.fail("the body has fewer outputs than state values");
  size_t k = body.outputs.size() - n;
  std::optional<int64_t> steps;
  for (const Tensor& x : xs) {
    auto len = static_cast<int64_t>(x.shape()[0]);
    if (steps && *steps != len) c.fail("scan inputs have different lengths");
    steps = len;
  }
  std::vector<std::vector<Tensor>> outs(k);
  for (int64_t i = 0; i < steps.value_or(0); i++) {
    std::vector<Value> in = state;
    for (const Tensor& x : xs) in.emplace_back(x[i]);
    std::vector<Value> out = c.run_graph(body, in);
    for (size_t j = 0; j < n; j++) state[j] = out[j];
    for (size_t j = 0; j < k; j++) {
      const Tensor* t = std::get_if<Tensor>(&out[n + j]);
      if (!t) c.fail(fmt::format("scan output {} of the body is not a tensor", j));
      outs[j].push_back(*t);
    }
    std::vector<Value> live = state;
    for (const auto& o : outs) live.emplace_back(o.back());
    realize_values(live);
  }
  for (size_t j = 0; j < k; j++) {
    if (outs[j].empty()) c.unsupported("a Scan of length zero has scan outputs of unknown shape");
    state.emplace_back(Tensor::stack(outs[j]));
  }
  return state;
}

std::vector<int64_t> per_input(const OpContext& c, std::string_view name, size_t count) {
  std::vector<int64_t> v = c.attr_ints(name, std::vector<int64_t>(count, 0));
  if (v.size() != count) c.fail(fmt::format("{} must have {} entries", name, count));
  return v;
}

// Scan before opset 9: an optional sequence_lens input, then states and scan inputs that all carry a batch
// axis 0; the scan axis is 1.
std::vector<Value> scan_batched(const OpContext& c, const Graph& body, size_t m) {
  size_t n = c.num_inputs() - 1 - m;
  std::vector<int64_t> dirs = per_input(c, "directions", m);
  auto batch = static_cast<int64_t>(c.in(1).shape()[0]);
  if (c.has(0))
    for (int64_t len : c.ints(0))
      if (len != static_cast<int64_t>(c.in(1 + n).shape()[1]))
        c.unsupported("sequence_lens shorter than the scan axis are not supported");
  std::vector<std::vector<Tensor>> results;
  for (int64_t b = 0; b < batch; b++) {
    std::vector<Value> state;
    for (size_t j = 0; j < n; j++) state.emplace_back(c.in(1 + j)[b]);
    std::vector<Tensor> xs;
    for (size_t j = 0; j < m; j++) xs.push_back(dirs[j] ? c.in(1 + n + j)[b].flip({0}) : c.in(1 + n + j)[b]);
    std::vector<Value> out = scan_steps(c, body, state, xs);
    results.resize(out.size());
    for (size_t j = 0; j < out.size(); j++) results[j].push_back(std::get<Tensor>(out[j]));
  }
  std::vector<Value> out;
  for (auto& r : results) out.emplace_back(Tensor::stack(r));
  return out;
}

// Scan: N state values, then M scan inputs sliced along their axes each iteration.
std::vector<Value> scan(const OpContext& c) {
  const Graph& body = c.attr_graph("body");
  auto m = static_cast<size_t>(c.attr_int("num_scan_inputs"));
  if (m > c.num_inputs()) c.fail("num_scan_inputs is larger than the number of inputs");
  if (c.opset() < 9) return scan_batched(c, body, m);
  size_t n = c.num_inputs() - m;
  size_t k = body.outputs.size() > n ? body.outputs.size() - n : 0;
  std::vector<int64_t> in_axes = per_input(c, "scan_input_axes", m),
                       in_dirs = per_input(c, "scan_input_directions", m);
  std::vector<int64_t> out_axes = per_input(c, "scan_output_axes", k),
                       out_dirs = per_input(c, "scan_output_directions", k);
  std::vector<Tensor> xs;
  for (size_t j = 0; j < m; j++) {
    Tensor x = c.in(n + j);
    x = x.transpose(0, normalize_axis(c, in_axes[j], x.ndim()));  // iterate over axis 0
    xs.push_back(in_dirs[j] ? x.flip({0}) : x);
  }
  std::vector<Value> state;
  for (size_t j = 0; j < n; j++) state.push_back(c.value(j));
  std::vector<Value> result = scan_steps(c, body, state, xs);
  for (size_t j = 0; j < k; j++) {
    Tensor y = std::get<Tensor>(result[n + j]);
    if (out_dirs[j]) y = y.flip({0});
    int a = normalize_axis(c, out_axes[j], y.ndim());
    std::vector<int> order;  // move axis 0 to a, keeping the others in order
    for (int d = 1; d < y.ndim(); d++) order.push_back(d);
    order.insert(order.begin() + a, 0);
    result[n + j] = y.permute(order);
  }
  return result;
}

void add_graph_ops(OpTable& t) {
  t["Constant"] = constant;
  t["ConstantOfShape"] = constant_of_shape;
  t["Shape"] = shape_of;
  t["Size"] = [](const OpContext& c) -> std::vector<Value> {
    return {Tensor::from_size(c.in(0).numel(), dtypes::int64, c.device())};
  };
  t["Identity"] = [](const OpContext& c) -> std::vector<Value> { return {c.value(0)}; };
  t["Range"] = range;
  t["EyeLike"] = eye_like;
  t["If"] = if_op;
  t["Loop"] = loop;
  t["Scan"] = scan;
}

// ---- sequences and optionals ----
// A position in a sequence of n: negative counts from the end; insertion may also name n.
size_t seq_position(const OpContext& c, size_t i, size_t n, bool insert) {
  int64_t p = scalar_int(c, i, "position"), size = static_cast<int64_t>(n);
  int64_t q = p < 0 ? p + size : p;
  if (q < 0 || q > size || (q == size && !insert))
    c.fail(fmt::format("position {} is out of range for a sequence of {}", p, n));
  return static_cast<size_t>(q);
}

std::vector<Value> split_to_sequence(const OpContext& c) {
  const Tensor& x = c.in(0);
  int axis = normalize_axis(c, c.attr_int("axis", 0), x.ndim());
  if (!c.has(1)) {
    Sequence parts = x.split(1, axis);
    if (!c.attr_int("keepdims", 1))
      for (Tensor& p : parts) p = p.squeeze(axis);
    return {parts};
  }
  std::vector<int64_t> split = c.ints(1);
  if (c.in(1).ndim() == 0) {
    if (split[0] <= 0) c.fail("split must be positive");
    return {Sequence(x.split(split[0], axis))};
  }
  int64_t total = 0;
  for (int64_t s : split) total += s;
  if (total != static_cast<int64_t>(x.shape()[axis]))
    c.fail(fmt::format("split sizes add up to {}, not the axis size {}", total,
                       static_cast<int64_t>(x.shape()[axis])));
  return {Sequence(x.split(Shape(split.begin(), split.end()), axis))};
}

// SequenceMap: the body runs once per element; sequence inputs give their i-th element, tensors themselves.
std::vector<Value> sequence_map(const OpContext& c) {
  const Graph& body = c.attr_graph("body");
  size_t len = c.seq(0).size();
  std::vector<Sequence> outs(body.outputs.size());
  for (size_t i = 0; i < len; i++) {
    std::vector<Value> in;
    for (size_t j = 0; j < c.num_inputs(); j++) {
      if (const Sequence* s = std::get_if<Sequence>(&c.value(j))) {
        if (s->size() != len) c.fail("input sequences have different lengths");
        in.emplace_back((*s)[i]);
      } else {
        in.push_back(c.value(j));
      }
    }
    std::vector<Value> out = c.run_graph(body, in);
    for (size_t j = 0; j < outs.size(); j++) outs[j].push_back(std::get<Tensor>(out[j]));
  }
  return std::vector<Value>(outs.begin(), outs.end());
}

void add_sequence_ops(OpTable& t) {
  t["SequenceConstruct"] = [](const OpContext& c) -> std::vector<Value> { return {Sequence(c.variadic())}; };
  t["SequenceEmpty"] = [](const OpContext&) -> std::vector<Value> { return {Sequence{}}; };
  t["SequenceLength"] = [](const OpContext& c) -> std::vector<Value> {
    return {int64_scalar(c, static_cast<int64_t>(c.seq(0).size()))};
  };
  t["SequenceAt"] = [](const OpContext& c) -> std::vector<Value> {
    const Sequence& s = c.seq(0);
    return {s[seq_position(c, 1, s.size(), false)]};
  };
  t["SequenceInsert"] = [](const OpContext& c) -> std::vector<Value> {
    Sequence s = c.seq(0);
    size_t at = c.has(2) ? seq_position(c, 2, s.size(), true) : s.size();
    s.insert(s.begin() + static_cast<std::ptrdiff_t>(at), c.in(1));
    return {s};
  };
  t["SequenceErase"] = [](const OpContext& c) -> std::vector<Value> {
    Sequence s = c.seq(0);
    if (s.empty()) c.fail("the sequence is empty");
    size_t at = c.has(1) ? seq_position(c, 1, s.size(), false) : s.size() - 1;
    s.erase(s.begin() + static_cast<std::ptrdiff_t>(at));
    return {s};
  };
  t["ConcatFromSequence"] = [](const OpContext& c) -> std::vector<Value> {
    const Sequence& s = c.seq(0);
    if (s.empty()) c.fail("the sequence is empty");
    bool new_axis = c.attr_int("new_axis", 0) != 0;
    int axis = normalize_axis(c, c.attr_int("axis"), s[0].ndim() + (new_axis ? 1 : 0));
    return {new_axis ? Tensor::stack(s, axis) : Tensor::cat(s, axis)};
  };
  t["SplitToSequence"] = split_to_sequence;
  t["SequenceMap"] = sequence_map;
  t["Optional"] = [](const OpContext& c) -> std::vector<Value> { return {c.value(0)}; };
  t["OptionalHasElement"] = [](const OpContext& c) -> std::vector<Value> {
    return {Tensor(c.has(0), dtypes::bool_, c.device())};
  };
  t["OptionalGetElement"] = [](const OpContext& c) -> std::vector<Value> {
    if (!c.has(0)) c.fail("the optional is empty");
    return {c.value(0)};
  };
}

// ---- random and dropout: tg's counter-based generator, so values differ from other runtimes' ----
DType random_dtype(const OpContext& c, DType fallback) {
  return c.has_attr("dtype") ? dtype_from_onnx(static_cast<int32_t>(c.attr_int("dtype")), c.node().label())
                             : fallback;
}

Shape attr_shape(const OpContext& c) {
  std::vector<int64_t> s = c.attr_ints("shape");
  return Shape(s.begin(), s.end());
}

std::vector<Value> dropout(const OpContext& c) {
  const Tensor& x = c.in(0);
  double ratio = c.opset() < 12 ? c.attr_float("ratio", 0.5) : c.has(1) ? c.floats(1).at(0) : 0.5;
  bool training = c.opset() >= 12 && c.has(2) && scalar_bool(c, c.value(2), "training_mode");
  if (!training || ratio == 0) return {x, x.ones_like(dtypes::bool_)};
  if (ratio >= 1) return {x.zeros_like(), x.zeros_like(dtypes::bool_)};
  Tensor mask = x.rand_like(dtypes::float32).ge(ratio);
  return {(x * mask / (1 - ratio)).cast(x.dtype()), mask};
}

void add_random_ops(OpTable& t) {
  t["RandomNormal"] = [](const OpContext& c) -> std::vector<Value> {
    return {Tensor::normal(attr_shape(c), c.attr_float("mean", 0.0), c.attr_float("scale", 1.0),
                           random_dtype(c, dtypes::float32), c.device())};
  };
  t["RandomUniform"] = [](const OpContext& c) -> std::vector<Value> {
    return {Tensor::uniform(attr_shape(c), c.attr_float("low", 0.0), c.attr_float("high", 1.0),
                            random_dtype(c, dtypes::float32), c.device())};
  };
  t["RandomNormalLike"] = [](const OpContext& c) -> std::vector<Value> {
    const Tensor& x = c.in(0);
    return {Tensor::normal(x.shape(), c.attr_float("mean", 0.0), c.attr_float("scale", 1.0),
                           random_dtype(c, x.dtype()), c.device())};
  };
  t["RandomUniformLike"] = [](const OpContext& c) -> std::vector<Value> {
    const Tensor& x = c.in(0);
    return {Tensor::uniform(x.shape(), c.attr_float("low", 0.0), c.attr_float("high", 1.0),
                            random_dtype(c, x.dtype()), c.device())};
  };
  t["Bernoulli"] = [](const OpContext& c) -> std::vector<Value> {
    const Tensor& p = c.in(0);
    return {p.rand_like(dtypes::float32).lt(p).cast(random_dtype(c, p.dtype()))};
  };
  t["Dropout"] = dropout;
}

}  // namespace

void add_control_ops(OpTable& t) {
  add_graph_ops(t);
  add_sequence_ops(t);
  add_random_ops(t);
}

}  // namespace tg::onnx
