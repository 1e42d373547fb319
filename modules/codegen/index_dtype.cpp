// INDEX dtype -> a concrete integer: int32 where range analysis proves the value fits, else int64. A node
// with an int64 operand is int64 too, and narrower operands are widened to match. On a CPU-style renderer
// with int64, a kernel that divides no index computes every index in int64: its addresses need no sign
// extension of a wrapping 32-bit sum, and clang's loop passes (induction variables, strength reduction)
// fold them instead of carrying each offset apart. The Fashion-MNIST step compiled in 0.65-0.8x the CPU time
// and its 5x5 conv kernels ran 1.1-1.3x faster. A kernel with IDIV or MOD keeps int32, where division by a
// constant is cheaper (W4's im2col copy ran slower in int64).
#include <cstdint>
#include <limits>

#include "codegen/passes.hpp"

namespace tg::codegen {

namespace {

int64_t bound(const ConstValue& v, int64_t if_float) {
  if (const int64_t* i = std::get_if<int64_t>(&v)) return *i;
  if (const bool* b = std::get_if<bool>(&v)) return *b;
  return if_float;
}

bool fits_int32(const UOp& u) {
  return bound(u.vmin(), INT64_MIN) >= std::numeric_limits<int32_t>::min() &&
         bound(u.vmax(), INT64_MAX) <= std::numeric_limits<int32_t>::max();
}

bool is_int64(DType d) { return d.scalar() == Scalar::INT64; }

template <bool AllWide>
UOpRef lower_index(Match& m) {
  const UOpRef& u = m.root();
  bool wide = AllWide || !fits_int32(*u);
  if (u->op() != Ops::CAST)
    for (const UOpRef& s : u->src()) wide = wide || is_int64(s->dtype());
  DType t = DType(wide ? Scalar::INT64 : Scalar::INT32, u->dtype().count());
  if (u->op() == Ops::CONST) return UOp::const_(t, *u->const_value());
  if (u->op() == Ops::CAST) return u->src(0)->cast(t);
  std::vector<UOpRef> src;
  for (const UOpRef& s : u->src()) {
    DType sd = s->dtype();
    bool arith = sd.is_int() && !sd.is_ptr() && sd.scalar() != t.scalar();
    src.push_back(arith ? s->cast(DType(t.scalar(), sd.count())) : s);
  }
  return UOp::make(u->op(), t, std::move(src), u->arg());
}

// Comparisons of lowered index values whose operands ended up with different widths.
UOpRef widen_operands(Match& m) {
  const UOpRef& u = m.root();
  if (u->src().size() != 2) return nullptr;
  DType a = u->src(0)->dtype(), b = u->src(1)->dtype();
  auto lowered = [](DType d) { return !d.is_ptr() && (d.scalar() == Scalar::INT32 || is_int64(d)); };
  if (!lowered(a) || !lowered(b) || a.scalar() == b.scalar()) return nullptr;
  return u->with_src(
      {u->src(0)->cast(DType(Scalar::INT64, a.count())), u->src(1)->cast(DType(Scalar::INT64, b.count()))});
}

}  // namespace

UOpRef lower_index_dtype(const UOpRef& sink, const sdk::RendererCaps& caps) {
  static const PatternMatcher narrow{
      {UPat::var("x", DTypeSet{dtypes::index}), lower_index<false>},  // index -> int32 | int64
      {UPat(group::Comparison, {}, std::nullopt, std::nullopt, "c"),
       widen_operands},  // int32 < int64 -> widen
  };
  static const PatternMatcher wide{
      {UPat::var("x", DTypeSet{dtypes::index}), lower_index<true>},  // index -> int64
      {UPat(group::Comparison, {}, std::nullopt, std::nullopt, "c"), widen_operands},
  };
  bool divides = false;
  for (const UOp* u : sink->toposort())
    divides = divides || ((u->op() == Ops::IDIV || u->op() == Ops::MOD) && u->dtype() == dtypes::index);
  bool cpu = caps.has_threads && !caps.has_local &&
             (caps.dtypes == 0 || sdk::has_dtype(caps, static_cast<unsigned>(Scalar::INT64)));
  return graph_rewrite(sink, cpu && !divides ? wide : narrow, nullptr, {.name = "lower index dtype"});
}

}  // namespace tg::codegen
