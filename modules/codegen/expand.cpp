// The expander: a loop over an UPCAST range becomes its body once per value of the range (k scalar copies
// side by side, which the target's compiler may pack into vectors). UNROLL ranges are unrolled where the
// accumulators are built (ends.cpp).
#include <unordered_map>

#include "codegen/passes.hpp"

namespace tg::codegen {

namespace {

UOpRef expand_end(Match& m) {
  const UOpRef& e = m.root();
  if (e->src().size() != 2 || e->src(1)->op() != Ops::RANGE) return nullptr;
  const UOpRef& r = e->src(1);
  if (r->arg_as<AxisArg>().type != AxisType::UPCAST || !r->src(0)->is_const()) return nullptr;
  int64_t n = std::get<int64_t>(*r->src(0)->const_value());
  std::vector<UOpRef> copies;
  for (int64_t v = 0; v < n; v++)
    copies.push_back(e->src(0)->substitute({{r.get(), UOp::const_(r->dtype(), ConstValue{v})}}));
  if (copies.size() == 1) return copies[0];
  return UOp::make(Ops::NOOP, dtypes::void_, std::move(copies));
}

}  // namespace

UOpRef expand_upcasts(const UOpRef& sink) {
  static const PatternMatcher pm{{UPat(Ops::END, std::nullopt, std::nullopt, "e"), expand_end}};
  return graph_rewrite(sink, pm, nullptr, {.name = "expand upcasts"});
}

}  // namespace tg::codegen
