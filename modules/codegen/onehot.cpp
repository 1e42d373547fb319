// One-hot selection collapses to a load: sum over a range r of where(e == r, t, 0), with e free of r, is t
// at r = e when 0 <= e < end(r), and 0 otherwise. Tensor::index, gather and embedding lookups build that
// sum (everything stays lazy and fusable); without this rewrite each output element loops over every row of
// the table (tinygrad's reduce collapse does the same).
#include <algorithm>
#include <unordered_map>

#include "codegen/passes.hpp"
#include "uop/range.hpp"
#include "uop/symbolic.hpp"

namespace tg::codegen {
namespace {

bool onehot_reads(const UOp* root, const UOp* r) {
  const auto& topo = root->toposort();
  return std::find(topo.begin(), topo.end(), r) != topo.end();
}

bool onehot_is_zero(const UOp* u) {
  const ConstValue* c = u->const_value();
  if (!c) return false;
  return std::visit([](auto v) { return v == decltype(v){0}; }, *c);
}

// r or CAST(r): the range a one-hot comparison tests against.
const UOp* onehot_range(const UOp* side) {
  if (side->op() == Ops::CAST) side = side->src(0).get();
  return side->op() == Ops::RANGE ? side : nullptr;
}

UOpRef collapse_onehot(Match& m) {
  const UOpRef& red = m.root();
  if (red->arg_as<Ops>() != Ops::ADD) return {};
  const UOpRef& w = red->src(0);
  if (w->op() != Ops::WHERE || w->src(0)->op() != Ops::CMPEQ || !onehot_is_zero(w->src(2).get())) return {};
  const UOpRef &cmp = w->src(0), &t = w->src(1);
  for (int side = 0; side < 2; side++) {
    const UOp* r = onehot_range(cmp->src(side).get());
    auto is_r = [&](const UOpRef& s) { return s.get() == r; };
    if (!r || std::none_of(red->src().begin() + 1, red->src().end(), is_r)) continue;
    const UOpRef& e = cmp->src(1 - side);
    bool signed_int = e->dtype() == dtypes::index || (is_intlike(e->dtype()) && !e->dtype().is_unsigned());
    if (!signed_int || onehot_reads(e.get(), r)) continue;
    // In range, tested in e's own dtype (a wide index must not wrap into the table). The address is e
    // clamped to [0, end) as well: the load is gated anyway, and the clamp bounds the index arithmetic, so
    // lower_index_dtype can keep it in int32 (GLSL indexes with int only).
    UOpRef end = r->src(0)->dtype() == e->dtype() ? r->src(0) : r->src(0)->cast(e->dtype());
    UOpRef zero = UOp::const_(e->dtype(), int64_t{0}), one = UOp::const_(e->dtype(), int64_t{1});
    UOpRef valid = (zero - one)->lt(e) & e->lt(end);
    UOpRef clamped = -(-e->maximum(zero))->maximum(one - end);  // min(max(e, 0), end - 1)
    UOpRef at = e->dtype() == dtypes::index ? clamped : clamped->cast(dtypes::index);
    std::unordered_map<const UOp*, UOpRef> map{{r, at}};
    for (const UOp* u : t->toposort())
      if (u->op() == Ops::INDEX && onehot_reads(u, r)) {
        std::vector<UOpRef> src{u->src(0), u->src(1)->substitute({{r, at}})};
        src.push_back(u->src().size() > 2 ? u->src(2)->substitute({{r, at}}) & valid : valid);
        map[u] = UOp::make(Ops::INDEX, u->dtype(), std::move(src), u->arg());
      }
    UOpRef picked = valid->where(t->substitute(map), w->src(2));
    std::vector<UOpRef> src{picked};
    for (size_t i = 1; i < red->src().size(); i++)
      if (!is_r(red->src(i))) src.push_back(red->src(i));
    if (src.size() == 1) return picked;
    return UOp::make(Ops::REDUCE, red->dtype(), std::move(src), red->arg());
  }
  return {};
}

}  // namespace

UOpRef collapse_onehot_reduces(const UOpRef& sink) {
  static const PatternMatcher pm{{UPat(Ops::REDUCE), collapse_onehot}};
  UOpRef s = graph_rewrite(sink, pm, nullptr, {.name = "collapse one-hot reduces"});
  return s == sink ? s : graph_rewrite(s, symbolic(), nullptr, {.name = "symbolic after collapse"});
}

}  // namespace tg::codegen
