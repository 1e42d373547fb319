// Matrix products from primitives: line the operands up with reshape/expand, multiply, sum the shared
// axis. There is no MATMUL op; the scheduler and code generator see a fused multiply-reduce.
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <map>
#include <optional>
#include <unordered_set>

#include <fmt/format.h>

#include "base/error.hpp"
#include "runtime/registry.hpp"
#include "tensor/gradient.hpp"
#include "tensor/internal.hpp"
#include "tensor/multi.hpp"
#include "tensor/realize.hpp"

namespace tg {

// A CPU device (threads and SIMD, no workgroups) tiles a matmul's output two vectors wide along n (the
// heuristic's register tile), so the loop over k reads a strip of w that many columns wide. Row-major, each
// step along k lands on another page (1024 columns: 4 KiB apart) and the prefetcher does not follow; packed
// as (..., n/s, k, s) one strip is one contiguous run. The pack is a copy of w (n*k values against m*n*k
// multiplies) and the sum keeps its order, so results are unchanged: on AVX2, 1024^2 went 81 -> 150
// GFLOPS and 2048^2 60 -> 160, pack included. w is viewed back as (..., k, n), so the rest of dot and its
// gradient do not change.
int64_t detail::cpu_vector_width(const std::string& dev) {
  if (dev.find(',') != std::string::npos) {  // several devices: the layout every one of them reads well
    int64_t lanes = INT64_MAX;
    for (const std::string& d : split_devices(dev)) lanes = std::min(lanes, cpu_vector_width(d));
    return lanes;
  }
  const sdk::RendererCaps& caps = runtime::device(dev).caps();
  bool cpu = !caps.has_local && caps.has_threads && caps.max_vector_width >= 4;
  return cpu ? caps.max_vector_width : 0;
}

namespace {

// The strip layout of a CPU matmul weight (..., k, n): viewed as (..., k, n/s, s), packed with the middle axes
// swapped, (..., n/s, k, s). None where the device, the sizes or the row count m do not call for it.
struct Strips {
  Shape split;
  Dims swap;
};
std::optional<Strips> weight_strips(const Tensor& w, int64_t m) {
  if (w.ndim() < 2 || m < 32) return std::nullopt;
  int64_t lanes = detail::cpu_vector_width(w.device());
  if (lanes == 0) return std::nullopt;
  int64_t s = std::clamp<int64_t>(2 * lanes, 8, 32);
  int64_t k = w.shape()[static_cast<size_t>(w.ndim() - 2)], n = w.shape().back();
  if (n % s != 0 || n == s || k < 16 || m * n * k < (int64_t{1} << 21)) return std::nullopt;
  int d = w.ndim();
  Strips st{Shape(w.shape().begin(), w.shape().end() - 1), {}};
  st.split.push_back(n / s);
  st.split.push_back(s);
  for (int a = 0; a < d + 1; a++) st.swap.push_back(a);
  std::swap(st.swap[static_cast<size_t>(d - 2)], st.swap[static_cast<size_t>(d - 1)]);
  return st;
}

// Whether w is already the view back of a realized packed buffer (Tensor::packed_for_matmul's result).
bool is_packed(const Tensor& w, const Strips& st) {
  const UOpRef& u = w.uop();
  if (u->op() != Ops::RESHAPE || u->src(0)->op() != Ops::PERMUTE) return false;
  const UOpRef& base = u->src(0)->src(0);
  const IntVec& order = u->src(0)->arg_as<IntVec>();
  Shape packed(st.split);
  size_t d = static_cast<size_t>(w.ndim());
  std::swap(packed[d - 2], packed[d - 1]);
  return std::equal(order.begin(), order.end(), st.swap.begin(), st.swap.end()) && base->shape() &&
         *base->shape() == packed && engine::realized_buffer(base);
}

}  // namespace

Tensor detail::matmul_layout(const Tensor& w, int64_t m, bool contiguous) {
  std::optional<Strips> st = weight_strips(w, m);
  if (!st) return contiguous ? w.contiguous() : w;
  if (is_packed(w, *st)) return w;
  return w.reshape(st->split).permute(st->swap).contiguous().permute(st->swap).reshape(w.shape());
}

Tensor Tensor::packed_for_matmul() const {
  std::optional<Strips> st = weight_strips(*this, int64_t{1} << 21);  // any product that would pack it
  if (!st) return contiguous().realize();
  if (is_packed(*this, *st)) return *this;
  Tensor packed = reshape(st->split).permute(st->swap).contiguous().realize();
  return packed.permute(st->swap).reshape(shape());
}

Tensor detail::dot(const Tensor& x, const Tensor& w, std::optional<DType> dtype, bool layout) {
  int dx = x.ndim(), dw = w.ndim();
  if (dx == 0 || dw == 0)
    throw ShapeError("dot", fmt::format("both tensors need at least 1 dimension, got {}d and {}d", dx, dw));
  int axis_w = dw >= 2 ? dw - 2 : 0;  // the axis of w that meets x's last axis
  if (x.shape().back() != w.shape()[axis_w])
    throw ShapeError("dot",
                     fmt::format("cannot multiply {} by {}", shape_str(x.shape()), shape_str(w.shape())));
  check_same_device(x, w, "dot");
  // x: (..., m, 1, k)   w: (..., 1, n, k) -> x*w summed over k
  int extra = std::min({dx - 1, dw - 1, 1});
  Shape xs(x.shape().begin(), x.shape().end() - 1), ws(w.shape().begin(), w.shape().begin() + axis_w);
  xs.insert(xs.end(), extra, 1);
  xs.push_back(x.shape().back());
  ws.insert(ws.end(), extra, 1);
  ws.insert(ws.end(), w.shape().begin() + axis_w, w.shape().end());
  sint m = 1;  // rows of the product; the layout choice takes a symbolic count at its largest
  for (int a = 0; a + 1 < dx; a++) m *= x.shape()[static_cast<size_t>(a)];
  Tensor wt = (layout ? matmul_layout(w, m.max(), false) : w).reshape(ws).transpose(-1, axis_w - dw);
  DType out = dtype.value_or(dtypes::least_upper(x.dtype(), w.dtype()));
  return (x.reshape(xs) * wt).sum(-1, false, dtype).cast(out);
}

namespace {

// Whether a matmul operand read `reuse` times per value is better computed once into memory: it does
// arithmetic (a layernorm, a gelu, a gradient's product), which would otherwise run inside the matmul's
// loop once per read and turn its broadcast loads into gathers, and it is no bigger than the largest value
// it is computed from (buffers, reduces: a one-hot row of indices stays a recomputed compare).
bool store_operand(const Tensor& t, int64_t reuse) {
  if (reuse < 16 || is_symbolic(t.shape())) return false;
  bool computes = false;
  int64_t biggest = 0;
  std::vector<const UOp*> stack{t.uop().get()};
  std::unordered_set<const UOp*> seen;
  while (!stack.empty()) {
    const UOp* u = stack.back();
    stack.pop_back();
    if (!seen.insert(u).second) continue;
    computes = computes || group::ALU.contains(u->op());
    if (OpSet{Ops::BUFFER, Ops::REDUCE_AXIS, Ops::CONTIGUOUS, Ops::DETACH}.contains(u->op())) {
      if (const Shape* s = u->shape()) biggest = std::max(biggest, prod(*s).max());
      continue;
    }
    for (const UOpRef& s : u->src()) stack.push_back(s.get());
  }
  return computes && prod(t.shape()).max() <= biggest;
}

}  // namespace

Tensor Tensor::dot(const Tensor& w, std::optional<DType> dtype) const {
  int dx = ndim(), dw = w.ndim();
  if (dx < 2 || dw < 2 || is_symbolic(shape()) || is_symbolic(w.shape()))
    return detail::dot(*this, w, dtype, true);
  int64_t m = shape()[static_cast<size_t>(dx - 2)].max(), n = w.shape().back().max();
  Tensor x = store_operand(*this, n) ? contiguous() : *this, wi = store_operand(w, m) ? w.contiguous() : w;
  Tensor ret = detail::dot(x, wi, dtype, true);
  // A matmul that needs gradients gets its own backward rule: dx = dy w^T and dw = x^T dy are matmuls of
  // their own, with w and dy laid out by matmul_layout, instead of the derivative of the multiply-reduce,
  // which reads w in the forward's layout and recomputes dy's arithmetic inside both loops.
  auto batch = [](const Tensor& t) { return Shape(t.shape().begin(), t.shape().end() - 2); };
  if (!(requires_grad() || w.requires_grad()) || !ret.dtype().is_float() ||
      !(dw == 2 || batch(*this) == batch(w)) || device().find(',') != std::string::npos)
    return ret;
  std::vector<UOpRef> inputs{x.uop(), wi.uop()};
  std::string dev = device();
  CustomBackward back = [=](const UOpRef& g) {
    Tensor xv(inputs[0], dev), wv(inputs[1], dev), dy(g, dev);
    int64_t k = xv.shape().back().max();
    if (store_operand(dy, k)) dy = dy.contiguous();
    Tensor gx = detail::dot(dy, wv.transpose(-1, -2), dtype, true);
    // x^T copied row-major: a register tile's rows then each read one contiguous run along the reduce, where
    // x itself would be read a few values per row, rows kilobytes apart
    Tensor xt = (dw == 2 ? xv.reshape({-1, k}).transpose() : xv.transpose(-1, -2)).contiguous();
    Tensor gw = detail::dot(xt, dw == 2 ? dy.reshape({-1, n}) : dy, dtype, true);
    return std::vector<UOpRef>{gx.cast(xv.dtype()).uop(), gw.cast(wv.dtype()).uop()};
  };
  std::string key = fmt::format("{} {}", dtype ? dtype->name() : "default", dev);
  return detail::derive(custom_gradient(ret.uop(), inputs, std::move(back), "dot", key), ret, {&ret});
}

Tensor Tensor::matmul(const Tensor& w, std::optional<DType> dtype) const { return dot(w, dtype); }

Tensor Tensor::linear(const Tensor& weight, const Tensor& bias, std::optional<DType> dtype) const {
  Tensor x = weight.ndim() == 1 ? *this * weight : dot(weight, dtype);
  return bias.defined() ? x + bias : x;
}

namespace {

// The diagonal over axes j < k of equal size n, moved to the end (Tensor::diagonal).
Tensor repeated_diagonal(const Tensor& x, int j, int k) {
  int64_t n = x.shape()[j];
  if (x.shape()[k] != n)
    throw ShapeError("einsum",
                     fmt::format("a repeated index needs equal sizes, got {} and {}", n, x.shape()[k]));
  return x.diagonal(0, j, k);
}

// Replaces "..." in each operand's indices by letters no operand names, aligned from the right across
// operands (equal sizes, no broadcasting); returns the letters of the longest ellipsis ("" without one).
std::string expand_ellipsis(std::vector<std::string>& inputs, const std::vector<Tensor>& xs) {
  int most = 0;
  for (size_t i = 0; i < inputs.size(); i++)
    if (inputs[i].find("...") != std::string::npos)
      most = std::max(most, xs[i].ndim() - static_cast<int>(inputs[i].size() - 3));
  std::string free;
  for (char c = 'A'; c <= 'z' && static_cast<int>(free.size()) < most; c++)
    if (std::isalpha(static_cast<unsigned char>(c)) &&
        std::none_of(inputs.begin(), inputs.end(), [c](const std::string& s) { return s.find(c) != std::string::npos; }))
      free += c;
  for (size_t i = 0; i < inputs.size(); i++)
    if (size_t e = inputs[i].find("..."); e != std::string::npos) {
      int n = xs[i].ndim() - static_cast<int>(inputs[i].size() - 3);
      if (n < 0) throw ShapeError("einsum", fmt::format("operand {} has too few axes for '{}'", i, inputs[i]));
      inputs[i].replace(e, 3, free.substr(free.size() - static_cast<size_t>(n)));
    }
  return free;
}

}  // namespace

Tensor Tensor::einsum(std::string_view formula, std::vector<Tensor> xs, std::optional<DType> dtype) {
  std::string f;
  for (char c : formula)
    if (c != ' ') f += c;
  size_t arrow = f.find("->");
  std::string lhs = f.substr(0, arrow), rhs;
  std::vector<std::string> inputs(1);
  for (char c : lhs) {
    if (c == ',')
      inputs.emplace_back();
    else
      inputs.back().push_back(c);
  }
  if (inputs.size() != xs.size())
    throw ValueError(
        "einsum", fmt::format("'{}' names {} operands but {} were given", formula, inputs.size(), xs.size()));
  std::string ellipsis = expand_ellipsis(inputs, xs);
  if (!ellipsis.empty()) {
    lhs.clear();
    for (const std::string& s : inputs) lhs += (lhs.empty() ? "" : ",") + s;
  }
  for (char c : lhs)
    if (c != ',' && !std::isalpha(static_cast<unsigned char>(c)))
      throw ValueError("einsum", fmt::format("'{}' is not a letter in '{}'", c, formula));
  if (arrow != std::string::npos) {
    rhs = f.substr(arrow + 2);
    if (size_t e = rhs.find("..."); e != std::string::npos) rhs.replace(e, 3, ellipsis);
  } else {
    rhs = ellipsis;  // NumPy's order: the ellipsis axes, then the indices named once
    for (char c = 'A'; c <= 'z'; c++)
      if (std::count(lhs.begin(), lhs.end(), c) == 1 && ellipsis.find(c) == std::string::npos) rhs += c;
  }

  std::map<char, int64_t> sizes;
  for (size_t i = 0; i < xs.size(); i++) {
    std::string& s = inputs[i];
    if (static_cast<int>(s.size()) != xs[i].ndim())
      throw ShapeError("einsum",
                       fmt::format("operand {} has {} axes but '{}' names {}", i, xs[i].ndim(), s, s.size()));
    while (true) {  // a letter twice in one operand: take the diagonal, which becomes the last axis
      size_t j = 0, k = std::string::npos;
      for (size_t a = 0; a < s.size() && k == std::string::npos; a++) {
        j = a;
        k = s.find(s[a], a + 1);
      }
      if (k == std::string::npos) break;
      char c = s[j];
      xs[i] = repeated_diagonal(xs[i], static_cast<int>(j), static_cast<int>(k));
      s.erase(k, 1);
      s.erase(j, 1);
      s.push_back(c);
    }
    for (size_t j = 0; j < s.size(); j++) {
      auto [it, fresh] = sizes.emplace(s[j], xs[i].shape()[j]);
      if (!fresh && it->second != xs[i].shape()[j])
        throw ShapeError("einsum", fmt::format("'{}' has size {} in one operand and {} in another", s[j],
                                               it->second, xs[i].shape()[j]));
    }
  }
  for (char c : rhs)
    if (!sizes.count(c))
      throw ValueError("einsum", fmt::format("output index '{}' is not in any operand", c));

  std::string alpha;
  for (auto& [c, n] : sizes) alpha += c;
  Tensor prod;
  for (size_t i = 0; i < xs.size(); i++) {
    std::string sorted = inputs[i];
    std::sort(sorted.begin(), sorted.end());
    Dims perm;
    for (char c : sorted) perm.push_back(static_cast<int>(inputs[i].find(c)));
    Shape aligned;
    for (char c : alpha) aligned.push_back(sorted.find(c) != std::string::npos ? sizes[c] : 1);
    Tensor x = xs[i].permute(perm).reshape(aligned);
    prod = prod.defined() ? prod * x : x;
  }
  std::vector<int> summed;
  std::string kept;
  for (size_t i = 0; i < alpha.size(); i++) {
    if (rhs.find(alpha[i]) == std::string::npos)
      summed.push_back(static_cast<int>(i));
    else
      kept += alpha[i];
  }
  Tensor r = summed.empty() ? prod : prod.sum(summed, false, dtype);
  Dims order;
  for (char c : rhs) order.push_back(static_cast<int>(kept.find(c)));
  return r.permute(order);
}

}  // namespace tg
