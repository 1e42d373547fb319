// Kernel optimizations: every opt gives the same bytes as no opts (and as a hand-computed reference) on
// INTERP and as clang-compiled C; the heuristic's choices for known shapes; errors that name the opt.
#define BOOST_TEST_MODULE codegen_opts
#include <boost/test/unit_test.hpp>

#include <dlfcn.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "base/env.hpp"
#include "base/error.hpp"
#include "helpers.hpp"
#include "tg/sdk/cstyle.hpp"

using namespace tgtest;
namespace fs = std::filesystem;

namespace {

using Bufs = std::vector<std::vector<std::byte>>;

// A C target with two parallel tasks, like the CLANG device.
sdk::RendererCaps c_caps() {
  sdk::RendererCaps c = sdk::CDialect::default_caps();
  c.has_threads = true, c.thread_count = 2, c.max_vector_width = 16;
  return c;
}

bool has_clang() { return std::system("clang --version > /dev/null 2>&1") == 0; }

// Renders p as C, compiles it with the clang binary and runs every task core_id in [0, global[0]).
void run_c(const codegen::LinearProgram& p, Bufs& bufs) {
  std::string src = sdk::CDialect(c_caps()).render_source(p.name, p.view());
  fs::path dir = fs::temp_directory_path() / fmt::format("tg-opts-{}", getpid());
  fs::create_directories(dir);
  fs::path c = dir / (p.name + ".c"), so = dir / (p.name + ".so");
  std::ofstream(c) << src;
  std::string cmd = fmt::format(
      "clang -std=c11 -O2 -march=native -fPIC -shared -ffp-contract=off -fwrapv -nostdinc -Werror -o {} {}",
      so.string(), c.string());
  BOOST_TEST_REQUIRE(std::system(cmd.c_str()) == 0, "clang failed on:\n" << src);
  void* lib = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  BOOST_TEST_REQUIRE(lib != nullptr, dlerror());
  using Kernel = void (*)(void* const*, const long long*, int);
  auto fn = reinterpret_cast<Kernel>(dlsym(lib, p.name.c_str()));
  BOOST_TEST_REQUIRE(fn != nullptr);
  std::vector<void*> ptrs;
  for (auto& b : bufs) ptrs.push_back(b.data());
  uint32_t tasks = p.launch_dims({}).global[0];
  for (uint32_t t = 0; t < tasks; t++) fn(ptrs.data(), nullptr, static_cast<int>(t));
  dlclose(lib);
  fs::remove_all(dir);
}

codegen::LinearProgram lower_with(const UOpRef& ast, const sdk::RendererCaps& caps,
                                  std::vector<codegen::Opt> opts) {
  return codegen::lower_kernel(ast, caps, {.opts = std::move(opts)});
}

// out = f(inputs) with opts on INTERP (its own caps and CPU-style caps) and as C: the same bytes as expected.
// Opts only a CPU-style renderer takes (UPCAST of a reduce axis) skip INTERP's own workgroup caps.
void check_opts(const UOpRef& ast, const Bufs& inputs, const std::vector<std::byte>& expected,
                const std::vector<codegen::Opt>& opts, bool cpu_only = false) {
  BOOST_TEST_CONTEXT(codegen::opts_str(opts)) {
    for (const sdk::RendererCaps& caps : {runtime::interp::interp_caps(), cpu_caps()}) {
      if (cpu_only && caps.has_local) continue;
      codegen::LinearProgram p = lower_with(ast, caps, opts);
      BOOST_TEST((p.applied_opts == opts));
      Bufs b = inputs;
      run_interp(p, b);
      BOOST_TEST((b[0] == expected), "INTERP (" << caps.dialect << ", threads " << caps.has_threads << ")\n"
                                                << p.str());
    }
    if (!has_clang()) return;
    codegen::LinearProgram p = lower_with(ast, c_caps(), opts);
    Bufs b = inputs;
    run_c(p, b);
    BOOST_TEST((b[0] == expected), "C\n" << sdk::CDialect(c_caps()).render_source(p.name, p.view()));
  }
}

// out[i, j] = x[j, i] * 2 + y[i, j] for an 8 x 32 output (a transposed load).
UOpRef elementwise_ast() {
  UOpRef i = range(8, 0), j = range(32, 1);
  UOpRef x = glob(1, dtypes::float32, 256), y = glob(2, dtypes::float32, 256);
  UOpRef v = load(x, j * idx(8) + i) * UOp::const_(dtypes::float32, 2.0) + load(y, i * idx(32) + j);
  return UOp::sink({end(store(glob(0, dtypes::float32, 256), i * idx(32) + j, v), {i, j})});
}

// out[i] = max_r x[i, r] for 12 rows of 20, and the rows past 9 padded out (masked loads give 0).
UOpRef masked_max_ast() {
  UOpRef i = range(12, 0), r = range(20, 1, AxisType::REDUCE);
  UOpRef valid = i->lt(idx(10));
  UOpRef v = reduce(load(glob(1, dtypes::int32, 200), i * idx(20) + r, valid), {r}, Ops::MAX);
  return UOp::sink({end(store(glob(0, dtypes::int32, 12), i, v), {i})});
}

}  // namespace

BOOST_AUTO_TEST_CASE(elementwise_opts_match_noopt) {
  std::vector<float> x = ints(256, 23), y = ints(256, 17, 5), out(256);
  for (int i = 0; i < 8; i++)
    for (int j = 0; j < 32; j++) out[i * 32 + j] = x[j * 8 + i] * 2.0f + y[i * 32 + j];
  Bufs in{bytes(std::vector<float>(256)), bytes(x), bytes(y)};
  check_opts(elementwise_ast(), in, bytes(out), {});
  check_opts(elementwise_ast(), in, bytes(out), {{codegen::OptOps::UPCAST, 1, 4}});
  check_opts(elementwise_ast(), in, bytes(out),
             {{codegen::OptOps::UPCAST, 1, 16}, {codegen::OptOps::UPCAST, 0, 2}});
  check_opts(elementwise_ast(), in, bytes(out), {{codegen::OptOps::UPCAST, 1, 32}});  // the whole axis
  check_opts(elementwise_ast(), in, bytes(out), {{codegen::OptOps::THREAD, 0, 2}});
  check_opts(elementwise_ast(), in, bytes(out),
             {{codegen::OptOps::UPCAST, 1, 8}, {codegen::OptOps::THREAD, 1, 2}});
  check_opts(elementwise_ast(), in, bytes(out),
             {{codegen::OptOps::THREAD, 0, 8}, {codegen::OptOps::UPCAST, 1, 4}});
}

BOOST_AUTO_TEST_CASE(reduce_opts_match_noopt) {
  std::vector<int32_t> x(200), out(12, 0);
  for (int i = 0; i < 200; i++) x[i] = (i * 37) % 101 - 50;
  for (int i = 0; i < 12; i++) {
    int m = i < 10 ? x[i * 20] : 0;
    for (int r = 0; r < 20; r++) m = std::max(m, i < 10 ? x[i * 20 + r] : 0);
    out[i] = m;
  }
  Bufs in{bytes(std::vector<int32_t>(12)), bytes(x)};
  check_opts(masked_max_ast(), in, bytes(out), {});
  check_opts(masked_max_ast(), in, bytes(out), {{codegen::OptOps::UNROLL, 1, 4}});
  check_opts(masked_max_ast(), in, bytes(out), {{codegen::OptOps::UNROLL, 1, 20}});  // no loop left
  check_opts(masked_max_ast(), in, bytes(out),
             {{codegen::OptOps::UPCAST, 0, 4}, {codegen::OptOps::UNROLL, 1, 5}});
  check_opts(masked_max_ast(), in, bytes(out),
             {{codegen::OptOps::UPCAST, 0, 2},
              {codegen::OptOps::UNROLL, 1, 2},
              {codegen::OptOps::UNROLL, 1, 2},
              {codegen::OptOps::THREAD, 0, 3}});
}

