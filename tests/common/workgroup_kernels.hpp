#pragma once
// Hand-built kernel ASTs run on a workgroup device (VULKAN, CL) with explicit workgroup opts (LOCAL, GROUP,
// GROUPTOP, PADTO), checked against values computed on the host in plain loops, and timed.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "base/env.hpp"
#include "codegen/estimate.hpp"
#include "codegen/lower.hpp"
#include "runtime/beam.hpp"
#include "runtime/registry.hpp"

namespace tg::test::workgroup {

using Bytes = std::vector<std::byte>;

template <typename T>
Bytes to_bytes(const std::vector<T>& v) {
  Bytes b(v.size() * sizeof(T));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// c = a @ b for n x n row-major matrices, summed in double on the host.
inline std::vector<float> host_matmul(const std::vector<float>& a, const std::vector<float>& b, int64_t n) {
  std::vector<double> c(static_cast<size_t>(n * n), 0.0);
  for (int64_t i = 0; i < n; i++)
    for (int64_t k = 0; k < n; k++)
      for (int64_t j = 0; j < n; j++) c[i * n + j] += double(a[i * n + k]) * b[k * n + j];
  return std::vector<float>(c.begin(), c.end());
}
inline std::vector<float> floats(const Bytes& b) {
  std::vector<float> v(b.size() / 4);
  std::memcpy(v.data(), b.data(), b.size());
  return v;
}

inline UOpRef cidx(int64_t v) { return UOp::const_(dtypes::index, ConstValue{v}); }
inline UOpRef gbuf(int64_t i, int64_t n) {
  return UOp::make(Ops::DEFINE_GLOBAL, dtypes::float32.ptr(AddrSpace::GLOBAL, n), {}, i);
}
inline UOpRef ld(const UOpRef& b, const UOpRef& i) {
  return UOp::make(Ops::LOAD, dtypes::float32, {UOp::make(Ops::INDEX, b->dtype(), {b, i})});
}
inline UOpRef st(const UOpRef& b, const UOpRef& i, const UOpRef& v) {
  return UOp::make(Ops::STORE, dtypes::void_, {UOp::make(Ops::INDEX, b->dtype(), {b, i}), v});
}
inline UOpRef red(const UOpRef& v, const UOpRef& r) {
  return UOp::make(Ops::REDUCE, v->dtype(), {v, r}, Ops::ADD);
}

// out[0] = sum x[r] for n values.
inline UOpRef sum_ast(int64_t n) {
  UOpRef r = UOp::range(cidx(n), 0, AxisType::REDUCE);
  return UOp::sink({st(gbuf(0, 1), cidx(0), red(ld(gbuf(1, n), r), r))});
}
// c = a @ b for n x n matrices.
inline UOpRef matmul_ast(int64_t n) {
  UOpRef i = UOp::range(cidx(n), 0), j = UOp::range(cidx(n), 1), r = UOp::range(cidx(n), 2, AxisType::REDUCE);
  UOpRef v = red(ld(gbuf(1, n * n), i * cidx(n) + r) * ld(gbuf(2, n * n), r * cidx(n) + j), r);
  return UOp::sink({UOp::make(Ops::END, dtypes::void_, {st(gbuf(0, n * n), i * cidx(n) + j, v), i, j})});
}
// out[i] = x[i] * 3 + y[i] for n values.
inline UOpRef axpy_ast(int64_t n) {
  UOpRef i = UOp::range(cidx(n), 0);
  UOpRef v = ld(gbuf(1, n), i) * UOp::const_(dtypes::float32, 3.0) + ld(gbuf(2, n), i);
  return UOp::sink({UOp::make(Ops::END, dtypes::void_, {st(gbuf(0, n), i, v), i})});
}

struct Run {
  codegen::LinearProgram prog;
  std::vector<Bytes> bufs;  // after the launch
  double seconds = 0;       // fastest of the timed launches
  double gflops = 0, gbs = 0;
};

// Lowers ast for dev with opts (nullopt: the heuristic's), builds it, runs it on copies of bufs `reps`
// times and reads the buffers back.
inline Run run(tg::runtime::Device& dev, const UOpRef& ast, std::optional<std::vector<codegen::Opt>> opts,
               std::vector<Bytes> bufs, int reps = 3) {
  Run out;
  out.prog = codegen::lower_kernel(ast, dev.caps(), {.opts = std::move(opts)});
  sdk::Blob src;
  sdk::Status s = dev.renderer().render(out.prog.name, out.prog.view(), src);
  BOOST_TEST_REQUIRE(s.ok(), s.message());
  sdk::Blob bin = dev.compile(src.text());
  std::unique_ptr<sdk::Program> p = dev.load(out.prog.name, bin.bytes());
  sdk::Allocator& a = dev.plugin().allocator();
  std::vector<sdk::Handle> hs;
  for (const Bytes& b : bufs) {
    sdk::Handle h = nullptr;
    BOOST_TEST_REQUIRE(a.alloc(b.size(), {}, &h).ok());
    BOOST_TEST_REQUIRE(a.copyin(h, b).ok());
    hs.push_back(h);
  }
  out.seconds = 1e30;
  for (int i = 0; i < reps; i++) {
    double t = 0;
    s = p->launch(hs, {}, out.prog.launch_dims({}), true, &t);
    BOOST_TEST_REQUIRE(s.ok(), s.message() << "\n" << src.text());
    out.seconds = std::min(out.seconds, t);
  }
  for (size_t i = 0; i < bufs.size(); i++) {
    BOOST_TEST_REQUIRE(a.copyout(bufs[i], hs[i]).ok());
    a.free(hs[i], bufs[i].size(), {});
  }
  out.bufs = std::move(bufs);
  codegen::Estimate w = estimate(out.prog);
  out.gflops = static_cast<double>(w.ops) / out.seconds * 1e-9;
  out.gbs = static_cast<double>(w.bytes) / out.seconds * 1e-9;
  BOOST_TEST_MESSAGE(fmt::format("{:<28} {:<70} {:9.3f} ms {:8.2f} GFLOPS {:8.2f} GB/s", out.prog.name,
                                 codegen::opts_str(out.prog.applied_opts), out.seconds * 1e3, out.gflops,
                                 out.gbs));
  return out;
}

inline bool close(float got, double want, double tol) {
  return std::fabs(got - want) <= tol * (1 + std::fabs(want));
}

// The three workloads of the brief on dev: a sum of 2^20 values with GROUPTOP, a 256 x 256 matmul with
// LOCAL + GROUP + UPCAST, an elementwise kernel of 1000 values with PADTO + LOCAL; each also without opts
// and with the heuristic's, all against the host's loops. max_loop: the most trips the device runs a loop for
// (lavapipe stops loops after 65535), so the plain sum of 2^20 in one loop is left out where it is lower.
inline void check_workgroup_opts(tg::runtime::Device& dev, int64_t max_loop = INT64_MAX) {
  {
    const int64_t n = 1 << 20;
    std::vector<float> x(n);
    double want = 0;
    for (int64_t i = 0; i < n; i++) want += (x[i] = static_cast<float>((i * 7919) % 1000) * 0.001f - 0.4f);
    std::vector<std::optional<std::vector<codegen::Opt>>> variants{
        std::vector<codegen::Opt>{{codegen::OptOps::GROUPTOP, 0, 256}},
        std::vector<codegen::Opt>{{codegen::OptOps::GROUPTOP, 0, 64}, {codegen::OptOps::UNROLL, 0, 4}},
        std::nullopt};
    if (n <= max_loop) variants.insert(variants.begin(), std::vector<codegen::Opt>{});
    for (const auto& o : variants) {
      Run r = run(dev, sum_ast(n), o, {Bytes(4), to_bytes(x)});
      float got = floats(r.bufs[0])[0];
      BOOST_TEST(close(got, want, 1e-4), r.prog.name << " " << codegen::opts_str(r.prog.applied_opts) << ": "
                                                     << got << " != " << want);
    }
  }
  {
    const int64_t n = 256;
    std::vector<float> a(n * n), b(n * n);
    for (int64_t i = 0; i < n * n; i++)
      a[i] = static_cast<float>((i * 31) % 17) - 8.0f, b[i] = static_cast<float>((i * 13) % 11) - 5.0f;
    std::vector<float> want = host_matmul(a, b, n);
    std::vector<std::optional<std::vector<codegen::Opt>>> variants{
        std::vector<codegen::Opt>{},
        std::vector<codegen::Opt>{{codegen::OptOps::LOCAL, 1, 16},
                                  {codegen::OptOps::LOCAL, 0, 4},
                                  {codegen::OptOps::GROUP, 2, 4},
                                  {codegen::OptOps::UPCAST, 1, 4},
                                  {codegen::OptOps::UPCAST, 0, 4}},
        std::vector<codegen::Opt>{{codegen::OptOps::UPCAST, 1, 4},
                                  {codegen::OptOps::UPCAST, 0, 4},
                                  {codegen::OptOps::UNROLL, 2, 4},
                                  {codegen::OptOps::LOCAL, 0, 8},
                                  {codegen::OptOps::LOCAL, 1, 16}},
        std::nullopt};
    for (const auto& o : variants) {
      Run r = run(dev, matmul_ast(n), o, {Bytes(n * n * 4), to_bytes(a), to_bytes(b)});
      std::vector<float> got = floats(r.bufs[0]);
      size_t bad = 0;
      for (size_t i = 0; i < got.size(); i++)
        bad += got[i] != want[i];  // small ints: exact
      BOOST_TEST(bad == 0u,
                 r.prog.name << " " << codegen::opts_str(r.prog.applied_opts) << ": " << bad << " wrong");
    }
  }
  for (int64_t n : {1000, 37}) {
    std::vector<float> x(n), y(n), want(n);
    for (int64_t i = 0; i < n; i++)
      x[i] = static_cast<float>(i % 29) * 0.5f, y[i] = static_cast<float>(i % 7),
      want[i] = x[i] * 3.0f + y[i];
    std::vector<std::optional<std::vector<codegen::Opt>>> variants{
        std::vector<codegen::Opt>{{codegen::OptOps::PADTO, 0, 32}, {codegen::OptOps::LOCAL, 0, 32}},
        std::vector<codegen::Opt>{{codegen::OptOps::PADTO, 0, 64},
                                  {codegen::OptOps::UPCAST, 0, 4},
                                  {codegen::OptOps::LOCAL, 0, 16}},
        std::nullopt};
    for (const auto& o : variants) {
      // The output buffer is padded with a sentinel that must survive past n (masked stores).
      std::vector<float> out(n + 64, -7.0f);
      Run r = run(dev, axpy_ast(n), o, {to_bytes(out), to_bytes(x), to_bytes(y)});
      std::vector<float> got = floats(r.bufs[0]);
      size_t bad = 0;
      for (int64_t i = 0; i < n + 64; i++) bad += got[i] != (i < n ? want[i] : -7.0f);
      BOOST_TEST(bad == 0u,
                 r.prog.name << " " << codegen::opts_str(r.prog.applied_opts) << ": " << bad << " wrong");
    }
  }
}

// BEAM=2 with the workgroup actions on a 64 x 64 matmul and 8 rows of 1000 (no amount but PADTO's divides
// 1000 by 16 or 32): the winners give the host's values.
inline void check_beam(tg::runtime::Device& dev) {
  env::Scoped no_cache(env::CACHELEVEL, 0);
  const int64_t n = 64;
  std::vector<float> a(n * n), b(n * n);
  for (int64_t i = 0; i < n * n; i++)
    a[i] = static_cast<float>((i * 7) % 13) - 6.0f, b[i] = static_cast<float>((i * 5) % 9) - 4.0f;
  std::vector<float> want = host_matmul(a, b, n);  // small ints: exact
  std::vector<codegen::Opt> opts =
      runtime::beam_search(dev, matmul_ast(n), 2, {{n * n * 4, n * n * 4, n * n * 4}, {}});
  Run r = run(dev, matmul_ast(n), opts, {Bytes(n * n * 4), to_bytes(a), to_bytes(b)});
  BOOST_TEST((floats(r.bufs[0]) == want), codegen::opts_str(opts));

  const int64_t rows = 8, cols = 1000;
  UOpRef i = UOp::range(cidx(rows), 0), c = UOp::range(cidx(cols), 1, AxisType::REDUCE);
  UOpRef ast =
      UOp::sink({UOp::make(Ops::END, dtypes::void_,
                           {st(gbuf(0, rows), i, red(ld(gbuf(1, rows * cols), i * cidx(cols) + c), c)), i})});
  std::vector<float> x(rows * cols), sums(rows, 0.0f);
  for (int64_t k = 0; k < rows * cols; k++) sums[k / cols] += (x[k] = static_cast<float>(k % 11) - 5.0f);
  opts = runtime::beam_search(dev, ast, 2, {{rows * 4, rows * cols * 4}, {}});
  r = run(dev, ast, opts, {Bytes(rows * 4), to_bytes(x)});
  BOOST_TEST((floats(r.bufs[0]) == sums), codegen::opts_str(opts));
}

}  // namespace tg::test::workgroup
