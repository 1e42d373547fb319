// The CLANG plugin end to end through the SDK only: the .so is loaded with Boost.DLL as the core would,
// and every check runs on both compile paths (libclang-cpp in process, and the clang binary).
#define BOOST_TEST_MODULE clang
#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <chrono>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <boost/dll/library_info.hpp>
#include <boost/dll/shared_library.hpp>

#include "codegen/lower.hpp"
#include "common/test_support.hpp"
#include "tensor/realize.hpp"
#include "tensor/tensor.hpp"
#include "tg/sdk/plugin.hpp"

namespace {

using tg::sdk::Blob;
using tg::sdk::Code;
using tg::sdk::Device;
using tg::sdk::Handle;
using tg::sdk::Program;

const tg_plugin_descriptor& descriptor() {
  // Leaked like the core does: plugins are never unloaded, so devices may be destroyed at exit.
  static auto* lib = new boost::dll::shared_library(TG_CLANG_PLUGIN, boost::dll::load_mode::rtld_now);
  return lib->get_alias<const tg_plugin_descriptor>("tgplugin_1_" + std::to_string(TG_ABI_MINOR) + "_CLANG");
}

enum class Path { libclang, binary };
const char* name(Path p) { return p == Path::libclang ? "libclang-cpp" : "clang binary"; }

std::vector<Path> paths() {
  if (TG_CLANG_HAS_LIBCLANG) return {Path::libclang, Path::binary};
  return {Path::binary};
}

std::unique_ptr<Device> create_device(Path p) {
  setenv("TG_CLANG_INPROCESS", p == Path::binary ? "0" : "1", 1);
  char err[512] = {};
  auto* dev = static_cast<Device*>(descriptor().create(0, err, sizeof err));
  unsetenv("TG_CLANG_INPROCESS");
  BOOST_TEST_REQUIRE(dev != nullptr, "create failed: " << err);
  return std::unique_ptr<Device>(dev);
}

Device& device(Path p) {
  static std::map<Path, std::unique_ptr<Device>> devices;
  auto& d = devices[p];
  if (!d) d = create_device(p);
  return *d;
}

std::unique_ptr<Program> build(Device& dev, const char* kernel, const std::string& src) {
  Blob bin;
  auto s = dev.compiler().compile(src, bin);
  BOOST_TEST_REQUIRE(s.ok(), "compile: " << s.message());
  Program* prog = nullptr;
  auto l = dev.load(kernel, bin.bytes(), &prog);
  BOOST_TEST_REQUIRE(l.ok(), "load: " << l.message());
  return std::unique_ptr<Program>(prog);
}

template <typename T>
using Buffer = tg::test::PluginBuffer<T>;

tg::sdk::LaunchDims tasks(uint32_t n) {
  tg::sdk::LaunchDims d;
  d.global = {n, 1, 1};
  return d;
}

bool cpu_has_flag(const std::string& flag) {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.starts_with("flags")) return (line + " ").find(" " + flag + " ") != std::string::npos;
  return false;
}

// A shell command's output (stdout and stderr); *status gets its exit status, -1 when it could not start.
std::string run_command(const std::string& cmd, int* status = nullptr) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) {
    if (status) *status = -1;
    return "";
  }
  std::string out;
  for (char buf[4096]; size_t n = std::fread(buf, 1, sizeof buf, p);) out.append(buf, n);
  int st = pclose(p);
  if (status) *status = st;
  return out;
}

// What the clang driver resolves -march=native to, asked from the clang binary itself.
std::string clang_native_cpu() {
  std::string out = run_command("clang -### -march=native -c -x c /dev/null -o /dev/null");
  auto at = out.find("\"-target-cpu\" \"");
  if (at == std::string::npos) return "";
  at += std::strlen("\"-target-cpu\" \"");
  return out.substr(at, out.find('"', at) - at);
}

// The one kernel of t's schedule, lowered for dev's caps and rendered by its renderer.
struct Rendered {
  std::string name, source;
  tg::sdk::LaunchDims dims;
};
Rendered render_one(Device& dev, const tg::Tensor& t) {
  std::vector<tg::engine::ScheduleItemView> items = t.schedule();
  BOOST_TEST_REQUIRE(items.size() == 1u);
  tg::codegen::LinearProgram prog = tg::codegen::lower_kernel(items[0].ast, dev.renderer().caps());
  std::vector<const tg::UOp*> view = prog.view();
  Blob src;
  BOOST_TEST_REQUIRE(dev.renderer().render(prog.name, view, src).ok());
  return {prog.name, std::string(src.text()), prog.launch_dims({})};
}

