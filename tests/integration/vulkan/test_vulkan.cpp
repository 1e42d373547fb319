// The VULKAN plugin end to end: the SDK surface loaded like the core loads it (probe, memory, shaderc,
// launches), tensor programs on VULKAN against INTERP (the reference), and spirv-val on the SPIR-V they use.
#define BOOST_TEST_MODULE vulkan
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <boost/dll/shared_library.hpp>

#include "codegen/lower.hpp"
#include "common/test_support.hpp"
#include "common/workgroup_kernels.hpp"
#include "runtime/registry.hpp"
#include "tensor/tensor.hpp"
#include "tg/sdk/plugin.hpp"

namespace {

using tg::Tensor;
using tg::sdk::Blob;
using tg::sdk::Code;
using tg::sdk::Device;
using tg::sdk::Handle;
using tg::sdk::Program;
using tg::sdk::Status;
using tg::test::RemoveScratch;

BOOST_TEST_GLOBAL_FIXTURE(RemoveScratch);

const tg_plugin_descriptor& descriptor() {
  static auto* lib = new boost::dll::shared_library(TG_VULKAN_PLUGIN, boost::dll::load_mode::rtld_now);
  return lib->get_alias<const tg_plugin_descriptor>("tgplugin_1_" + std::to_string(TG_ABI_MINOR) + "_VULKAN");
}

// Without a usable device every test fails with the probe's reason instead of passing vacuously.
std::unique_ptr<Device> create_device() {
  char reason[512] = {}, err[512] = {};
  BOOST_TEST_REQUIRE(descriptor().probe(reason, sizeof reason) == 1, "VULKAN probe: " << reason);
  auto* dev = static_cast<Device*>(descriptor().create(0, err, sizeof err));
  BOOST_TEST_REQUIRE(dev != nullptr, "VULKAN create: " << err);
  return std::unique_ptr<Device>(dev);
}

Device& device() {
  static std::unique_ptr<Device> d = create_device();
  return *d;
}

std::unique_ptr<Program> build(Device& dev, const std::string& src) {
  Blob bin;
  auto s = dev.compiler().compile(src, bin);
  BOOST_TEST_REQUIRE(s.ok(), "compile: " << s.message());
  Program* prog = nullptr;
  auto l = dev.load("main", bin.bytes(), &prog);
  BOOST_TEST_REQUIRE(l.ok(), "load: " << l.message());
  return std::unique_ptr<Program>(prog);
}

template <typename T>
using Buffer = tg::test::PluginBuffer<T>;

// out[i] = a[i] * scale + 0.5 for i < n, one invocation per element. With local = (1,1,1) the device picks
// the workgroup size (the shader then sees more invocations than the launch's global size and guards).
const std::string kScale = R"(#version 450
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(set = 0, binding = 0, std430) buffer Buf0 { float data0[]; };
layout(set = 0, binding = 1, std430) readonly buffer Buf1 { float data1[]; };
layout(push_constant) uniform Vals { uvec3 tg_grid; layout(offset = 16) int n; layout(offset = 24) int scale; } tg_vals;
void main() {
  int i = int(gl_WorkGroupID.x * gl_WorkGroupSize.x + gl_LocalInvocationID.x);
  if (i < tg_vals.n) data0[i] = data1[i] * float(tg_vals.scale) + 0.5;
}
)";

void run_scale(Device& dev, uint32_t local, uint32_t n = 100) {
  std::vector<float> a(n);
  for (size_t i = 0; i < a.size(); i++) a[i] = static_cast<float>(i % 1000) - 40.0f;
  Buffer<float> out(dev, std::vector<float>(a.size(), -1.0f)), in(dev, a);
  auto prog = build(dev, kScale);
  tg::sdk::LaunchDims d;
  d.local = {local, 1, 1};
  d.global = {(n + local - 1) / local, 1, 1};
  Handle bufs[] = {out.h, in.h};
  int64_t vals[] = {n, 3};
  double seconds = -1;
  auto s = prog->launch(bufs, vals, d, true, &seconds);
  BOOST_TEST_REQUIRE(s.ok(), s.message());
  BOOST_TEST(seconds > 0.0);
  auto got = out.read();
  size_t bad = 0, first = 0;
  for (size_t i = a.size(); i-- > 0;)
    if (got[i] != a[i] * 3.0f + 0.5f) bad++, first = i;
  BOOST_TEST(bad == 0u,
             bad << " wrong elements of " << n << ", first " << first << " (local " << local << ")");
}

