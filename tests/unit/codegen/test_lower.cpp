// lower_kernel on hand-built kernel ASTs, run on INTERP; expected values derived by hand in the comments.
#define BOOST_TEST_MODULE codegen_lower
#include <boost/test/unit_test.hpp>

#include <algorithm>

#include "base/error.hpp"
#include "helpers.hpp"

using namespace tgtest;

namespace {

// UOps of op in p (those that `f` also accepts, when given).
size_t count_op(const codegen::LinearProgram& p, Ops op, const std::function<bool(const UOp&)>& f = {}) {
  return static_cast<size_t>(std::count_if(p.uops.begin(), p.uops.end(),
                                           [&](const UOpRef& u) { return u->op() == op && (!f || f(*u)); }));
}
size_t pos_of(const codegen::LinearProgram& p, const std::function<bool(const UOp&)>& f) {
  for (size_t i = 0; i < p.uops.size(); i++)
    if (f(*p.uops[i])) return i;
  return p.uops.size();
}

// out[i] = a[i] + b[i] + c[i] over a 4x4 grid
UOpRef add3_ast() {
  UOpRef r0 = range(4, 0), r1 = range(4, 1);
  UOpRef i = r0 * idx(4) + r1;
  UOpRef out = glob(0, dtypes::float32, 16), a = glob(1, dtypes::float32, 16),
         b = glob(2, dtypes::float32, 16), c = glob(3, dtypes::float32, 16);
  return UOp::sink({end(store(out, i, load(a, i) + load(b, i) + load(c, i)), {r0, r1})});
}

std::vector<std::vector<std::byte>> add3_bufs() {
  std::vector<float> a(16), b(16), c(16, 100.0f);
  for (int k = 0; k < 16; k++) a[k] = static_cast<float>(k), b[k] = 10.0f * static_cast<float>(k);
  return {bytes(std::vector<float>(16, -1.0f)), bytes(a), bytes(b), bytes(c)};
}

// out[i] = sum_j x[8i + j] for a 4x8 x
UOpRef row_sum_ast() {
  UOpRef r0 = range(4, 0), r1 = range(8, 1, AxisType::REDUCE);
  UOpRef out = glob(0, dtypes::int32, 4), x = glob(1, dtypes::int32, 32);
  UOpRef s = reduce(load(x, r0 * idx(8) + r1), {r1}, Ops::ADD);
  return UOp::sink({end(store(out, r0, s), {r0})});
}

}  // namespace

BOOST_AUTO_TEST_CASE(elementwise_on_launch_indices) {
  codegen::LinearProgram p = codegen::lower_kernel(add3_ast(), runtime::interp::interp_caps(),
                                                   {.opts = std::vector<codegen::Opt>{}});
  BOOST_TEST(p.name == "E_4_4");
  BOOST_TEST(count_op(p, Ops::RANGE) == 0u, p.str());
  BOOST_TEST(count_op(p, Ops::SPECIAL) == 2u, p.str());
  auto dims = p.launch_dims({});
  BOOST_TEST(dims.global[0] == 4u);  // the innermost loop is gidx0
  BOOST_TEST(dims.global[1] == 4u);
  BOOST_TEST(dims.global[2] == 1u);
  BOOST_TEST(p.bufs.size() == 4u);
  BOOST_TEST(p.bufs[0].written);
  BOOST_TEST(!p.bufs[1].written);
  BOOST_TEST(p.bufs[1].read);
  auto bufs = add3_bufs();
  run_interp(p, bufs);
  auto out = values<float>(bufs[0]);
  for (int k = 0; k < 16; k++) BOOST_TEST(out[k] == 11.0f * static_cast<float>(k) + 100.0f);  // k + 10k + 100
}

BOOST_AUTO_TEST_CASE(elementwise_on_loops) {
  codegen::LinearProgram p = codegen::lower_kernel(add3_ast(), cpu_caps());
  BOOST_TEST(count_op(p, Ops::RANGE) == 2u, p.str());
  BOOST_TEST(count_op(p, Ops::END) == 2u);
  BOOST_TEST(count_op(p, Ops::SPECIAL) == 0u);
  BOOST_TEST(p.launch_dims({}).global[0] == 1u);
  BOOST_TEST(p.uops.back()->op() == Ops::SINK);
  auto bufs = add3_bufs();
  run_interp(p, bufs);
  auto out = values<float>(bufs[0]);
  for (int k = 0; k < 16; k++) BOOST_TEST(out[k] == 11.0f * static_cast<float>(k) + 100.0f);
}

