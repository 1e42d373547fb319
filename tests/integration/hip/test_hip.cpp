// The HIP plugin without a GPU: each probe reason through `tg` (no runtime; the real runtime seeing no
// GPU), and the compile-only device through the plugin's descriptor: clang's log on a bad kernel, the
// matrix cores as builtins whose disassembly holds v_mfma / v_wmma, their refusal on gfx1030, the code
// object's ELF header for each arch (the AMDGPU ELF spec's machine numbers), the INTERP_TC layouts being
// the plugin's, an unknown arch and a missing toolchain.
#define BOOST_TEST_MODULE hip
#include <boost/test/unit_test.hpp>

#include <cstring>
#include <filesystem>
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
  static auto* lib = new boost::dll::shared_library(TG_HIP_PLUGIN, boost::dll::load_mode::rtld_now);
  return lib->get_alias<const tg_plugin_descriptor>("tgplugin_1_" + std::to_string(TG_ABI_MINOR) + "_HIP");
}

// `tg ARGS` with the HIP plugin alone on the plugin path and the given environment.
tg::test::CommandResult tg_cli(const std::string& env, const std::string& args) {
  return run_command(fmt::format("env TG_PLUGIN_PATH={} {} {} {} 2>&1", shell_quote(TG_HIP_PLUGIN), env,
                                 shell_quote(TG_CLI), args));
}

std::unique_ptr<tg::sdk::Device> target(const std::string& arch, std::string* err = nullptr) {
  char why[1024] = {};
  void* d = descriptor().create_compile_only(arch.c_str(), why, sizeof why);
  if (err != nullptr) *err = why;
  return std::unique_ptr<tg::sdk::Device>(static_cast<tg::sdk::Device*>(d));
}

// out[i, j] = sum_k a[i, k] * b[k, j] over 32 x 32 x 32 halves into floats, through tensor core 0.
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
  UOpRef i = UOp::range(idx(32), 0), j = UOp::range(idx(32), 1), r = UOp::range(idx(32), 2, AxisType::REDUCE);
  UOpRef a = load(glob(1, h, 32 * 32), i * idx(32) + r)->cast(f),
         b = load(glob(2, h, 32 * 32), r * idx(32) + j)->cast(f);
  UOpRef sum = UOp::make(Ops::REDUCE, f, {a * b, r}, Ops::ADD);
  UOpRef out = glob(0, f, 32 * 32);
  UOpRef st = UOp::make(Ops::STORE, dtypes::void_,
                        {UOp::make(Ops::INDEX, out->dtype(), {out, i * idx(32) + j}), sum});
  UOpRef ast = UOp::sink({UOp::make(Ops::END, dtypes::void_, {st, i, j})});
  codegen::LinearProgram p = codegen::lower_kernel(
      ast, dev.renderer().caps(),
      codegen::LowerOptions{.name = "tc_matmul",
                            .opts = std::vector<codegen::Opt>{{codegen::OptOps::TC, 0, 0}}});
  sdk::Blob src;
  runtime::check(dev.renderer().render(p.name, p.view(), src), "render", p.name);
  return std::string(src.text());
}

std::string compile(tg::sdk::Device& dev, const std::string& src, tg::sdk::Blob* bin) {
  tg::sdk::Status s = dev.compiler().compile(src, *bin);
  BOOST_REQUIRE_MESSAGE(s.ok(), s.message());
  tg::sdk::Blob text;
  s = dev.compiler().disassemble(bin->bytes(), text);
  BOOST_REQUIRE_MESSAGE(s.ok(), s.message());
  return std::string(text.text());
}

// An elementwise kernel with a transcendental (ocml) and launch indices (ockl).
const char* kSinKernel = R"(extern "C" __attribute__((device, const)) float __ocml_sin_f32(float);
extern "C" __attribute__((device, const)) unsigned long __ockl_get_group_id(unsigned int);
extern "C" __attribute__((global)) void k(float* out, const float* in) {
  int i = (int)__ockl_get_group_id(0);
  out[i] = __ocml_sin_f32(in[i]);
})";

bool same_layout(const tg::sdk::TensorCore& x, const tg::sdk::TensorCore& y) {
  return x.m == y.m && x.n == y.n && x.k == y.k && x.threads == y.threads && x.in == y.in && x.acc == y.acc &&
         std::memcmp(x.a_bits, y.a_bits, 16) == 0 && std::memcmp(x.b_bits, y.b_bits, 16) == 0 &&
         std::memcmp(x.c_bits, y.c_bits, 16) == 0;
}

}  // namespace

