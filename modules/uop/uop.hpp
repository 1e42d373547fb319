#pragma once
// UOp: an immutable {op, dtype, src, arg} node. Every UOp is hash-consed through a thread-safe intern
// table, so structurally equal graphs are the same object and equality is a pointer compare. Nodes are
// reference counted (UOpRef) and leave the table when the last reference goes.
#include <atomic>
#include <concepts>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include <fmt/format.h>

#include "base/dtype.hpp"
#include "uop/ops.hpp"

namespace tg {

class UOp;
class UOpRef;

// ---- the handle ----
// Intrusive reference to an interned UOp. == is identity (which is structural equality).
class UOpRef {
 public:
  UOpRef() noexcept = default;
  UOpRef(std::nullptr_t) noexcept {}
  explicit UOpRef(const UOp* p) noexcept;  // adds a reference
  UOpRef(const UOpRef& o) noexcept;
  UOpRef(UOpRef&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  UOpRef& operator=(const UOpRef& o) noexcept;
  UOpRef& operator=(UOpRef&& o) noexcept;
  ~UOpRef();

  const UOp* get() const noexcept { return p_; }
  const UOp* operator->() const noexcept { return p_; }
  const UOp& operator*() const noexcept { return *p_; }
  explicit operator bool() const noexcept { return p_ != nullptr; }
  friend bool operator==(const UOpRef& a, const UOpRef& b) noexcept { return a.p_ == b.p_; }
  friend bool operator==(const UOpRef& a, std::nullptr_t) noexcept { return a.p_ == nullptr; }

 private:
  friend class UOpTable;
  const UOp* p_ = nullptr;
};

// ---- sizes ----
// A size: a number, or an index expression over bound variables (BIND nodes) for axes whose size changes
// between runs (a batch size, a sequence position). Numbers convert implicitly both ways. Reading a
// symbolic size as a number throws ShapeError, so code not written for variables fails clearly instead of
// baking one value in; the operators below keep sizes symbolic.
class sint {
 public:
  sint() = default;
  template <std::integral T>
  sint(T v) : v_(static_cast<int64_t>(v)) {}  // NOLINT: a number is a size
  static sint of(const UOpRef& expr);         // simplified; a constant becomes a number

  operator int64_t() const {  // NOLINT: sizes read as numbers wherever they are numbers
    if (e_) [[unlikely]]
      used_as_number();
    return v_;
  }
  bool is_number() const noexcept { return !e_; }
  const UOpRef& expr() const noexcept { return e_; }  // null for a number
  UOpRef uop() const;                                 // index-dtype node: a CONST for a number
  int64_t bound() const;                              // with every variable at its bound value
  int64_t min() const;                                // the smallest over the variables' ranges
  int64_t max() const;                                // the largest over the variables' ranges
  uint64_t hash() const noexcept;
  std::string str() const;  // "784", "n", "(n*784)"

  sint& operator+=(const sint& o);
  sint& operator*=(const sint& o);

