// The heuristic's steps one at a time (codegen/heuristic.hpp): each on a kernel built by hand, with the opts
// derived by hand from the step's rule. test_opts.cpp checks the whole heuristic and runs its choices.
#define BOOST_TEST_MODULE codegen_heuristic
#include <boost/test/included/unit_test.hpp>

#include "codegen/heuristic.hpp"
#include "helpers.hpp"
#include "tg/sdk/cstyle.hpp"

using namespace tgtest;
using namespace tg::codegen::heuristic;

namespace {

// A C target like the CLANG device: 16 float lanes (AVX-512), two threads, no workgroups.
sdk::RendererCaps cpu16() {
  sdk::RendererCaps c = sdk::CDialect::default_caps();
  c.has_threads = true, c.thread_count = 2, c.max_vector_width = 16;
  return c;
}
sdk::RendererCaps cpu8() {
  sdk::RendererCaps c = cpu16();
  c.max_vector_width = 8;
  return c;
}
sdk::RendererCaps gpu() { return runtime::interp::interp_caps(); }  // workgroups and shared memory

// out[i] = sum_r x[i, r] (rows) or sum_r x[r, i] (columns) of an n x n matrix.
UOpRef sum_ast(int64_t n, bool rows) {
  UOpRef i = range(n, 0), r = range(n, 1, AxisType::REDUCE);
  UOpRef at = rows ? i * idx(n) + r : r * idx(n) + i;
  UOpRef v = reduce(load(glob(1, dtypes::float32, n * n), at), {r}, Ops::ADD);
  return UOp::sink({end(store(glob(0, dtypes::float32, n), i, v), {i})});
}

// out[i, j] = x[j, i] of an n x n matrix.
UOpRef transpose_ast(int64_t n) {
  UOpRef i = range(n, 0), j = range(n, 1);
  UOpRef v = load(glob(1, dtypes::float32, n * n), j * idx(n) + i);
  return UOp::sink({end(store(glob(0, dtypes::float32, n * n), i * idx(n) + j, v), {i, j})});
}

std::string run(void (*step)(const Kernel&, Plan&), const Kernel& k, Plan& p) {
  step(k, p);
  return codegen::opts_str(p.opts);
}

}  // namespace

BOOST_AUTO_TEST_CASE(kernel_strides) {
  // matmul c[i, j] = sum_k a[i, k] b[k, j]: accesses in toposort order, their strides along i, j, k.
  Kernel k(matmul_ast(64, 32, 16), cpu16());
  BOOST_TEST(k.work() == 64 * 32 * 16);
  BOOST_TEST(k.outputs() == 64 * 32);
  BOOST_TEST(k.accesses().size() == 3u);
  for (size_t j = 0; j < 3; j++) {
    const Access& a = k.accesses()[j];
    std::vector<int64_t> s{k.stride(j, 0), k.stride(j, 1), k.stride(j, 2)};
    std::vector<int64_t> want = a.store                  ? std::vector<int64_t>{32, 1, 0}
                                : a.bytes == 64 * 16 * 4 ? std::vector<int64_t>{16, 0, 1}
                                                         : std::vector<int64_t>{0, 1, 32};
    BOOST_TEST(s == want, "access " << j);
  }
  BOOST_TEST(k.contiguous(1));
  BOOST_TEST(!k.contiguous(0));
  BOOST_TEST(*k.last_reduce() == 2u);
}

BOOST_AUTO_TEST_CASE(tensor_core_step) {
  // A half matmul of 2 x 2 tiles of 16 x 8 fits CUDA's m16n8k16: the TC opt, then one warp takes all four
  // tiles (2 x 2), too few for two warps along either axis. Without a tensor core: nothing.
  UOpRef i = range(32, 0), j = range(16, 1), r = range(32, 2, AxisType::REDUCE);
  UOpRef a = load(glob(1, dtypes::float16, 32 * 32), i * idx(32) + r)->cast(dtypes::float32);
  UOpRef b = load(glob(2, dtypes::float16, 32 * 16), r * idx(16) + j)->cast(dtypes::float32);
  UOpRef ast = UOp::sink(
      {end(store(glob(0, dtypes::float32, 32 * 16), i * idx(16) + j, reduce(a * b, {r}, Ops::ADD)), {i, j})});
  sdk::RendererCaps tc = gpu();
  tc.tensor_core_count = 1, tc.tensor_cores[0] = runtime::interp::cuda_mma_m16n8k16();
  BOOST_TEST(codegen::opts_str(*tensor_core(ast, tc)) ==
             "[TC(axis=0, arg=0), UPCAST(axis=1, arg=2), UPCAST(axis=0, arg=2)]");
  BOOST_TEST(!tensor_core(ast, gpu()));
}