// The assembly clang makes of a rendered kernel with the plugin's flags (base_flags() in
// plugins/clang/compiler.cpp).
std::string assembly(const std::string& src) {
  std::filesystem::path dir = std::filesystem::temp_directory_path() / ("tg_vec_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "k.c") << src;
  std::string cmd =
      "clang -O2 -march=native -mprefer-vector-width=512 -fPIC -ffp-contract=off -fwrapv -fno-math-errno "
      "-nostdinc -S -o - " +
      (dir / "k.c").string();
  int status = 0;
  std::string text = run_command(cmd, &status);
  BOOST_TEST(status == 0, text.substr(0, 2000));
  std::filesystem::remove_all(dir);
  return text;
}

// Instructions starting with `ins` whose operands name register class `reg` ("%ymm").
size_t count_on(const std::string& asm_text, const std::string& ins, const std::string& reg) {
  size_t n = 0;
  for (size_t at = asm_text.find(ins); at != std::string::npos; at = asm_text.find(ins, at + 1)) {
    size_t eol = asm_text.find('\n', at);
    if (asm_text.substr(at, eol - at).find(reg) != std::string::npos) n++;
  }
  return n;
}

const std::string kAdd = R"(
void add(void* const* bufs, const long long* vals, int core_id) {
  float* out = (float*)bufs[0];
  const float* a = (const float*)bufs[1];
  const float* b = (const float*)bufs[2];
  for (long long i = 0; i < vals[0]; i++) out[i] = a[i] + b[i];
}
)";

}  // namespace

BOOST_AUTO_TEST_CASE(descriptor_is_readable_before_loading) {
  boost::dll::library_info info(TG_CLANG_PLUGIN);
  auto syms = info.symbols("tgplugin");
  BOOST_TEST((std::find(syms.begin(), syms.end(), "tgplugin_1_" + std::to_string(TG_ABI_MINOR) + "_CLANG") !=
              syms.end()));
  const auto& d = descriptor();
  BOOST_TEST(d.struct_size == sizeof(tg_plugin_descriptor));
  BOOST_TEST(d.abi_major == TG_ABI_MAJOR);
  BOOST_TEST(std::string(d.name) == "CLANG");
  BOOST_TEST(d.priority == 50);
  char reason[256] = {};
  BOOST_TEST(d.probe(reason, sizeof reason) == 1, reason);
  char err[256] = {};
  BOOST_TEST(d.create(1, err, sizeof err) == nullptr);
  BOOST_TEST(std::string(err).find("TG_CLANG_DEVICES=1") != std::string::npos,
             err);  // CLANG:1 needs 2 devices
}

BOOST_AUTO_TEST_CASE(probe_explains_a_missing_clang_binary) {
  setenv("TG_CLANG_INPROCESS", "0", 1);
  setenv("TG_CLANG", "tg-no-such-clang", 1);
  char reason[256] = {}, err[256] = {};
  int usable = descriptor().probe(reason, sizeof reason);
  void* dev = descriptor().create(0, err, sizeof err);
  unsetenv("TG_CLANG");
  unsetenv("TG_CLANG_INPROCESS");
  BOOST_TEST(usable == 0);
  BOOST_TEST(std::string(reason).find("'tg-no-such-clang' not found") != std::string::npos, reason);
  BOOST_TEST(dev == nullptr);
  BOOST_TEST(std::string(err).find("tg-no-such-clang") != std::string::npos, err);
}

BOOST_AUTO_TEST_CASE(allocator_alignment_zero_size_views_and_copies) {
  auto& a = device(paths()[0]).allocator();
  BOOST_TEST(a.alignment() == 64u);
  std::vector<Handle> hs;
  for (size_t n : {0, 0, 1, 3, 64, 1000}) {
    Handle h = nullptr;
    BOOST_TEST_REQUIRE(a.alloc(n, {}, &h).ok());
    BOOST_TEST(reinterpret_cast<uintptr_t>(h) % 64 == 0u);
    for (Handle o : hs) BOOST_TEST(o != h);
    hs.push_back(h);
  }
  std::vector<int32_t> src{1, -2, 3, -4, 5, -6, 7, -8}, back(8, 0);
  Handle buf = hs.back();
  BOOST_TEST(a.copyin(buf, std::as_bytes(std::span(src))).ok());
  BOOST_TEST(a.copyout(std::as_writable_bytes(std::span(back)), buf).ok());
  BOOST_TEST(back == src, boost::test_tools::per_element());
  // A view at element 2 writes into the parent buffer.
  Handle view = nullptr;
  BOOST_TEST_REQUIRE(a.offset(buf, 2 * sizeof(int32_t), 3 * sizeof(int32_t), &view).ok());
  std::vector<int32_t> three{30, 40, 50};
  BOOST_TEST(a.copyin(view, std::as_bytes(std::span(three))).ok());
  BOOST_TEST(a.copyout(std::as_writable_bytes(std::span(back)), buf).ok());
  BOOST_TEST(back == (std::vector<int32_t>{1, -2, 30, 40, 50, -6, 7, -8}), boost::test_tools::per_element());
  a.free_view(view);
  BOOST_TEST(a.transfer(hs[4], buf, 8 * sizeof(int32_t)).ok());
  BOOST_TEST(static_cast<int32_t*>(a.as_host(hs[4]))[3] == 40);
  Handle huge = nullptr;
  auto oom = a.alloc(size_t{1} << 60, {}, &huge);
  BOOST_TEST(static_cast<int>(oom.code()) == static_cast<int>(Code::out_of_memory));
  BOOST_TEST(std::string(oom.message()).find("[CLANG alloc]") != std::string::npos);
  for (Handle h : hs) a.free(h, 0, {});
}

