// Every Tensor op against PyTorch: runs each case gen_ops.py wrote through tg::Tensor on the device DEV
// names and compares dtype, shape and values. A case whose op has no entry in the table fails.
#define BOOST_TEST_MODULE reference_ops
#include "common/test_support.hpp"
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "tensor/tensor.hpp"

using namespace tg;
using tg::test::expect_error;
using json = nlohmann::json;
using Ins = std::vector<Tensor>;
using Outs = std::vector<Tensor>;

namespace {

// Cases that fail because of a bug outside the tensor front end; each names where the bug is.
// The test prints this list and fails if a listed case passes, so the list stays true.
const std::string kMaxNan =
    "MAX is a<b?b:a on INTERP (runtime/interp/values.cpp) and in C (codegen/cstyle.cpp), so a max reduction "
    "drops a NaN unless it comes first; PyTorch returns NaN (argmax: its index)";
const std::map<std::string, std::string> kKnownFailures = {
    {"max/nan_inf", kMaxNan}, {"min/nan_inf", kMaxNan}, {"argmax/nan", kMaxNan}, {"argmin/nan", kMaxNan}};

DType dtype_named(const std::string& name) {
  std::optional<DType> d = dtypes::from_name(name);
  if (!d) throw std::runtime_error("unknown dtype in the reference file: " + name);
  return *d;
}

double decode(const json& v) {
  if (v.is_string()) {
    std::string s = v.get<std::string>();
    return s == "nan" ? NAN : s == "inf" ? INFINITY : -INFINITY;
  }
  return v.get<double>();
}

Number num(const json& v) {
  if (v.is_boolean()) return Number(v.get<bool>());
  if (v.is_number_integer()) return Number(v.get<int64_t>());
  return Number(v.get<double>());
}

std::optional<DType> opt_dtype(const json& a) {
  return a.contains("dtype") ? std::optional(dtype_named(a["dtype"])) : std::nullopt;
}

Axes axes(const json& a) {
  if (!a.contains("axis")) return {};
  return a["axis"].is_array() ? Axes(a["axis"].get<std::vector<int>>()) : Axes(a["axis"].get<int>());
}

Reduction reduction(const json& a) {
  std::string r = a.value("reduction", "mean");
  return r == "sum" ? Reduction::SUM : r == "none" ? Reduction::NONE : Reduction::MEAN;
}

std::optional<int64_t> opt_int(const json& v) {
  return v.is_null() ? std::nullopt : std::optional(v.get<int64_t>());
}

Slice slice(const json& s) {
  return Slice{opt_int(s[0]), s.size() > 1 ? opt_int(s[1]) : std::nullopt,
               s.size() > 2 ? opt_int(s[2]) : std::nullopt};
}

// [1, [a, b, c], null, "...", {"t": k}]: int, slice, newaxis, ellipsis, integer tensor input k+1.
std::vector<Index> indices(const json& spec, const Ins& x) {
  std::vector<Index> out;
  for (const json& s : spec) {
    if (s.is_null())
      out.emplace_back(newaxis);
    else if (s.is_string())
      out.emplace_back(ellipsis);
    else if (s.is_object())
      out.emplace_back(x[s["t"].get<size_t>() + 1]);
    else if (s.is_array())
      out.emplace_back(slice(s));
    else
      out.emplace_back(s.get<int64_t>());
  }
  return out;
}

ShapePairs size_pairs(const std::vector<std::pair<int64_t, int64_t>>& p) { return {p.begin(), p.end()}; }

std::vector<std::pair<int64_t, int64_t>> pairs(const json& v) {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (const json& p : v) out.emplace_back(p[0].get<int64_t>(), p[1].get<int64_t>());
  return out;
}

// {"h": 2, ...} as rearrange's (name, size) list.
std::vector<std::pair<std::string, int64_t>> named_sizes(const json& o) {
  std::vector<std::pair<std::string, int64_t>> out;
  for (const auto& [name, size] : o.items()) out.emplace_back(name, size.get<int64_t>());
  return out;
}

// U, S, Vh with each (U column, Vh row) pair flipped so the U column's largest-magnitude entry is positive:
// the sign convention gen_ops.py applies to PyTorch's result.
Outs svd_signed(const Tensor& a) {
  auto [u, s, vh] = a.svd();
  Tensor sign = u.gather(-2, u.abs().argmax(-2, true)).sign();
  return {u * sign, s, vh * sign.transpose(-1, -2)};
}

PadMode pad_mode(const std::string& m) {
  return m == "reflect"     ? PadMode::REFLECT
         : m == "replicate" ? PadMode::REPLICATE
         : m == "circular"  ? PadMode::CIRCULAR
                            : PadMode::CONSTANT;
}

Tensor setitem(Tensor t, const std::vector<Index>& idx, const Tensor& v) {
  t[idx].assign(v).realize();
  return t;
}

using Fn = std::function<Outs(const Ins&, const json&)>;
// float32 tolerance |got - want| <= atol + rtol |want|; float16 uses 1e-3 for both, float64 1e-9 (1e-7 where
// float32 is loose). Transcendental chains get kMath, sums of many terms (cancellation) kSum.
struct Tol {
  double rtol = 1e-5, atol = 1e-6;
};
// Dot products (kDot) of K float32 terms: the summation order (PyTorch's BLAS blocks and uses FMA, we sum in
// order) moves a result by up to ~K * eps * sum|a*b|, 2.6e-5 for the K = 130 matmul/big against OpenBLAS.
constexpr Tol kMath{1e-4, 1e-5}, kSum{1e-5, 1e-5}, kDot{1e-5, 1e-4};
struct Op {
  Fn fn;
  Tol tol = {};
};

// clang-format off
#define OP(...) [](const Ins& x [[maybe_unused]], const json& a [[maybe_unused]]) -> Outs { return {__VA_ARGS__}; }
#define UNARY(name) {#name, {OP(x[0].name())}}
#define UNARY_T(name) {#name, {OP(x[0].name()), kMath}}
#define BINARY(name) {#name, {OP(x[0].name(x[1]))}}
#define SCALAR(name, ...) {#name "_scalar", {OP(x[0].name(num(a["scalar"]) __VA_ARGS__))}}
#define REV , a.value("reverse", false)
#define REDUCE(name) {#name, {OP(x[0].name(axes(a), a.value("keepdim", false)))}}
// ops that return (values, indices) or (statistic, mean)
#define PAIR(...) [](const Ins& x [[maybe_unused]], const json& a [[maybe_unused]]) -> Outs { \
    auto [p, q] = __VA_ARGS__; return {p, q}; }

