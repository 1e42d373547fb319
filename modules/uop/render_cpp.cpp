// render_cpp: C++ statements that rebuild a graph, using the operators and builders wherever they give back
// exactly the same node, and UOp::make otherwise (so the output always round-trips).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "uop/print.hpp"
#include "uop/ptr_map.hpp"

namespace tg {

namespace {

constexpr OpSet kAlwaysNamed{Ops::DEFINE_VAR,   Ops::RANGE,      Ops::SPECIAL, Ops::DEFINE_GLOBAL,
                             Ops::DEFINE_LOCAL, Ops::DEFINE_REG, Ops::BUFFER,  Ops::LOAD,
                             Ops::STORE,        Ops::END};
constexpr int kMaxInlineDepth = 48;  // deeper expressions get a name, so no compiler nesting limit is hit

std::string_view infix(const UOp* u) {
  DType d0 = u->src(0)->dtype();
  switch (u->op()) {
    case Ops::ADD:
      return "+";
    case Ops::MUL:
      return "*";
    case Ops::MOD:
      return "%";
    case Ops::AND:
      return "&";
    case Ops::OR:
      return "|";
    case Ops::XOR:
      return "^";
    case Ops::SHL:
      return "<<";
    case Ops::SHR:
      return ">>";
    case Ops::IDIV:
      return d0.is_float() ? "" : "/";
    case Ops::FDIV:
      return d0.is_float() ? "/" : "";
    default:
      return "";
  }
}

bool scalar_operator(Ops op) {
  return op == Ops::ADD || op == Ops::MUL || op == Ops::MOD || op == Ops::IDIV || op == Ops::FDIV;
}

// The value of a CONST as a plain C++ number, if `x OP number` would rebuild this exact constant.
std::optional<std::string> plain_number(const UOp* c, DType want) {
  if (!c->is_const() || !c->src().empty() || !(c->dtype() == want)) return std::nullopt;
  if (want.is_float() && std::holds_alternative<double>(c->arg())) {
    std::string s = render_cpp(c->arg());
    if (s.find("numeric_limits") != std::string::npos) return std::nullopt;
    return s;
  }
  if (want.is_int() && std::holds_alternative<int64_t>(c->arg())) {
    int64_t v = std::get<int64_t>(c->arg());
    if (v == std::numeric_limits<int64_t>::min()) return std::nullopt;
    return std::to_string(v);
  }
  return std::nullopt;
}

// A CONST that UOp::const_ rebuilds unchanged (its arg is already the canonical value for its dtype).
bool canonical_const(const UOp* u) {
  if (!u->src().empty()) return false;
  try {
    return UOp::const_(u->dtype(), *u->const_value()).get() == u;
  } catch (const std::exception&) {
    return false;
  }
}

std::string strip_parens(const std::string& s) {
  if (s.size() < 2 || s.front() != '(' || s.back() != ')') return s;
  int depth = 0;
  for (size_t i = 0; i < s.size(); i++) {
    depth += s[i] == '(' ? 1 : s[i] == ')' ? -1 : 0;
    if (depth == 0 && i + 1 < s.size()) return s;  // the first paren closes early: "(a) + (b)"
  }
  return s.substr(1, s.size() - 2);
}

class CppRenderer {
 public:
  std::string run(const UOpRef& root) {
    std::vector<const UOp*> order = root->toposort();
    detail::PtrMap<int> uses;
    for (const UOp* u : order) {
      for (const UOpRef& s : u->src()) uses[s.get()]++;
      if (u->op() == Ops::SINK)
        for (const UOpRef& s : u->src()) sink_src_.insert(s.get(), 1);
    }
    std::string out;
    for (size_t i = 0; i < order.size(); i++) {
      const UOp* u = order[i];
      std::string e = expr(u);
      int depth = 1;
      for (const UOpRef& s : u->src()) depth = std::max(depth, 1 + *depth_.find(s.get()));
      bool named = u == root.get() ||
                   (!u->is_const() && (*uses.find(u) > 1 || kAlwaysNamed.contains(u->op()))) ||
                   sink_src_.contains(u) || depth > kMaxInlineDepth;
      if (!named) {
        text_.insert(u, std::move(e)), depth_.insert(u, depth);
        continue;
      }
      std::string name = u == root.get() ? "ast" : fmt::format("c{}", i);
      out += fmt::format("UOpRef {} = {};\n", name, strip_parens(e));
      text_.insert(u, std::move(name)), depth_.insert(u, 0);
    }
    return out;
  }