BOOST_AUTO_TEST_CASE(vector_add) {
  for (Path p : paths()) {
    BOOST_TEST_CONTEXT(name(p)) {
      auto& dev = device(p);
      auto prog = build(dev, "add", kAdd);
      std::vector<float> a(1000), b(1000);
      for (int i = 0; i < 1000; ++i) a[i] = 0.5f * float(i), b[i] = 1000.0f - float(i);
      Buffer<float> out(dev, std::vector<float>(1000, -1.0f)), ba(dev, a), bb(dev, b);
      Handle bufs[] = {out.h, ba.h, bb.h};
      int64_t vals[] = {1000};
      BOOST_TEST_REQUIRE(prog->launch(bufs, vals, tasks(1), true, nullptr).ok());
      auto got = out.read();
      for (int i = 0; i < 1000; ++i) BOOST_TEST(got[i] == 1000.0f - 0.5f * float(i));  // exact in float
    }
  }
}

// out[i] = a[i] * b[i] and a[i] > 0: with TG_CLANG_FTZ unset or 1, a product below float's normal range
// (1.17549435e-38) is flushed to zero, while a subnormal input is still read exactly (no DAZ); with
// TG_CLANG_FTZ=0 (the test clang_ftz_off) the subnormal product is IEEE's. The values are hand-derived:
// 1e-30 * 1e-10 = 1e-40, subnormal; 2^-140 (subnormal) * 2^100 = 2^-40, exact.
BOOST_AUTO_TEST_CASE(subnormal_results_flush_to_zero_unless_tg_clang_ftz_is_0) {
  const char* env = std::getenv("TG_CLANG_FTZ");
  bool ftz = env == nullptr || std::string(env) != "0";
  const std::string src = R"(
void mul(void* const* bufs, const long long* vals, int core_id) {
  float* out = (float*)bufs[0];
  float* pos = (float*)bufs[3];
  const float* a = (const float*)bufs[1];
  const float* b = (const float*)bufs[2];
  for (long long i = 0; i < vals[0]; i++) out[i] = a[i] * b[i], pos[i] = a[i] > 0.0f ? 1.0f : 0.0f;
}
)";
  for (Path p : paths()) {
    BOOST_TEST_CONTEXT(name(p)) {
      auto& dev = device(p);
      auto prog = build(dev, "mul", src);
      float tiny = std::ldexp(1.0f, -140);
      Buffer<float> out(dev, std::vector<float>(2, -1.0f)), pos(dev, std::vector<float>(2, -1.0f)),
          a(dev, std::vector<float>{1e-30f, tiny}), b(dev, std::vector<float>{1e-10f, std::ldexp(1.0f, 100)});
      Handle bufs[] = {out.h, a.h, b.h, pos.h};
      int64_t vals[] = {2};
      BOOST_TEST_REQUIRE(prog->launch(bufs, vals, tasks(1), true, nullptr).ok());
      auto got = out.read(), gpos = pos.read();
      if (ftz)
        BOOST_TEST(got[0] == 0.0f);
      else
        BOOST_TEST(got[0] == 1e-30f * 1e-10f);      // the host computes IEEE subnormals here
      BOOST_TEST(got[1] == std::ldexp(1.0f, -40));  // a subnormal input is read exactly either way
      BOOST_TEST(gpos[0] == 1.0f);
      BOOST_TEST(gpos[1] == 1.0f);
    }
  }
}

