#include "engine/eval_host.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <unordered_map>

#include <fmt/format.h>

#include "base/error.hpp"
#include "tensor/host_value.hpp"
#include "uop/scalar.hpp"

namespace tg::engine {

namespace {

// One evaluated node: floats live in f (already rounded to the dtype), bools and integers in i
// (wrapped to the dtype's width; uint64 as its bit pattern).
struct Array {
  DType dtype;
  IntVec shape;
  std::vector<double> f;
  std::vector<int64_t> i;

  bool is_float() const { return dtype.is_float(); }
  size_t numel() const { return is_float() ? f.size() : i.size(); }
  ConstValue get(size_t k) const { return is_float() ? ConstValue{f[k]} : ConstValue{i[k]}; }
  void resize(size_t n) { is_float() ? f.resize(n) : i.resize(n); }
};

Array make_array(DType d, IntVec shape) {
  Array a{d, std::move(shape), {}, {}};
  a.resize(
      static_cast<size_t>(std::accumulate(a.shape.begin(), a.shape.end(), int64_t{1}, std::multiplies<>())));
  return a;
}

void set(Array& a, size_t k, ConstValue v) {
  v = host::normalize(a.dtype, v);
  if (a.is_float())
    a.f[k] = std::get<double>(v);
  else
    a.i[k] = std::holds_alternative<bool>(v) ? int64_t{std::get<bool>(v)} : std::get<int64_t>(v);
}

IntVec strides_of(const IntVec& shape) {
  IntVec st(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) st[d - 1] = st[d] * shape[d];
  return st;
}

// For each element of a movement op's output, the flat index into its source (-1 where PAD adds one).
std::vector<int64_t> movement_map(const UOp& u, const IntVec& in, const IntVec& out) {
  size_t n = static_cast<size_t>(std::accumulate(out.begin(), out.end(), int64_t{1}, std::multiplies<>()));
  std::vector<int64_t> map(n);
  if (u.op() == Ops::RESHAPE) {
    std::iota(map.begin(), map.end(), int64_t{0});
    return map;
  }
  IntVec ist = strides_of(in), idx(out.size(), 0);
  for (size_t k = 0; k < n; k++) {
    int64_t src = 0;
    for (size_t d = 0; d < out.size() && src >= 0; d++) {
      int64_t o = idx[d];
      switch (u.op()) {
        case Ops::EXPAND:
          src += (in[d] == 1 ? 0 : o) * ist[d];
          break;
        case Ops::PERMUTE:
          src += o * ist[u.arg_as<IntVec>()[d]];
          break;
        case Ops::SHRINK:
          src += (o + static_cast<int64_t>(u.arg_as<ShapePairs>()[d].first)) * ist[d];
          break;
        case Ops::FLIP:
          src += (u.arg_as<IntVec>()[d] ? in[d] - 1 - o : o) * ist[d];
          break;
        case Ops::PAD: {
          int64_t c = o - static_cast<int64_t>(u.arg_as<ShapePairs>()[d].first);
          src = (c < 0 || c >= in[d]) ? -1 : src + c * ist[d];
          break;
        }
        default:
          throw NotSupportedError("eval", fmt::format("{} is not a movement op", op_name(u.op())));
      }
    }
    map[k] = src;
    for (size_t d = out.size(); d-- > 0;) {
      if (++idx[d] < out[d]) break;
      idx[d] = 0;
    }
  }
  return map;
}

Array gather(const Array& src, const std::vector<int64_t>& map, IntVec shape) {
  Array r = make_array(src.dtype, std::move(shape));
  for (size_t k = 0; k < map.size(); k++) {
    if (r.is_float())
      r.f[k] = map[k] < 0 ? 0.0 : src.f[map[k]];
    else
      r.i[k] = map[k] < 0 ? 0 : src.i[map[k]];
  }
  return r;
}

Array reduce(const UOp& u, const Array& src) {
  const ReduceArg& ra = u.arg_as<ReduceArg>();
  Array r = make_array(src.dtype, to_ints(*u.shape()));
  IntVec ost = strides_of(r.shape), idx(src.shape.size(), 0);
  std::vector<bool> reduced(src.shape.size(), false);
  for (int64_t a : ra.axes) reduced[a] = true;
  bool uns = src.dtype.scalar() == Scalar::UINT64;
  double finit = ra.op == Ops::ADD ? 0.0 : ra.op == Ops::MUL ? 1.0 : -INFINITY;
  int64_t iinit = ra.op == Ops::ADD   ? 0
                  : ra.op == Ops::MUL ? 1
                                      : (src.dtype.is_unsigned() ? 0 : src.dtype.min_int());
  if (src.is_float())
    std::fill(r.f.begin(), r.f.end(), finit);
  else
    std::fill(r.i.begin(), r.i.end(), src.dtype.is_bool() && ra.op == Ops::MAX ? 0 : iinit);
  for (size_t k = 0, n = src.numel(); k < n; k++) {
    int64_t o = 0;
    for (size_t d = 0; d < idx.size(); d++) o += reduced[d] ? 0 : idx[d] * ost[d];
    if (src.is_float()) {
      double &acc = r.f[o], v = src.f[k];
      acc = ra.op == Ops::ADD ? acc + v : ra.op == Ops::MUL ? acc * v : (v > acc || std::isnan(v) ? v : acc);
    } else {
      int64_t &acc = r.i[o], v = src.i[k];
      auto ua = static_cast<uint64_t>(acc), uv = static_cast<uint64_t>(v);
      if (ra.op == Ops::ADD)
        acc = static_cast<int64_t>(ua + uv);
      else if (ra.op == Ops::MUL)
        acc = static_cast<int64_t>(ua * uv);
      else
        acc = (uns ? uv > ua : v > acc) ? v : acc;
    }
    for (size_t d = idx.size(); d-- > 0;) {
      if (++idx[d] < src.shape[d]) break;
      idx[d] = 0;
    }
  }
  for (size_t k = 0; k < r.numel(); k++) set(r, k, r.get(k));
  return r;
}

// Every element through the one table of scalar semantics (uop/scalar.hpp), as INTERP and folding compute.
Array alu(const UOp& u, std::span<const Array* const> s) {
  Array r = make_array(u.dtype(), to_ints(*u.shape()));
  size_t n = r.numel();
  if (u.op() == Ops::WHERE) {
    for (size_t k = 0; k < n; k++) set(r, k, s[0]->i[k] ? s[1]->get(k) : s[2]->get(k));
    return r;
  }
  if (!scalar::defined(u.op(), s[0]->dtype))
    throw NotSupportedError("eval", fmt::format("{} on {} values", op_name(u.op()), s[0]->dtype.str()));
  scalar::Value v[3];
  for (size_t k = 0; k < n; k++) {
    for (size_t j = 0; j < s.size() && j < 3; j++)
      v[j] = s[j]->is_float() ? scalar::float_value(s[j]->f[k]) : scalar::int_value(s[j]->i[k]);
    scalar::Value o = scalar::alu(u.op(), r.dtype, s[0]->dtype, std::span(v, s.size()));
    if (r.is_float())
      r.f[k] = o.f;
    else
      r.i[k] = o.i;
  }
  return r;
}

Array cast(const UOp& u, const Array& a) {
  Array r = make_array(u.dtype(), to_ints(*u.shape()));
  if (u.op() == Ops::CAST) {
    for (size_t k = 0; k < r.numel(); k++) set(r, k, host::convert(r.dtype, a.dtype, a.get(k)));
    return r;
  }
  std::vector<std::byte> bytes(a.numel() * a.dtype.itemsize());
  for (size_t k = 0; k < a.numel(); k++)
    host::store(a.dtype, a.get(k), bytes.data() + k * a.dtype.itemsize());
  for (size_t k = 0; k < r.numel(); k++)
    set(r, k, host::load(r.dtype, bytes.data() + k * r.dtype.itemsize()));
  return r;
}

class Evaluator {
 public:
  explicit Evaluator(const StorageLookup& lookup) : lookup_(lookup) {}

