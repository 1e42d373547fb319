// The TC opt: a kernel whose one reduce is a multiply-add of two operands (a matmul, a batched one, any
// elementwise work after it) runs on a tensor core the renderer declares. Each warp of `threads` lanes
// computes um x un tiles of m x n outputs: an accumulator of m * n / threads values per lane and tile, a loop
// over the reduce axis in steps of k, and per step um A fragments, un B fragments and um * un WMMAs, so each
// fragment a lane loads feeds several WMMAs. lm x ln warps share a workgroup (LOCAL), next to each other.
// Which element of a tile a lane holds is the tensor core's bit layout (sdk::TensorCore), so every load,
// accumulator slot and store index below is the original index with the tile's coordinates put in.
#include <algorithm>
#include <bit>

#include <fmt/format.h>

#include "base/error.hpp"
#include "codegen/opts.hpp"

namespace tg::codegen {

namespace {

using sdk::TensorCore;

UOpRef idx(int64_t v) { return UOp::const_(dtypes::index, ConstValue{v}); }

int64_t const_size(const UOp* r) {
  const ConstValue* v = r->src(0)->const_value();
  const int64_t* i = v ? std::get_if<int64_t>(v) : nullptr;
  return i ? *i : 0;
}

bool depends(const UOpRef& x, const UOp* r) {
  std::vector<const UOp*> t = x->toposort();
  return std::find(t.begin(), t.end(), r) != t.end();
}

int log2(int64_t v) { return std::countr_zero(static_cast<uint64_t>(v)); }

// The operand a MUL source stands for: a value of the tensor core's input dtype, converted to the
// accumulator's (or already of it when the two are the same).
UOpRef operand(const UOpRef& x, DType in, DType acc) {
  if (x->op() == Ops::CAST && x->dtype() == acc && x->src(0)->dtype() == in) return x->src(0);
  if (x->dtype() == in && in == acc) return x;
  return nullptr;
}

// The tile coordinate (row or column, `bits` of it) that element e of a lane holds, as an index expression
// of the lane id.
UOpRef tc_coordinate(const UOpRef& lane, const uint8_t* bits, int nbits, int64_t e) {
  int64_t fixed = 0;
  UOpRef expr;
  for (int j = 0; j < nbits; j++) {
    uint8_t b = bits[j];
    if (b >= TensorCore::kElemBit) {
      if ((e >> (b - TensorCore::kElemBit)) & 1) fixed += int64_t{1} << j;
      continue;
    }
    UOpRef bit = lane / idx(int64_t{1} << b) % idx(2) * idx(int64_t{1} << j);
    expr = expr ? expr + bit : bit;
  }
  return expr ? expr + idx(fixed) : idx(fixed);
}

}  // namespace

IntVec wmma_arg(const TensorCore& tc) {
  IntVec v{tc.m, tc.n, tc.k, tc.threads, tc.in, tc.acc};
  for (const uint8_t* bits : {tc.a_bits, tc.b_bits, tc.c_bits}) v.insert(v.end(), bits, bits + 16);
  return v;
}

TensorCore wmma_core(const IntVec& v) {
  if (v.size() != 6 + 3 * 16)
    throw ValueError("WMMA", fmt::format("a tensor core is 54 values, got {}", v.size()));
  for (int64_t x : v)
    if (x < 0 || x > 255) throw ValueError("WMMA", fmt::format("tensor core value {} is not a byte", x));
  TensorCore tc;
  tc.m = uint8_t(v[0]), tc.n = uint8_t(v[1]), tc.k = uint8_t(v[2]), tc.threads = uint8_t(v[3]);
  tc.in = uint8_t(v[4]), tc.acc = uint8_t(v[5]);
  for (size_t j = 0; j < 16; j++)
    tc.a_bits[j] = uint8_t(v[6 + j]), tc.b_bits[j] = uint8_t(v[22 + j]), tc.c_bits[j] = uint8_t(v[38 + j]);
  return tc;
}

UOpRef apply_tc(const UOpRef& ast, const Opt& o, std::span<const Opt> after, const sdk::RendererCaps& caps) {
  auto fail = [&](const std::string& why) -> UOpRef {
    throw ValueError("opts", fmt::format("{}: {}", o.str(), why));
  };
  std::span<const TensorCore> tcs = sdk::tensor_cores(caps);
  if (tcs.empty()) return fail(fmt::format("the '{}' renderer declares no tensor cores", caps.dialect));
  if (o.axis != 0) return fail("axis must be 0 (the kernel's one multiply-add)");
  if (o.arg < 0 || o.arg >= static_cast<int64_t>(tcs.size()))
    return fail(fmt::format("the '{}' renderer declares {} tensor cores", caps.dialect, tcs.size()));
  const TensorCore& tc = tcs[static_cast<size_t>(o.arg)];
  DType in = DType(static_cast<Scalar>(tc.in)), acc_t = DType(static_cast<Scalar>(tc.acc));
  bool shapes_ok = tc.threads > 0 && std::has_single_bit(unsigned{tc.m}) &&
                   std::has_single_bit(unsigned{tc.n}) && std::has_single_bit(unsigned{tc.k}) &&
                   std::has_single_bit(unsigned{tc.threads}) && tc.m * tc.k % tc.threads == 0 &&
                   tc.k * tc.n % tc.threads == 0 && tc.m * tc.n % tc.threads == 0;
  if (!shapes_ok) return fail("the tensor core's sizes are not powers of two spread evenly over its lanes");
  // Each operand's bits name every lane bit and element bit once: lanes and elements cover the tile.
  auto covers = [&](const uint8_t* bits, int64_t rows, int64_t cols) {
    int lb = log2(tc.threads), eb = log2(rows * cols / tc.threads), nb = log2(rows) + log2(cols);
    std::vector<int> seen(32, 0);
    for (int j = 0; j < nb; j++) {
      int b = bits[j];
      bool lane_bit = b < TensorCore::kElemBit && b < lb;
      bool elem_bit = b >= TensorCore::kElemBit && b - TensorCore::kElemBit < eb;
      if (!lane_bit && !elem_bit) return false;
      seen[lane_bit ? b : 16 + b - TensorCore::kElemBit]++;
    }
    return std::count(seen.begin(), seen.end(), 1) == nb;
  };
  for (auto [bits, name, rows, cols] :
       {std::tuple{tc.a_bits, "a_bits", tc.m, tc.k}, std::tuple{tc.b_bits, "b_bits", tc.k, tc.n},
        std::tuple{tc.c_bits, "c_bits", tc.m, tc.n}})
    if (!covers(bits, rows, cols))
      return fail(fmt::format("the tensor core's {} do not name each lane bit and element bit once", name));

  // The kernel: one STORE under one END, one REDUCE (ADD) over one reduce range of its multiply-add.
  std::vector<const UOp*> topo = ast->toposort(), reds, stores;
  int64_t next_id = 0;
  for (const UOp* u : topo) {
    if (u->op() == Ops::REDUCE) reds.push_back(u);
    if (u->op() == Ops::STORE) stores.push_back(u);
    if (u->op() == Ops::RANGE) next_id = std::max(next_id, u->arg_as<AxisArg>().id + 1);
  }
  if (reds.size() != 1 || reds[0]->arg_as<Ops>() != Ops::ADD || reds[0]->src().size() != 2)
    return fail("the kernel needs exactly one sum over one axis");
  if (stores.size() != 1 || ast->src().size() != 1 || ast->src(0)->op() != Ops::END ||
      ast->src(0)->src(0).get() != stores[0])
    return fail("the kernel needs exactly one store");
  const UOpRef red = reds[0]->ref(), k = red->src(1), end = ast->src(0);
  if (k->op() != Ops::RANGE || k->arg_as<AxisArg>().type != AxisType::REDUCE)
    return fail("the sum's axis is not a reduce axis");
  // The products: of the operands converted (a tensor core's own), or converted after (Tensor::matmul of
  // halves sums float(x * y)): the tensor core then sums the exact products instead, as tinygrad's does.
  UOpRef mul = red->src(0), x, y;
  if (mul->op() == Ops::CAST && mul->dtype() == acc_t && mul->src(0)->op() == Ops::MUL &&
      mul->src(0)->dtype() == in) {
    x = mul->src(0)->src(0), y = mul->src(0)->src(1);
  } else if (mul->op() == Ops::MUL) {
    x = operand(mul->src(0), in, acc_t), y = operand(mul->src(1), in, acc_t);
  }
  if (red->dtype() != acc_t || !x || !y)
    return fail(fmt::format("the sum is not of products of {} values into {}", in.name(), acc_t.name()));

  // m: the output axis only A moves along; n: the one only B does (the innermost of each).
  UOpRef m, n;
  std::vector<KernelAxis> axes = kernel_axes(ast);
  for (const KernelAxis& a : axes) {
    if (a.reduce) continue;
    bool dx = depends(x, a.range.get()), dy = depends(y, a.range.get());
    if (dx && !dy) m = a.range;
    if (dy && !dx) n = a.range;
  }
  if (!m || !n) return fail("no output axis that only one operand moves along");
  int64_t sm = const_size(m.get()), sn = const_size(n.get()), sk = const_size(k.get());
  if (sm % tc.m != 0 || sn % tc.n != 0 || sk % tc.k != 0)
    return fail(fmt::format("the {} x {} x {} product does not divide into {} x {} x {} tiles", sm, sn, sk,
                            tc.m, tc.n, tc.k));

  // The opts after TC: tiles per warp (UPCAST) and warps per workgroup (LOCAL) along the rows (m) or the
  // columns (n).
  int64_t um = 1, un = 1, lm = 1, ln = 1;
  for (const Opt& a : after) {
    auto bad = [&](const std::string& why) { throw ValueError("opts", fmt::format("{}: {}", a.str(), why)); };
    if (a.op != OptOps::UPCAST && a.op != OptOps::LOCAL)
      bad("after TC only UPCAST and LOCAL of the tile's row or column axis apply");
    if (a.axis < 0 || a.axis >= static_cast<int64_t>(axes.size()) ||
        (axes[static_cast<size_t>(a.axis)].range != m && axes[static_cast<size_t>(a.axis)].range != n))
      bad("after TC the axis must be the tile's row or column axis");
    if (a.arg < 2 || !std::has_single_bit(static_cast<uint64_t>(a.arg)))
      bad("the amount must be 2, 4, 8, ...");
    bool rows = axes[static_cast<size_t>(a.axis)].range == m;
    int64_t& f = a.op == OptOps::UPCAST ? (rows ? um : un) : (rows ? lm : ln);
    f *= a.arg;
    if ((rows ? sm / tc.m : sn / tc.n) % ((rows ? um * lm : un * ln)) != 0)
      bad(fmt::format("{} tiles of {} do not divide into {} per workgroup", rows ? sm / tc.m : sn / tc.n,
                      rows ? tc.m : tc.n, rows ? um * lm : un * ln));
  }
  if (um * un > 32) throw ValueError("opts", fmt::format("{} tiles per warp exceed 32", um * un));
  if (int64_t t = tc.threads * lm * ln; caps.max_local_size != 0 && t > int64_t{caps.max_local_size})
    throw ValueError("opts", fmt::format("{} warps of {} exceed the '{}' renderer's {} work items per group",
                                         lm * ln, tc.threads, caps.dialect, caps.max_local_size));

  auto fresh = [&](int64_t size, AxisType t) { return UOp::range(idx(size), next_id++, t); };
  UOpRef mo = fresh(sm / (tc.m * um * lm), AxisType::LOOP), no = fresh(sn / (tc.n * un * ln), AxisType::LOOP);
  // The lane is created last of the local ranges so it is lidx0: the warp is 32 consecutive work items.
  UOpRef wm = lm > 1 ? fresh(lm, AxisType::LOCAL) : idx(0), wn = ln > 1 ? fresh(ln, AxisType::LOCAL) : idx(0);
  UOpRef lane = fresh(tc.threads, AxisType::LOCAL), ko = fresh(sk / tc.k, AxisType::REDUCE);
  // Tile i of a warp along the rows (j along the columns), counted in tiles.
  auto tile_m = [&](int64_t i) { return (mo * idx(lm) + wm) * idx(um) + idx(i); };
  auto tile_n = [&](int64_t j) { return (no * idx(ln) + wn) * idx(un) + idx(j); };
  // Element e's (row, column) in the whole operand: the tile's origin plus its place in the tile.
  auto at = [&](const uint8_t* bits, int64_t e, const UOpRef& tile_r, int64_t rows, const UOpRef& tile_c,
                int64_t cols) {
    return std::pair{tile_r * idx(rows) + tc_coordinate(lane, bits, log2(rows), e),
                     tile_c * idx(cols) + tc_coordinate(lane, bits + log2(rows), log2(cols), e)};
  };
  int64_t ea = tc.m * tc.k / tc.threads, eb = tc.k * tc.n / tc.threads, ec = tc.m * tc.n / tc.threads;
  const int64_t slots = ec * um * un;  // tile (i, j)'s element e is slot (i * un + j) * ec + e

  // The accumulator: ec slots per lane and tile, zero inside the tile's loops, updated once per step of k.
  std::vector<UOpRef> outer;
  for (size_t i = 1; i < end->src().size(); i++)
    if (end->src(i) != m && end->src(i) != n) outer.push_back(end->src(i));
  outer.insert(outer.end(), {mo, no});
  for (const UOpRef& w : {wm, wn})
    if (!w->is_const()) outer.push_back(w);
  outer.push_back(lane);
  DType ptr = acc_t.ptr(AddrSpace::REG, slots);
  UOpRef acc = UOp::make(Ops::DEFINE_REG, ptr, {}, int64_t{0});
  std::vector<UOpRef> deps{acc};
  deps.insert(deps.end(), outer.begin(), outer.end());
  UOpRef zero_at = UOp::make(Ops::AFTER, ptr, deps);
  std::vector<UOpRef> inits;
  for (int64_t e = 0; e < slots; e++)
    inits.push_back(
        UOp::make(Ops::STORE, dtypes::void_,
                  {UOp::make(Ops::INDEX, ptr, {zero_at, idx(e)}), UOp::const_(acc_t, ConstValue{0.0})}));
  std::vector<UOpRef> loop_deps{acc};
  loop_deps.insert(loop_deps.end(), inits.begin(), inits.end());
  loop_deps.push_back(ko);
  UOpRef in_loop = UOp::make(Ops::AFTER, ptr, loop_deps);

  std::vector<UOpRef> a_frag, b_frag, updates;
  for (int64_t i = 0; i < um; i++) {
    std::vector<UOpRef> el;
    for (int64_t e = 0; e < ea; e++) {
      auto [r, c] = at(tc.a_bits, e, tile_m(i), tc.m, ko, tc.k);
      el.push_back(x->substitute({{m.get(), r}, {k.get(), c}}));
    }
    a_frag.push_back(UOp::make(Ops::VECTORIZE, in.vec(static_cast<int>(ea)), el));
  }
  for (int64_t j = 0; j < un; j++) {
    std::vector<UOpRef> el;
    for (int64_t e = 0; e < eb; e++) {
      auto [r, c] = at(tc.b_bits, e, ko, tc.k, tile_n(j), tc.n);
      el.push_back(y->substitute({{k.get(), r}, {n.get(), c}}));
    }
    b_frag.push_back(UOp::make(Ops::VECTORIZE, in.vec(static_cast<int>(eb)), el));
  }
  for (int64_t i = 0; i < um; i++)
    for (int64_t j = 0; j < un; j++) {
      const int64_t base = (i * un + j) * ec;
      std::vector<UOpRef> c_el;
      for (int64_t e = 0; e < ec; e++)
        c_el.push_back(UOp::make(Ops::LOAD, acc_t, {UOp::make(Ops::INDEX, ptr, {in_loop, idx(base + e)})}));
      UOpRef d = UOp::make(Ops::WMMA, acc_t.vec(static_cast<int>(ec)),
                           {a_frag[static_cast<size_t>(i)], b_frag[static_cast<size_t>(j)],
                            UOp::make(Ops::VECTORIZE, acc_t.vec(static_cast<int>(ec)), c_el)},
                           wmma_arg(tc));
      for (int64_t e = 0; e < ec; e++)
        updates.push_back(UOp::make(Ops::STORE, dtypes::void_,
                                    {UOp::make(Ops::INDEX, ptr, {in_loop, idx(base + e)}),
                                     UOp::make(Ops::GEP, acc_t, {d}, IntVec{e})}));
    }
  UOpRef loop = UOp::make(Ops::END, dtypes::void_, {UOp::make(Ops::NOOP, dtypes::void_, updates), ko});
  UOpRef done = UOp::make(Ops::AFTER, ptr, {acc, loop});

  // The store, once per element a lane holds: the sum is that slot, the tile's coordinates put in.
  std::vector<UOpRef> outs;
  for (int64_t i = 0; i < um; i++)
    for (int64_t j = 0; j < un; j++)
      for (int64_t e = 0; e < ec; e++) {
        UOpRef sum =
            UOp::make(Ops::LOAD, acc_t, {UOp::make(Ops::INDEX, ptr, {done, idx((i * un + j) * ec + e)})});
        auto [r, c] = at(tc.c_bits, e, tile_m(i), tc.m, tile_n(j), tc.n);
        UOpRef s = end->src(0)->substitute({{red.get(), sum}});
        outs.push_back(s->substitute({{m.get(), r}, {n.get(), c}}));
      }
  std::vector<UOpRef> end_src{UOp::make(Ops::NOOP, dtypes::void_, outs)};
  end_src.insert(end_src.end(), outer.begin(), outer.end());
  return UOp::sink({UOp::make(Ops::END, dtypes::void_, end_src)});
}

}  // namespace tg::codegen