BOOST_AUTO_TEST_CASE(probe_reasons_are_kept_apart) {
  std::string none = tg_cli("TG_LIBAMDHIP64=/nonexistent/libamdhip64.so", "devices").out;
  BOOST_TEST(none.find("ROCm runtime not installed") != std::string::npos, none);
  // Without a GPU the real runtime (Debian's libamdhip64-5) answers hipInit with an error; with one, HIP is
  // usable and this check does not apply.
  if (!std::filesystem::exists("/dev/kfd")) {
    std::string real = tg_cli("", "devices").out;
    BOOST_TEST(real.find("no AMD GPU (hipInit: ") != std::string::npos, real);
    BOOST_TEST(real.find("no /dev/kfd") != std::string::npos, real);
  }
  // Every probe still lists what the plugin compiles for without the device.
  BOOST_TEST(none.find("cannot run here; compiles for: gfx900") != std::string::npos, none);
  for (const char* arch : {" gfx90a ", " gfx1030 ", " gfx1100 "})
    BOOST_TEST(none.find(arch) != std::string::npos);
}

BOOST_AUTO_TEST_CASE(clang_rejections_carry_its_log) {
  auto dev = target("gfx90a");
  BOOST_REQUIRE(dev);
  tg::sdk::Blob bin;
  tg::sdk::Status s =
      dev->compiler().compile("extern \"C\" __attribute__((global)) void k() { undefined_fn(); }", bin);
  BOOST_TEST(static_cast<int>(s.code()) == static_cast<int>(tg::sdk::Code::compile_error));
  BOOST_TEST(s.message().find("use of undeclared identifier 'undefined_fn'") != std::string_view::npos,
             s.message());
}

BOOST_AUTO_TEST_CASE(code_objects_are_v4_elf_for_the_arch) {
  // AMDGPU ELF: e_machine EM_AMDGPU (224), EI_OSABI ELFOSABI_AMDGPU_HSA (64), EI_ABIVERSION 2 for code object
  // v4, and the arch in e_flags' low byte (EF_AMDGPU_MACH_AMDGCN_GFX90A 0x3f, GFX1030 0x36, GFX1100 0x41).
  for (auto [arch, mach] :
       {std::pair{"gfx90a", 0x3f}, std::pair{"gfx1030", 0x36}, std::pair{"gfx1100", 0x41}}) {
    auto dev = target(arch);
    BOOST_REQUIRE(dev);
    tg::sdk::Blob bin;
    std::string isa = compile(*dev, kSinKernel, &bin);
    const auto* e = reinterpret_cast<const unsigned char*>(bin.bytes().data());
    BOOST_REQUIRE(bin.bytes().size() > 64);
    BOOST_TEST(std::memcmp(e,
                           "\x7f"
                           "ELF",
                           4) == 0);
    BOOST_TEST(int(e[7]) == 64);
    BOOST_TEST(int(e[8]) == 2);
    BOOST_TEST((e[18] | e[19] << 8) == 224);
    BOOST_TEST(int(e[48]) == mach, arch);
    BOOST_TEST(isa.find("s_endpgm") != std::string::npos, isa);
  }
}

BOOST_AUTO_TEST_CASE(each_arch_links_its_isa_version) {
  // The device libraries read __oclc_ISA_version; gfx1100's is made by the plugin (ROCm 5.2 lacks the file).
  // 9010 = 0x2332 from ROCm's oclc_isa_version_90a.bc, 11000 = 0x2af8 as ROCm 5.3 on ships it.
  const char* src = R"(extern "C" __attribute__((constant)) const int __oclc_ISA_version;
extern "C" __attribute__((global)) void k(int* out) { out[0] = __oclc_ISA_version; })";
  for (auto [arch, imm] : {std::pair{"gfx90a", "0x2332"}, std::pair{"gfx1100", "0x2af8"}}) {
    auto dev = target(arch);
    BOOST_REQUIRE(dev);
    tg::sdk::Blob bin;
    std::string isa = compile(*dev, src, &bin);
    BOOST_TEST(isa.find(imm) != std::string::npos, arch << ":\n" << isa);
  }
}

BOOST_AUTO_TEST_CASE(mfma_on_cdna) {
  auto dev = target("gfx90a");
  BOOST_REQUIRE(dev);
  std::string src = render_tc_matmul(*dev);
  BOOST_TEST(src.find("__builtin_amdgcn_mfma_f32_16x16x16f16(") != std::string::npos, src);
  BOOST_TEST(src.find("amdgpu_flat_work_group_size(1, 64)") != std::string::npos, src);
  tg::sdk::Blob bin;
  std::string isa = compile(*dev, src, &bin);
  BOOST_TEST(isa.find("v_mfma_f32_16x16x16f16") != std::string::npos, isa);
}

