// The METAL plugin without macOS: the probe reason through `tg devices`, and the compile-only target,
// whose compiler is a clang syntax check against the project's Metal shim (not Apple's compiler). Each
// usual porting mistake must be rejected with the diagnostic that names it, and its MSL fix accepted, so
// a rejection is the mistake's and not a broken shim's. The simdgroup tensor core's layout is checked
// against the hand-derived formula and against INTERP's copy of it.
#define BOOST_TEST_MODULE metal
#include <boost/test/unit_test.hpp>

#include <memory>
#include <string>

#include <boost/dll/shared_library.hpp>

#include "base/error.hpp"
#include "codegen/lower.hpp"
#include "common/test_support.hpp"
#include "runtime/check.hpp"
#include "runtime/interp/interp.hpp"
#include "tg/sdk/plugin.hpp"
#include "uop/uop.hpp"

namespace {

using tg::test::run_command;
using tg::test::shell_quote;

const tg_plugin_descriptor& descriptor() {
  static auto* lib = new boost::dll::shared_library(TG_METAL_PLUGIN, boost::dll::load_mode::rtld_now);
  return lib->get_alias<const tg_plugin_descriptor>("tgplugin_1_" + std::to_string(TG_ABI_MINOR) + "_METAL");
}

std::unique_ptr<tg::sdk::Device> target(const std::string& arch, std::string* err = nullptr) {
  char why[1024] = {};
  void* d = descriptor().create_compile_only(arch.c_str(), why, sizeof why);
  if (err != nullptr) *err = why;
  return std::unique_ptr<tg::sdk::Device>(static_cast<tg::sdk::Device*>(d));
}

// The syntax check's verdict on a kernel whose body is `body`: "" when accepted, else the log.
std::string check(const std::string& body) {
  static auto dev = target("metal3.1");
  std::string src =
      "#include <metal_stdlib>\nusing namespace metal;\nkernel void k(device float* a [[buffer(0)]], "
      "uint3 gid [[threadgroup_position_in_grid]]) {\n  " +
      body + "\n}\n";
  tg::sdk::Blob bin;
  tg::sdk::Status s = dev->compiler().compile(src, bin);
  return s.ok() ? "" : std::string(s.message());
}

// out[i, j] = sum_k a[i, k] * b[k, j] over 16 x 16 x 16 halves into floats, through tensor core 0.
std::string render_tc_matmul(tg::sdk::Device& dev) {
  using namespace tg;
  auto idx = [](int64_t v) { return UOp::const_(dtypes::index, ConstValue{v}); };
  auto glob = [](int64_t i, DType d, int64_t n) {
    return UOp::make(Ops::DEFINE_GLOBAL, d.ptr(AddrSpace::GLOBAL, n), {}, i);
  };
  auto load = [](const UOpRef& buf, const UOpRef& i) {
    return UOp::make(Ops::LOAD, buf->dtype().base(), {UOp::make(Ops::INDEX, buf->dtype(), {buf, i})});
  };
  DType h = dtypes::float16, f = dtypes::float32;
  UOpRef i = UOp::range(idx(16), 0), j = UOp::range(idx(16), 1), r = UOp::range(idx(16), 2, AxisType::REDUCE);
  UOpRef a = load(glob(1, h, 256), i * idx(16) + r)->cast(f),
         b = load(glob(2, h, 256), r * idx(16) + j)->cast(f);
  UOpRef sum = UOp::make(Ops::REDUCE, f, {a * b, r}, Ops::ADD);
  UOpRef out = glob(0, f, 256);
  UOpRef st = UOp::make(Ops::STORE, dtypes::void_,
                        {UOp::make(Ops::INDEX, out->dtype(), {out, i * idx(16) + j}), sum});
  UOpRef ast = UOp::sink({UOp::make(Ops::END, dtypes::void_, {st, i, j})});
  codegen::LinearProgram p = codegen::lower_kernel(
      ast, dev.renderer().caps(),
      codegen::LowerOptions{.name = "tc_matmul",
                            .opts = std::vector<codegen::Opt>{{codegen::OptOps::TC, 0, 0}}});
  sdk::Blob src;
  tg::runtime::check(dev.renderer().render(p.name, p.view(), src), "render", p.name);
  return std::string(src.text());
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_probe_says_metal_needs_macos_and_the_check_is_syntax_only) {
  std::string out = run_command(fmt::format("env TG_PLUGIN_PATH={} {} devices 2>&1",
                                            shell_quote(TG_METAL_PLUGIN), shell_quote(TG_CLI)))
                        .out;
  BOOST_TEST(out.find("unavailable: Metal needs macOS (Metal.framework not found)") != std::string::npos,
             out);
  BOOST_TEST(out.find("a syntax check (clang + the project's Metal shim), not Apple's compiler") !=
                 std::string::npos,
             out);
  BOOST_TEST(out.find("cannot run here; compiles for: metal3.1 metal3.0") != std::string::npos, out);
  auto dev = target("metal3.0");
  BOOST_REQUIRE(dev);
  BOOST_TEST(std::string(dev->description()).find("SYNTAX CHECK ONLY") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(an_opencl_vector_literal_is_rejected) {
  BOOST_TEST(check("float4 v = (float4)(1.0f, a[0], 3.0f, 4.0f); a[0] = v.w;")
                 .find("left operand of comma operator has no effect") != std::string::npos);
  BOOST_TEST(check("float4 v = float4(1.0f, a[0], 3.0f, 4.0f); a[0] = v.w + v.xy.y;") == "");
}

BOOST_AUTO_TEST_CASE(cuda_barriers_and_constructors_are_rejected) {
  BOOST_TEST(check("__syncthreads();").find("use of undeclared identifier '__syncthreads'") !=
             std::string::npos);
  BOOST_TEST(check("threadgroup_barrier(mem_flags::mem_threadgroup);") == "");
  BOOST_TEST(check("float4 v = make_float4(1.0f, 2.0f, 3.0f, 4.0f); a[0] = v.x;")
                 .find("use of undeclared identifier 'make_float4'") != std::string::npos);
  BOOST_TEST(check("float4 v = float4(float2(1.0f, 2.0f), 3.0f, 4.0f); a[0] = v.z;") == "");
  BOOST_TEST(check("float4 v = float4(1.0f, 2.0f, 3.0f); a[0] = v.z;").find("do not add up") !=
             std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_device_pointer_does_not_become_a_plain_one) {
  BOOST_TEST(check("float* p = a; p[0] = 1.0f;").find("cannot initialize a variable of type 'float *'") !=
             std::string::npos);
  BOOST_TEST(check("device float* p = a; p[0] = 1.0f;") == "");
}

BOOST_AUTO_TEST_CASE(as_type_needs_equal_sizes) {
  BOOST_TEST(check("half h = as_type<half>(a[0]); a[1] = h;")
                 .find("as_type needs a source and destination of the "
                       "same size") != std::string::npos);
  BOOST_TEST(check("uint u = as_type<uint>(a[0]); a[1] = as_type<float>(u + 1u);") == "");
}

BOOST_AUTO_TEST_CASE(metal_math_and_threadgroup_memory_check) {
  BOOST_TEST(check("threadgroup float t[64]; t[gid.x] = precise::sqrt(a[0]) + metal::exp2((half)a[1]); "
                   "threadgroup_barrier(mem_flags::mem_threadgroup); a[gid.x] = t[0];") == "");
  BOOST_TEST(check("a[0] = metal::sqrt(3);").find("no matching function for call to 'sqrt'") !=
             std::string::npos);
}

BOOST_AUTO_TEST_CASE(the_simdgroup_tensor_core_renders_and_checks) {
  auto dev = target("metal3.0");
  BOOST_REQUIRE(dev);
  std::string src = render_tc_matmul(*dev);
  BOOST_TEST(src.find("simdgroup_multiply_accumulate(mc, ma, mb, mc)") != std::string::npos, src);
  BOOST_TEST(src.find("simdgroup_half8x8") != std::string::npos, src);
  tg::sdk::Blob bin;
  tg::sdk::Status s = dev->compiler().compile(src, bin);
  BOOST_TEST(s.ok(), s.message());
}

BOOST_AUTO_TEST_CASE(the_simdgroup_layout_is_the_hand_derived_one) {
  auto dev = target("metal3.0");
  BOOST_REQUIRE(dev);
  auto tcs = tg::sdk::tensor_cores(dev->renderer().caps());
  BOOST_REQUIRE(tcs.size() == 2u);
  const tg::sdk::TensorCore& tc = tcs[0];
  BOOST_TEST(int(tc.in) == int(tg::Scalar::FLOAT16));
  BOOST_TEST(int(tc.acc) == int(tg::Scalar::FLOAT32));
  // Lane l's element e is at row 4*l[4] + 2*l[2] + l[1], column 4*l[3] + 2*l[0] + e of every tile.
  auto place = [](const uint8_t* bits, int l, int e) {
    int at[2] = {0, 0};
    for (int c = 0, j = 0; c < 2; c++)
      for (int b = 0; b < 3; b++, j++) {
        int src = bits[j];
        int bit =
            src >= tg::sdk::TensorCore::kElemBit ? e >> (src - tg::sdk::TensorCore::kElemBit) : l >> src;
        at[c] |= (bit & 1) << b;
      }
    return std::pair{at[0], at[1]};
  };
  for (const uint8_t* bits : {tc.a_bits, tc.b_bits, tc.c_bits})
    for (int l = 0; l < 32; l++)
      for (int e = 0; e < 2; e++) {
        auto [row, col] = place(bits, l, e);
        BOOST_TEST(row == 4 * (l >> 4 & 1) + 2 * (l >> 2 & 1) + (l >> 1 & 1));
        BOOST_TEST(col == 4 * (l >> 3 & 1) + 2 * (l & 1) + e);
      }
  tg::sdk::TensorCore ref = tg::runtime::interp::metal_simdgroup_8x8();  // what INTERP_TC=metal runs
  BOOST_TEST(std::equal(std::begin(ref.a_bits), std::end(ref.a_bits), tc.a_bits));
  BOOST_TEST(std::equal(std::begin(ref.c_bits), std::end(ref.c_bits), tc.c_bits));
}

BOOST_AUTO_TEST_CASE(unknown_versions_are_refused) {
  std::string err;
  BOOST_TEST(!target("sm_80", &err));
  BOOST_TEST(err.find("'sm_80' is not a Metal language version") != std::string::npos, err);
}
