// The CL plugin end to end: the SDK interfaces on the plugin loaded from the build tree (allocator,
// compiler with its build log, launch, timing, caps against clGetDeviceInfo), then Tensor programs on CL
// compared with INTERP, the reference semantics. Without an OpenCL driver every test fails with the probe
// reason.
#define BOOST_TEST_MODULE cl
#include <boost/test/unit_test.hpp>

#include <dlfcn.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <boost/dll/shared_library.hpp>

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include "common/test_support.hpp"
#include "common/workgroup_kernels.hpp"
#include "runtime/registry.hpp"
#include "tensor/tensor.hpp"
#include "tg/sdk/plugin.hpp"

namespace {

using tg::Tensor;
using tg::sdk::Code;
using tg::sdk::Device;
using tg::sdk::Handle;

const tg_plugin_descriptor& descriptor() {
  static auto* lib = new boost::dll::shared_library(TG_CL_PLUGIN, boost::dll::load_mode::rtld_now);
  return lib->get_alias<const tg_plugin_descriptor>("tgplugin_1_" + std::to_string(TG_ABI_MINOR) + "_CL");
}

// Fails the current test with the plugin's own reason when no OpenCL device is usable here.
void require_usable() {
  char reason[1024] = {};
  int ok = descriptor().probe(reason, sizeof reason);
  BOOST_TEST_REQUIRE(ok == 1, "the CL plugin is unusable here: " << reason);
}

Device& device() {
  require_usable();
  static std::unique_ptr<Device> dev;
  if (!dev) {
    char err[1024] = {};
    dev.reset(static_cast<Device*>(descriptor().create(0, err, sizeof err)));
    BOOST_TEST_REQUIRE(dev != nullptr, "create failed: " << err);
  }
  return *dev;
}

std::unique_ptr<tg::sdk::Program> build(Device& dev, const char* kernel, const std::string& src) {
  tg::sdk::Blob bin;
  auto s = dev.compiler().compile(src, bin);
  BOOST_TEST_REQUIRE(s.ok(), "compile: " << s.message());
  tg::sdk::Program* prog = nullptr;
  auto l = dev.load(kernel, bin.bytes(), &prog);
  BOOST_TEST_REQUIRE(l.ok(), "load: " << l.message());
  return std::unique_ptr<tg::sdk::Program>(prog);
}

std::vector<float> host_randn(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist;
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

// f built on CL and on INTERP from the same host data must agree.
void same_as_interp(const std::function<Tensor(const std::string&)>& f, double rtol = 1e-4,
                    double atol = 1e-5) {
  require_usable();
  std::vector<float> got = f("CL").to_vector<float>(), want = f("INTERP").to_vector<float>();
  BOOST_TEST_REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); i++)
    BOOST_TEST(std::abs(got[i] - want[i]) <= atol + rtol * std::abs(want[i]),
               "element " << i << ": CL " << got[i] << " vs INTERP " << want[i]);
}

// clGetDeviceInfo of device 0, asked straight from the ICD loader.
struct DirectCl {
  decltype(&clGetPlatformIDs) platforms;
  decltype(&clGetDeviceIDs) devices;
  decltype(&clGetDeviceInfo) info;
  cl_device_id dev = nullptr;
  DirectCl() {
    void* lib = dlopen("libOpenCL.so.1", RTLD_NOW);
    BOOST_TEST_REQUIRE(lib != nullptr);
    platforms = reinterpret_cast<decltype(platforms)>(dlsym(lib, "clGetPlatformIDs"));
    devices = reinterpret_cast<decltype(devices)>(dlsym(lib, "clGetDeviceIDs"));
    info = reinterpret_cast<decltype(info)>(dlsym(lib, "clGetDeviceInfo"));
    cl_platform_id p = nullptr;
    BOOST_TEST_REQUIRE(platforms(1, &p, nullptr) == CL_SUCCESS);
    BOOST_TEST_REQUIRE(devices(p, CL_DEVICE_TYPE_ALL, 1, &dev, nullptr) == CL_SUCCESS);
  }
  template <typename T>
  T get(cl_device_info param) {
    T v{};
    BOOST_TEST_REQUIRE(info(dev, param, sizeof v, &v, nullptr) == CL_SUCCESS);
    return v;
  }
  std::string extensions() {
    size_t n = 0;
    info(dev, CL_DEVICE_EXTENSIONS, 0, nullptr, &n);
    std::string s(n, '\0');
    info(dev, CL_DEVICE_EXTENSIONS, n, s.data(), nullptr);
    return s;
  }
};

}  // namespace