BOOST_AUTO_TEST_CASE(int_args_and_core_id_split_the_range) {
  const std::string src = R"(
void split(void* const* bufs, const long long* vals, int core_id) {
  int* out = (int*)bufs[0];
  int* hits = (int*)bufs[1];
  long long n = vals[0], tasks = vals[1], scale = vals[2];
  long long per = (n + tasks - 1) / tasks;
  long long start = core_id * per, end = start + per < n ? start + per : n;
  for (long long i = start; i < end; i++) out[i] = (int)(i * scale) + core_id * 1000;
  hits[core_id] += 1;
}
)";
  for (Path p : paths()) {
    BOOST_TEST_CONTEXT(name(p)) {
      auto& dev = device(p);
      auto prog = build(dev, "split", src);
      // 10 elements over 3 tasks: [0,4) [4,8) [8,10), each task tags its part with core_id*1000.
      Buffer<int32_t> out(dev, std::vector<int32_t>(10, 0)), hits(dev, std::vector<int32_t>(3, 0));
      Handle bufs[] = {out.h, hits.h};
      int64_t vals[] = {10, 3, -2};
      BOOST_TEST_REQUIRE(prog->launch(bufs, vals, tasks(3), true, nullptr).ok());
      std::vector<int32_t> want{0, -2, -4, -6, 992, 990, 988, 986, 1984, 1982};
      BOOST_TEST(out.read() == want, boost::test_tools::per_element());
      BOOST_TEST(hits.read() == (std::vector<int32_t>{1, 1, 1}), boost::test_tools::per_element());

      // More tasks than threads, many launches: every core_id runs exactly once per launch.
      Buffer<int32_t> big(dev, std::vector<int32_t>(100, 0)), counts(dev, std::vector<int32_t>(7, 0));
      Handle bufs2[] = {big.h, counts.h};
      int64_t vals2[] = {100, 7, 3};
      for (int rep = 0; rep < 200; ++rep)
        BOOST_TEST_REQUIRE(prog->launch(bufs2, vals2, tasks(7), false, nullptr).ok());
      // launches further apart than the pool's workers spin (100 us): they sleep and are woken each time
      for (int rep = 0; rep < 20; ++rep) {
        std::this_thread::sleep_for(std::chrono::microseconds(rep % 2 ? 1000 : 50));
        BOOST_TEST_REQUIRE(prog->launch(bufs2, vals2, tasks(7), false, nullptr).ok());
      }
      auto b = big.read();
      for (int i = 0; i < 100; ++i) BOOST_TEST(b[i] == 3 * i + (i / 15) * 1000);  // per = ceil(100/7) = 15
      BOOST_TEST(counts.read() == std::vector<int32_t>(7, 220), boost::test_tools::per_element());

      auto bad = tasks(2);
      bad.local = {4, 1, 1};
      BOOST_TEST(static_cast<int>(prog->launch(bufs, vals, bad, true, nullptr).code()) ==
                 static_cast<int>(Code::invalid_argument));
    }
  }
}

BOOST_AUTO_TEST_CASE(signed_overflow_wraps_like_interp) {
  // Without -fwrapv clang folds x + 1 > x to 1; INTERP (the reference) wraps, so INT_MAX + 1 > INT_MAX is 0.
  const char* src = R"(
void wrap(void* const* bufs, const long long* vals, int core_id) {
  int* a = (int*)bufs[0];
  a[1] = a[0] + 1 > a[0];
}
)";
  for (Path p : paths()) {
    BOOST_TEST_CONTEXT(name(p)) {
      auto& dev = device(p);
      auto prog = build(dev, "wrap", src);
      Buffer<int32_t> a(dev, std::vector<int32_t>{2147483647, -1});
      Handle bufs[] = {a.h};
      BOOST_TEST_REQUIRE(prog->launch(bufs, {}, tasks(1), true, nullptr).ok());
      BOOST_TEST(a.read()[1] == 0);
    }
  }
}

BOOST_AUTO_TEST_CASE(math_functions_resolve_from_libm) {
  const std::string src = R"(
float expf(float);
float sqrtf(float);
double log(double);
void math(void* const* bufs, const long long* vals, int core_id) {
  float* out = (float*)bufs[0];
  const float* x = (const float*)bufs[1];
  double* lg = (double*)bufs[2];
  for (int i = 0; i < 4; i++) out[i] = expf(x[i]) + sqrtf(x[i] * x[i] + 9.0f);
  lg[0] = log((double)x[1]);
}
)";
  for (Path p : paths()) {
    BOOST_TEST_CONTEXT(name(p)) {
      auto& dev = device(p);
      auto prog = build(dev, "math", src);
      std::vector<float> x{0.0f, 4.0f, -3.0f, 1.0f};
      Buffer<float> out(dev, std::vector<float>(4, 0.0f)), bx(dev, x);
      Buffer<double> lg(dev, std::vector<double>(1, 0.0));
      Handle bufs[] = {out.h, bx.h, lg.h};
      BOOST_TEST_REQUIRE(prog->launch(bufs, {}, tasks(1), true, nullptr).ok());
      auto got = out.read();
      BOOST_TEST(got[0] == 4.0f);  // e^0 + sqrt(9)
      for (int i = 1; i < 4; ++i)
        BOOST_CHECK_CLOSE(got[i], std::exp(x[i]) + std::sqrt(x[i] * x[i] + 9.0f), 1e-4);
      BOOST_CHECK_CLOSE(lg.read()[0], std::log(4.0), 1e-12);
    }
  }
}

