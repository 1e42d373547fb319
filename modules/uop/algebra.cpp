// Canonical sums and products, and the div/mod and comparison folding the symbolic rules call.
// All reasoning is over true integers (128-bit), guarded by range analysis so wrap-around never lies.
#include "uop/algebra.hpp"

#include <algorithm>
#include <bit>
#include <optional>

namespace tg {

namespace {

template <typename T>
int cmp3(const T& a, const T& b) {
  return a < b ? -1 : b < a ? 1 : 0;
}

int arg_order(const Arg& a, const Arg& b) {
  if (a.index() != b.index()) return cmp3(a.index(), b.index());
  return std::visit(
      [&](const auto& x) -> int {
        using T = std::decay_t<decltype(x)>;
        const T& y = std::get<T>(b);
        if constexpr (std::is_same_v<T, std::monostate>) {
          return 0;
        } else if constexpr (std::is_same_v<T, double>) {
          int r = cmp3(x, y);
          return r ? r : cmp3(std::bit_cast<int64_t>(x), std::bit_cast<int64_t>(y));
        } else if constexpr (std::is_same_v<T, AxisArg>) {
          int r = cmp3(x.id, y.id);
          return r ? r : cmp3(static_cast<int>(x.type), static_cast<int>(y.type));
        } else if constexpr (std::is_same_v<T, ReduceArg>) {
          int r = cmp3(static_cast<int>(x.op), static_cast<int>(y.op));
          return r ? r : cmp3(x.axes, y.axes);
        } else if constexpr (std::is_same_v<T, VarArg>) {
          int r = cmp3(x.name, y.name);
          if (!r) r = cmp3(x.min, y.min);
          return r ? r : cmp3(x.max, y.max);
        } else if constexpr (std::is_same_v<T, OpaquePtr>) {
          return x->equals(*y) ? 0 : cmp3(x->hash(), y->hash());
        } else if constexpr (std::is_same_v<T, Ops>) {
          return cmp3(static_cast<int>(x), static_cast<int>(y));
        } else {
          return cmp3(x, y);
        }
      },
      a);
}

i128 val(const UOp* c) { return int_value(c->dtype(), *c->const_value()); }
i128 floordiv(i128 a, i128 b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }
i128 floormod(i128 a, i128 b) { return a - floordiv(a, b) * b; }
i128 abs128(i128 a) { return a < 0 ? -a : a; }
i128 gcd128(i128 a, i128 b) {
  a = abs128(a), b = abs128(b);
  while (b) a %= b, std::swap(a, b);
  return a;
}
bool fits(DType d, i128 v) { return v >= dtype_lo(d) && v <= dtype_hi(d); }
// Wrapping product, for coefficients that only matter modulo 2^bits.
i128 wrap_mul(DType d, i128 a, i128 b) {
  return wrap_to(d, static_cast<i128>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b)));
}

bool is_const_div(const UOp* u, Ops op) { return u->op() == op && u->src(1)->is_const(); }

Term term_of(const UOp* u, DType d) {
  if (u->op() == Ops::MUL && u->dtype() == d) {
    if (u->src(1)->is_const()) return {u->src(0), val(u->src(1).get())};
    if (u->src(0)->is_const()) return {u->src(1), val(u->src(0).get())};
  }
  if (u->op() == Ops::NEG) return {u->src(0), -1};
  return {u->ref(), 1};
}

// The true-integer interval of sum(coef * base) + k, or nullopt if it leaves 128 bits.
std::optional<std::pair<i128, i128>> interval(const std::vector<Term>& ts, i128 k) {
  i128 lo = k, hi = k;
  for (const Term& t : ts) {
    IntRange r = int_range(*t.base);
    i128 a, b;
    if (__builtin_mul_overflow(r.lo, t.coef, &a) || __builtin_mul_overflow(r.hi, t.coef, &b))
      return std::nullopt;
    if (__builtin_add_overflow(lo, std::min(a, b), &lo) || __builtin_add_overflow(hi, std::max(a, b), &hi))
      return std::nullopt;
  }
  return std::make_pair(lo, hi);
}