BOOST_AUTO_TEST_CASE(descriptor_probe_and_manifest) {
  const auto& d = descriptor();
  BOOST_TEST(std::string(d.name) == "CL");
  BOOST_TEST(d.abi_major == TG_ABI_MAJOR);
  require_usable();
  char err[256] = {};
  BOOST_TEST(d.create(1000, err, sizeof err) == nullptr);
  BOOST_TEST(std::string(err).find("no OpenCL device 1000") != std::string::npos, err);
  auto manifest = std::filesystem::path(TG_CL_PLUGIN).parent_path() / "libtg-cl.conformance.json";
  BOOST_TEST(std::filesystem::exists(manifest), manifest);
}

// The ICD loader reads its drivers from OCL_ICD_VENDORS: pointing it at nothing leaves no platform, which a
// fresh process (the loader initializes once) must report with the probe's reason.
BOOST_AUTO_TEST_CASE(no_driver_is_reported_by_tg_devices) {
  std::string out =
      tg::test::run_command("OCL_ICD_VENDORS=/nonexistent " + tg::test::shell_quote(TG_CLI) + " devices 2>&1")
          .out;
  BOOST_TEST(out.find("unavailable: no OpenCL device (clGetPlatformIDs returned") != std::string::npos, out);
}

BOOST_AUTO_TEST_CASE(caps_match_clGetDeviceInfo) {
  const auto& caps = device().renderer().caps();
  DirectCl cl;
  auto wg = cl.get<size_t>(CL_DEVICE_MAX_WORK_GROUP_SIZE);
  size_t items[3] = {};
  BOOST_TEST_REQUIRE(cl.info(cl.dev, CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof items, items, nullptr) ==
                     CL_SUCCESS);
  BOOST_TEST(caps.max_local_size == wg);
  for (int i = 0; i < 3; i++) BOOST_TEST(caps.local_max[i] == std::min(items[i], wg));
  BOOST_TEST(caps.max_shared_bytes == cl.get<cl_ulong>(CL_DEVICE_LOCAL_MEM_SIZE));
  BOOST_TEST(caps.has_local);
  BOOST_TEST(!caps.has_threads);
  std::string ext = " " + cl.extensions() + " ";
  auto has = [&](tg::Scalar s) { return tg::sdk::has_dtype(caps, static_cast<unsigned>(s)); };
  BOOST_TEST(has(tg::Scalar::FLOAT16) == (ext.find(" cl_khr_fp16 ") != std::string::npos));
  BOOST_TEST(has(tg::Scalar::FLOAT64) == (ext.find(" cl_khr_fp64 ") != std::string::npos ||
                                          cl.get<cl_device_fp_config>(CL_DEVICE_DOUBLE_FP_CONFIG) != 0));
  BOOST_TEST(has(tg::Scalar::INT64));
  // bfloat16 and fp8 have no OpenCL C type: declared as emulated (bits in ushort/uchar, float in registers)
  for (tg::Scalar s : {tg::Scalar::BFLOAT16, tg::Scalar::FP8E4M3, tg::Scalar::FP8E5M2}) {
    BOOST_TEST(has(s));
    BOOST_TEST((tg::sdk::emulated_dtypes(caps) >> static_cast<int>(s) & 1) == 1);
  }
  BOOST_TEST(std::string(caps.dialect) == "opencl");
  BOOST_TEST(device().allocator().alignment() == cl.get<cl_uint>(CL_DEVICE_MEM_BASE_ADDR_ALIGN) / 8);
}