BOOST_AUTO_TEST_CASE(compile_error_reports_the_bad_line) {
  const std::string src =
      "void bad(void* const* bufs, const long long* vals, int core_id) {\n"
      "  int x = 1;\n"
      "  int y = x +;\n"
      "}\n";
  for (Path p : paths()) {
    BOOST_TEST_CONTEXT(name(p)) {
      Blob bin;
      auto s = device(p).compiler().compile(src, bin);
      BOOST_TEST(static_cast<int>(s.code()) == static_cast<int>(Code::compile_error));
      std::string log(s.message());
      BOOST_TEST_MESSAGE("compile log: " << log);
      BOOST_TEST(log.find("kernel.c:3:") != std::string::npos, log);
      BOOST_TEST(log.find("error") != std::string::npos, log);
    }
  }
}

BOOST_AUTO_TEST_CASE(cache_key_is_stable_and_names_the_cpu) {
  std::string cpu = clang_native_cpu();
  std::vector<std::string> keys;
  for (Path p : paths()) {
    BOOST_TEST_CONTEXT(name(p)) {
      std::string key(device(p).compiler().cache_key());
      BOOST_TEST(key == std::string(device(p).compiler().cache_key()));
      BOOST_TEST(key == std::string(create_device(p)->compiler().cache_key()));
      BOOST_TEST_MESSAGE("cache key: " << key);
      BOOST_TEST(key.starts_with("clang-"), key);
      BOOST_TEST(key.find(p == Path::libclang ? "(libclang-cpp)" : "(binary ") != std::string::npos, key);
      BOOST_TEST(key.find("-march=native") != std::string::npos, key);
      BOOST_TEST(!cpu.empty());
      BOOST_TEST(key.find("cpu=" + cpu + " ") != std::string::npos, key << " vs " << cpu);
      keys.push_back(key);
    }
  }
  if (keys.size() == 2) BOOST_TEST(keys[0] != keys[1]);  // different compilers, different binaries
}

BOOST_AUTO_TEST_CASE(same_source_gives_identical_bytes) {
  for (Path p : paths()) {
    BOOST_TEST_CONTEXT(name(p)) {
      Blob a, b, c;
      auto& comp = device(p).compiler();
      BOOST_TEST_REQUIRE(comp.compile(kAdd, a).ok());
      BOOST_TEST_REQUIRE(comp.compile(kAdd, b).ok());
      BOOST_TEST_REQUIRE(comp.compile(kAdd + "\nint other(void) { return 1; }\n", c).ok());
      BOOST_TEST(a.size() > 8u);
      BOOST_TEST((a.size() == b.size() && std::memcmp(a.bytes().data(), b.bytes().data(), a.size()) == 0));
      BOOST_TEST(!(a.size() == c.size() && std::memcmp(a.bytes().data(), c.bytes().data(), a.size()) == 0));
    }
  }
}

// DEBUG=7 and VIZ show this: objdump's listing of the kernel's machine code, from either binary format.
BOOST_AUTO_TEST_CASE(disassembles_the_kernel) {
  for (Path p : paths()) {
    BOOST_TEST_CONTEXT(name(p)) {
      auto& comp = device(p).compiler();
      Blob bin, text;
      BOOST_TEST_REQUIRE(comp.compile(kAdd, bin).ok());
      auto s = comp.disassemble(bin.bytes(), text);
      BOOST_TEST_REQUIRE(s.ok(), s.message());
      std::string asm_text(text.text());
      BOOST_TEST(asm_text.find("<add>:") != std::string::npos, asm_text);
      BOOST_TEST(asm_text.find("ret") != std::string::npos);
      std::array<std::byte, 32> junk{};
      BOOST_TEST((comp.disassemble(junk, text).code() == Code::invalid_argument));
    }
  }
}

