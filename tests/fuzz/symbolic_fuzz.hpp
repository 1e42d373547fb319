#pragma once
// Property test of the symbolic simplifier: random integer expressions over bounded variables are
// evaluated before and after simplify() on random assignments and must agree; every node's vmin/vmax must
// bound its sampled values. The evaluator here is written independently of fold_const on purpose.
// Shared by the unit suite (a few thousand seeded expressions) and the fuzz_symbolic executable.
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "uop/range.hpp"
#include "uop/symbolic.hpp"

namespace tg::fuzz {

using Env = std::map<std::string, int64_t>;  // variable (or "r<id>" range) -> value

inline int width(DType d) {
  return d.scalar() == Scalar::INDEX ? 64 : static_cast<int>(d.scalar_itemsize() * 8);
}

inline i128 wrap(DType d, i128 v) {
  if (d.is_bool()) return v != 0;
  int w = width(d);
  unsigned __int128 m = static_cast<unsigned __int128>(v) & ((static_cast<unsigned __int128>(1) << w) - 1);
  i128 r = static_cast<i128>(m);
  if (!d.is_unsigned() && r >= (i128{1} << (w - 1))) r -= i128{1} << w;
  return r;
}

inline i128 const_of(const UOp& u) {
  const ConstValue& v = *u.const_value();
  if (const bool* b = std::get_if<bool>(&v)) return *b;
  return wrap(u.dtype(), u.dtype().is_unsigned() ? i128(static_cast<uint64_t>(std::get<int64_t>(v)))
                                                 : i128(std::get<int64_t>(v)));
}

// Value of every node under env (nullopt: undefined, e.g. division by zero). C semantics, wrapping.
class Evaluator {
 public:
  explicit Evaluator(const Env& env) : env_(env) {}
  std::optional<i128> operator()(const UOp* u) {
    if (auto it = memo_.find(u); it != memo_.end()) return it->second;
    std::optional<i128> r = eval(u);
    memo_.emplace(u, r);
    return r;
  }
  const std::unordered_map<const UOp*, std::optional<i128>>& values() const { return memo_; }