// Runs f on VULKAN and on INTERP and compares the results (exactly for integers and bools).
void same_as_interp(const std::function<Tensor(const std::string&)>& f, double tol = 1e-5) {
  Tensor v = f("VULKAN"), r = f("INTERP");
  BOOST_TEST_REQUIRE(v.device() == "VULKAN");
  BOOST_TEST_REQUIRE((v.shape() == r.shape()));
  std::vector<double> got = v.to_vector<double>(), want = r.to_vector<double>();
  BOOST_TEST_REQUIRE(got.size() == want.size());
  bool exact = !r.dtype().is_float();
  for (size_t i = 0; i < got.size(); i++) {
    double err = std::abs(got[i] - want[i]), scale = std::max(1.0, std::abs(want[i]));
    BOOST_TEST((exact ? got[i] == want[i] : (err <= tol * scale || got[i] == want[i])),
               "element " << i << ": VULKAN " << got[i] << ", INTERP " << want[i]);
  }
}

std::vector<float> ramp(size_t n, float step, float start) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; i++) v[i] = start + step * static_cast<float>((i * 7919) % n);
  return v;
}

Tensor elementwise(const std::string& dev) {
  Tensor a(ramp(60, 0.37f, -11.0f), {6, 10}, {}, dev), b(ramp(60, 0.21f, 0.5f), {6, 10}, {}, dev);
  return ((a * b + a.abs().sqrt()) / (b + 1.0f)).maximum(a).exp() - (a < b).where(a, b).relu();
}

Tensor int_ops(const std::string& dev) {
  std::vector<int32_t> x = {-7, 7, -8, 9, 0, -1, 2147483647, -2147483647 - 1, 13, -13};
  std::vector<int32_t> y = {2, -2, 3, -3, 5, 7, 3, -1, 0, -4};
  Tensor a(x, {}, {}, dev), b(y, {}, {}, dev);
  return Tensor::stack({a.div(b, tg::Rounding::TRUNC), a.fmod(b), a % b, a * b + a, (a << 3) ^ b, a >> 2,
                        (a < b).cast(tg::dtypes::int32)});
}

Tensor reduce(const std::string& dev) {
  Tensor a(ramp(7 * 9 * 5, 0.01f, -1.0f), {7, 9, 5}, {}, dev);
  return Tensor::cat({a.sum(1).reshape({35}), a.max(2).reshape({63}), a.mean({0, 2}).reshape({9})});
}

Tensor matmul(const std::string& dev) {
  Tensor a(ramp(17 * 33, 0.03f, -2.0f), {17, 33}, {}, dev), b(ramp(33 * 9, 0.05f, -1.0f), {33, 9}, {}, dev);
  return a.matmul(b);
}

Tensor conv_backward(const std::string& dev) {
  Tensor x(ramp(2 * 3 * 8 * 8, 0.02f, -1.5f), {2, 3, 8, 8}, {}, dev);
  Tensor w(ramp(4 * 3 * 3 * 3, 0.05f, -0.6f), {4, 3, 3, 3}, {}, dev);
  x.requires_grad_(), w.requires_grad_();
  Tensor loss = x.conv2d(w, Tensor(), 1, 1).relu().square().sum();
  loss.backward();
  return Tensor::cat({x.grad().reshape({-1}), w.grad().reshape({-1})});
}

}  // namespace

