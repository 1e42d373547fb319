// Conformance area "renderer": every claim in the renderer caps is tried. Each declared dtype survives a copy
// through a kernel bit for bit; kernels at the declared buffer and int-argument limits run and give the right
// values; launches at the declared global and local sizes succeed. What the caps do not declare is
// unsupported.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <array>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "kernels.hpp"
#include "op_check.hpp"

namespace {

using namespace tg;
using namespace tg::conformance;
using tg::sdk::Handle;
// op_check.hpp's helpers (`ops` alone also names ops.cpp's test suite in a unity build).
namespace op_check = tg::conformance::ops;

// Lowered without optimizations: one plain loop that every work item runs whole, so any launch size gives
// the same result (the launch-limit tests rely on that).
Loaded load_plain(const UOpRef& ast, const std::string& name) {
  Loaded l{Rendered{codegen::lower_kernel(
                        ast, device().caps(),
                        codegen::LowerOptions{.name = name, .opts = std::vector<codegen::Opt>{}}),
                    ""},
           nullptr};
  sdk::Blob src;
  runtime::check(device().renderer().render(l.k.prog.name, l.k.prog.view(), src), "render", l.k.prog.name);
  l.k.source = std::string(src.text());
  sdk::Blob bin = device().compile(l.k.source);
  stop_if_compile_only();
  l.program = device().load(l.k.prog.name, bin.bytes());
  return l;
}

std::string launch(Loaded& l, const std::vector<Handle>& bufs, const std::vector<int64_t>& vals,
                   const sdk::LaunchDims& dims) {
  sdk::Status s = l.program->launch(bufs, vals, dims, true, nullptr);
  return s.ok() ? "" : fmt::format("launch of {}: {}", l.k.prog.name, s.message());
}

// out[i] = in[i] for i < n.
UOpRef copy_ast(DType d, int64_t n) {
  UOpRef r = UOp::range(idx(n), 0);
  return UOp::sink({end(store(glob(0, d, n), r, load(glob(1, d, n), r)), r)});
}

// out[i] = in_1[i] + ... + in_k[i] (int32), buffer 0 the output.
UOpRef sum_buffers_ast(int k, int64_t n) {
  UOpRef r = UOp::range(idx(n), 0);
  UOpRef acc = load(glob(1, dtypes::int32, n), r);
  for (int b = 2; b <= k; b++) acc = acc + load(glob(b, dtypes::int32, n), r);
  return UOp::sink({end(store(glob(0, dtypes::int32, n), r, acc), r)});
}

// out[i] = in[i] + v0 + ... + v_{k-1} (int32 variables in [0, 1000]).
UOpRef sum_vars_ast(int k, int64_t n) {
  UOpRef r = UOp::range(idx(n), 0);
  UOpRef acc = load(glob(1, dtypes::int32, n), r);
  for (int v = 0; v < k; v++)
    acc = acc + UOp::variable("v" + std::to_string(v), 0, 1000)->cast(dtypes::int32);
  return UOp::sink({end(store(glob(0, dtypes::int32, n), r, acc), r)});
}

// The value each variable gets: v_j = 3j + 1.
std::vector<int64_t> var_values(const codegen::LinearProgram& p) {
  std::vector<int64_t> vals;
  for (const UOpRef& v : p.vars) vals.push_back(3 * std::stoll(v->arg_as<VarArg>().name.substr(1)) + 1);
  return vals;
}

std::vector<int32_t> iota(int64_t n, int32_t start) {
  std::vector<int32_t> v(n);
  for (int64_t i = 0; i < n; i++) v[i] = start + static_cast<int32_t>(i);
  return v;
}

// out[f] = in[f] + 1 over a 3-d shape, f the row-major flat index.
UOpRef add_one_3d_ast(const std::array<int64_t, 3>& s) {
  UOpRef r0 = UOp::range(idx(s[0]), 0), r1 = UOp::range(idx(s[1]), 1), r2 = UOp::range(idx(s[2]), 2);
  int64_t n = s[0] * s[1] * s[2];
  UOpRef f = (r0 * idx(s[1]) + r1) * idx(s[2]) + r2;
  UOpRef st = store(glob(0, dtypes::float32, n), f, load(glob(1, dtypes::float32, n), f) + 1.0);
  return UOp::sink({end(end(end(st, r2), r1), r0)});
}

// Lowers a kernel, launches it with dims(own launch dims) and checks out = in + 1 over every element.
void launch_add_one(const std::string& item, const std::array<int64_t, 3>& shape,
                    const std::function<void(sdk::LaunchDims&)>& change) {
  if (const std::string* why = manifest_unsupported(item)) return record_unsupported(item, *why);
  int64_t n = shape[0] * shape[1] * shape[2];
  std::string err;
  sdk::LaunchDims dims;
  try {
    Loaded l = load_plain(add_one_3d_ast(shape), "conf_dims");
    dims = l.k.prog.launch_dims({});
    change(dims);
    RawBuffer out(n * 4), in(n * 4);
    std::vector<float> x(n);
    for (int64_t i = 0; i < n; i++) x[i] = static_cast<float>(i % 1000);
    in.write(bytes_of(x));
    err = launch(l, {out.handle(), in.handle()}, {}, dims);
    std::vector<float> got = err.empty() ? values_of<float>(out.read()) : std::vector<float>{};
    for (int64_t i = 0; i < static_cast<int64_t>(got.size()) && err.empty(); i++)
      if (got[i] != x[i] + 1)
        err = fmt::format("out = in + 1: element {} is {}, expected {}", i, got[i], x[i] + 1);
  } catch (const CompiledOnly&) {
    err.clear();
  } catch (const std::exception& e) {
    err = e.what();
  }
  record(item, err.empty(),
         fmt::format("{} elements, global ({},{},{}) local ({},{},{}): {}", n, dims.global[0], dims.global[1],
                     dims.global[2], dims.local[0], dims.local[1], dims.local[2], err));
}

// The shape (one axis G, the others 2) whose lowered kernel launches G work items along `axis`, if any.
std::optional<std::array<int64_t, 3>> shape_launching(int axis, uint32_t g) {
  for (int p = 0; p < 3; p++) {
    std::array<int64_t, 3> s{2, 2, 2};
    s[p] = g;
    codegen::LinearProgram prog = codegen::lower_kernel(
        add_one_3d_ast(s), device().caps(), codegen::LowerOptions{.opts = std::vector<codegen::Opt>{}});
    if (prog.launch_dims({}).global[axis] == g) return s;
  }
  return std::nullopt;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(renderer)

// Values of every kind (NaN, infinities, -0, edges) copied through a kernel come back bit for bit.
BOOST_AUTO_TEST_CASE(dtype_round_trip) {
  constexpr int64_t n = 257;
  for (DType d : dtypes::all_scalars()) {
    std::string item = op_check::name(d);
    if (!op_check::declared(d)) {
      record_unsupported(item, "the caps do not declare it");
      continue;
    }
    if (const std::string* why = manifest_unsupported(item)) {
      record_unsupported(item, *why);
      continue;
    }
    std::string err;
    try {
      // The host bytes of the values in this dtype, converted by the core (no kernel involved).
      std::vector<std::byte> bytes =
          op_check::upload(op_check::make_values(d, {n}, op_check::Kind::any, 3), "INTERP").to_bytes();
      Loaded l = load_plain(copy_ast(d, n), "conf_round_trip");
      RawBuffer out(bytes.size()), in(bytes.size());
      in.write(bytes);
      err = launch(l, {out.handle(), in.handle()}, {}, l.k.prog.launch_dims({}));
      std::vector<std::byte> got = err.empty() ? out.read() : bytes;
      size_t isz = d.scalar_itemsize();
      for (size_t k = 0; k < got.size() && err.empty(); k += isz)
        if (std::memcmp(&got[k], &bytes[k], isz) != 0) {
          uint64_t g = 0, w = 0;
          std::memcpy(&g, &got[k], isz), std::memcpy(&w, &bytes[k], isz);
          err = fmt::format("element {}: bits {:#x} came back as {:#x}", k / isz, w, g);
        }
    } catch (const CompiledOnly&) {
      err.clear();
    } catch (const std::exception& e) {
      err = e.what();
    }
    record(item, err.empty(), fmt::format("copy of {} {} values: {}", n, d.name(), err));
  }
}

// One kernel reading max_buffers - 1 buffers and writing one. 0 means unlimited: then 32 buffers are tried.
BOOST_AUTO_TEST_CASE(max_buffers) {
  uint32_t declared = device().caps().max_buffers;
  if (declared == 0)
    record_unsupported("declared_limit", "max_buffers is 0 (unlimited); 32 buffers are tried");
  int k = declared == 0 ? 32 : static_cast<int>(std::min<uint32_t>(declared, 256));
  std::string item = fmt::format("{}_buffers", k);
  if (const std::string* why = manifest_unsupported(item)) return record_unsupported(item, *why);
  if (!op_check::declared(dtypes::int32)) return record_unsupported(item, "the caps do not declare int");
  constexpr int64_t n = 7;
  std::string err;
  try {
    Loaded l = load_plain(sum_buffers_ast(k - 1, n), "conf_max_buffers");
    std::vector<std::unique_ptr<RawBuffer>> bufs;
    std::vector<Handle> handles;
    for (int b = 0; b < k; b++) {
      bufs.push_back(std::make_unique<RawBuffer>(n * 4));
      if (b > 0) bufs.back()->write(bytes_of(iota(n, 100 * b)));  // in_b[i] = 100 b + i
      handles.push_back(bufs.back()->handle());
    }
    err = launch(l, handles, {}, l.k.prog.launch_dims({}));
    if (err.empty()) {
      std::vector<int32_t> got = values_of<int32_t>(bufs[0]->read());
      for (int64_t i = 0; i < n && err.empty(); i++) {
        int32_t want = 100 * (k - 1) * k / 2 + (k - 1) * static_cast<int32_t>(i);
        if (got[i] != want) err = fmt::format("out[{}] = {}, expected {}", i, got[i], want);
      }
    }
  } catch (const CompiledOnly&) {
    err.clear();
  } catch (const std::exception& e) {
    err = e.what();
  }
  record(item, err.empty(), fmt::format("sum of {} input buffers into one: {}", k - 1, err));
}

// One kernel with max_int_args integer arguments. 0 means unlimited: then 16 are tried.
BOOST_AUTO_TEST_CASE(max_int_args) {
  uint32_t declared = device().caps().max_int_args;
  if (declared == 0)
    record_unsupported("declared_limit", "max_int_args is 0 (unlimited); 16 arguments are tried");
  int k = declared == 0 ? 16 : static_cast<int>(std::min<uint32_t>(declared, 256));
  std::string item = fmt::format("{}_int_args", k);
  if (const std::string* why = manifest_unsupported(item)) return record_unsupported(item, *why);
  constexpr int64_t n = 7;
  std::string err;
  try {
    Loaded l = load_plain(sum_vars_ast(k, n), "conf_max_int_args");
    std::vector<int64_t> vals = var_values(l.k.prog);
    if (static_cast<int>(vals.size()) != k)
      throw std::runtime_error(fmt::format("{} variables after lowering", vals.size()));
    RawBuffer out(n * 4), in(n * 4);
    in.write(bytes_of(iota(n, 0)));
    err = launch(l, {out.handle(), in.handle()}, vals, l.k.prog.launch_dims(vals));
    std::vector<int32_t> got = err.empty() ? values_of<int32_t>(out.read()) : std::vector<int32_t>{};
    for (int64_t i = 0; i < static_cast<int64_t>(got.size()) && err.empty(); i++) {
      int32_t want = static_cast<int32_t>(i) + 3 * k * (k - 1) / 2 + k;  // sum of 3j + 1
      if (got[i] != want) err = fmt::format("out[{}] = {}, expected {}", i, got[i], want);
    }
  } catch (const CompiledOnly&) {
    err.clear();
  } catch (const std::exception& e) {
    err = e.what();
  }
  record(item, err.empty(), fmt::format("out = in + the sum of {} int arguments: {}", k, err));
}

// Launch sizes at the declared global_max per axis, capped at 2^16 so a device claiming 2^32 stays quick.
// Without has_local a kernel lowered without opts is one plain loop that every task runs whole, so it is
// launched at the limit as is (same result). With has_local the code generator maps ranges to global axes:
// a kernel whose lowering launches exactly the limit along the axis is run.
BOOST_AUTO_TEST_CASE(global_limits) {
  const sdk::RendererCaps& c = device().caps();
  for (int axis = 0; axis < 3; axis++) {
    std::string item = fmt::format("global_{}", axis);
    uint32_t g = std::min<uint32_t>(c.global_max[axis], 1u << 16);
    if (g <= 1) {
      record_unsupported(item, fmt::format("global_max[{}] is {}", axis, c.global_max[axis]));
      continue;
    }
    if (!c.has_local) {
      launch_add_one(item, {1, 1, 5}, [&](sdk::LaunchDims& d) { d.global[axis] = g; });
      continue;
    }
    std::optional<std::array<int64_t, 3>> shape = shape_launching(axis, g);
    if (!shape) {
      record_unsupported(item,
                         fmt::format("the code generator launches no kernel with {} along axis {}", g, axis));
      continue;
    }
    launch_add_one(item, *shape, [](sdk::LaunchDims&) {});
  }
}

// Workgroups at local_max per axis and at max_local_size threads (unsupported without has_local). The
// kernel uses no local ids, so every thread of a workgroup does the same work and the result is unchanged.
BOOST_AUTO_TEST_CASE(local_limits) {
  const sdk::RendererCaps& c = device().caps();
  std::vector<std::pair<std::string, std::array<uint32_t, 3>>> cases;
  for (int axis = 0; axis < 3; axis++) {
    std::array<uint32_t, 3> l{1, 1, 1};
    l[axis] = std::max<uint32_t>(1, std::min(c.local_max[axis], c.max_local_size));
    cases.emplace_back(fmt::format("local_{}", axis), l);
  }
  std::array<uint32_t, 3> full{1, 1, 1};
  uint32_t left = std::max<uint32_t>(1, c.max_local_size);
  for (int axis = 0; axis < 3; axis++) {
    full[axis] = std::max<uint32_t>(1, std::min(c.local_max[axis], left));
    left /= full[axis];
  }
  cases.emplace_back("max_local_size", full);
  for (const auto& [item, local] : cases) {
    if (!c.has_local) {
      record_unsupported(item, "has_local is false");
      continue;
    }
    std::array<uint32_t, 3> l = local;  // structured bindings cannot be captured in C++20 by clang 14
    launch_add_one(item, {1, 3, 5}, [l](sdk::LaunchDims& d) { d.local = l; });
  }
}

// A kernel with a shared float32 array of max_shared_bytes (capped at 1 MiB): local[t(i)] = in[i], BARRIER,
// out[i] = local[t(i)] + 1.
BOOST_AUTO_TEST_CASE(shared_memory) {
  const sdk::RendererCaps& c = device().caps();
  if (!c.has_shared) return record_unsupported("max_shared_bytes", "has_shared is false");
  if (const std::string* why = manifest_unsupported("max_shared_bytes"))
    return record_unsupported("max_shared_bytes", *why);
  // The whole array is declared; 64 elements spread over it (the last one at its end) are written and read,
  // as every work item may run the fill loop.
  const int64_t m = std::min<int64_t>(c.max_shared_bytes, 1 << 20) / 4, s = std::min<int64_t>(m, 64),
                stride = m / s;
  std::string err;
  try {
    UOpRef loc = UOp::make(Ops::DEFINE_LOCAL, dtypes::float32.ptr(AddrSpace::LOCAL, m), {}, int64_t{0});
    UOpRef r0 = UOp::range(idx(s), 0), r1 = UOp::range(idx(s), 1);
    auto spread = [&](const UOpRef& r) { return r * idx(stride) + idx(stride - 1); };
    UOpRef fill = end(store(loc, spread(r0), load(glob(1, dtypes::float32, s), r0)), r0);
    UOpRef after = UOp::make(Ops::AFTER, loc->dtype(), {loc, UOp::make(Ops::BARRIER, dtypes::void_, {fill})});
    UOpRef ast = UOp::sink({end(store(glob(0, dtypes::float32, s), r1, load(after, spread(r1)) + 1.0), r1)});
    Loaded l = load_plain(ast, "conf_shared");
    RawBuffer out(s * 4), in(s * 4);
    std::vector<float> x(s);
    for (int64_t i = 0; i < s; i++) x[i] = static_cast<float>(i * 3 + 1);
    in.write(bytes_of(x));
    err = launch(l, {out.handle(), in.handle()}, {}, l.k.prog.launch_dims({}));
    std::vector<float> got = err.empty() ? values_of<float>(out.read()) : std::vector<float>{};
    for (int64_t i = 0; i < static_cast<int64_t>(got.size()) && err.empty(); i++)
      if (got[i] != x[i] + 1) err = fmt::format("element {} is {}, expected {}", i, got[i], x[i] + 1);
  } catch (const CompiledOnly&) {
    err.clear();
  } catch (const std::exception& e) {
    err = e.what();
  }
  record("max_shared_bytes", err.empty(), fmt::format("{} bytes of shared memory: {}", m * 4, err));
}

// Each declared tensor core: a (2m x 2k) by (2k x 2n) product of small integers in its input dtype, summed in
// its accumulator dtype through the TC opt (WMMA), gives the exact sums. The caps' lane layout is what is
// tried: a wrong bit makes wrong sums. Then a (4m x 2k) by (2k x 4n) product with 2 x 2 tiles per warp and
// 2 x 2 warps per workgroup (the opts the heuristic adds after TC on big matmuls).
BOOST_AUTO_TEST_CASE(tensor_cores) {
  const sdk::RendererCaps& c = device().caps();
  std::span<const sdk::TensorCore> tcs = sdk::tensor_cores(c);
  if (tcs.empty()) return record_unsupported("tensor_cores", "the caps declare none");
  for (size_t t = 0; t < tcs.size(); t++)
    for (bool tiled : {false, true}) {
      std::string item = fmt::format("tensor_core_{}{}", t, tiled ? "_tiled" : "");
      if (const std::string* why = manifest_unsupported(item)) {
        record_unsupported(item, *why);
        continue;
      }
      const sdk::TensorCore& tc = tcs[t];
      DType in = DType(static_cast<Scalar>(tc.in)), acc = DType(static_cast<Scalar>(tc.acc));
      const int64_t m = (tiled ? 4 : 2) * tc.m, n = (tiled ? 4 : 2) * tc.n, k = 2 * tc.k;
      std::vector<codegen::Opt> opts{{codegen::OptOps::TC, 0, static_cast<int64_t>(t)}};
      if (tiled)
        opts.insert(opts.end(), {{codegen::OptOps::UPCAST, 1, 2},
                                 {codegen::OptOps::UPCAST, 0, 2},
                                 {codegen::OptOps::LOCAL, 1, 2},
                                 {codegen::OptOps::LOCAL, 0, 2}});
      std::string err;
      try {
        UOpRef i = UOp::range(idx(m), 0), j = UOp::range(idx(n), 1),
               r = UOp::range(idx(k), 2, AxisType::REDUCE);
        UOpRef a = load(glob(1, in, m * k), i * idx(k) + r), b = load(glob(2, in, k * n), r * idx(n) + j);
        if (in != acc) a = a->cast(acc), b = b->cast(acc);
        UOpRef sum = UOp::make(Ops::REDUCE, acc, {a * b, r}, Ops::ADD);
        UOpRef st = store(glob(0, acc, m * n), i * idx(n) + j, sum);
        UOpRef ast = UOp::sink({UOp::make(Ops::END, dtypes::void_, {st, i, j})});
        codegen::LinearProgram p =
            codegen::lower_kernel(ast, c, codegen::LowerOptions{.name = "conf_tc", .opts = opts});
        Loaded l{Rendered{p, ""}, nullptr};
        sdk::Blob src;
        runtime::check(device().renderer().render(p.name, p.view(), src), "render", p.name);
        l.k.source = std::string(src.text());
        sdk::Blob bin = device().compile(l.k.source);
        if (err = check_tc_disassembly(bin.bytes()); !err.empty()) throw std::runtime_error(err);
        stop_if_compile_only();
        l.program = device().load(p.name, bin.bytes());
        std::vector<float> av(static_cast<size_t>(m * k)), bv(static_cast<size_t>(k * n)),
            want(static_cast<size_t>(m * n));
        for (size_t q = 0; q < av.size(); q++) av[q] = static_cast<float>((q * 7) % 5);
        for (size_t q = 0; q < bv.size(); q++) bv[q] = static_cast<float>((q * 3) % 7);
        for (int64_t y = 0; y < m; y++)
          for (int64_t x = 0; x < n; x++)
            for (int64_t z = 0; z < k; z++) want[y * n + x] += av[y * k + z] * bv[z * n + x];
        std::vector<std::byte> ab = Tensor(av, {m, k}, in, "INTERP").to_bytes(),
                               bb = Tensor(bv, {k, n}, in, "INTERP").to_bytes(),
                               wb = Tensor(want, {m, n}, acc, "INTERP").to_bytes();
        RawBuffer out(wb.size()), ba(ab.size()), bb2(bb.size());
        ba.write(ab), bb2.write(bb);
        err = launch(l, {out.handle(), ba.handle(), bb2.handle()}, {}, p.launch_dims({}));
        if (err.empty() && out.read() != wb) err = "the sums differ from the exact ones";
      } catch (const CompiledOnly&) {
        err.clear();
      } catch (const std::exception& e) {
        err = e.what();
      }
      record(item, err.empty(),
             fmt::format("{} x {} x {} tiles of {} into {}, {} lanes{}: {}", tc.m, tc.n, tc.k, in.name(),
                         acc.name(), tc.threads, tiled ? ", 2 x 2 per warp, 2 x 2 warps" : "", err));
    }
}

BOOST_AUTO_TEST_SUITE_END()
