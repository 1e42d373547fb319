// The workgroup opts on INTERP (which runs the work items of a group in lock-step, with shared memory and
// barriers): LOCAL, GROUP, GROUPTOP and PADTO give the bytes of no opts and of a hand-computed reference;
// their errors name the opt; the heuristic and the BEAM action space use them on workgroup devices only.
#define BOOST_TEST_MODULE codegen_workgroup_opts
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <climits>

#include "base/error.hpp"
#include "codegen/search.hpp"
#include "helpers.hpp"
#include "tg/sdk/cstyle.hpp"

using namespace tgtest;

namespace {

using Bufs = std::vector<std::vector<std::byte>>;

// Runs ast with opts on INTERP's caps and compares buffer 0 with expected; returns the program.
codegen::LinearProgram check(const UOpRef& ast, const Bufs& inputs, const std::vector<std::byte>& expected,
                             const std::vector<codegen::Opt>& opts) {
  codegen::LinearProgram p = codegen::lower_kernel(ast, runtime::interp::interp_caps(), {.opts = opts});
  BOOST_TEST_CONTEXT(codegen::opts_str(opts)) {
    BOOST_TEST((p.applied_opts == opts));
    Bufs b = inputs;
    run_interp(p, b);
    BOOST_TEST((b[0] == expected), p.str());
  }
  return p;
}

bool has_op(const codegen::LinearProgram& p, Ops op) {
  return std::any_of(p.uops.begin(), p.uops.end(), [&](const UOpRef& u) { return u->op() == op; });
}

// out[i] = x[i] * 3 + y[i] for n values.
UOpRef axpy_ast(int64_t n) {
  UOpRef i = range(n, 0);
  UOpRef x = glob(1, dtypes::float32, n), y = glob(2, dtypes::float32, n);
  UOpRef v = load(x, i) * UOp::const_(dtypes::float32, 3.0) + load(y, i);
  return UOp::sink({end(store(glob(0, dtypes::float32, n), i, v), {i})});
}

// out[i] = op_r x[i, r] for rows x cols int32 (integer sums are exact in any order).
UOpRef rows_ast(int64_t rows, int64_t cols, Ops op) {
  UOpRef i = range(rows, 0), r = range(cols, 1, AxisType::REDUCE);
  UOpRef v = reduce(load(glob(1, dtypes::int32, rows * cols), i * idx(cols) + r), {r}, op);
  return UOp::sink({end(store(glob(0, dtypes::int32, rows), i, v), {i})});
}
std::vector<int32_t> rows_ref(const std::vector<int32_t>& x, int64_t rows, int64_t cols, Ops op) {
  std::vector<int32_t> out(static_cast<size_t>(rows));
  for (int64_t i = 0; i < rows; i++) {
    int32_t acc = op == Ops::ADD ? 0 : INT32_MIN;
    for (int64_t r = 0; r < cols; r++)
      acc = op == Ops::ADD ? acc + x[i * cols + r] : std::max(acc, x[i * cols + r]);
    out[static_cast<size_t>(i)] = acc;
  }
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(local_elementwise) {
  const int64_t n = 256;
  std::vector<float> x = ints(n, 23), y = ints(n, 17, 5), out(n);
  for (int64_t i = 0; i < n; i++) out[i] = x[i] * 3.0f + y[i];
  Bufs in{bytes(std::vector<float>(n)), bytes(x), bytes(y)};
  codegen::LinearProgram p = check(axpy_ast(n), in, bytes(out), {{codegen::OptOps::LOCAL, 0, 16}});
  BOOST_TEST(p.launch_dims({}).global[0] == 16u);
  BOOST_TEST(p.launch_dims({}).local[0] == 16u);
  check(axpy_ast(n), in, bytes(out), {{codegen::OptOps::LOCAL, 0, 256}});  // the whole axis: one workgroup
  check(axpy_ast(n), in, bytes(out), {{codegen::OptOps::UPCAST, 0, 4}, {codegen::OptOps::LOCAL, 0, 8}});
  check(axpy_ast(n), in, bytes(out),
        {{codegen::OptOps::LOCAL, 0, 4}, {codegen::OptOps::LOCAL, 0, 4}, {codegen::OptOps::UPCAST, 0, 2}});
}

BOOST_AUTO_TEST_CASE(local_matmul_two_axes) {
  const int64_t m = 16, n = 32, k = 8;
  std::vector<float> a = ints(m * k, 9), b = ints(k * n, 11, 3);
  Bufs in{bytes(std::vector<float>(m * n)), bytes(a), bytes(b)};
  std::vector<std::byte> ref = bytes(matmul_ref(a, b, m, n, k));
  codegen::LinearProgram p =
      check(matmul_ast(m, n, k), in, ref, {{codegen::OptOps::LOCAL, 0, 4}, {codegen::OptOps::LOCAL, 1, 8}});
  sdk::LaunchDims d = p.launch_dims({});
  BOOST_TEST(d.local[0] == 8u);  // the last local dim is lidx0
  BOOST_TEST(d.local[1] == 4u);
  BOOST_TEST(d.global[0] * d.global[1] == 16u);
  check(matmul_ast(m, n, k), in, ref,
        {{codegen::OptOps::UPCAST, 1, 4},
         {codegen::OptOps::LOCAL, 1, 8},
         {codegen::OptOps::UPCAST, 0, 2},
         {codegen::OptOps::LOCAL, 0, 8},
         {codegen::OptOps::UNROLL, 2, 4}});
}

BOOST_AUTO_TEST_CASE(group_reduces) {
  const int64_t rows = 6, cols = 64;
  std::vector<int32_t> x(rows * cols);
  for (size_t i = 0; i < x.size(); i++) x[i] = static_cast<int32_t>((i * 37) % 101) - 70;
  for (Ops op : {Ops::ADD, Ops::MAX}) {
    Bufs in{bytes(std::vector<int32_t>(rows)), bytes(x)};
    std::vector<std::byte> ref = bytes(rows_ref(x, rows, cols, op));
    UOpRef ast = rows_ast(rows, cols, op);
    check(ast, in, ref, {});
    codegen::LinearProgram p = check(ast, in, ref, {{codegen::OptOps::GROUP, 1, 8}});
    BOOST_TEST(has_op(p, Ops::DEFINE_LOCAL));
    BOOST_TEST(has_op(p, Ops::BARRIER));
    BOOST_TEST(p.launch_dims({}).local[0] == 8u);
    check(ast, in, ref, {{codegen::OptOps::GROUPTOP, 1, 16}});
    check(ast, in, ref, {{codegen::OptOps::GROUP, 1, 64}});  // every value its own work item
    check(ast, in, ref,
          {{codegen::OptOps::GROUPTOP, 1, 4},
           {codegen::OptOps::UNROLL, 1, 4},
           {codegen::OptOps::UPCAST, 0, 2}});
    check(
        ast, in, ref,
        {{codegen::OptOps::LOCAL, 0, 3}, {codegen::OptOps::GROUP, 1, 4}, {codegen::OptOps::GROUPTOP, 1, 2}});
    check(ast, in, ref,
          {{codegen::OptOps::UPCAST, 0, 3}, {codegen::OptOps::GROUP, 1, 8}, {codegen::OptOps::UNROLL, 1, 2}});
  }
}

BOOST_AUTO_TEST_CASE(group_full_sum) {
  // A sum of 4096 values to one: 256 work items of one workgroup, a chunk of 16 each.
  const int64_t n = 4096;
  UOpRef r = range(n, 0, AxisType::REDUCE);
  UOpRef v = reduce(load(glob(1, dtypes::int32, n), r), {r}, Ops::ADD);
  UOpRef ast = UOp::sink({store(glob(0, dtypes::int32, 1), idx(0), v)});
  std::vector<int32_t> x(n);
  int32_t total = 0;
  for (int64_t i = 0; i < n; i++) total += (x[i] = static_cast<int32_t>(i % 13) - 5);
  Bufs in{bytes(std::vector<int32_t>(1)), bytes(x)};
  check(ast, in, bytes(std::vector<int32_t>{total}), {{codegen::OptOps::GROUPTOP, 0, 256}});
  check(ast, in, bytes(std::vector<int32_t>{total}),
        {{codegen::OptOps::GROUPTOP, 0, 16}, {codegen::OptOps::UNROLL, 0, 4}});
}

BOOST_AUTO_TEST_CASE(group_matmul) {
  const int64_t m = 16, n = 32, k = 64;
  std::vector<float> a = ints(m * k, 9), b = ints(k * n, 11, 3);
  Bufs in{bytes(std::vector<float>(m * n)), bytes(a), bytes(b)};
  std::vector<std::byte> ref = bytes(matmul_ref(a, b, m, n, k));  // small ints: exact in any order
  check(matmul_ast(m, n, k), in, ref, {{codegen::OptOps::GROUP, 2, 4}});
  check(matmul_ast(m, n, k), in, ref,
        {{codegen::OptOps::LOCAL, 1, 8},
         {codegen::OptOps::GROUP, 2, 4},
         {codegen::OptOps::UPCAST, 0, 4},
         {codegen::OptOps::UPCAST, 1, 2},
         {codegen::OptOps::UNROLL, 2, 4}});
  check(matmul_ast(m, n, k), in, ref, {{codegen::OptOps::GROUPTOP, 2, 8}, {codegen::OptOps::LOCAL, 0, 2}});
}

BOOST_AUTO_TEST_CASE(padto_elementwise) {
  for (int64_t n : {1000, 37}) {
    std::vector<float> x = ints(n, 23), y = ints(n, 17, 5), out(n);
    for (int64_t i = 0; i < n; i++) out[i] = x[i] * 3.0f + y[i];
    Bufs in{bytes(std::vector<float>(n)), bytes(x), bytes(y)};
    BOOST_TEST_CONTEXT("n = " << n) {
      codegen::LinearProgram p = check(axpy_ast(n), in, bytes(out),
                                       {{codegen::OptOps::PADTO, 0, 32}, {codegen::OptOps::LOCAL, 0, 32}});
      BOOST_TEST(p.launch_dims({}).global[0] == static_cast<uint32_t>((n + 31) / 32));
      check(
          axpy_ast(n), in, bytes(out),
          {{codegen::OptOps::PADTO, 0, 8}, {codegen::OptOps::UPCAST, 0, 4}, {codegen::OptOps::LOCAL, 0, 2}});
      check(axpy_ast(n), in, bytes(out), {{codegen::OptOps::PADTO, 0, 4}});
    }
  }
}

BOOST_AUTO_TEST_CASE(padto_matmul_and_reduce) {
  const int64_t m = 37, n = 37, k = 37;
  std::vector<float> a = ints(m * k, 9), b = ints(k * n, 11, 3);
  Bufs in{bytes(std::vector<float>(m * n)), bytes(a), bytes(b)};
  std::vector<std::byte> ref = bytes(matmul_ref(a, b, m, n, k));
  check(matmul_ast(m, n, k), in, ref,
        {{codegen::OptOps::PADTO, 0, 8},
         {codegen::OptOps::PADTO, 1, 16},
         {codegen::OptOps::PADTO, 2, 4},
         {codegen::OptOps::UPCAST, 1, 4},
         {codegen::OptOps::LOCAL, 1, 4},
         {codegen::OptOps::LOCAL, 0, 8},
         {codegen::OptOps::UNROLL, 2, 4}});
  check(matmul_ast(m, n, k), in, ref, {{codegen::OptOps::PADTO, 2, 8}, {codegen::OptOps::GROUPTOP, 2, 8}});
  // The padded part of a reduce adds the identity: a MAX of negative values stays negative (not 0).
  std::vector<int32_t> x(5 * 37);
  for (size_t i = 0; i < x.size(); i++) x[i] = -static_cast<int32_t>((i * 29) % 31) - 1;
  for (Ops op : {Ops::MAX, Ops::ADD}) {
    Bufs rin{bytes(std::vector<int32_t>(5)), bytes(x)};
    std::vector<std::byte> want = bytes(rows_ref(x, 5, 37, op));
    check(rows_ast(5, 37, op), rin, want, {{codegen::OptOps::PADTO, 1, 8}, {codegen::OptOps::UNROLL, 1, 4}});
    check(rows_ast(5, 37, op), rin, want, {{codegen::OptOps::PADTO, 1, 16}, {codegen::OptOps::GROUP, 1, 16}});
    check(rows_ast(5, 37, op), rin, want,
          {{codegen::OptOps::PADTO, 0, 8}, {codegen::OptOps::UPCAST, 0, 8}, {codegen::OptOps::PADTO, 1, 40}});
  }
}

BOOST_AUTO_TEST_CASE(workgroup_errors_name_the_opt) {
  UOpRef ast = matmul_ast(8, 32, 16);
  auto fails_with = [&](const sdk::RendererCaps& caps, std::vector<codegen::Opt> opts,
                        const std::string& what) {
    try {
      codegen::lower_kernel(ast, caps, {.opts = opts});
    } catch (const ValueError& e) {
      std::string msg = e.what();
      BOOST_TEST(msg.find("[opts] " + opts.back().str()) != std::string::npos, msg);
      BOOST_TEST(msg.find(what) != std::string::npos, msg);
      return;
    }
    BOOST_ERROR("no error for " << codegen::opts_str(opts));
  };
  sdk::RendererCaps gpu = runtime::interp::interp_caps(), cpu = sdk::CDialect::default_caps();
  fails_with(cpu, {{codegen::OptOps::LOCAL, 0, 4}}, "renderer has no workgroups");
  fails_with(cpu, {{codegen::OptOps::GROUP, 2, 4}}, "renderer has no workgroups");
  fails_with(gpu, {{codegen::OptOps::LOCAL, 0, 3}}, "amount 3 does not divide the axis size 8");
  fails_with(gpu, {{codegen::OptOps::LOCAL, 2, 4}}, "LOCAL takes an output axis");
  fails_with(gpu, {{codegen::OptOps::GROUP, 0, 4}}, "GROUP takes a reduce axis");
  fails_with(gpu, {{codegen::OptOps::GROUPTOP, 1, 4}}, "GROUPTOP takes a reduce axis");
  fails_with(gpu, {{codegen::OptOps::PADTO, 0, 64}}, "padding 8 to 64 more than quadruples the work");
  fails_with(gpu, {{codegen::OptOps::PADTO, 0, 0}}, "amount 0 is not positive");
  sdk::RendererCaps no_shared = gpu;
  no_shared.has_shared = false;
  fails_with(no_shared, {{codegen::OptOps::GROUP, 2, 4}}, "renderer has no shared memory");
  sdk::RendererCaps narrow = gpu, small = gpu;
  narrow.local_max[0] = 4;
  fails_with(narrow, {{codegen::OptOps::LOCAL, 1, 8}},
             "local dim 0 of size 8 exceeds the device's local_max 4");
  small.max_local_size = 16, small.max_shared_bytes = 64;
  fails_with(small, {{codegen::OptOps::LOCAL, 0, 8}, {codegen::OptOps::LOCAL, 1, 4}},
             "a workgroup of 32 work items exceeds the device's local_size limit 16");
  fails_with(small, {{codegen::OptOps::GROUP, 2, 4}, {codegen::OptOps::UPCAST, 0, 8}},
             "needs 128 bytes of shared memory, the device has 64");
  // A reduce inside another reduce cannot be grouped (its loop would enclose the barrier).
  UOpRef i = range(4, 0), kk = range(6, 1, AxisType::REDUCE), l = range(8, 2, AxisType::REDUCE);
  UOpRef inner = reduce(load(glob(1, dtypes::int32, 192), i * idx(48) + kk * idx(8) + l), {l}, Ops::ADD);
  UOpRef nested = UOp::sink({end(store(glob(0, dtypes::int32, 4), i, reduce(inner, {kk}, Ops::MAX)), {i})});
  BOOST_CHECK_EXCEPTION(
      codegen::lower_kernel(nested, gpu, {.opts = std::vector<codegen::Opt>{{codegen::OptOps::GROUP, 2, 4}}}),
      ValueError, [](const ValueError& e) {
        return std::string(e.what()).find("inside another reduce") != std::string::npos;
      });
}

BOOST_AUTO_TEST_CASE(search_and_parse) {
  UOpRef ast = matmul_ast(64, 64, 64);
  auto count = [](const std::vector<codegen::Opt>& acts, codegen::OptOps op) {
    return std::count_if(acts.begin(), acts.end(), [&](const codegen::Opt& o) { return o.op == op; });
  };
  std::vector<codegen::Opt> gpu = codegen::search_actions(ast, runtime::interp::interp_caps());
  BOOST_TEST(count(gpu, codegen::OptOps::LOCAL) == 12);
  BOOST_TEST(count(gpu, codegen::OptOps::GROUP) == 3);
  BOOST_TEST(count(gpu, codegen::OptOps::GROUPTOP) == 4);
  std::vector<codegen::Opt> cpu = codegen::search_actions(ast, sdk::CDialect::default_caps());
  BOOST_TEST(count(cpu, codegen::OptOps::LOCAL) + count(cpu, codegen::OptOps::GROUP) +
                 count(cpu, codegen::OptOps::PADTO) ==
             0);
  BOOST_TEST(count(codegen::search_actions(matmul_ast(40, 64, 64), runtime::interp::interp_caps()),
                   codegen::OptOps::PADTO) == 1);
  std::vector<codegen::Opt> all{{codegen::OptOps::LOCAL, 0, 4},
                                {codegen::OptOps::GROUP, 2, 8},
                                {codegen::OptOps::GROUPTOP, 2, 16},
                                {codegen::OptOps::PADTO, 1, 32}};
  auto back = codegen::parse_opts(codegen::opts_str(all));
  BOOST_TEST_REQUIRE(back.has_value());
  BOOST_TEST((*back == all));
}

BOOST_AUTO_TEST_CASE(heuristic_on_workgroup_devices) {
  sdk::RendererCaps gpu = runtime::interp::interp_caps();
  // A sum of 2^20 values to one output: one group of 16 work items, each a contiguous chunk.
  UOpRef r = range(1 << 20, 0, AxisType::REDUCE);
  UOpRef sum = UOp::sink({store(glob(0, dtypes::float32, 1), idx(0),
                                reduce(load(glob(1, dtypes::float32, 1 << 20), r), {r}, Ops::ADD))});
  BOOST_TEST(codegen::opts_str(codegen::hand_coded_optimizations(sum, gpu)) == "[GROUPTOP(axis=0, arg=16)]");
  // Row sums of 16 rows: groups of 16.
  BOOST_TEST(codegen::opts_str(codegen::hand_coded_optimizations(rows_ast(16, 4096, Ops::ADD), gpu)) ==
             "[GROUPTOP(axis=1, arg=16)]");
  // Elementwise kernels keep the device's workgroup size; with vector loads and stores (interp: 16 lanes)
  // each work item takes a float4 of the contiguous axis, however small the kernel, and without them none.
  BOOST_TEST(codegen::opts_str(codegen::hand_coded_optimizations(axpy_ast(1 << 16), gpu)) ==
             "[UPCAST(axis=0, arg=4)]");
  BOOST_TEST(codegen::opts_str(codegen::hand_coded_optimizations(axpy_ast(64), gpu)) ==
             "[UPCAST(axis=0, arg=4)]");
  BOOST_TEST(codegen::hand_coded_optimizations(axpy_ast(66), gpu).empty());  // 66 is no multiple of 4
  sdk::RendererCaps scalar_gpu = gpu;
  scalar_gpu.max_vector_width = 1;
  BOOST_TEST(codegen::hand_coded_optimizations(axpy_ast(1 << 16), scalar_gpu).empty());
  // A matmul after its upcasts (64 x 16 loops left): both axes reuse a buffer; the inner one local first by
  // 16, then the outer one by 8 (<= 128 work items).
  BOOST_TEST(codegen::opts_str(codegen::hand_coded_optimizations(matmul_ast(256, 256, 256), gpu)) ==
             "[UPCAST(axis=1, arg=16), UPCAST(axis=0, arg=4), UNROLL(axis=2, arg=4), LOCAL(axis=0, arg=8), "
             "LOCAL(axis=1, arg=16)]");
  // The CPU branch is unchanged: no workgroup opts.
  sdk::RendererCaps cpu = sdk::CDialect::default_caps();
  cpu.has_threads = true, cpu.thread_count = 2;
  for (const codegen::Opt& o : codegen::hand_coded_optimizations(matmul_ast(256, 256, 256), cpu))
    BOOST_TEST((o.op != codegen::OptOps::LOCAL && o.op != codegen::OptOps::GROUP &&
                o.op != codegen::OptOps::GROUPTOP));
  // Chosen opts give the reference's values.
  std::vector<float> a = ints(64 * 64, 13), b = ints(64 * 64, 7, 3);
  Bufs in{bytes(std::vector<float>(64 * 64)), bytes(a), bytes(b)};
  codegen::LinearProgram p = codegen::lower_kernel(matmul_ast(64, 64, 64), gpu);
  Bufs got = in;
  run_interp(p, got);
  BOOST_TEST((got[0] == bytes(matmul_ref(a, b, 64, 64, 64))), p.str());
}
