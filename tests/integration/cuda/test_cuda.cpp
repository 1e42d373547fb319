// The CUDA plugin without a GPU: each probe reason (no driver, the toolkit's stub, no device, a driver too
// old, a missing index) through `tg`, and the compile-only device through the plugin's descriptor: NVRTC's
// log on a bad kernel, the tensor cores' inline PTX and their refusal on sm_75, the pinned PTX version, an
// unknown arch and a missing NVRTC. Never loads a real libcuda: TG_LIBCUDA always names a stand-in.
#define BOOST_TEST_MODULE cuda
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <memory>
#include <sstream>
#include <string>

#include <boost/dll/shared_library.hpp>

#include "base/error.hpp"
#include "codegen/lower.hpp"
#include "common/test_support.hpp"
#include "runtime/check.hpp"
#include "tg/sdk/plugin.hpp"
#include "uop/uop.hpp"

namespace {

using tg::test::run_command;
using tg::test::shell_quote;

const tg_plugin_descriptor& descriptor() {
  static auto* lib = new boost::dll::shared_library(TG_CUDA_PLUGIN, boost::dll::load_mode::rtld_now);
  return lib->get_alias<const tg_plugin_descriptor>("tgplugin_1_" + std::to_string(TG_ABI_MINOR) + "_CUDA");
}

// `tg ARGS` with the CUDA plugin alone on the plugin path and the given environment.
tg::test::CommandResult tg_cli(const std::string& env, const std::string& args) {
  return run_command(fmt::format("env TG_PLUGIN_PATH={} {} {} {} 2>&1", shell_quote(TG_CUDA_PLUGIN), env,
                                 shell_quote(TG_CLI), args));
}
std::string fake_driver(const std::string& vars) {
  return "TG_LIBCUDA=" + shell_quote(TG_FAKE_LIBCUDA) + " " + vars;
}

std::unique_ptr<tg::sdk::Device> target(const std::string& arch, std::string* err = nullptr) {
  char why[1024] = {};
  void* d = descriptor().create_compile_only(arch.c_str(), why, sizeof why);
  if (err != nullptr) *err = why;
  return std::unique_ptr<tg::sdk::Device>(static_cast<tg::sdk::Device*>(d));
}

// out[i, j] = sum_k a[i, k] * b[k, j] over 32 x 16 x 32 halves into floats, through tensor core `tc`.
std::string render_tc_matmul(tg::sdk::Device& dev, int64_t tc, tg::Scalar in) {
  using namespace tg;
  auto idx = [](int64_t v) { return UOp::const_(dtypes::index, ConstValue{v}); };
  auto glob = [](int64_t i, DType d, int64_t n) {
    return UOp::make(Ops::DEFINE_GLOBAL, d.ptr(AddrSpace::GLOBAL, n), {}, i);
  };
  auto load = [](const UOpRef& buf, const UOpRef& i) {
    return UOp::make(Ops::LOAD, buf->dtype().base(), {UOp::make(Ops::INDEX, buf->dtype(), {buf, i})});
  };
  DType h(in), f = dtypes::float32;
  UOpRef i = UOp::range(idx(32), 0), j = UOp::range(idx(16), 1), r = UOp::range(idx(32), 2, AxisType::REDUCE);
  UOpRef a = load(glob(1, h, 32 * 32), i * idx(32) + r)->cast(f),
         b = load(glob(2, h, 32 * 16), r * idx(16) + j)->cast(f);
  UOpRef sum = UOp::make(Ops::REDUCE, f, {a * b, r}, Ops::ADD);
  UOpRef out = glob(0, f, 32 * 16);
  UOpRef st = UOp::make(Ops::STORE, dtypes::void_,
                        {UOp::make(Ops::INDEX, out->dtype(), {out, i * idx(16) + j}), sum});
  UOpRef ast = UOp::sink({UOp::make(Ops::END, dtypes::void_, {st, i, j})});
  codegen::LinearProgram p = codegen::lower_kernel(
      ast, dev.renderer().caps(),
      codegen::LowerOptions{.name = "tc_matmul",
                            .opts = std::vector<codegen::Opt>{{codegen::OptOps::TC, 0, tc}}});
  sdk::Blob src;
  runtime::check(dev.renderer().render(p.name, p.view(), src), "render", p.name);
  return std::string(src.text());
}

}  // namespace