UOpRef binop(Ops op, const UOpRef& a, i128 c) { return a->alu(op, int_const(a->dtype(), c)); }

// x%c with x%c*f + (x//c)*(f*c) in the same sum (or (x//a)%c with x//(a*c)) recombines to x*f.
bool recombine(DType d, std::vector<Term>& ts) {
  for (size_t i = 0; i < ts.size(); i++) {
    const UOp* m = ts[i].base.get();
    if (!is_const_div(m, Ops::MOD)) continue;
    i128 c = val(m->src(1).get());
    const UOp* b = m->src(0).get();
    if (c == 0) continue;
    for (size_t j = 0; j < ts.size(); j++) {
      const UOp* q = ts[j].base.get();
      if (j == i || !is_const_div(q, Ops::IDIV) || wrap_mul(d, ts[i].coef, c) != wrap_to(d, ts[j].coef))
        continue;
      i128 qc = val(q->src(1).get());
      bool partner = q->src(0).get() == b && qc == c;
      if (!partner && is_const_div(b, Ops::IDIV) && q->src(0) == b->src(0)) {
        i128 a = val(b->src(1).get());
        partner = a > 0 && c > 0 && qc == a * c;
      }
      if (!partner) continue;
      Term t{m->src(0), ts[i].coef};
      ts.erase(ts.begin() + static_cast<std::ptrdiff_t>(std::max(i, j)));
      ts.erase(ts.begin() + static_cast<std::ptrdiff_t>(std::min(i, j)));
      ts.push_back(std::move(t));
      return true;
    }
  }
  return false;
}

// Sorts by base, adds coefficients of equal bases (mod 2^bits) and drops zeros.
void collect(DType d, std::vector<Term>& ts) {
  std::stable_sort(ts.begin(), ts.end(),
                   [](const Term& a, const Term& b) { return uop_order(a.base.get(), b.base.get()) < 0; });
  std::vector<Term> out;
  for (Term& t : ts) {
    if (!out.empty() && out.back().base == t.base)
      out.back().coef = wrap_to(d, out.back().coef + t.coef);
    else
      out.push_back({std::move(t.base), wrap_to(d, t.coef)});
    if (out.back().coef == 0) out.pop_back();
  }
  ts = std::move(out);
}

const UOp* base_of(const UOp* u, DType d) {
  if (u->op() == Ops::MUL && u->dtype() == d && u->src(1)->is_const()) return u->src(0).get();
  return u;
}

// O(1) check that ADD(s0, s1) extends an already canonical sum s0 in order.
bool sum_is_canonical(const UOp& x) {
  DType d = x.dtype();
  const UOp *s0 = x.src(0).get(), *s1 = x.src(1).get();
  auto is_add = [&](const UOp* u) { return u->op() == Ops::ADD && u->dtype() == d; };
  if (is_add(s1)) return false;
  const UOp* last = is_add(s0) ? s0->src(1).get() : s0;
  if (last->is_const()) return false;
  if (s1->is_const()) return val(s1) != 0;
  const UOp* b1 = base_of(s1, d);
  if (b1 == s1 && s1->op() == Ops::NEG) return false;
  if (is_const_div(b1, Ops::MOD) || is_const_div(b1, Ops::IDIV)) return false;  // may recombine
  return uop_order(base_of(last, d), b1) < 0;
}

bool product_is_canonical(const UOp& x) {
  DType d = x.dtype();
  const UOp *s0 = x.src(0).get(), *s1 = x.src(1).get();
  auto is_mul = [&](const UOp* u) { return u->op() == Ops::MUL && u->dtype() == d; };
  if (is_mul(s1)) return false;
  const UOp* last = is_mul(s0) ? s0->src(1).get() : s0;
  if (last->is_const()) return false;
  if (s1->is_const()) return val(s1) != 0 && val(s1) != 1;
  return uop_order(last, s1) <= 0;
}

