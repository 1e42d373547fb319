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

namespace tg::host {

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
  v = normalize(a.dtype, v);
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

uint64_t threefry2x32(uint64_t x, uint64_t key) {
  auto rotl = [](uint32_t v, int r) { return (v << r) | (v >> (32 - r)); };
  uint32_t k0 = static_cast<uint32_t>(key), k1 = static_cast<uint32_t>(key >> 32);
  uint32_t ks[3] = {k1, k0 ^ k1 ^ 0x1BD11BDAu, k0};
  uint32_t x0 = static_cast<uint32_t>(x) + ks[2], x1 = static_cast<uint32_t>(x >> 32) + ks[0];
  const int rot[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};
  for (int i = 0; i < 5; i++) {
    for (int r : rot[i % 2]) {
      x0 += x1;
      x1 = x0 ^ rotl(x1, r);
    }
    x0 += ks[i % 3];
    x1 += ks[(i + 1) % 3] + static_cast<uint32_t>(i + 1);
  }
  return (static_cast<uint64_t>(x1) << 32) | x0;
}

double float_alu(Ops op, double a, double b, double c) {
  switch (op) {
    case Ops::EXP2:
      return std::exp2(a);
    case Ops::LOG2:
      return std::log2(a);
    case Ops::SIN:
      return std::sin(a);
    case Ops::SQRT:
      return std::sqrt(a);
    case Ops::RECIPROCAL:
      return 1.0 / a;
    case Ops::NEG:
      return -a;
    case Ops::TRUNC:
      return std::trunc(a);
    case Ops::ADD:
      return a + b;
    case Ops::MUL:
      return a * b;
    case Ops::FDIV:
      return a / b;
    case Ops::IDIV:
      return std::trunc(a / b);
    case Ops::MOD:
      return std::fmod(a, b);
    case Ops::MAX:
      return a > b ? a : b;
    case Ops::POW:
      return std::pow(a, b);
    case Ops::CMPLT:
      return a < b;
    case Ops::CMPNE:
      return a != b;
    case Ops::CMPEQ:
      return a == b;
    case Ops::MULACC:
      return a * b + c;
    default:
      throw NotSupportedError("eval", fmt::format("{} on float values", op_name(op)));
  }
}

int64_t int_pow(int64_t a, int64_t b) {
  if (b < 0) return a == 1 ? 1 : a == -1 ? (b % 2 ? -1 : 1) : 0;
  uint64_t r = 1, base = static_cast<uint64_t>(a);
  for (auto e = static_cast<uint64_t>(b); e; e >>= 1, base *= base)
    if (e & 1) r *= base;
  return static_cast<int64_t>(r);
}

// Integer semantics of dtype d (the sources' dtype): wrapping arithmetic, C division, logical right
// shift for unsigned types. Division by zero gives 0 instead of trapping.
int64_t int_alu(Ops op, DType d, int64_t a, int64_t b, int64_t c) {
  bool u64 = d.scalar() == Scalar::UINT64;
  auto ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
  switch (op) {
    case Ops::NEG:
      return static_cast<int64_t>(0 - ua);
    case Ops::TRUNC:
      return a;
    case Ops::ADD:
      return static_cast<int64_t>(ua + ub);
    case Ops::MUL:
      return static_cast<int64_t>(ua * ub);
    case Ops::MULACC:
      return static_cast<int64_t>(ua * ub + static_cast<uint64_t>(c));
    case Ops::IDIV:
    case Ops::FDIV:
      if (b == 0) return 0;
      if (u64) return static_cast<int64_t>(ua / ub);
      return (a == std::numeric_limits<int64_t>::min() && b == -1) ? a : a / b;
    case Ops::MOD:
      if (b == 0) return 0;
      if (u64) return static_cast<int64_t>(ua % ub);
      return b == -1 ? 0 : a % b;
    case Ops::MAX:
      return (u64 ? ua > ub : a > b) ? a : b;
    case Ops::CMPLT:
      return u64 ? ua < ub : a < b;
    case Ops::CMPNE:
      return a != b;
    case Ops::CMPEQ:
      return a == b;
    case Ops::AND:
      return a & b;
    case Ops::OR:
      return a | b;
    case Ops::XOR:
      return a ^ b;
    case Ops::SHL:
      return (b < 0 || b >= 64) ? 0 : static_cast<int64_t>(ua << b);
    case Ops::SHR:
      if (d.is_unsigned()) return (b < 0 || b >= 64) ? 0 : static_cast<int64_t>(ua >> b);
      return a >> std::clamp<int64_t>(b, 0, 63);
    case Ops::POW:
      return int_pow(a, b);
    case Ops::THREEFRY:
      return static_cast<int64_t>(threefry2x32(ua, ub));
    default:
      throw NotSupportedError("eval", fmt::format("{} on integer values", op_name(op)));
  }
}

Array alu(const UOp& u, std::span<const Array* const> s) {
  Array r = make_array(u.dtype(), to_ints(*u.shape()));
  size_t n = r.numel();
  if (u.op() == Ops::WHERE) {
    for (size_t k = 0; k < n; k++) set(r, k, s[0]->i[k] ? s[1]->get(k) : s[2]->get(k));
    return r;
  }
  const Array& a = *s[0];
  DType d = a.dtype;
  for (size_t k = 0; k < n; k++) {
    if (a.is_float()) {
      double x = a.f[k], y = s.size() > 1 ? s[1]->f[k] : 0.0, z = s.size() > 2 ? s[2]->f[k] : 0.0;
      double v = float_alu(u.op(), x, y, z);
      if (r.is_float())
        r.f[k] = dtypes::truncate_float(r.dtype, v);
      else
        r.i[k] = v != 0;
    } else if (group::Unary.contains(u.op()) && u.op() != Ops::NEG && u.op() != Ops::TRUNC) {
      set(r, k, float_alu(u.op(), as_double(d, a.i[k]), 0, 0));
    } else {
      int64_t y = s.size() > 1 ? s[1]->i[k] : 0, z = s.size() > 2 ? s[2]->i[k] : 0;
      set(r, k, int_alu(u.op(), d, a.i[k], y, z));
    }
  }
  return r;
}

Array cast(const UOp& u, const Array& a) {
  Array r = make_array(u.dtype(), to_ints(*u.shape()));
  if (u.op() == Ops::CAST) {
    for (size_t k = 0; k < r.numel(); k++) set(r, k, convert(r.dtype, a.dtype, a.get(k)));
    return r;
  }
  std::vector<std::byte> bytes(a.numel() * a.dtype.itemsize());
  for (size_t k = 0; k < a.numel(); k++) store(a.dtype, a.get(k), bytes.data() + k * a.dtype.itemsize());
  for (size_t k = 0; k < r.numel(); k++) set(r, k, load(r.dtype, bytes.data() + k * r.dtype.itemsize()));
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
    for (size_t k = 0; k < r.numel(); k++) set(r, k, load(u.dtype(), st->bytes.data() + k * isz));
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
      if (view->second[k] >= 0) store(st->dtype, value.get(k), st->bytes.data() + view->second[k] * isz);
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
    for (size_t k = 0; k < a.numel(); k++) store(a.dtype, a.get(k), bytes.data() + k * a.dtype.itemsize());
    out.push_back(std::move(bytes));
  }
  return out;
}

}  // namespace tg::host