 private:
  [[noreturn]] void used_as_number() const;
  int64_t v_ = 0;
  UOpRef e_;
};
template <typename A, typename B>
concept SizeOperands = (std::same_as<A, sint> || std::same_as<B, sint>)&&(
    std::same_as<A, sint> || std::integral<A>)&&(std::same_as<B, sint> || std::integral<B>);
sint size_add(const sint& a, const sint& b);
sint size_mul(const sint& a, const sint& b);
sint size_div(const sint& a, const sint& b);  // floor division of non-negative sizes
sint size_mod(const sint& a, const sint& b);
bool size_same(const sint& a, const sint& b);  // equal numbers, or the same simplified expression
// Templates so that `s * 2` prefers these over the built-in operators (which need a conversion of s).
template <typename A, typename B>
requires SizeOperands<A, B> sint operator+(const A& a, const B& b) { return size_add(sint(a), sint(b)); }
template <typename A, typename B>
requires SizeOperands<A, B> sint operator-(const A& a, const B& b) {
  return size_add(sint(a), size_mul(sint(b), -1));
}
template <typename A, typename B>
requires SizeOperands<A, B> sint operator*(const A& a, const B& b) { return size_mul(sint(a), sint(b)); }
template <typename A, typename B>
requires SizeOperands<A, B> sint operator/(const A& a, const B& b) { return size_div(sint(a), sint(b)); }
template <typename A, typename B>
requires SizeOperands<A, B> sint operator%(const A& a, const B& b) { return size_mod(sint(a), sint(b)); }
template <typename A, typename B>
requires SizeOperands<A, B>
bool operator==(const A& a, const B& b) { return size_same(sint(a), sint(b)); }

std::ostream& operator<<(std::ostream& os, const sint& s);  // str(): a symbolic size prints as itself

// Shapes of tensor-level nodes, and the RESHAPE/EXPAND (Shape) and PAD/SHRINK (ShapePairs) args.
using Shape = std::vector<sint>;
using ShapePairs = std::vector<std::pair<sint, sint>>;
sint prod(const Shape& s);              // the element count (1 for a scalar)
std::string shape_str(const Shape& s);  // "(3,4)", "(5,)", "()"
// Element counts that agree: equal, or, where one is symbolic, equal at the variables' bound values (a
// (64,784) buffer viewed as (n,784) with n bound to 64: the way a variable enters a graph).
bool same_count(const sint& a, const sint& b);
// 0 <= begin <= end <= size at the bound values and, by range analysis, for every value of the variables
// (a shrink valid for one binding must not read out of bounds for another).
bool shrink_fits(const sint& begin, const sint& end, const sint& size);
bool is_symbolic(const Shape& s);
std::vector<int64_t> to_ints(const Shape& s);  // throws ShapeError for a symbolic size
// The variables of a size with their bound values (BIND order in the expression); empty for a number.
std::vector<std::pair<UOpRef, int64_t>> bindings(const sint& s);
// The size with every BIND replaced by its variable: the same for every value, so it names the size's
// form (the JIT keys captures by it).
sint unbound(const sint& s);

// A size that changes between runs, within [min, max] (tinygrad's Variable): a batch size, a sequence
// position. bind(v) is the size for one run; shapes built from it keep the variable, so the kernels they
// lower to take it as an argument and work for every value.
//   Variable n("n", 1, 64);
//   Tensor xs = x.reshape({n.bind(batch), 784});
class Variable {
 public:
  Variable(std::string name, int64_t min, int64_t max);  // ValueError unless 0 <= min <= max
  sint bind(int64_t value) const;                        // ValueError outside [min, max]
  const std::string& name() const;
  int64_t min() const;
  int64_t max() const;
  const UOpRef& uop() const { return var_; }  // the DEFINE_VAR

 private:
  UOpRef var_;
};

// JSON (nlohmann, found by ADL): a size is a number.
template <typename Json>
void from_json(const Json& j, sint& s) {
  s = j.template get<int64_t>();
}
template <typename Json>
void to_json(Json& j, const sint& s) {
  j = static_cast<int64_t>(s);
}

// ---- typed args ----
using IntVec = std::vector<int64_t>;
using IntPairs = std::vector<std::pair<int64_t, int64_t>>;

enum class AxisType : uint8_t { GLOBAL, LOCAL, LOOP, THREAD, GROUP_REDUCE, REDUCE, UPCAST, UNROLL, OUTER };
std::string_view axis_type_name(AxisType t);

struct AxisArg {  // RANGE
  int64_t id = 0;
  AxisType type = AxisType::LOOP;
  friend bool operator==(const AxisArg&, const AxisArg&) = default;
};
struct ReduceArg {    // REDUCE_AXIS
  Ops op = Ops::ADD;  // ADD, MUL or MAX
  IntVec axes;
  friend bool operator==(const ReduceArg&, const ReduceArg&) = default;
};
struct VarArg {  // DEFINE_VAR
  std::string name;
  int64_t min = 0, max = 0;
  friend bool operator==(const VarArg&, const VarArg&) = default;
};
// Payloads owned by later stages (kernel info, opts...): compared and hashed structurally.
class OpaqueArg {
 public:
  virtual ~OpaqueArg() = default;
  virtual uint64_t hash() const = 0;
  virtual bool equals(const OpaqueArg& o) const = 0;
  virtual std::string str() const = 0;
};
using OpaquePtr = std::shared_ptr<const OpaqueArg>;

// CONST values: bool, integers as int64_t (uint64 values keep their bit pattern), floats as double.
using ConstValue = std::variant<bool, int64_t, double>;
using Arg = std::variant<std::monostate, bool, int64_t, double, std::string, IntVec, IntPairs, AxisArg,
                         ReduceArg, VarArg, Ops, OpaquePtr, Shape, ShapePairs>;

uint64_t hash_arg(const Arg& a);
bool arg_equal(const Arg& a, const Arg& b);  // OpaquePtr compares by equals(), the rest by value
std::string arg_str(const Arg& a);

// ---- the node ----
class UOp {
 public:
  UOp(const UOp&) = delete;
  UOp& operator=(const UOp&) = delete;