BOOST_AUTO_TEST_CASE(descriptor_probe_and_device_index) {
  const auto& d = descriptor();
  BOOST_TEST(std::string(d.name) == "VULKAN");
  BOOST_TEST(d.abi_major == TG_ABI_MAJOR);
  BOOST_TEST(d.priority == 45);
  char reason[256] = {};
  BOOST_TEST_REQUIRE(d.probe(reason, sizeof reason) == 1, reason);
  char err[256] = {};
  BOOST_TEST(d.create(99, err, sizeof err) == nullptr);
  BOOST_TEST(std::string(err).find("device index 99 out of range") != std::string::npos, err);
  BOOST_TEST(std::string(device().description()).find("Vulkan 1.") != std::string::npos,
             device().description());
}

BOOST_AUTO_TEST_CASE(probe_without_a_driver_says_so) {
  // No driver manifest: the loader finds no device. The probe says so instead of failing later.
  setenv("VK_ICD_FILENAMES", "/nonexistent/tg_no_driver.json", 1);
  setenv("VK_DRIVER_FILES", "/nonexistent/tg_no_driver.json", 1);
  char reason[256] = {};
  int usable = descriptor().probe(reason, sizeof reason);
  unsetenv("VK_ICD_FILENAMES");
  unsetenv("VK_DRIVER_FILES");
  BOOST_TEST(usable == 0);
  BOOST_TEST(std::string(reason).starts_with("unavailable: no Vulkan device with a compute queue"), reason);
}

BOOST_AUTO_TEST_CASE(allocator_zero_size_views_and_copies) {
  Device& dev = device();
  auto& a = dev.allocator();
  BOOST_TEST(a.alignment() >= 16u);
  Handle z1 = nullptr, z2 = nullptr;
  BOOST_TEST_REQUIRE(a.alloc(0, {}, &z1).ok());
  BOOST_TEST_REQUIRE(a.alloc(0, {}, &z2).ok());
  BOOST_TEST((z1 != nullptr && z2 != nullptr && z1 != z2));
  a.free(z1, 0, {}), a.free(z2, 0, {});

  std::vector<int32_t> host(64);
  for (int i = 0; i < 64; i++) host[static_cast<size_t>(i)] = i * i - 100;
  Buffer<int32_t> buf(dev, host);
  BOOST_TEST(buf.read() == host, boost::test_tools::per_element());
  Handle view = nullptr;
  BOOST_TEST_REQUIRE(a.offset(buf.h, a.alignment(), 16, &view).ok());
  std::vector<int32_t> part(4);
  BOOST_TEST_REQUIRE(a.copyout(std::as_writable_bytes(std::span(part)), view).ok());
  for (size_t i = 0; i < 4; i++) BOOST_TEST(part[i] == host[a.alignment() / 4 + i]);
  std::vector<int32_t> five(4, 5);
  BOOST_TEST_REQUIRE(a.copyin(view, std::as_bytes(std::span(five))).ok());
  BOOST_TEST(buf.read()[a.alignment() / 4] == 5);
  a.free_view(view);
  Handle huge = nullptr;
  auto oom = a.alloc(size_t{1} << 50, {}, &huge);  // a petabyte: more than any heap
  BOOST_TEST((oom.code() == Code::out_of_memory), oom.message());
  Handle bad = nullptr;
  auto s = a.offset(buf.h, 4, 8, &bad);
  BOOST_TEST((s.code() == Code::unsupported));
  BOOST_TEST(std::string(s.message()).find("minStorageBufferOffsetAlignment") != std::string::npos,
             s.message());
}

BOOST_AUTO_TEST_CASE(launch_with_push_constants_local_size_and_timing) {
  for (uint32_t local : {1u, 8u, 64u}) run_scale(device(), local);
  // 200000 > maxComputeWorkGroupCount (65535 here) invocations: fine when the device picks the workgroups
  run_scale(device(), 1, 200000);
}