BOOST_AUTO_TEST_CASE(load_rejects_foreign_binaries_and_missing_kernels) {
  for (Path p : paths()) {
    BOOST_TEST_CONTEXT(name(p)) {
      auto& dev = device(p);
      Program* prog = nullptr;
      std::array<std::byte, 32> junk{};
      BOOST_TEST(static_cast<int>(dev.load("add", junk, &prog).code()) ==
                 static_cast<int>(Code::invalid_argument));
      Blob bin;
      BOOST_TEST_REQUIRE(dev.compiler().compile(kAdd, bin).ok());
      auto s = dev.load("not_there", bin.bytes(), &prog);
      BOOST_TEST(!s.ok());
      BOOST_TEST(std::string(s.message()).find("not_there") != std::string::npos, s.message());
      BOOST_TEST(prog == nullptr);
    }
  }
}

BOOST_AUTO_TEST_CASE(nothing_is_written_to_the_current_directory) {
  auto old = std::filesystem::current_path();
  std::string tmpl = (std::filesystem::temp_directory_path() / "tg-clang-cwd-XXXXXX").string();
  BOOST_TEST_REQUIRE(mkdtemp(tmpl.data()) != nullptr);
  std::filesystem::current_path(tmpl);
  for (Path p : paths()) {
    auto& dev = device(p);
    auto prog = build(dev, "add", kAdd);
    Blob bin;
    (void)dev.compiler().compile("int broken(", bin);
  }
  std::filesystem::current_path(old);
  BOOST_TEST(std::filesystem::is_empty(tmpl));
  std::filesystem::remove_all(tmpl);
}

BOOST_AUTO_TEST_CASE(timed_launch_reports_positive_seconds) {
  const std::string src = R"(
void spin(void* const* bufs, const long long* vals, int core_id) {
  volatile double* acc = (volatile double*)bufs[0];
  for (long long i = 0; i < vals[0]; i++) acc[core_id] += 1.0;
}
)";
  for (Path p : paths()) {
    BOOST_TEST_CONTEXT(name(p)) {
      auto& dev = device(p);
      auto prog = build(dev, "spin", src);
      Buffer<double> acc(dev, std::vector<double>(2, 0.0));
      Handle bufs[] = {acc.h};
      int64_t vals[] = {200000};
      double seconds = -1.0;
      BOOST_TEST_REQUIRE(prog->launch(bufs, vals, tasks(2), true, &seconds).ok());
      BOOST_TEST(seconds > 0.0);
      BOOST_TEST(seconds < 10.0);
      BOOST_TEST(acc.read() == (std::vector<double>{200000.0, 200000.0}), boost::test_tools::per_element());
    }
  }
}

BOOST_AUTO_TEST_CASE(caps_describe_this_cpu) {
  for (Path p : paths()) {
    BOOST_TEST_CONTEXT(name(p)) {
      auto& dev = device(p);
      const auto& caps = dev.renderer().caps();
      BOOST_TEST(caps.struct_size == sizeof(tg::sdk::RendererCaps));
      BOOST_TEST(std::string(caps.dialect) == "c");
      BOOST_TEST(caps.has_threads);
      BOOST_TEST(!caps.has_local);
      BOOST_TEST(caps.thread_count == std::max(1u, std::thread::hardware_concurrency()));
      // bool, int8..uint64 (bits 1-9), float32 (12), float64 (13); bfloat16 (11) and fp8 (14, 15) emulated.
      uint64_t emulated = (uint64_t{1} << 11) | (uint64_t{1} << 14) | (uint64_t{1} << 15);
      BOOST_TEST((caps.dtypes & ~(uint64_t{1} << 10)) == (0x33FE | emulated));
      BOOST_TEST(tg::sdk::emulated_dtypes(caps) == emulated);
      uint32_t lanes = cpu_has_flag("avx512f") ? 16 : cpu_has_flag("avx") ? 8 : 4;
      BOOST_TEST(caps.max_vector_width == lanes);
      // clang 14 has _Float16 arithmetic on x86-64 only with AVX512-FP16; with F16C the renderer uses the
      // storage type __fp16 (conversions inline, arithmetic in float rounded back).
      bool fp16 = cpu_has_flag("avx512_fp16");
      if (fp16 || cpu_has_flag("f16c")) BOOST_TEST(tg::sdk::has_dtype(caps, 10));
      if (tg::sdk::has_dtype(caps, 10)) {
        const std::string src = fp16 ? R"(
void half_fma(void* const* bufs, const long long* vals, int core_id) {
  _Float16* h = (_Float16*)bufs[0];
  h[3] = h[0] * h[1] + h[2];
}
)"
                                     : R"(
void half_fma(void* const* bufs, const long long* vals, int core_id) {
  __fp16* h = (__fp16*)bufs[0];
  h[3] = (__fp16)((__fp16)(h[0] * h[1]) + h[2]);
}
)";
        auto prog = build(dev, "half_fma", src);
        // 1.5 * 2.5 + 0.25 = 4.0: binary16 0x3E00, 0x4100, 0x3400 -> 0x4400.
        Buffer<uint16_t> h(dev, {0x3E00, 0x4100, 0x3400, 0});
        Handle bufs[] = {h.h};
        BOOST_TEST_REQUIRE(prog->launch(bufs, {}, tasks(1), true, nullptr).ok());
        BOOST_TEST(h.read()[3] == 0x4400);
      }
      std::string desc(dev.description());
      BOOST_TEST_MESSAGE("description: " << desc << "; dtypes 0x" << std::hex << caps.dtypes);
      BOOST_TEST(desc.find("clang-") != std::string::npos, desc);
      BOOST_TEST(desc.find(std::to_string(caps.thread_count) + " threads") != std::string::npos, desc);
      BOOST_TEST(dev.synchronize().ok());
    }
  }
}