const std::map<std::string, Op>& ops() {
  static const std::map<std::string, Op> table = {
      // creation
      {"zeros", {OP(Tensor::zeros(a["shape"].get<Shape>(), dtype_named(a["dtype"])))}},
      {"ones", {OP(Tensor::ones(a["shape"].get<Shape>(), dtype_named(a["dtype"])))}},
      {"full", {OP(Tensor::full(a["shape"].get<Shape>(), num(a["fill"]), opt_dtype(a)))}},
      {"zeros_like", {OP(x[0].zeros_like(opt_dtype(a)))}},
      {"ones_like", {OP(x[0].ones_like(opt_dtype(a)))}},
      {"full_like", {OP(x[0].full_like(num(a["fill"]), opt_dtype(a)))}},
      {"arange", {OP(Tensor::arange(num(a["start"]), num(a["stop"]), num(a["step"]), opt_dtype(a)))}},
      {"linspace", {OP(Tensor::linspace(num(a["start"]), num(a["stop"]), a["steps"], dtype_named(a["dtype"])))}},
      {"eye", {OP(Tensor::eye(a["n"], a.contains("m") ? std::optional<int64_t>(a["m"]) : std::nullopt,
                              dtype_named(a["dtype"])))}},
      {"tensor", {OP(x[0])}},
      // unary
      UNARY(neg), UNARY(reciprocal), UNARY(sqrt), UNARY(rsqrt), UNARY_T(exp), UNARY_T(exp2), UNARY_T(log),
      UNARY_T(log2), UNARY_T(sin), UNARY_T(cos), UNARY_T(tan), UNARY_T(tanh), UNARY_T(sigmoid), UNARY(relu),
      UNARY_T(gelu), UNARY_T(silu), UNARY_T(logsigmoid), UNARY(abs), UNARY(sign), UNARY(square), UNARY(floor),
      UNARY(ceil), UNARY(round), UNARY(trunc), UNARY(logical_not), UNARY(bitwise_not), UNARY(isnan),
      UNARY(isfinite),
      {"isinf", {OP(x[0].isinf(a.value("positive", true), a.value("negative", true)))}},
      {"leaky_relu", {OP(x[0].leaky_relu(a.value("slope", 0.01)))}},
      {"softplus", {OP(x[0].softplus(a.value("beta", 1.0))), kMath}},
      // binary
      BINARY(add), BINARY(sub), BINARY(mul), BINARY(div), BINARY(mod), BINARY(fmod), BINARY(maximum),
      BINARY(minimum), BINARY(lt), BINARY(le), BINARY(gt), BINARY(ge), BINARY(eq), BINARY(ne),
      BINARY(logical_and), BINARY(logical_or), BINARY(logical_xor), BINARY(bitwise_and), BINARY(bitwise_or),
      BINARY(bitwise_xor), BINARY(lshift), BINARY(rshift),
      {"pow", {OP(x[0].pow(x[1])), kMath}},
      {"logaddexp", {OP(x[0].logaddexp(x[1])), kMath}},
      {"div_trunc", {OP(x[0].div(x[1], Rounding::TRUNC))}},
      {"div_floor", {OP(x[0].div(x[1], Rounding::FLOOR))}},
      SCALAR(add, REV), SCALAR(sub, REV), SCALAR(mul, REV), SCALAR(mod, REV), SCALAR(maximum), SCALAR(lt),
      SCALAR(eq),
      {"div_scalar", {OP(x[0].div(num(a["scalar"]), std::nullopt, a.value("reverse", false)))}},
      {"pow_scalar", {OP(x[0].pow(num(a["scalar"]), a.value("reverse", false))), kMath}},
      // ternary
      {"where", {OP(x[0].where(x[1], x[2]))}},
      {"where_scalars", {OP(x[0].where(num(a["x"]), num(a["y"])))}},
      {"where_scalar_y", {OP(x[0].where(x[1], num(a["y"])))}},
      {"clamp", {OP(x[0].clamp(a.contains("min") ? std::optional(num(a["min"])) : std::nullopt,
                               a.contains("max") ? std::optional(num(a["max"])) : std::nullopt))}},
      {"clamp_tensors", {OP(x[0].clamp(x[1], x[2]))}},
      // reduce
      {"sum", {OP(x[0].sum(axes(a), a.value("keepdim", false), opt_dtype(a))), kSum}},
      {"prod", {OP(x[0].prod(axes(a), a.value("keepdim", false), opt_dtype(a)))}},
      REDUCE(max), REDUCE(min), REDUCE(any), REDUCE(all),
      {"mean", {OP(x[0].mean(axes(a), a.value("keepdim", false))), kSum}},
      {"logsumexp", {OP(x[0].logsumexp(axes(a), a.value("keepdim", false))), kMath}},
      {"var", {OP(x[0].var(axes(a), a.value("keepdim", false), a.value("correction", 1.0))), kMath}},
      {"std", {OP(x[0].std(axes(a), a.value("keepdim", false), a.value("correction", 1.0))), kMath}},
      {"argmax", {OP(x[0].argmax(a.contains("axis") ? std::optional<int>(a["axis"]) : std::nullopt,
                                 a.value("keepdim", false)))}},
      {"argmin", {OP(x[0].argmin(a.contains("axis") ? std::optional<int>(a["axis"]) : std::nullopt,
                                 a.value("keepdim", false)))}},
      {"cumsum", {OP(x[0].cumsum(a["axis"])), kSum}},
      // movement
      {"reshape", {OP(x[0].reshape(a["shape"].get<Shape>()))}},
      {"permute", {OP(x[0].permute(a["order"].get<Dims>()))}},
      {"expand", {OP(x[0].expand(a["shape"].get<Shape>()))}},
      {"pad", {OP(x[0].pad(pairs(a["pads"]), pad_mode(a["mode"]), a.contains("value") ? num(a["value"]) : 0))}},
      {"shrink", {OP(x[0].shrink(size_pairs(pairs(a["bounds"]))))}},
      {"flip", {OP(x[0].flip(a["axes"].get<Dims>()))}},
      {"transpose", {OP(x[0].transpose(a["dim0"], a["dim1"]))}},
      {"flatten", {OP(x[0].flatten(a["start"], a["end"]))}},
      {"unflatten", {OP(x[0].unflatten(a["dim"], a["sizes"].get<Shape>()))}},
      {"squeeze", {OP(x[0].squeeze(a.contains("dim") ? std::optional<int>(a["dim"]) : std::nullopt))}},
      {"unsqueeze", {OP(x[0].unsqueeze(a["dim"]))}},
      {"repeat", {OP(x[0].repeat(a["repeats"].get<Shape>()))}},
      {"cat", {OP(Tensor::cat(x, a["dim"]))}},
      {"stack", {OP(Tensor::stack(x, a["dim"]))}},
      {"split", {[](const Ins& x, const json& a) {
         return a.contains("sizes") ? x[0].split(a["sizes"].get<Shape>(), a["dim"])
                                    : x[0].split(a["size"].get<int64_t>(), a["dim"]);
       }}},
      {"chunk", {[](const Ins& x, const json& a) { return x[0].chunk(a["chunks"], a["dim"]); }}},
      {"contiguous", {OP(x[0].contiguous())}},
      // indexing
      {"index", {OP(x[0][indices(a["index"], x)])}},
      {"gather", {OP(x[0].gather(a["dim"], x[1]))}},
      {"setitem", {OP(setitem(x[0], indices(a["index"], x), x[1]))}},
      {"assign", {OP(Tensor(x[0]).assign(x[1]).realize())}},
      {"one_hot", {OP(x[0].one_hot(a["classes"]))}},
      // linear algebra
      {"matmul", {OP(x[0].matmul(x[1])), kDot}},
      {"dot", {OP(x[0].dot(x[1])), kDot}},
      {"einsum", {OP(Tensor::einsum(a["formula"].get<std::string>(), x)), kDot}},
      {"linear", {OP(x[0].linear(x[1], x.size() > 2 ? x[2] : Tensor())), kDot}},
      // nn functional
      {"softmax", {OP(x[0].softmax(a["axis"])), kMath}},
      {"log_softmax", {OP(x[0].log_softmax(a["axis"])), kMath}},
      {"layernorm", {OP(x[0].layernorm(axes(a), a.value("eps", 1e-5))), kMath}},
      {"cross_entropy", {OP(x[0].cross_entropy(x[1], reduction(a), a["smoothing"])), kMath}},
      {"sparse_categorical_crossentropy",
       {OP(x[0].sparse_categorical_crossentropy(x[1], a["ignore_index"], a["smoothing"], reduction(a))), kMath}},
      {"binary_crossentropy", {OP(x[0].binary_crossentropy(x[1], reduction(a))), kMath}},
      {"binary_crossentropy_logits", {OP(x[0].binary_crossentropy_logits(x[1], reduction(a))), kMath}},
      // composed math and activations
      UNARY_T(asin), UNARY_T(acos), UNARY_T(atan), UNARY_T(sinh), UNARY_T(cosh), UNARY_T(asinh),
      UNARY_T(acosh), UNARY_T(atanh), UNARY_T(erf), UNARY_T(log10), UNARY_T(selu), UNARY_T(mish),
      UNARY_T(hardsigmoid), UNARY_T(hardswish), UNARY_T(softsign), UNARY_T(quick_gelu),
      {"gelu_exact", {OP(x[0].gelu("none")), kMath}},
      {"elu", {OP(x[0].elu(a.value("alpha", 1.0))), kMath}},
      {"celu", {OP(x[0].celu(a.value("alpha", 1.0))), kMath}},
      {"hardtanh", {OP(x[0].hardtanh(a.value("min", -1.0), a.value("max", 1.0)))}},
      {"relu6", {OP((x[0] * 3).relu6())}},
      {"softmin", {OP(x[0].softmin(a["axis"])), kMath}},
      BINARY(copysign), SCALAR(copysign),
      {"lerp", {OP(x[0].lerp(x[1], x[2])), kMath}},
      {"lerp_scalar", {OP(x[0].lerp(x[1], a["weight"].get<double>())), kMath}},
      // masks
      {"masked_fill", {OP(x[0].masked_fill(x[1], x.size() > 2 ? Operand(x[2]) : Operand(num(a["value"]))))}},
      {"tril", {OP(x[0].tril(a["diagonal"].get<int64_t>()))}},
      {"triu", {OP(x[0].triu(a["diagonal"].get<int64_t>()))}},
      // statistics
      {"std_mean",
       {PAIR(x[0].std_mean(axes(a), a.value("keepdim", false), a.value("correction", 1.0))), kMath}},
      {"var_mean",
       {PAIR(x[0].var_mean(axes(a), a.value("keepdim", false), a.value("correction", 1.0))), kMath}},
      {"isclose", {OP(x[0].isclose(x[1], a["rtol"], a["atol"], a["equal_nan"]))}},
      {"allclose", {OP(Tensor(x[0].allclose(x[1], a["rtol"], a["atol"], a["equal_nan"])))}},
      {"normalize", {OP(x[0].normalize(decode(a["p"]), a["dim"], a.value("eps", 1e-12))), kMath}},
      // scans
      {"cumprod", {OP(x[0].cumprod(a["axis"])), kMath}},
      {"cummax", {PAIR(x[0].cummax(a["axis"]))}},
      {"cummin", {PAIR(x[0].cummin(a["axis"]))}},
      {"logcumsumexp", {OP(x[0].logcumsumexp(a["axis"])), kMath}},
      // shape helpers
      {"roll", {OP(x[0].roll(a["shifts"].get<std::vector<int64_t>>(), a["dims"].get<Dims>()))}},
      {"diag", {OP(x[0].diag(a["diagonal"].get<int64_t>()))}},
      {"diagonal", {OP(x[0].diagonal(a["offset"].get<int64_t>(), a["dim1"], a["dim2"]))}},
      {"meshgrid",
       {[](const Ins& x, const json& a) { return Tensor::meshgrid(x, a["indexing"].get<std::string>()); }}},
      {"repeat_interleave",
       {OP(x[0].repeat_interleave(a["repeats"],
                                  a.contains("dim") ? std::optional<int>(a["dim"]) : std::nullopt))}},
      {"unfold", {OP(x[0].unfold(a["dim"], a["size"], a["step"]))}},
      {"pad_to", {OP(x[0].pad_to(a["shape"].get<Shape>()))}},
      {"shrink_to", {OP(x[0].shrink_to(a["shape"].get<Shape>()))}},
      // scatter, sorting, data-dependent selections
      {"scatter", {OP(x.size() > 2 ? x[0].scatter(a["dim"], x[1], x[2])
                                   : x[0].scatter(a["dim"], x[1], num(a["value"])))}},
      {"scatter_reduce", {OP(x[0].scatter_reduce(a["dim"], x[1], x[2], a["reduce"].get<std::string>(),
                                                 a["include_self"])), kMath}},
      {"sort", {PAIR(x[0].sort(a["dim"], a["descending"]))}},
      {"argsort", {OP(x[0].argsort(a["dim"], a["descending"]))}},
      {"sort_fused", {PAIR((x[0].log() - (-(1 - x[1]).log()).log()).sort(1, true)), kMath}},
      {"topk", {PAIR(x[0].topk(a["k"], a["dim"], a["largest"]))}},
      {"topk_values", {OP(x[0].topk(a["k"], a["dim"], a["largest"]).first)}},
      // resampling, rearrange, QR
      {"interpolate", {OP(x[0].interpolate(a["size"].get<Shape>(), a["mode"].get<std::string>(),
                                           a["align_corners"])), kMath}},
      {"max_unpool2d", {OP(x[0].max_unpool2d(x[1], a["kernel"].get<int64_t>(), a["stride"].get<int64_t>(),
                                             a["padding"].get<int64_t>(), a.value("output_size", Shape{})))}},
      {"rearrange", {OP(x[0].rearrange(a["pattern"].get<std::string>(), named_sizes(a["sizes"])))}},
      {"qr", {PAIR(x[0].qr()), kMath}},
      {"svd", {[](const Ins& x, const json&) { return svd_signed(x[0]); }, kMath}},
      {"svd_values", {OP(std::get<1>(x[0].svd())), kMath}},
      {"nonzero", {OP(x[0].nonzero())}},
      {"masked_select", {OP(x[0].masked_select(x[1]))}},
      // dtype
      {"cast", {OP(x[0].cast(dtype_named(a["dtype"])))}},
      {"bitcast", {OP(x[0].bitcast(dtype_named(a["dtype"])))}},
  };
  return table;
}
// clang-format on