BOOST_AUTO_TEST_CASE(staging_copies_match_mapped_ones) {
  // TG_VULKAN_STAGING=1: device-local buffers with staged copies, as on a discrete GPU.
  setenv("TG_VULKAN_STAGING", "1", 1);
  char err[512] = {};
  auto* raw = static_cast<Device*>(descriptor().create(0, err, sizeof err));
  unsetenv("TG_VULKAN_STAGING");
  BOOST_TEST_REQUIRE(raw != nullptr, err);
  std::unique_ptr<Device> dev(raw);
  run_scale(*dev, 16);
  std::vector<uint8_t> bytes(1000);
  for (size_t i = 0; i < bytes.size(); i++) bytes[i] = static_cast<uint8_t>(i * 31);
  Buffer<uint8_t> b(*dev, bytes);
  BOOST_TEST(b.read() == bytes, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(compile_error_carries_shaderc_log) {
  Blob bin;
  auto s = device().compiler().compile("#version 450\nvoid main() { tg_no_such_function(1); }\n", bin);
  BOOST_TEST((s.code() == Code::compile_error));
  BOOST_TEST(std::string(s.message()).find("tg_no_such_function") != std::string::npos, s.message());
  BOOST_TEST(std::string(s.message()).find("kernel.comp:2") != std::string::npos, s.message());
  BOOST_TEST(std::string(device().compiler().cache_key()).find("shaderc") != std::string::npos);
  Program* p = nullptr;
  std::vector<std::byte> junk(64, std::byte{1});
  BOOST_TEST((device().load("main", junk, &p).code() == Code::invalid_argument));
}

// A damaged module with an intact header (cut short, as a torn cache write would leave it) is refused at
// load, where the caller can still compile again, and not at the first launch.
BOOST_AUTO_TEST_CASE(load_refuses_a_damaged_module) {
  Blob bin;
  BOOST_TEST_REQUIRE(device().compiler().compile(kScale, bin).ok());
  std::vector<std::byte> cut(bin.bytes().begin(), bin.bytes().end() - 8);
  Program* p = nullptr;
  Status s = device().load("main", cut, &p);
  BOOST_TEST((s.code() == Code::invalid_argument));
  BOOST_TEST(std::string(s.message()).find("not a valid SPIR-V module") != std::string::npos, s.message());
  BOOST_TEST(p == nullptr);
}

// DEBUG=7 and VIZ show this: the SPIR-V as spirv-dis prints it.
BOOST_AUTO_TEST_CASE(disassembles_spirv) {
  Blob bin, text;
  BOOST_TEST_REQUIRE(device().compiler().compile(kScale, bin).ok());
  auto s = device().compiler().disassemble(bin.bytes(), text);
  BOOST_TEST_REQUIRE(s.ok(), s.message());
  std::string asm_text(text.text());
  BOOST_TEST(asm_text.find("OpEntryPoint GLCompute") != std::string::npos, asm_text);
  BOOST_TEST(asm_text.find("OpFunctionEnd") != std::string::npos);
  std::vector<std::byte> junk(6, std::byte{1});
  BOOST_TEST((device().compiler().disassemble(junk, text).code() == Code::invalid_argument));
}

BOOST_AUTO_TEST_CASE(elementwise_matches_interp) { same_as_interp(elementwise); }
BOOST_AUTO_TEST_CASE(integer_ops_match_interp) { same_as_interp(int_ops); }
BOOST_AUTO_TEST_CASE(reduce_matches_interp) { same_as_interp(reduce); }
BOOST_AUTO_TEST_CASE(matmul_matches_interp) { same_as_interp(matmul, 1e-5); }
BOOST_AUTO_TEST_CASE(conv_backward_matches_interp) { same_as_interp(conv_backward, 1e-4); }

BOOST_AUTO_TEST_CASE(fused_mulacc_and_signed_zeros) {
  // float32 a*a+c is one fused multiply-add (MULACC), as on INTERP: it keeps the 2^-24 of a*a = 1 + 2^-11 +
  // 2^-24 and gives 2^-24; a rounded product (the 2^-24 tie goes to even) would give 0.
  const float a = 1.0f + std::ldexp(1.0f, -12), c = -(1.0f + std::ldexp(1.0f, -11));
  Tensor x(std::vector<float>{a, a}, {}, {}, "VULKAN"), y(std::vector<float>{c, c}, {}, {}, "VULKAN");
  auto got = (x * x + y).to_vector<float>();
  BOOST_TEST(got[0] == std::ldexp(1.0f, -24), "a*a+c gave " << got[0] << ": not fused");
  // round(-0.3) is -0: the decomposition carries the sign through x * 0, which the driver must not fold to +0
  auto r = Tensor(std::vector<float>{-0.3f, 0.3f, -2.7f}, {}, {}, "VULKAN").round().to_vector<float>();
  BOOST_TEST((r[0] == 0.0f && std::signbit(r[0])), "round(-0.3) gave " << r[0]);
  BOOST_TEST((r[1] == 0.0f && !std::signbit(r[1])));
  BOOST_TEST(r[2] == -3.0f);
}

BOOST_AUTO_TEST_CASE(dtypes_in_caps_run) {
  const auto& caps = tg::runtime::device("VULKAN").caps();
  for (tg::DType d : {tg::dtypes::bool_, tg::dtypes::int8, tg::dtypes::uint8, tg::dtypes::int16,
                      tg::dtypes::float16, tg::dtypes::int64, tg::dtypes::uint64, tg::dtypes::float64}) {
    if (!tg::sdk::has_dtype(caps, static_cast<unsigned>(d.scalar()))) continue;
    BOOST_TEST_CONTEXT(d.str()) {
      same_as_interp([&](const std::string& dev) {
        // SPIR-V leaves float -> unsigned of negative values undefined: unsigned types get non-negative
        // inputs
        std::vector<float> v{-3.0f, -1.0f, 0.0f, 1.0f, 2.0f, 5.0f, 7.0f, 100.0f};
        if (d.is_unsigned()) v = {3.0f, 1.0f, 0.0f, 1.0f, 2.0f, 5.0f, 7.0f, 100.0f};
        Tensor a(v, {}, {}, dev);
        Tensor x = a.cast(d);
        return (x + x * x).cast(tg::dtypes::float32) + (x < x.flip({0})).cast(tg::dtypes::float32);
      });
    }
  }
}

// LOCAL, GROUP/GROUPTOP (shared memory and barriers) and PADTO run on the device's workgroups: a sum of 2^20
// values, a 256 x 256 matmul and 1000 (and 37) values elementwise against the host's loops. lavapipe ends
// any loop after 65535 trips (llvmpipe's loop limit), so the sum without opts is left out.
BOOST_AUTO_TEST_CASE(workgroup_opts_match_the_host) {
  device();
  tg::test::workgroup::check_workgroup_opts(tg::runtime::device("VULKAN"), 65535);
}

// BEAM=2 with LOCAL/GROUP/GROUPTOP/PADTO among its actions picks opts that give the host's values.
BOOST_AUTO_TEST_CASE(beam_with_workgroup_actions_matches_the_host) {
  device();
  tg::test::workgroup::check_beam(tg::runtime::device("VULKAN"));
}

#ifdef TG_SPIRV_VAL
BOOST_AUTO_TEST_CASE(generated_spirv_validates) {
  tg::runtime::Device& dev = tg::runtime::device("VULKAN");
  int checked = 0;
  for (auto make : {elementwise, int_ops, reduce, matmul, conv_backward}) {
    for (const auto& si : make("VULKAN").schedule()) {
      if (si.ast->op() != tg::Ops::SINK) continue;
      tg::codegen::LinearProgram p = tg::codegen::lower_kernel(si.ast, dev.caps());
      Blob src, bin;
      BOOST_TEST_REQUIRE(dev.renderer().render(p.name, p.view(), src).ok());
      auto s = dev.compiler().compile(src.text(), bin);
      BOOST_TEST_REQUIRE(s.ok(), s.message() << "\n" << src.text());
      auto path = tg::test::scratch(p.name + std::to_string(checked) + ".spv");
      std::ofstream(path, std::ios::binary)
          .write(reinterpret_cast<const char*>(bin.bytes().data()), static_cast<std::streamsize>(bin.size()));
      std::string cmd = std::string(TG_SPIRV_VAL) + " --target-env vulkan1.1 " + path.string() + " 2>&1";
      BOOST_TEST(std::system(cmd.c_str()) == 0, "spirv-val rejects " << p.name << ":\n" << src.text());
      checked++;
    }
  }
  BOOST_TEST(checked >= 5);
}
#endif
