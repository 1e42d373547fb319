#pragma once
// UPat + PatternMatcher: every transformation in the pipeline is a table of rules, one per line:
//
//   PatternMatcher symbolic_identities{
//     {UPat::var("x") * 1, [](Match& m) { return m["x"]; }},         // x*1 -> x
//     {UPat::var("x") + 0, [](Match& m) { return m["x"]; }},         // x+0 -> x
//   };
//
// Binary patterns built with + * & | ^ and max on commutative ops match either source order.
// Rule sets are values combined with `+`; dispatch is bucketed by the root op.
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "uop/uop.hpp"

namespace tg {

// Set of dtypes a pattern accepts (scalar kinds; vector widths of these match too).
class DTypeSet {
 public:
  DTypeSet() = default;
  DTypeSet(std::initializer_list<DType> ds) : ds_(ds) {}
  DTypeSet(DType d) : ds_{d} {}
  static DTypeSet floats();
  static DTypeSet ints();  // signed, unsigned and INDEX
  static DTypeSet bools() { return DTypeSet{dtypes::bool_}; }
  bool matches(DType d) const;
  bool any() const { return ds_.empty(); }

 private:
  std::vector<DType> ds_;  // empty = any
};

class UPat {
 public:
  UPat() = default;  // matches anything, captures nothing
  // Full form: ops (empty set = any), dtypes, sources (nullopt = any), arg (nullopt = any), capture name.
  UPat(OpSet ops, DTypeSet dtypes = {}, std::optional<std::vector<UPat>> src = std::nullopt,
       std::optional<Arg> arg = std::nullopt, std::string name = "");
  UPat(Ops op, std::optional<std::vector<UPat>> src = std::nullopt, std::optional<Arg> arg = std::nullopt,
       std::string name = "");

  static UPat var(std::string name = "", DTypeSet dtypes = {});   // any node
  static UPat cvar(std::string name = "", DTypeSet dtypes = {});  // any CONST (also vector-broadcast CONST)
  static UPat cnst(ConstValue v, DTypeSet dtypes = {});            // a CONST equal to v
  static UPat op(OpSet ops, std::vector<UPat> src = {}, std::string name = "");  // in order; {} = any
  static UPat any(std::vector<UPat> alternatives);                // first alternative that matches

  UPat named(std::string name) const;
  UPat dtype(DTypeSet d) const;
  // Match sources in any order (commutative), or the given source list as a prefix.
  UPat permuted() const;
  UPat allow_extra_src() const;
  UPat arg(Arg a) const;

  UPat cast(DTypeSet d = {}) const;
  UPat where(const UPat& a, const UPat& b) const;  // this ? a : b
  UPat lt(const UPat& b) const;
  UPat ne(const UPat& b) const;
  UPat eq(const UPat& b) const;
  UPat maximum(const UPat& b) const;
  UPat alu(Ops op, std::vector<UPat> others = {}) const;  // permuted when op is commutative

  // implementation detail shared with the matcher
  struct Node;
  const std::shared_ptr<const Node>& node() const { return n_; }

 private:
  explicit UPat(std::shared_ptr<const Node> n) : n_(std::move(n)) {}
  std::shared_ptr<const Node> n_;
};

UPat operator+(const UPat& a, const UPat& b);
UPat operator*(const UPat& a, const UPat& b);
UPat operator-(const UPat& a);  // x * -1, the form UOpRef's unary minus builds
UPat operator/(const UPat& a, const UPat& b);  // IDIV
UPat operator%(const UPat& a, const UPat& b);
UPat operator&(const UPat& a, const UPat& b);
UPat operator|(const UPat& a, const UPat& b);
UPat operator^(const UPat& a, const UPat& b);
UPat operator<<(const UPat& a, const UPat& b);
UPat operator>>(const UPat& a, const UPat& b);
// A plain number on one side matches a CONST of that value: UPat::var("x") * 1.
#define TG_UPAT_SCALAR_OPS(OP)                      \
  UPat operator OP(const UPat& a, int64_t b);       \
  UPat operator OP(const UPat& a, double b);        \
  inline UPat operator OP(const UPat& a, int b) { return a OP int64_t{b}; }
TG_UPAT_SCALAR_OPS(+)
TG_UPAT_SCALAR_OPS(*)
TG_UPAT_SCALAR_OPS(/)
TG_UPAT_SCALAR_OPS(%)
TG_UPAT_SCALAR_OPS(&)
TG_UPAT_SCALAR_OPS(|)
TG_UPAT_SCALAR_OPS(^)
TG_UPAT_SCALAR_OPS(<<)
TG_UPAT_SCALAR_OPS(>>)
#undef TG_UPAT_SCALAR_OPS

// Captures of one successful match, plus the rewrite context.
class Match {
 public:
  const UOpRef& operator[](std::string_view name) const;  // throws if name was not captured
  const UOpRef* find(std::string_view name) const;        // nullptr if not captured
  const UOpRef& root() const { return root_; }
  template <typename Ctx>
  Ctx& ctx() const { return *static_cast<Ctx*>(ctx_); }
  bool has_ctx() const { return ctx_ != nullptr; }

