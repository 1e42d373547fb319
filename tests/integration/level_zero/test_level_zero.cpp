// The LEVEL_ZERO plugin without a driver, and the CL plugin's SPIR-V path that runs its SPIR-V. The probe
// goes through the real Level Zero loader (no driver is installed here). The SPIR-V is checked by the
// spirv-val tool (an independent reference to the in-process validator), and a program on the CL SPIR-V path
// is compared with INTERP on Intel's CPU OpenCL runtime when it is installed.
#define BOOST_TEST_MODULE level_zero
#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>

#include <boost/dll/shared_library.hpp>

#include "codegen/lower.hpp"
#include "common/test_support.hpp"
#include "runtime/check.hpp"
#include "tg/sdk/plugin.hpp"
#include "uop/uop.hpp"

namespace {

using tg::test::run_command;
using tg::test::shell_quote;

const tg_plugin_descriptor& descriptor() {
  static auto* lib = new boost::dll::shared_library(TG_L0_PLUGIN, boost::dll::load_mode::rtld_now);
  return lib->get_alias<const tg_plugin_descriptor>("tgplugin_1_" + std::to_string(TG_ABI_MINOR) +
                                                    "_LEVEL_ZERO");
}

tg::test::CommandResult tg_cli(const std::string& plugin, const std::string& env, const std::string& args) {
  return run_command(fmt::format("env TG_PLUGIN_PATH={} {} {} {} 2>&1", shell_quote(plugin), env,
                                 shell_quote(TG_CLI), args));
}

std::unique_ptr<tg::sdk::Device> target(const std::string& arch, std::string* err = nullptr) {
  char why[1024] = {};
  void* d = descriptor().create_compile_only(arch.c_str(), why, sizeof why);
  if (err != nullptr) *err = why;
  return std::unique_ptr<tg::sdk::Device>(static_cast<tg::sdk::Device*>(d));
}

// out[i] = in[i] * 2 + 1 over n elements of `dt`, rendered for dev.
std::string render_scale(tg::sdk::Device& dev, tg::DType dt, int64_t n) {
  using namespace tg;
  auto idx = [](int64_t v) { return UOp::const_(dtypes::index, ConstValue{v}); };
  auto glob = [](int64_t i, DType d, int64_t k) {
    return UOp::make(Ops::DEFINE_GLOBAL, d.ptr(AddrSpace::GLOBAL, k), {}, i);
  };
  UOpRef r = UOp::range(idx(n), 0), in = glob(1, dt, n), out = glob(0, dt, n);
  UOpRef x = UOp::make(Ops::LOAD, dt, {UOp::make(Ops::INDEX, in->dtype(), {in, r})});
  UOpRef v = x * UOp::const_(dt, ConstValue{2.0}) + UOp::const_(dt, ConstValue{1.0});
  UOpRef st = UOp::make(Ops::STORE, dtypes::void_, {UOp::make(Ops::INDEX, out->dtype(), {out, r}), v});
  codegen::LinearProgram p = codegen::lower_kernel(UOp::sink({UOp::make(Ops::END, dtypes::void_, {st, r})}),
                                 dev.renderer().caps(), codegen::LowerOptions{.name = "scale"});
  sdk::Blob src;
  runtime::check(dev.renderer().render(p.name, p.view(), src), "render", p.name);
  return std::string(src.text());
}

}  // namespace

