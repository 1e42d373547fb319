// The C-style renderer: key lines of rendered C, dialect hooks, and (when the clang binary is present)
// the rendered C compiled to a shared object, run through dlopen and compared byte for byte with INTERP.
#define BOOST_TEST_MODULE codegen_cstyle
#include <boost/test/unit_test.hpp>

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "helpers.hpp"
#include "tg/sdk/cstyle.hpp"

using namespace tgtest;
namespace fs = std::filesystem;

namespace {

const sdk::CDialect& c_dialect() {
  static const sdk::CDialect r;
  return r;
}

codegen::LinearProgram lower_c(const UOpRef& ast) { return codegen::lower_kernel(ast, c_dialect().caps()); }

std::string render(const codegen::LinearProgram& p, const sdk::CStyleRenderer& r = c_dialect()) {
  auto v = p.view();
  return r.render_source(p.name, v);
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

bool has_clang() { return std::system("clang --version > /dev/null 2>&1") == 0; }

// Compiles C source with the clang binary into a shared object and calls kernel `name` once (core_id 0).
void run_clang(const std::string& src, const std::string& name, std::vector<std::vector<std::byte>>& bufs,
               std::span<const int64_t> vals = {}) {
  fs::path dir = fs::temp_directory_path() / fmt::format("tg-cstyle-{}", getpid());
  fs::create_directories(dir);
  fs::path c = dir / (name + ".c"), so = dir / (name + ".so");
  std::ofstream(c) << src;
  std::string cmd =
      fmt::format("clang -std=c11 -O2 -fPIC -shared -ffp-contract=off -fwrapv -nostdinc -Werror -o {} {}",
                  so.string(), c.string());
  BOOST_TEST_REQUIRE(std::system(cmd.c_str()) == 0, "clang failed on:\n" << src);
  void* lib = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  BOOST_TEST_REQUIRE(lib != nullptr, dlerror());
  using Kernel = void (*)(void* const*, const long long*, int);
  auto fn = reinterpret_cast<Kernel>(dlsym(lib, name.c_str()));
  BOOST_TEST_REQUIRE(fn != nullptr);
  std::vector<void*> ptrs;
  for (auto& b : bufs) ptrs.push_back(b.data());
  std::vector<long long> v(vals.begin(), vals.end());
  fn(ptrs.data(), v.data(), 0);
  dlclose(lib);
  fs::remove_all(dir);
}

// Runs p on INTERP and as clang-compiled C from the same buffers; every output byte must agree.
void same_as_interp(const codegen::LinearProgram& p, const std::vector<std::vector<std::byte>>& inputs,
                    std::span<const int64_t> vals = {}) {
  auto on_interp = inputs, on_clang = inputs;
  run_interp(p, on_interp, vals);
  std::string src = render(p);
  run_clang(src, p.name, on_clang, vals);
  for (size_t i = 0; i < inputs.size(); i++)
    BOOST_TEST((on_interp[i] == on_clang[i]), "buffer " << i << " of\n" << src);
}

UOpRef add3_ast() {
  UOpRef r0 = range(4, 0), r1 = range(4, 1);
  UOpRef i = r0 * idx(4) + r1;
  UOpRef a = glob(1, dtypes::float32, 16), b = glob(2, dtypes::float32, 16), c = glob(3, dtypes::float32, 16);
  return UOp::sink(
      {end(store(glob(0, dtypes::float32, 16), i, load(a, i) + load(b, i) + load(c, i)), {r0, r1})});
}

UOpRef row_sum_ast() {
  UOpRef r0 = range(4, 0), r1 = range(8, 1, AxisType::REDUCE);
  UOpRef s = reduce(load(glob(1, dtypes::int32, 32), r0 * idx(8) + r1), {r1}, Ops::ADD);
  return UOp::sink({end(store(glob(0, dtypes::int32, 4), r0, s), {r0})});
}

template <typename T>
std::vector<std::byte> seq(size_t n, double start, double step) {
  std::vector<T> v(n);
  for (size_t i = 0; i < n; i++) v[i] = static_cast<T>(start + step * static_cast<double>(i));
  return bytes(v);
}

}  // namespace

BOOST_AUTO_TEST_CASE(elementwise_source) {
  std::string s = render(lower_c(add3_ast()));
  BOOST_TEST(contains(s, "void E_4_4(void* const* bufs, const long long* vals, int core_id) {"), s);
  BOOST_TEST(contains(s, "static void E_4_4_body(float* restrict data0, const float* restrict data1, "), s);
  BOOST_TEST(contains(s, "E_4_4_body((float*)bufs[0], (const float*)bufs[1], "), s);
  BOOST_TEST(contains(s, "for (int ridx0 = 0; ridx0 < 4; ridx0++) {"), s);
  BOOST_TEST(contains(s, "for (int ridx1 = 0; ridx1 < 4; ridx1++) {"), s);
  BOOST_TEST(contains(s, "data0["), s);
}

BOOST_AUTO_TEST_CASE(reduce_source) {
  std::string s = render(lower_c(row_sum_ast()));
  BOOST_TEST(contains(s, "void r_4_8("), s);
  BOOST_TEST(contains(s, "int acc0[1];"), s);
  BOOST_TEST(contains(s, "acc0[0] = 0;"), s);
  BOOST_TEST(contains(s, "acc0[0] = ("), s);  // acc0[0] + x in the simplifier's operand order
}

BOOST_AUTO_TEST_CASE(variables_gates_and_constants) {
  UOpRef n = UOp::variable("n", 1, 16);
  UOpRef r = UOp::range(n, 0);
  UOpRef valid = idx(0)->lt(r);
  UOpRef x = glob(1, dtypes::float32, 16);
  UOpRef ast =
      UOp::sink({end(store(glob(0, dtypes::float32, 16), r, load(x, r - idx(1), valid) * 2.5), {r})});
  std::string s = render(lower_c(ast));
  BOOST_TEST(contains(s, "const int n = (int)vals[0];"), s);
  BOOST_TEST(contains(s, "ridx0 < n;"), s);
  BOOST_TEST(contains(s, "?(data1+ridx0)[(-1)]:"), s);  // gated load: valid ? data1[ridx0 - 1] : 0
  BOOST_TEST(contains(s, "2.5f"), s);
}

BOOST_AUTO_TEST_CASE(launch_indices_need_a_dialect_hook) {
  codegen::LinearProgram p =
      codegen::lower_kernel(add3_ast(), runtime::interp::interp_caps());  // gidx0/gidx1
  auto v = p.view();
  sdk::CDialect c;
  sdk::Blob out;
  sdk::Status st = c.render(p.name, v, out);
  BOOST_TEST(!st.ok());
  BOOST_TEST((st.code() == sdk::Code::unsupported));
  BOOST_TEST(contains(std::string(st.message()), "gidx"));
}

namespace {
// A made-up dialect: GPU launch indices, its own type names and op spellings, the default signature.
class ToyDialect final : public sdk::CStyleRenderer {
 public:
  ToyDialect() : CStyleRenderer(runtime::interp::interp_caps()) {
    set_op_format(Ops::ADD, "add({0}, {1})");
    set_op_format(Ops::MUL, Scalar::INT32, "imul({0}, {1})");
    set_type_name(Scalar::FLOAT32, "real");
  }