BOOST_AUTO_TEST_CASE(reduce_to_accumulator) {
  codegen::LinearProgram p = codegen::lower_kernel(row_sum_ast(), cpu_caps());
  BOOST_TEST(p.name == "r_4_8");
  BOOST_TEST(count_op(p, Ops::DEFINE_REG) == 1u, p.str());
  BOOST_TEST(count_op(p, Ops::REDUCE) == 0u);
  // order: loop i { acc = 0; 8*i; loop j { acc += x[8i+j] } out[i] = acc }
  auto is_range = [](int64_t id) {
    return [id](const UOp& u) { return u.op() == Ops::RANGE && u.arg_as<AxisArg>().id == id; };
  };
  size_t outer = pos_of(p, is_range(0)), inner = pos_of(p, is_range(1));
  size_t init = pos_of(p, [](const UOp& u) { return u.op() == Ops::STORE && u.src(1)->is_const(); });
  size_t mul = pos_of(p, [](const UOp& u) { return u.op() == Ops::MUL; });
  size_t out_store = pos_of(
      p, [](const UOp& u) { return u.op() == Ops::STORE && u.src(0)->src(0)->op() == Ops::DEFINE_GLOBAL; });
  BOOST_TEST(outer < init, p.str());
  BOOST_TEST(init < inner, p.str());
  BOOST_TEST(mul < inner, p.str());  // 8*i is hoisted out of the j loop
  BOOST_TEST(inner < out_store, p.str());

  std::vector<int32_t> x(32);
  for (int k = 0; k < 32; k++) x[k] = k;
  std::vector<std::vector<std::byte>> bufs{bytes(std::vector<int32_t>(4, -1)), bytes(x)};
  run_interp(p, bufs);
  auto out = values<int32_t>(bufs[0]);
  for (int i = 0; i < 4; i++) BOOST_TEST(out[i] == 64 * i + 28);  // sum_{j<8} (8i + j)

  codegen::LinearProgram g =
      codegen::lower_kernel(row_sum_ast(), runtime::interp::interp_caps());  // the reduce loop stays a loop
  BOOST_TEST(count_op(g, Ops::RANGE) == 1u, g.str());
  BOOST_TEST(g.launch_dims({}).global[0] == 4u);
  bufs = {bytes(std::vector<int32_t>(4, -1)), bytes(x)};
  run_interp(g, bufs);
  out = values<int32_t>(bufs[0]);
  for (int i = 0; i < 4; i++) BOOST_TEST(out[i] == 64 * i + 28);
}

