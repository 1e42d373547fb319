#pragma once
// Building kernel ASTs by hand (docs/ir-stages.md stage 2) and running lowered kernels on INTERP.
#include <cstring>
#include <memory>
#include <ostream>
#include <span>
#include <vector>

#include "codegen/lower.hpp"
#include "runtime/interp/interp.hpp"
#include "tg/sdk/device.hpp"
#include "uop/uop.hpp"

namespace tg {  // printing for BOOST_TEST
inline std::ostream& operator<<(std::ostream& o, Ops op) { return o << op_name(op); }
inline std::ostream& operator<<(std::ostream& o, Scalar s) { return o << DType(s); }
}  // namespace tg

namespace tgtest {

using namespace tg;

inline UOpRef idx(int64_t v) { return UOp::const_(dtypes::index, ConstValue{v}); }
inline UOpRef glob(int64_t i, DType d, int64_t n) {
  return UOp::make(Ops::DEFINE_GLOBAL, d.ptr(AddrSpace::GLOBAL, n), {}, i);
}
inline UOpRef range(int64_t n, int64_t id, AxisType t = AxisType::LOOP) { return UOp::range(idx(n), id, t); }
inline UOpRef index(const UOpRef& buf, const UOpRef& i) {
  return UOp::make(Ops::INDEX, buf->dtype(), {buf, i});
}
inline UOpRef index(const UOpRef& buf, const UOpRef& i, const UOpRef& valid) {
  return UOp::make(Ops::INDEX, buf->dtype(), {buf, i, valid});
}
inline UOpRef load(const UOpRef& buf, const UOpRef& i) {
  return UOp::make(Ops::LOAD, buf->dtype().base(), {index(buf, i)});
}
inline UOpRef load(const UOpRef& buf, const UOpRef& i, const UOpRef& valid) {
  return UOp::make(Ops::LOAD, buf->dtype().base(), {index(buf, i, valid)});
}
inline UOpRef store(const UOpRef& buf, const UOpRef& i, const UOpRef& v) {
  return UOp::make(Ops::STORE, dtypes::void_, {index(buf, i), v});
}
inline UOpRef end(const UOpRef& x, std::vector<UOpRef> ranges) {
  ranges.insert(ranges.begin(), x);
  return UOp::make(Ops::END, dtypes::void_, std::move(ranges));
}
inline UOpRef reduce(const UOpRef& v, std::vector<UOpRef> ranges, Ops op) {
  DType d = v->dtype();
  ranges.insert(ranges.begin(), v);
  return UOp::make(Ops::REDUCE, d, std::move(ranges), op);
}

// out[4r + k] = 2 x[4r + k] + x[4r + 3 - k] + r for r < 4, k < 4, with float4 loads, stores and lanes.
inline UOpRef vector_ast() {
  DType f4 = dtypes::float32.vec(4);
  UOpRef r = range(4, 0);
  UOpRef base = r * idx(4);
  UOpRef v = UOp::make(Ops::LOAD, f4, {index(glob(1, dtypes::float32, 16), base)});
  std::vector<UOpRef> rev, rs;
  for (int64_t k = 3; k >= 0; k--) rev.push_back(UOp::make(Ops::GEP, dtypes::float32, {v}, IntVec{k}));
  for (int k = 0; k < 4; k++) rs.push_back(r);
  UOpRef w = v * UOp::const_(f4, 2.0) + UOp::make(Ops::VECTORIZE, f4, rev) +
             UOp::make(Ops::VECTORIZE, dtypes::index.vec(4), rs)->cast(f4);
  return UOp::sink(
      {end(UOp::make(Ops::STORE, dtypes::void_, {index(glob(0, dtypes::float32, 16), base), w}), {r})});
}

template <typename T>
std::vector<std::byte> bytes(const std::vector<T>& v) {
  std::vector<std::byte> b(v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}
template <typename T>
std::vector<T> values(const std::vector<std::byte>& b) {
  std::vector<T> v(b.size() / sizeof(T));
  if (!v.empty()) std::memcpy(v.data(), b.data(), v.size() * sizeof(T));
  return v;
}

inline sdk::Device& interp() {
  static std::unique_ptr<sdk::Device> d(runtime::interp::create_interp_device());
  return *d;
}

// Copies bufs in, runs the program on INTERP (render -> compile -> load -> launch), copies them back.
inline void run_interp(const codegen::LinearProgram& p, std::vector<std::vector<std::byte>>& bufs,
                       std::span<const int64_t> vals = {}) {
  sdk::Device& d = interp();
  sdk::Blob src, bin;
  auto view = p.view();
  auto check = [](const sdk::Status& s) {
    if (!s.ok()) throw std::runtime_error(std::string(s.message()));
  };
  check(d.renderer().render(p.name, view, src));
  check(d.compiler().compile(src.text(), bin));
  sdk::Program* raw = nullptr;
  check(d.load(p.name, bin.bytes(), &raw));
  std::unique_ptr<sdk::Program> prog(raw);
  struct Handles {  // given back however the launch ends (some tests expect it to throw)
    sdk::Device& d;
    std::vector<std::vector<std::byte>>& bufs;
    std::vector<sdk::Handle> hs;
    ~Handles() {
      for (size_t i = 0; i < hs.size(); i++) d.allocator().free(hs[i], bufs[i].size(), {});
    }
  } owned{d, bufs, {}};
  std::vector<sdk::Handle>& hs = owned.hs;
  for (auto& b : bufs) {
    sdk::Handle h = nullptr;
    check(d.allocator().alloc(b.size(), {}, &h));
    hs.push_back(h);
    check(d.allocator().copyin(h, b));
  }
  check(prog->launch(hs, vals, p.launch_dims(vals), true, nullptr));
  for (size_t i = 0; i < bufs.size(); i++) check(d.allocator().copyout(bufs[i], hs[i]));
}

// INTERP's caps without some native ops, so codegen has to decompose them.
inline sdk::RendererCaps caps_without(std::initializer_list<Ops> ops) {
  sdk::RendererCaps c = runtime::interp::interp_caps();
  for (Ops o : ops) c.native_ops[static_cast<int>(o) / 64] &= ~(uint64_t{1} << (static_cast<int>(o) % 64));
  return c;
}

// A CPU-style target: plain loops, no launch indices.
inline sdk::RendererCaps cpu_caps() {
  sdk::RendererCaps c = runtime::interp::interp_caps();
  c.has_local = c.has_shared = false, c.has_threads = true;
  return c;
}

// Small integers as floats: every sum is exact, so the hand-computed reference is exact too.
inline std::vector<float> ints(size_t n, int mod, int mul = 7) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; i++) v[i] = static_cast<float>(static_cast<int>(i * mul % mod) - mod / 2);
  return v;
}

// c[i, j] = sum_k a[i, k] * b[k, j] for an (m, k) x (k, n) product.
inline UOpRef matmul_ast(int64_t m, int64_t n, int64_t k) {
  UOpRef i = range(m, 0), j = range(n, 1), r = range(k, 2, AxisType::REDUCE);
  UOpRef a = glob(1, dtypes::float32, m * k), b = glob(2, dtypes::float32, k * n);
  UOpRef v = reduce(load(a, i * idx(k) + r) * load(b, r * idx(n) + j), {r}, Ops::ADD);
  return UOp::sink({end(store(glob(0, dtypes::float32, m * n), i * idx(n) + j, v), {i, j})});
}
inline std::vector<float> matmul_ref(const std::vector<float>& a, const std::vector<float>& b, int64_t m,
                                     int64_t n, int64_t k) {
  std::vector<float> c(static_cast<size_t>(m * n), 0.0f);
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++)
      for (int64_t r = 0; r < k; r++) c[i * n + j] += a[i * k + r] * b[r * n + j];
  return c;
}

}  // namespace tgtest