// x // c or x % c for a constant c > 0 when x (exact) is >= 0, so truncation is floor.
UOpRef fold_nonneg(const LinearSum& s, i128 c, bool div, DType d) {
  Ops op = div ? Ops::IDIV : Ops::MOD;
  auto safe = [&](const std::vector<Term>& ts, i128 k) {  // a new dividend must be >= 0 and not wrap
    auto iv = interval(ts, k);
    return iv && iv->first >= 0 && iv->second <= dtype_hi(d);
  };
  // (a%(n*c) + b) % c -> (a + b) % c
  if (!div) {
    std::vector<Term> ts = s.terms;
    bool changed = false;
    for (Term& t : ts)
      if (is_const_div(t.base.get(), Ops::MOD) && val(t.base->src(1).get()) != 0 &&
          val(t.base->src(1).get()) % c == 0)
        t.base = t.base->src(0), changed = true;
    if (changed && safe(ts, s.k)) return binop(Ops::MOD, build_sum(d, ts, s.k), c);
  }
  // congruence: x = sum(r_i*v_i) + k%c (mod c) with r_i = f_i (mod c); if that sum stays in one period,
  // it is the remainder (shifted) and the quotient follows
  size_t n = s.terms.size();
  bool all = n <= 3;
  i128 kr = floormod(s.k, c);
  for (uint32_t mask = 0; mask < (all ? (1u << n) : 1u); mask++) {
    std::vector<Term> rem;
    for (size_t i = 0; i < n; i++) {
      i128 r0 = floormod(s.terms[i].coef, c), r1 = r0 - c;
      i128 r = all ? ((mask >> i) & 1 ? r1 : r0) : (abs128(r1) < abs128(r0) ? r1 : r0);
      rem.push_back({s.terms[i].base, r});
    }
    auto iv = interval(rem, kr);
    if (!iv) continue;
    i128 q = floordiv(iv->first, c);
    if (q != floordiv(iv->second, c)) continue;
    if (!div) return build_sum(d, rem, kr - q * c);
    std::vector<Term> quo;
    for (size_t i = 0; i < n; i++) quo.push_back({s.terms[i].base, (s.terms[i].coef - rem[i].coef) / c});
    return build_sum(d, quo, (s.k - kr) / c + q);
  }
  // common factor: (g*X + k)//c -> (X + k//g)//(c/g) when g divides c and every coefficient
  i128 g = c;
  for (const Term& t : s.terms) g = gcd128(g, t.coef);
  if (g > 1) {
    std::vector<Term> ts;
    for (const Term& t : s.terms) ts.push_back({t.base, t.coef / g});
    i128 kq = floordiv(s.k, g), krem = s.k - kq * g;
    UOpRef x = build_sum(d, ts, kq);
    if (g == c) return div ? x : int_const(d, krem);
    if (div) return binop(Ops::IDIV, x, c / g);
    return binop(Ops::MOD, x, c / g)->alu(Ops::MUL, int_const(d, g))->alu(Ops::ADD, int_const(d, krem));
  }
  // (y//a + k)//c -> (y + k*a)//(a*c) for y >= 0 (floor identities, and everything here is >= 0)
  if (div && n == 1 && s.terms[0].coef == 1 && is_const_div(s.terms[0].base.get(), Ops::IDIV)) {
    const UOpRef& y = s.terms[0].base->src(0);
    i128 a = val(s.terms[0].base->src(1).get());
    if (a > 0 && int_range(*y).lo >= 0 && fits(d, a * c) && safe({{y, 1}}, s.k * a))
      return binop(Ops::IDIV, build_sum(d, {{y, 1}}, s.k * a), a * c);
  }
  // factor out multiples of c: (c*Q + R)//c -> Q + R//c when R >= 0; for MOD every coefficient reduces
  std::vector<Term> quo, rest;
  for (const Term& t : s.terms) {
    i128 q = div && t.coef % c != 0 ? 0 : floordiv(t.coef, c), r = t.coef - q * c;
    if (q != 0) quo.push_back({t.base, q});
    if (r != 0) rest.push_back({t.base, r});
  }
  i128 kq = floordiv(s.k, c);
  if ((!quo.empty() || kq != 0) && safe(rest, kr)) {
    UOpRef r = binop(op, build_sum(d, rest, kr), c);
    return div ? build_sum(d, quo, kq)->alu(Ops::ADD, r) : r;
  }
  // (P + k)//c with P <= 0 <= P+k: k//c - (-P + c-1 - k%c)//c, a quotient of a sum >= 0
  auto pv = interval(s.terms, 0);
  if (div && pv && pv->second <= 0 && s.k > 0) {
    std::vector<Term> neg;
    for (const Term& t : s.terms) neg.push_back({t.base, -t.coef});
    if (safe(neg, c - 1 - kr))
      return int_const(d, kq)->alu(Ops::ADD,
                                   binop(Ops::MUL, binop(Ops::IDIV, build_sum(d, neg, c - 1 - kr), c), -1));
  }
  // divide in two steps through a coefficient that divides c: x//c -> (x//f)//(c/f)
  if (div)
    for (const Term& t : s.terms)
      if (t.coef > 1 && t.coef < c && c % t.coef == 0)
        if (UOpRef r = fold_nonneg(s, t.coef, true, d)) return binop(Ops::IDIV, r, c / t.coef);
  return {};
}

}  // namespace