// A CPU target (no workgroups) writes UPCAST lanes as explicit vectors of at most its width. A 4 x 32
// matmul with rows upcast by 2, columns by 16 (two chunks of 8 lanes) and k unrolled by 4: b's row pieces
// and the output are float8 loads and stores, the accumulators are read and written as float8, a's values
// are broadcast, and each product-and-add is one float8 MULACC. Rows (stride k in a) stay scalar lanes.
// A workgroup target (INTERP's caps, 16 lanes) loads b's row pieces and stores the output as vectors too,
// but its arithmetic stays in scalar lanes; with one lane it is scalar throughout. All give the exact sums
// of small integers.
BOOST_AUTO_TEST_CASE(upcasts_become_vectors_on_a_cpu) {
  const int64_t m = 4, n = 32, k = 8;
  std::vector<float> a = ints(m * k, 7), b = ints(k * n, 5, 3);
  std::vector<codegen::Opt> opts{
      {codegen::OptOps::UPCAST, 1, 16}, {codegen::OptOps::UPCAST, 0, 2}, {codegen::OptOps::UNROLL, 2, 4}};
  sdk::RendererCaps cpu = cpu_caps();
  cpu.max_vector_width = 8;
  auto widest = [](const codegen::LinearProgram& p) {
    int w = 1;
    for (const UOpRef& u : p.uops)
      if (!u->dtype().is_ptr()) w = std::max(w, static_cast<int>(u->dtype().count()));
    return w;
  };
  DType f8 = dtypes::float32.vec(8);
  auto global = [](int64_t i) {
    return [i](const UOp& u) {
      const UOp* b = u.src(0)->src(0).get();
      return b->op() == Ops::DEFINE_GLOBAL && b->arg_as<int64_t>() == i;
    };
  };
  codegen::LinearProgram v = codegen::lower_kernel(matmul_ast(m, n, k), cpu, {.opts = opts});
  BOOST_TEST(widest(v) == 8, v.str());
  // b: 4 unrolled k x 2 chunks; out: 2 rows x 2 chunks; a: scalar loads only
  BOOST_TEST(count_op(v, Ops::LOAD, [&](const UOp& u) { return u.dtype() == f8 && global(2)(u); }) == 8u,
             v.str());
  BOOST_TEST(count_op(v, Ops::STORE, [&](const UOp& u) { return u.src(1)->dtype() == f8 && global(0)(u); }) ==
             4u);
  BOOST_TEST(count_op(v, Ops::LOAD, [&](const UOp& u) { return u.dtype().count() > 1 && global(1)(u); }) ==
             0u);
  // 2 rows x 2 chunks x 4 k, each a vector fma onto the accumulator
  BOOST_TEST(count_op(v, Ops::MULACC, [&](const UOp& u) { return u.dtype() == f8; }) == 16u, v.str());
  codegen::LinearProgram g =
      codegen::lower_kernel(matmul_ast(m, n, k), runtime::interp::interp_caps(), {.opts = opts});
  DType f16 = dtypes::float32.vec(16);
  BOOST_TEST(count_op(g, Ops::LOAD, [&](const UOp& u) { return u.dtype() == f16 && global(2)(u); }) == 4u,
             g.str());
  BOOST_TEST(
      count_op(g, Ops::STORE, [&](const UOp& u) { return u.src(1)->dtype() == f16 && global(0)(u); }) == 2u);
  BOOST_TEST(count_op(g, Ops::MULACC, [&](const UOp& u) { return u.dtype().count() > 1; }) == 0u, g.str());
  sdk::RendererCaps one = runtime::interp::interp_caps();
  one.max_vector_width = 1;
  codegen::LinearProgram s = codegen::lower_kernel(matmul_ast(m, n, k), one, {.opts = opts});
  BOOST_TEST(widest(s) == 1, s.str());
  for (const codegen::LinearProgram* p : {&v, &g, &s}) {
    std::vector<std::vector<std::byte>> bufs{bytes(std::vector<float>(m * n, -1.0f)), bytes(a), bytes(b)};
    run_interp(*p, bufs);
    std::vector<float> got = values<float>(bufs[0]), want = matmul_ref(a, b, m, n, k);
    BOOST_TEST(got == want, boost::test_tools::per_element());
  }
}

BOOST_AUTO_TEST_CASE(padded_load_does_not_touch_memory) {
  // out[i] = 1 <= i < 5 ? x[i-1] : 0 for i < 6: a 4-vector padded by one on each side
  UOpRef r = range(6, 0);
  UOpRef out = glob(0, dtypes::float32, 6), x = glob(1, dtypes::float32, 4);
  UOpRef valid = idx(0)->lt(r) & r->lt(idx(5));
  UOpRef ast = UOp::sink({end(store(out, r, load(x, r - idx(1), valid)), {r})});
  for (const auto& caps : {cpu_caps(), runtime::interp::interp_caps()}) {
    codegen::LinearProgram p = codegen::lower_kernel(ast, caps);
    std::vector<std::vector<std::byte>> bufs{bytes(std::vector<float>(6, -1.0f)),
                                             bytes(std::vector<float>{1, 2, 3, 4})};
    run_interp(p, bufs);  // x[-1] and x[4] would be out of bounds: INTERP throws if they are read
    auto o = values<float>(bufs[0]);
    std::vector<float> want{0, 1, 2, 3, 4, 0};
    BOOST_TEST(o == want, boost::test_tools::per_element());
  }
}

