// The heuristic's loop steps: the transpose tile of elementwise kernels, locals, threads and the loop swap
// (heuristic.hpp).
#include <algorithm>
#include <cstdlib>
#include <numeric>
#include <utility>

#include "codegen/heuristic.hpp"
#include "codegen/heuristic_loads.hpp"
#include "codegen/search.hpp"

namespace tg::codegen::heuristic {

namespace {

// The multiple of `of` dividing n nearest 4 (the smaller of two as near), at most 16; 0 if none.
int64_t near4(int64_t n, int64_t of) {
  int64_t k = 0;
  for (int64_t d = of; d <= 16; d += of)
    if (d >= 2 && n % d == 0 && (k == 0 || std::abs(d - 4) < std::abs(k - 4))) k = d;
  return k;
}

// Loads that divide the store's axis s by constants (a 2x2 pool's backward reads at w / 2): s upcast by a
// multiple of the divisors, so each trip's indices fold to constants and the loads are shared. A gated load
// contiguous along s (a padded copy, its border tested per value): s by its divisor nearest 4, so lanes
// share the test and the index math.
void divisor_tile(const Kernel& k, Plan& p, size_t s) {
  int64_t of = 1;
  bool gated = false;
  for (size_t j = 0; j < k.accesses().size(); j++) {
    const Access& a = k.accesses()[j];
    if (a.store) continue;
    gated = gated || (a.gated && k.stride(j, s) == 1);
    for (const UOp* u : a.idx->toposort())
      if ((u->op() == Ops::IDIV || u->op() == Ops::MOD) && u->src(1)->is_const()) {
        std::vector<const UOp*> inside = u->src(0)->toposort();
        if (std::find(inside.begin(), inside.end(), k.range(s)) == inside.end()) continue;
        int64_t d = std::get<int64_t>(*u->src(1)->const_value());
        if (d > 1 && d <= 16) of = std::lcm(of, d);
      }
  }
  if (int64_t n = of > 1 ? near4(p.size[s], of) : gated ? near4(p.size[s], 1) : 0; n > 0)
    p.add(OptOps::UPCAST, s, n);
}

}  // namespace

// An elementwise kernel on a CPU is not upcast along its contiguous axis alone (clang's loop vectorizer does
// better). A transposing copy (the store contiguous along axis s, a load strided along s and contiguous
// along l) gets a 4 x 4 register tile: vector loads along l become vector stores along s.
void transpose_tile(const Kernel& k, Plan& p) {
  if (k.has_reduce() || !k.cpu()) return;
  std::optional<size_t> s, l;
  for (size_t i = 0; i < k.axes().size() && !s; i++)
    if (k.contiguous(i)) s = i;
  if (!s) return;
  for (size_t i = 0; i < k.axes().size() && !l; i++)
    for (size_t j = 0; j < k.accesses().size() && i != *s; j++)
      if (!k.accesses()[j].store && k.stride(j, i) == 1 && k.stride(j, *s) > 1) l = i;
  if (!l) return divisor_tile(k, p, *s);
  for (size_t i : {*l, *s})
    if (int64_t n = near4(p.size[i], 1); n > 0) p.add(OptOps::UPCAST, i, n);
}

// An elementwise kernel on a workgroup device with vector loads and stores (max_vector_width >= 4), however
// small: its innermost contiguous output axis by 4, so each work item stores one float4 (a whole texel where
// the renderer writes an image) and loads its contiguous inputs as vectors.
void vector_stores(const Kernel& k, Plan& p) {
  if (k.has_reduce() || k.cpu() || k.caps().max_vector_width < 4) return;
  for (size_t i = k.axes().size(); i-- > 0;)
    if (k.contiguous(i)) {
      if (p.size[i] > 0 && p.size[i] % 4 == 0) p.add(OptOps::UPCAST, i, 4);
      return;
    }
}

// Workgroups of reduce kernels (work items share the inputs they reuse): up to three output axes become
// local, those some buffer is reused along first, then the inner ones, 2 to 32 work items each and at most
// kMaxLocal in all. Elementwise kernels keep the workgroup size the device picks.
void locals(const Kernel& k, Plan& p) {
  if (!k.has_reduce() || k.cpu()) return;
  std::vector<std::pair<bool, size_t>> cands;  // (reused, axis)
  for (size_t i = 0; i < k.axes().size(); i++) {
    if (k.axes()[i].reduce || p.size[i] <= 1) continue;
    bool reused = false;
    for (size_t j = 0; j < k.accesses().size() && !reused; j++) reused = k.stride(j, i) == 0;
    cands.push_back({reused, i});
  }
  std::sort(cands.begin(), cands.end(), std::greater<>());
  std::vector<std::pair<size_t, int64_t>> picks;
  int64_t total = 1;
  for (size_t c = 0; c < cands.size() && picks.size() < 3; c++)
    for (int64_t n : {32, 16, 8, 4, 3, 2}) {
      size_t i = cands[c].second;
      if ((n == 32 && i != 0) || p.size[i] % n != 0 || total * n > kMaxLocal) continue;
      picks.push_back({i, n}), total *= n;
      break;
    }
  std::sort(picks.begin(), picks.end());
  for (auto [i, n] : picks) {
    p.opts.push_back({OptOps::LOCAL, static_cast<int64_t>(i), n});
    if (opts_apply(k.ast(), p.opts, k.caps()))
      p.size[i] /= n;
    else
      p.opts.pop_back();
  }
}

// Threads take contiguous chunks of the outermost output axis that splits evenly.
void threads(const Kernel& k, Plan& p) {
  int64_t t = k.caps().thread_count;
  if (!k.caps().has_threads || !k.cpu() || t <= 1 || k.work() < kThreadWork) return;
  for (size_t i = 0; i < k.axes().size(); i++)
    if (!k.axes()[i].reduce && p.size[i] >= t && p.size[i] % t == 0) return p.add(OptOps::THREAD, i, t);
}

// A CPU register tile over output axes o (outer) and c (contiguous): with o's loop outside, every trip of it
// streams the inputs reused along o again. Swapped, one strip of them stays in the cache while the other
// input streams, and the reduce's unroll by 4 becomes 8 when the tile leaves registers. Only if a strip
// fits kStripBytes.
void swap_loops(const Kernel& k, Plan& p) {
  if (!k.has_reduce() || !k.cpu() || p.tiled != 2) return;
  if (size_t a = static_cast<size_t>(p.opts[0].axis); !k.contiguous(a) && !lanes_load(k, a)) return;
  size_t c = static_cast<size_t>(p.opts[0].axis), o = static_cast<size_t>(p.opts[1].axis);
  int64_t strip = 0;
  for (size_t j = 0; j < k.accesses().size(); j++) {
    if (k.accesses()[j].store || k.stride(j, o) != 0) continue;
    int64_t parts = 1;  // the slices one trip of c with the other output axes fixed reads
    for (size_t a = 0; a < k.axes().size(); a++)
      if (!k.axes()[a].reduce && a != o && k.stride(j, a) != 0)
        parts *= a == c ? p.size[c] : k.axes()[a].size;
    strip += k.accesses()[j].bytes / std::max<int64_t>(parts, 1);
  }
  if (o >= c || p.size[o] <= 1 || p.size[c] <= 1 || strip > kStripBytes) return;
  p.opts.push_back({OptOps::SWAP, static_cast<int64_t>(o), static_cast<int64_t>(c)});
  for (Opt& u : p.opts)
    if (p.roomy && u.op == OptOps::UNROLL && u.arg == 4 && p.size[static_cast<size_t>(u.axis)] % 2 == 0)
      u.arg = 8, p.size[static_cast<size_t>(u.axis)] /= 2;
}

}  // namespace tg::codegen::heuristic
