// sint: sizes that are numbers or index expressions over bound variables.
#include <algorithm>
#include <cctype>
#include <ostream>

#include <fmt/format.h>

#include "base/error.hpp"
#include "uop/uop.hpp"

namespace tg {

namespace {

UOpRef index_const(int64_t v) { return UOp::const_(dtypes::index, v); }

std::string expr_str(const UOp* u) {
  auto bin = [&](const char* op) {
    return fmt::format("({}{}{})", expr_str(u->src(0).get()), op, expr_str(u->src(1).get()));
  };
  switch (u->op()) {
    case Ops::CONST:
      return fmt::format("{}", std::get<int64_t>(*u->const_value()));
    case Ops::DEFINE_VAR:
      return u->arg_as<VarArg>().name;
    case Ops::BIND:
      return expr_str(u->src(0).get());
    case Ops::ADD:
      return bin("+");
    case Ops::MUL:
      return bin("*");
    case Ops::IDIV:
      return bin("//");
    case Ops::MOD:
      return bin("%");
    case Ops::MAX:
      return fmt::format("max({}, {})", expr_str(u->src(0).get()), expr_str(u->src(1).get()));
    default:
      return fmt::format("{}(...)", op_name(u->op()));
  }
}

}  // namespace

sint sint::of(const UOpRef& expr) {
  if (!expr || expr->dtype() != dtypes::index)
    throw ValueError("sint", "a symbolic size must be an index-dtype expression");
  UOpRef e = expr->simplify();
  if (const ConstValue* c = e->const_value()) return sint(std::get<int64_t>(*c));
  sint s;
  s.e_ = std::move(e);
  return s;
}

void sint::used_as_number() const {
  throw ShapeError("shape", fmt::format("the symbolic size {} is used where a number is needed; this "
                                        "operation supports only concrete sizes",
                                        str()));
}

UOpRef sint::uop() const { return e_ ? e_ : index_const(v_); }

int64_t sint::bound() const {
  if (!e_) return v_;
  std::unordered_map<const UOp*, UOpRef> values;
  for (const UOp* u : e_->toposort())
    if (u->op() == Ops::BIND) values[u] = u->src(1);
  UOpRef r = e_->substitute(values)->simplify();
  const ConstValue* c = r->const_value();
  if (!c) throw ShapeError("shape", fmt::format("the size {} has an unbound variable", str()));
  return std::get<int64_t>(*c);
}

int64_t sint::min() const { return e_ ? std::get<int64_t>(e_->vmin()) : v_; }
int64_t sint::max() const { return e_ ? std::get<int64_t>(e_->vmax()) : v_; }

uint64_t sint::hash() const noexcept { return e_ ? e_->hash() : static_cast<uint64_t>(v_); }

std::string sint::str() const { return e_ ? expr_str(e_.get()) : fmt::format("{}", v_); }

std::ostream& operator<<(std::ostream& os, const sint& s) { return os << s.str(); }

sint& sint::operator+=(const sint& o) { return *this = size_add(*this, o); }
sint& sint::operator*=(const sint& o) { return *this = size_mul(*this, o); }

sint size_add(const sint& a, const sint& b) {
  if (a.is_number() && b.is_number()) return static_cast<int64_t>(a) + static_cast<int64_t>(b);
  return sint::of(a.uop() + b.uop());
}
sint size_mul(const sint& a, const sint& b) {
  if (a.is_number() && b.is_number()) return static_cast<int64_t>(a) * static_cast<int64_t>(b);
  return sint::of(a.uop() * b.uop());
}
sint size_div(const sint& a, const sint& b) {
  if (a.is_number() && b.is_number()) {
    if (static_cast<int64_t>(b) == 0) throw ValueError("shape", "division of a size by zero");
    return static_cast<int64_t>(a) / static_cast<int64_t>(b);
  }
  return sint::of(a.uop() / b.uop());
}
sint size_mod(const sint& a, const sint& b) {
  if (a.is_number() && b.is_number()) {
    if (static_cast<int64_t>(b) == 0) throw ValueError("shape", "modulo of a size by zero");
    return static_cast<int64_t>(a) % static_cast<int64_t>(b);
  }
  return sint::of(a.uop() % b.uop());
}
bool size_same(const sint& a, const sint& b) {
  if (a.is_number() != b.is_number()) return false;
  if (a.is_number()) return static_cast<int64_t>(a) == static_cast<int64_t>(b);
  return a.expr() == b.expr();
}

std::vector<std::pair<UOpRef, int64_t>> bindings(const sint& s) {
  std::vector<std::pair<UOpRef, int64_t>> out;
  if (s.is_number()) return out;
  for (const UOp* u : s.expr()->toposort())
    if (u->op() == Ops::BIND) out.emplace_back(u->src(0), std::get<int64_t>(*u->src(1)->const_value()));
  return out;
}

sint unbound(const sint& s) {
  if (s.is_number()) return s;
  std::unordered_map<const UOp*, UOpRef> vars;
  for (const UOp* u : s.expr()->toposort())
    if (u->op() == Ops::BIND) vars[u] = u->src(0);
  return sint::of(s.expr()->substitute(vars));
}

Variable::Variable(std::string name, int64_t min, int64_t max) {
  bool identifier = !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0])) &&
                    std::all_of(name.begin(), name.end(), [](char c) {
                      return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
                    });
  if (!identifier)
    throw ValueError("Variable", fmt::format("name '{}' is not an identifier (letters, digits, _)", name));
  if (min < 0 || min > max)
    throw ValueError("Variable", fmt::format("{}: range [{}, {}] is not a range of sizes (0 <= min <= max)",
                                             name, min, max));
  var_ = UOp::make(Ops::DEFINE_VAR, dtypes::index, {}, VarArg{std::move(name), min, max});
}

sint Variable::bind(int64_t value) const {
  if (value < min() || value > max())
    throw ValueError("Variable",
                     fmt::format("{} = {} is outside its range [{}, {}]", name(), value, min(), max()));
  return sint::of(UOp::make(Ops::BIND, dtypes::index, {var_, UOp::const_(dtypes::index, value)}));
}

const std::string& Variable::name() const { return var_->arg_as<VarArg>().name; }
int64_t Variable::min() const { return var_->arg_as<VarArg>().min; }
int64_t Variable::max() const { return var_->arg_as<VarArg>().max; }

bool same_count(const sint& a, const sint& b) {
  return a == b || ((!a.is_number() || !b.is_number()) && a.bound() == b.bound());
}

bool shrink_fits(const sint& begin, const sint& end, const sint& size) {
  auto ordered = [](const sint& lo, const sint& hi) {
    return lo.bound() <= hi.bound() && (hi - lo).min() >= 0;
  };
  return ordered(0, begin) && ordered(begin, end) && ordered(end, size);
}

bool is_symbolic(const Shape& s) {
  for (const sint& d : s)
    if (!d.is_number()) return true;
  return false;
}

std::vector<int64_t> to_ints(const Shape& s) { return std::vector<int64_t>(s.begin(), s.end()); }

}  // namespace tg