BOOST_AUTO_TEST_CASE(two_reduces_one_after_the_other) {
  // out[i] = sum_j (x[i,j] - max_k x[i,k]); x = [[1,5,3],[7,2,0]] -> [-6, -12]
  for (bool shared_range : {false, true}) {
    UOpRef r0 = range(2, 0), rj = range(3, 1, AxisType::REDUCE),
           rk = shared_range ? rj : range(3, 2, AxisType::REDUCE);
    UOpRef out = glob(0, dtypes::float32, 2), x = glob(1, dtypes::float32, 6);
    UOpRef mx = reduce(load(x, r0 * idx(3) + rk), {rk}, Ops::MAX);
    UOpRef s = reduce(load(x, r0 * idx(3) + rj) - mx, {rj}, Ops::ADD);
    UOpRef ast = UOp::sink({end(store(out, r0, s), {r0})});
    codegen::LinearProgram p = codegen::lower_kernel(ast, cpu_caps());
    BOOST_TEST(count_op(p, Ops::DEFINE_REG) == 2u, p.str());
    BOOST_TEST(count_op(p, Ops::RANGE) == 3u, p.str());  // a shared range is cloned: one loop per reduce
    std::vector<std::vector<std::byte>> bufs{bytes(std::vector<float>(2, 99.0f)),
                                             bytes(std::vector<float>{1, 5, 3, 7, 2, 0})};
    run_interp(p, bufs);
    auto o = values<float>(bufs[0]);
    BOOST_TEST(o[0] == -6.0f);   // (1-5)+(5-5)+(3-5)
    BOOST_TEST(o[1] == -12.0f);  // (7-7)+(2-7)+(0-7)
  }
}

BOOST_AUTO_TEST_CASE(reduce_inside_a_reduce) {
  // out[i] = sum_j x[i,j] * cnt[j], cnt[j] = sum_k (j + k < 3): the inner sum depends on j but not on i
  // (as argmax's arange trick); cnt = [3, 2, 1], x = [[1,2,3],[4,5,6]] -> [1*3+2*2+3*1, 4*3+5*2+6*1]
  UOpRef ri = range(2, 0), rj = range(3, 1, AxisType::REDUCE), rk = range(3, 2, AxisType::REDUCE);
  UOpRef one = UOp::const_(dtypes::int32, 1), zero = UOp::const_(dtypes::int32, 0);
  UOpRef cnt = reduce((rj + rk)->lt(idx(3))->where(one, zero), {rk}, Ops::ADD);
  UOpRef x = glob(1, dtypes::int32, 6);
  UOpRef ast = UOp::sink({end(
      store(glob(0, dtypes::int32, 2), ri, reduce(load(x, ri * idx(3) + rj) * cnt, {rj}, Ops::ADD)), {ri})});
  for (const auto& caps : {cpu_caps(), runtime::interp::interp_caps()}) {
    codegen::LinearProgram p = codegen::lower_kernel(ast, caps);
    std::vector<std::vector<std::byte>> bufs{bytes(std::vector<int32_t>(2)),
                                             bytes(std::vector<int32_t>{1, 2, 3, 4, 5, 6})};
    run_interp(p, bufs);
    std::vector<int32_t> want{10, 28};
    BOOST_TEST(values<int32_t>(bufs[0]) == want, boost::test_tools::per_element());
  }
}