  Array eval(const UOp& u, std::span<const Array* const> s) {
    Ops op = u.op();
    if (op == Ops::BUFFER) return read_buffer(u);
    if (op == Ops::CONST) {
      Array r = make_array(u.dtype(), {});
      set(r, 0, const_arg(u));
      return r;
    }
    if (op == Ops::BIND) return *s[1];
    if (op == Ops::RESHAPE) return Array{s[0]->dtype, to_ints(*u.shape()), s[0]->f, s[0]->i};
    if (group::Movement.contains(op))
      return gather(*s[0], movement_map(u, s[0]->shape, to_ints(*u.shape())), to_ints(*u.shape()));
    if (op == Ops::REDUCE_AXIS) return reduce(u, *s[0]);
    if (op == Ops::CAST || op == Ops::BITCAST) return cast(u, *s[0]);
    if (group::ALU.contains(op)) return alu(u, s);
    if (op == Ops::ASSIGN) return assign(u, *s[1]);
    if (op == Ops::CONTIGUOUS || op == Ops::DETACH || op == Ops::COPY || op == Ops::AFTER || op == Ops::NOOP)
      return *s[0];
    throw NotSupportedError("eval", fmt::format("the host evaluator cannot run {}", op_name(op)));
  }

 private:
  static ConstValue const_arg(const UOp& u) {
    const Arg& a = u.arg();
    if (auto* b = std::get_if<bool>(&a)) return *b;
    if (auto* i = std::get_if<int64_t>(&a)) return *i;
    if (auto* f = std::get_if<double>(&a)) return *f;
    throw ValueError("eval", "CONST without a value");
  }