  // used by the matcher
  Match(UOpRef root, void* ctx) : root_(std::move(root)), ctx_(ctx) {}
  std::vector<std::pair<std::string_view, UOpRef>> caps_;

 private:
  UOpRef root_;
  void* ctx_;
};

// A rule's action: the replacement, or a null UOpRef for "no change".
using RewriteFn = std::function<UOpRef(Match&)>;

// Where a rule was written (std::source_location is missing from clang 14 with libstdc++ 12).
struct SourceLoc {
  const char* file = "";
  int line = 0;
  static constexpr SourceLoc current(const char* f = __builtin_FILE(), int l = __builtin_LINE()) {
    return {f, l};
  }
};

struct Rule {
  UPat pat;
  RewriteFn fn;
  SourceLoc where = SourceLoc::current();  // shown by DEBUG/VIZ
};

class PatternMatcher {
 public:
  PatternMatcher() = default;
  PatternMatcher(std::initializer_list<Rule> rules);
  explicit PatternMatcher(std::vector<Rule> rules);

  // Tries the rules whose root op matches u, in order; the first non-null result wins (and is named in fired).
  UOpRef rewrite(const UOpRef& u, void* ctx = nullptr, const Rule** fired = nullptr) const;
  PatternMatcher operator+(const PatternMatcher& o) const;
  const std::vector<Rule>& rules() const { return rules_; }

  // A copy whose graph_rewrite results are remembered in the nodes (UOp::is_fixed_point): a node once
  // rewritten to a fixed point is never walked again by this matcher. Only for matchers that live for the
  // process (function-local statics) and whose rules are pure: they read no context and no state outside
  // the matched subgraph. A few slots exist (UOp::kFixedPointSlots); past them this returns a plain copy.
  PatternMatcher memoized() const;
  int memo_slot() const { return memo_slot_; }  // -1: not memoized

 private:
  void build_index();
  std::vector<Rule> rules_;
  int memo_slot_ = -1;
  std::vector<std::vector<uint32_t>> by_op_;  // rule indices per root op (rules with any-op in every bucket)
};

struct RewriteOptions {
  std::string_view name = "rewrite";  // shown by DEBUG and VIZ
  bool bottom_up = false;             // false: rewrite sources first, then the node (to a fixed point)
};

// Rewrites the graph under root to a fixed point with pm; memoized per call.
UOpRef graph_rewrite(const UOpRef& root, const PatternMatcher& pm, void* ctx = nullptr, RewriteOptions opts = {});
template <typename Ctx>
UOpRef graph_rewrite(const UOpRef& root, const PatternMatcher& pm, Ctx& ctx, RewriteOptions opts = {}) {
  return graph_rewrite(root, pm, static_cast<void*>(&ctx), opts);
}

// One rule that fired: the node it matched and what it returned. g++ gives every rule of a braced table the
// table's closing line, so a rule is also told apart by its place among the rules sharing its location.
struct RewriteStep {
  SourceLoc where;
  UOpRef from, to;
  int in_table = 0, table_size = 1;
};
// Each graph_rewrite call is recorded here (pass name, every rule that fired, time) when tracing is on
// (set_rewrite_tracing or VIZ); the viewer and tests read it.
struct RewriteTrace {
  std::string name;
  UOpRef before, after;
  size_t matches = 0;
  double seconds = 0;
  std::vector<RewriteStep> steps;
  uint64_t seq = 0;  // from next_trace_seq: orders traces with the records of later stages (VIZ)
  std::thread::id thread;
};
uint64_t next_trace_seq();
void set_rewrite_tracing(bool on);
bool rewrite_tracing();  // set_rewrite_tracing(true) or VIZ: passes must run (not be skipped by a cache)
std::vector<RewriteTrace> take_rewrite_traces();

}  // namespace tg