// Elementwise kernels keep their loops rolled (clang's unroller took most of their compile time), and so do
// reduces with affine indices (a row sum, a matmul); a reduce whose indices divide (the rows of a padded
// matrix read as longer rows) keeps the unroller, no pragma. The rolled kernel still computes.
BOOST_AUTO_TEST_CASE(elementwise_loops_stay_rolled) {
  tg::Tensor a = tg::Tensor::empty({64, 1024}, tg::dtypes::float32, "INTERP");
  for (Path p : paths()) {
    BOOST_TEST_CONTEXT(name(p)) {
      Device& dev = device(p);
      auto [ename, esrc, dims] = render_one(dev, (a * 2.0f + 1.0f).relu());
      BOOST_TEST(esrc.find("#pragma clang loop unroll(disable)\n") != std::string::npos);
      BOOST_TEST(esrc.find("unroll(disable)\n  for (") != std::string::npos, esrc);
      std::string rsrc = render_one(dev, a.sum(1)).source;
      BOOST_TEST(rsrc.find("unroll(disable)\n  for (") != std::string::npos, rsrc);
      tg::Tensor b = tg::Tensor::empty({1024, 64}, tg::dtypes::float32, "INTERP");
      std::string msrc = render_one(dev, a.matmul(b)).source;
      BOOST_TEST(msrc.find("unroll(disable)\n  for (") != std::string::npos, msrc);
      std::string dsrc = render_one(dev, a.pad({{0, 0}, {0, 8}}).reshape({32, 2064}).sum(1)).source;
      BOOST_TEST(dsrc.find('%') != std::string::npos, dsrc);
      BOOST_TEST(dsrc.find("#pragma clang loop") == std::string::npos, dsrc);
      // 64 rows of 1024: x*2+1, relu; the kernel runs on its own tasks
      auto prog = build(dev, ename.c_str(), esrc);
      std::vector<float> in(64 * 1024), want(in.size());
      for (size_t i = 0; i < in.size(); i++) {
        in[i] = static_cast<float>(static_cast<int>(i % 37) - 18) * 0.25f;
        want[i] = std::max(in[i] * 2.0f + 1.0f, 0.0f);
      }
      Buffer<float> out(dev, std::vector<float>(in.size(), -1.0f)), x(dev, in);
      Handle bufs[] = {out.h, x.h};
      BOOST_TEST_REQUIRE(prog->launch(bufs, {}, dims, true, nullptr).ok());
      BOOST_TEST(out.read() == want, boost::test_tools::per_element());
    }
  }
}

// exp2, log2 and sin have no libm call in a kernel: codegen decomposes them into polynomials with bit
// tricks that clang's loop vectorizer packs into the widest vectors of this CPU (elementwise loops kept
// rolled included). Checked on the assembly clang makes from the rendered source with the plugin's flags.
BOOST_AUTO_TEST_CASE(transcendentals_vectorize) {
  Device& dev = device(paths().front());
  uint32_t lanes = dev.renderer().caps().max_vector_width;
  std::string reg = lanes >= 16 ? "%zmm" : lanes == 8 ? "%ymm" : "%xmm";
  tg::Tensor a = tg::Tensor::empty({64, 1024}, tg::dtypes::float32, "INTERP");
  for (const char* op : {"exp2", "log2", "sin"}) {
    BOOST_TEST_CONTEXT(op) {
      tg::Tensor y = std::string(op) == "exp2" ? a.exp2() : std::string(op) == "log2" ? a.log2() : a.sin();
      std::string asm_text = assembly(render_one(dev, y).source);
      size_t packed = 0;
      for (const char* ins : {"vfmadd", "vmulps", "vaddps", "vsubps", "vcvtdq2ps", "vcvttps2dq", "vpand"})
        packed += count_on(asm_text, ins, reg);
      BOOST_TEST(packed >= 8u, "packed ops on " << reg << ": " << packed);
      BOOST_TEST(asm_text.find("call") == std::string::npos);
    }
  }
}