BOOST_AUTO_TEST_CASE(matmul_opts_match_noopt) {
  const int64_t m = 8, n = 32, k = 16;
  std::vector<float> a = ints(m * k, 9), b = ints(k * n, 11, 3);
  Bufs in{bytes(std::vector<float>(m * n)), bytes(a), bytes(b)};
  std::vector<std::byte> ref = bytes(matmul_ref(a, b, m, n, k));
  UOpRef ast = matmul_ast(m, n, k);
  check_opts(ast, in, ref, {});
  check_opts(
      ast, in, ref,
      {{codegen::OptOps::UPCAST, 1, 16}, {codegen::OptOps::UPCAST, 0, 4}, {codegen::OptOps::UNROLL, 2, 4}});
  check_opts(ast, in, ref,
             {{codegen::OptOps::UPCAST, 1, 8},
              {codegen::OptOps::UPCAST, 0, 2},
              {codegen::OptOps::UNROLL, 2, 4},
              {codegen::OptOps::THREAD, 0, 2}});
  check_opts(
      ast, in, ref,
      {{codegen::OptOps::THREAD, 1, 4}, {codegen::OptOps::UNROLL, 2, 16}, {codegen::OptOps::UPCAST, 0, 8}});
  // SWAP only reorders the output loops: j's outer loop outside i's.
  check_opts(ast, in, ref, {{codegen::OptOps::SWAP, 0, 1}});
  check_opts(ast, in, ref,
             {{codegen::OptOps::UPCAST, 1, 8},
              {codegen::OptOps::UPCAST, 0, 2},
              {codegen::OptOps::UNROLL, 2, 4},
              {codegen::OptOps::THREAD, 0, 2},
              {codegen::OptOps::SWAP, 0, 1}});
  // the big-matmul shape of the AVX2 heuristic: 4 x 16 tile, k by 8, swapped
  check_opts(ast, in, ref,
             {{codegen::OptOps::UPCAST, 1, 16},
              {codegen::OptOps::UPCAST, 0, 4},
              {codegen::OptOps::UNROLL, 2, 8},
              {codegen::OptOps::SWAP, 0, 1}});
  codegen::LinearProgram p =
      lower_with(ast, c_caps(), {{codegen::OptOps::UPCAST, 1, 8}, {codegen::OptOps::SWAP, 0, 1}});
  BOOST_TEST(p.name == "r_4_8_8_16");  // j outer (4), i (8), UPCAST j | k
}

BOOST_AUTO_TEST_CASE(non_dividing_axis) {
  // 6 x 10 output, reduce of 7: only divisors apply; 7 unrolls whole or not at all.
  const int64_t m = 6, n = 10, k = 7;
  std::vector<float> a = ints(m * k, 13), b = ints(k * n, 5, 3);
  Bufs in{bytes(std::vector<float>(m * n)), bytes(a), bytes(b)};
  std::vector<std::byte> ref = bytes(matmul_ref(a, b, m, n, k));
  UOpRef ast = matmul_ast(m, n, k);
  check_opts(
      ast, in, ref,
      {{codegen::OptOps::UPCAST, 1, 5}, {codegen::OptOps::UPCAST, 0, 3}, {codegen::OptOps::UNROLL, 2, 7}});
  check_opts(ast, in, ref, {{codegen::OptOps::THREAD, 0, 3}, {codegen::OptOps::UPCAST, 1, 2}});
  BOOST_CHECK_EXCEPTION(
      lower_with(ast, c_caps(), {{codegen::OptOps::UPCAST, 1, 4}}), ValueError, [](const ValueError& e) {
        return std::string(e.what()).find(
                   "UPCAST(axis=1, arg=4): amount 4 does not divide the axis size 10") != std::string::npos;
      });
  // The heuristic never splits an axis that does not divide: here it leaves the kernel alone (too small).
  BOOST_TEST(codegen::hand_coded_optimizations(ast, c_caps()).empty());
}