BOOST_AUTO_TEST_CASE(group_top_step) {
  // 64 outputs each summing 4096 values: 16 work items per output, each a contiguous chunk.
  UOpRef i = range(64, 0), r = range(4096, 1, AxisType::REDUCE);
  UOpRef v = reduce(load(glob(1, dtypes::float32, 64 * 4096), i * idx(4096) + r), {r}, Ops::ADD);
  UOpRef ast = UOp::sink({end(store(glob(0, dtypes::float32, 64), i, v), {i})});
  BOOST_TEST(codegen::opts_str(*group_top(Kernel(ast, gpu()))) == "[GROUPTOP(axis=1, arg=16)]");
  BOOST_TEST(!group_top(Kernel(ast, cpu16())));                   // no workgroups
  BOOST_TEST(!group_top(Kernel(matmul_ast(64, 64, 64), gpu())));  // 4096 outputs: too many
  BOOST_TEST(!group_top(Kernel(transpose_ast(64), gpu())));       // nothing to reduce
}

BOOST_AUTO_TEST_CASE(register_tile_step) {
  // matmul: b is reused along i, a along j; j (contiguous) by two vectors, i by as many rows as keep half
  // the registers as accumulators: 16 vectors of 16 with AVX-512 (32 x 8), 8 of 8 with AVX2 (16 x 4).
  for (auto [caps, want, up] : {std::tuple{cpu16(), "[UPCAST(axis=1, arg=32), UPCAST(axis=0, arg=8)]", 256},
                                std::tuple{cpu8(), "[UPCAST(axis=1, arg=16), UPCAST(axis=0, arg=4)]", 64}}) {
    Kernel k(matmul_ast(64, 64, 64), caps);
    Plan p(k);
    BOOST_TEST(run(register_tile, k, p) == want);
    BOOST_TEST(p.tiled == 2u);
    BOOST_TEST(p.upcast == up);
    BOOST_TEST(p.roomy);
    BOOST_TEST(p.size == (std::vector<int64_t>{64 / (up == 256 ? 8 : 4), 64 / (up == 256 ? 32 : 16), 64}));
  }
  {  // a workgroup device: one vector by 4 rows
    Kernel k(matmul_ast(64, 64, 64), gpu());
    Plan p(k);
    BOOST_TEST(run(register_tile, k, p) == "[UPCAST(axis=1, arg=16), UPCAST(axis=0, arg=4)]");
  }
  {  // 20 rows: 8 wanted, but 10 (the nearest divisor) makes 320 values: 5
    Kernel k(matmul_ast(20, 32, 64), cpu16());
    Plan p(k);
    BOOST_TEST(run(register_tile, k, p) == "[UPCAST(axis=1, arg=32), UPCAST(axis=0, arg=5)]");
  }
  {  // c stored transposed (c[j, i], as a projection written as k^T): i is the store's contiguous axis, but a
     // moves along it by 32 (a gather per vector); b loads whole vectors along j, so j takes the lanes
    UOpRef i = range(64, 0), j = range(64, 1), r = range(32, 2, AxisType::REDUCE);
    UOpRef a = load(glob(1, dtypes::float32, 64 * 32), i * idx(32) + r);
    UOpRef b = load(glob(2, dtypes::float32, 32 * 64), r * idx(64) + j);
    UOpRef ast = UOp::sink({end(
        store(glob(0, dtypes::float32, 64 * 64), j * idx(64) + i, reduce(a * b, {r}, Ops::ADD)), {i, j})});
    for (auto [caps, want] : {std::pair{cpu16(), "[UPCAST(axis=1, arg=32), UPCAST(axis=0, arg=8)]"},
                              std::pair{cpu8(), "[UPCAST(axis=1, arg=16), UPCAST(axis=0, arg=4)]"}}) {
      Kernel k(ast, caps);
      Plan p(k);
      BOOST_TEST(run(register_tile, k, p) == want);
    }
    Kernel k(ast, gpu());  // a workgroup device keeps its lanes on the store
    Plan p(k);
    BOOST_TEST(run(register_tile, k, p) == "[UPCAST(axis=0, arg=16), UPCAST(axis=1, arg=4)]");
  }
  {  // a matvec y[j] = sum_r x[r] w[r, j]: x is reused along j alone. Two vectors of j would leave two
     // dependent chains of multiply-adds; more blocks of j make 8 chains (8 vectors of 16, or of 8 on AVX2)
    UOpRef j = range(1024, 0), r = range(64, 1, AxisType::REDUCE);
    UOpRef x = load(glob(1, dtypes::float32, 64), r);
    UOpRef w = load(glob(2, dtypes::float32, 64 * 1024), r * idx(1024) + j);
    UOpRef ast =
        UOp::sink({end(store(glob(0, dtypes::float32, 1024), j, reduce(x * w, {r}, Ops::ADD)), {j})});
    for (auto [caps, want, up] :
         {std::tuple{cpu16(), "[UPCAST(axis=0, arg=32), UPCAST(axis=0, arg=4)]", 128},
          std::tuple{cpu8(), "[UPCAST(axis=0, arg=16), UPCAST(axis=0, arg=4)]", 64}}) {
      Kernel k(ast, caps);
      Plan p(k);
      BOOST_TEST(run(register_tile, k, p) == want);
      BOOST_TEST(p.upcast == up);
      BOOST_TEST(p.size[0] == 1024 / up);
    }
    Kernel k(ast, gpu());  // a workgroup device: one vector, as before
    Plan p(k);
    BOOST_TEST(run(register_tile, k, p) == "[UPCAST(axis=0, arg=16)]");
  }
  {  // a row sum reuses nothing along its output axis: no tile
    Kernel k(sum_ast(256, true), cpu16());
    Plan p(k);
    BOOST_TEST(run(register_tile, k, p) == "[]");
    BOOST_TEST(p.upcast == 1);
  }
}