BOOST_AUTO_TEST_CASE(probe_reasons_are_kept_apart) {
  auto devices = [](const std::string& env) { return tg_cli(env, "devices").out; };
  BOOST_TEST(devices("TG_LIBCUDA=/nonexistent/libcuda.so.1").find("the NVIDIA driver is not installed") !=
             std::string::npos);
  BOOST_TEST(devices(fake_driver("FAKE_CUDA_INIT=100")).find("installed but sees no GPU") !=
             std::string::npos);
  BOOST_TEST(devices(fake_driver("FAKE_CUDA_INIT=100")).find("CUDA_ERROR_NO_DEVICE (100)") !=
             std::string::npos);
  BOOST_TEST(devices(fake_driver("FAKE_CUDA_VERSION=11080 FAKE_CUDA_COUNT=1")).find("supports CUDA 11.8") !=
             std::string::npos);
  BOOST_TEST(devices(fake_driver("FAKE_CUDA_INIT=34")).find("stub libcuda") != std::string::npos);
  // Every probe still lists what the plugin compiles for without the device.
  BOOST_TEST(devices("TG_LIBCUDA=/nonexistent").find("cannot run here; compiles for: sm_75 sm_80") !=
             std::string::npos);
}

BOOST_AUTO_TEST_CASE(the_toolkits_stub_is_named) {
  const char* stub = "/usr/local/cuda/lib64/stubs/libcuda.so";
  if (!std::filesystem::exists(stub))
    return;  // no toolkit stub on this machine: the fake's 34 above covers it
  std::string out = tg_cli("TG_LIBCUDA=" + std::string(stub), "devices").out;
  BOOST_TEST(out.find("stub libcuda") != std::string::npos, out);
}

BOOST_AUTO_TEST_CASE(a_missing_index_names_the_devices_that_exist) {
  tg::test::CommandResult r = tg_cli(fake_driver("FAKE_CUDA_COUNT=2 DEV=CUDA:7"), "demo");
  BOOST_TEST(r.status != 0);
  BOOST_TEST(r.out.find("no CUDA device 7: this machine has 2 (CUDA:0 to CUDA:1)") != std::string::npos,
             r.out);
}

// DEV's arch field picks what a running device compiles for: any arch NVRTC knows from sm_75 up to the
// device's own; newer, older, foreign archs and other renderers are refused by name before anything runs.
BOOST_AUTO_TEST_CASE(dev_arch_field_sets_the_target_of_a_running_device) {
  auto demo = [](const std::string& dev) {
    return tg_cli(fake_driver("FAKE_CUDA_COUNT=1 FAKE_CUDA_SM=90 DEV=" + dev), "demo").out;
  };
  std::string out = demo("CUDA:0:cuda:sm_80");
  BOOST_TEST(out.find("(sm_90, 1 GiB)") != std::string::npos, out);
  BOOST_TEST(out.find(" sm_80 ptx-pin") != std::string::npos, out);  // the compiler's cache key
  BOOST_TEST(out.find("compiling for sm_80") != std::string::npos, out);
  out = demo("CUDA:cuda:sm_90");
  BOOST_TEST(out.find(" sm_90 ptx-pin") != std::string::npos, out);
  BOOST_TEST(out.find("compiling for") == std::string::npos, out);
  out = demo("CUDA:0:cuda:sm_100");
  BOOST_TEST(out.find("'sm_100' is newer than the device") != std::string::npos, out);
  BOOST_TEST(out.find("this sm_90 device runs sm_75, sm_80") != std::string::npos, out);
  out = demo("CUDA:0:cuda:sm_61");
  BOOST_TEST(out.find("'sm_61' is older than sm_75") != std::string::npos, out);
  out = demo("CUDA:0:cuda:gfx90a");
  BOOST_TEST(out.find("'gfx90a' is not a CUDA arch") != std::string::npos, out);
  out = demo("CUDA:0:ptx");
  BOOST_TEST(out.find("unknown renderer 'ptx'") != std::string::npos, out);
  // sm_75, which has no tensor cores, is a target an sm_90 device takes too.
  out = tg_cli(fake_driver("FAKE_CUDA_COUNT=1 FAKE_CUDA_SM=90 DEV=CUDA:0:cuda:sm_75"), "demo").out;
  BOOST_TEST(out.find("compiling for sm_75") != std::string::npos, out);
}

BOOST_AUTO_TEST_CASE(fp8_is_emulated_in_bytes) {
  auto dev = target("sm_90");
  BOOST_REQUIRE(dev);
  const tg::sdk::RendererCaps& caps = dev->renderer().caps();
  for (tg::Scalar s : {tg::Scalar::FP8E4M3, tg::Scalar::FP8E5M2})
    BOOST_TEST((tg::sdk::emulated_dtypes(caps) >> static_cast<int>(s) & 1) == 1);
  BOOST_TEST((tg::sdk::emulated_dtypes(caps) >> static_cast<int>(tg::Scalar::BFLOAT16) & 1) == 0);
}

