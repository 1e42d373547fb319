// The TC opt: a renderer that declares a tensor core gets the kernel's multiply-add as WMMAs. INTERP runs
// them with the declared lane layout (CUDA's mma.m16n8k16 here, runtime::interp::cuda_mma_m16n8k16): the same
// bytes as the hand-computed sums, the heuristic's and BEAM's choice, and errors that name the problem.
#define BOOST_TEST_MODULE codegen_tc
#include <boost/test/unit_test.hpp>

#include <cstring>

#include "base/error.hpp"
#include "codegen/search.hpp"
#include "helpers.hpp"

using namespace tgtest;

namespace {

using Bufs = std::vector<std::vector<std::byte>>;

sdk::RendererCaps tc_caps() {
  sdk::RendererCaps c = runtime::interp::interp_caps();
  c.tensor_core_count = 1, c.tensor_cores[0] = runtime::interp::cuda_mma_m16n8k16();
  return c;
}

// Half bits of a small non-negative integer (exact).
uint16_t half_of(int v) {
  if (v == 0) return 0;
  int e = 31 - std::countl_zero(static_cast<uint32_t>(v));
  return static_cast<uint16_t>((e + 15) << 10 | ((v << 10 >> e) & 0x3ff));
}

template <class T>
std::vector<std::byte> bytes_of(const std::vector<T>& v) {
  std::vector<std::byte> b(v.size() * sizeof(T));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// out[b, i, j] = 2 * sum_k float(x[b, i, k]) * float(w[b, k, j]) + 1 for 2 batches of a (rows x depth) by
// (depth x cols) product of halves, accumulated in float.
UOpRef bmm_ast(int64_t rows, int64_t cols, int64_t depth, DType in = dtypes::float16) {
  UOpRef b = range(2, 0), i = range(rows, 1), j = range(cols, 2), k = range(depth, 3, AxisType::REDUCE);
  UOpRef x = glob(1, in, 2 * rows * depth), w = glob(2, in, 2 * depth * cols);
  UOpRef xv = load(x, b * idx(rows * depth) + i * idx(depth) + k);
  UOpRef wv = load(w, b * idx(depth * cols) + k * idx(cols) + j);
  if (in != dtypes::float32) xv = xv->cast(dtypes::float32), wv = wv->cast(dtypes::float32);
  UOpRef sum = reduce(xv * wv, {k}, Ops::ADD);
  UOpRef v = sum * UOp::const_(dtypes::float32, 2.0) + UOp::const_(dtypes::float32, 1.0);
  return UOp::sink(
      {end(store(glob(0, dtypes::float32, 2 * rows * cols), b * idx(rows * cols) + i * idx(cols) + j, v),
           {b, i, j})});
}

// bmm_ast's inputs (small integers, exact in half) and its exact outputs.
struct BmmData {
  std::vector<uint16_t> xh, wh;
  std::vector<float> want;
};
BmmData bmm_data(int64_t rows, int64_t cols, int64_t depth) {
  std::vector<int> xi(2 * rows * depth), wi(2 * depth * cols);
  for (size_t n = 0; n < xi.size(); n++) xi[n] = static_cast<int>((n * 7) % 11);
  for (size_t n = 0; n < wi.size(); n++) wi[n] = static_cast<int>((n * 5) % 13);
  BmmData d;
  for (int v : xi) d.xh.push_back(half_of(v));
  for (int v : wi) d.wh.push_back(half_of(v));
  d.want.resize(2 * rows * cols);
  for (int64_t b = 0; b < 2; b++)
    for (int64_t i = 0; i < rows; i++)
      for (int64_t j = 0; j < cols; j++) {
        int64_t s = 0;
        for (int64_t k = 0; k < depth; k++)
          s += xi[b * rows * depth + i * depth + k] * wi[b * depth * cols + k * cols + j];
        d.want[b * rows * cols + i * cols + j] = 2.0f * static_cast<float>(s) + 1.0f;
      }
  return d;
}

}  // namespace

BOOST_AUTO_TEST_CASE(tc_matmul_matches_the_sums) {
  const int64_t rows = 32, cols = 16, depth = 32;
  auto [xh, wh, want] = bmm_data(rows, cols, depth);
  codegen::LinearProgram p =
      codegen::lower_kernel(bmm_ast(rows, cols, depth), tc_caps(),
                            {.opts = std::vector<codegen::Opt>{{codegen::OptOps::TC, 0, 0}}});
  BOOST_TEST(
      std::count_if(p.uops.begin(), p.uops.end(), [](const UOpRef& u) { return u->op() == Ops::WMMA; }) == 1);
  sdk::LaunchDims d = p.launch_dims({});
  BOOST_TEST(d.local[0] * d.local[1] * d.local[2] == 32u);              // one warp per tile
  BOOST_TEST(d.global[0] * d.global[1] * d.global[2] == 2u * 2u * 2u);  // 2 batches x 2 x 2 tiles of 16 x 8
  Bufs bufs{bytes_of(std::vector<float>(want.size())), bytes_of(xh), bytes_of(wh)};
  run_interp(p, bufs);
  BOOST_TEST((bufs[0] == bytes_of(want)));
}

// Several tiles per warp (UPCAST) and several warps per workgroup (LOCAL) after TC: the same sums, with
// um * un WMMAs per step of k and 32 * lm * ln work items per group.
BOOST_AUTO_TEST_CASE(tc_warp_tiles_and_workgroups_match_the_sums) {
  const int64_t rows = 64, cols = 64, depth = 48;
  auto [xh, wh, want] = bmm_data(rows, cols, depth);
  struct Case {
    std::vector<codegen::Opt> after;
    int wmmas, threads;
  };
  for (const Case& c : std::vector<Case>{
           {{{codegen::OptOps::UPCAST, 1, 2}}, 2, 32},
           {{{codegen::OptOps::UPCAST, 2, 4}, {codegen::OptOps::UPCAST, 1, 2}}, 8, 32},
           {{{codegen::OptOps::LOCAL, 1, 2}, {codegen::OptOps::LOCAL, 2, 4}}, 1, 256},
           {{{codegen::OptOps::UPCAST, 1, 2},
             {codegen::OptOps::UPCAST, 2, 2},
             {codegen::OptOps::LOCAL, 1, 2},
             {codegen::OptOps::LOCAL, 2, 2}},
            4,
            128},
       }) {
    std::vector<codegen::Opt> opts{{codegen::OptOps::TC, 0, 0}};
    opts.insert(opts.end(), c.after.begin(), c.after.end());
    codegen::LinearProgram p = codegen::lower_kernel(bmm_ast(rows, cols, depth), tc_caps(), {.opts = opts});
    BOOST_TEST(std::count_if(p.uops.begin(), p.uops.end(),
                             [](const UOpRef& u) { return u->op() == Ops::WMMA; }) == c.wmmas,
               codegen::opts_str(opts));
    sdk::LaunchDims d = p.launch_dims({});
    BOOST_TEST(d.local[0] == 32u);  // the lane is lidx0: a warp is 32 consecutive work items
    BOOST_TEST(d.local[0] * d.local[1] * d.local[2] == static_cast<uint32_t>(c.threads),
               codegen::opts_str(opts));
    Bufs bufs{bytes_of(std::vector<float>(want.size())), bytes_of(xh), bytes_of(wh)};
    run_interp(p, bufs);
    BOOST_TEST((bufs[0] == bytes_of(want)), codegen::opts_str(opts));
  }
}

BOOST_AUTO_TEST_CASE(tc_takes_the_sum_of_converted_products) {
  // Tensor::matmul of halves sums float(x * y); on the tensor core the products are exact (small integers
  // here, so the same bytes either way).
  UOpRef i = range(16, 0), j = range(8, 1), k = range(32, 2, AxisType::REDUCE);
  UOpRef x = load(glob(1, dtypes::float16, 16 * 32), i * idx(32) + k);
  UOpRef w = load(glob(2, dtypes::float16, 32 * 8), k * idx(8) + j);
  UOpRef sum = reduce((x * w)->cast(dtypes::float32), {k}, Ops::ADD);
  UOpRef ast = UOp::sink(
      {end(store(glob(0, dtypes::float16, 16 * 8), i * idx(8) + j, sum->cast(dtypes::float16)), {i, j})});
  BOOST_TEST(codegen::opts_str(codegen::hand_coded_optimizations(ast, tc_caps())) == "[TC(axis=0, arg=0)]");
  std::vector<int> xi(16 * 32), wi(32 * 8);
  for (size_t n = 0; n < xi.size(); n++) xi[n] = static_cast<int>((n * 3) % 5);
  for (size_t n = 0; n < wi.size(); n++) wi[n] = static_cast<int>((n * 5) % 3);
  std::vector<uint16_t> xh, wh, want(16 * 8);
  for (int v : xi) xh.push_back(half_of(v));
  for (int v : wi) wh.push_back(half_of(v));
  for (int a = 0; a < 16; a++)
    for (int b = 0; b < 8; b++) {
      int s = 0;
      for (int c = 0; c < 32; c++) s += xi[a * 32 + c] * wi[c * 8 + b];
      want[a * 8 + b] = half_of(s);  // at most 32 * 4 * 2: exact in half
    }
  Bufs bufs{bytes_of(std::vector<uint16_t>(want.size())), bytes_of(xh), bytes_of(wh)};
  run_interp(
      codegen::lower_kernel(ast, tc_caps(), {.opts = std::vector<codegen::Opt>{{codegen::OptOps::TC, 0, 0}}}),
      bufs);
  BOOST_TEST((bufs[0] == bytes_of(want)));
}

BOOST_AUTO_TEST_CASE(heuristic_and_beam_take_a_declared_tensor_core) {
  // 2 x 2 tiles: one warp takes them all; 8 x 16 tiles: 4 x 8 per warp, 2 x 2 warps per workgroup
  BOOST_TEST(codegen::opts_str(codegen::hand_coded_optimizations(bmm_ast(32, 16, 32), tc_caps())) ==
             "[TC(axis=0, arg=0), UPCAST(axis=2, arg=2), UPCAST(axis=1, arg=2)]");
  BOOST_TEST(codegen::opts_str(codegen::hand_coded_optimizations(bmm_ast(128, 128, 32), tc_caps())) ==
             "[TC(axis=0, arg=0), UPCAST(axis=2, arg=8), UPCAST(axis=1, arg=4), LOCAL(axis=2, arg=2), "
             "LOCAL(axis=1, arg=2)]");
  // not without one, not for float32 inputs, not for sizes the tile does not divide
  BOOST_TEST(codegen::opts_str(
                 codegen::hand_coded_optimizations(bmm_ast(32, 16, 32), runtime::interp::interp_caps()))
                 .find("TC") == std::string::npos);
  BOOST_TEST(
      codegen::opts_str(codegen::hand_coded_optimizations(bmm_ast(32, 16, 32, dtypes::float32), tc_caps()))
          .find("TC") == std::string::npos);
  BOOST_TEST(
      codegen::opts_str(codegen::hand_coded_optimizations(bmm_ast(24, 16, 32), tc_caps())).find("TC") ==
      std::string::npos);
  std::vector<codegen::Opt> actions = codegen::search_actions(bmm_ast(32, 16, 32), tc_caps());
  BOOST_TEST(std::count(actions.begin(), actions.end(), codegen::Opt{codegen::OptOps::TC, 0, 0}) == 1);
  BOOST_TEST(codegen::search_actions(bmm_ast(32, 16, 32), runtime::interp::interp_caps()).size() + 1 ==
             actions.size());
  // the opts text form round-trips
  std::optional<std::vector<codegen::Opt>> back = codegen::parse_opts("[TC(axis=0, arg=0)]");
  BOOST_TEST_REQUIRE(back.has_value());
  BOOST_TEST(codegen::opts_str(*back) == "[TC(axis=0, arg=0)]");
}

BOOST_AUTO_TEST_CASE(tc_errors_name_the_problem) {
  auto fails_with = [](const UOpRef& ast, const sdk::RendererCaps& caps, std::vector<codegen::Opt> opts,
                       const std::string& what) {
    try {
      codegen::lower_kernel(ast, caps, {.opts = opts});
    } catch (const ValueError& e) {
      BOOST_TEST(std::string(e.what()).find(what) != std::string::npos, e.what());
      return;
    }
    BOOST_ERROR("no error for " << codegen::opts_str(opts));
  };
  UOpRef ast = bmm_ast(32, 16, 32);
  fails_with(ast, runtime::interp::interp_caps(), {{codegen::OptOps::TC, 0, 0}},
             "TC(axis=0, arg=0): the 'interp' renderer declares no tensor cores");
  fails_with(ast, tc_caps(), {{codegen::OptOps::TC, 0, 1}}, "declares 1 tensor cores");
  fails_with(ast, tc_caps(), {{codegen::OptOps::TC, 1, 0}}, "axis must be 0");
  fails_with(ast, tc_caps(), {{codegen::OptOps::UPCAST, 1, 2}, {codegen::OptOps::TC, 0, 0}},
             "TC must be the first opt");
  fails_with(ast, tc_caps(), {{codegen::OptOps::TC, 0, 0}, {codegen::OptOps::UNROLL, 3, 2}},
             "UNROLL(axis=3, arg=2): after TC only UPCAST and LOCAL of the tile's row or column axis apply");
  fails_with(ast, tc_caps(), {{codegen::OptOps::TC, 0, 0}, {codegen::OptOps::UPCAST, 0, 2}},
             "after TC the axis must be the tile's row or column axis");
  fails_with(ast, tc_caps(), {{codegen::OptOps::TC, 0, 0}, {codegen::OptOps::UPCAST, 1, 3}},
             "the amount must be 2, 4, 8");
  fails_with(ast, tc_caps(),
             {{codegen::OptOps::TC, 0, 0}, {codegen::OptOps::UPCAST, 1, 2}, {codegen::OptOps::LOCAL, 1, 2}},
             "LOCAL(axis=1, arg=2): 2 tiles of 16 do not divide into 4 per workgroup");
  sdk::RendererCaps small = tc_caps();
  small.max_local_size = 32;
  fails_with(ast, small, {{codegen::OptOps::TC, 0, 0}, {codegen::OptOps::LOCAL, 2, 2}},
             "2 warps of 32 exceed the 'interp' renderer's 32 work items per group");
  fails_with(bmm_ast(24, 16, 32), tc_caps(), {{codegen::OptOps::TC, 0, 0}},
             "the 24 x 16 x 32 product does not divide into 16 x 8 x 16 tiles");
  sdk::RendererCaps bad = tc_caps();
  bad.tensor_cores[0].b_bits[1] = bad.tensor_cores[0].b_bits[0];  // element bit 0 twice, lane bit 0 never
  fails_with(ast, bad, {{codegen::OptOps::TC, 0, 0}},
             "the tensor core's b_bits do not name each lane bit and element bit once");
  fails_with(bmm_ast(32, 16, 32, dtypes::float32), tc_caps(), {{codegen::OptOps::TC, 0, 0}},
             "the sum is not of products of half values into float");
}

BOOST_AUTO_TEST_CASE(caps_of_an_older_plugin_have_no_tensor_cores) {
  // A minor-0 plugin's caps end before the tensor cores: they are never read.
  sdk::RendererCaps c = tc_caps();
  BOOST_TEST(sdk::tensor_cores(c).size() == 1u);
  c.struct_size = offsetof(sdk::RendererCaps, tensor_core_count);
  BOOST_TEST(sdk::tensor_cores(c).empty());
}