// An input: the stored values as a buffer, then the view the generator applied (permute, slices).
Tensor make_input(const json& j) {
  std::vector<double> values;
  for (const json& v : j["values"]) values.push_back(decode(v));
  Shape shape = j["shape"].get<Shape>();
  Tensor t(values, shape.empty() ? Shape{1} : shape, dtype_named(j["dtype"]));
  if (shape.empty()) t = t.reshape({});
  if (j.contains("permute")) t = t.permute(j["permute"].get<Dims>());
  if (j.contains("slices")) {
    std::vector<Index> idx;
    for (const json& s : j["slices"]) idx.emplace_back(slice(s));
    t = t[idx];
  }
  return t;
}

std::string shape_text(const Shape& s) {
  std::ostringstream os;
  os << "(";
  for (size_t i = 0; i < s.size(); i++) os << (i ? "," : "") << s[i];
  return os.str() + ")";
}

// Compares one output; returns the first mismatch, or "" when it matches.
std::string compare(const Tensor& got, const json& want, Tol tol) {
  DType dt = dtype_named(want["dtype"]);
  Shape shape = want["shape"].get<Shape>();
  if (got.dtype() != dt)
    return "dtype " + std::string(got.dtype().name()) + ", want " + std::string(dt.name());
  if (got.shape() != shape) return "shape " + shape_text(got.shape()) + ", want " + shape_text(shape);
  const json& vals = want["values"];
  std::ostringstream err;
  if (!dt.is_float()) {
    std::vector<int64_t> g = got.to_vector<int64_t>();
    for (size_t i = 0; i < g.size(); i++)
      if (g[i] != vals[i].get<int64_t>()) {
        err << "element " << i << ": got " << g[i] << ", want " << vals[i].get<int64_t>();
        return err.str();
      }
    return "";
  }
  bool loose = tol.rtol > 1e-5 || tol.atol > 1e-6;
  double rtol = dt == dtypes::float16 ? 1e-3 : dt == dtypes::float64 ? (loose ? 1e-7 : 1e-9) : tol.rtol;
  double atol = dt == dtypes::float16 ? 1e-3 : dt == dtypes::float64 ? (loose ? 1e-8 : 1e-10) : tol.atol;
  std::vector<double> g = got.to_vector<double>();
  for (size_t i = 0; i < g.size(); i++) {
    double w = decode(vals[i]);
    bool ok = std::isnan(w)   ? std::isnan(g[i])
              : std::isinf(w) ? g[i] == w
              : w == 0 && std::isfinite(g[i]) && std::abs(g[i]) <= atol
                  ? std::signbit(g[i]) == std::signbit(w)
                  : std::abs(g[i] - w) <= atol + rtol * std::abs(w);
    if (!ok) {
      err.precision(9);
      err << "element " << i << ": got " << g[i] << ", want " << w;
      return err.str();
    }
  }
  return "";
}

