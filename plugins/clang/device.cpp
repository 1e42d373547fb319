// CLANG: the CPU device. C kernels compiled by clang, run on a persistent thread pool.
#include <algorithm>
#include <chrono>
#include <fstream>
#include <memory>
#include <thread>

#if defined(__SSE__)
#include <xmmintrin.h>
#endif

#include <fmt/format.h>

#include "base/env.hpp"
#include "base/error.hpp"
#include "plugins/clang/allocator.hpp"
#include "plugins/clang/compiler.hpp"
#include "plugins/clang/renderer.hpp"
#include "plugins/clang/thread_pool.hpp"
#include "plugins/clang/toolchain.hpp"
#include "tg/sdk/plugin.hpp"

// The variables this plugin reads (`tg env` lists them under CLANG).
const tg::env::Declare kEnv{
    "CLANG",
    {
        {"TG_CLANG", "clang", "clang binary the CLANG device uses when libclang-cpp is not available"},
        {"TG_CLANG_FLAGS", "", "extra flags for the CLANG device's compiler (part of its cache key)"},
        {"TG_CLANG_INPROCESS", "1",
         "0 = CLANG compiles with the TG_CLANG binary even if libclang-cpp is built in", true},
        {"TG_CLANG_LANES", "0",
         "4 or 8: declare float vectors of at most that many lanes (with TG_CLANG_FLAGS=-mno-avx512f, an "
         "AVX2 "
         "target on an AVX-512 machine); 0 = the native width"},
        {"TG_CLANG_FTZ", "1",
         "1 = kernels flush results below float's normal range to zero (x86 MXCSR FTZ), as GPUs do; 0 = IEEE "
         "subnormal results, which x86 computes up to 100x slower"},
        {"TG_CLANG_DEVICES", "1",
         "how many CLANG devices (CLANG:0..N-1) share the cores; each gets its own pool on its own core set"},
    }};

namespace tg::clangdev {

using tg::sdk::Code;
using tg::sdk::Status;

namespace {

static_assert(sizeof(long long) == sizeof(int64_t), "vals are passed to kernels as long long");

unsigned hardware_threads() { return std::max(1u, std::thread::hardware_concurrency()); }

bool want_libclang() { return libclang_built() && tg::env::get_int("TG_CLANG_INPROCESS").value_or(1) != 0; }

int64_t device_count() {
  int64_t n = tg::env::get_int("TG_CLANG_DEVICES").value_or(1);
  if (n < 1 || n > 64)
    throw tg::DeviceError("CLANG", fmt::format("TG_CLANG_DEVICES={} is outside [1, 64]", n));
  return n;
}

// Device `index` of n owns the cores [first, first + count): a contiguous slice of the machine. With more
// devices than cores, each gets one core and they take the cores in turn.
CoreSet core_set(int32_t index) {
  int64_t n = device_count();
  if (index < 0 || index >= n)
    throw tg::DeviceError(
        "CLANG",
        fmt::format("no device CLANG:{}: TG_CLANG_DEVICES={} (set it to {} or more)", index, n, index + 1));
  unsigned t = hardware_threads(), i = static_cast<unsigned>(index), m = static_cast<unsigned>(n);
  if (m > t) return {i % t, 1, true};
  unsigned first = i * t / m, last = (i + 1) * t / m;
  return {first, last - first, n > 1};
}

std::unique_ptr<Toolchain> make_toolchain() {
  if (want_libclang())
    if (auto t = make_libclang_toolchain()) return t;
  return make_binary_toolchain();
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.starts_with("model name") && line.find(':') != std::string::npos)
      return line.substr(line.find_first_not_of(" \t", line.find(':') + 1));
  return "unknown CPU";
}

// Subnormal results (below 1.2e-38 in float) take a microcode assist on x86 each, 100x a normal op: a
// softmax backward whose probabilities underflow ran 50x slower in a training step. Kernels run with the
// flush-to-zero bit set unless TG_CLANG_FTZ=0; inputs are not flushed (no DAZ), so a subnormal that comes in
// is still read, compared and bitcast exactly.
bool flush_to_zero() {
  static const bool on = tg::env::get_int("TG_CLANG_FTZ").value_or(1) != 0;
  return on;
}

// Runs one task of a kernel with the thread's FTZ bit as flush_to_zero() says, and puts the bit back.
void run_task(KernelFn fn, void* const* bufs, const long long* vals, int core, bool ftz) {
#if defined(__SSE__)
  const unsigned flush = _MM_FLUSH_ZERO_ON, saved = _mm_getcsr(),
                 want = ftz ? (saved | flush) : (saved & ~flush);
  if (want != saved) _mm_setcsr(want);
  fn(bufs, vals, core);
  if (want != saved) _mm_setcsr(saved);
#else
  (void)ftz;
  fn(bufs, vals, core);
#endif
}

class ClangProgram final : public tg::sdk::Program {
 public:
  ClangProgram(std::unique_ptr<LoadedKernel> code, std::shared_ptr<ThreadPool> pool)
      : code_(std::move(code)), pool_(std::move(pool)) {}