BOOST_AUTO_TEST_CASE(nvrtc_rejections_carry_its_log) {
  auto dev = target("sm_90");
  BOOST_REQUIRE(dev);
  tg::sdk::Blob bin;
  tg::sdk::Status s = dev->compiler().compile("extern \"C\" __global__ void k() { undefined_fn(); }", bin);
  BOOST_TEST(static_cast<int>(s.code()) == static_cast<int>(tg::sdk::Code::compile_error));
  BOOST_TEST(s.message().find("identifier \"undefined_fn\" is undefined") != std::string_view::npos,
             s.message());
}

BOOST_AUTO_TEST_CASE(tensor_cores_are_inline_mma_sync) {
  auto dev = target("sm_80");
  BOOST_REQUIRE(dev);
  std::string f16 = render_tc_matmul(*dev, 0, tg::Scalar::FLOAT16),
              bf16 = render_tc_matmul(*dev, 1, tg::Scalar::BFLOAT16);
  BOOST_TEST(f16.find("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32") != std::string::npos, f16);
  BOOST_TEST(f16.find("#include <cuda_fp16.h>") != std::string::npos);
  BOOST_TEST(bf16.find("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32") != std::string::npos, bf16);
  BOOST_TEST(bf16.find("#include <cuda_bf16.h>") != std::string::npos);
  // The kernel reads lane ids: its block size is fixed, and bounded for the register allocator.
  BOOST_TEST(f16.find("__launch_bounds__(32)") != std::string::npos, f16);
  tg::sdk::Blob bin;
  tg::sdk::Status s = dev->compiler().compile(f16, bin);
  BOOST_REQUIRE_MESSAGE(s.ok(), s.message());
  // The PTX beside the cubin is pinned to ISA 7.8, which drivers from CUDA 11.8 on read.
  BOOST_TEST(std::string(bin.text()).find(".version 7.8") != std::string::npos);
}

// A kernel without local ids runs its first launch axis as a global id over 128-thread blocks, the threads
// past the end returning; one with local ids (the tensor-core kernel above) keeps blockIdx.
BOOST_AUTO_TEST_CASE(kernels_without_local_ids_use_global_ids) {
  using namespace tg;
  auto dev = target("sm_90");
  BOOST_REQUIRE(dev);
  auto idx = [](int64_t v) { return UOp::const_(dtypes::index, ConstValue{v}); };
  UOpRef out = UOp::make(Ops::DEFINE_GLOBAL, dtypes::float32.ptr(AddrSpace::GLOBAL, 1000), {}, int64_t{0});
  UOpRef in = UOp::make(Ops::DEFINE_GLOBAL, dtypes::float32.ptr(AddrSpace::GLOBAL, 1000), {}, int64_t{1});
  UOpRef r = UOp::range(idx(1000), 0);
  UOpRef x = UOp::make(Ops::LOAD, dtypes::float32, {UOp::make(Ops::INDEX, in->dtype(), {in, r})});
  UOpRef st = UOp::make(Ops::STORE, dtypes::void_, {UOp::make(Ops::INDEX, out->dtype(), {out, r}), x + 1.0});
  codegen::LinearProgram p =
      codegen::lower_kernel(UOp::sink({UOp::make(Ops::END, dtypes::void_, {st, r})}), dev->renderer().caps(),
                            codegen::LowerOptions{.name = "add_one", .opts = std::vector<codegen::Opt>{}});
  sdk::Blob src;
  runtime::check(dev->renderer().render(p.name, p.view(), src), "render", p.name);
  std::string text(src.text());
  BOOST_TEST(text.starts_with("// tg: gidx0 is a global id"), text);
  BOOST_TEST(text.find("(blockIdx.x*blockDim.x+threadIdx.x)") != std::string::npos, text);
  BOOST_TEST(text.find("if (gidx0 >= 1000) return;") != std::string::npos, text);
  std::string tc = render_tc_matmul(*dev, 0, Scalar::FLOAT16);
  BOOST_TEST(tc.find("blockIdx.x*blockDim.x") == std::string::npos, tc);
}