int uop_order(const UOp* a, const UOp* b) {
  if (a == b) return 0;
  if (a->is_const() != b->is_const()) return a->is_const() ? 1 : -1;
  if (int r = cmp3(static_cast<int>(a->op()), static_cast<int>(b->op()))) return r;
  DType da = a->dtype(), db = b->dtype();
  if (int r = cmp3(static_cast<int>(da.scalar()), static_cast<int>(db.scalar()))) return r;
  if (int r = cmp3(da.count(), db.count())) return r;
  if (int r = cmp3(static_cast<int>(da.addrspace()), static_cast<int>(db.addrspace()))) return r;
  if (int r = cmp3(da.ptr_size(), db.ptr_size())) return r;
  if (int r = arg_order(a->arg(), b->arg())) return r;
  if (int r = cmp3(a->src().size(), b->src().size())) return r;
  for (size_t i = 0; i < a->src().size(); i++)
    if (int r = uop_order(a->src(i).get(), b->src(i).get())) return r;
  return std::less<const UOp*>()(a, b) ? -1 : 1;  // structurally equal yet distinct: only NaN args
}

LinearSum split_sum(const UOpRef& x) {
  LinearSum s;
  DType d = x->dtype();
  std::vector<const UOp*> stack{x.get()};
  while (!stack.empty()) {
    const UOp* u = stack.back();
    stack.pop_back();
    if (u->op() == Ops::ADD && u->dtype() == d) {
      s.exact &= int_range(*u).exact;
      stack.push_back(u->src(1).get()), stack.push_back(u->src(0).get());
      continue;
    }
    if (u->is_const()) {
      s.k += val(u);
      continue;
    }
    Term t = term_of(u, d);
    if (t.base.get() != u) s.exact &= int_range(*u).exact;
    s.terms.push_back(std::move(t));
  }
  return s;
}

UOpRef build_sum(DType d, const std::vector<Term>& terms, i128 k) {
  UOpRef r;
  for (const Term& t : terms) {
    i128 c = wrap_to(d, t.coef);
    if (c == 0) continue;
    UOpRef v = c == 1 ? t.base : t.base->alu(Ops::MUL, int_const(d, c));
    r = r ? r->alu(Ops::ADD, v) : v;
  }
  k = wrap_to(d, k);
  if (k != 0 || !r) r = r ? r->alu(Ops::ADD, int_const(d, k)) : int_const(d, k);
  return r;
}

UOpRef normalize_sum(const UOpRef& x) {
  if (sum_is_canonical(*x)) return {};
  DType d = x->dtype();
  LinearSum s = split_sum(x);
  do collect(d, s.terms);
  while (recombine(d, s.terms));
  UOpRef r = build_sum(d, s.terms, s.k);
  return r == x ? UOpRef{} : r;
}

