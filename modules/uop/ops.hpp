#pragma once
// Every micro-op. Kept as small as the job allows: matmul and conv are not ops, they are built from
// movement ops, MUL and REDUCE_AXIS. Order is ABI (RendererCaps::native_ops is indexed by it): append only.
#include <bitset>
#include <cstdint>
#include <initializer_list>
#include <string_view>

namespace tg {

enum class Ops : uint8_t {
  // graph and buffers (tensor level)
  SINK,         // groups outputs; the root of every graph that has several
  NOOP,         // placeholder that rewrites remove
  CONST,        // arg = value (bool, int64_t or double); src may hold the view it broadcasts to
  DEFINE_VAR,   // symbolic integer, arg = VarArg{name, min, max}
  BIND,         // (DEFINE_VAR, CONST): a variable bound to a value for one run
  UNIQUE,       // arg = id; makes otherwise-equal buffers distinct
  DEVICE,       // arg = device spec string
  BUFFER,       // (UNIQUE, DEVICE), arg = element count: storage that outlives a kernel
  BUFFER_VIEW,  // (BUFFER), arg = (size, offset): a zero-copy view into a buffer
  COPY,         // (x, DEVICE): move to another device
  ASSIGN,       // (target, value): write value into target's buffer
  CONTIGUOUS,   // force x to be materialized in row-major order
  DETACH,       // x without gradient
  KERNEL,       // a scheduled kernel, arg = its AST (OpaqueArg)
  AFTER,        // (x, deps...): x, ordered after deps

  // movement (tensor level; lowered to index arithmetic by the scheduler)
  RESHAPE,  // arg = new shape (Shape: sizes may be symbolic)
  PERMUTE,  // arg = axis order (IntVec)
  EXPAND,   // arg = new shape (Shape)
  PAD,      // arg = (before, after) per axis (ShapePairs)
  SHRINK,   // arg = (begin, end) per axis (ShapePairs)
  FLIP,     // arg = 0/1 per axis (IntVec)

  // reduce
  REDUCE_AXIS,  // tensor level, arg = ReduceArg{op, axes}
  REDUCE,       // kernel level: (value, RANGE...), arg = reduce op

  // unary
  EXP2, LOG2, SIN, SQRT, RECIPROCAL, NEG, TRUNC,
  CAST,     // value conversion to dtype
  BITCAST,  // same bits, new dtype

  // binary
  ADD, MUL, IDIV, MOD, MAX, CMPLT, CMPNE, CMPEQ, AND, OR, XOR, SHL, SHR,
  FDIV,      // float division (decomposed to MUL(RECIPROCAL) where not native)
  POW,       // decomposed to EXP2/LOG2 where not native
  THREEFRY,  // (x, key) -> 64-bit counter-based random bits

  // ternary
  WHERE,   // (cond, a, b)
  MULACC,  // a*b+c, formed late for targets with fma

  // kernel level (after scheduling)
  DEFINE_GLOBAL,  // kernel buffer argument, arg = argument index; dtype = pointer
  DEFINE_LOCAL,   // workgroup-shared memory, arg = name/index
  DEFINE_REG,     // register array (accumulators), arg = index
  RANGE,          // (end), arg = AxisArg{id, type}: a loop index in [0, end)
  END,            // (value, RANGE...): closes ranges after the value is done
  INDEX,          // (buffer, idx[, valid]): address of an element
  LOAD,           // (INDEX[, alt, gate]) -> value
  STORE,          // (INDEX, value[, gate])
  SPECIAL,        // arg = "gidx0"/"lidx0"/"core_id": a launch index, src = (size)
  BARRIER,        // workgroup barrier
  IF, ENDIF,      // gated block
  VECTORIZE,      // scalars -> vector
  GEP,            // vector -> elements, arg = IntVec of lanes
  WMMA,           // tensor-core D = A * B + C of a warp, arg = the tensor core (codegen wmma_arg)
  UNROLL,         // expander: arg = IntPairs (axis, size) to unroll into lanes
  CONTRACT,       // expander: arg = IntPairs (axis, size) to gather into a vector
  CUSTOM,         // arg = format string the renderer fills with its sources

  // tensor level, several devices (resolved before scheduling)
  MULTI,  // (one source per device), arg = IntVec{axis}: split along axis, or a full copy on each for -1
};
inline constexpr int kOpsCount = static_cast<int>(Ops::MULTI) + 1;

std::string_view op_name(Ops op);  // "ADD"

// A set of ops, usable in constant expressions: OpSet{Ops::ADD, Ops::MUL}.
class OpSet {
 public:
  constexpr OpSet() = default;
  constexpr OpSet(std::initializer_list<Ops> ops) {
    for (Ops o : ops) bits_[static_cast<int>(o) / 64] |= uint64_t{1} << (static_cast<int>(o) % 64);
  }
  constexpr bool contains(Ops o) const { return (bits_[static_cast<int>(o) / 64] >> (static_cast<int>(o) % 64)) & 1; }
  constexpr OpSet operator|(OpSet o) const {
    OpSet r;
    for (int i = 0; i < 4; i++) r.bits_[i] = bits_[i] | o.bits_[i];
    return r;
  }
  constexpr bool empty() const { return (bits_[0] | bits_[1] | bits_[2] | bits_[3]) == 0; }
  template <typename F>
  void for_each(F&& f) const {
    for (int i = 0; i < kOpsCount; i++)
      if (contains(static_cast<Ops>(i))) f(static_cast<Ops>(i));
  }

 private:
  uint64_t bits_[4] = {0, 0, 0, 0};
};

namespace group {
inline constexpr OpSet Unary{Ops::EXP2, Ops::LOG2, Ops::SIN, Ops::SQRT, Ops::RECIPROCAL, Ops::NEG, Ops::TRUNC};
inline constexpr OpSet Binary{Ops::ADD, Ops::MUL, Ops::IDIV, Ops::MOD,  Ops::MAX, Ops::CMPLT, Ops::CMPNE, Ops::CMPEQ,
                              Ops::AND, Ops::OR,  Ops::XOR,  Ops::SHL,  Ops::SHR, Ops::FDIV,  Ops::POW,   Ops::THREEFRY};
inline constexpr OpSet Ternary{Ops::WHERE, Ops::MULACC};
inline constexpr OpSet ALU = Unary | Binary | Ternary;
inline constexpr OpSet Commutative{Ops::ADD, Ops::MUL, Ops::MAX, Ops::CMPNE, Ops::CMPEQ, Ops::XOR, Ops::AND, Ops::OR};
inline constexpr OpSet Associative{Ops::ADD, Ops::MUL, Ops::AND, Ops::OR, Ops::MAX};
inline constexpr OpSet Comparison{Ops::CMPLT, Ops::CMPNE, Ops::CMPEQ};
inline constexpr OpSet Movement{Ops::RESHAPE, Ops::PERMUTE, Ops::EXPAND, Ops::PAD, Ops::SHRINK, Ops::FLIP};
inline constexpr OpSet Buffer{Ops::LOAD, Ops::STORE, Ops::CONST, Ops::DEFINE_VAR};
}  // namespace group

}  // namespace tg