  Status launch(std::span<const tg::sdk::Handle> bufs, std::span<const int64_t> vals,
                const tg::sdk::LaunchDims& dims, bool wait, double* seconds) noexcept override {
    return tg::sdk::guard([&]() -> Status {
      if (dims.global[1] != 1 || dims.global[2] != 1 || dims.local != std::array<uint32_t, 3>{1, 1, 1})
        return {
            Code::invalid_argument,
            fmt::format("[CLANG launch] runs global[0] tasks only; got global ({},{},{}) local ({},{},{})",
                        dims.global[0], dims.global[1], dims.global[2], dims.local[0], dims.local[1],
                        dims.local[2])};
      struct Call {
        KernelFn fn;
        void* const* bufs;
        const long long* vals;
        bool ftz;
      } call{code_->entry(), bufs.data(), reinterpret_cast<const long long*>(vals.data()), flush_to_zero()};
      auto start = std::chrono::steady_clock::now();
      pool_->run(
          dims.global[0],
          [](void* ctx, uint32_t core) {
            auto* c = static_cast<Call*>(ctx);
            run_task(c->fn, c->bufs, c->vals, static_cast<int>(core), c->ftz);
          },
          &call);
      // Every launch finishes before returning, so results are visible and wait changes nothing.
      if (wait && seconds != nullptr)
        *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      return {};
    });
  }

 private:
  std::unique_ptr<LoadedKernel> code_;
  std::shared_ptr<ThreadPool> pool_;
};

Status open_binary(std::string_view name, std::span<const std::byte> binary,
                   std::unique_ptr<LoadedKernel>* out) {
  auto parsed = read_binary(binary);
  if (!parsed) return {Code::invalid_argument, "[CLANG load] not a binary made by the CLANG compiler"};
  auto [format, payload] = *parsed;
  return format == BinaryFormat::elf_object ? load_object(name, payload, out)
                                            : load_shared(name, payload, out);
}

// Whether a probe kernel compiles, links and gives want in halves[2] from halves[0] and halves[1].
bool half_probe(ClangCompiler& compiler, std::string_view body, uint16_t a, uint16_t b, uint16_t want) {
  std::string src = fmt::format(
      "void tg_probe_half(void* const* bufs, const long long* vals, int core_id) {{\n  {}\n}}\n", body);
  tg::sdk::Blob bin;
  std::unique_ptr<LoadedKernel> kernel;
  if (!compiler.compile(src, bin).ok() || !open_binary("tg_probe_half", bin.bytes(), &kernel).ok())
    return false;
  uint16_t halves[3] = {a, b, 0};
  void* bufs[1] = {halves};
  kernel->entry()(bufs, nullptr, 0);
  return halves[2] == want;
}

// float16 as _Float16 when it compiles, links and multiplies correctly here (1.5 * 2.0 == 3.0; clang 14
// needs AVX512-FP16 for it on x86), else as the storage type __fp16 with every result rounded by a cast,
// when the conversions need no runtime library and round to nearest even (1 + 2^-11 is 1).
HalfMode half_mode(ClangCompiler& compiler) {
  if (half_probe(compiler, "_Float16* p = (_Float16*)bufs[0]; p[2] = p[0] * p[1];", 0x3E00, 0x4000, 0x4200))
    return HalfMode::NATIVE;
  constexpr std::string_view add = "__fp16* p = (__fp16*)bufs[0]; p[2] = (__fp16)(p[0] + p[1]);";
  if (half_probe(compiler, add, 0x3E00, 0x3E00, 0x4200) && half_probe(compiler, add, 0x3C00, 0x1000, 0x3C00))
    return HalfMode::STORAGE;
  return HalfMode::NONE;
}

class ClangDevice final : public tg::sdk::Device {
 public:
  static constexpr int32_t priority = 50;
  static constexpr const char* version = TG_PLUGIN_VERSION;

  static Status probe() {
    if (want_libclang()) return {};
    std::string exe = tg::env::get("TG_CLANG");
    if (executable_exists(exe)) return {};
    return tg::sdk::unavailable(
        fmt::format("unavailable: {} and clang binary '{}' not found; install clang or set TG_CLANG",
                    libclang_built() ? "TG_CLANG_INPROCESS=0" : "no libclang-cpp in this build", exe));
  }

  explicit ClangDevice(int32_t index)
      : cores_(core_set(index)),
        compiler_(make_toolchain()),
        renderer_(half_mode(compiler_), cores_.count),
        pool_(std::make_shared<ThreadPool>(cores_)) {
    description_ = fmt::format(
        "{} ({} threads{}), {}", cpu_model(), cores_.count,
        cores_.pinned ? fmt::format(" on cores {}-{}", cores_.first, cores_.first + cores_.count - 1) : "",
        compiler_.toolchain().id());
  }

  tg::sdk::Allocator& allocator() noexcept override { return allocator_; }
  tg::sdk::Renderer& renderer() noexcept override { return renderer_; }
  tg::sdk::Compiler& compiler() noexcept override { return compiler_; }
  Status synchronize() noexcept override { return {}; }
  std::string_view description() const noexcept override { return description_; }
  const void* extension(uint32_t id) noexcept override {
    return id == tg::sdk::kForeignMemoryExtension ? static_cast<const tg::sdk::ForeignMemory*>(&foreign_)
                                                  : nullptr;
  }

  Status load(std::string_view name, std::span<const std::byte> binary,
              tg::sdk::Program** out) noexcept override {
    return tg::sdk::guard([&]() -> Status {
      std::unique_ptr<LoadedKernel> kernel;
      if (Status s = open_binary(name, binary, &kernel); !s.ok()) return s;
      *out = new ClangProgram(std::move(kernel), pool_);
      return {};
    });
  }

 private:
  CoreSet cores_;
  HostAllocator allocator_;
  HostForeignMemory foreign_;
  ClangCompiler compiler_;
  ClangRenderer renderer_;
  std::shared_ptr<ThreadPool> pool_;
  std::string description_;
};

}  // namespace

}  // namespace tg::clangdev

TG_PLUGIN(CLANG, tg::clangdev::ClangDevice)