  // The only constructor: returns the interned node equal to {op, dtype, src, arg}.
  static UOpRef make(Ops op, DType dtype, std::vector<UOpRef> src = {}, Arg arg = {});
  // CONST of dtype (a vector dtype broadcasts the value); value is converted to the dtype's kind.
  static UOpRef const_(DType dtype, ConstValue v);
  static UOpRef const_(DType dtype, double v);  // convenience: ints/bools truncate/convert
  template <std::integral T>  // exact for every integer (an int64 through double would lose bits)
  static UOpRef const_(DType dtype, T v) {
    if constexpr (std::is_same_v<T, bool>)
      return const_(dtype, ConstValue{v});
    else
      return const_(dtype, ConstValue{static_cast<int64_t>(v)});
  }
  static UOpRef variable(std::string name, int64_t min, int64_t max, DType dtype = dtypes::index);
  static UOpRef range(const UOpRef& end, int64_t id, AxisType type = AxisType::LOOP);
  static UOpRef sink(std::vector<UOpRef> srcs);
  static constexpr int kFixedPointSlots = 16;  // memoized PatternMatchers (PatternMatcher::memoized)

  Ops op() const noexcept { return op_; }
  DType dtype() const noexcept { return dtype_; }
  std::span<const UOpRef> src() const noexcept { return src_; }
  const UOpRef& src(size_t i) const { return src_.at(i); }
  const Arg& arg() const noexcept { return arg_; }
  template <typename T>
  const T& arg_as() const;  // throws ValueError naming the op if arg does not hold a T
  uint64_t hash() const noexcept { return hash_; }
  UOpRef ref() const noexcept { return UOpRef(this); }
  // References held now: 1 tells a side table holding the node that nothing else refers to it.
  uint32_t use_count() const noexcept { return refs_.load(std::memory_order_relaxed); }

  // Copies with one field changed (interned).
  UOpRef with_src(std::vector<UOpRef> src) const;
  UOpRef with_arg(Arg arg) const;
  UOpRef with_dtype(DType d) const;

  // ---- building (dtype rules: comparisons give bool, the rest keep the first operand's dtype) ----
  UOpRef alu(Ops op, std::span<const UOpRef> others = {}) const;
  UOpRef alu(Ops op, const UOpRef& b) const;
  UOpRef alu(Ops op, const UOpRef& b, const UOpRef& c) const;
  UOpRef cast(DType d) const;
  UOpRef bitcast(DType d) const;
  UOpRef lt(const UOpRef& b) const;                      // CMPLT
  UOpRef ne(const UOpRef& b) const;                      // CMPNE
  UOpRef eq(const UOpRef& b) const;                      // CMPEQ
  UOpRef where(const UOpRef& a, const UOpRef& b) const;  // this ? a : b
  UOpRef maximum(const UOpRef& b) const;
  UOpRef const_like(ConstValue v) const;  // CONST with this node's dtype

  // ---- inspecting ----
  bool is_const() const noexcept { return op_ == Ops::CONST; }
  const ConstValue* const_value() const noexcept;  // non-null for CONST
  // Every node reachable from this one, each once, sources before users (this node last).
  std::vector<const UOp*> toposort() const;
  // Replaces nodes by map (keys and values interned): rebuilds only what changed.
  UOpRef substitute(const std::unordered_map<const UOp*, UOpRef>& map) const;
  // Integer range analysis: proven bounds of the value (bools as 0/1, floats unbounded as ±inf).
  ConstValue vmin() const;
  ConstValue vmax() const;
  // Runs the symbolic simplifier (uop/symbolic.hpp) over this graph.
  UOpRef simplify() const;
  // Shape of a tensor-level node (movement, ALU, REDUCE_AXIS, BUFFER, CONST with a view...): computed once
  // by the rules in uop/shape.cpp and cached in the node. nullptr for nodes without a shape (kernel level).
  // Throws ShapeError naming the op for an inconsistent graph.
  const Shape* shape() const;
  // One line: "UOp(Ops.ADD, dtypes.int, arg=None, src=(Ops.DEFINE_VAR, Ops.CONST))" (trees: print.hpp).
  std::string str() const;
  // Memo of graph_rewrite with a memoized (pure) PatternMatcher: bit `slot` set means this node and every
  // node below it are a fixed point of that matcher, so a later rewrite skips the whole subgraph.
  bool is_fixed_point(int slot) const noexcept {
    return (fixed_.load(std::memory_order_relaxed) >> slot) & 1u;
  }
  void mark_fixed_point(int slot) const noexcept {
    fixed_.fetch_or(static_cast<uint16_t>(1u << slot), std::memory_order_relaxed);
  }

