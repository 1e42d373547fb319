#pragma once
// Shared by the ops and smoke areas: deterministic host inputs, one tensor program run on the device under
// test and on INTERP from the same values, and an element-by-element comparison that names the first
// mismatch.
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "conformance.hpp"
#include "kernels.hpp"
#include "tensor/tensor.hpp"
#include "tg/sdk/renderer.hpp"

namespace tg::conformance::ops {

// What values an input holds. any: floats start with NaN, +-Inf, +-0 and halves, ints with their edges.
enum class Kind {
  any,
  math,      // floats in [-8, 8] after NaN, +-Inf, +-0; ints in [-8, 8]
  positive,  // floats in [0.1, 8], ints in [1, 9]
  nonzero,   // ints +-[1, 9] (divisors); floats like any
  no_min,    // like any, but ints never hold their minimum (INT_MIN / -1 traps in C)
  shift,     // ints in [0, bits - 1]
  near_one,  // floats in [0.5, 1.5], ints in [-2, 2] (products of many terms)
  cast_to,   // floats inside the range of the cast target (a C cast out of range is undefined)
  plain,     // floats in [-2, 2] without specials, ints like math (smoke tests: nets, gemm)
};

// Host values for one input: the dtype, its shape and the numbers (one vector filled, by dtype).
struct HostValues {
  DType dtype;
  Shape shape;
  std::vector<double> f;    // floats
  std::vector<int64_t> i;   // signed ints and bool
  std::vector<uint64_t> u;  // unsigned ints
};

// A deterministic generator (splitmix64): the same values on every platform and standard library.
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t next() {
    uint64_t z = (s_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform(double lo, double hi) {
    return lo + (hi - lo) * static_cast<double>(next() >> 11) * 0x1p-53;
  }
  int64_t integer(int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(next() % static_cast<uint64_t>(hi - lo + 1));
  }

 private:
  uint64_t s_;
};

// The dtype as item ids spell it: "int8", "float16", "bfloat16", "fp8e4m3".
inline std::string name(DType d) {
  switch (d.scalar()) {
    case Scalar::BOOL:
      return "bool";
    case Scalar::INT8:
      return "int8";
    case Scalar::UINT8:
      return "uint8";
    case Scalar::INT16:
      return "int16";
    case Scalar::UINT16:
      return "uint16";
    case Scalar::INT32:
      return "int32";
    case Scalar::UINT32:
      return "uint32";
    case Scalar::INT64:
      return "int64";
    case Scalar::UINT64:
      return "uint64";
    case Scalar::FLOAT16:
      return "float16";
    case Scalar::BFLOAT16:
      return "bfloat16";
    case Scalar::FLOAT32:
      return "float32";
    case Scalar::FLOAT64:
      return "float64";
    case Scalar::FP8E4M3:
      return "fp8e4m3";
    case Scalar::FP8E5M2:
      return "fp8e5m2";
    default:
      return std::string(d.name());
  }
}

inline int64_t numel_of(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

// `target` is the cast target for Kind::cast_to.
inline HostValues make_values(DType d, Shape shape, Kind kind, uint64_t seed,
                              DType target = dtypes::float32) {
  HostValues h{d, shape, {}, {}, {}};
  Rng rng(seed * 0x100000001B3ull + static_cast<uint64_t>(d.scalar()) * 131 + static_cast<uint64_t>(kind));
  const int64_t n = numel_of(shape);
  if (d.is_float()) {
    const double inf = std::numeric_limits<double>::infinity(),
                 nan = std::numeric_limits<double>::quiet_NaN();
    std::vector<double> special = {nan, inf,  -inf, 0.0,  -0.0, 0.5,     -0.5,
                                   1.5, -2.5, 2.5,  1e-3, -7.0, 65504.0, 3e5};
    if (kind == Kind::math) special = {nan, inf, -inf, 0.0, -0.0};
    if (kind == Kind::positive || kind == Kind::near_one || kind == Kind::cast_to || kind == Kind::plain)
      special.clear();
    double lo = -6, hi = 6;
    if (kind == Kind::math) lo = -8, hi = 8;
    if (kind == Kind::positive) lo = 0.1, hi = 8;
    if (kind == Kind::near_one) lo = 0.5, hi = 1.5;
    if (kind == Kind::plain) lo = -2, hi = 2;
    if (kind == Kind::cast_to && target.is_int())
      lo = std::max(target.min(), -100.0), hi = std::min(target.max(), 100.0);
    if (kind == Kind::cast_to && target.is_bool()) special = {nan, inf, -0.0, 0.0};
    for (int64_t k = 0; k < n; k++) {
      double v = k < static_cast<int64_t>(special.size()) ? special[k] : rng.uniform(lo, hi);
      h.f.push_back(kind == Kind::any && k % 5 == 4 ? std::round(v * 4) / 4 : v);  // some exact quarters
    }
    return h;
  }
  if (d.is_bool()) {
    for (int64_t k = 0; k < n; k++) h.i.push_back(static_cast<int64_t>(rng.next() >> 63));
    return h;
  }
  const int bits = static_cast<int>(d.scalar_itemsize() * 8);
  const bool sgn = !d.is_unsigned();
  const int64_t mn = d.min_int();
  const uint64_t mx = d.max_uint();
  std::vector<int64_t> edges;
  if (kind == Kind::any || kind == Kind::no_min) {
    edges = {0, 1, static_cast<int64_t>(mx), static_cast<int64_t>(mx - 1)};
    if (sgn) edges.insert(edges.end(), {-1, kind == Kind::any ? mn : mn + 1, mn + 1});
  }
  for (int64_t k = 0; k < n; k++) {
    int64_t v;
    if (k < static_cast<int64_t>(edges.size()))
      v = edges[k];
    else if (kind == Kind::shift)
      v = rng.integer(0, bits - 1);
    else if (kind == Kind::positive)
      v = rng.integer(1, 9);
    else if (kind == Kind::nonzero)
      v = rng.integer(1, 9) * (sgn && rng.next() % 2 ? -1 : 1);
    else if (kind == Kind::math || kind == Kind::near_one || kind == Kind::plain)
      v = sgn ? rng.integer(kind == Kind::math ? -8 : -2, kind == Kind::math ? 8 : 2) : rng.integer(0, 8);
    else if (bits <= 16)
      v = sgn ? rng.integer(mn, static_cast<int64_t>(mx)) : rng.integer(0, static_cast<int64_t>(mx));
    else
      v = sgn ? rng.integer(-100000, 100000) : rng.integer(0, 200000);
    if (sgn)
      h.i.push_back(v);
    else
      h.u.push_back(static_cast<uint64_t>(v));
  }
  return h;
}

inline Tensor upload(const HostValues& h, std::string_view device) {
  Shape s = h.shape.empty() ? Shape{1} : h.shape;
  Tensor t = !h.f.empty()   ? Tensor(h.f, s, h.dtype, device)
             : !h.u.empty() ? Tensor(h.u, s, h.dtype, device)
                            : Tensor(h.i, s, h.dtype, device);
  return h.shape.empty() ? t.reshape({}) : t;
}

// |got - want| <= atol + rtol |want| for floats; NaN matches NaN, infinities match in sign, and with
// signed_zero a zero matches only a zero of the same sign. Ints and bools must be equal.
struct Tol {
  double rtol = 0, atol = 0;
  bool signed_zero = false;
};

// The first mismatch between got (device under test) and want (INTERP), or "" when they agree.
inline std::string compare(const Tensor& got, const Tensor& want, Tol tol) {
  if (got.dtype() != want.dtype())
    return fmt::format("dtype {} vs {} on INTERP", got.dtype().name(), want.dtype().name());
  if (got.shape() != want.shape())
    return fmt::format("shape {} vs {} on INTERP", shape_str(got.shape()), shape_str(want.shape()));
  DType d = got.dtype();
  const Shape& d_shape = got.shape();
  if (!d.is_float()) {
    std::vector<uint64_t> g = got.to_vector<uint64_t>(), w = want.to_vector<uint64_t>();
    for (size_t k = 0; k < g.size(); k++)
      if (g[k] != w[k]) {
        auto show = [&](uint64_t v) {
          return d.is_unsigned() ? std::to_string(v) : std::to_string(static_cast<int64_t>(v));
        };
        return fmt::format("index {} of {}: got {}, INTERP has {}", k, shape_str(d_shape), show(g[k]),
                           show(w[k]));
      }
    return "";
  }
  std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
  for (size_t k = 0; k < g.size(); k++) {
    double a = g[k], b = w[k];
    bool ok = std::isnan(b)      ? std::isnan(a)
              : std::isinf(b)    ? a == b
              : b == 0 && a == 0 ? !tol.signed_zero || std::signbit(a) == std::signbit(b)
                                 : std::isfinite(a) && std::abs(a - b) <= tol.atol + tol.rtol * std::abs(b);
    if (!ok)
      return fmt::format("index {} of {}: got {:.17g}, INTERP has {:.17g}", k, shape_str(d_shape), a, b);
  }
  return "";
}

using Program = std::function<Tensor(const std::vector<Tensor>&)>;
using Programs = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

inline bool declared(DType d) { return sdk::has_dtype(device().caps(), static_cast<unsigned>(d.scalar())); }

// Runs fn on the device under test and on INTERP from the same host inputs and records the item:
// unsupported (nothing runs) when the caps lack a dtype it uses or the manifest lists it. names label the
// outputs in messages.
inline void check_outputs(const std::string& item, const std::string& what,
                          const std::vector<HostValues>& ins, const Programs& fn, Tol tol,
                          const std::vector<std::string>& names = {}) {
  std::vector<Tensor> ref_in;
  for (const HostValues& h : ins) {
    if (!declared(h.dtype))
      return record_unsupported(item, fmt::format("the caps do not declare {}", h.dtype.name()));
    ref_in.push_back(upload(h, "INTERP"));
  }
  if (const std::string* why = manifest_unsupported(item)) return record_unsupported(item, *why);
  std::vector<Tensor> want;
  try {
    want = fn(ref_in);
  } catch (const std::exception& e) {
    record(item, false, fmt::format("{}: building the program threw: {}", what, e.what()));
    return;
  }
  for (const Tensor& w : want)
    if (!declared(w.dtype()))
      return record_unsupported(item, fmt::format("the caps do not declare {}", w.dtype().name()));
  std::string err;
  if (compile_only()) {  // the same program on the target, every kernel compiled, none run
    try {
      std::vector<Tensor> dut_in;
      for (const HostValues& h : ins) dut_in.push_back(upload(h, target().name));
      err = compile_schedule(fn(dut_in));
    } catch (const std::exception& e) {
      err = std::string("threw: ") + e.what();
    }
    record(item, err.empty(), fmt::format("{}: {}", what, err));
    return;
  }
  try {
    std::vector<Tensor> dut_in;
    for (const HostValues& h : ins) dut_in.push_back(upload(h, target().name));
    std::vector<Tensor> got = fn(dut_in);
    Tensor::realize_all(want);
    Tensor::realize_all(got);
    for (size_t k = 0; k < got.size() && err.empty(); k++)
      if (err = compare(got[k], want[k], tol); !err.empty() && got.size() > 1)
        err = (k < names.size() ? names[k] : "output " + std::to_string(k)) + ": " + err;
  } catch (const std::exception& e) {
    err = std::string("threw: ") + e.what();
  }
  std::string in_shapes;
  for (const HostValues& h : ins) in_shapes += (in_shapes.empty() ? "" : " ") + shape_str(h.shape);
  record(item, err.empty(), err.empty() ? "" : fmt::format("{} (inputs {}): {}", what, in_shapes, err));
}

inline void check_program(const std::string& item, const std::string& what,
                          const std::vector<HostValues>& ins, const Program& fn, Tol tol) {
  check_outputs(
      item, what, ins, [&](const std::vector<Tensor>& x) { return std::vector<Tensor>{fn(x)}; }, tol);
}

}  // namespace tg::conformance::ops
