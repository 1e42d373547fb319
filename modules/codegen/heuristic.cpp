// The hand-coded optimization choice as named steps (heuristic.hpp). Reduce kernels upcast the output axes
// some input is reused along (a register tile), or take vector lanes along their rows, and unroll the last
// reduce axis; elementwise kernels on a CPU get a transpose tile; every kernel spreads its outermost axis
// that divides over the threads. A device with workgroups groups big reduces with few outputs (GROUPTOP) and
// makes up to three output axes local, as tinygrad does.
#include "codegen/heuristic.hpp"

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <numeric>
#include <tuple>
#include <unordered_map>

#include "codegen/search.hpp"
#include "uop/symbolic.hpp"

namespace tg::codegen {

namespace heuristic {

namespace {

// The largest trip count of a range whose bound is symbolic (0 when even that is unknown).
int64_t largest(const UOpRef& range) {
  ConstValue hi = range->src(0)->vmax();
  const int64_t* v = std::get_if<int64_t>(&hi);
  return v ? std::max<int64_t>(*v, 0) : 0;
}

}  // namespace

Kernel::Kernel(const UOpRef& ast, const sdk::RendererCaps& caps)
    : ast_(ast), caps_(caps), axes_(kernel_axes(ast)) {
  for (const KernelAxis& a : axes_) {
    // a symbolic axis counts at its largest size: decode attention over n cached positions is big work
    // (kept as one scalar loop, it ran at 0.5 GB/s), though the axis itself is never split
    int64_t n = a.size > 0 ? a.size : largest(a.range);
    work_ *= std::max<int64_t>(n, 1), ranges_.push_back(a.range.get());
    if (a.reduce)
      has_reduce_ = true;
    else
      outputs_ *= std::max<int64_t>(n, 1);
  }
  for (const UOp* u : ast->toposort())
    if (u->op() == Ops::INDEX && u->src(0)->op() == Ops::DEFINE_GLOBAL) {
      DType p = u->src(0)->dtype();
      acc_.push_back({u->src(1), false,
                      std::max<int64_t>(p.ptr_size(), 0) * static_cast<int64_t>(p.base().itemsize()),
                      u->src().size() > 2});
    }
  for (const UOp* u : ast->toposort())
    if (u->op() == Ops::STORE && u->src(0)->op() == Ops::INDEX)
      for (Access& a : acc_)
        if (a.idx == u->src(0)->src(1)) a.store = true;
  width_ = std::clamp<int64_t>(caps.max_vector_width, 4, 16);
  strides_.assign(acc_.size(), std::vector<int64_t>(axes_.size(), -2));
}

// idx(axis=1) - idx(axis=0) with every other range at 0, when idx(2) - idx(1) is the same.
int64_t Kernel::stride(size_t j, size_t i) const {
  int64_t& memo = strides_[j][i];
  if (memo != -2) return memo;
  auto at = [&](int64_t v) {
    std::unordered_map<const UOp*, UOpRef> m;
    for (const UOp* x : ranges_)
      m[x] = UOp::const_(dtypes::index, ConstValue{int64_t{x == ranges_[i] ? v : 0}});
    return acc_[j].idx->substitute(m)->simplify();
  };
  UOpRef a = at(0), b = at(1), c = ranges_[i]->src(0)->is_const() ? at(2) : nullptr;
  if (!a->is_const() || !b->is_const() || (c && !c->is_const())) return memo = -1;
  auto iv = [](const UOpRef& u) { return std::get<int64_t>(*u->const_value()); };
  int64_t s = iv(b) - iv(a);
  return memo = c && iv(c) - iv(b) != s ? -1 : s;
}

bool Kernel::contiguous(size_t i) const {
  for (size_t j = 0; j < acc_.size(); j++)
    if (acc_[j].store && stride(j, i) == 1) return true;
  return false;
}

bool Kernel::loads_contiguous(size_t i) const {
  for (size_t j = 0; j < acc_.size(); j++)
    if (int64_t s = acc_[j].store ? 1 : stride(j, i); s != 0 && s != 1) return false;
  return true;
}

std::optional<size_t> Kernel::last_reduce() const {
  for (size_t i = axes_.size(); i-- > 0;)
    if (axes_[i].reduce) return i;
  return std::nullopt;
}

bool Kernel::nested_reduce(size_t axis) const { return inside_other_reduce(ast_, ranges_[axis]); }

Plan::Plan(const Kernel& k) {
  for (const KernelAxis& a : k.axes()) size.push_back(a.size);
}

void Plan::add(OptOps op, size_t axis, int64_t k) {
  opts.push_back({op, static_cast<int64_t>(axis), k});
  size[axis] /= k;
}

int64_t Plan::divisor(size_t axis, int64_t want) const {
  for (int64_t k = want; k >= 2; k /= 2)
    if (size[axis] > 0 && size[axis] % k == 0) return k;
  return 0;
}

// A tensor core the renderer declares takes a multiply-add it fits whole, as in tinygrad. Each warp then
// takes up to 32 tiles, 8 along the innermost output axis and 4 along the next, so every fragment it loads
// feeds 4 or 8 WMMAs, and two warps share a workgroup along each axis where the tiles divide (tinygrad's
// upcasts and local after its TC opt, with BEAM's pick on an H200: 8 x 4 ran 1.6x faster than 4 x 4).
std::optional<std::vector<Opt>> tensor_core(const UOpRef& ast, const sdk::RendererCaps& caps) {
  for (size_t i = 0; i < sdk::tensor_cores(caps).size(); i++) {
    std::vector<Opt> tc{{OptOps::TC, 0, static_cast<int64_t>(i)}};
    if (!opts_apply(ast, tc, caps)) continue;
    std::vector<KernelAxis> axes = kernel_axes(ast);
    for (OptOps op : {OptOps::UPCAST, OptOps::LOCAL})
      for (size_t a = axes.size(); a-- > 0;) {
        if (axes[a].reduce) continue;
        for (int64_t k : op == OptOps::UPCAST ? std::vector<int64_t>{8, 4, 2} : std::vector<int64_t>{2}) {
          tc.push_back({op, static_cast<int64_t>(a), k});
          if (opts_apply(ast, tc, caps)) break;
          tc.pop_back();
        }
      }
    return tc;
  }
  return std::nullopt;
}

// With shared memory, a reduce with few outputs is split over 16 work items of a group, each reducing a
// contiguous chunk (GROUPTOP), as tinygrad does; nothing else then.
std::optional<std::vector<Opt>> group_top(const Kernel& k) {
  if (!k.has_reduce() || k.cpu() || !k.caps().has_shared || k.outputs() > kGroupOutputs) return std::nullopt;
  int tried = 0;
  for (size_t i = 0; i < k.axes().size() && tried < 3; i++) {
    if (!k.axes()[i].reduce) continue;
    tried++;
    if (std::vector<Opt> g{{OptOps::GROUPTOP, static_cast<int64_t>(i), 16}}; opts_apply(k.ast(), g, k.caps()))
      return g;
  }
  return std::nullopt;
}

}  // namespace heuristic

std::vector<Opt> hand_coded_optimizations(const UOpRef& ast, const sdk::RendererCaps& caps) {
  using namespace heuristic;
  if (auto tc = tensor_core(ast, caps)) return *tc;
  Kernel k(ast, caps);
  Plan p(k);
  vector_stores(k, p);
  if (k.work() < kMinWork) return p.opts;
  if (auto g = group_top(k)) return *g;
  register_tile(k, p);
  row_lanes(k, p);
  unroll_reduce(k, p);
  transpose_tile(k, p);
  locals(k, p);
  threads(k, p);
  swap_loops(k, p);
  return p.opts;
}

}  // namespace tg::codegen
