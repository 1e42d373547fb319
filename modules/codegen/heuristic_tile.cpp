// The heuristic's reduce-kernel steps: the register tile, row lanes and the reduce's unroll (heuristic.hpp).
#include <algorithm>
#include <bit>
#include <cstdlib>
#include <tuple>

#include "codegen/heuristic.hpp"
#include "codegen/heuristic_loads.hpp"

namespace tg::codegen::heuristic {

namespace {

struct Cand {
  int64_t moving, stride_sum;
  size_t axis;
  uint64_t reused;  // bit j: access j does not move along the axis
};

// Output axes some input read inside the reduce is reused along (stride 0), fewest moving buffers then
// smallest strides first; the second preferably reusing a buffer the first does not (conv: x reuses the
// weights, the output channel the input). An input read once per output (batchnorm's mean) does not count.
std::vector<Cand> tile_candidates(const Kernel& k, const Plan& p) {
  const std::vector<Access>& acc = k.accesses();
  std::vector<bool> streamed;
  for (size_t j = 0; j < acc.size(); j++) {
    bool moves = false;
    for (size_t r = 0; r < k.axes().size() && !acc[j].store && !moves; r++)
      moves = k.axes()[r].reduce && k.stride(j, r) != 0;
    streamed.push_back(moves);
  }
  std::vector<Cand> cands;
  for (size_t i = 0; i < k.axes().size(); i++) {
    if (k.axes()[i].reduce || p.size[i] < 4) continue;
    Cand c{0, 0, i, 0};
    bool known = true;
    for (size_t j = 0; j < acc.size(); j++) {
      int64_t s = k.stride(j, i);
      known = known && s >= 0, c.moving += s != 0, c.stride_sum += s;
      if (s == 0 && streamed[j] && j < 64) c.reused |= uint64_t{1} << j;
    }
    if (c.reused != 0 && known) cands.push_back(c);
  }
  std::sort(cands.begin(), cands.end(), [](const Cand& a, const Cand& b) {
    return std::tuple{a.moving, a.stride_sum, a.axis} < std::tuple{b.moving, b.stride_sum, b.axis};
  });
  if (cands.size() > 2)
    std::stable_sort(cands.begin() + 1, cands.end(), [&](const Cand& a, const Cand& b) {
      return (a.reused & ~cands[0].reused) != 0 && (b.reused & ~cands[0].reused) == 0;
    });
  return cands;
}

// On a CPU, rows along an axis whose index slides with the unrolled last reduce axis' (a conv's w with kw:
// unrolled, their inputs all stay live) come instead from an axis that does not slide and is short enough to
// take whole with at most half again the accumulators. Returns whether it swapped one in.
bool prefer_whole_rows(const Kernel& k, const Plan& p, std::vector<Cand>& cands) {
  if (!k.cpu() || cands.size() < 2) return false;
  std::optional<size_t> unrolled = k.last_reduce();
  int64_t rows = std::max<int64_t>(4, std::bit_floor(uint64_t(k.accumulator_vectors() / 2)));
  auto slides = [&](size_t ax) {
    for (size_t j = 0; j < k.accesses().size(); j++)
      if (int64_t s = k.stride(j, ax);
          !k.accesses()[j].store && s > 0 && unrolled && s == k.stride(j, *unrolled))
        return true;
    return false;
  };
  size_t pick = k.contiguous(cands[1].axis) ? 0 : 1;  // the rows of the two picks
  if (!slides(cands[pick].axis)) return false;
  for (size_t c = 2; c < cands.size(); c++) {
    size_t ax = cands[c].axis;
    if (k.contiguous(ax) || p.size[ax] <= rows || p.size[ax] > rows + rows / 2 || slides(ax)) continue;
    std::swap(cands[pick], cands[c]);
    return true;
  }
  return false;
}

// The rows along a non-contiguous axis of size n: its divisor nearest the rows wanted, up to half again as
// many (the smaller of two as near), within the room the upcast bound leaves; 0 when none.
int64_t tile_rows(int64_t n, int64_t rows, int64_t want, int64_t room) {
  if (rows > room) rows = 0;
  for (int64_t d = 2; d <= std::min(want + want / 2, room); d++)
    if (n % d == 0 && (rows == 0 || std::abs(d - want) < std::abs(rows - want))) rows = d;
  return rows;
}

}  // namespace

// Up to two output axes some input is reused along. The contiguous one (first: it sets the vector count) by
// the vector width, or on a CPU by two vectors (up to 32), or whole when its divisors give less than two
// vectors and it fits three; the other by 4, or on a CPU by as many rows as keep half the vector registers
// as accumulators.
void register_tile(const Kernel& k, Plan& p) {
  if (!k.has_reduce()) return;
  std::vector<Cand> cands = tile_candidates(k, p);
  bool whole_rows = prefer_whole_rows(k, p, cands);
  if (cands.size() > 2) cands.resize(2);
  std::stable_sort(cands.begin(), cands.end(), [&](const Cand& a, const Cand& b) {
    return k.contiguous(a.axis) && !k.contiguous(b.axis);
  });
  bool cpu = k.cpu();
  // On a CPU the lanes leave the store's contiguous axis when the streamed loads would be gathered there and
  // the other axis loads them as whole vectors (a projection stored transposed, as the next matmul reads
  // it): a scattered store per output instead of a gather per trip of the reduce.
  bool moved = cpu && cands.size() == 2 && k.contiguous(cands[0].axis) && !lanes_load(k, cands[0].axis) &&
               lanes_load(k, cands[1].axis);
  if (moved) std::swap(cands[0], cands[1]);
  int64_t width = k.width(), wide = cpu ? std::min<int64_t>(2 * width, 32) : width, vectors = 1;
  int64_t budget = k.accumulator_vectors(), bound = cpu ? kMaxCpuUpcast : kMaxUpcast;
  for (const Cand& c : cands) {
    size_t i = c.axis;
    bool along = moved ? i == cands[0].axis : k.contiguous(i);
    int64_t want = cpu ? std::max<int64_t>(4, std::bit_floor(uint64_t(budget / vectors))) : 4;
    int64_t n = p.divisor(i, along ? wide : want), room = bound / p.upcast;
    if (!along) n = tile_rows(p.size[i], n, want, room);
    if (whole_rows && !along && p.size[i] <= room) n = p.size[i];
    if (cpu && along && n < wide && p.size[i] <= 3 * width) n = p.size[i];
    if (n > 0 && along) vectors = (n + width - 1) / width;
    if (n == 0 || p.upcast * n > bound) continue;
    p.add(OptOps::UPCAST, i, n);
    p.upcast *= n, p.tiled++;
  }
  // On a CPU a lone contiguous tile of two vectors leaves the unrolled reduce one dependent chain of
  // multiply-adds per vector: latency-bound at a quarter of the FMA rate. More rows of the same axis (its
  // next blocks of outputs, each a stream of its own) make up to kChains independent chains.
  if (cpu && p.tiled == 1 && cands.size() == 1 && !moved && k.contiguous(cands[0].axis)) {
    int64_t more = p.divisor(cands[0].axis, std::max<int64_t>(kChains / vectors, 1));
    if (more > 1 && p.upcast * more <= bound) p.add(OptOps::UPCAST, cands[0].axis, more), p.upcast *= more;
  }
  p.roomy = p.upcast <= budget * width;
}

// A CPU reduce with nothing reused along an output axis (a row sum). When every load runs along the last
// reduce axis, that axis takes the vector lanes (one vector of the row added per trip) and the contiguous
// output axis 4 accumulator chains; otherwise the contiguous output axis is upcast for independent chains,
// up to 64 when every load is contiguous along it too, whole when it is at most two vectors long.
void row_lanes(const Kernel& k, Plan& p) {
  if (!k.has_reduce() || !k.cpu() || p.upcast != 1) return;
  const std::vector<Access>& acc = k.accesses();
  int64_t width = k.width();
  std::optional<size_t> last = k.last_reduce();
  bool rows = last && p.size[*last] % width == 0 && p.size[*last] >= 4 * width && !k.nested_reduce(*last);
  bool some_load = false;
  for (size_t j = 0; j < acc.size() && rows; j++) {
    int64_t s = k.stride(j, *last);
    rows = acc[j].store || s == 0 || s == 1;
    some_load = some_load || (!acc[j].store && s == 1);
  }
  p.along_rows = rows && some_load;
  if (p.along_rows) {
    p.add(OptOps::UPCAST, *last, width);
    p.upcast = width;
    for (size_t i = 0; i < k.axes().size(); i++)
      if (int64_t n = !k.axes()[i].reduce && k.contiguous(i) ? p.divisor(i, 4) : 0; n > 0)
        return p.add(OptOps::UPCAST, i, n);
    // A contiguous axis of symbolic size (decode attention's positions) cannot be split: the chains come
    // from an output axis a row load is reused along (the query heads sharing a key head), which then
    // loads each row once for all of them.
    for (size_t i = 0; i < k.axes().size(); i++) {
      if (k.axes()[i].reduce || p.size[i] < 4) continue;
      bool reused = false;
      for (size_t j = 0; j < acc.size() && !reused; j++)
        reused = !acc[j].store && k.stride(j, i) == 0 && k.stride(j, *last) == 1;
      if (int64_t n = reused ? p.divisor(i, 4) : 0; n > 0) return p.add(OptOps::UPCAST, i, n);
    }
    return;
  }
  for (size_t i = k.axes().size(); i-- > 0;) {
    if (k.axes()[i].reduce || !k.contiguous(i)) continue;
    if (int64_t n = p.divisor(i, k.loads_contiguous(i) ? std::min<int64_t>(8 * width, 64) : width); n > 0)
      return p.add(OptOps::UPCAST, i, n < width && p.size[i] <= 2 * width ? p.size[i] : n);
  }
}

// The last reduce axis: fully when at most 8, else by 4, by 2 under a CPU tile of more accumulators than
// the budget. On a CPU one that takes neither passes the unroll to the reduce axis before it.
void unroll_reduce(const Kernel& k, Plan& p) {
  if (!k.has_reduce() || p.along_rows) return;
  int64_t want = k.cpu() && !p.roomy ? 2 : 4;
  for (size_t i = k.axes().size(); i-- > 0;) {
    if (!k.axes()[i].reduce) continue;
    if (k.nested_reduce(i)) return;
    int64_t n = p.size[i] > 1 && p.size[i] <= 8 ? p.size[i] : p.divisor(i, want) == want ? want : 0;
    if (n > 0) return p.add(OptOps::UNROLL, i, n);
    if (!k.cpu()) return;
  }
}

}  // namespace tg::codegen::heuristic