BOOST_AUTO_TEST_CASE(wmma_on_rdna3) {
  auto dev = target("gfx1100");
  BOOST_REQUIRE(dev);
  std::string src = render_tc_matmul(*dev);
  BOOST_TEST(src.find("__builtin_amdgcn_wmma_f32_16x16x16_f16_w32(") != std::string::npos, src);
  BOOST_TEST(src.find("__builtin_amdgcn_ds_bpermute(") != std::string::npos, src);
  tg::sdk::Blob bin;
  std::string isa = compile(*dev, src, &bin);
  BOOST_TEST(isa.find("v_wmma_f32_16x16x16_f16") != std::string::npos, isa);
  BOOST_TEST(isa.find("ds_bpermute_b32") != std::string::npos, isa);
}

BOOST_AUTO_TEST_CASE(rdna2_refuses_the_tensor_core_by_name) {
  auto dev = target("gfx1030");
  BOOST_REQUIRE(dev);
  BOOST_TEST(tg::sdk::tensor_cores(dev->renderer().caps()).empty());
  try {
    render_tc_matmul(*dev);
    BOOST_FAIL("a tensor-core kernel was lowered for gfx1030");
  } catch (const tg::Error& e) {
    BOOST_TEST(
        std::string(e.what()).find("'hip gfx1030' renderer declares no tensor cores") != std::string::npos,
        e.what());
  }
}

BOOST_AUTO_TEST_CASE(interp_runs_the_layouts_the_plugin_declares) {
  auto cdna = target("gfx90a"), rdna3 = target("gfx1100");
  BOOST_REQUIRE(cdna && rdna3);
  BOOST_REQUIRE(tg::sdk::tensor_cores(cdna->renderer().caps()).size() == 1);
  BOOST_REQUIRE(tg::sdk::tensor_cores(rdna3->renderer().caps()).size() == 1);
  BOOST_TEST(same_layout(tg::sdk::tensor_cores(cdna->renderer().caps())[0],
                         tg::runtime::interp::hip_mfma_16x16x16()));
  BOOST_TEST(same_layout(tg::sdk::tensor_cores(rdna3->renderer().caps())[0],
                         tg::runtime::interp::hip_wmma_16x16x16()));
}

BOOST_AUTO_TEST_CASE(unknown_archs_are_refused) {
  std::string err;
  BOOST_TEST(!target("sm_80", &err));
  BOOST_TEST(err.find("'sm_80' is not an AMD GPU arch") != std::string::npos, err);
  BOOST_TEST(!target("gfx1200", &err));
  BOOST_TEST(err.find("cannot compile for gfx1200") != std::string::npos, err);
  tg::test::CommandResult r =
      run_command(fmt::format("{} --plugin {} --compile-only --arch gfx9999 2>&1",
                              shell_quote(TG_CONFORMANCE), shell_quote(TG_HIP_PLUGIN)));
  BOOST_TEST(r.status == 2);
  BOOST_TEST(r.out.find("HIP cannot compile for gfx9999") != std::string::npos, r.out);
}

BOOST_AUTO_TEST_CASE(a_missing_toolchain_is_a_reason) {
  tg::test::CommandResult r = run_command(
      fmt::format("TG_HIP_CLANG=/nonexistent/clang {} --plugin {} --compile-only --arch gfx90a 2>&1",
                  shell_quote(TG_CONFORMANCE), shell_quote(TG_HIP_PLUGIN)));
  BOOST_TEST(r.status == 2);
  BOOST_TEST(r.out.find("lists no targets") != std::string::npos, r.out);
  r = run_command(
      fmt::format("TG_ROCM_DEVICE_LIBS=/nonexistent {} --plugin {} --compile-only --arch gfx90a 2>&1",
                  shell_quote(TG_CONFORMANCE), shell_quote(TG_HIP_PLUGIN)));
  BOOST_TEST(r.status == 2);
  BOOST_TEST(r.out.find("lists no targets") != std::string::npos, r.out);
  std::string devices = tg_cli("TG_ROCM_DEVICE_LIBS=/nonexistent", "devices").out;
  BOOST_TEST(devices.find("compiles for: gfx") == std::string::npos, devices);
}