BOOST_AUTO_TEST_CASE(compile_error_carries_the_build_log) {
  tg::sdk::Blob bin;
  auto s =
      device().compiler().compile("__kernel void bad(__global float* a) { a[0] = tg_no_such_name; }\n", bin);
  BOOST_TEST(static_cast<int>(s.code()) == static_cast<int>(Code::compile_error));
  std::string msg(s.message());
  BOOST_TEST(msg.find("[CL compile]") != std::string::npos, msg);
  BOOST_TEST(msg.find("tg_no_such_name") != std::string::npos, msg);  // the driver's log names it
  BOOST_TEST(msg.find("error") != std::string::npos, msg);
}

// DEBUG=7 and VIZ ask every compiler for assembly; the OpenCL C path has none and says why.
BOOST_AUTO_TEST_CASE(disassembly_is_declined_with_the_reason) {
  tg::sdk::Blob bin, text;
  BOOST_TEST_REQUIRE(device().compiler().compile("__kernel void k(__global float* a) { a[0] = 1.0f; }\n", bin).ok());
  auto s = device().compiler().disassemble(bin.bytes(), text);
  BOOST_TEST(static_cast<int>(s.code()) == static_cast<int>(Code::unsupported));
  BOOST_TEST(std::string(s.message()).find("DEV=CL:spirv") != std::string::npos, s.message());
}

BOOST_AUTO_TEST_CASE(launch_with_long_argument_and_profiling_time) {
  Device& dev = device();
  auto prog = build(dev, "axpy", R"(
__kernel void axpy(__global float* out, __global const float* x, const long n) {
  int i = (int)get_group_id(0) * (int)get_local_size(0) + (int)get_local_id(0);
  if (i < n) out[i] = 2.0f * x[i] + (float)n;
})");
  std::vector<float> x(100), back(100, 0.0f);
  for (int i = 0; i < 100; i++) x[i] = float(i) - 50.0f;
  auto& a = dev.allocator();
  Handle out = nullptr, in = nullptr;
  BOOST_TEST_REQUIRE(a.alloc(x.size() * 4, {}, &out).ok());
  BOOST_TEST_REQUIRE(a.alloc(x.size() * 4, {}, &in).ok());
  BOOST_TEST_REQUIRE(a.copyin(in, std::as_bytes(std::span(x))).ok());
  Handle bufs[] = {out, in};
  int64_t vals[] = {90};  // only the first 90 are written
  tg::sdk::LaunchDims dims;
  dims.global = {25, 1, 1}, dims.local = {4, 1, 1};
  double seconds = -1;
  auto s = prog->launch(bufs, vals, dims, true, &seconds);
  BOOST_TEST_REQUIRE(s.ok(), s.message());
  BOOST_TEST(seconds > 0.0);
  BOOST_TEST(seconds < 60.0);
  BOOST_TEST_REQUIRE(a.copyout(std::as_writable_bytes(std::span(back)), out).ok());
  BOOST_TEST(back[0] == -10.0f);   // 2*(-50) + 90
  BOOST_TEST(back[89] == 168.0f);  // 2*39 + 90
  dims.local = {100000, 1, 1};     // beyond CL_DEVICE_MAX_WORK_GROUP_SIZE
  auto bad = prog->launch(bufs, vals, dims, true, nullptr);
  BOOST_TEST(static_cast<int>(bad.code()) == static_cast<int>(Code::invalid_argument), bad.message());
  tg::sdk::Program* none = nullptr;
  tg::sdk::Blob bin;
  BOOST_TEST_REQUIRE(dev.compiler().compile("__kernel void k(__global int* a) { a[0] = 1; }", bin).ok());
  auto missing = dev.load("not_there", bin.bytes(), &none);
  BOOST_TEST(std::string(missing.message()).find("no kernel 'not_there'") != std::string::npos,
             missing.message());
  std::string foreign =
      "\x7f"
      "ELF not a CL binary";
  BOOST_TEST(!dev.load("k", std::as_bytes(std::span(foreign)), &none).ok());
  a.free(out, 400, {});
  a.free(in, 400, {});
}