// A matmul's register tile is written with explicit vectors of this CPU's width: b's rows and the
// accumulators as floatN, products summed by the fused tg_fma helper, which clang turns into vfmadd on
// full-width registers. The kernel computes a 64x64 product of small integers exactly.
BOOST_AUTO_TEST_CASE(matmul_uses_explicit_vectors) {
  Device& dev = device(paths().front());
  uint32_t lanes = dev.renderer().caps().max_vector_width;
  std::string reg = lanes >= 16 ? "%zmm" : lanes == 8 ? "%ymm" : "%xmm", vec = fmt::format("float{}", lanes);
  const int64_t n = 64;
  tg::Tensor a = tg::Tensor::empty({n, n}, tg::dtypes::float32, "INTERP"),
             b = tg::Tensor::empty({n, n}, tg::dtypes::float32, "INTERP");
  Rendered k = render_one(dev, a.matmul(b));
  BOOST_TEST(k.source.find("typedef float " + vec + " ") != std::string::npos, k.source);
  BOOST_TEST(k.source.find("tg_fma_" + vec + "(") != std::string::npos, k.source);
  BOOST_TEST(k.source.find("(*((" + vec + "*)(data2") != std::string::npos, k.source);
  BOOST_TEST(k.source.find("(*((" + vec + "*)(acc0") != std::string::npos, k.source);
  std::string asm_text = assembly(k.source);
  BOOST_TEST(count_on(asm_text, "vfmadd", reg) >= 8u, asm_text.substr(0, 4000));
  std::vector<float> x(n * n), want(n * n, 0.0f);
  for (size_t i = 0; i < x.size(); i++) x[i] = static_cast<float>(static_cast<int>(i * 7 % 11) - 5);
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < n; j++)
      for (int64_t r = 0; r < n; r++) want[i * n + j] += x[i * n + r] * x[r * n + j];
  auto prog = build(dev, k.name.c_str(), k.source);
  Buffer<float> out(dev, std::vector<float>(x.size(), -1.0f)), xa(dev, x), xb(dev, x);
  Handle bufs[] = {out.h, xa.h, xb.h};
  BOOST_TEST_REQUIRE(prog->launch(bufs, {}, k.dims, true, nullptr).ok());
  BOOST_TEST(out.read() == want, boost::test_tools::per_element());
}

// The vector fma helper (an x86 builtin where the CPU has one, else lane by lane) rounds once per lane:
// acc = -(1 + 2^-11) from r = 0, then (1 + 2^-12)^2 = 1 + 2^-11 + 2^-24 added at r = 1: 2^-24 fused, 0 when
// the product is rounded first (a tie, to even). NumPy: float32(1 + 2**-12)**2 - float32(1 + 2**-11) == 0.
BOOST_AUTO_TEST_CASE(vector_fma_is_fused) {
  Device& dev = device(paths().front());
  const int64_t n = 64;
  std::vector<float> x(n * n, 0.0f), y(n * n, 0.0f);
  for (int64_t i = 0; i < n; i++) {
    x[i * n] = 1.0f, x[i * n + 1] = 1.0f + 0x1p-12f;
    y[i] = -(1.0f + 0x1p-11f), y[n + i] = 1.0f + 0x1p-12f;
  }
  tg::Tensor a = tg::Tensor::empty({n, n}, tg::dtypes::float32, "INTERP"),
             b = tg::Tensor::empty({n, n}, tg::dtypes::float32, "INTERP");
  Rendered k = render_one(dev, a.matmul(b));
  uint32_t lanes = dev.renderer().caps().max_vector_width;
  BOOST_TEST(k.source.find(fmt::format("tg_fma_float{}(", lanes)) != std::string::npos, k.source);
  auto prog = build(dev, k.name.c_str(), k.source);
  Buffer<float> out(dev, std::vector<float>(x.size(), 1.0f)), xa(dev, x), xb(dev, y);
  Handle bufs[] = {out.h, xa.h, xb.h};
  BOOST_TEST_REQUIRE(prog->launch(bufs, {}, k.dims, true, nullptr).ok());
  BOOST_TEST(out.read() == std::vector<float>(x.size(), 0x1p-24f), boost::test_tools::per_element());
}