 private:
  std::optional<i128> eval(const UOp* u) {
    DType d = u->dtype();
    switch (u->op()) {
      case Ops::CONST:
        return const_of(*u);
      case Ops::DEFINE_VAR:
        return env_.at(std::get<VarArg>(u->arg()).name);
      case Ops::RANGE:
        return env_.at("r" + std::to_string(std::get<AxisArg>(u->arg()).id));
      default:
        break;
    }
    std::vector<i128> s;
    for (const UOpRef& x : u->src()) {
      auto v = (*this)(x.get());
      if (!v) return std::nullopt;
      s.push_back(*v);
    }
    DType sd = u->src(0)->dtype();
    int w = width(sd);
    switch (u->op()) {
      case Ops::ADD:
        return wrap(d, s[0] + s[1]);
      case Ops::MUL:
        return wrap(d, static_cast<i128>(static_cast<uint64_t>(s[0]) * static_cast<uint64_t>(s[1])));
      case Ops::NEG:
        return wrap(d, -s[0]);
      case Ops::IDIV:
        return s[1] == 0 ? std::nullopt : std::optional<i128>(wrap(d, s[0] / s[1]));
      case Ops::MOD:
        return s[1] == 0 ? std::nullopt : std::optional<i128>(wrap(d, s[0] % s[1]));
      case Ops::MAX:
        return s[0] > s[1] ? s[0] : s[1];
      case Ops::CMPLT:
        return s[0] < s[1];
      case Ops::CMPNE:
        return s[0] != s[1];
      case Ops::CMPEQ:
        return s[0] == s[1];
      case Ops::AND:
        return wrap(d, s[0] & s[1]);
      case Ops::OR:
        return wrap(d, s[0] | s[1]);
      case Ops::XOR:
        return wrap(d, s[0] ^ s[1]);
      case Ops::SHL:
        if (s[1] < 0 || s[1] >= w) return std::nullopt;
        return wrap(d, static_cast<i128>(static_cast<uint64_t>(s[0]) << static_cast<int>(s[1])));
      case Ops::SHR:
        if (s[1] < 0 || s[1] >= w) return std::nullopt;
        return wrap(d, s[0] >> static_cast<int>(s[1]));
      case Ops::WHERE:
        return s[0] ? s[1] : s[2];
      case Ops::CAST:
        return d.is_bool() ? i128(s[0] != 0) : wrap(d, s[0]);
      default:
        return std::nullopt;
    }
  }
  const Env& env_;
  std::unordered_map<const UOp*, std::optional<i128>> memo_;
};

inline std::string to_string(i128 v) {
  if (v == 0) return "0";
  bool neg = v < 0;
  unsigned __int128 m =
      neg ? static_cast<unsigned __int128>(-(v + 1)) + 1 : static_cast<unsigned __int128>(v);
  std::string s;
  while (m) s.insert(s.begin(), static_cast<char>('0' + static_cast<int>(m % 10))), m /= 10;
  return neg ? "-" + s : s;
}

// Infix text of an integer expression: "((x*4)+y)//4".
inline std::string show(const UOp* u) {
  auto b = [](const UOp* n, std::string_view op) {
    return "(" + show(n->src(0).get()) + std::string(op) + show(n->src(1).get()) + ")";
  };
  switch (u->op()) {
    case Ops::CONST:
      if (u->dtype().is_float()) return fmt::format("{}", std::get<double>(*u->const_value()));
      return to_string(const_of(*u));
    case Ops::DEFINE_VAR: {
      const VarArg& v = std::get<VarArg>(u->arg());
      return v.name;
    }
    case Ops::RANGE:
      return "r" + std::to_string(std::get<AxisArg>(u->arg()).id);
    case Ops::ADD:
      return b(u, "+");
    case Ops::MUL:
      return b(u, "*");
    case Ops::IDIV:
      return b(u, "//");
    case Ops::MOD:
      return b(u, "%");
    case Ops::CMPLT:
      return b(u, "<");
    case Ops::CMPNE:
      return b(u, "!=");
    case Ops::CMPEQ:
      return b(u, "==");
    case Ops::AND:
      return b(u, "&");
    case Ops::OR:
      return b(u, "|");
    case Ops::XOR:
      return b(u, "^");
    case Ops::SHL:
      return b(u, "<<");
    case Ops::SHR:
      return b(u, ">>");
    case Ops::NEG:
      return "-" + show(u->src(0).get());
    case Ops::FDIV:
      return b(u, "/");
    case Ops::MAX:
      return "max(" + show(u->src(0).get()) + ", " + show(u->src(1).get()) + ")";
    case Ops::WHERE:
      return "(" + show(u->src(0).get()) + " ? " + show(u->src(1).get()) + " : " + show(u->src(2).get()) +
             ")";
    case Ops::CAST:
      return std::string(u->dtype().name()) + "(" + show(u->src(0).get()) + ")";
    default:
      return std::string(op_name(u->op()));
  }
}

inline std::string describe_vars(const UOp* root) {
  std::string s;
  for (const UOp* u : root->toposort()) {
    if (u->op() == Ops::DEFINE_VAR) {
      const VarArg& v = std::get<VarArg>(u->arg());
      s += fmt::format("{} in [{}, {}] {}; ", v.name, v.min, v.max, u->dtype().str());
    } else if (u->op() == Ops::RANGE) {
      s += fmt::format("r{} in [0, {}); ", std::get<AxisArg>(u->arg()).id, to_string(const_of(*u->src(0))));
    }
  }
  return s;
}

class Generator {
 public:
  explicit Generator(uint64_t seed) : rng_(seed) {}

  // A random expression in one integer dtype over a few bounded variables and loop ranges.
  UOpRef expr() {
    static const DType kDtypes[] = {dtypes::index,  dtypes::index, dtypes::index,
                                    dtypes::int32,  dtypes::int32, dtypes::int64,
                                    dtypes::uint32, dtypes::int8,  dtypes::uint8};
    d_ = kDtypes[pick(0, std::size(kDtypes) - 1)];
    leaves_.clear();
    int nvars = static_cast<int>(pick(1, 3));
    for (int i = 0; i < nvars; i++) {
      bool wide = pick(0, 9) == 0, neg = !d_.is_unsigned() && pick(0, 2) == 0;
      int64_t lo = neg ? -static_cast<int64_t>(pick(0, wide ? 1000 : 12)) : static_cast<int64_t>(pick(0, 4));
      int64_t hi = lo + static_cast<int64_t>(pick(0, wide ? 100000 : 20));
      if (d_.scalar() == Scalar::INT8) hi = std::min<int64_t>(hi, 127), lo = std::max<int64_t>(lo, -128);
      if (d_.scalar() == Scalar::UINT8) hi = std::min<int64_t>(hi, 255);
      leaves_.push_back(UOp::variable(std::string(1, static_cast<char>('a' + i)), lo, std::max(lo, hi), d_));
    }
    if (pick(0, 1)) leaves_.push_back(UOp::range(UOp::const_(d_, int64_t(pick(1, 16))), 0));
    if (pick(0, 3) == 0) leaves_.push_back(UOp::range(UOp::const_(d_, int64_t(pick(1, 8))), 1));
    return gen(static_cast<int>(pick(1, 5)));
  }