  ~UOp();

 private:
  friend class UOpRef;
  friend class UOpTable;
  friend class RangeAnalysis;  // uop/range.cpp fills the vmin/vmax memo
  UOp(Ops op, DType dtype, std::vector<UOpRef> src, Arg arg, uint64_t hash);

  Ops op_;
  DType dtype_;
  std::vector<UOpRef> src_;
  Arg arg_;
  uint64_t hash_;
  mutable std::atomic<uint32_t> refs_{0};
  mutable std::atomic<uint8_t> range_cached_{0};  // vmin/vmax memo, filled by range analysis
  mutable std::atomic<uint16_t> fixed_{0};        // fixed point of memoized matcher `slot` (bit per slot)
  mutable ConstValue vmin_{int64_t{0}}, vmax_{int64_t{0}};
  ConstValue cval_{int64_t{0}};  // the value of a CONST (arg converted), so const_value() can point at it
  mutable std::atomic<std::shared_ptr<const Shape>> shape_{};  // filled by shape()
  mutable std::atomic<bool> shape_done_{false};
};

std::ostream& operator<<(std::ostream& os, const UOpRef& u);  // u->str(), or "nullptr"

// Number of live interned UOps (for tests and the benchmark).
size_t live_uop_count();

// ---- operators that read like the algebra: a + b, x * 4, -x ... ----
UOpRef operator+(const UOpRef& a, const UOpRef& b);
UOpRef operator*(const UOpRef& a, const UOpRef& b);
UOpRef operator-(const UOpRef& a, const UOpRef& b);  // a + (-b)
UOpRef operator-(const UOpRef& a);                   // a * -1 as tinygrad (bool: logical not)
UOpRef operator/(const UOpRef& a, const UOpRef& b);  // IDIV for ints, FDIV for floats
UOpRef operator%(const UOpRef& a, const UOpRef& b);
UOpRef operator&(const UOpRef& a, const UOpRef& b);
UOpRef operator|(const UOpRef& a, const UOpRef& b);
UOpRef operator^(const UOpRef& a, const UOpRef& b);
UOpRef operator<<(const UOpRef& a, const UOpRef& b);
UOpRef operator>>(const UOpRef& a, const UOpRef& b);
// Mixed with plain numbers: the number becomes a CONST of the UOp's dtype.
#define TG_UOP_SCALAR_OPS(OP)                                                   \
  UOpRef operator OP(const UOpRef& a, int64_t b);                               \
  UOpRef operator OP(int64_t a, const UOpRef& b);                               \
  UOpRef operator OP(const UOpRef& a, double b);                                \
  UOpRef operator OP(double a, const UOpRef& b);                                \
  inline UOpRef operator OP(const UOpRef& a, int b) { return a OP int64_t{b}; } \
  inline UOpRef operator OP(int a, const UOpRef& b) { return int64_t{a} OP b; }
TG_UOP_SCALAR_OPS(+)
TG_UOP_SCALAR_OPS(*)
TG_UOP_SCALAR_OPS(-)
TG_UOP_SCALAR_OPS(/)
TG_UOP_SCALAR_OPS(%)
#undef TG_UOP_SCALAR_OPS

[[noreturn]] void throw_bad_arg(Ops op);
template <typename T>
const T& UOp::arg_as() const {
  if (const T* p = std::get_if<T>(&arg_)) return *p;
  throw_bad_arg(op_);
}

}  // namespace tg

template <>
struct std::hash<tg::UOpRef> {
  size_t operator()(const tg::UOpRef& u) const noexcept { return std::hash<const void*>()(u.get()); }
};

template <>
struct fmt::formatter<tg::sint> : fmt::formatter<std::string_view> {
  auto format(const tg::sint& s, format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(s.str(), ctx);
  }
};