// Runs one case; returns "" when every output matches, else what went wrong.
std::string run_case(const json& c) {
  auto it = ops().find(c["op"]);
  if (it == ops().end()) return "no entry for op '" + c["op"].get<std::string>() + "' in the table";
  try {
    Ins ins;
    for (const json& j : c["inputs"]) ins.push_back(make_input(j));
    Outs outs = it->second.fn(ins, c["args"]);
    const json& want = c["outputs"];
    if (outs.size() != want.size())
      return std::to_string(outs.size()) + " outputs, want " + std::to_string(want.size());
    for (size_t i = 0; i < outs.size(); i++)
      if (std::string e = compare(outs[i], want[i], it->second.tol); !e.empty())
        return (outs.size() > 1 ? "output " + std::to_string(i) + ": " : "") + e;
  } catch (const std::exception& e) {
    return std::string("threw: ") + e.what();
  }
  return "";
}

const json& reference() {
  static const json doc = [] {
    std::ifstream f(TG_REF_OPS_FILE);
    if (!f) throw std::runtime_error("cannot open the reference file " TG_REF_OPS_FILE);
    return json::parse(f);
  }();
  return doc;
}

}  // namespace

BOOST_AUTO_TEST_CASE(every_case_matches_pytorch) {
  const json& cases = reference()["cases"];
  std::cout << cases.size() << " reference cases (" << reference()["generator"].get<std::string>() << ")\n";
  std::cout << "known failures (" << kKnownFailures.size() << "):\n";
  for (auto& [name, why] : kKnownFailures) std::cout << "  " << name << ": " << why << "\n";
  std::set<std::string> ops_seen, dtypes_seen;
  int passed = 0, known = 0;
  for (const json& c : cases) {
    std::string name = c["name"];
    ops_seen.insert(c["op"].get<std::string>());
    for (const json& o : c["outputs"]) dtypes_seen.insert(o["dtype"].get<std::string>());
    std::string err = run_case(c);
    bool listed = kKnownFailures.count(name) > 0;
    if (listed) {
      known++;
      BOOST_CHECK_MESSAGE(!err.empty(),
                          name << ": listed as a known failure but passes; remove it from the list");
      continue;
    }
    BOOST_CHECK_MESSAGE(err.empty(), name << ": " << err);
    passed += err.empty();
  }
  std::cout << passed << " passed, " << known << " known failures, " << cases.size() - passed - known
            << " failed; " << ops_seen.size() << " ops, output dtypes:";
  for (const std::string& d : dtypes_seen) std::cout << " " << d;
  std::cout << "\n";
}