 private:
  const std::string& t(const UOpRef& s) { return *text_.find(s.get()); }

  std::string expr(const UOp* u) {
    std::span<const UOpRef> src = u->src();
    DType d = u->dtype();
    bool no_arg = std::holds_alternative<std::monostate>(u->arg());
    if (u->is_const() && canonical_const(u))
      return fmt::format("UOp::const_({}, {})", render_cpp(d), render_cpp(u->arg()));
    const VarArg* v = std::get_if<VarArg>(&u->arg());
    if (u->op() == Ops::DEFINE_VAR && src.empty() && v && v->min <= v->max) {
      std::string r = render_cpp(Arg{*v});
      r = r.substr(7, r.size() - 8);  // "VarArg{...}" -> the three fields
      return d == dtypes::index ? fmt::format("UOp::variable({})", r)
                                : fmt::format("UOp::variable({}, {})", r, render_cpp(d));
    }
    if (u->op() == Ops::RANGE && src.size() == 1 && d == src[0]->dtype() &&
        std::holds_alternative<AxisArg>(u->arg())) {
      const AxisArg& a = std::get<AxisArg>(u->arg());
      return fmt::format("UOp::range({}, {}, AxisType::{})", t(src[0]), a.id, axis_type_name(a.type));
    }
    if (u->op() == Ops::SINK && d == dtypes::void_ && no_arg) {
      std::vector<std::string> parts;
      for (const UOpRef& s : src) parts.push_back(t(s));
      return fmt::format("UOp::sink({{{}}})", fmt::join(parts, ", "));
    }
    if (no_arg && !src.empty() && group::ALU.contains(u->op())) {
      if (auto r = alu_expr(u)) return *r;
    }
    if ((u->op() == Ops::CAST || u->op() == Ops::BITCAST) && src.size() == 1 && no_arg &&
        !(d == src[0]->dtype()))
      return fmt::format("{}->{}({})", t(src[0]), u->op() == Ops::CAST ? "cast" : "bitcast", render_cpp(d));
    std::vector<std::string> parts;
    for (const UOpRef& s : src) parts.push_back(t(s));
    std::string r = fmt::format("UOp::make(Ops::{}, {}", op_name(u->op()), render_cpp(d));
    if (!src.empty() || !no_arg) r += fmt::format(", {{{}}}", fmt::join(parts, ", "));
    if (!no_arg) r += ", " + render_cpp(u->arg());
    return r + ")";
  }

  std::optional<std::string> alu_expr(const UOp* u) {
    std::span<const UOpRef> src = u->src();
    DType d0 = src[0]->dtype(), d = u->dtype();
    Ops op = u->op();
    if (group::Comparison.contains(op)) {
      if (src.size() != 2 || !(d == dtypes::bool_.vec(d0.count()))) return std::nullopt;
      std::string_view m = op == Ops::CMPLT ? "lt" : op == Ops::CMPNE ? "ne" : "eq";
      return fmt::format("{}->{}({})", t(src[0]), m, t(src[1]));
    }
    if (op == Ops::WHERE) {
      if (src.size() != 3 || !(d == src[1]->dtype())) return std::nullopt;
      return fmt::format("{}->where({}, {})", t(src[0]), t(src[1]), t(src[2]));
    }
    if (!(d == d0)) return std::nullopt;
    if (std::string_view sym = infix(u); !sym.empty() && src.size() == 2) {
      if (scalar_operator(op)) {
        if (auto n = plain_number(src[1].get(), d0)) return fmt::format("({} {} {})", t(src[0]), sym, *n);
        if (auto n = plain_number(src[0].get(), src[1]->dtype()); n && src[1]->dtype() == d0)
          return fmt::format("({} {} {})", *n, sym, t(src[1]));
      }
      return fmt::format("({} {} {})", t(src[0]), sym, t(src[1]));
    }
    if (op == Ops::MAX && src.size() == 2) return fmt::format("{}->maximum({})", t(src[0]), t(src[1]));
    if (src.size() > 3) return std::nullopt;
    std::string r = fmt::format("{}->alu(Ops::{}", t(src[0]), op_name(op));
    for (size_t i = 1; i < src.size(); i++) r += ", " + t(src[i]);
    return r + ")";
  }

  detail::PtrMap<std::string> text_;
  detail::PtrMap<int> depth_;
  detail::PtrMap<char> sink_src_;
};

}  // namespace

std::string render_cpp(const UOpRef& root) { return CppRenderer().run(root); }

}  // namespace tg