  Array read_buffer(const UOp& u) {
    std::shared_ptr<Storage> st = lookup_(u);
    Array r = make_array(u.dtype(), to_ints(*u.shape()));
    size_t isz = u.dtype().itemsize();
    if (st->bytes.size() < r.numel() * isz)
      throw ValueError("eval", "buffer storage is smaller than its BUFFER");
    for (size_t k = 0; k < r.numel(); k++) set(r, k, host::load(u.dtype(), st->bytes.data() + k * isz));
    return r;
  }

  // Where each element of a view of a buffer lives in that buffer (-1 for padding), or nullopt.
  std::optional<std::pair<const UOp*, std::vector<int64_t>>> view_of_buffer(const UOp& u) {
    if (u.op() == Ops::BUFFER) {
      std::vector<int64_t> m(static_cast<size_t>(u.arg_as<int64_t>()));
      std::iota(m.begin(), m.end(), int64_t{0});
      return std::make_pair(&u, std::move(m));
    }
    if (!group::Movement.contains(u.op())) return std::nullopt;
    auto inner = view_of_buffer(*u.src(0));
    if (!inner) return std::nullopt;
    std::vector<int64_t> m = movement_map(u, to_ints(*u.src(0)->shape()), to_ints(*u.shape()));
    for (int64_t& k : m) k = k < 0 ? -1 : inner->second[k];
    return std::make_pair(inner->first, std::move(m));
  }

  Array assign(const UOp& u, const Array& value) {
    auto view = view_of_buffer(*u.src(0));
    if (!view) throw ValueError("assign", "the target is not a view of a buffer");
    std::shared_ptr<Storage> st = lookup_(*view->first);
    size_t isz = st->dtype.itemsize();
    for (size_t k = 0; k < view->second.size(); k++)
      if (view->second[k] >= 0)
        host::store(st->dtype, value.get(k), st->bytes.data() + view->second[k] * isz);
    return value;
  }

  const StorageLookup& lookup_;
};

}  // namespace

std::vector<std::vector<std::byte>> evaluate(std::span<const UOpRef> roots, const StorageLookup& lookup) {
  UOpRef sink = UOp::sink(std::vector<UOpRef>(roots.begin(), roots.end()));
  std::vector<const UOp*> order = sink->toposort();
  std::unordered_map<const UOp*, int> users;
  for (const UOp* u : order)
    for (const UOpRef& s : u->src()) users[s.get()]++;
  for (const UOpRef& r : roots) users[r.get()]++;  // roots stay until the end

  Evaluator ev(lookup);
  std::unordered_map<const UOp*, Array> memo;
  for (const UOp* u : order) {
    if (u->op() == Ops::SINK || u->op() == Ops::DEVICE || u->op() == Ops::UNIQUE) continue;
    std::vector<const Array*> srcs;
    for (const UOpRef& s : u->src())
      if (auto it = memo.find(s.get()); it != memo.end())
        srcs.push_back(&it->second);
      else if (s->op() != Ops::DEVICE && s->op() != Ops::UNIQUE)
        throw ValueError("eval",
                         fmt::format("{} has an unevaluated source {}", op_name(u->op()), op_name(s->op())));
    memo.emplace(u, ev.eval(*u, srcs));
    for (const UOpRef& s : u->src())
      if (--users[s.get()] == 0) memo.erase(s.get());
  }

  std::vector<std::vector<std::byte>> out;
  for (const UOpRef& r : roots) {
    const Array& a = memo.at(r.get());
    std::vector<std::byte> bytes(a.numel() * a.dtype.itemsize());
    for (size_t k = 0; k < a.numel(); k++)
      host::store(a.dtype, a.get(k), bytes.data() + k * a.dtype.itemsize());
    out.push_back(std::move(bytes));
  }
  return out;
}

}  // namespace tg::engine