BOOST_AUTO_TEST_CASE(every_table_op_has_cases) {
  std::set<std::string> used;
  for (const json& c : reference()["cases"]) used.insert(c["op"].get<std::string>());
  for (auto& [name, op] : ops())
    BOOST_CHECK_MESSAGE(used.count(name), "op '" << name << "' has no reference case");
}


BOOST_AUTO_TEST_CASE(bad_input_names_the_op) {
  Tensor f = Tensor::ones({3, 4}), i = Tensor::ones({3, 4}, dtypes::int32),
         b = Tensor::ones({3}, dtypes::bool_);
  // shape mismatches
  expect_error<ShapeError>([&] { f + Tensor::ones({5}); }, "[add] cannot broadcast (3,4) with (5,)");
  expect_error<ShapeError>(
      [&] {
        f.where(f, Tensor::ones({2, 1, 3}));
      },
      "[where] cannot broadcast (3,4) with (2,1,3)");
  expect_error<ShapeError>([&] { f.reshape({5, -1}); }, "[reshape] cannot reshape (3,4) to (5,-1)");
  expect_error<ShapeError>([&] { f.expand({5, 4}); }, "[expand] cannot expand (3,4) to (5,4)");
  expect_error<ShapeError>(
      [&] {
        f.permute({0, 0});
      },
      "[permute] (0,0) is not an order of the 2 axes of (3,4)");
  expect_error<ShapeError>([&] { f.matmul(Tensor::ones({5, 2})); }, "[dot] cannot multiply (3,4) by (5,2)");
  expect_error<ShapeError>(
      [&] {
        Tensor::cat({f, Tensor::ones({2, 3})});
      },
      "[cat] shapes (3,4) and (2,3) differ outside axis 0");
  expect_error<ShapeError>(
      [&] {
        f.split(Shape{1, 1});
      },
      "[split] sizes (1,1) do not add up to axis 0 of (3,4)");
  expect_error<ShapeError>([&] { f.gather(0, Tensor::ones({3}, dtypes::int32)); },
                           "[gather] index has 1 dimensions but the tensor has 2");
  expect_error<ShapeError>(
      [&] {
        f.shrink({{0, 4}, {0, 4}});
      },
      "[shrink] bounds (0,4) do not fit axis 0 of (3,4)");
  expect_error<ShapeError>(
      [&] {
        Tensor::einsum("ij,jk->ik", {f, f});
      },
      "[einsum] 'j' has size 4 in one operand and 3 in another");
  expect_error<ShapeError>([&] { f.sparse_categorical_crossentropy(Tensor::ones({4}, dtypes::int32)); },
                           "[sparse_categorical_crossentropy] labels (4,) do not match logits (3,4)");
  // bad axes and indices
  expect_error<IndexError>([&] { f.sum(2); }, "[sum] axis 2 is out of range for 2 dimensions");
  expect_error<IndexError>([&] { f.max(-3); }, "[max] axis -3 is out of range for 2 dimensions");
  expect_error<IndexError>([&] { f.argmax(5); }, "[argmax] axis 5 is out of range for 2 dimensions");
  expect_error<IndexError>([&] { f.softmax(2); }, "[softmax] axis 2 is out of range for 2 dimensions");
  expect_error<IndexError>([&] { f.log_softmax(-3); },
                           "[log_softmax] axis -3 is out of range for 2 dimensions");
  expect_error<IndexError>([&] { f.cumsum(-3); }, "[cumsum] axis -3 is out of range for 2 dimensions");
  expect_error<IndexError>([&] { f.flip({3}); }, "[flip] axis 3 is out of range for 2 dimensions");
  expect_error<IndexError>([&] { f.unsqueeze(4); }, "[unsqueeze] axis 4 is out of range for 3 dimensions");
  expect_error<IndexError>([&] { f[5]; }, "[index] index 5 is out of bounds for axis 0 with size 3");
  expect_error<IndexError>([&] { f[{0, 0, 0}]; }, "[index] too many indices (3) for a tensor of dimension 2");
  expect_error<IndexError>([&] { f[f]; }, "[index] tensors used as indices must be integer, got float");
  // bad dtypes
  expect_error<DTypeError>([&] { f& f; }, "[bitwise_and] needs integer or bool tensors, got float");
  expect_error<DTypeError>([&] { b << b; }, "[lshift] needs integer tensors, got bool");
  expect_error<DTypeError>([&] { b - b; },
                           "[sub] subtracting bool tensors is not supported, use logical_xor");
  expect_error<DTypeError>([&] { b % b; }, "[mod] needs numeric tensors, got bool");
  expect_error<DTypeError>([&] { f.gather(0, f); }, "[gather] index must be integer, got float");
  expect_error<DTypeError>([&] { f.one_hot(3); }, "[one_hot] needs an integer tensor, got float");
  expect_error<DTypeError>([&] { b.bitcast(dtypes::int8); }, "[bitcast] cannot bitcast bool to signed char");
  expect_error<DTypeError>([&] { f.cast(dtypes::void_); },
                           "[cast] dtypes.void is not a tensor element dtype");
  expect_error<DTypeError>([&] { Tensor::linspace(0, 1, 3, dtypes::bool_); },
                           "[linspace] bool is not supported");
  expect_error<DTypeError>([&] { f.sparse_categorical_crossentropy(f.sum(1)); },
                           "[sparse_categorical_crossentropy] labels must be integer, got float");
  expect_error<DTypeError>([&] { i.assign(f); },
                           "[assign] value is float but the target is int; cast it first");
  // other bad arguments
  expect_error<ValueError>([&] { Tensor::arange(0, 5, 0); }, "[arange] step must not be zero");
  expect_error<ValueError>([&] { f[Slice{{}, {}, 0}]; }, "[index] slice step cannot be zero");
  expect_error<ValueError>(
      [&] {
        f.pad({{3, 0}, {0, 0}}, PadMode::REFLECT);
      },
      "[pad] reflect padding (3,0) must be smaller than axis 0 of size 3");
  expect_error<ValueError>([&] { f.clamp(std::nullopt, std::nullopt); },
                           "[clamp] needs at least one of min and max");
  expect_error<ValueError>([&] { f.chunk(0); }, "[chunk] chunk count must be positive, got 0");
  expect_error<ValueError>([&] { Tensor::einsum("ij,jk->ik", {f}); },
                           "[einsum] 'ij,jk->ik' names 2 operands but 1 were given");
  expect_error<ValueError>([&] { f.cross_entropy(f, Reduction::MEAN, 1.5); },
                           "[cross_entropy] label_smoothing must be in [0, 1], got 1.5");
  expect_error<ValueError>([&] { f.flatten(1, 0); }, "[flatten] start_dim 1 comes after end_dim 0");
}