BOOST_AUTO_TEST_CASE(allocator_zero_size_views_transfer_oom) {
  auto& a = device().allocator();
  Handle z0 = nullptr, z1 = nullptr, buf = nullptr, dst = nullptr;
  BOOST_TEST_REQUIRE(a.alloc(0, {}, &z0).ok());
  BOOST_TEST_REQUIRE(a.alloc(0, {}, &z1).ok());
  BOOST_TEST((z0 != nullptr && z1 != nullptr && z0 != z1));
  const size_t align = a.alignment(), n = 4 * align / sizeof(int32_t);
  std::vector<int32_t> src(n), back(n);
  for (size_t i = 0; i < n; i++) src[i] = static_cast<int32_t>(i) * 3 - 7;
  BOOST_TEST_REQUIRE(a.alloc(n * 4, {}, &buf).ok());
  BOOST_TEST_REQUIRE(a.copyin(buf, std::as_bytes(std::span(src))).ok());
  // An aligned view writes into its parent; a view of a view keeps the parent's origin.
  Handle view = nullptr, inner = nullptr;
  BOOST_TEST_REQUIRE(a.offset(buf, align, 2 * align, &view).ok());
  BOOST_TEST_REQUIRE(a.offset(view, align, align, &inner).ok());
  std::vector<int32_t> ones(align / 4, 1);
  BOOST_TEST_REQUIRE(a.copyin(inner, std::as_bytes(std::span(ones))).ok());
  BOOST_TEST_REQUIRE(a.copyout(std::as_writable_bytes(std::span(back)), buf).ok());
  const size_t first = 2 * align / 4;  // the inner view starts 2*align bytes into buf
  BOOST_TEST(back[first - 1] == src[first - 1]);
  BOOST_TEST(back[first] == 1);
  BOOST_TEST(back[first + align / 4 - 1] == 1);
  BOOST_TEST(back[first + align / 4] == src[first + align / 4]);
  Handle unaligned = nullptr;
  auto u = a.offset(buf, 4, 8, &unaligned);
  BOOST_TEST(static_cast<int>(u.code()) == static_cast<int>(Code::unsupported), u.message());
  BOOST_TEST_REQUIRE(a.alloc(n * 4, {}, &dst).ok());
  BOOST_TEST_REQUIRE(a.transfer(dst, buf, n * 4).ok());
  std::vector<int32_t> copied(n);
  BOOST_TEST_REQUIRE(a.copyout(std::as_writable_bytes(std::span(copied)), dst).ok());
  BOOST_TEST(copied == back, boost::test_tools::per_element());
  Handle huge = nullptr;
  auto oom = a.alloc(size_t{1} << 60, {}, &huge);
  BOOST_TEST(static_cast<int>(oom.code()) == static_cast<int>(Code::out_of_memory), oom.message());
  a.free_view(inner);
  a.free_view(view);
  for (Handle h : {z0, z1, buf, dst}) a.free(h, 0, {});
}

