// The IR spec as rule tables. Each rule accepts (spec_ok), rejects with a reason (spec_fail), or passes
// (nullptr) to the next rule; shared rules come after the graph-specific ones.
#include "uop/spec.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "base/env.hpp"
#include "base/error.hpp"

namespace tg {

namespace {

using M = Match;
using Pred = bool (*)(M&);

constexpr std::string_view kOk = "\x01spec-ok";

// A rule body: accept if pred holds, else reject with why.
RewriteFn check(Pred pred, std::string why) {
  return [pred, why = std::move(why)](M& m) { return pred(m) ? spec_ok() : spec_fail(why); };
}
RewriteFn accept() {
  return [](M&) { return spec_ok(); };
}
RewriteFn reject(std::string why) {
  return [why = std::move(why)](M&) { return spec_fail(why); };
}

const UOp& node(M& m) { return *m.root(); }
DType sd(M& m, size_t i) { return node(m).src(i)->dtype(); }
bool nsrc(M& m, size_t n) { return node(m).src().size() == n; }
bool all_src_dtype(M& m) {
  const UOp& u = node(m);
  return std::all_of(u.src().begin(), u.src().end(),
                     [&](const UOpRef& s) { return s->dtype() == u.dtype(); });
}
bool int_dtype(DType d) { return !d.is_ptr() && d.is_int(); }
bool value_dtype(DType d) { return !d.is_ptr() && d.scalar() != Scalar::VOID; }
template <typename T>
bool arg_is(M& m) {
  return std::holds_alternative<T>(node(m).arg());
}

bool const_ok(M& m) {
  const UOp& u = node(m);
  DType d = u.dtype();
  if (!value_dtype(d)) return false;
  if (d.is_bool()) return arg_is<bool>(m);
  return d.is_float() ? arg_is<double>(m) : arg_is<int64_t>(m);
}

bool bind_ok(M& m) {
  const UOp& u = node(m);
  if (!nsrc(m, 2) || u.src(0)->op() != Ops::DEFINE_VAR || !u.src(1)->is_const() || u.dtype() != sd(m, 0))
    return false;
  const VarArg* v = std::get_if<VarArg>(&u.src(0)->arg());
  const int64_t* x = std::get_if<int64_t>(&u.src(1)->arg());
  return v && x && v->min <= *x && *x <= v->max;
}

bool gep_ok(M& m) {
  const UOp& u = node(m);
  const IntVec* lanes = std::get_if<IntVec>(&u.arg());
  if (!nsrc(m, 1) || !lanes || lanes->empty()) return false;
  DType s = sd(m, 0);
  bool in_range =
      std::all_of(lanes->begin(), lanes->end(), [&](int64_t l) { return l >= 0 && l < s.count(); });
  return in_range && u.dtype() == s.scalar_type().vec(static_cast<uint16_t>(lanes->size()));
}

bool vectorize_ok(M& m) {
  const UOp& u = node(m);
  if (u.src().empty() || u.src().size() != u.dtype().count()) return false;
  return std::all_of(u.src().begin(), u.src().end(),
                     [&](const UOpRef& s) { return s->dtype().vec(u.dtype().count()) == u.dtype(); });
}

bool permute_ok(M& m) {
  const IntVec* p = std::get_if<IntVec>(&node(m).arg());
  if (!p) return false;
  IntVec s = *p;
  std::sort(s.begin(), s.end());
  for (size_t i = 0; i < s.size(); i++)
    if (s[i] != static_cast<int64_t>(i)) return false;
  return true;
}

bool reduce_op_ok(Ops op) { return op == Ops::ADD || op == Ops::MUL || op == Ops::MAX; }

bool ranges_after_first(M& m) {
  const UOp& u = node(m);
  for (size_t i = 1; i < u.src().size(); i++)
    if (u.src(i)->op() != Ops::RANGE) return false;
  return true;
}

// Rules valid in every graph.
PatternMatcher shared_spec() {
  OpSet same_dtype_alu{Ops::ADD, Ops::MUL, Ops::MAX, Ops::NEG, Ops::TRUNC, Ops::MULACC};
  OpSet float_alu{Ops::FDIV, Ops::EXP2, Ops::LOG2, Ops::SIN, Ops::SQRT, Ops::RECIPROCAL, Ops::POW};
  return PatternMatcher{
      {UPat(Ops::SINK), check([](M& m) { return node(m).dtype() == dtypes::void_; }, "SINK must be void")},
      {UPat(Ops::NOOP), accept()},
      {UPat(Ops::CONST),
       check(const_ok, "CONST arg must be the value kind of its dtype (bool/int64/double)")},
      {UPat(Ops::DEFINE_VAR, std::vector<UPat>{}),
       check(
           [](M& m) {
             const VarArg* v = std::get_if<VarArg>(&node(m).arg());
             return v && v->min <= v->max && int_dtype(node(m).dtype());
           },
           "DEFINE_VAR needs an int dtype and a VarArg with min <= max")},
      {UPat(Ops::BIND), check(bind_ok, "BIND is (DEFINE_VAR, CONST in its range) with the variable's dtype")},
      {UPat(Ops::RANGE), check(
                             [](M& m) {
                               return nsrc(m, 1) && int_dtype(node(m).dtype()) &&
                                      sd(m, 0) == node(m).dtype() && arg_is<AxisArg>(m);
                             },
                             "RANGE is (end) with end's int dtype and an AxisArg")},
      {UPat(Ops::WHERE), check(
                             [](M& m) {
                               return nsrc(m, 3) && sd(m, 0) == dtypes::bool_.vec(node(m).dtype().count()) &&
                                      sd(m, 1) == node(m).dtype() && sd(m, 2) == node(m).dtype();
                             },
                             "WHERE is (bool cond, a, b) with a and b of its dtype")},
      {UPat(group::Comparison), check(
                                    [](M& m) {
                                      return nsrc(m, 2) && sd(m, 0) == sd(m, 1) &&
                                             node(m).dtype() == dtypes::bool_.vec(sd(m, 0).count());
                                    },
                                    "comparisons take two sources of one dtype and give bool")},
      {UPat(OpSet{Ops::SHL, Ops::SHR}),
       check(
           [](M& m) {
             return nsrc(m, 2) && int_dtype(node(m).dtype()) && sd(m, 0) == node(m).dtype() &&
                    (sd(m, 1) == node(m).dtype() || sd(m, 1).scalar() == Scalar::UINT32);
           },
           "shifts take an int value of their dtype and a shift of that dtype or uint32")},
      {UPat(OpSet{Ops::IDIV, Ops::MOD}),
       check([](M& m) { return nsrc(m, 2) && int_dtype(node(m).dtype()) && all_src_dtype(m); },
             "IDIV and MOD are integer ops on sources of their dtype")},
      {UPat(OpSet{Ops::AND, Ops::OR, Ops::XOR}),
       check(
           [](M& m) {
             return nsrc(m, 2) && (int_dtype(node(m).dtype()) || node(m).dtype().is_bool()) &&
                    all_src_dtype(m);
           },
           "bitwise ops take two int or bool sources of their dtype")},
      {UPat(float_alu), check(
                            [](M& m) {
                              size_t n = node(m).op() == Ops::FDIV || node(m).op() == Ops::POW ? 2 : 1;
                              return nsrc(m, n) && node(m).dtype().is_float() && !node(m).dtype().is_ptr() &&
                                     all_src_dtype(m);
                            },
                            "float ops take float sources of their dtype")},
      {UPat(Ops::THREEFRY),
       check([](M& m) { return nsrc(m, 2) && node(m).dtype() == dtypes::uint64 && all_src_dtype(m); },
             "THREEFRY is uint64 (x, key)")},
      {UPat(same_dtype_alu), check(
                                 [](M& m) {
                                   Ops op = node(m).op();
                                   size_t n = op == Ops::NEG || op == Ops::TRUNC ? 1
                                              : op == Ops::MULACC                ? 3
                                                                                 : 2;
                                   return nsrc(m, n) && value_dtype(node(m).dtype()) && all_src_dtype(m);
                                 },
                                 "ALU sources must have the op's dtype")},
      {UPat(Ops::CAST),
       check([](M& m) { return nsrc(m, 1) && arg_is<std::monostate>(m); }, "CAST has one source")},
      {UPat(Ops::BITCAST),
       check([](M& m) { return nsrc(m, 1) && node(m).dtype().itemsize() == sd(m, 0).itemsize(); },
             "BITCAST keeps the size in bytes")},
      {UPat(Ops::VECTORIZE),
       check(vectorize_ok, "VECTORIZE takes dtype.count() scalars of its element dtype")},
      {UPat(Ops::GEP), check(gep_ok, "GEP takes lanes (IntVec) inside its source and gives their dtype")},
  };
}

}  // namespace

UOpRef spec_ok() {
  static const UOpRef ok = UOp::make(Ops::NOOP, dtypes::void_, {}, std::string(kOk));
  return ok;
}

UOpRef spec_fail(std::string_view why) { return UOp::make(Ops::NOOP, dtypes::void_, {}, std::string(why)); }

const PatternMatcher& tensor_spec() {
  static const PatternMatcher pm =
      PatternMatcher{
          {UPat(Ops::UNIQUE),
           check([](M& m) { return nsrc(m, 0) && arg_is<int64_t>(m); }, "UNIQUE has an int64 id")},
          {UPat(Ops::DEVICE),
           check([](M& m) { return nsrc(m, 0) && arg_is<std::string>(m); }, "DEVICE has a string arg")},
          {UPat(Ops::BUFFER), check(
                                  [](M& m) {
                                    return node(m).src().size() >= 2 && node(m).src(0)->op() == Ops::UNIQUE &&
                                           node(m).src(1)->op() == Ops::DEVICE && arg_is<int64_t>(m) &&
                                           std::get<int64_t>(node(m).arg()) >= 0;
                                  },
                                  "BUFFER is (UNIQUE, DEVICE) with an element count")},
          {UPat(Ops::BUFFER_VIEW),
           check([](M& m) { return nsrc(m, 1) && node(m).src(0)->op() == Ops::BUFFER; },
                 "BUFFER_VIEW views one BUFFER")},
          {UPat(Ops::COPY), check(
                                [](M& m) {
                                  return nsrc(m, 2) && node(m).src(1)->op() == Ops::DEVICE &&
                                         node(m).dtype() == sd(m, 0);
                                },
                                "COPY is (x, DEVICE) with x's dtype")},
          {UPat(Ops::ASSIGN), check(
                                  [](M& m) {
                                    return node(m).src().size() >= 2 && node(m).dtype() == sd(m, 0) &&
                                           sd(m, 1) == sd(m, 0);
                                  },
                                  "ASSIGN is (target, value) of one dtype")},
          {UPat(OpSet{Ops::CONTIGUOUS, Ops::DETACH, Ops::AFTER}),
           check([](M& m) { return !node(m).src().empty() && node(m).dtype() == sd(m, 0); },
                 "CONTIGUOUS, DETACH and AFTER keep their source's dtype")},
          {UPat(Ops::KERNEL), check(arg_is<OpaquePtr>, "KERNEL carries its AST as an OpaqueArg")},
          {UPat(Ops::MULTI), reject("MULTI must be resolved to one graph per device before scheduling")},
          {UPat(Ops::PERMUTE), check([](M& m) { return !node(m).src().empty() && permute_ok(m); },
                                     "PERMUTE arg is a permutation")},
          {UPat(Ops::FLIP), check(
                                [](M& m) {
                                  const IntVec* f = std::get_if<IntVec>(&node(m).arg());
                                  return f && std::all_of(f->begin(), f->end(),
                                                          [](int64_t v) { return v == 0 || v == 1; });
                                },
                                "FLIP arg is 0/1 per axis")},
          {UPat(OpSet{Ops::RESHAPE, Ops::EXPAND}),
           check(
               [](M& m) { return !node(m).src().empty() && node(m).dtype() == sd(m, 0) && arg_is<Shape>(m); },
               "RESHAPE and EXPAND take the new shape (Shape) and keep the dtype")},
          {UPat(OpSet{Ops::PAD, Ops::SHRINK}),
           check(
               [](M& m) {
                 return !node(m).src().empty() && node(m).dtype() == sd(m, 0) && arg_is<ShapePairs>(m);
               },
               "PAD and SHRINK take (begin, end) pairs per axis (ShapePairs) and keep the dtype")},
          {UPat(Ops::REDUCE_AXIS),
           check(
               [](M& m) {
                 const ReduceArg* r = std::get_if<ReduceArg>(&node(m).arg());
                 return nsrc(m, 1) && r && reduce_op_ok(r->op) && node(m).dtype() == sd(m, 0);
               },
               "REDUCE_AXIS is ADD, MUL or MAX over axes of one source of its dtype")},
          // the scheduler's index form of a tensor graph
          {UPat(Ops::INDEX), check([](M& m) { return !node(m).src().empty(); }, "INDEX needs a buffer")},
          {UPat(Ops::REDUCE), check(
                                  [](M& m) {
                                    const Ops* op = std::get_if<Ops>(&node(m).arg());
                                    return !node(m).src().empty() && op && reduce_op_ok(*op) &&
                                           ranges_after_first(m);
                                  },
                                  "REDUCE is (value, RANGE...) with ADD, MUL or MAX")},
          {UPat(Ops::STORE),
           check([](M& m) { return node(m).src().size() >= 2; }, "STORE is (target, value)")},
          {UPat(Ops::END), check([](M& m) { return node(m).src().size() >= 2 && ranges_after_first(m); },
                                 "END is (value, RANGE...)")},
      } +
      shared_spec();
  return pm;
}

const PatternMatcher& kernel_spec() {
  static const PatternMatcher pm =
      PatternMatcher{
          {UPat(Ops::DEFINE_GLOBAL), check(
                                         [](M& m) {
                                           return nsrc(m, 0) &&
                                                  node(m).dtype().addrspace() == AddrSpace::GLOBAL &&
                                                  arg_is<int64_t>(m);
                                         },
                                         "DEFINE_GLOBAL is a global pointer with its argument index")},
          {UPat(Ops::DEFINE_LOCAL),
           check([](M& m) { return node(m).dtype().addrspace() == AddrSpace::LOCAL; },
                 "DEFINE_LOCAL is a local pointer")},
          {UPat(Ops::DEFINE_REG), check([](M& m) { return node(m).dtype().is_ptr() && arg_is<int64_t>(m); },
                                        "DEFINE_REG is a pointer with an index")},
          {UPat(Ops::INDEX), check(
                                 [](M& m) {
                                   const UOp& u = node(m);
                                   if (u.src().size() < 2 || u.src().size() > 3 || !sd(m, 0).is_ptr() ||
                                       !int_dtype(sd(m, 1)))
                                     return false;
                                   return u.src().size() == 2 || sd(m, 2).is_bool();
                                 },
                                 "INDEX is (pointer, int index[, bool gate])")},
          {UPat(Ops::LOAD), check(
                                [](M& m) {
                                  const UOp& u = node(m);
                                  return (u.src().size() == 1 || u.src().size() == 3) && sd(m, 0).is_ptr() &&
                                         u.dtype().scalar() == sd(m, 0).scalar();
                                },
                                "LOAD is (pointer[, alt, gate]) of the pointee's dtype")},
          {UPat(Ops::STORE), check(
                                 [](M& m) {
                                   const UOp& u = node(m);
                                   return (u.src().size() == 2 || u.src().size() == 3) &&
                                          u.dtype() == dtypes::void_ && sd(m, 0).is_ptr() &&
                                          sd(m, 1).scalar() == sd(m, 0).scalar();
                                 },
                                 "STORE is (pointer, value of the pointee's dtype[, gate]) and void")},
          {UPat(Ops::END), check([](M& m) { return node(m).src().size() >= 2 && ranges_after_first(m); },
                                 "END is (value, RANGE...)")},
          {UPat(Ops::REDUCE), check(
                                  [](M& m) {
                                    const Ops* op = std::get_if<Ops>(&node(m).arg());
                                    return !node(m).src().empty() && op && reduce_op_ok(*op) &&
                                           ranges_after_first(m) && node(m).dtype() == sd(m, 0);
                                  },
                                  "REDUCE is (value, RANGE...) with ADD, MUL or MAX and the value's dtype")},
          {UPat(Ops::SPECIAL), check(
                                   [](M& m) {
                                     return nsrc(m, 1) && int_dtype(node(m).dtype()) &&
                                            sd(m, 0) == node(m).dtype() && arg_is<std::string>(m);
                                   },
                                   "SPECIAL is (size) with a launch-index name")},
          {UPat(Ops::AFTER), check([](M& m) { return !node(m).src().empty() && node(m).dtype() == sd(m, 0); },
                                   "AFTER keeps its first source's dtype")},
          {UPat(OpSet{Ops::BARRIER, Ops::ENDIF}),
           check([](M& m) { return node(m).dtype() == dtypes::void_; }, "must be void")},
          {UPat(Ops::IF), check([](M& m) { return !node(m).src().empty() && sd(m, 0).is_bool(); },
                                "IF takes a bool condition")},
          {UPat(Ops::WMMA), check([](M& m) { return nsrc(m, 3) && arg_is<IntVec>(m); },
                                  "WMMA is (a, b, acc) with the tensor core as an IntVec")},
          {UPat(OpSet{Ops::UNROLL, Ops::CONTRACT}),
           check(arg_is<IntPairs>, "UNROLL and CONTRACT take (axis, size) pairs")},
          {UPat(Ops::CUSTOM), check(arg_is<std::string>, "CUSTOM takes a format string")},
          {UPat(group::Movement | OpSet{Ops::BUFFER, Ops::COPY, Ops::ASSIGN, Ops::REDUCE_AXIS, Ops::KERNEL,
                                        Ops::DEVICE, Ops::UNIQUE, Ops::CONTIGUOUS, Ops::DETACH,
                                        Ops::BUFFER_VIEW, Ops::MULTI}),
           reject("tensor-level op in a kernel graph")},
      } +
      shared_spec();
  return pm;
}

void verify_graph(const UOpRef& root, const PatternMatcher& pm, std::string_view pass) {
  const UOpRef ok = spec_ok();
  for (const UOp* u : root->toposort()) {
    UOpRef r = pm.rewrite(u->ref());
    if (r == ok) continue;
    const std::string* s = r ? std::get_if<std::string>(&r->arg()) : nullptr;
    std::string why = s ? *s : fmt::format("{} is not allowed here", op_name(u->op()));
    throw ValueError("spec", fmt::format("{}: {} at {}", pass, why, u->str()));
  }
}

void verify_tensor_graph(const UOpRef& root) { verify_graph(root, tensor_spec(), "tensor graph"); }
void verify_kernel_graph(const UOpRef& root) { verify_graph(root, kernel_spec(), "kernel graph"); }

bool spec_enabled() {
  static const bool on = [] {
    std::optional<int> v = env::get_int("SPEC");
#ifdef NDEBUG
    bool def = false;
#else
    bool def = true;
#endif
    return v ? *v != 0 : def;
  }();
  return on;
}

}  // namespace tg