  // Random values for every variable and range under root.
  Env assignment(const UOp* root) {
    Env env;
    for (const UOp* u : root->toposort()) {
      if (u->op() == Ops::DEFINE_VAR) {
        const VarArg& v = std::get<VarArg>(u->arg());
        env[v.name] = edge() ? (pick(0, 1) ? v.min : v.max)
                             : v.min + static_cast<int64_t>(pick(0, uint64_t(v.max - v.min)));
      } else if (u->op() == Ops::RANGE) {
        int64_t end = static_cast<int64_t>(const_of(*u->src(0)));
        env["r" + std::to_string(std::get<AxisArg>(u->arg()).id)] =
            static_cast<int64_t>(pick(0, uint64_t(end - 1)));
      }
    }
    return env;
  }

  uint64_t pick(uint64_t lo, uint64_t hi) { return std::uniform_int_distribution<uint64_t>(lo, hi)(rng_); }

 private:
  bool edge() { return pick(0, 4) == 0; }
  UOpRef cnst(int64_t lo, int64_t hi) {
    // in uint64 arithmetic, which wraps: hi - lo may not fit int64, nor may the edge plus one
    int64_t v = static_cast<int64_t>(uint64_t(lo) + pick(0, uint64_t(hi) - uint64_t(lo)));
    if (pick(0, 19) == 0) {  // the dtype's edge, one below it or one past it
      uint64_t edge = static_cast<uint64_t>(pick(0, 1) ? dtype_hi(d_) : dtype_lo(d_));
      v = static_cast<int64_t>(edge + pick(0, 2) - 1);
    }
    return UOp::const_(d_, v);
  }
  UOpRef nonzero(int64_t lo, int64_t hi) {
    UOpRef c = cnst(lo, hi);
    return const_of(*c) == 0 ? UOp::const_(d_, int64_t{1}) : c;
  }
  UOpRef leaf() { return pick(0, 3) ? leaves_[pick(0, leaves_.size() - 1)] : cnst(-8, 8); }

  UOpRef gen(int depth) {
    if (depth <= 0 || pick(0, 5) == 0) return leaf();
    auto sub = [&] { return gen(depth - 1); };
    switch (pick(0, 20)) {
      case 18:
      case 19:
      case 20: {  // kernel-style index math: (sum of coef*term + k) // c or % c
        UOpRef e = cnst(-4, 12);
        for (int i = 0, n = static_cast<int>(pick(1, 4)); i < n; i++) e = e + sub() * cnst(-3, 16);
        return pick(0, 1) ? e / nonzero(1, 16) : e % nonzero(1, 16);
      }
      case 0:
      case 1:
      case 2:
        return sub() + sub();
      case 3:
      case 4:
        return sub() * cnst(-6, 8);
      case 5:
        return sub() * sub();
      case 6:
      case 7:
        return sub() / nonzero(-5, 12);
      case 8:
      case 9:
        return sub() % nonzero(-5, 12);
      case 10:
        return pick(0, 1) ? sub() / sub() : sub() % sub();
      case 11:
        return sub()->maximum(sub());
      case 12:
        return sub() - sub();
      case 13: {
        if (pick(0, 3) == 0)  // a padded constant's mask on a bit: (0<y)?c:0
          return UOp::const_(d_, int64_t{0})
              ->lt(sub()->alu(Ops::AND, UOp::const_(d_, int64_t{1})))
              ->where(cnst(-8, 8), UOp::const_(d_, int64_t{0}));
        static constexpr Ops kCmp[] = {Ops::CMPLT, Ops::CMPNE, Ops::CMPEQ};
        UOpRef c = sub()->alu(kCmp[pick(0, 2)], pick(0, 1) ? sub() : cnst(-8, 12));
        return pick(0, 2) ? c->where(sub(), sub()) : c->cast(d_);
      }
      case 14: {
        static constexpr Ops kBit[] = {Ops::AND, Ops::OR, Ops::XOR};
        return sub()->alu(kBit[pick(0, 2)], pick(0, 1) ? cnst(0, 15) : sub());
      }
      case 15:
        return sub()->alu(pick(0, 1) ? Ops::SHL : Ops::SHR, UOp::const_(d_, int64_t(pick(0, 4))));
      case 16: {  // through another integer type and back
        static const DType kTo[] = {dtypes::int32, dtypes::int64, dtypes::int16, dtypes::uint32,
                                    dtypes::index};
        DType to = kTo[pick(0, std::size(kTo) - 1)];
        return to == d_ ? sub() : sub()->cast(to)->cast(d_);
      }
      default:
        return UOp::make(Ops::NEG, d_, {sub()});
    }
  }