 protected:
  std::string render_special(const UOp& u) const override {
    return fmt::format("group_id({})", u.arg_as<std::string>().back());
  }
};
}  // namespace

BOOST_AUTO_TEST_CASE(dialect_hooks) {
  std::string s = render(codegen::lower_kernel(add3_ast(), runtime::interp::interp_caps()), ToyDialect());
  BOOST_TEST(
      contains(s, "void E_4_4(real* data0, const real* data1, const real* data2, const real* data3) {"), s);
  BOOST_TEST(contains(s, "int gidx0 = group_id(0); /* 4 */"), s);
  BOOST_TEST(contains(s, "add(add("), s);
  BOOST_TEST(contains(s, "imul("), s);
  ToyDialect t;
  BOOST_TEST(t.op_format(Ops::MUL, Scalar::FLOAT32) == "({0}*{1})");
  BOOST_TEST(t.op_format(Ops::MUL, Scalar::INT32) == "imul({0}, {1})");
}

BOOST_AUTO_TEST_CASE(clang_matches_interp,
                     *boost::unit_test::precondition([](boost::unit_test::test_unit_id) {
                       boost::test_tools::assertion_result ok(has_clang());
                       if (!ok) ok.message() << "no clang binary on PATH to compile the rendered C";
                       return ok;
                     })) {
  same_as_interp(lower_c(add3_ast()), {std::vector<std::byte>(64), seq<float>(16, 0, 1),
                                       seq<float>(16, 0.5, -3), seq<float>(16, 100, 0.25)});
  same_as_interp(lower_c(row_sum_ast()), {std::vector<std::byte>(16), seq<int32_t>(32, -40, 3)});

  // padded load, two reduces over one shared range, a variable
  UOpRef r0 = range(2, 0), rj = range(3, 1, AxisType::REDUCE);
  UOpRef x = glob(1, dtypes::float32, 6);
  UOpRef mx = reduce(load(x, r0 * idx(3) + rj), {rj}, Ops::MAX);
  UOpRef sm = reduce(load(x, r0 * idx(3) + rj) - mx, {rj}, Ops::ADD);
  same_as_interp(lower_c(UOp::sink({end(store(glob(0, dtypes::float32, 2), r0, sm), {r0})})),
                 {std::vector<std::byte>(8), seq<float>(6, 3, -1.25)});
  UOpRef n = UOp::variable("n", 1, 16);
  UOpRef rn = UOp::range(n, 0);
  UOpRef pad = load(glob(1, dtypes::float32, 16), rn - idx(1), idx(0)->lt(rn));
  const int64_t vals[] = {9};
  same_as_interp(lower_c(UOp::sink({end(store(glob(0, dtypes::float32, 16), rn, pad), {rn})})),
                 {seq<float>(16, -1, 0), seq<float>(16, 1, 1)}, vals);

  // integer semantics: C division and remainder, unsigned wrap, shifts, casts
  UOpRef r = range(16, 0);
  UOpRef a = load(glob(1, dtypes::int32, 16), r);
  UOpRef ints = (a / UOp::const_(dtypes::int32, 3)) * UOp::const_(dtypes::int32, 7) +
                (a % UOp::const_(dtypes::int32, 5)) + (a >> UOp::const_(dtypes::int32, 2)) +
                a->cast(dtypes::uint8)->cast(dtypes::int32);
  same_as_interp(lower_c(UOp::sink({end(store(glob(0, dtypes::int32, 16), r, ints), {r})})),
                 {std::vector<std::byte>(64), seq<int32_t>(16, -37, 9)});

  // float4 loads, stores, lanes and an int4 -> float4 conversion
  same_as_interp(lower_c(vector_ast()), {std::vector<std::byte>(64), seq<float>(16, 0, 1)});

  // decomposed transcendentals in float32 and float64, threefry from integer ops: the same bits
  for (DType d : {dtypes::float32, dtypes::float64}) {
    UOpRef ri = range(64, 0);
    UOpRef v = load(glob(1, d, 64), ri);
    UOpRef f = v->alu(Ops::EXP2) + v->alu(Ops::LOG2) + v->alu(Ops::SIN) + v->alu(Ops::POW, v);
    bool f64 = d == dtypes::float64;
    same_as_interp(lower_c(UOp::sink({end(store(glob(0, d, 64), ri, f), {ri})})),
                   {std::vector<std::byte>(64 * d.itemsize()),
                    f64 ? seq<double>(64, 0.1, 1.7) : seq<float>(64, 0.1, 1.7)});
  }
  UOpRef rt = range(8, 0);
  UOpRef tf = load(glob(1, dtypes::uint64, 8), rt)->alu(Ops::THREEFRY, load(glob(2, dtypes::uint64, 8), rt));
  same_as_interp(lower_c(UOp::sink({end(store(glob(0, dtypes::uint64, 8), rt, tf), {rt})})),
                 {std::vector<std::byte>(64), seq<uint64_t>(8, 1, 977), seq<uint64_t>(8, 5, 123457)});
}

namespace {

// out[i] = a[i] * b[i] + c[i] over 4 values of dtype d (an explicit MULACC with `mulacc`).
UOpRef fma_ast(DType d, bool mulacc = false) {
  UOpRef r = range(4, 0);
  UOpRef a = load(glob(1, d, 4), r), b = load(glob(2, d, 4), r), c = load(glob(3, d, 4), r);
  UOpRef v = mulacc ? UOp::make(Ops::MULACC, d, {a, b, c}) : a * b + c;
  return UOp::sink({end(store(glob(0, d, 4), r, v), {r})});
}

bool has_op(const codegen::LinearProgram& p, Ops op) {
  return std::any_of(p.uops.begin(), p.uops.end(), [&](const UOpRef& u) { return u->op() == op; });
}

}  // namespace

// a*b+c on float32 becomes one MULACC, fused (one rounding) on INTERP and in C alike: with
// a = 1 + 2^-12, b = 1 - 2^-12, a*b = 1 - 2^-24 exactly, which rounds to 1 on its own (a tie, to even), so
// a*b - 1 is 0 unfused and -2^-24 fused. An explicit float64 MULACC is fused too (2^-27: -2^-54); float64,
// ints and narrow floats keep a*b+c.
BOOST_AUTO_TEST_CASE(mulacc_is_fused,
                     *boost::unit_test::precondition([](boost::unit_test::test_unit_id) {
                       boost::test_tools::assertion_result ok(has_clang());
                       if (!ok) ok.message() << "no clang binary on PATH to compile the rendered C";
                       return ok;
                     })) {
  codegen::LinearProgram p32 = lower_c(fma_ast(dtypes::float32)),
                         p64 = lower_c(fma_ast(dtypes::float64, true));
  BOOST_TEST(!has_op(lower_c(fma_ast(dtypes::float64)), Ops::MULACC));
  BOOST_TEST(has_op(p32, Ops::MULACC));
  BOOST_TEST(contains(render(p32), "__builtin_fmaf("), render(p32));
  BOOST_TEST(contains(render(p64), "__builtin_fma("), render(p64));
  BOOST_TEST(!has_op(lower_c(fma_ast(dtypes::int32)), Ops::MULACC));
  BOOST_TEST(
      !has_op(codegen::lower_kernel(fma_ast(dtypes::float16), runtime::interp::interp_caps()), Ops::MULACC));
  // a renderer without MULACC keeps the two roundings
  sdk::RendererCaps basic = c_dialect().caps();
  const int m = static_cast<int>(Ops::MULACC);
  basic.native_ops[m / 64] &= ~(uint64_t{1} << (m % 64));
  BOOST_TEST(!has_op(codegen::lower_kernel(fma_ast(dtypes::float32), basic), Ops::MULACC));

  const float a = 1.0f + 0x1p-12f, b = 1.0f - 0x1p-12f;
  std::vector<std::vector<std::byte>> in32 = {std::vector<std::byte>(16),
                                              bytes(std::vector<float>{a, a, 2, 0.5f}),
                                              bytes(std::vector<float>{b, b, 3, 0.25f}),
                                              bytes(std::vector<float>{-1, -0.5f, 1, -0.125f})};
  auto on_interp = in32, on_clang = in32;
  run_interp(p32, on_interp);
  run_clang(render(p32), p32.name, on_clang);
  const std::vector<float> want32 = {-0x1p-24f, 0.5f - 0x1p-24f, 7, 0};
  BOOST_TEST((on_interp[0] == bytes(want32)));
  BOOST_TEST((on_clang[0] == bytes(want32)));

  const double c = 1.0 + 0x1p-27, e = 1.0 - 0x1p-27;
  std::vector<std::vector<std::byte>> in64 = {std::vector<std::byte>(32),
                                              bytes(std::vector<double>{c, c, 2, 0.5}),
                                              bytes(std::vector<double>{e, e, 3, 0.25}),
                                              bytes(std::vector<double>{-1, -0.5, 1, -0.125})};
  auto i64 = in64, c64 = in64;
  run_interp(p64, i64);
  run_clang(render(p64), p64.name, c64);
  const std::vector<double> want64 = {-0x1p-54, 0.5 - 0x1p-54, 7, 0};
  BOOST_TEST((i64[0] == bytes(want64)));
  BOOST_TEST((c64[0] == bytes(want64)));
}