BOOST_AUTO_TEST_CASE(unrolled_chains_interleave) {
  // A 2 x 16 register tile with k unrolled by 4: two accumulators, each updated by a chain of four
  // multiply-adds per loop trip. The C keeps every step its own statement, in the order first step of each
  // accumulator, then the second of each, ..., so the two chains overlap instead of one waiting on itself.
  const int64_t m = 4, n = 16, k = 8;
  std::vector<codegen::Opt> opts{
      {codegen::OptOps::UPCAST, 1, 16}, {codegen::OptOps::UPCAST, 0, 2}, {codegen::OptOps::UNROLL, 2, 4}};
  std::vector<float> a = ints(m * k, 13), b = ints(k * n, 5, 3);
  check_opts(matmul_ast(m, n, k), {bytes(std::vector<float>(m * n)), bytes(a), bytes(b)},
             bytes(matmul_ref(a, b, m, n, k)), opts);
  codegen::LinearProgram p = lower_with(matmul_ast(m, n, k), c_caps(), opts);
  std::istringstream src(sdk::CDialect(c_caps()).render_source(p.name, p.view()));
  std::vector<bool>
      from_register;  // per multiply-add statement: accumulates onto the register (a chain's start)
  for (std::string line; std::getline(src, line);) {
    size_t at = line.find("tg_fma_");
    if (at == std::string::npos || line.find("static inline") != std::string::npos) continue;
    BOOST_TEST(line.find("tg_fma_", at + 1) == std::string::npos, "nested: " << line);
    from_register.push_back(line.find("acc0", at) != std::string::npos);
  }
  BOOST_TEST_REQUIRE(from_register.size() == 8u);
  std::vector<bool> want{true, true, false, false, false, false, false, false};
  BOOST_TEST(from_register == want, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(invalid_opts_name_the_opt) {
  UOpRef ast = matmul_ast(8, 32, 16);
  auto fails_with = [&](codegen::Opt o, const std::string& what) {
    try {
      lower_with(ast, c_caps(), {o});
    } catch (const ValueError& e) {
      std::string msg = e.what();
      BOOST_TEST(msg.find(o.str()) != std::string::npos, msg);
      BOOST_TEST(msg.find(what) != std::string::npos, msg);
      return;
    }
    BOOST_ERROR("no error for " << o.str());
  };
  fails_with({codegen::OptOps::UPCAST, 3, 4}, "axis out of range (the kernel has 3 axes)");
  fails_with({codegen::OptOps::UPCAST, -1, 4}, "axis out of range");
  fails_with({codegen::OptOps::THREAD, 2, 2}, "THREAD takes an output axis");
  fails_with({codegen::OptOps::UNROLL, 0, 2}, "UNROLL takes a reduce axis");
  fails_with({codegen::OptOps::UNROLL, 2, 3}, "amount 3 does not divide the axis size 16");
  fails_with({codegen::OptOps::UPCAST, 0, 0}, "amount 0 does not divide");
  fails_with({codegen::OptOps::SWAP, 0, 2}, "SWAP takes two output axes");
  fails_with({codegen::OptOps::SWAP, 0, 0}, "the other axis must be a different axis");
  fails_with({codegen::OptOps::SWAP, 1, 5}, "the other axis must be a different axis below 3");
  BOOST_CHECK_EXCEPTION(
      lower_with(ast, c_caps(), {{codegen::OptOps::UPCAST, 0, 8}, {codegen::OptOps::SWAP, 0, 1}}), ValueError,
      [](const ValueError& e) {
        return std::string(e.what()).find("has no loop left") != std::string::npos;
      });
  BOOST_CHECK_THROW(
      lower_with(ast, c_caps(), {{codegen::OptOps::THREAD, 0, 2}, {codegen::OptOps::THREAD, 1, 2}}),
      ValueError);
  sdk::RendererCaps serial = sdk::CDialect::default_caps();
  serial.has_threads = false;
  fails_with({codegen::OptOps::UPCAST, 0, 16}, "amount 16 does not divide the axis size 8");
  BOOST_CHECK_THROW(codegen::lower_kernel(
                        ast, serial, {.opts = std::vector<codegen::Opt>{{codegen::OptOps::THREAD, 0, 2}}}),
                    ValueError);
}

BOOST_AUTO_TEST_CASE(heuristic_matmul_64) {
  // On a CPU: j: a is reused along it and c is contiguous -> two vectors (32); i: b is reused -> 8 rows; k
  // by 8 with j's loop outside i's (a strip of b stays in L1); i over the two threads.
  std::vector<codegen::Opt> want{{codegen::OptOps::UPCAST, 1, 32},
                                 {codegen::OptOps::UPCAST, 0, 8},
                                 {codegen::OptOps::UNROLL, 2, 8},
                                 {codegen::OptOps::THREAD, 0, 2},
                                 {codegen::OptOps::SWAP, 0, 1}};
  UOpRef ast = matmul_ast(64, 64, 64);
  BOOST_TEST(codegen::opts_str(codegen::hand_coded_optimizations(ast, c_caps())) == codegen::opts_str(want));
  codegen::LinearProgram p = codegen::lower_kernel(ast, c_caps());
  BOOST_TEST(codegen::opts_str(p.applied_opts) == codegen::opts_str(want));
  BOOST_TEST(p.name == "r_2_2_4_8_32_8_8");  // THREAD, j, i, UPCAST i, UPCAST j | k, UNROLL k
  BOOST_TEST(p.launch_dims({}).global[0] == 2u);
  {
    // The chosen tile gives the reference's bytes (one accumulator per output, k in order).
    std::vector<float> a = ints(64 * 64, 13), b = ints(64 * 64, 7, 3);
    Bufs in{bytes(std::vector<float>(64 * 64)), bytes(a), bytes(b)};
    check_opts(ast, in, bytes(matmul_ref(a, b, 64, 64, 64)), want);
  }
  {
    // AVX2 (8 lanes, 16 registers): half the registers hold accumulators, two vectors by 4 rows; 8 rows
    // (all 16) spilled the operands.
    sdk::RendererCaps avx2 = c_caps();
    avx2.max_vector_width = 8;
    std::vector<codegen::Opt> tile{{codegen::OptOps::UPCAST, 1, 16},
                                   {codegen::OptOps::UPCAST, 0, 4},
                                   {codegen::OptOps::UNROLL, 2, 8},
                                   {codegen::OptOps::THREAD, 0, 2},
                                   {codegen::OptOps::SWAP, 0, 1}};
    BOOST_TEST(codegen::opts_str(codegen::hand_coded_optimizations(ast, avx2)) == codegen::opts_str(tile));
  }
  {
    // A workgroup device (registers per work item are few) keeps one vector by 4.
    sdk::RendererCaps gpu = c_caps();
    gpu.has_local = true;
    std::vector<codegen::Opt> small{
        {codegen::OptOps::UPCAST, 1, 16}, {codegen::OptOps::UPCAST, 0, 4}, {codegen::OptOps::UNROLL, 2, 4}};
    BOOST_TEST(codegen::opts_str(codegen::hand_coded_optimizations(ast, gpu)) == codegen::opts_str(small));
  }
  {
    env::Scoped noopt(env::NOOPT, 1);
    codegen::LinearProgram q = codegen::lower_kernel(ast, c_caps());
    BOOST_TEST(q.applied_opts.empty());
    BOOST_TEST(q.name == "r_64_64_64");
  }
  // A device without tasks gets no THREAD.
  sdk::RendererCaps serial = c_caps();
  serial.has_threads = false;
  want.erase(want.begin() + 3);
  BOOST_TEST(codegen::opts_str(codegen::hand_coded_optimizations(ast, serial)) == codegen::opts_str(want));
}

BOOST_AUTO_TEST_CASE(heuristic_big_matmul_swaps_loops) {
  // b (reused along i) would stream again once per trip of i's loop; with j's loop outside, a 32-column
  // strip of b stays cached, and k (walking that strip) unrolls by 8.
  std::vector<codegen::Opt> want{{codegen::OptOps::UPCAST, 1, 32},
                                 {codegen::OptOps::UPCAST, 0, 8},
                                 {codegen::OptOps::UNROLL, 2, 8},
                                 {codegen::OptOps::THREAD, 0, 2},
                                 {codegen::OptOps::SWAP, 0, 1}};
  BOOST_TEST(codegen::opts_str(codegen::hand_coded_optimizations(matmul_ast(2048, 2048, 2048), c_caps())) ==
             codegen::opts_str(want));
  BOOST_TEST(codegen::opts_str(codegen::hand_coded_optimizations(matmul_ast(1024, 1024, 1024), c_caps())) ==
             codegen::opts_str(want));
  BOOST_TEST(codegen::opts_str(codegen::hand_coded_optimizations(matmul_ast(512, 512, 512), c_caps())) ==
             codegen::opts_str(want));
  // A conv's dw shape: b is 8 MiB but only 64 columns wide, so a 32-column strip is 4 MiB and would not
  // stay cached either way: no swap, k by 4.
  want.pop_back();
  want[2].arg = 4;
  BOOST_TEST(codegen::opts_str(codegen::hand_coded_optimizations(matmul_ast(288, 64, 32768), c_caps())) ==
             codegen::opts_str(want));
}

BOOST_AUTO_TEST_CASE(heuristic_odd_axis_takes_an_odd_tile) {
  // The first conv's weight gradient per sample: 25 window positions (reused b) by 32 channels, a reduce
  // of 576. AVX2: j two vectors; no power of two divides 25, so i takes 5 rows (10 accumulators, more than
  // the budget of 8: k unrolls by 2); j (2 left) over the threads, so no strip loop is left to swap.
  sdk::RendererCaps avx2 = c_caps();
  avx2.max_vector_width = 8;
  UOpRef ast = matmul_ast(25, 32, 576);
  std::vector<codegen::Opt> want{{codegen::OptOps::UPCAST, 1, 16},
                                 {codegen::OptOps::UPCAST, 0, 5},
                                 {codegen::OptOps::UNROLL, 2, 2},
                                 {codegen::OptOps::THREAD, 1, 2}};
  BOOST_TEST(codegen::opts_str(codegen::hand_coded_optimizations(ast, avx2)) == codegen::opts_str(want));
  std::vector<float> a = ints(25 * 576, 13), b = ints(576 * 32, 7, 3);
  Bufs in{bytes(std::vector<float>(25 * 32)), bytes(a), bytes(b)};
  check_opts(ast, in, bytes(matmul_ref(a, b, 25, 32, 576)), want);
}

BOOST_AUTO_TEST_CASE(heuristic_rows_take_the_nearest_divisor) {
  // AVX2 wants 4 rows under a tile two vectors wide. 10 rows take 5, not the largest power of two (2, half
  // the accumulators unused): 10 accumulators, over the budget of 8, so k unrolls by 2. 6 rows take 3 (2
  // and 6 are as near 4, 3 nearer): 6 accumulators leave registers for operands, so k unrolls by 8 (the
  // strip loop is swapped in both).
  sdk::RendererCaps avx2 = c_caps();
  avx2.max_vector_width = 8;
  for (auto [rows, tile, unroll] : {std::tuple{10, 5, 2}, std::tuple{6, 3, 8}}) {
    UOpRef ast = matmul_ast(rows, 32, 64);
    std::vector<codegen::Opt> got = codegen::hand_coded_optimizations(ast, avx2);
    BOOST_REQUIRE(got.size() >= 3u);
    std::vector<codegen::Opt> head(got.begin(), got.begin() + 3), want{{codegen::OptOps::UPCAST, 1, 16},
                                                                       {codegen::OptOps::UPCAST, 0, tile},
                                                                       {codegen::OptOps::UNROLL, 2, unroll}};
    BOOST_TEST(codegen::opts_str(head) == codegen::opts_str(want));
    std::vector<float> a = ints(rows * 64, 13), b = ints(64 * 32, 7, 3);
    Bufs in{bytes(std::vector<float>(rows * 32)), bytes(a), bytes(b)};
    check_opts(ast, in, bytes(matmul_ref(a, b, rows, 32, 64)), got);
  }
}

BOOST_AUTO_TEST_CASE(heuristic_rows_stay_within_the_upcast_bound) {
  // AVX-512 wants 8 rows under a tile of 32 (two vectors). 20 rows: the nearest divisor, 10, makes 320 values
  // (over the 256 bound), so 5 rows, not no rows at all (the CNN's second conv: 2.1x).
  UOpRef ast = matmul_ast(20, 32, 64);
  std::vector<codegen::Opt> want{
      {codegen::OptOps::UPCAST, 1, 32}, {codegen::OptOps::UPCAST, 0, 5}, {codegen::OptOps::UNROLL, 2, 4}};
  BOOST_TEST(codegen::opts_str(codegen::hand_coded_optimizations(ast, c_caps())) == codegen::opts_str(want));
  std::vector<float> a = ints(20 * 64, 13), b = ints(64 * 32, 7, 3);
  check_opts(ast, {bytes(std::vector<float>(20 * 32)), bytes(a), bytes(b)},
             bytes(matmul_ref(a, b, 20, 32, 64)), want);
}

BOOST_AUTO_TEST_CASE(heuristic_row_sum) {
  // out[i] = sum_r x[i, r] for 256 x 256: every load runs along r, so on a CPU r is upcast by the vector
  // width (a vector of the row added per loop trip) and i by 4 (four accumulator chains); nothing unrolled.
  UOpRef i = range(256, 0), r = range(256, 1, AxisType::REDUCE);
  UOpRef x = glob(1, dtypes::float32, 256 * 256);
  UOpRef ast = UOp::sink(
      {end(store(glob(0, dtypes::float32, 256), i, reduce(load(x, i * idx(256) + r), {r}, Ops::ADD)), {i})});
  std::vector<codegen::Opt> want{
      {codegen::OptOps::UPCAST, 1, 16}, {codegen::OptOps::UPCAST, 0, 4}, {codegen::OptOps::THREAD, 0, 2}};
  BOOST_TEST(codegen::opts_str(codegen::hand_coded_optimizations(ast, c_caps())) == codegen::opts_str(want));
  sdk::RendererCaps gpu = c_caps();
  gpu.has_local = true;
  BOOST_TEST(codegen::opts_str(codegen::hand_coded_optimizations(ast, gpu)) == "[UNROLL(axis=1, arg=4)]");
  // The C adds 16-lane vectors loaded from the row.
  codegen::LinearProgram p = lower_with(ast, c_caps(), want);
  std::string src = sdk::CDialect(c_caps()).render_source(p.name, p.view());
  BOOST_TEST(src.find("(*((float16*)(data1+") != std::string::npos, src);
  // Small integers: every order of the sum gives the same bytes as summing each row in order.
  std::vector<float> xv = ints(256 * 256, 101), out(256, 0.0f);
  for (size_t a = 0; a < 256; a++)
    for (size_t b = 0; b < 256; b++) out[a] += xv[a * 256 + b];
  check_opts(ast, {bytes(std::vector<float>(256)), bytes(xv)}, bytes(out), want, true);
}

BOOST_AUTO_TEST_CASE(reduce_axis_upcast_is_vector_lanes) {
  // UPCAST of a reduce axis on a CPU-style renderer: each lane accumulates its own values, and the lanes are
  // combined after the loop. Sums of small integers and maxima are exact in any order: the same bytes.
  UOpRef i = range(8, 0), r = range(64, 1, AxisType::REDUCE);
  UOpRef x = glob(1, dtypes::float32, 8 * 64);
  UOpRef ast = UOp::sink(
      {end(store(glob(0, dtypes::float32, 8), i, reduce(load(x, i * idx(64) + r), {r}, Ops::ADD)), {i})});
  std::vector<float> xv = ints(8 * 64, 23), out(8, 0.0f);
  for (size_t a = 0; a < 8; a++)
    for (size_t b = 0; b < 64; b++) out[a] += xv[a * 64 + b];
  Bufs in{bytes(std::vector<float>(8)), bytes(xv)};
  check_opts(ast, in, bytes(out), {{codegen::OptOps::UPCAST, 1, 16}}, true);
  check_opts(ast, in, bytes(out), {{codegen::OptOps::UPCAST, 1, 64}}, true);  // no loop left
  check_opts(
      ast, in, bytes(out),
      {{codegen::OptOps::UPCAST, 1, 8}, {codegen::OptOps::UPCAST, 0, 2}, {codegen::OptOps::UNROLL, 1, 2}},
      true);
  check_opts(
      ast, in, bytes(out),
      {{codegen::OptOps::UPCAST, 1, 4}, {codegen::OptOps::UPCAST, 1, 2}, {codegen::OptOps::THREAD, 0, 2}},
      true);
  // a masked MAX over rows of 20 (the padded rows give 0)
  std::vector<int32_t> xm(200), outm(12, 0);
  for (int n = 0; n < 200; n++) xm[n] = (n * 37) % 101 - 50;
  for (int a = 0; a < 12; a++) {
    int m = a < 10 ? xm[a * 20] : 0;
    for (int b = 0; b < 20; b++) m = std::max(m, a < 10 ? xm[a * 20 + b] : 0);
    outm[a] = m;
  }
  Bufs inm{bytes(std::vector<int32_t>(12)), bytes(xm)};
  check_opts(masked_max_ast(), inm, bytes(outm), {{codegen::OptOps::UPCAST, 1, 4}}, true);
  check_opts(masked_max_ast(), inm, bytes(outm),
             {{codegen::OptOps::UPCAST, 1, 5}, {codegen::OptOps::UPCAST, 0, 3}}, true);
  // a matmul's k in lanes next to the register tile
  const int64_t m = 4, n = 16, k = 32;
  std::vector<float> a = ints(m * k, 13), b = ints(k * n, 5, 3);
  check_opts(
      matmul_ast(m, n, k), {bytes(std::vector<float>(m * n)), bytes(a), bytes(b)},
      bytes(matmul_ref(a, b, m, n, k)),
      {{codegen::OptOps::UPCAST, 1, 16}, {codegen::OptOps::UPCAST, 0, 2}, {codegen::OptOps::UPCAST, 2, 4}},
      true);
  // A device with workgroups has no such lanes: the opt names the problem.
  BOOST_CHECK_EXCEPTION(lower_with(ast, runtime::interp::interp_caps(), {{codegen::OptOps::UPCAST, 1, 16}}),
                        ValueError, [](const ValueError& e) {
                          return std::string(e.what()).find(
                                     "UPCAST(axis=1, arg=16): UPCAST takes an output "
                                     "axis") != std::string::npos;
                        });
}

// out[co, y, x] = sum_{ci, ky, kx} in[ci, y+ky, x+kx] * w[co, ci, ky, kx]: 8 x n x n outputs of a 3 x 3
// kernel over 2 input channels of in_w x in_w.
UOpRef conv3x3_ast(int64_t n, int64_t in_w) {
  UOpRef co = range(8, 0), y = range(n, 1), x = range(n, 2);
  UOpRef ci = range(2, 3, AxisType::REDUCE), ky = range(3, 4, AxisType::REDUCE),
         kx = range(3, 5, AxisType::REDUCE);
  UOpRef in = glob(1, dtypes::float32, 2 * in_w * in_w), w = glob(2, dtypes::float32, 8 * 2 * 3 * 3);
  UOpRef v = reduce(load(in, ci * idx(in_w * in_w) + (y + ky) * idx(in_w) + x + kx) *
                        load(w, co * idx(18) + ci * idx(9) + ky * idx(3) + kx),
                    {ci, ky, kx}, Ops::ADD);
  return UOp::sink(
      {end(store(glob(0, dtypes::float32, 8 * n * n), co * idx(n * n) + y * idx(n) + x, v), {co, y, x})});
}

BOOST_AUTO_TEST_CASE(heuristic_conv_width_20) {
  // out[co, y, x] = sum_{ci, ky, kx} in[ci, y+ky, x+kx] * w[co, ci, ky, kx]: 8 x 24 x 24 -> 8 x 20 x 20 by
  // 3 x 3 (ci 2). On 8 lanes x's divisors leave one half vector (4), so x is upcast whole (20 = 8 + 8 + 4),
  // which fills three vectors, and co, along which the input is reused, by the four rows that keep twelve
  // vector accumulators; kx (3) is unrolled. On 16 lanes x (20) fits two vectors, so co gets eight rows. (No
  // THREAD: 57600 loop trips are too few.)
  UOpRef ast = conv3x3_ast(20, 24);
  sdk::RendererCaps avx2 = c_caps();
  avx2.max_vector_width = 8;
  std::vector<codegen::Opt> want{
      {codegen::OptOps::UPCAST, 2, 20}, {codegen::OptOps::UPCAST, 0, 4}, {codegen::OptOps::UNROLL, 5, 3}};
  BOOST_TEST(codegen::opts_str(codegen::hand_coded_optimizations(ast, avx2)) == codegen::opts_str(want));
  std::vector<codegen::Opt> want16{
      {codegen::OptOps::UPCAST, 2, 20}, {codegen::OptOps::UPCAST, 0, 8}, {codegen::OptOps::UNROLL, 5, 3}};
  BOOST_TEST(codegen::opts_str(codegen::hand_coded_optimizations(ast, c_caps())) ==
             codegen::opts_str(want16));
  // The tile gives the reference's bytes: each output sums its 18 products in (ci, ky, kx) order.
  std::vector<float> iv = ints(2 * 24 * 24, 13), wv = ints(8 * 18, 7, 3), out(8 * 400, 0.0f);
  for (int o = 0; o < 8; o++)
    for (int yy = 0; yy < 20; yy++)
      for (int xx = 0; xx < 20; xx++) {
        float acc = 0.0f;
        for (int c = 0; c < 2; c++)
          for (int a = 0; a < 3; a++)
            for (int b = 0; b < 3; b++)
              acc = std::fma(iv[static_cast<size_t>(c * 576 + (yy + a) * 24 + xx + b)],
                             wv[static_cast<size_t>(o * 18 + c * 9 + a * 3 + b)], acc);
        out[static_cast<size_t>(o * 400 + yy * 20 + xx)] = acc;
      }
  check_opts(ast, {bytes(std::vector<float>(8 * 400)), bytes(iv), bytes(wv)}, bytes(out), want);
}

BOOST_AUTO_TEST_CASE(heuristic_conv_width_24) {
  // The same conv with output 8 x 24 x 24 (input 26 wide): x's divisors give one vector on 8 lanes, less
  // than the two a tile wants, so x is upcast whole (three vectors) and co by 4, a 24 x 4 tile that loads 7
  // values per 12 fmas (an 8 x 8 tile loads 9 per 8). On 16 lanes x (24) is two vectors, co gets eight rows.
  // 82944 loop trips: split over the two tasks.
  UOpRef ast = conv3x3_ast(24, 26);
  sdk::RendererCaps avx2 = c_caps();
  avx2.max_vector_width = 8;
  std::vector<codegen::Opt> want{{codegen::OptOps::UPCAST, 2, 24},
                                 {codegen::OptOps::UPCAST, 0, 4},
                                 {codegen::OptOps::UNROLL, 5, 3},
                                 {codegen::OptOps::THREAD, 0, 2}};
  BOOST_TEST(codegen::opts_str(codegen::hand_coded_optimizations(ast, avx2)) == codegen::opts_str(want));
  std::vector<codegen::Opt> want16{{codegen::OptOps::UPCAST, 2, 24},
                                   {codegen::OptOps::UPCAST, 0, 8},
                                   {codegen::OptOps::UNROLL, 5, 3},
                                   {codegen::OptOps::THREAD, 1, 2}};
  BOOST_TEST(codegen::opts_str(codegen::hand_coded_optimizations(ast, c_caps())) ==
             codegen::opts_str(want16));
}

BOOST_AUTO_TEST_CASE(heuristic_strip_sum) {
  // out[c, l] = sum_m x[c, m, l] for 16 x 256 x 64 (a split sum's partials): every load is contiguous along
  // l, so all 64 lanes are upcast (eight vectors of accumulators fed by contiguous loads); m unrolled by 4.
  UOpRef c = range(16, 0), l = range(64, 1), m = range(256, 2, AxisType::REDUCE);
  UOpRef x = glob(1, dtypes::float32, 16 * 256 * 64);
  UOpRef ast = UOp::sink({end(store(glob(0, dtypes::float32, 16 * 64), c * idx(64) + l,
                                    reduce(load(x, c * idx(256 * 64) + m * idx(64) + l), {m}, Ops::ADD)),
                              {c, l})});
  std::vector<codegen::Opt> want{
      {codegen::OptOps::UPCAST, 1, 64}, {codegen::OptOps::UNROLL, 2, 4}, {codegen::OptOps::THREAD, 0, 2}};
  BOOST_TEST(codegen::opts_str(codegen::hand_coded_optimizations(ast, c_caps())) == codegen::opts_str(want));
  // Same bytes as summing each strip lane in order.
  std::vector<float> xv(16 * 256 * 64), out(16 * 64, 0.0f);
  for (size_t n = 0; n < xv.size(); n++) xv[n] = static_cast<float>((n * 7919) % 101) * 0.013f - 0.6f;
  for (size_t a = 0; a < 16; a++)
    for (size_t b = 0; b < 256; b++)
      for (size_t d = 0; d < 64; d++) out[a * 64 + d] += xv[(a * 256 + b) * 64 + d];
  check_opts(ast, {bytes(std::vector<float>(16 * 64)), bytes(xv)}, bytes(out), want);
}

BOOST_AUTO_TEST_CASE(heuristic_strip_sum_with_a_broadcast) {
  // out[c, l] = sum_m (x[c, m, l] - mu[c])^2 for 16 x 256 x 64 (batchnorm's variance): mu is the same along
  // l, so l is still upcast whole, one pass over each cache line of x (by the vector width, 16 lanes of 64
  // took four passes).
  UOpRef c = range(16, 0), l = range(64, 1), m = range(256, 2, AxisType::REDUCE);
  UOpRef x = glob(1, dtypes::float32, 16 * 256 * 64), mu = glob(2, dtypes::float32, 16);
  UOpRef d = load(x, c * idx(256 * 64) + m * idx(64) + l) - load(mu, c);
  UOpRef ast = UOp::sink(
      {end(store(glob(0, dtypes::float32, 16 * 64), c * idx(64) + l, reduce(d * d, {m}, Ops::ADD)), {c, l})});
  std::vector<codegen::Opt> want{
      {codegen::OptOps::UPCAST, 1, 64}, {codegen::OptOps::UNROLL, 2, 4}, {codegen::OptOps::THREAD, 0, 2}};
  BOOST_TEST(codegen::opts_str(codegen::hand_coded_optimizations(ast, c_caps())) == codegen::opts_str(want));
  std::vector<float> xv(16 * 256 * 64), muv(16), out(16 * 64, 0.0f);
  for (size_t n = 0; n < xv.size(); n++) xv[n] = static_cast<float>((n * 7919) % 101) * 0.013f - 0.6f;
  for (size_t n = 0; n < muv.size(); n++) muv[n] = static_cast<float>(n) * 0.0625f - 0.5f;
  for (size_t a = 0; a < 16; a++)
    for (size_t b = 0; b < 256; b++)
      for (size_t e = 0; e < 64; e++) {
        float v = xv[(a * 256 + b) * 64 + e] - muv[a];
        out[a * 64 + e] = std::fma(v, v, out[a * 64 + e]);  // codegen forms a MULACC
      }
  check_opts(ast, {bytes(std::vector<float>(16 * 64)), bytes(xv), bytes(muv)}, bytes(out), want);
}

BOOST_AUTO_TEST_CASE(heuristic_elementwise_1m) {
  const int64_t n = 1 << 20;
  UOpRef i = range(n, 0);
  UOpRef a = glob(1, dtypes::float32, n), b = glob(2, dtypes::float32, n);
  UOpRef ast = UOp::sink({end(store(glob(0, dtypes::float32, n), i, load(a, i) + load(b, i)), {i})});
  // No UPCAST for elementwise kernels (the target's loop vectorizer does better), only threads.
  std::vector<codegen::Opt> want{{codegen::OptOps::THREAD, 0, 2}};
  BOOST_TEST(codegen::opts_str(codegen::hand_coded_optimizations(ast, c_caps())) == codegen::opts_str(want));
  // The same kernel as 1024 x 1024: the outer axis is threaded.
  UOpRef r0 = range(1024, 0), r1 = range(1024, 1);
  UOpRef j = r0 * idx(1024) + r1;
  UOpRef ast2 = UOp::sink({end(store(glob(0, dtypes::float32, n), j, load(a, j) + load(b, j)), {r0, r1})});
  std::vector<codegen::Opt> want2{{codegen::OptOps::THREAD, 0, 2}};
  BOOST_TEST(codegen::opts_str(codegen::hand_coded_optimizations(ast2, c_caps())) ==
             codegen::opts_str(want2));
  // Small kernels are left alone.
  BOOST_TEST(codegen::hand_coded_optimizations(elementwise_ast(), c_caps()).empty());
}

BOOST_AUTO_TEST_CASE(heuristic_transposing_copy_gets_a_tile) {
  // out[n, c, h, w] = x[n, h, w, c] + bias[c] for (4, 32, 6, 20): the store is contiguous along w, x along c.
  // A 4 x 4 tile: c (the load's contiguous axis) by 4, then w by 4; too small for threads.
  UOpRef n = range(4, 0), c = range(32, 1), h = range(6, 2), w = range(20, 3);
  UOpRef x = glob(1, dtypes::float32, 4 * 6 * 20 * 32), bias = glob(2, dtypes::float32, 32);
  UOpRef v = load(x, n * idx(3840) + h * idx(640) + w * idx(32) + c) + load(bias, c);
  UOpRef ast = UOp::sink(
      {end(store(glob(0, dtypes::float32, 3840 * 4), n * idx(3840) + c * idx(120) + h * idx(20) + w, v),
           {n, c, h, w})});
  std::vector<codegen::Opt> want{{codegen::OptOps::UPCAST, 1, 4}, {codegen::OptOps::UPCAST, 3, 4}};
  BOOST_TEST(codegen::opts_str(codegen::hand_coded_optimizations(ast, c_caps())) == codegen::opts_str(want));
  std::vector<float> xv(3840 * 4), bv(32), out(3840 * 4);
  for (size_t i = 0; i < xv.size(); i++) xv[i] = static_cast<float>((i * 7919) % 101) * 0.25f - 12.0f;
  for (size_t i = 0; i < bv.size(); i++) bv[i] = static_cast<float>(i) * 0.5f;
  for (size_t a = 0; a < 4; a++)
    for (size_t b = 0; b < 32; b++)
      for (size_t y = 0; y < 6; y++)
        for (size_t z = 0; z < 20; z++)
          out[a * 3840 + b * 120 + y * 20 + z] = xv[a * 3840 + y * 640 + z * 32 + b] + bv[b];
  check_opts(ast, {bytes(std::vector<float>(out.size())), bytes(xv), bytes(bv)}, bytes(out), want);

  // The other way, out[n, h, w, c] = y[n, c, h, w] for (4, 6, 6, 64): c by 4 (the store's axis) and w by 3,
  // the divisor of 6 nearest 4.
  UOpRef n2 = range(4, 0), h2 = range(6, 1), w2 = range(6, 2), c2 = range(64, 3);
  UOpRef y = glob(1, dtypes::float32, 4 * 64 * 36);
  UOpRef ast2 = UOp::sink(
      {end(store(glob(0, dtypes::float32, 4 * 64 * 36), n2 * idx(2304) + h2 * idx(384) + w2 * idx(64) + c2,
                 load(y, n2 * idx(2304) + c2 * idx(36) + h2 * idx(6) + w2)),
           {n2, h2, w2, c2})});
  std::vector<codegen::Opt> want2{{codegen::OptOps::UPCAST, 2, 3}, {codegen::OptOps::UPCAST, 3, 4}};
  BOOST_TEST(codegen::opts_str(codegen::hand_coded_optimizations(ast2, c_caps())) ==
             codegen::opts_str(want2));
  std::vector<float> yv(4 * 64 * 36), out2(yv.size());
  for (size_t i = 0; i < yv.size(); i++) yv[i] = static_cast<float>(i % 97) - 48.0f;
  for (size_t a = 0; a < 4; a++)
    for (size_t b = 0; b < 64; b++)
      for (size_t p = 0; p < 36; p++) out2[a * 2304 + p * 64 + b] = yv[a * 2304 + b * 36 + p];
  check_opts(ast2, {bytes(std::vector<float>(out2.size())), bytes(yv)}, bytes(out2), want2);

  // A device with workgroups keeps its own choice: no tile; with vector memory access only a float4 of the
  // store's contiguous axis (w, 20 = 5 x 4).
  sdk::RendererCaps gpu = c_caps();
  gpu.has_local = true;
  BOOST_TEST(codegen::opts_str(codegen::hand_coded_optimizations(ast, gpu)) == "[UPCAST(axis=3, arg=4)]");
  gpu.max_vector_width = 1;
  BOOST_TEST(codegen::hand_coded_optimizations(ast, gpu).empty());
}

BOOST_AUTO_TEST_CASE(heuristic_pooled_load_upcasts_by_its_divisor) {
  // out[n, c, h, w] = x[n, c, h, w] * t[n, c, h / 2, w / 2] for (4, 8, 20, 20) (a 2x2 pool's backward): w by
  // 4, the multiple of 2 dividing 20 nearest 4, so the divisions fold and each t value feeds two lanes.
  UOpRef n = range(4, 0), c = range(8, 1), h = range(20, 2), w = range(20, 3);
  UOpRef x = glob(1, dtypes::float32, 4 * 8 * 400), t = glob(2, dtypes::float32, 4 * 8 * 100);
  UOpRef flat = n * idx(3200) + c * idx(400) + h * idx(20) + w;
  UOpRef v = load(x, flat) * load(t, n * idx(800) + c * idx(100) + (h / idx(2)) * idx(10) + w / idx(2));
  UOpRef ast = UOp::sink({end(store(glob(0, dtypes::float32, 4 * 8 * 400), flat, v), {n, c, h, w})});
  std::vector<codegen::Opt> want{{codegen::OptOps::UPCAST, 3, 4}};
  BOOST_TEST(codegen::opts_str(codegen::hand_coded_optimizations(ast, c_caps())) == codegen::opts_str(want));
  std::vector<float> xv(4 * 8 * 400), tv(4 * 8 * 100), out(xv.size());
  for (size_t i = 0; i < xv.size(); i++) xv[i] = static_cast<float>((i * 31) % 17) - 8.0f;
  for (size_t i = 0; i < tv.size(); i++) tv[i] = static_cast<float>(i % 13) * 0.5f;
  for (size_t p = 0; p < 32; p++)
    for (size_t y = 0; y < 20; y++)
      for (size_t z = 0; z < 20; z++)
        out[p * 400 + y * 20 + z] = xv[p * 400 + y * 20 + z] * tv[p * 100 + (y / 2) * 10 + z / 2];
  check_opts(ast, {bytes(std::vector<float>(out.size())), bytes(xv), bytes(tv)}, bytes(out), want);
}

BOOST_AUTO_TEST_CASE(heuristic_padded_copy_upcasts_its_row) {
  // out[n, c, h, w] = x[n, c, h - 2, w - 2] inside the border of (8, 8, 12, 12), 0 on it (x padded by 2): the
  // gated load is contiguous along w, so w is upcast by its divisor nearest 4 and lanes share the test.
  UOpRef n = range(8, 0), c = range(8, 1), h = range(12, 2), w = range(12, 3);
  UOpRef valid = idx(1)
                     ->lt(w)
                     ->alu(Ops::AND, w->lt(idx(10)))
                     ->alu(Ops::AND, idx(1)->lt(h))
                     ->alu(Ops::AND, h->lt(idx(10)));
  UOpRef x = glob(1, dtypes::float32, 8 * 8 * 64);
  UOpRef v = load(x, n * idx(512) + c * idx(64) + (h - idx(2)) * idx(8) + (w - idx(2)), valid);
  UOpRef flat = n * idx(1152) + c * idx(144) + h * idx(12) + w;
  UOpRef ast = UOp::sink({end(store(glob(0, dtypes::float32, 8 * 8 * 144), flat, v), {n, c, h, w})});
  std::vector<codegen::Opt> want{{codegen::OptOps::UPCAST, 3, 4}};
  BOOST_TEST(codegen::opts_str(codegen::hand_coded_optimizations(ast, c_caps())) == codegen::opts_str(want));
  std::vector<float> xv(8 * 8 * 64), out(8 * 8 * 144, 0.0f);
  for (size_t i = 0; i < xv.size(); i++) xv[i] = static_cast<float>((i * 37) % 23) - 11.0f;
  for (size_t p = 0; p < 64; p++)
    for (size_t y = 2; y < 10; y++)
      for (size_t z = 2; z < 10; z++) out[p * 144 + y * 12 + z] = xv[p * 64 + (y - 2) * 8 + (z - 2)];
  check_opts(ast, {bytes(std::vector<float>(out.size())), bytes(xv)}, bytes(out), want);
}

BOOST_AUTO_TEST_CASE(heuristic_short_pooled_row_upcasts_whole) {
  // out[n, c, h, w] = max over a 2x2 window of x (4, 8, 20, 20): rows of 10 outputs, 2 and 5 dividing them.
  // Under a vector (8 lanes) but within two, the row is upcast whole; the 2-wide window axis unrolled.
  UOpRef n = range(4, 0), c = range(8, 1), h = range(10, 2), w = range(10, 3);
  UOpRef kh = range(2, 4, AxisType::REDUCE), kw = range(2, 5, AxisType::REDUCE);
  UOpRef x = glob(1, dtypes::float32, 4 * 8 * 400);
  UOpRef at = n * idx(3200) + c * idx(400) + (h * idx(2) + kh) * idx(20) + w * idx(2) + kw;
  UOpRef v = reduce(load(x, at), {kh, kw}, Ops::MAX);
  UOpRef flat = n * idx(800) + c * idx(100) + h * idx(10) + w;
  UOpRef ast = UOp::sink({end(store(glob(0, dtypes::float32, 4 * 8 * 100), flat, v), {n, c, h, w})});
  std::vector<codegen::Opt> want{{codegen::OptOps::UPCAST, 3, 10}, {codegen::OptOps::UNROLL, 5, 2}};
  BOOST_TEST(codegen::opts_str(codegen::hand_coded_optimizations(ast, c_caps())) == codegen::opts_str(want));
  std::vector<float> xv(4 * 8 * 400), out(4 * 8 * 100);
  for (size_t i = 0; i < xv.size(); i++) xv[i] = static_cast<float>((i * 41) % 29) - 14.0f;
  for (size_t p = 0; p < 32; p++)
    for (size_t y = 0; y < 10; y++)
      for (size_t z = 0; z < 10; z++) {
        const float* r = &xv[p * 400 + 2 * y * 20 + 2 * z];
        out[p * 100 + y * 10 + z] = std::max({r[0], r[1], r[20], r[21]});
      }
  check_opts(ast, {bytes(std::vector<float>(out.size())), bytes(xv)}, bytes(out), want);
}

BOOST_AUTO_TEST_CASE(heuristic_unroll_passes_to_the_reduce_axis_before) {
  // out[c, j] = sum over n, r of x[n, c, 16 r + j] for x (64, 32, 400), as batchnorm's partial sums: the
  // last reduce axis (25) takes no unroll, so n is unrolled by 4 and four rows are read at once.
  UOpRef c = range(32, 0), j = range(16, 1), n = range(64, 2, AxisType::REDUCE),
         r = range(25, 3, AxisType::REDUCE);
  UOpRef x = glob(1, dtypes::float32, 64 * 32 * 400);
  UOpRef v = reduce(load(x, n * idx(12800) + c * idx(400) + r * idx(16) + j), {n, r}, Ops::ADD);
  UOpRef ast = UOp::sink({end(store(glob(0, dtypes::float32, 32 * 16), c * idx(16) + j, v), {c, j})});
  std::vector<codegen::Opt> got = codegen::hand_coded_optimizations(ast, c_caps());
  BOOST_TEST(std::any_of(got.begin(), got.end(),
                         [](const codegen::Opt& o) {
                           return o.op == codegen::OptOps::UNROLL && o.axis == 2 && o.arg == 4;
                         }),
             codegen::opts_str(got));
  std::vector<float> xv(64 * 32 * 400), out(32 * 16, 0.0f);
  for (size_t i = 0; i < xv.size(); i++) xv[i] = static_cast<float>((i * 7) % 11) - 5.0f;  // exact sums
  for (size_t b = 0; b < 64; b++)
    for (size_t ch = 0; ch < 32; ch++)
      for (size_t q = 0; q < 400; q++) out[ch * 16 + q % 16] += xv[b * 12800 + ch * 400 + q];
  check_opts(ast, {bytes(std::vector<float>(out.size())), bytes(xv)}, bytes(out), got);
}

namespace {

// A channels-last 3x3 conv, out[n, h, w, co] = sum over ci, kh, kw of x[n, h + kh, w + kw, ci] *
// k[ci, kh, kw, co], for `batch` inputs of (hw + 2) x (hw + 2) x cin: its AST, inputs (small integers, so
// exact sums) and the expected output.
struct ConvLast {
  UOpRef ast;
  Bufs in;
  std::vector<std::byte> out;
};
ConvLast conv3x3_last(int64_t batch, int64_t hw, int64_t cin, int64_t cout) {
  const int64_t iw = hw + 2, xs = iw * iw * cin, ys = hw * hw * cout;
  UOpRef n = range(batch, 0), h = range(hw, 1), w = range(hw, 2), co = range(cout, 3);
  UOpRef ci = range(cin, 4, AxisType::REDUCE), kh = range(3, 5, AxisType::REDUCE),
         kw = range(3, 6, AxisType::REDUCE);
  UOpRef x = glob(1, dtypes::float32, batch * xs), k = glob(2, dtypes::float32, cin * 9 * cout);
  UOpRef xi = n * idx(xs) + (h + kh) * idx(iw * cin) + (w + kw) * idx(cin) + ci;
  UOpRef ki = ci * idx(9 * cout) + kh * idx(3 * cout) + kw * idx(cout) + co;
  UOpRef v = reduce(load(x, xi) * load(k, ki), {ci, kh, kw}, Ops::ADD);
  UOpRef flat = n * idx(ys) + h * idx(hw * cout) + w * idx(cout) + co;
  UOpRef ast = UOp::sink({end(store(glob(0, dtypes::float32, batch * ys), flat, v), {n, h, w, co})});
  std::vector<float> xv(batch * xs), kv(cin * 9 * cout), out(batch * ys, 0.0f);
  for (size_t i = 0; i < xv.size(); i++) xv[i] = static_cast<float>((i * 5) % 7) - 3.0f;
  for (size_t i = 0; i < kv.size(); i++) kv[i] = static_cast<float>((i * 3) % 5) - 2.0f;
  for (int64_t b = 0; b < batch; b++)
    for (int64_t y = 0; y < hw; y++)
      for (int64_t z = 0; z < hw; z++)
        for (int64_t o = 0; o < cout; o++) {
          float acc = 0;
          for (int64_t c = 0; c < cin; c++)
            for (int64_t dy = 0; dy < 3; dy++)
              for (int64_t dz = 0; dz < 3; dz++)
                acc +=
                    xv[b * xs + ((y + dy) * iw + z + dz) * cin + c] * kv[((c * 3 + dy) * 3 + dz) * cout + o];
          out[b * ys + (y * hw + z) * cout + o] = acc;
        }
  return {ast, {bytes(std::vector<float>(out.size())), bytes(xv), bytes(kv)}, bytes(out)};
}

}  // namespace

BOOST_AUTO_TEST_CASE(heuristic_tile_takes_a_short_axis_whole) {
  // 8x8 inputs to 6x6, 16 -> 64 channels, AVX2: the tile is 2 vectors of co by all 6 rows of h (12
  // accumulators), not by 3 of w, whose inputs slide with the unrolled kw.
  ConvLast c = conv3x3_last(4, 6, 16, 64);
  sdk::RendererCaps avx2 = c_caps();
  avx2.max_vector_width = 8;
  std::vector<codegen::Opt> got = codegen::hand_coded_optimizations(c.ast, avx2);
  BOOST_TEST(std::any_of(got.begin(), got.end(),
                         [](const codegen::Opt& o) {
                           return o.op == codegen::OptOps::UPCAST && o.axis == 1 && o.arg == 6;
                         }),
             codegen::opts_str(got));
  check_opts(c.ast, c.in, c.out, got);
}

BOOST_AUTO_TEST_CASE(heuristic_whole_axis_stays_within_the_upcast_bound) {
  // The same conv with AVX-512, 12x12 inputs to 10x10, 4 -> 32 channels (two vectors): all 10 rows of h
  // would make 320 values (over the 256 bound), so h takes 5, not nothing (2.1x).
  ConvLast c = conv3x3_last(2, 10, 4, 32);
  std::vector<codegen::Opt> got = codegen::hand_coded_optimizations(c.ast, c_caps());
  BOOST_TEST_REQUIRE(got.size() >= 2u);
  BOOST_TEST(codegen::opts_str({got.begin(), got.begin() + 2}) ==
             "[UPCAST(axis=3, arg=32), UPCAST(axis=1, arg=5)]");
  check_opts(c.ast, c.in, c.out, got);
}

BOOST_AUTO_TEST_CASE(nested_reduce) {
  // out[i] = max_k sum_l x[i, k, l] for 4 x 6 x 8: the inner sum depends on k, so k cannot be unrolled.
  UOpRef i = range(4, 0), k = range(6, 1, AxisType::REDUCE), l = range(8, 2, AxisType::REDUCE);
  UOpRef x = glob(1, dtypes::int32, 192);
  UOpRef inner = reduce(load(x, i * idx(48) + k * idx(8) + l), {l}, Ops::ADD);
  UOpRef ast = UOp::sink({end(store(glob(0, dtypes::int32, 4), i, reduce(inner, {k}, Ops::MAX)), {i})});
  std::vector<int32_t> xv(192), out(4);
  for (int n = 0; n < 192; n++) xv[n] = (n * 29) % 31 - 15;
  for (int a = 0; a < 4; a++) {
    int m = INT32_MIN;
    for (int b = 0; b < 6; b++) {
      int s = 0;
      for (int c = 0; c < 8; c++) s += xv[a * 48 + b * 8 + c];
      m = std::max(m, s);
    }
    out[a] = m;
  }
  Bufs in{bytes(std::vector<int32_t>(4)), bytes(xv)};
  check_opts(ast, in, bytes(out), {});
  check_opts(ast, in, bytes(out), {{codegen::OptOps::UNROLL, 2, 4}, {codegen::OptOps::UPCAST, 0, 2}});
  check_opts(
      ast, in, bytes(out),
      {{codegen::OptOps::UPCAST, 0, 4}, {codegen::OptOps::UNROLL, 2, 8}, {codegen::OptOps::THREAD, 0, 1}});
  BOOST_CHECK_EXCEPTION(
      lower_with(ast, c_caps(), {{codegen::OptOps::UNROLL, 1, 2}}), ValueError, [](const ValueError& e) {
        return std::string(e.what()).find("UNROLL(axis=1, arg=2): a reduce nested") != std::string::npos;
      });
}

BOOST_AUTO_TEST_CASE(upcasts_of_a_relayout_copy) {
  // out[p, k, j] = b[k, p * 16 + j] (a matmul's B packed in 16-wide panels) for (8, 32, 16), upcast along
  // axes whose loads step by 16 and 128. The expander once kept the slopes of simplified addresses by node
  // address after the nodes were freed: a new address at a reused one took its slope, and two loads 16
  // apart became one vector load (BEAM dropped such candidates for a different output).
  const int64_t P = 8, K = 32, J = 16;
  UOpRef p = range(P, 0), kk = range(K, 1), j = range(J, 2);
  UOpRef b = glob(1, dtypes::float32, K * P * J);
  UOpRef ast = UOp::sink({end(store(glob(0, dtypes::float32, P * K * J), p * idx(K * J) + kk * idx(J) + j,
                                    load(b, kk * idx(P * J) + p * idx(J) + j)),
                              {p, kk, j})});
  std::vector<float> bv(K * P * J), out(P * K * J);
  for (size_t i = 0; i < bv.size(); i++) bv[i] = static_cast<float>(i);
  for (int64_t a = 0; a < P; a++)
    for (int64_t c = 0; c < K; c++)
      for (int64_t d = 0; d < J; d++) out[(a * K + c) * J + d] = bv[(c * P + a) * J + d];
  Bufs in{bytes(std::vector<float>(out.size())), bytes(bv)};
  const codegen::Opt t{codegen::OptOps::THREAD, 0, 2}, u1{codegen::OptOps::UPCAST, 1, 4},
      u0{codegen::OptOps::UPCAST, 0, 2};
  check_opts(ast, in, bytes(out), {t, u1, u0});
  check_opts(ast, in, bytes(out), {t, u1, u0, {codegen::OptOps::UPCAST, 2, 4}});
  check_opts(ast, in, bytes(out), {t, u1, u0, {codegen::OptOps::UPCAST, 1, 4}});
  check_opts(ast, in, bytes(out), {u1, u0, {codegen::OptOps::UPCAST, 2, 4}});
}