  std::mt19937_64 rng_;
  DType d_ = dtypes::index;
  std::vector<UOpRef> leaves_;
};

struct Failure {
  UOpRef expr, simplified;
  Env env;
  std::string what;
};

// Checks one expression on `samples` random assignments; returns the first failure.
inline std::optional<Failure> check(const UOpRef& e, Generator& g, int samples) {
  UOpRef s = e->simplify();
  for (int i = 0; i < samples; i++) {
    Env env = g.assignment(e.get());
    Evaluator ev(env), es(env);
    std::optional<i128> a = ev(e.get());
    if (!a) continue;  // undefined at this point (division by zero...): nothing to compare
    std::optional<i128> b = es(s.get());
    if (!b || *a != *b)
      return Failure{
          e, s, env,
          fmt::format("value {} before, {} after simplify", to_string(*a), b ? to_string(*b) : "undefined")};
    for (const auto& [u, v] : ev.values()) {
      if (!v || !(u->dtype().is_int() || u->dtype().is_bool())) continue;
      IntRange r = int_range(*u);
      if (*v < r.lo || *v > r.hi)
        return Failure{e, s, env,
                       fmt::format("{} = {} outside vmin/vmax [{}, {}]", show(u), to_string(*v),
                                   to_string(r.lo), to_string(r.hi))};
    }
    for (const auto& [u, v] : es.values()) {
      if (!v || !(u->dtype().is_int() || u->dtype().is_bool())) continue;
      IntRange r = int_range(*u);
      if (*v < r.lo || *v > r.hi)
        return Failure{e, s, env,
                       fmt::format("simplified {} = {} outside vmin/vmax [{}, {}]", show(u), to_string(*v),
                                   to_string(r.lo), to_string(r.hi))};
    }
  }
  return std::nullopt;
}

// Shrinks a failing expression: replaces nodes by their sources or small constants while it still fails.
inline Failure minimize(Failure f, Generator& g) {
  auto fails = [&](const UOpRef& e) -> std::optional<Failure> {
    // the recorded assignment first, then fresh ones
    Evaluator ev(f.env), es(f.env);
    UOpRef s = e->simplify();
    auto a = ev(e.get());
    if (a) {
      auto b = es(s.get());
      if (!b || *a != *b)
        return Failure{e, s, f.env,
                       fmt::format("value {} before, {} after simplify", to_string(*a),
                                   b ? to_string(*b) : "undefined")};
    }
    return check(e, g, 200);
  };
  for (bool progress = true; progress;) {
    progress = false;
    for (const UOp* u : f.expr->toposort()) {
      std::vector<UOpRef> cands;
      for (const UOpRef& s : u->src())
        if (s->dtype() == u->dtype()) cands.push_back(s);
      if (!u->is_const() && u->dtype().is_int() && u->op() != Ops::DEFINE_VAR)
        for (int64_t c : {0, 1}) cands.push_back(UOp::const_(u->dtype(), c));
      for (const UOpRef& c : cands) {
        UOpRef e2 = f.expr->substitute({{u, c}});
        if (e2 == f.expr) continue;
        if (auto f2 = fails(e2)) {
          f = *f2, progress = true;
          break;
        }
      }
      if (progress) break;
    }
  }
  return f;
}

inline std::string report(const Failure& f) {
  std::string env;
  for (const auto& [k, v] : f.env) env += fmt::format("{}={} ", k, v);
  return fmt::format("{}\n  expr:       {}\n  simplified: {}\n  vars: {}\n  at: {}", f.what,
                     show(f.expr.get()), show(f.simplified.get()), describe_vars(f.expr.get()), env);
}

}  // namespace tg::fuzz