BOOST_AUTO_TEST_CASE(row_lanes_step) {
  {  // every load runs along the rows: r takes the 16 lanes, i four accumulator chains
    Kernel k(sum_ast(256, true), cpu16());
    Plan p(k);
    BOOST_TEST(run(row_lanes, k, p) == "[UPCAST(axis=1, arg=16), UPCAST(axis=0, arg=4)]");
    BOOST_TEST(p.along_rows);
  }
  {  // scores of 4 query heads against 3 keys, s[g, n] = sum_h q[g, h] k[n, h]: n (contiguous) has no
     // divisor of 4 (a symbolic position count has none either), so the chains come from g, along which
     // each key row is reused: one load of it for all four heads
    UOpRef g = range(4, 0), n = range(3, 1), h = range(64, 2, AxisType::REDUCE);
    UOpRef q = load(glob(1, dtypes::float32, 4 * 64), g * idx(64) + h);
    UOpRef kk = load(glob(2, dtypes::float32, 3 * 64), n * idx(64) + h);
    UOpRef ast = UOp::sink(
        {end(store(glob(0, dtypes::float32, 12), g * idx(3) + n, reduce(q * kk, {h}, Ops::ADD)), {g, n})});
    Kernel k(ast, cpu16());
    Plan p(k);
    BOOST_TEST(run(row_lanes, k, p) == "[UPCAST(axis=2, arg=16), UPCAST(axis=0, arg=4)]");
    BOOST_TEST(p.along_rows);
  }
  {  // a column sum: loads contiguous along i, so i takes 64 independent chains
    Kernel k(sum_ast(256, false), cpu16());
    Plan p(k);
    BOOST_TEST(run(row_lanes, k, p) == "[UPCAST(axis=0, arg=64)]");
    BOOST_TEST(!p.along_rows);
  }
  {  // not after a register tile, nor with workgroups
    Kernel k(matmul_ast(64, 64, 64), cpu16());
    Plan p(k);
    register_tile(k, p);
    BOOST_TEST(run(row_lanes, k, p) == "[UPCAST(axis=1, arg=32), UPCAST(axis=0, arg=8)]");
    Kernel g(sum_ast(256, true), gpu());
    Plan q(g);
    BOOST_TEST(run(row_lanes, g, q) == "[]");
  }
}

BOOST_AUTO_TEST_CASE(unroll_reduce_step) {
  Kernel k(matmul_ast(64, 64, 64), cpu16());
  Plan p(k);
  BOOST_TEST(run(unroll_reduce, k, p) == "[UNROLL(axis=2, arg=4)]");
  Plan tight(k);  // a tile of more accumulators than the registers keep: by 2
  tight.roomy = false;
  BOOST_TEST(run(unroll_reduce, k, tight) == "[UNROLL(axis=2, arg=2)]");
  Kernel small(matmul_ast(64, 64, 6), cpu16());  // at most 8: whole
  Plan s(small);
  BOOST_TEST(run(unroll_reduce, small, s) == "[UNROLL(axis=2, arg=6)]");
  Plan rows(k);  // lanes along the rows already
  rows.along_rows = true;
  BOOST_TEST(run(unroll_reduce, k, rows) == "[]");
}

