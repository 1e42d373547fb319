// Integer range analysis (UOp::vmin / vmax): sound bounds for every value a node can take, computed in
// 128 bits so a result that leaves its dtype is seen as wrapping (then the bounds are the whole dtype).
#include "uop/range.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

namespace tg {

namespace {

constexpr uint8_t kReady = 1, kInexact = 2, kBusy = 4;
constexpr i128 kI64Min = std::numeric_limits<int64_t>::min(), kI64Max = std::numeric_limits<int64_t>::max();

int scalar_bits(DType d) {
  return d.scalar() == Scalar::INDEX ? 64 : static_cast<int>(d.scalar_itemsize() * 8);
}

i128 bitmask_above(i128 v) {  // smallest 2^k-1 >= v, for v >= 0
  i128 m = 0;
  while (m < v) m = m * 2 + 1;
  return m;
}

struct Ctx {
  DType d;
  i128 lo_d, hi_d;
  IntRange full(bool exact) const { return {lo_d, hi_d, exact}; }
  IntRange fit(i128 lo, i128 hi) const {
    return lo >= lo_d && hi <= hi_d ? IntRange{lo, hi, true} : full(false);
  }
  static IntRange boolean(bool lo, bool hi) { return {lo ? 1 : 0, hi ? 1 : 0, true}; }
};

// Products of two 65-bit values can leave 128 bits; report that as overflow.
bool mul_ok(i128 a, i128 b, i128& out) { return !__builtin_mul_overflow(a, b, &out); }

IntRange range_mul(const Ctx& c, const IntRange& a, const IntRange& b) {
  i128 v[4];
  if (!mul_ok(a.lo, b.lo, v[0]) || !mul_ok(a.lo, b.hi, v[1]) || !mul_ok(a.hi, b.lo, v[2]) ||
      !mul_ok(a.hi, b.hi, v[3]))
    return c.full(false);
  return c.fit(*std::min_element(v, v + 4), *std::max_element(v, v + 4));
}

IntRange range_idiv(const Ctx& c, const IntRange& a, const IntRange& b) {
  if (b.lo == 0 && b.hi == 0) return c.full(false);
  i128 lo = 0, hi = 0;
  bool any = false;
  auto part = [&](i128 blo, i128 bhi) {  // a divisor interval without zero: extremes are at the corners
    for (i128 x : {a.lo, a.hi})
      for (i128 y : {blo, bhi}) {
        i128 q = x / y;
        lo = any ? std::min(lo, q) : q, hi = any ? std::max(hi, q) : q, any = true;
      }
  };
  if (b.lo < 0) part(b.lo, std::min<i128>(b.hi, -1));
  if (b.hi > 0) part(std::max<i128>(b.lo, 1), b.hi);
  return c.fit(lo, hi);
}

IntRange range_mod(const Ctx& c, const IntRange& a, const IntRange& b) {
  if (b.lo == 0 && b.hi == 0) return c.full(false);
  // one divisor and one quotient over the whole range: a % b = a - q*b grows with a
  if (b.lo == b.hi && a.lo / b.lo == a.hi / b.lo) return {a.lo % b.lo, a.hi % b.lo, true};
  i128 m = std::max(b.lo < 0 ? -b.lo : b.lo, b.hi < 0 ? -b.hi : b.hi) - 1;
  return {a.lo >= 0 ? 0 : std::max(a.lo, -m), a.hi <= 0 ? 0 : std::min(a.hi, m), true};
}

IntRange range_bitwise(const Ctx& c, Ops op, const IntRange& a, const IntRange& b) {
  if (c.d.is_bool()) {
    if (op == Ops::AND) return Ctx::boolean(a.lo & b.lo, a.hi & b.hi);
    if (op == Ops::OR) return Ctx::boolean(a.lo | b.lo, a.hi | b.hi);
    if (a.lo == a.hi && b.lo == b.hi) return Ctx::boolean(a.lo ^ b.lo, a.lo ^ b.lo);
    return Ctx::boolean(false, true);
  }
  bool an = a.lo >= 0, bn = b.lo >= 0;
  if (op == Ops::AND) {  // a nonnegative operand bounds the result from both sides
    if (an && bn) return {0, std::min(a.hi, b.hi), true};
    if (an || bn) return {0, an ? a.hi : b.hi, true};
    return c.full(true);
  }
  if (!(an && bn)) return c.full(true);
  i128 top = bitmask_above(std::max(a.hi, b.hi));
  return op == Ops::OR ? IntRange{std::max(a.lo, b.lo), top, true} : IntRange{0, top, true};
}

IntRange range_shift(const Ctx& c, Ops op, const IntRange& a, const IntRange& s) {
  if (s.lo < 0 || s.hi >= scalar_bits(c.d)) return c.full(false);
  if (op == Ops::SHL) {
    if (s.lo != s.hi) return c.full(false);
    return range_mul(c, a,
                     IntRange{i128{1} << static_cast<int>(s.lo), i128{1} << static_cast<int>(s.lo), true});
  }
  int s1 = static_cast<int>(s.lo), s2 = static_cast<int>(s.hi);
  if (a.lo >= 0) return {a.lo >> s2, a.hi >> s1, true};
  if (a.hi < 0) return {a.lo >> s1, a.hi >> s2, true};
  return {a.lo >> s1, a.hi >> s1, true};
}

IntRange range_cmp(Ops op, const UOp& x, const UOp& y) {
  bool lo, hi;  // "always true" and "maybe true"
  if (x.dtype().is_float()) {
    auto [alo, ahi] = float_range(x);
    auto [blo, bhi] = float_range(y);
    bool disjoint = ahi < blo || bhi < alo, same = alo == ahi && blo == bhi && alo == blo;
    if (op == Ops::CMPLT)
      lo = ahi < blo, hi = !(alo >= bhi);
    else if (op == Ops::CMPNE)
      lo = disjoint, hi = !same;
    else
      lo = same, hi = !disjoint;
    return Ctx::boolean(lo, hi);
  }
  if (!(is_intlike(x.dtype()) || x.dtype().is_bool())) return Ctx::boolean(false, true);
  IntRange a = int_range(x), b = int_range(y);
  bool disjoint = a.hi < b.lo || b.hi < a.lo, same = a.lo == a.hi && b.lo == b.hi && a.lo == b.lo;
  if (op == Ops::CMPLT)
    lo = a.hi < b.lo, hi = a.lo < b.hi;
  else if (op == Ops::CMPNE)
    lo = disjoint, hi = !same;
  else
    lo = same, hi = !disjoint;
  return Ctx::boolean(lo, hi);
}

IntRange range_cast(const Ctx& c, const UOp& src) {
  DType sd = src.dtype();
  if (c.d.is_bool()) {
    if (sd.is_float()) {
      auto [lo, hi] = float_range(src);
      return Ctx::boolean(lo > 0 || hi < 0, !(lo == 0 && hi == 0));
    }
    if (!sd.is_bool() && !is_intlike(sd)) return c.full(true);
    IntRange s = int_range(src);
    return Ctx::boolean(s.lo > 0 || s.hi < 0, !(s.lo == 0 && s.hi == 0));
  }
  if (!sd.is_bool() && !is_intlike(sd)) return c.full(false);
  return c.fit(int_range(src).lo, int_range(src).hi);
}

IntRange compute(const UOp& u) {
  DType d = u.dtype();
  Ctx c{d, dtype_lo(d), dtype_hi(d)};
  auto src = [&](size_t i) { return int_range(*u.src(i)); };
  auto is_num = [&](size_t i) {
    return u.src().size() > i && (is_intlike(u.src(i)->dtype()) || u.src(i)->dtype().is_bool());
  };
  Ops op = u.op();
  if (d.is_bool() && (op == Ops::ADD || op == Ops::MAX)) op = Ops::OR;  // bool arithmetic is logic
  if (d.is_bool() && op == Ops::MUL) op = Ops::AND;
  switch (op) {
    case Ops::CONST: {
      i128 v = int_value(d, *u.const_value());
      return {v, v, true};
    }
    case Ops::DEFINE_VAR:
      if (const VarArg* v = std::get_if<VarArg>(&u.arg()))
        return {std::max<i128>(v->min, c.lo_d), std::min<i128>(v->max, c.hi_d), true};
      return c.full(true);
    case Ops::RANGE:
    case Ops::SPECIAL:
      if (!is_num(0)) return c.full(true);
      return c.fit(0, std::max<i128>(src(0).hi - 1, 0));
    case Ops::BIND:
    case Ops::GEP:
    case Ops::TRUNC:
      return is_num(0) ? src(0) : c.full(true);
    case Ops::VECTORIZE: {
      if (u.src().empty() || !is_num(0)) return c.full(true);
      IntRange r = src(0);
      for (size_t i = 1; i < u.src().size(); i++) {
        IntRange s = src(i);
        r = {std::min(r.lo, s.lo), std::max(r.hi, s.hi), r.exact && s.exact};
      }
      return r;
    }
    case Ops::CAST:
      return u.src().size() == 1 ? range_cast(c, *u.src(0)) : c.full(false);
    case Ops::CMPLT:
    case Ops::CMPNE:
    case Ops::CMPEQ:
      return u.src().size() == 2 ? range_cmp(op, *u.src(0), *u.src(1)) : c.full(true);
    case Ops::WHERE: {
      if (u.src().size() != 3 || !is_num(1)) return c.full(true);
      IntRange cond = src(0), a = src(1), b = src(2);
      if (cond.lo == 1) return a;
      if (cond.hi == 0) return b;
      return {std::min(a.lo, b.lo), std::max(a.hi, b.hi), true};
    }
    default:
      break;
  }
  if (!group::ALU.contains(op) || !is_num(0) || (u.src().size() > 1 && !is_num(1)))
    return c.full(!d.is_bool());
  if (d.is_bool() && !(op == Ops::AND || op == Ops::OR || op == Ops::XOR)) return Ctx::boolean(false, true);
  IntRange a = src(0), b = u.src().size() > 1 ? src(1) : IntRange{};
  switch (op) {
    case Ops::ADD:
      return c.fit(a.lo + b.lo, a.hi + b.hi);
    case Ops::MUL:
      return range_mul(c, a, b);
    case Ops::NEG:
      return c.fit(-a.hi, -a.lo);
    case Ops::IDIV:
      return range_idiv(c, a, b);
    case Ops::MOD:
      return range_mod(c, a, b);
    case Ops::MAX:
      return {std::max(a.lo, b.lo), std::max(a.hi, b.hi), true};
    case Ops::AND:
    case Ops::OR:
    case Ops::XOR:
      return range_bitwise(c, op, a, b);
    case Ops::SHL:
    case Ops::SHR:
      return range_shift(c, op, a, b);
    case Ops::MULACC: {
      if (u.src().size() != 3) return c.full(false);
      IntRange m = range_mul(c, a, b), s = src(2);
      return m.exact ? c.fit(m.lo + s.lo, m.hi + s.hi) : c.full(false);
    }
    default:
      return c.full(false);
  }
}

// Which sources compute() reads, so the walk does not wander into loads and buffers.
bool reads_sources(const UOp& u) {
  return group::ALU.contains(u.op()) || u.op() == Ops::CAST || u.op() == Ops::RANGE ||
         u.op() == Ops::SPECIAL || u.op() == Ops::BIND || u.op() == Ops::GEP || u.op() == Ops::VECTORIZE;
}

bool needs_int_range(DType d) { return !d.is_ptr() && (d.is_bool() || d.is_int()); }

}  // namespace

bool is_intlike(DType d) { return !d.is_ptr() && d.is_int(); }

namespace {
struct Bounds {
  i128 lo, hi;
};
// Per scalar type, computed once: range analysis asks for these on every node.
const std::array<Bounds, kScalarCount>& bounds_table() {
  static const std::array<Bounds, kScalarCount> table = [] {
    std::array<Bounds, kScalarCount> t{};
    for (int i = 0; i < kScalarCount; i++) {
      DType d(static_cast<Scalar>(i));
      if (d.is_bool())
        t[i] = {0, 1};
      else if (d.scalar() == Scalar::INDEX)
        t[i] = {kI64Min, kI64Max};
      else if (!d.is_int())
        t[i] = {0, 0};
      else if (d.is_unsigned())
        t[i] = {0, (i128{1} << scalar_bits(d)) - 1};
      else
        t[i] = {-(i128{1} << (scalar_bits(d) - 1)), (i128{1} << (scalar_bits(d) - 1)) - 1};
    }
    return t;
  }();
  return table;
}
}  // namespace

i128 dtype_lo(DType d) { return bounds_table()[static_cast<int>(d.scalar())].lo; }
i128 dtype_hi(DType d) { return bounds_table()[static_cast<int>(d.scalar())].hi; }

i128 wrap_to(DType d, i128 v) {
  if (d.is_bool()) return v != 0;
  if (v >= dtype_lo(d) && v <= dtype_hi(d)) return v;
  int bits = scalar_bits(d);
  unsigned __int128 m = static_cast<unsigned __int128>(v) & ((static_cast<unsigned __int128>(1) << bits) - 1);
  i128 r = static_cast<i128>(m);
  if (!d.is_unsigned() && r > dtype_hi(d)) r -= i128{1} << bits;
  return r;
}

i128 int_value(DType d, const ConstValue& v) {
  if (const bool* b = std::get_if<bool>(&v)) return *b ? 1 : 0;
  if (const double* f = std::get_if<double>(&v)) return std::isfinite(*f) ? static_cast<i128>(*f) : 0;
  int64_t i = std::get<int64_t>(v);
  if (d.is_bool()) return i != 0;
  // values are stored wrapped already; only uint64 needs its bit pattern read back as unsigned
  if (d.scalar() == Scalar::UINT64) return static_cast<i128>(static_cast<uint64_t>(i));
  return d.is_unsigned() || d.scalar() == Scalar::INT64 || d.scalar() == Scalar::INDEX ? i : wrap_to(d, i);
}

std::pair<double, double> float_range(const UOp& u) {
  if (const ConstValue* v = u.const_value()) {
    double f = std::visit([](auto x) { return static_cast<double>(x); }, *v);
    return {f, f};
  }
  constexpr double inf = std::numeric_limits<double>::infinity();
  return {-inf, inf};
}

// The memo lives in the node: flags first (acquire/release), one writer claims it with kBusy.
class RangeAnalysis {
 public:
  static bool ready(const UOp& u, IntRange& r) {
    uint8_t f = u.range_cached_.load(std::memory_order_acquire);
    if (!(f & kReady)) return false;
    r = {int_value(u.dtype_, u.vmin_), int_value(u.dtype_, u.vmax_), !(f & kInexact)};
    return true;
  }
  static void store(const UOp& u, const IntRange& r) {
    uint8_t expect = 0;
    if (!u.range_cached_.compare_exchange_strong(expect, kBusy, std::memory_order_acquire)) return;
    u.vmin_ = encode(u.dtype_, r.lo), u.vmax_ = encode(u.dtype_, r.hi);
    u.range_cached_.store(r.exact ? kReady : kReady | kInexact, std::memory_order_release);
  }
  static ConstValue encode(DType d, i128 v) {
    if (d.is_bool()) return ConstValue{v != 0};
    return ConstValue{static_cast<int64_t>(static_cast<uint64_t>(wrap_to(d, v)))};
  }
};

UOpRef int_const(DType d, i128 v) { return UOp::const_(d, RangeAnalysis::encode(d, v)); }

IntRange int_range(const UOp& root) {
  if (!needs_int_range(root.dtype())) return {0, 0, false};
  IntRange out;
  if (RangeAnalysis::ready(root, out)) return out;
  // Post-order walk without recursion: graphs can be deeper than the stack.
  std::vector<std::pair<const UOp*, size_t>> stack{{&root, 0}};
  IntRange tmp;
  while (!stack.empty()) {
    auto& [u, i] = stack.back();
    if (reads_sources(*u) && i < u->src().size()) {
      const UOp* s = u->src()[i++].get();
      if (needs_int_range(s->dtype()) && !RangeAnalysis::ready(*s, tmp)) stack.emplace_back(s, 0);
      continue;
    }
    IntRange r = compute(*u);
    RangeAnalysis::store(*u, r);
    if (u == &root) out = r;
    stack.pop_back();
  }
  return out;
}

ConstValue UOp::vmin() const {
  if (dtype_.is_float()) return float_range(*this).first;
  if (!needs_int_range(dtype_)) return int64_t{0};
  return RangeAnalysis::encode(dtype_, int_range(*this).lo);
}

ConstValue UOp::vmax() const {
  if (dtype_.is_float()) return float_range(*this).second;
  if (!needs_int_range(dtype_)) return int64_t{0};
  return RangeAnalysis::encode(dtype_, int_range(*this).hi);
}

}  // namespace tg
