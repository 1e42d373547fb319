// The work estimate (codegen/estimate.hpp) on hand-built kernels whose counts are worked out by hand.
#define BOOST_TEST_MODULE codegen_estimate
#include <boost/test/unit_test.hpp>

#include "codegen/estimate.hpp"
#include "helpers.hpp"

using namespace tgtest;

namespace {

// out[3i + j] = sum_k a[8i + k] * b[3k + j]: a 4x8 @ 8x3 matmul, float32.
UOpRef matmul_ast() {
  UOpRef i = range(4, 0), j = range(3, 1), k = range(8, 2, AxisType::REDUCE);
  UOpRef out = glob(0, dtypes::float32, 12), a = glob(1, dtypes::float32, 32),
         b = glob(2, dtypes::float32, 24);
  UOpRef s = reduce(load(a, i * idx(8) + k) * load(b, k * idx(3) + j), {k}, Ops::ADD);
  return UOp::sink({end(store(out, i * idx(3) + j, s), {i, j})});
}

// out[4r + c] = a[4r + c] + b[4r + c] + c[4r + c] over a 4x4 grid.
UOpRef add3_ast() {
  UOpRef r0 = range(4, 0), r1 = range(4, 1);
  UOpRef i = r0 * idx(4) + r1;
  UOpRef out = glob(0, dtypes::float32, 16), a = glob(1, dtypes::float32, 16),
         b = glob(2, dtypes::float32, 16), c = glob(3, dtypes::float32, 16);
  return UOp::sink({end(store(out, i, load(a, i) + load(b, i) + load(c, i)), {r0, r1})});
}

}  // namespace

BOOST_AUTO_TEST_CASE(matmul_on_loops) {
  codegen::LinearProgram p = codegen::lower_kernel(matmul_ast(), cpu_caps());
  codegen::Estimate e = estimate(p);
  BOOST_TEST(e.ops == 2 * 4 * 8 * 3, p.str());      // one MUL and one ADD per (i, j, k)
  BOOST_TEST(e.bytes == 32 * 4 + 24 * 4 + 12 * 4);  // a and b read, out written
}

BOOST_AUTO_TEST_CASE(matmul_on_launch_indices) {
  codegen::LinearProgram p = codegen::lower_kernel(matmul_ast(), runtime::interp::interp_caps());
  BOOST_REQUIRE(p.launch_dims({}).global[0] * p.launch_dims({}).global[1] == 12u);  // i and j are gidx
  BOOST_TEST(estimate(p).ops == 2 * 4 * 8 * 3, p.str());
}

BOOST_AUTO_TEST_CASE(matmul_computes_what_is_counted) {
  // a = 1..32 row-major, b = all 2: out[i][j] = 2 * sum_k (8i + k + 1) = 2 * (64i + 36)
  codegen::LinearProgram p = codegen::lower_kernel(matmul_ast(), cpu_caps());
  std::vector<float> a(32), b(24, 2.0f);
  for (int n = 0; n < 32; n++) a[n] = static_cast<float>(n + 1);
  std::vector<std::vector<std::byte>> bufs = {bytes(std::vector<float>(12, 0.0f)), bytes(a), bytes(b)};
  run_interp(p, bufs);
  auto out = values<float>(bufs[0]);
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 3; j++) BOOST_TEST(out[3 * i + j] == 2.0f * static_cast<float>(64 * i + 36));
}

BOOST_AUTO_TEST_CASE(elementwise_and_given_sizes) {
  codegen::LinearProgram p = codegen::lower_kernel(add3_ast(), cpu_caps());
  codegen::Estimate e = estimate(p);
  BOOST_TEST(e.ops == 2 * 16);        // two ADDs per element; the index math 4r + c is not counted
  BOOST_TEST(e.bytes == 4 * 16 * 4);  // three inputs read, one output written, 64 bytes each
  std::vector<int64_t> nbytes = {100, 10, 20, 30};
  BOOST_TEST(estimate(p, {}, nbytes).bytes == 160);
}

BOOST_AUTO_TEST_CASE(symbolic_loop_uses_the_variable_value) {
  // out[r] = a[r] * a[r] + 1 for r < n: two ALU ops per element, n = 5 at launch
  UOpRef n = UOp::variable("n", 1, 10);
  UOpRef r = UOp::range(n, 0);
  UOpRef out = glob(0, dtypes::float32, 10), a = glob(1, dtypes::float32, 10);
  UOpRef v = load(a, r) * load(a, r) + UOp::const_(dtypes::float32, 1.0);
  codegen::LinearProgram p = codegen::lower_kernel(UOp::sink({end(store(out, r, v), {r})}), cpu_caps());
  BOOST_REQUIRE(p.vars.size() == 1u);
  std::vector<int64_t> vals = {5};
  BOOST_TEST(estimate(p, vals).ops == 2 * 5, p.str());
  BOOST_TEST(estimate(p).ops == 2 * 10);  // no value given: the loop is taken at the variable's maximum
}