BOOST_AUTO_TEST_CASE(devices_lists_level_zero_with_its_reason) {
  std::string out = tg_cli(TG_L0_PLUGIN, "", "devices").out;
  BOOST_TEST_INFO(out);
  BOOST_TEST(out.find("LEVEL_ZERO") != std::string::npos);
  // Debian's loader without a driver: zeInit answers ZE_RESULT_ERROR_UNINITIALIZED.
  BOOST_TEST(
      out.find("no Level Zero driver (zeInit from libze_loader.so.1 returned ZE_RESULT_ERROR_UNINITIALIZED "
               "(0x78000001))") != std::string::npos);
  BOOST_TEST(out.find("compiles for: xe-hpc xe-hpg xe-lp") != std::string::npos);
  std::string missing = tg_cli(TG_L0_PLUGIN, "TG_LIBZE=/nonexistent/libze_loader.so.1", "devices").out;
  BOOST_TEST_INFO(missing);
  BOOST_TEST(missing.find("the Level Zero loader is not installed") != std::string::npos);
  BOOST_TEST(missing.find("install libze1") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(unknown_arch_names_the_targets) {
  std::string err;
  BOOST_TEST(target("gfx90a", &err) == nullptr);
  BOOST_TEST(err == "'gfx90a' is not a LEVEL_ZERO target; it compiles for: xe-hpc xe-hpg xe-lp");
  auto dev = target("xe-lp");
  BOOST_REQUIRE(dev != nullptr);
  tg::sdk::Program* p = nullptr;
  tg::sdk::Status s = dev->load("scale", {}, &p);
  BOOST_TEST((s.code() == tg::sdk::Code::unavailable));
  BOOST_TEST(std::string(s.message()).find("no Level Zero driver to run on") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(spirv_passes_the_spirv_val_tool) {
  auto dev = target("xe-hpc");
  BOOST_REQUIRE(dev != nullptr);
  for (tg::DType dt : {tg::dtypes::float32, tg::dtypes::float64, tg::dtypes::float16, tg::dtypes::int8}) {
    std::string src = render_scale(*dev, dt, 1000);
    tg::sdk::Blob bin;
    tg::sdk::Status s = dev->compiler().compile(src, bin);
    BOOST_TEST_INFO(dt.str() << ": " << s.message() << "\n" << src);
    BOOST_REQUIRE(s.ok());
    uint32_t head[2] = {};
    BOOST_REQUIRE(bin.size() > 20);
    std::memcpy(head, bin.bytes().data(), 8);
    BOOST_TEST(head[0] == 0x07230203u);  // SPIR-V magic
    BOOST_TEST(head[1] <= 0x00010200u);  // version 1.2 at most: OpenCL drivers refuse 1.4
    tg::sdk::Blob text;
    BOOST_REQUIRE(dev->compiler().disassemble(bin.bytes(), text).ok());
    BOOST_TEST(text.text().find("OpEntryPoint Kernel") != std::string_view::npos);
    BOOST_TEST(text.text().find("\"scale\"") != std::string_view::npos);
    if (dt == tg::dtypes::float64)
      BOOST_TEST(text.text().find("OpCapability Float64") != std::string_view::npos);
#ifdef TG_SPIRV_VAL
    char path[] = "/tmp/tg-l0-XXXXXX";
    int fd = mkstemp(path);
    BOOST_REQUIRE(fd >= 0);
    BOOST_REQUIRE(::write(fd, bin.bytes().data(), bin.size()) == static_cast<ssize_t>(bin.size()));
    ::close(fd);
    auto r = run_command(fmt::format("{} --target-env opencl2.1 {} 2>&1", shell_quote(TG_SPIRV_VAL), path));
    ::unlink(path);
    BOOST_TEST_INFO(r.out);
    BOOST_TEST(r.status == 0);
#else
    BOOST_FAIL("spirv-val not found at configure time (install spirv-tools)");
#endif
  }
}

BOOST_AUTO_TEST_CASE(toolchain_rejection_carries_the_log) {
  auto dev = target("xe-hpc");
  BOOST_REQUIRE(dev != nullptr);
  tg::sdk::Blob bin;
  tg::sdk::Status s =
      dev->compiler().compile("__kernel void k(__global float* a) { a[0] = undefined_name; }", bin);
  BOOST_TEST((s.code() == tg::sdk::Code::compile_error));
  BOOST_TEST_INFO(s.message());
  BOOST_TEST(std::string(s.message()).find("clang (spir64) rejected the kernel") != std::string::npos);
  BOOST_TEST(std::string(s.message()).find("kernel.cl:1:") != std::string::npos);
  BOOST_TEST(std::string(s.message()).find("undefined_name") != std::string::npos);
  // xe-lp has no fp64: a double kernel fails in clang, not later in the driver.
  auto lp = target("xe-lp");
  BOOST_REQUIRE(lp != nullptr);
  s = lp->compiler().compile("__kernel void k(__global double* a) { a[0] = 1.0; }", bin);
  BOOST_TEST((s.code() == tg::sdk::Code::compile_error));
  BOOST_TEST_INFO(s.message());
  BOOST_TEST(std::string(s.message()).find("double") != std::string::npos);
  BOOST_TEST(!tg::sdk::has_dtype(lp->renderer().caps(), static_cast<unsigned>(tg::Scalar::FLOAT64)));
  tg::sdk::Blob text;
  BOOST_TEST((dev->compiler().disassemble(std::as_bytes(std::span("not spir-v", 10)), text).code() ==
              tg::sdk::Code::invalid_argument));
}

#ifdef TG_CL_PLUGIN
BOOST_AUTO_TEST_CASE(cl_spirv_path_errors) {
  // An unknown renderer field.
  std::string out = tg_cli(TG_CL_PLUGIN, "DEV=CL:bogus", "demo").out;
  BOOST_TEST_INFO(out);
  BOOST_TEST(out.find("unknown renderer 'bogus' in DEV=CL:bogus") != std::string::npos);
  // PoCL 3.1 (the system's OpenCL) takes no IL.
  out = tg_cli(TG_CL_PLUGIN, "DEV=CL:spirv OCL_ICD_VENDORS=/etc/OpenCL/vendors", "demo").out;
  BOOST_TEST_INFO(out);
  BOOST_TEST(out.find("needs a device that takes SPIR-V 1.2") != std::string::npos);
}
#endif

#if defined(TG_CL_PLUGIN) && defined(TG_INTEL_OCL)
BOOST_AUTO_TEST_CASE(cl_spirv_path_runs_on_intel_cpu_runtime) {
  // `tg demo` realizes a small program (matmul, relu, softmax) on DEV: its result must be INTERP's, and
  // DEBUG=7 prints each loaded program's spirv-dis.
  auto result = [](const std::string& out) {
    size_t at = out.find("result (realized now):");
    return at == std::string::npos ? std::string() : out.substr(at, out.find("device=", at) - at);
  };
  std::string want = result(tg_cli(TG_CL_PLUGIN, "DEV=INTERP CACHELEVEL=0", "demo").out);
  std::string env =
      fmt::format("DEV=CL:spirv OCL_ICD_VENDORS={} DEBUG=7 CACHELEVEL=0", shell_quote(TG_INTEL_OCL));
  auto r = tg_cli(TG_CL_PLUGIN, env, "demo");
  BOOST_TEST_INFO(r.out);
  BOOST_TEST(r.status == 0);
  BOOST_TEST(!want.empty());
  BOOST_TEST(result(r.out) == want);
  BOOST_TEST(r.out.find("SPIR-V path") != std::string::npos);
  BOOST_TEST(r.out.find("OpEntryPoint Kernel") != std::string::npos);
  BOOST_TEST(r.out.find("OpMemoryModel Physical64 OpenCL") != std::string::npos);
}
#endif
