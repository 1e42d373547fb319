// The hand-coded optimization choice: in reduce kernels, upcast the output axes along which some buffer is
// reused (stride 0), the contiguous one by the vector width (a CPU: a register tile, loops swapped so a
// strip of its reused inputs stays in the cache), and unroll the last reduce axis (a CPU's row sum read along
// its rows: vector lanes along that axis instead); in every kernel, spread the outermost axis that divides
// over the threads. A device with workgroups instead groups big reduces with few outputs (GROUPTOP) and
// makes up to three output axes local (LOCAL), as tinygrad does.
#include <algorithm>
#include <bit>
#include <cstdlib>
#include <numeric>
#include <optional>
#include <unordered_map>

#include "codegen/opts.hpp"
#include "codegen/search.hpp"
#include "uop/symbolic.hpp"

namespace tg {

namespace {

constexpr int64_t kMinWork = 4096;      // smaller kernels stay as they are: opts would not pay for themselves
constexpr int64_t kThreadWork = 65536;  // a kernel spreads over threads from this many loop trips
constexpr int64_t kMaxUpcast = 64;      // outputs (accumulators) per loop trip
constexpr int64_t kMaxCpuUpcast = 256;  // on a CPU: 16 vectors of 16
constexpr int64_t kStripBytes = 256 << 10;  // a strip of the reused inputs up to this size stays in the cache
constexpr int64_t kGroupOutputs = 2048;     // reduces with at most this many outputs are grouped
constexpr int64_t kMaxLocal = 128;          // work items of a workgroup the heuristic makes

// The stride of index expression idx along range r: idx(r=1) - idx(r=0) with every other range at 0; -1 when
// it is not a constant (a variable, or div/mod that make it uneven).
int64_t stride(const UOpRef& idx, const UOp* r, const std::vector<const UOp*>& ranges) {
  auto at = [&](int64_t v) {
    std::unordered_map<const UOp*, UOpRef> m;
    for (const UOp* x : ranges) m[x] = UOp::const_(dtypes::index, ConstValue{int64_t{x == r ? v : 0}});
    return idx->substitute(m)->simplify();
  };
  UOpRef a = at(0), b = at(1), c = r->src(0)->is_const() ? at(2) : nullptr;
  if (!a->is_const() || !b->is_const() || (c && !c->is_const())) return -1;
  auto iv = [](const UOpRef& u) { return std::get<int64_t>(*u->const_value()); };
  int64_t s = iv(b) - iv(a);
  return c && iv(c) - iv(b) != s ? -1 : s;
}

struct Access {
  UOpRef idx;
  bool store = false;
  int64_t bytes = 0;   // of the whole buffer
  bool gated = false;  // a load with a valid condition (a padded view): 0 where it is false
};

}  // namespace

std::vector<Opt> hand_coded_optimizations(const UOpRef& ast, const sdk::RendererCaps& caps) {
  // A tensor core the renderer declares takes a multiply-add it fits whole, as in tinygrad.
  for (size_t i = 0; i < sdk::tensor_cores(caps).size(); i++)
    if (std::vector<Opt> tc{{OptOps::TC, 0, static_cast<int64_t>(i)}}; opts_apply(ast, tc, caps)) return tc;
  std::vector<KernelAxis> axes = kernel_axes(ast);
  int64_t work = 1;
  std::vector<const UOp*> ranges;
  for (const KernelAxis& a : axes) work *= std::max<int64_t>(a.size, 1), ranges.push_back(a.range.get());
  if (work < kMinWork) return {};

  std::vector<Access> acc;
  for (const UOp* u : ast->toposort())
    if (u->op() == Ops::INDEX && u->src(0)->op() == Ops::DEFINE_GLOBAL) {
      DType p = u->src(0)->dtype();
      acc.push_back({u->src(1), false,
                     std::max<int64_t>(p.ptr_size(), 0) * static_cast<int64_t>(p.base().itemsize()),
                     u->src().size() > 2});
    }
  for (const UOp* u : ast->toposort())
    if (u->op() == Ops::STORE && u->src(0)->op() == Ops::INDEX)
      for (Access& a : acc)
        if (a.idx == u->src(0)->src(1)) a.store = true;

  std::vector<int64_t> size;
  for (const KernelAxis& a : axes) size.push_back(a.size);
  bool has_reduce = std::any_of(axes.begin(), axes.end(), [](const KernelAxis& a) { return a.reduce; });
  int64_t width = std::clamp<int64_t>(caps.max_vector_width, 4, 16);
  std::vector<Opt> opts;
  auto amount = [&](size_t i, int64_t want) {  // the largest of want, want/2 .. 2 that divides the axis
    for (int64_t k = want; k >= 2; k /= 2)
      if (size[i] > 0 && size[i] % k == 0) return k;
    return int64_t{0};
  };
  auto contiguous = [&](size_t i) {
    return std::any_of(acc.begin(), acc.end(),
                       [&](const Access& a) { return a.store && stride(a.idx, ranges[i], ranges) == 1; });
  };

  auto loads_contiguous = [&](size_t i) {  // or the same value along i (batchnorm's mean)
    return std::all_of(acc.begin(), acc.end(), [&](const Access& a) {
      int64_t s = a.store ? 1 : stride(a.idx, ranges[i], ranges);
      return s == 0 || s == 1;
    });
  };

  // A device with shared memory: a reduce with few outputs is split over 16 work items of a group, each
  // reducing a contiguous chunk (GROUPTOP), as tinygrad does; nothing else then. (Groups of 256 for a single
  // output measured 5x slower than 16 on PoCL and 1.2x on lavapipe.)
  int64_t outputs = 1;
  for (const KernelAxis& a : axes)
    if (!a.reduce) outputs *= std::max<int64_t>(a.size, 1);
  if (has_reduce && caps.has_local && caps.has_shared && outputs <= kGroupOutputs) {
    int64_t tried = 0;
    for (size_t i = 0; i < axes.size() && tried < 3; i++) {
      if (!axes[i].reduce) continue;
      tried++;
      std::vector<Opt> g{{OptOps::GROUPTOP, static_cast<int64_t>(i), 16}};
      if (opts_apply(ast, g, caps)) return g;
    }
  }

  size_t tiled = 0;    // UPCASTs of reused axes: two make a register tile (contiguous one first)
  bool roomy = false;  // the tile's accumulators leave the registers the budget keeps for operands
  if (has_reduce) {
    // Output axes some input is reused along, fewest moving buffers then smallest strides first. Only an
    // input read inside the reduce counts: one read once per output (batchnorm's mean in its variance)
    // saves nothing when reused, and tiling along it made the variance gather along the batch (4x slower).
    std::vector<bool> streamed;
    for (const Access& a : acc)
      streamed.push_back(!a.store && std::any_of(axes.begin(), axes.end(), [&](const KernelAxis& r) {
        return r.reduce && stride(a.idx, r.range.get(), ranges) != 0;
      }));
    struct Cand {
      int64_t moving, stride_sum;
      size_t axis;
      uint64_t reused;  // bit j: access j does not move along the axis
    };
    std::vector<Cand> cands;
    for (size_t i = 0; i < axes.size(); i++) {
      if (axes[i].reduce || size[i] < 4) continue;
      int64_t moving = 0, sum = 0;
      uint64_t reused = 0;
      bool known = true;
      for (size_t j = 0; j < acc.size(); j++) {
        int64_t s = stride(acc[j].idx, ranges[i], ranges);
        known = known && s >= 0, moving += s != 0, sum += s;
        if (s == 0 && streamed[j] && j < 64) reused |= uint64_t{1} << j;
      }
      if (reused != 0 && known) cands.push_back({moving, sum, i, reused});
    }
    std::sort(cands.begin(), cands.end(), [](const Cand& a, const Cand& b) {
      return std::tuple{a.moving, a.stride_sum, a.axis} < std::tuple{b.moving, b.stride_sum, b.axis};
    });
    // The second pick prefers an axis that reuses a buffer the first does not (conv: x reuses the
    // weights, the output channel the input).
    if (cands.size() > 2)
      std::stable_sort(cands.begin() + 1, cands.end(), [&](const Cand& a, const Cand& b) {
        return (a.reused & ~cands[0].reused) != 0 && (b.reused & ~cands[0].reused) == 0;
      });
    // A CPU (no workgroups) has 16 or 32 vector registers: half of them hold accumulators (16 for
    // AVX-512's 32, 8 for AVX2's 16; taking all 16 of AVX2's spilled the operands and ran at 0.55x), the
    // contiguous axis two vectors wide and the other one as many rows as fit (matmul: 8 x 32 with
    // AVX-512, 4 x 16 with AVX2; conv along a width of 28: 4 x 16), so each loaded vector feeds several
    // multiplies.
    bool cpu = !caps.has_local;
    int64_t wide = cpu ? std::min<int64_t>(2 * width, 32) : width, vectors = 1;
    int64_t budget = width >= 16 ? 16 : 8;  // accumulator vectors
    int64_t upcast = 1;
    // A CPU tile's rows along an axis whose index slides with the last reduce axis' (unrolled: rows along
    // a conv's w share inputs with the window's kw and keep them all live) come instead from an axis that
    // does not slide, when it is short enough to take whole with at most half again the accumulators (6
    // rows of 2 vectors: 12 of AVX2's 16 registers). The CNN's 3x3 conv over 8x8 inputs (6x6 out): all
    // 6 rows of h instead of 3 columns of w, 1.56x faster; its 5x5 conv's dw (kh for kw) 1.02x.
    bool whole_rows = false;
    if (cpu && cands.size() > 1) {
      const UOp* unrolled = nullptr;
      for (size_t i = axes.size(); i-- > 0 && !unrolled;)
        if (axes[i].reduce) unrolled = ranges[i];
      int64_t rows = std::max<int64_t>(4, std::bit_floor(uint64_t(budget / 2)));
      auto slides = [&](size_t ax) {
        return std::any_of(acc.begin(), acc.end(), [&](const Access& a) {
          int64_t s = stride(a.idx, ranges[ax], ranges);
          return !a.store && s > 0 && unrolled && s == stride(a.idx, unrolled, ranges);
        });
      };
      size_t pick = contiguous(cands[1].axis) ? 0 : 1;  // the rows of the two picks
      if (slides(cands[pick].axis))
        for (size_t c = 2; c < cands.size() && !whole_rows; c++) {  // the candidates after the two picks
          size_t ax = cands[c].axis;
          if (contiguous(ax) || size[ax] <= rows || size[ax] > rows + rows / 2 || slides(ax)) continue;
          std::swap(cands[pick], cands[c]), whole_rows = true;
        }
    }
    if (cands.size() > 2) cands.resize(2);
    std::stable_sort(cands.begin(), cands.end(),  // the contiguous axis first: it sets the vector count
                     [&](const Cand& a, const Cand& b) { return contiguous(a.axis) && !contiguous(b.axis); });
    for (size_t c = 0; c < cands.size(); c++) {
      size_t i = cands[c].axis;
      int64_t other = cpu ? std::max<int64_t>(4, std::bit_floor(uint64_t(budget / vectors))) : 4;
      int64_t k = amount(i, contiguous(i) ? wide : other);
      // The rows: the divisor of the axis nearest the rows wanted, up to half again as many (the smaller of
      // two as near). A 5x5 kernel's 25 window positions take 5 (5 x 2 vectors for the first conv's weight
      // gradient ran 1.5x faster than no tile on that axis); a conv's output width of 10 takes 5 and one of
      // 6 takes 3, where the largest power of two, 2, left half the accumulators unused (the CNN's 3x3
      // convs channels last: 1.5-1.7x and 1.25-1.3x faster).
      // Only rows that keep the tile within the upcast bound: with AVX-512 a conv's width of 20 under 32
      // channels (two vectors) wants 8 rows, and its nearest divisor 10 (320 values) dropped the rows
      // altogether (no tile: 2.1x slower than 5 rows).
      int64_t room = (cpu ? kMaxCpuUpcast : kMaxUpcast) / upcast;
      if (!contiguous(i)) {
        if (k > room) k = 0;
        for (int64_t d = 2; d <= std::min(other + other / 2, room); d++)
          if (size[i] % d == 0 && (k == 0 || std::abs(d - other) < std::abs(k - other))) k = d;
      }
      if (whole_rows && !contiguous(i) && size[i] <= room) k = size[i];
      // A contiguous axis whose divisors give less than two vectors (a conv's output width 20 with 8 lanes
      // gets 4, 24 gets 8) is upcast whole when it fits three vectors: 20 = 8 + 8 + 4 lanes. The 5x5 conv
      // dx of the training step (width 24) ran 1.12x faster as a 24 x 4 tile than as 8 x 8.
      if (cpu && contiguous(i) && k < wide && size[i] <= 3 * width) k = size[i];
      if (k > 0 && contiguous(i)) vectors = (k + width - 1) / width;
      if (k == 0 || upcast * k > (cpu ? kMaxCpuUpcast : kMaxUpcast)) continue;
      opts.push_back({OptOps::UPCAST, static_cast<int64_t>(i), k});
      size[i] /= k, upcast *= k, tiled++;
    }
    roomy = upcast <= budget * width;
    // Nothing reused along an output axis (a row sum): on a CPU, still upcast the output axis with the
    // contiguous store so each loop trip runs independent accumulator chains instead of one; up to 64 of
    // them (eight vectors) when every load is contiguous along it too (a split sum's neighbouring partials).
    // An axis up to two vectors long whose divisors give less than a vector is upcast whole: the CNN's 2x2
    // max pools (rows of 10, loads at stride 2) by 10 instead of 2 ran 2-3.5x faster, fused with batchnorm.
    // When every load runs along the last reduce axis instead (a row-major matrix summed along its rows),
    // that axis is upcast by the vector width: each loop trip adds one vector of the row into vector
    // accumulators, combined after the loop, where upcasting rows gathered one value from each (sum(axis=1)
    // of 4096 x 4096 with AVX-512: 16 rows of 4 gathered values 10 GB/s, vectors of 16 along the rows 35
    // GB/s). Four rows keep four accumulator chains going.
    size_t last = axes.size();
    for (size_t i = axes.size(); i-- > 0 && last == axes.size();)
      if (axes[i].reduce) last = i;
    bool along_rows = cpu && upcast == 1 && last < axes.size() && size[last] % width == 0 &&
                      size[last] >= 4 * width && !inside_other_reduce(ast, ranges[last]) &&
                      std::all_of(acc.begin(), acc.end(),
                                  [&](const Access& a) {
                                    int64_t s = stride(a.idx, ranges[last], ranges);
                                    return a.store || s == 0 || s == 1;
                                  }) &&
                      std::any_of(acc.begin(), acc.end(), [&](const Access& a) {
                        return !a.store && stride(a.idx, ranges[last], ranges) == 1;
                      });
    if (along_rows) {
      opts.push_back({OptOps::UPCAST, static_cast<int64_t>(last), width});
      size[last] /= width, upcast = width;
      for (size_t i = 0; i < axes.size(); i++)
        if (!axes[i].reduce && contiguous(i))
          if (int64_t k = amount(i, 4); k > 0) {
            opts.push_back({OptOps::UPCAST, static_cast<int64_t>(i), k});
            size[i] /= k;
            break;
          }
    }
    if (cpu && upcast == 1)
      for (size_t i = axes.size(); i-- > 0;)
        if (!axes[i].reduce && contiguous(i))
          if (int64_t k = amount(i, loads_contiguous(i) ? std::min<int64_t>(8 * width, 64) : width); k > 0) {
            if (k < width && size[i] <= 2 * width) k = size[i];
            opts.push_back({OptOps::UPCAST, static_cast<int64_t>(i), k});
            size[i] /= k;
            break;
          }
    // The last reduce axis: small ones fully, others by 4; by 2 under a CPU tile of more accumulators than
    // the budget, whose operands then still fit the registers (the direct conv dw's 5 x 2 vectors: by 2
    // ran 1.4-1.5x faster than by 4, the first conv's dw 1.04x). On a CPU, one that takes neither passes
    // the unroll to the reduce axis before it: batchnorm's sums over (N, 25 strips of 16) unrolled along N
    // by 4 read four rows at once, 1.3-1.5x faster.
    int64_t unroll = cpu && !roomy ? 2 : 4;
    for (size_t i = axes.size(); i-- > 0 && !along_rows;) {
      if (!axes[i].reduce) continue;
      if (inside_other_reduce(ast, ranges[i])) break;
      if (size[i] > 1 && size[i] <= 8)
        opts.push_back({OptOps::UNROLL, static_cast<int64_t>(i), size[i]});
      else if (amount(i, unroll) == unroll)
        opts.push_back({OptOps::UNROLL, static_cast<int64_t>(i), unroll});
      if (!opts.empty() && opts.back().op == OptOps::UNROLL) {
        size[i] /= opts.back().arg;
        break;
      }
      if (!cpu) break;
    }
  }
  // Elementwise kernels get no UPCAST of their contiguous axis alone: scalar copies side by side measured
  // slower than the plain loop on CLANG (its loop vectorizer turns the strided loop into gathers), and with
  // explicit vectors the innermost contiguous axis upcast by the vector width measured no better. A
  // transposing copy on a CPU (the store contiguous along one output axis, a load strided along it and
  // contiguous along another) gets a 4 x 4 register tile instead: four vector loads along the load's axis
  // become four vector stores along the store's. A direct conv's channels-last output copied to NCHW with
  // its bias, and NCHW copied to channels last, of the CNN's shapes (32 x 20 x 20 .. 64 x 12 x 12): 1.1-1.4x.
  if (!has_reduce && !caps.has_local) {
    std::optional<size_t> s, l;
    for (size_t i = 0; i < axes.size() && !s; i++)
      if (contiguous(i)) s = i;
    for (size_t i = 0; i < axes.size() && s && !l; i++)
      if (i != *s)
        for (const Access& a : acc)
          if (!a.store && stride(a.idx, ranges[i], ranges) == 1 && stride(a.idx, ranges[*s], ranges) > 1)
            l = i;
    // The multiple of `of` dividing axis i nearest 4 (the smaller of two as near), at most 16; 0 if none.
    auto near4 = [&](size_t i, int64_t of) {
      int64_t k = 0;
      for (int64_t d = of; d <= 16; d += of)
        if (d >= 2 && size[i] % d == 0 && (k == 0 || std::abs(d - 4) < std::abs(k - 4))) k = d;
      return k;
    };
    if (s && l) {
      for (size_t i : {*l, *s})
        if (int64_t k = near4(i, 1); k > 0) {
          opts.push_back({OptOps::UPCAST, static_cast<int64_t>(i), k});
          size[i] /= k;
        }
    } else if (s) {
      // A load that divides the store's axis by a constant (a 2x2 pool's backward reads at w / 2): upcast
      // that axis by a multiple of the divisors, so each loop trip's indices fold to constants and the
      // loads are shared instead of one division and gather per value. The CNN's pool backward fused with
      // batchnorm's, 32 x 20 x 20: w by 4 ran 1.3-1.9x faster.
      int64_t of = 1;
      for (const Access& a : acc) {
        if (a.store) continue;
        for (const UOp* u : a.idx->toposort())
          if ((u->op() == Ops::IDIV || u->op() == Ops::MOD) && u->src(1)->is_const()) {
            std::vector<const UOp*> inside = u->src(0)->toposort();
            if (std::find(inside.begin(), inside.end(), ranges[*s]) == inside.end()) continue;
            int64_t d = std::get<int64_t>(*u->src(1)->const_value());
            if (d > 1 && d <= 16) of = std::lcm(of, d);
          }
      }
      // A gated load contiguous along the store's axis (a padded copy, its border tested per value) gets
      // that axis upcast by its divisor nearest 4 as well: lanes share the test and the index math. The
      // CNN's conv dx inputs: 32 x 20 x 20 padded to 28 x 28 by 4 ran 1.3-1.4x faster (by 2 1.14x, by 14
      // 1.32x), 64 x 8 x 8 to 12 x 12 and 64 x 6 x 6 to 10 x 10 (by 5) 3-4x (2.6-3.0 ms -> 0.6-0.9).
      bool gated = std::any_of(acc.begin(), acc.end(), [&](const Access& a) {
        return !a.store && a.gated && stride(a.idx, ranges[*s], ranges) == 1;
      });
      if (int64_t k = of > 1 ? near4(*s, of) : gated ? near4(*s, 1) : 0; k > 0) {
        opts.push_back({OptOps::UPCAST, static_cast<int64_t>(*s), k});
        size[*s] /= k;
      }
    }
  }

  // Workgroups of reduce kernels (work items share the inputs they reuse): up to three output axes become
  // local, those some buffer is reused along (a broadcast) first, then the inner ones, 2 to 32 work items
  // each and at most 128 in all. Elementwise kernels keep the workgroup size the device picks (LOCAL 32
  // measured 2.8x slower than PoCL's own choice on 2^20 values).
  if (caps.has_local && has_reduce) {
    struct Cand {
      bool reused;
      size_t axis;
    };
    std::vector<Cand> cands;
    for (size_t i = 0; i < axes.size(); i++)
      if (!axes[i].reduce && size[i] > 1)
        cands.push_back({std::any_of(acc.begin(), acc.end(),
                                     [&](const Access& a) { return stride(a.idx, ranges[i], ranges) == 0; }),
                         i});
    std::sort(cands.begin(), cands.end(), [](const Cand& a, const Cand& b) {
      return std::pair{a.reused, a.axis} > std::pair{b.reused, b.axis};
    });
    std::vector<std::pair<size_t, int64_t>> locals;
    int64_t total = 1;
    for (const Cand& c : cands) {
      if (locals.size() == 3) break;
      for (int64_t k : {32, 16, 8, 4, 3, 2}) {
        if ((k == 32 && c.axis != 0) || size[c.axis] % k != 0 || total * k > kMaxLocal) continue;
        locals.push_back({c.axis, k});
        total *= k;
        break;
      }
    }
    std::sort(locals.begin(), locals.end());
    for (auto [i, k] : locals) {
      opts.push_back({OptOps::LOCAL, static_cast<int64_t>(i), k});
      if (!opts_apply(ast, opts, caps)) {
        opts.pop_back();
        continue;
      }
      size[i] /= k;
    }
  }

  // Threads take contiguous chunks of the outermost output axis that splits evenly.
  int64_t threads = caps.thread_count;
  if (caps.has_threads && !caps.has_local && threads > 1 && work >= kThreadWork)
    for (size_t i = 0; i < axes.size(); i++)
      if (!axes[i].reduce && size[i] >= threads && size[i] % threads == 0) {
        opts.push_back({OptOps::THREAD, static_cast<int64_t>(i), threads});
        size[i] /= threads;
        break;
      }
  // A register tile over output axes o (outer) and c (contiguous, inner): with o's loop outside, every
  // trip of it streams the buffers reused along o (a matmul's B) again. Swapped, one strip of them (what
  // one trip of c reads, for one value of the other output axes) stays in the L1 cache while the other
  // input streams, and the reduce loop over it is unrolled by 8, not 4. AVX2, swap with 8 against neither:
  // matmul 256^2 and 512^2 1.3x, W4's forward (a conv as a matmul per sample, 900 KiB per sample) 1.07-1.23x;
  // the unroll by 8 alone gave most of it at 256^2, the swap alone lost. Only if a strip fits the per-core
  // cache (a conv's dw with 64 output channels and a reduce over 32768 positions has strips of 2 MiB:
  // swapped, it ran 1.6-1.8x slower than unswapped under BEAM). A tile of more accumulators than the budget
  // keeps its smaller unroll (5 x 2 vectors for the first conv's dw: by 8 ran 0.86-0.92x as fast as by 4).
  if (has_reduce && !caps.has_local && tiled == 2 && contiguous(static_cast<size_t>(opts[0].axis))) {
    size_t c = static_cast<size_t>(opts[0].axis), o = static_cast<size_t>(opts[1].axis);
    int64_t strip = 0;
    for (const Access& a : acc) {
      if (a.store || stride(a.idx, ranges[o], ranges) != 0) continue;
      int64_t parts = 1;  // the slices one trip of c with the other output axes fixed reads
      for (size_t j = 0; j < axes.size(); j++)
        if (!axes[j].reduce && j != o && stride(a.idx, ranges[j], ranges) != 0)
          parts *= j == c ? size[c] : axes[j].size;
      strip += a.bytes / std::max<int64_t>(parts, 1);
    }
    if (o < c && size[o] > 1 && size[c] > 1 && strip <= kStripBytes) {
      opts.push_back({OptOps::SWAP, static_cast<int64_t>(o), static_cast<int64_t>(c)});
      for (Opt& u : opts)
        if (roomy && u.op == OptOps::UNROLL && u.arg == 4 && size[static_cast<size_t>(u.axis)] % 2 == 0)
          u.arg = 8, size[static_cast<size_t>(u.axis)] /= 2;
    }
  }
  return opts;
}

}  // namespace tg