UOpRef normalize_product(const UOpRef& x) {
  if (product_is_canonical(*x)) return {};
  DType d = x->dtype();
  std::vector<UOpRef> factors;
  i128 c = 1;
  std::vector<const UOp*> stack{x.get()};
  while (!stack.empty()) {
    const UOp* u = stack.back();
    stack.pop_back();
    if (u->op() == Ops::MUL && u->dtype() == d)
      stack.push_back(u->src(1).get()), stack.push_back(u->src(0).get());
    else if (u->is_const())
      c = wrap_mul(d, c, val(u));
    else
      factors.push_back(u->ref());
  }
  if (c == 0) return int_const(d, 0);
  std::stable_sort(factors.begin(), factors.end(),
                   [](const UOpRef& a, const UOpRef& b) { return uop_order(a.get(), b.get()) < 0; });
  UOpRef r;
  for (const UOpRef& f : factors) r = r ? r->alu(Ops::MUL, f) : f;
  if (c != 1 || !r) r = r ? r->alu(Ops::MUL, int_const(d, c)) : int_const(d, c);
  return r == x ? UOpRef{} : r;
}

UOpRef fold_divmod(const UOpRef& dnode) {
  const UOpRef &x = dnode->src(0), &y = dnode->src(1);
  DType d = dnode->dtype();
  Ops op = dnode->op();
  bool div = op == Ops::IDIV, sign = !d.is_unsigned();
  IntRange xr = int_range(*x), yr = int_range(*y);
  // the quotient is the same over the whole box of (x, y): trunc(x/y) is monotone in each
  if (yr.lo > 0 || yr.hi < 0) {
    i128 q = xr.lo / yr.lo;
    bool same = xr.lo / yr.hi == q && xr.hi / yr.lo == q && xr.hi / yr.hi == q;
    if (same && fits(d, q)) return div ? int_const(d, q) : x->alu(Ops::ADD, binop(Ops::MUL, y, -q));
  }
  bool neg_x = sign && xr.hi <= 0 && xr.lo < 0 && xr.lo > dtype_lo(d);  // -x fits
  if (y->is_const()) {
    i128 c = val(y.get());
    if (c == 0) return {};
    if (c == 1 || c == -1) return div ? (c == 1 ? x : binop(Ops::MUL, x, -1)) : int_const(d, 0);
    if (c < 0) {  // trunc(x / -c) == -trunc(x / c) and x % -c == x % c
      if (!fits(d, -c)) return {};
      return div ? binop(Ops::MUL, binop(Ops::IDIV, x, -c), -1) : binop(Ops::MOD, x, -c);
    }
    LinearSum s = split_sum(x);
    if (!s.exact) return {};
    // a factor g of c and of all of x divides out exactly, whatever the sign: (g*X)//(g*c') -> X//c'
    i128 g = gcd128(c, s.k);
    for (const Term& t : s.terms) g = gcd128(g, t.coef);
    if (g > 1) {
      std::vector<Term> ts;
      for (const Term& t : s.terms) ts.push_back({t.base, t.coef / g});
      UOpRef xg = build_sum(d, ts, s.k / g);
      if (g == c) return div ? xg : int_const(d, 0);
      return div ? binop(Ops::IDIV, xg, c / g) : binop(Ops::MUL, binop(Ops::MOD, xg, c / g), g);
    }
    if (xr.lo >= 0) return fold_nonneg(s, c, div, d);
    if (!neg_x) return {};
    // fold -x, which is >= 0, and negate back: x//c == -((-x)//c), x%c == -((-x)%c)
    for (Term& t : s.terms) t.coef = -t.coef;
    s.k = -s.k;
    UOpRef r = fold_nonneg(s, c, div, d);
    return binop(Ops::MUL, r ? r : binop(op, build_sum(d, s.terms, s.k), c), -1);
  }
  if (sign && yr.hi < 0 && yr.lo > dtype_lo(d)) {  // a negative divisor flips out
    UOpRef ny = binop(Ops::MUL, y, -1);
    return div ? binop(Ops::MUL, x->alu(op, ny), -1) : x->alu(op, ny);
  }
  if (neg_x && yr.lo > 0) return binop(Ops::MUL, binop(Ops::MUL, x, -1)->alu(op, y), -1);
  // (y*Q + R) // y -> Q + R//y for y > 0, x >= 0 and R >= 0
  if (xr.lo < 0 || yr.lo <= 0) return {};
  LinearSum s = split_sum(x);
  if (!s.exact) return {};
  std::vector<Term> quo, rest;
  i128 qk = 0;
  for (const Term& t : s.terms) {
    if (t.base == y) {
      qk += t.coef;
    } else if (t.base->op() == Ops::MUL && t.base->src(1) == y && int_range(*t.base).exact) {
      quo.push_back({t.base->src(0), t.coef});
    } else if (t.base->op() == Ops::MUL && t.base->src(0) == y && int_range(*t.base).exact) {
      quo.push_back({t.base->src(1), t.coef});
    } else {
      rest.push_back(t);
    }
  }
  auto iv = interval(rest, s.k);
  if ((quo.empty() && qk == 0) || !iv || iv->first < 0 || iv->second > dtype_hi(d)) return {};
  UOpRef r = build_sum(d, rest, s.k)->alu(op, y);
  return div ? build_sum(d, quo, qk)->alu(Ops::ADD, r) : r;
}