BOOST_AUTO_TEST_CASE(transpose_tile_step) {
  {  // the store runs along j, the load along i: a 4 x 4 tile, load's axis first
    Kernel k(transpose_ast(64), cpu16());
    Plan p(k);
    BOOST_TEST(run(transpose_tile, k, p) == "[UPCAST(axis=0, arg=4), UPCAST(axis=1, arg=4)]");
  }
  {  // out[i] = x[i / 2]: i by 4, a multiple of the divisor, so the loads fold to two
    UOpRef i = range(8192, 0);
    UOpRef v = load(glob(1, dtypes::float32, 4096), i / idx(2));
    Kernel k(UOp::sink({end(store(glob(0, dtypes::float32, 8192), i, v), {i})}), cpu16());
    Plan p(k);
    BOOST_TEST(run(transpose_tile, k, p) == "[UPCAST(axis=0, arg=4)]");
  }
  {  // a plain copy: nothing (the C compiler vectorizes the loop); workgroup devices: nothing
    UOpRef i = range(8192, 0);
    Kernel k(UOp::sink({end(store(glob(0, dtypes::float32, 8192), i, load(glob(1, dtypes::float32, 8192), i)),
                            {i})}),
             cpu16());
    Plan p(k);
    BOOST_TEST(run(transpose_tile, k, p) == "[]");
    Kernel g(transpose_ast(64), gpu());
    Plan q(g);
    BOOST_TEST(run(transpose_tile, g, q) == "[]");
  }
}

BOOST_AUTO_TEST_CASE(locals_step) {
  // Both matmul axes reuse a buffer; the inner one first: j by 16 (32 only for axis 0), then i by 8 (16
  // would make 256 work items, over 128).
  Kernel k(matmul_ast(64, 64, 64), gpu());
  Plan p(k);
  BOOST_TEST(run(locals, k, p) == "[LOCAL(axis=0, arg=8), LOCAL(axis=1, arg=16)]");
  BOOST_TEST(p.size == (std::vector<int64_t>{8, 4, 64}));
  Kernel c(matmul_ast(64, 64, 64), cpu16());
  Plan q(c);
  BOOST_TEST(run(locals, c, q) == "[]");
}

BOOST_AUTO_TEST_CASE(threads_step) {
  Kernel k(matmul_ast(64, 64, 64), cpu16());
  Plan p(k);
  BOOST_TEST(run(threads, k, p) == "[THREAD(axis=0, arg=2)]");
  Kernel small(matmul_ast(16, 16, 64), cpu16());  // 16384 trips: under kThreadWork
  Plan s(small);
  BOOST_TEST(run(threads, small, s) == "[]");
  sdk::RendererCaps serial = cpu16();
  serial.has_threads = false;
  Kernel one(matmul_ast(64, 64, 64), serial);
  Plan o(one);
  BOOST_TEST(run(threads, one, o) == "[]");
}

BOOST_AUTO_TEST_CASE(swap_loops_step) {
  // 512^3: a 32-column strip of b (64 KiB) stays cached: SWAP, and k's unroll by 4 becomes 8.
  Kernel k(matmul_ast(512, 512, 512), cpu16());
  Plan p(k);
  register_tile(k, p);
  unroll_reduce(k, p);
  BOOST_TEST(run(swap_loops, k, p) ==
             "[UPCAST(axis=1, arg=32), UPCAST(axis=0, arg=8), UNROLL(axis=2, arg=8), SWAP(axis=0, arg=1)]");
  // the same with lanes moved off the store (c stored transposed): still swapped
  {
    UOpRef i = range(512, 0), j = range(512, 1), r = range(512, 2, AxisType::REDUCE);
    UOpRef a = load(glob(1, dtypes::float32, 512 * 512), i * idx(512) + r);
    UOpRef b = load(glob(2, dtypes::float32, 512 * 512), r * idx(512) + j);
    UOpRef ast = UOp::sink({end(
        store(glob(0, dtypes::float32, 512 * 512), j * idx(512) + i, reduce(a * b, {r}, Ops::ADD)), {i, j})});
    Kernel t(ast, cpu16());
    Plan q(t);
    register_tile(t, q), unroll_reduce(t, q);
    BOOST_TEST(run(swap_loops, t, q) ==
               "[UPCAST(axis=1, arg=32), UPCAST(axis=0, arg=8), UNROLL(axis=2, arg=8), SWAP(axis=0, arg=1)]");
  }
  {  // k = 3072: a strip of 384 KiB, within kStripBytes (512 KiB): swapped
    Kernel t(matmul_ast(64, 64, 3072), cpu16());
    Plan q(t);
    register_tile(t, q), unroll_reduce(t, q);
    BOOST_TEST(run(swap_loops, t, q) ==
               "[UPCAST(axis=1, arg=32), UPCAST(axis=0, arg=8), UNROLL(axis=2, arg=8), SWAP(axis=0, arg=1)]");
  }
  // b of 288 x ... : 64 columns over 32768 rows, a strip of 4 MiB: no swap.
  Kernel big(matmul_ast(288, 64, 32768), cpu16());
  Plan q(big);
  register_tile(big, q);
  unroll_reduce(big, q);
  BOOST_TEST(run(swap_loops, big, q) ==
             "[UPCAST(axis=1, arg=32), UPCAST(axis=0, arg=8), UNROLL(axis=2, arg=4)]");
}
