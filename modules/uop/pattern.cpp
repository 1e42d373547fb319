// UPat construction, matching (with backtracking over source permutations) and PatternMatcher dispatch.
#include "uop/pattern.hpp"

#include <algorithm>
#include <array>
#include <atomic>

#include <fmt/format.h>

#include "base/error.hpp"

namespace tg {

struct UPat::Node {
  OpSet ops;  // empty = any op
  DTypeSet dtypes;
  bool has_src = false, permute = false, extra_src = false;
  std::vector<std::shared_ptr<const Node>> src;
  std::optional<Arg> arg;
  std::string name;
  std::vector<std::shared_ptr<const Node>> alts;  // UPat::any: the first alternative that matches
};

// ---- DTypeSet ----

DTypeSet DTypeSet::floats() {
  return {dtypes::float16, dtypes::bfloat16, dtypes::float32,
          dtypes::float64, dtypes::fp8e4m3,  dtypes::fp8e5m2};
}
DTypeSet DTypeSet::ints() {
  return {dtypes::int8,   dtypes::uint8, dtypes::int16,  dtypes::uint16, dtypes::int32,
          dtypes::uint32, dtypes::int64, dtypes::uint64, dtypes::index};
}

bool DTypeSet::matches(DType d) const {
  if (ds_.empty()) return true;
  for (DType e : ds_) {
    if (e.scalar() != d.scalar() || e.is_ptr() != d.is_ptr()) continue;
    if (!e.is_ptr() && (e.count() == 1 || e.count() == d.count())) return true;  // vectors of a scalar match
    if (e.is_ptr() && e.addrspace() == d.addrspace() && e.count() == d.count()) return true;
  }
  return false;
}

// ---- UPat construction ----

namespace {

using NodePtr = std::shared_ptr<const UPat::Node>;

std::vector<NodePtr> nodes_of(const std::vector<UPat>& ps) {
  std::vector<NodePtr> out;
  out.reserve(ps.size());
  for (const UPat& p : ps) out.push_back(p.node());
  return out;
}

Arg to_arg(const ConstValue& v) {
  return std::visit([](auto x) { return Arg{x}; }, v);
}

bool is_scalar_arg(const Arg& a) {
  return std::holds_alternative<bool>(a) || std::holds_alternative<int64_t>(a) ||
         std::holds_alternative<double>(a);
}

// CONST values compare numerically, so `x * 1` matches 1, 1.0 and true alike.
bool arg_match(const Arg& pat, const Arg& a) {
  if (!is_scalar_arg(pat) || !is_scalar_arg(a)) return arg_equal(pat, a);
  if (std::holds_alternative<int64_t>(pat) && std::holds_alternative<int64_t>(a))
    return std::get<int64_t>(pat) == std::get<int64_t>(a);
  auto num = [](const Arg& x) {
    return std::visit(
        [](const auto& v) -> double {
          if constexpr (std::is_arithmetic_v<std::decay_t<decltype(v)>>)
            return static_cast<double>(v);
          else
            return 0;
        },
        x);
  };
  return num(pat) == num(a);
}

}  // namespace

UPat::UPat(OpSet ops, DTypeSet dtypes, std::optional<std::vector<UPat>> src, std::optional<Arg> arg,
           std::string name) {
  auto n = std::make_shared<Node>();
  n->ops = ops, n->dtypes = std::move(dtypes), n->arg = std::move(arg), n->name = std::move(name);
  if (src) n->has_src = true, n->src = nodes_of(*src);
  n_ = std::move(n);
}

UPat::UPat(Ops op, std::optional<std::vector<UPat>> src, std::optional<Arg> arg, std::string name)
    : UPat(OpSet{op}, {}, std::move(src), std::move(arg), std::move(name)) {}

UPat UPat::var(std::string name, DTypeSet dtypes) {
  return UPat(OpSet{}, std::move(dtypes), {}, {}, std::move(name));
}
UPat UPat::cvar(std::string name, DTypeSet dtypes) {
  return UPat(OpSet{Ops::CONST}, std::move(dtypes), {}, {}, std::move(name));
}
UPat UPat::cnst(ConstValue v, DTypeSet dtypes) {
  return UPat(OpSet{Ops::CONST}, std::move(dtypes), {}, to_arg(v));
}
UPat UPat::op(OpSet ops, std::vector<UPat> src, std::string name) {
  std::optional<std::vector<UPat>> s;
  if (!src.empty()) s = std::move(src);
  return UPat(ops, {}, std::move(s), {}, std::move(name));
}
UPat UPat::any(std::vector<UPat> alternatives) {
  auto n = std::make_shared<Node>();
  for (const UPat& a : alternatives) n->alts.push_back(a.n_ ? a.n_ : std::make_shared<Node>());
  return UPat(NodePtr(std::move(n)));
}

namespace {
std::shared_ptr<UPat::Node> copy_node(const NodePtr& n) {
  return n ? std::make_shared<UPat::Node>(*n) : std::make_shared<UPat::Node>();
}
}  // namespace

UPat UPat::named(std::string name) const {
  auto c = copy_node(n_);
  c->name = std::move(name);
  return UPat(NodePtr(std::move(c)));
}
UPat UPat::dtype(DTypeSet d) const {
  auto c = copy_node(n_);
  c->dtypes = std::move(d);
  return UPat(NodePtr(std::move(c)));
}
UPat UPat::permuted() const {
  auto c = copy_node(n_);
  c->permute = true;
  return UPat(NodePtr(std::move(c)));
}
UPat UPat::allow_extra_src() const {
  auto c = copy_node(n_);
  c->extra_src = true;
  return UPat(NodePtr(std::move(c)));
}
UPat UPat::arg(Arg a) const {
  auto c = copy_node(n_);
  c->arg = std::move(a);
  return UPat(NodePtr(std::move(c)));
}

UPat UPat::alu(Ops op, std::vector<UPat> others) const {
  others.insert(others.begin(), *this);
  UPat p(op, std::move(others));
  return group::Commutative.contains(op) ? p.permuted() : p;
}
UPat UPat::cast(DTypeSet d) const { return UPat(OpSet{Ops::CAST}, std::move(d), std::vector<UPat>{*this}); }
UPat UPat::where(const UPat& a, const UPat& b) const { return alu(Ops::WHERE, {a, b}); }
UPat UPat::lt(const UPat& b) const { return alu(Ops::CMPLT, {b}); }
UPat UPat::ne(const UPat& b) const { return alu(Ops::CMPNE, {b}); }
UPat UPat::eq(const UPat& b) const { return alu(Ops::CMPEQ, {b}); }
UPat UPat::maximum(const UPat& b) const { return alu(Ops::MAX, {b}); }

UPat operator+(const UPat& a, const UPat& b) { return a.alu(Ops::ADD, {b}); }
UPat operator*(const UPat& a, const UPat& b) { return a.alu(Ops::MUL, {b}); }
UPat operator-(const UPat& a) { return a.alu(Ops::MUL, {UPat::cnst(int64_t{-1})}); }
UPat operator/(const UPat& a, const UPat& b) { return a.alu(Ops::IDIV, {b}); }
UPat operator%(const UPat& a, const UPat& b) { return a.alu(Ops::MOD, {b}); }
UPat operator&(const UPat& a, const UPat& b) { return a.alu(Ops::AND, {b}); }
UPat operator|(const UPat& a, const UPat& b) { return a.alu(Ops::OR, {b}); }
UPat operator^(const UPat& a, const UPat& b) { return a.alu(Ops::XOR, {b}); }
UPat operator<<(const UPat& a, const UPat& b) { return a.alu(Ops::SHL, {b}); }
UPat operator>>(const UPat& a, const UPat& b) { return a.alu(Ops::SHR, {b}); }

#define TG_UPAT_SCALAR_IMPL(OP)                                                         \
  UPat operator OP(const UPat& a, int64_t b) { return a OP UPat::cnst(ConstValue{b}); } \
  UPat operator OP(const UPat& a, double b) { return a OP UPat::cnst(ConstValue{b}); }
TG_UPAT_SCALAR_IMPL(+)
TG_UPAT_SCALAR_IMPL(*)
TG_UPAT_SCALAR_IMPL(/)
TG_UPAT_SCALAR_IMPL(%)
TG_UPAT_SCALAR_IMPL(&)
TG_UPAT_SCALAR_IMPL(|)
TG_UPAT_SCALAR_IMPL(^)
TG_UPAT_SCALAR_IMPL(<<)
TG_UPAT_SCALAR_IMPL(>>)
#undef TG_UPAT_SCALAR_IMPL

// ---- matching ----

namespace {

using Caps = std::vector<std::pair<std::string_view, UOpRef>>;

// What to do after a (partial) match succeeds; returning false backtracks into the next alternative.
struct Cont {
  bool (*fn)(const void*);
  const void* ctx;
  bool operator()() const { return fn(ctx); }
};

bool match(const UPat::Node* p, const UOp* u, Caps& caps, Cont k);

struct SeqState {
  const NodePtr* pats;
  const uint8_t* order;
  std::span<const UOpRef> us;
  size_t i, n;
  Caps* caps;
  Cont k;
};

bool match_seq(const SeqState& s) {
  if (s.i == s.n) return s.k();
  SeqState next = s;
  next.i++;
  return match(s.pats[s.i].get(), s.us[s.order[s.i]].get(), *s.caps,
               Cont{[](const void* c) { return match_seq(*static_cast<const SeqState*>(c)); }, &next});
}

bool match(const UPat::Node* p, const UOp* u, Caps& caps, Cont k) {
  if (p == nullptr) return k();
  size_t mark = caps.size();
  if (!p->name.empty()) {
    auto it = std::find_if(caps.begin(), caps.end(), [&](const auto& c) { return c.first == p->name; });
    if (it != caps.end() && it->second.get() != u) return false;  // a name captures one node
    if (it == caps.end()) caps.emplace_back(p->name, u->ref());
  }
  auto fail = [&] { return caps.resize(mark), false; };
  if (!p->alts.empty()) {
    for (const NodePtr& a : p->alts)
      if (match(a.get(), u, caps, k)) return true;
    return fail();
  }
  if (!p->ops.empty() && !p->ops.contains(u->op())) return fail();
  if (!p->dtypes.matches(u->dtype())) return fail();
  if (p->arg && !arg_match(*p->arg, u->arg())) return fail();
  if (!p->has_src) return k() || fail();
  size_t n = p->src.size();
  std::span<const UOpRef> us = u->src();
  if (p->extra_src ? us.size() < n : us.size() != n) return fail();
  std::array<uint8_t, 8> order{};
  if (n > order.size()) throw ValueError("pattern", "more than 8 sources in one pattern");
  for (size_t i = 0; i < n; i++) order[i] = static_cast<uint8_t>(i);
  do {
    if (match_seq(SeqState{p->src.data(), order.data(), us, 0, n, &caps, k})) return true;
  } while (p->permute && std::next_permutation(order.begin(), order.begin() + n));
  return fail();
}

// Every op a pattern's root can match.
OpSet root_ops(const UPat::Node* p) {
  if (p == nullptr) return {};
  if (!p->alts.empty()) {
    OpSet r;
    for (const NodePtr& a : p->alts) {
      OpSet o = root_ops(a.get());
      if (o.empty()) return {};
      r = r | o;
    }
    return r;
  }
  return p->ops;
}

}  // namespace

const UOpRef& Match::operator[](std::string_view name) const {
  if (const UOpRef* r = find(name)) return *r;
  throw ValueError("pattern", fmt::format("no capture named '{}' in this match", name));
}

const UOpRef* Match::find(std::string_view name) const {
  for (const auto& [n, u] : caps_)
    if (n == name) return &u;
  return nullptr;
}

// ---- PatternMatcher ----

PatternMatcher::PatternMatcher(std::initializer_list<Rule> rules) : rules_(rules) { build_index(); }
PatternMatcher::PatternMatcher(std::vector<Rule> rules) : rules_(std::move(rules)) { build_index(); }

void PatternMatcher::build_index() {
  by_op_.assign(kOpsCount, {});
  for (uint32_t i = 0; i < rules_.size(); i++) {
    OpSet ops = root_ops(rules_[i].pat.node().get());
    for (int o = 0; o < kOpsCount; o++)
      if (ops.empty() || ops.contains(static_cast<Ops>(o))) by_op_[o].push_back(i);
  }
}

PatternMatcher PatternMatcher::memoized() const {
  static std::atomic<int> next_slot{0};  // never reused: a slot's marks stay valid for the process
  PatternMatcher pm = *this;
  int slot = next_slot.fetch_add(1, std::memory_order_relaxed);
  pm.memo_slot_ = slot < UOp::kFixedPointSlots ? slot : -1;
  return pm;
}

PatternMatcher PatternMatcher::operator+(const PatternMatcher& o) const {
  std::vector<Rule> rules = rules_;
  rules.insert(rules.end(), o.rules_.begin(), o.rules_.end());
  return PatternMatcher(std::move(rules));
}

UOpRef PatternMatcher::rewrite(const UOpRef& u, void* ctx, const Rule** fired) const {
  if (by_op_.empty()) return {};
  const std::vector<uint32_t>& bucket = by_op_[static_cast<int>(u->op())];
  if (bucket.empty()) return {};
  // Reuse one capture buffer per thread so matching does not allocate.
  static thread_local Caps pool;
  Match m(u, ctx);
  m.caps_.swap(pool);
  struct Restore {
    Match& m;
    ~Restore() { m.caps_.clear(), m.caps_.swap(pool); }
  } restore{m};
  struct Fire {
    const RewriteFn* fn;
    Match* m;
    UOpRef out;
  };
  for (uint32_t idx : bucket) {
    const Rule& r = rules_[idx];
    m.caps_.clear();
    Fire fire{&r.fn, &m, {}};
    auto call = [](const void* c) {
      Fire& f = *const_cast<Fire*>(static_cast<const Fire*>(c));
      f.out = (*f.fn)(*f.m);
      return f.out && f.out != f.m->root();
    };
    if (match(r.pat.node().get(), u.get(), m.caps_, Cont{call, &fire})) {
      if (fired) *fired = &r;
      return std::move(fire.out);
    }
  }
  return {};
}

}  // namespace tg