UOpRef fold_cmplt(const UOpRef& x, const UOpRef& y) {
  DType d = x->dtype();
  if (!is_intlike(d)) return {};
  auto lt = [](const UOpRef& a, const UOpRef& b) { return a->alu(Ops::CMPLT, b); };
  if (y->is_const()) {
    i128 c = val(y.get());
    if (x->op() == Ops::ADD && x->src(1)->is_const() && int_range(*x).exact) {  // x+a < c -> x < c-a
      i128 n = c - val(x->src(1).get());
      return fits(d, n) ? lt(x->src(0), int_const(d, n)) : UOpRef{};
    }
    if (x->op() == Ops::MUL && x->src(1)->is_const() && int_range(*x).exact) {
      i128 a = val(x->src(1).get());
      if (a > 0) {  // x*a < c -> x < ceil(c/a)
        i128 n = -floordiv(-c, a);
        return fits(d, n) ? lt(x->src(0), int_const(d, n)) : UOpRef{};
      }
      if (a < 0) {  // x*a < c -> floor(-c/-a) < x
        i128 n = floordiv(-c, -a);
        return fits(d, n) ? lt(int_const(d, n), x->src(0)) : UOpRef{};
      }
    }
    if (is_const_div(x.get(), Ops::IDIV) && val(x->src(1).get()) > 0) {  // trunc(x/e) < c
      i128 e = val(x->src(1).get()), n = c > 0 ? c * e : c * e - e + 1;
      return fits(d, n) ? lt(x->src(0), int_const(d, n)) : UOpRef{};
    }
    // x = g*N + P with 0 <= P < g and g | c: x < c -> N < c/g
    LinearSum s = split_sum(x);
    if (c > 0 && s.exact) {
      std::vector<Term> big, small;
      i128 g = c;
      for (const Term& t : s.terms) (t.coef == 1 ? small : big).push_back(t);
      for (const Term& t : big) g = gcd128(g, t.coef);
      auto iv = interval(small, s.k);
      if (!big.empty() && g > 1 && iv && iv->first >= 0 && iv->second < g) {
        for (Term& t : big) t.coef /= g;
        return lt(build_sum(d, big, 0), int_const(d, c / g));
      }
    }
    return {};
  }
  if (x->is_const()) {
    i128 c = val(x.get());
    if (y->op() == Ops::ADD && y->src(1)->is_const() && int_range(*y).exact) {  // c < y+a -> c-a < y
      i128 n = c - val(y->src(1).get());
      return fits(d, n) ? lt(int_const(d, n), y->src(0)) : UOpRef{};
    }
    if (y->op() == Ops::MUL && y->src(1)->is_const() && int_range(*y).exact && val(y->src(1).get()) > 0) {
      i128 n = floordiv(c, val(y->src(1).get()));  // c < y*a -> floor(c/a) < y
      return fits(d, n) ? lt(int_const(d, n), y->src(0)) : UOpRef{};
    }
    return {};
  }
  // x*-1 < y*-1 -> y < x
  if (x->op() == Ops::MUL && y->op() == Ops::MUL && x->src(1)->is_const() && y->src(1)->is_const() &&
      val(x->src(1).get()) == -1 && val(y->src(1).get()) == -1 && int_range(*x).exact && int_range(*y).exact)
    return lt(y->src(0), x->src(0));
  return {};
}

}  // namespace tg