BOOST_AUTO_TEST_CASE(bad_input_to_composed_ops_names_the_op) {
  Tensor f = Tensor::ones({3, 4}), v = Tensor::ones({3}), i = Tensor::ones({3, 4}, dtypes::int32);
  expect_error<ValueError>([&] { f.gelu("fast"); },
                           "[gelu] approximate must be 'none' or 'tanh', got 'fast'");
  expect_error<ValueError>([&] { f.hardtanh(2, 1); }, "[hardtanh] min_val 2 is greater than max_val 1");
  expect_error<ValueError>([&] { f.celu(0); }, "[celu] alpha must not be zero");
  expect_error<IndexError>([&] { f.softmin(2); }, "[softmin] axis 2 is out of range for 2 dimensions");
  expect_error<ShapeError>([&] { v.tril(); }, "[tril] needs at least 2 dimensions, got (3,)");
  expect_error<ShapeError>([&] { v.triu(1); }, "[triu] needs at least 2 dimensions, got (3,)");
  expect_error<DTypeError>([&] { f.masked_fill(i, 0); }, "[masked_fill] mask must be bool, got int");
  expect_error<ShapeError>([&] { f.masked_fill(f.eq(1), v); },
                           "[masked_fill] value must be a number or a 0-d tensor, got shape (3,)");
  expect_error<ShapeError>(
      [&] {
        f.masked_fill(Tensor::ones({2, 1}, dtypes::bool_), 0);
      },
      "[masked_fill] cannot broadcast (2,1) with (3,4)");
  expect_error<ValueError>([&] { f.isclose(f, -1); },
                           "[isclose] rtol and atol must be non-negative, got -1 and 1e-08");
  expect_error<ValueError>([&] { f.normalize(0); }, "[normalize] p must be positive, got 0");
  expect_error<IndexError>([&] { f.normalize(2, 2); }, "[normalize] axis 2 is out of range for 2 dimensions");
  expect_error<IndexError>([&] { f.cumprod(2); }, "[cumprod] axis 2 is out of range for 2 dimensions");
  expect_error<IndexError>([&] { f.cummax(-3); }, "[cummax] axis -3 is out of range for 2 dimensions");
  expect_error<IndexError>([&] { f.cummin(2); }, "[cummin] axis 2 is out of range for 2 dimensions");
  expect_error<IndexError>([&] { f.logcumsumexp(5); },
                           "[logcumsumexp] axis 5 is out of range for 2 dimensions");
  expect_error<ValueError>([&] { f.roll({1, 2}, {0}); }, "[roll] 2 shifts for 1 dims");
  expect_error<ValueError>(
      [&] {
        f.roll({1, 2});
      },
      "[roll] 2 shifts without dims; the flattened tensor takes one");
  expect_error<ShapeError>(
      [&] {
        f.reshape({3, 2, 2}).diag();
      },
      "[diag] needs a 1-d or 2-d tensor, got (3,2,2)");
  expect_error<ValueError>([&] { f.diagonal(0, 1, -1); }, "[diagonal] dim1 and dim2 are both axis 1");
  expect_error<ValueError>([&] { Tensor::meshgrid({v}, "yx"); },
                           "[meshgrid] indexing must be 'ij' or 'xy', got 'yx'");
  expect_error<ShapeError>([&] { Tensor::meshgrid({f}); }, "[meshgrid] needs 0-d or 1-d tensors, got (3,4)");
  expect_error<ValueError>([&] { f.repeat_interleave(-1); },
                           "[repeat_interleave] repeats must be non-negative, got -1");
  expect_error<ValueError>([&] { f.unfold(0, 4, 1); }, "[unfold] size 4 does not fit axis 0 of size 3");
  expect_error<ValueError>([&] { f.unfold(1, 2, 0); }, "[unfold] step must be positive, got 0");
  expect_error<ValueError>([&] { f.pad_to({2, 4}); }, "[pad_to] cannot pad (3,4) to the smaller (2,4)");
  expect_error<ValueError>(
      [&] {
        f.shrink_to({3, 5});
      },
      "[shrink_to] cannot shrink (3,4) to the larger (3,5)");
  expect_error<ShapeError>([&] { f.pad_to({3}); }, "[pad_to] target (3,) for the 2-d shape (3,4)");
  expect_error<DTypeError>([&] { f.scatter(0, f, 1.0); }, "[scatter] index must be integer, got float");
  expect_error<ShapeError>(
      [&] {
        f.scatter(1, Tensor::zeros({4, 1}, dtypes::int32), 1.0);
      },
      "[scatter] index (4,1) is larger than src (4,1) or, outside axis 1, than (3,4)");
  expect_error<ValueError>(
      [&] { f.scatter_reduce(0, i, f, "min"); },
      "[scatter_reduce] reduce must be 'sum', 'prod', 'mean', 'amax' or 'amin', got 'min'");
  expect_error<IndexError>([&] { f.sort(2); }, "[sort] axis 2 is out of range for 2 dimensions");
  expect_error<IndexError>([&] { f.argsort(-3); }, "[argsort] axis -3 is out of range for 2 dimensions");
  expect_error<ValueError>([&] { f.topk(5); }, "[topk] k 5 is out of range for axis 1 of size 4");
  expect_error<ValueError>([&] { f.topk(-1, 0); }, "[topk] k -1 is out of range for axis 0 of size 3");
  expect_error<DTypeError>([&] { f.masked_select(i); }, "[masked_select] mask must be bool, got int");
  Tensor img = Tensor::ones({1, 2, 3, 4});
  expect_error<ValueError>([&] { img.interpolate({5, 5}, "area"); },
                           "[interpolate] unknown mode 'area' (nearest, linear, bilinear, trilinear or bicubic)");
  expect_error<ValueError>([&] { img.interpolate({5}, "bilinear"); },
                           "[interpolate] mode 'bilinear' resizes 2 axes, got sizes (5,)");
  expect_error<ValueError>([&] { img.interpolate({5, 5}, "nearest", true); },
                           "[interpolate] align_corners only applies to the linear and cubic modes");
  expect_error<ValueError>([&] { img.interpolate({0, 5}, "bilinear"); },
                           "[interpolate] sizes must be positive, got (0,5)");
  expect_error<ShapeError>([&] { v.max_unpool2d(v, 2); },
                           "[max_unpool2d] needs (N, C, H, W) or (C, H, W), got (3,)");
  expect_error<ValueError>([&] { img.max_unpool2d(img.cast(dtypes::int32), 2, 2, 0, {9, 9}); },
                           "[max_unpool2d] output size (9,9) is not within a stride of (6,8)");
  expect_error<ValueError>([&] { f.rearrange("a b"); }, "[rearrange] 'a b' has no '->'");
  expect_error<ShapeError>([&] { f.rearrange("a b c -> a b c"); },
                           "[rearrange] 'a b c -> a b c' does not fit the shape (3,4)");
  expect_error<ValueError>([&] { f.rearrange("a b -> a"); },
                           "[rearrange] every name on the left of 'a b -> a' must appear on the right");
  expect_error<ValueError>([&] { f.rearrange("a b -> a b c"); },
                           "[rearrange] 'c' is on the right of 'a b -> a b c' but not on the left");
  expect_error<ShapeError>([&] { f.rearrange("a (b c) -> a b c", {{"b", 3}}); },
                           "[rearrange] cannot split axis 1 of size 4 by 3");
  expect_error<ValueError>([&] { f.rearrange("a (b c) -> a b c"); },
                           "[rearrange] the sizes of 'b' and 'c' are both unknown");
  expect_error<ValueError>([&] { f.rearrange("a (b -> a b"); }, "[rearrange] unbalanced parentheses in 'a (b -> a b'");
  expect_error<ValueError>([&] { f.rearrange("(a ...) -> a"); },
                           "[rearrange] '...' cannot be inside parentheses on the left of '(a ...) -> a'");
  expect_error<ShapeError>([&] { f.rearrange("... a ... -> a"); },
                           "[rearrange] '... a ... -> a' does not fit the shape (3,4)");
  expect_error<ShapeError>([&] { v.qr(); }, "[qr] needs at least 2 dimensions, got (3,)");
  expect_error<ShapeError>([&] { v.svd(); }, "[svd] needs at least 2 dimensions, got (3,)");
  expect_error<ShapeError>([&] { f.masked_select(Tensor::ones({2}, dtypes::bool_)); },
                           "[masked_select] cannot broadcast (3,4) with (2,)");
}