// An UPCAST of 4 along contiguous addresses loads and stores float4s through tg_vload/tg_vstore, which
// check the address's alignment at run time (a view may start anywhere in its buffer); the arithmetic stays
// scalar, and NVRTC and nvJitLink accept it as 128-bit accesses.
BOOST_AUTO_TEST_CASE(upcasts_load_and_store_vectors) {
  using namespace tg;
  auto dev = target("sm_90");
  BOOST_REQUIRE(dev);
  auto idx = [](int64_t v) { return UOp::const_(dtypes::index, ConstValue{v}); };
  UOpRef out = UOp::make(Ops::DEFINE_GLOBAL, dtypes::float32.ptr(AddrSpace::GLOBAL, 1024), {}, int64_t{0});
  UOpRef in = UOp::make(Ops::DEFINE_GLOBAL, dtypes::float32.ptr(AddrSpace::GLOBAL, 1024), {}, int64_t{1});
  UOpRef r = UOp::range(idx(1024), 0);
  UOpRef x = UOp::make(Ops::LOAD, dtypes::float32, {UOp::make(Ops::INDEX, in->dtype(), {in, r})});
  UOpRef st = UOp::make(Ops::STORE, dtypes::void_, {UOp::make(Ops::INDEX, out->dtype(), {out, r}), x * 2.0});
  codegen::LinearProgram p = codegen::lower_kernel(
      UOp::sink({UOp::make(Ops::END, dtypes::void_, {st, r})}), dev->renderer().caps(),
      codegen::LowerOptions{.name = "twice",
                            .opts = std::vector<codegen::Opt>{{codegen::OptOps::UPCAST, 0, 4}}});
  sdk::Blob src, bin;
  runtime::check(dev->renderer().render(p.name, p.view(), src), "render", p.name);
  std::string text(src.text());
  BOOST_TEST(text.find("tg_float4 val0 = tg_vload<tg_float4>(data1+") != std::string::npos, text);
  BOOST_TEST(text.find("tg_vstore(data0+") != std::string::npos, text);
  BOOST_TEST(text.find("(alignof(V) - 1)) == 0") != std::string::npos, text);
  BOOST_TEST(text.find("val0.v[3]") != std::string::npos, text);  // scalar arithmetic on the lanes
  runtime::check(dev->compiler().compile(text, bin), "compile", p.name);
}

BOOST_AUTO_TEST_CASE(sm75_refuses_the_tensor_core_by_name) {
  auto dev = target("sm_75");
  BOOST_REQUIRE(dev);
  BOOST_TEST(tg::sdk::tensor_cores(dev->renderer().caps()).empty());
  try {
    render_tc_matmul(*dev, 0, tg::Scalar::FLOAT16);
    BOOST_FAIL("a tensor-core kernel was lowered for sm_75");
  } catch (const tg::Error& e) {
    BOOST_TEST(
        std::string(e.what()).find("'cuda sm_75' renderer declares no tensor cores") != std::string::npos,
        e.what());
  }
}

BOOST_AUTO_TEST_CASE(unknown_archs_are_refused) {
  std::string err;
  BOOST_TEST(!target("gfx90a", &err));
  BOOST_TEST(err.find("'gfx90a' is not a CUDA arch") != std::string::npos, err);
  BOOST_TEST(!target("sm_61", &err));
  BOOST_TEST(err.find("sm_61") != std::string::npos, err);
  tg::test::CommandResult r =
      run_command(fmt::format("{} --plugin {} --compile-only --arch sm_12 2>&1", shell_quote(TG_CONFORMANCE),
                              shell_quote(TG_CUDA_PLUGIN)));
  BOOST_TEST(r.status == 2);
  BOOST_TEST(r.out.find("CUDA cannot compile for sm_12") != std::string::npos, r.out);
}

BOOST_AUTO_TEST_CASE(a_missing_nvrtc_is_a_reason) {
  tg::test::CommandResult r = run_command(
      fmt::format("TG_NVRTC=/nonexistent/libnvrtc.so {} --plugin {} --compile-only --arch sm_90 2>&1",
                  shell_quote(TG_CONFORMANCE), shell_quote(TG_CUDA_PLUGIN)));
  BOOST_TEST(r.status == 2);
  BOOST_TEST(r.out.find("lists no targets") != std::string::npos, r.out);
  std::string devices = tg_cli("TG_NVRTC=/nonexistent/libnvrtc.so TG_LIBCUDA=/nonexistent", "devices").out;
  // Only CUDA's row and its indented continuation lines: other plugins of the build tree list their targets.
  std::string cuda, row_line;
  bool in_row = false;
  for (std::istringstream lines(devices); std::getline(lines, row_line);) {
    bool row_start = row_line.size() > 2 && row_line.starts_with("  ") && row_line[2] != ' ';
    if (row_start) in_row = row_line.starts_with("  CUDA ");
    if (in_row) cuda += row_line + "\n";
  }
  BOOST_TEST(!cuda.empty(), devices);
  BOOST_TEST(cuda.find("compiles for") == std::string::npos, devices);
}