BOOST_AUTO_TEST_CASE(matmul_hand_derived) {
  require_usable();
  Tensor a({1.0f, 2.0f, 3.0f, 4.0f}, {2, 2}, {}, "CL"), b({5.0f, 6.0f, 7.0f, 8.0f}, {2, 2}, {}, "CL");
  std::vector<float> c = a.matmul(b).to_vector<float>();
  BOOST_TEST(c == (std::vector<float>{19, 22, 43, 50}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(elementwise_matches_interp) {
  auto x = host_randn(1000, 1), y = host_randn(1000, 2);
  same_as_interp([&](const std::string& dev) {
    Tensor a(x, {10, 100}, {}, dev), b(y, {10, 100}, {}, dev);
    return (a * b + a.exp() - b.abs().sqrt() + a.sin() * b.maximum(a) + (a.abs() + 1.0).log2())
        .where(a < b, b.trunc());
  });
  same_as_interp([&](const std::string& dev) {  // integer math, int64 and a cast back to float
    Tensor i = Tensor::arange(1000, tg::dtypes::int64, dev).reshape({10, 100});
    return ((i * i * int64_t{3000000} / 7 + i % 13) % 1000003).cast(tg::dtypes::float32);
  });
}

BOOST_AUTO_TEST_CASE(reduce_matches_interp) {
  auto x = host_randn(64 * 300, 3);
  same_as_interp([&](const std::string& dev) { return Tensor(x, {64, 300}, {}, dev).sum(1); }, 1e-4, 1e-4);
  same_as_interp([&](const std::string& dev) { return Tensor(x, {64, 300}, {}, dev).max(0); });
  same_as_interp(
      [&](const std::string& dev) {
        return Tensor(x, {64, 300}, {}, dev).log_softmax(-1);
      },
      1e-4, 1e-4);
}

BOOST_AUTO_TEST_CASE(matmul_matches_interp) {
  auto x = host_randn(33 * 70, 4), w = host_randn(70 * 45, 5);
  same_as_interp(
      [&](const std::string& dev) {
        return Tensor(x, {33, 70}, {}, dev).matmul(Tensor(w, {70, 45}, {}, dev)).relu();
      },
      1e-4, 1e-4);
}

BOOST_AUTO_TEST_CASE(conv2d_backward_matches_interp) {
  auto x = host_randn(2 * 3 * 8 * 8, 6), w = host_randn(4 * 3 * 3 * 3, 7), b = host_randn(4, 8);
  for (int which = 0; which < 2; which++) {
    same_as_interp(
        [&](const std::string& dev) {
          Tensor xt(x, {2, 3, 8, 8}, {}, dev), wt(w, {4, 3, 3, 3}, {}, dev), bt(b, {4}, {}, dev);
          xt.requires_grad_(), wt.requires_grad_();
          xt.conv2d(wt, bt, 1, 1).relu().square().mean().backward();
          return which == 0 ? wt.grad() : xt.grad();
        },
        1e-3, 1e-5);
  }
}

BOOST_AUTO_TEST_CASE(every_integer_dtype_and_double_match_interp) {
  using namespace tg::dtypes;
  for (tg::DType d : {int8, uint8, int16, uint16, int32, uint32, int64, uint64, float64}) {
    BOOST_TEST_CONTEXT(d.str()) {
      same_as_interp(
          [&](const std::string& dev) {
            Tensor a = (Tensor::arange(200, int32, dev) * 37 % 101).cast(d).reshape({10, 20});
            Tensor b = (Tensor::arange(200, int32, dev) % 7 + 1).cast(d).reshape({10, 20});
            Tensor mixed = (a * b + a).maximum(b) - b + a.div(b, tg::Rounding::TRUNC) + (a < b).where(a, b);
            return mixed.cast(float32) + a.sum(1, true).cast(float32);
          },
          0.0, 0.0);
    }
  }
}

BOOST_AUTO_TEST_CASE(bool_buffers_and_bitcasts_match_interp) {
  auto x = host_randn(300, 9);
  same_as_interp(
      [&](const std::string& dev) {
        Tensor a(x, {300}, {}, dev);
        Tensor mask = (a > 0.25).contiguous().realize();  // a bool buffer in device memory
        Tensor bits = a.bitcast(tg::dtypes::int32);
        return mask.where(a, -a) + mask.logical_not().cast(tg::dtypes::float32) +
               bits.bitwise_and(0xff).cast(tg::dtypes::float32) + a.isnan().cast(tg::dtypes::float32);
      },
      0.0, 0.0);
}

// A kernel rendered with global ids runs one work item per launch index whatever local size the launch asks
// for: a group of 4 must neither write past the buffer nor repeat the read-modify-write.
BOOST_AUTO_TEST_CASE(global_id_kernels_ignore_the_requested_group_size) {
  Device& dev = device();
  auto prog =
      build(dev, "inc",
            "// tg: work items indexed by get_global_id\n"
            "__kernel void inc(__global int* a) { int i = (int)get_global_id(0); a[i] = a[i] * 2 + 1; }\n");
  auto& a = dev.allocator();
  std::vector<int32_t> host{0, 1, 2, 3, 4, 5, 6, 7, -1, -1, -1, -1}, back(12);
  Handle buf = nullptr;
  BOOST_TEST_REQUIRE(a.alloc(host.size() * 4, {}, &buf).ok());
  BOOST_TEST_REQUIRE(a.copyin(buf, std::as_bytes(std::span(host))).ok());
  Handle bufs[] = {buf};
  tg::sdk::LaunchDims dims;
  dims.global = {8, 1, 1}, dims.local = {4, 1, 1};
  BOOST_TEST_REQUIRE(prog->launch(bufs, {}, dims, true, nullptr).ok());
  BOOST_TEST_REQUIRE(a.copyout(std::as_writable_bytes(std::span(back)), buf).ok());
  BOOST_TEST(back == (std::vector<int32_t>{1, 3, 5, 7, 9, 11, 13, 15, -1, -1, -1, -1}),
             boost::test_tools::per_element());
  a.free(buf, 48, {});
}

namespace {

// A CL binary by hand: the 8-byte header ("TGOCL", format 2, flags, 0) and its payload.
std::vector<std::byte> cl_binary(uint8_t flags, const std::string& payload) {
  std::string bytes = std::string("TGOCL\x02", 6) + static_cast<char>(flags) + '\0' + payload;
  auto b = std::as_bytes(std::span(bytes));
  return {b.begin(), b.end()};
}

std::string le32(uint32_t v) {
  return {static_cast<char>(v & 0xff), static_cast<char>((v >> 8) & 0xff),
          static_cast<char>((v >> 16) & 0xff), static_cast<char>(v >> 24)};
}

}  // namespace

// When the driver's binary is incomplete (PoCL serializes it from its on-disk kernel cache, which a second
// process building the same source may not have finished: program.bc comes back empty), the compiler keeps
// the source (flag bit 1) and load builds it. Such a binary must load and run.
BOOST_AUTO_TEST_CASE(source_kept_as_the_binary_loads_and_runs) {
  Device& dev = device();
  const std::string src =
      "// tg: work items indexed by get_global_id\n"
      "__kernel void sq(__global int* a, const long n) { int i = (int)get_global_id(0); a[i] = a[i] * a[i] + "
      "(int)n; }\n";
  auto bin = cl_binary(3, src);  // global ids + source
  tg::sdk::Program* raw = nullptr;
  auto l = dev.load("sq", bin, &raw);
  BOOST_TEST_REQUIRE(l.ok(), l.message());
  std::unique_ptr<tg::sdk::Program> prog(raw);
  auto& a = dev.allocator();
  std::vector<int32_t> host{-3, -1, 0, 2, 5, 7}, back(6);
  Handle buf = nullptr;
  BOOST_TEST_REQUIRE(a.alloc(host.size() * 4, {}, &buf).ok());
  BOOST_TEST_REQUIRE(a.copyin(buf, std::as_bytes(std::span(host))).ok());
  Handle bufs[] = {buf};
  int64_t vals[] = {10};
  tg::sdk::LaunchDims dims;
  dims.global = {6, 1, 1}, dims.local = {4, 1, 1};  // global ids: exactly 6 items whatever local says
  BOOST_TEST_REQUIRE(prog->launch(bufs, vals, dims, true, nullptr).ok());
  BOOST_TEST_REQUIRE(a.copyout(std::as_writable_bytes(std::span(back)), buf).ok());
  BOOST_TEST(back == (std::vector<int32_t>{19, 11, 10, 14, 35, 59}), boost::test_tools::per_element());
  a.free(buf, 24, {});
  // A kept source that does not build reports the driver's log; one without the kernel names it.
  auto broken = cl_binary(2, "__kernel void sq(__global int* a) { a[0] = tg_no_such_name; }\n");
  auto b = dev.load("sq", broken, &raw);
  BOOST_TEST(!b.ok());
  BOOST_TEST(std::string(b.message()).find("tg_no_such_name") != std::string::npos, b.message());
  auto other = cl_binary(2, "__kernel void k(__global int* a) { a[0] = 1; }\n");
  auto o = dev.load("sq", other, &raw);
  BOOST_TEST(std::string(o.message()).find("no kernel 'sq'") != std::string::npos, o.message());
}

// PoCL asserts (aborts the whole process) in clCreateProgramWithBinary on a binary without kernels or with
// an empty program.bc. load() must refuse those with an error instead; the core then compiles again.
BOOST_AUTO_TEST_CASE(incomplete_pocl_binary_is_an_error_not_an_abort) {
  Device& dev = device();
  // "poclbin\0", device hash, format version 9, kernel count, version fields, "/program.bc", its length.
  auto pocl = [](uint32_t kernels, const std::string& bc) {
    return std::string("poclbin\0", 8) + std::string(8, '\x5a') + le32(9) + le32(kernels) +
           std::string(16, '\0') + le32(11) + "/program.bc" + le32(static_cast<uint32_t>(bc.size())) + bc;
  };
  tg::sdk::Program* none = nullptr;
  auto empty_bc = dev.load("k", cl_binary(0, pocl(1, "")), &none);
  BOOST_TEST(static_cast<int>(empty_bc.code()) == static_cast<int>(Code::invalid_argument));
  BOOST_TEST(std::string(empty_bc.message()).find("[CL load] the PoCL binary's program.bc is empty") !=
                 std::string::npos,
             empty_bc.message());
  auto no_kernel = dev.load("k", cl_binary(0, pocl(0, "BC\xc0\xde")), &none);
  BOOST_TEST(std::string(no_kernel.message()).find("holds no kernel") != std::string::npos,
             no_kernel.message());
  std::string whole = pocl(1, "BC\xc0\xde");
  auto cut = dev.load("k", cl_binary(0, whole.substr(0, whole.size() - 2)), &none);
  BOOST_TEST(std::string(cut.message()).find("shorter than its program.bc") != std::string::npos,
             cut.message());
  // A complete one of another device goes to the driver, which rejects it with an error.
  auto foreign = dev.load("k", cl_binary(0, whole), &none);
  BOOST_TEST(
      std::string(foreign.message()).find("[CL load] the driver rejected the binary") != std::string::npos,
      foreign.message());
  BOOST_TEST(none == nullptr);
  // What the compiler returns loads: a real binary passes the same check.
  tg::sdk::Blob bin;
  BOOST_TEST_REQUIRE(dev.compiler().compile("__kernel void k(__global int* a) { a[0] = 7; }", bin).ok());
  auto ok = dev.load("k", bin.bytes(), &none);
  BOOST_TEST_REQUIRE(ok.ok(), ok.message());
  delete none;
  none = nullptr;
  // On PoCL, the same real binary (this device's hash, so PoCL would read on) with its program.bc emptied,
  // as a racing build leaves it.
  std::string real(reinterpret_cast<const char*>(bin.bytes().data()), bin.bytes().size());
  if (real.compare(8, 8, std::string("poclbin\0", 8)) == 0) {
    size_t end = real.find("program.bc", 16);
    BOOST_TEST_REQUIRE(end != std::string::npos);
    end += 10;
    std::string emptied = real.substr(0, end) + le32(0);
    auto e = dev.load("k", std::as_bytes(std::span(emptied)), &none);
    BOOST_TEST(std::string(e.message()).find("program.bc is empty") != std::string::npos, e.message());
    BOOST_TEST(none == nullptr);
  }
}

// LOCAL, GROUP/GROUPTOP (shared memory and barriers) and PADTO run on the device's workgroups: a sum of 2^20
// values, a 256 x 256 matmul and 1000 (and 37) values elementwise against the host's loops.
BOOST_AUTO_TEST_CASE(workgroup_opts_match_the_host) {
  require_usable();
  tg::test::workgroup::check_workgroup_opts(tg::runtime::device("CL"));
}

// BEAM=2 with LOCAL/GROUP/GROUPTOP/PADTO among its actions picks opts that give the host's values.
BOOST_AUTO_TEST_CASE(beam_with_workgroup_actions_matches_the_host) {
  require_usable();
  tg::test::workgroup::check_beam(tg::runtime::device("CL"));
}