BOOST_AUTO_TEST_CASE(loop_invariant_reduce_is_hoisted) {
  // out[i] = a[i] + sum_j b[j]: the sum does not depend on i, so its loop runs once before loop i
  UOpRef ri = range(3, 0), rj = range(4, 1, AxisType::REDUCE);
  UOpRef out = glob(0, dtypes::int32, 3), a = glob(1, dtypes::int32, 3), b = glob(2, dtypes::int32, 4);
  UOpRef ast = UOp::sink({end(store(out, ri, load(a, ri) + reduce(load(b, rj), {rj}, Ops::ADD)), {ri})});
  codegen::LinearProgram p = codegen::lower_kernel(ast, cpu_caps());
  size_t loop_i = pos_of(p, [](const UOp& u) { return u.op() == Ops::RANGE && u.arg_as<AxisArg>().id == 0; });
  size_t loop_j = pos_of(p, [](const UOp& u) { return u.op() == Ops::RANGE && u.arg_as<AxisArg>().id == 1; });
  BOOST_TEST(loop_j < loop_i, p.str());
  std::vector<std::vector<std::byte>> bufs{bytes(std::vector<int32_t>(3)),
                                           bytes(std::vector<int32_t>{1, 2, 3}),
                                           bytes(std::vector<int32_t>{1, 2, 3, 4})};
  run_interp(p, bufs);
  std::vector<int32_t> want{11, 12, 13};  // a[i] + 10
  BOOST_TEST(values<int32_t>(bufs[0]) == want, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(two_outputs_share_one_loop) {
  UOpRef r = range(5, 0);
  UOpRef o0 = glob(0, dtypes::int32, 5), o1 = glob(1, dtypes::int32, 5), x = glob(2, dtypes::int32, 5);
  UOpRef v = load(x, r);
  UOpRef ast = UOp::sink({end(store(o0, r, v + UOp::const_(dtypes::int32, 1)), {r}),
                          end(store(o1, r, v * UOp::const_(dtypes::int32, 2)), {r})});
  for (const auto& caps : {cpu_caps(), runtime::interp::interp_caps()}) {
    codegen::LinearProgram p = codegen::lower_kernel(ast, caps);
    BOOST_TEST(count_op(p, Ops::END) == (caps.has_local ? 0u : 1u), p.str());
    std::vector<std::vector<std::byte>> bufs{bytes(std::vector<int32_t>(5)), bytes(std::vector<int32_t>(5)),
                                             bytes(std::vector<int32_t>{3, 1, 4, 1, 5})};
    run_interp(p, bufs);
    std::vector<int32_t> w0{4, 2, 5, 2, 6}, w1{6, 2, 8, 2, 10};
    BOOST_TEST(values<int32_t>(bufs[0]) == w0, boost::test_tools::per_element());
    BOOST_TEST(values<int32_t>(bufs[1]) == w1, boost::test_tools::per_element());
  }
}

BOOST_AUTO_TEST_CASE(symbolic_size) {
  // out[i] = 2 * x[i] for i < n, n in [1, 16]
  UOpRef n = UOp::variable("n", 1, 16);
  UOpRef r = UOp::range(n, 0);
  UOpRef out = glob(0, dtypes::float32, 16), x = glob(1, dtypes::float32, 16);
  UOpRef ast = UOp::sink({end(store(out, r, load(x, r) * UOp::const_(dtypes::float32, 2.0)), {r})});
  for (const auto& caps : {cpu_caps(), runtime::interp::interp_caps()}) {
    codegen::LinearProgram p = codegen::lower_kernel(ast, caps);
    BOOST_TEST(p.name == "E_n");
    BOOST_TEST(p.vars.size() == 1u);
    const int64_t vals[] = {5};
    if (caps.has_local) BOOST_TEST(p.launch_dims(vals).global[0] == 5u);
    std::vector<float> x(16);
    for (int k = 0; k < 16; k++) x[k] = static_cast<float>(k);
    std::vector<std::vector<std::byte>> bufs{bytes(std::vector<float>(16, -1.0f)), bytes(x)};
    run_interp(p, bufs, vals);
    auto o = values<float>(bufs[0]);
    for (int k = 0; k < 16; k++) BOOST_TEST(o[k] == (k < 5 ? 2.0f * static_cast<float>(k) : -1.0f));
  }
}

BOOST_AUTO_TEST_CASE(launch_dims_are_grouped_and_split) {
  // out[((a*3+b)*4+c)*5+d] = that index, for a 2x3x4x5 grid on a device allowing 8 per dimension
  UOpRef ra = range(2, 0), rb = range(3, 1), rc = range(4, 2), rd = range(5, 3);
  UOpRef i = ((ra * idx(3) + rb) * idx(4) + rc) * idx(5) + rd;
  UOpRef out = glob(0, dtypes::int32, 120);
  UOpRef ast = UOp::sink({end(store(out, i, i->cast(dtypes::int32)), {ra, rb, rc, rd})});
  sdk::RendererCaps caps = runtime::interp::interp_caps();
  caps.global_max[0] = caps.global_max[1] = caps.global_max[2] = 8;
  codegen::LinearProgram p = codegen::lower_kernel(ast, caps);
  auto d = p.launch_dims({});
  BOOST_TEST(static_cast<int>(d.global[0] * d.global[1] * d.global[2]) == 120, p.str());
  for (int k = 0; k < 3; k++) BOOST_TEST(d.global[k] <= 8u);
  std::vector<std::vector<std::byte>> bufs{bytes(std::vector<int32_t>(120, -1))};
  run_interp(p, bufs);
  auto o = values<int32_t>(bufs[0]);
  for (int k = 0; k < 120; k++) BOOST_TEST(o[k] == k);

  // one loop of 64 on a device allowing 8: split into 8 x 8
  UOpRef r = range(64, 0);
  UOpRef out64 = glob(0, dtypes::int32, 64);
  codegen::LinearProgram q =
      codegen::lower_kernel(UOp::sink({end(store(out64, r, r->cast(dtypes::int32)), {r})}), caps,
                            {.opts = std::vector<codegen::Opt>{}});
  auto dq = q.launch_dims({});
  BOOST_TEST(dq.global[0] * dq.global[1] * dq.global[2] == 64u, q.str());
  bufs = {bytes(std::vector<int32_t>(64, -1))};
  run_interp(q, bufs);
  o = values<int32_t>(bufs[0]);
  for (int k = 0; k < 64; k++) BOOST_TEST(o[k] == k);
}

BOOST_AUTO_TEST_CASE(index_dtype_widens_only_where_needed) {
  // out[r * 2^20] for r < 4096 reaches 2^32: that product is int64 everywhere. On a workgroup renderer the
  // loop index stays int32.
  UOpRef r = range(4096, 0);
  UOpRef out = glob(0, dtypes::int8, int64_t{1} << 32);
  UOpRef ast = UOp::sink({end(store(out, r * idx(int64_t{1} << 20), UOp::const_(dtypes::int8, 1)), {r})});
  sdk::RendererCaps gpu = cpu_caps();
  gpu.has_local = true;
  codegen::LinearProgram p = codegen::lower_kernel(ast, gpu);
  for (const UOpRef& u : p.uops) {
    BOOST_TEST(u->dtype().scalar() != Scalar::INDEX, p.str());
    if (u->op() == Ops::RANGE) BOOST_TEST(u->dtype() == dtypes::int32);
    if (u->op() == Ops::INDEX) BOOST_TEST(u->src(1)->dtype() == dtypes::int64, p.str());
  }
  // A CPU-style renderer computes every index of a kernel that divides none in int64, the loop's too (no
  // sign extension per address); one that divides an index (r % 3) keeps int32 where the value fits.
  codegen::LinearProgram c = codegen::lower_kernel(ast, cpu_caps());
  for (const UOpRef& u : c.uops)
    if (u->op() == Ops::RANGE) BOOST_TEST(u->dtype() == dtypes::int64, c.str());
  UOpRef small = glob(0, dtypes::int32, 4096);
  UOpRef divides = UOp::sink({end(store(small, r, (r % idx(3))->cast(dtypes::int32)), {r})});
  codegen::LinearProgram d = codegen::lower_kernel(divides, cpu_caps());
  for (const UOpRef& u : d.uops) {
    BOOST_TEST(u->dtype() != dtypes::int64, d.str());
    if (u->op() == Ops::RANGE) BOOST_TEST(u->dtype() == dtypes::int32);
  }
  std::vector<std::vector<std::byte>> bufs{bytes(std::vector<int32_t>(4096, -1))};
  run_interp(d, bufs);
  auto o = values<int32_t>(bufs[0]);
  for (int k = 0; k < 4096; k++) BOOST_TEST(o[k] == k % 3);
  // A CPU-style renderer without int64 keeps int32 where the values fit.
  sdk::RendererCaps no64 = cpu_caps();
  no64.dtypes &= ~(uint64_t{1} << static_cast<int>(Scalar::INT64));
  codegen::LinearProgram n =
      codegen::lower_kernel(UOp::sink({end(store(small, r, r->cast(dtypes::int32)), {r})}), no64);
  for (const UOpRef& u : n.uops) BOOST_TEST(u->dtype() != dtypes::int64, n.str());
}

BOOST_AUTO_TEST_CASE(bad_asts_are_rejected) {
  BOOST_CHECK_THROW(codegen::lower_kernel(UOp::const_(dtypes::float32, 1.0), cpu_caps()), ValueError);
  UOpRef r = range(4, 0);
  UOpRef out = glob(0, dtypes::float32, 4);
  UOpRef never_closed = UOp::sink({store(out, r, UOp::const_(dtypes::float32, 1.0))});
  BOOST_CHECK_THROW(codegen::lower_kernel(never_closed, cpu_caps()), ValueError);
  // bfloat16 on a renderer without it
  sdk::RendererCaps caps = cpu_caps();
  caps.dtypes &= ~(uint64_t{1} << static_cast<int>(Scalar::BFLOAT16));
  UOpRef bf = glob(0, dtypes::bfloat16, 4);
  BOOST_CHECK_THROW(
      codegen::lower_kernel(UOp::sink({end(store(bf, r, UOp::const_(dtypes::bfloat16, 1.0)), {r})}), caps),
      NotSupportedError);
}
