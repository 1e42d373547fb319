// HIP: AMD GPUs through the HIP runtime (libamdhip64 dlopened) with code objects from clang's AMDGPU
// backend. Without a GPU the plugin still compiles for every gfx target its toolchain knows (the
// compile-only device behind tg-conformance --compile-only).
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include <fmt/format.h>

#include "base/env.hpp"
#include "plugins/hip/api.hpp"
#include "plugins/hip/compiler.hpp"
#include "plugins/hip/renderer.hpp"
#include "tg/sdk/host_memory.hpp"
#include "tg/sdk/plugin.hpp"

// The variables this plugin reads (`tg env` lists them under HIP).
const tg::env::Declare kEnv{
    "HIP",
    {
        {"TG_LIBAMDHIP64", "", "the HIP runtime library the HIP device opens (default: libamdhip64.so.6/.5)"},
        {"TG_HIP_CLANG", "",
         "clang the HIP device compiles with (default: ROCm's, else clang-18 down to clang-15)"},
        {"TG_ROCM_DEVICE_LIBS", "",
         "folder of the ROCm device libraries' bitcode (ocml.bc, ockl.bc, oclc_*.bc)"},
    }};

namespace tg::hip {

using tg::sdk::Code;
using tg::sdk::Handle;
using tg::sdk::Status;

namespace {

Status hip_status(hipError_t r, std::string_view what) {
  if (r == hipSuccess) return {};
  Code c = r == hipErrorOutOfMemory ? Code::out_of_memory : Code::runtime_error;
  return {c, fmt::format("[HIP] {}: {}", what, error_name(r))};
}

void throw_if(hipError_t r, std::string_view what) {
  if (r != hipSuccess) throw std::runtime_error(fmt::format("{}: {}", what, error_name(r)));
}

// One device and its stream; every entry point selects the device first, as the core may call from any
// thread.
class Context {
 public:
  explicit Context(int index) : hip_(hip_api(nullptr)), index_(index) {
    if (std::string why = runtime_unusable(); !why.empty()) throw std::runtime_error(why);
    int count = 0;
    throw_if(hip_->hipGetDeviceCount(&count), "hipGetDeviceCount");
    if (index < 0 || index >= count)
      throw std::runtime_error(
          fmt::format("no HIP device {}: this machine has {} (HIP:0 to HIP:{})", index, count, count - 1));
    throw_if(hip_->hipSetDevice(index_), "hipSetDevice");
    throw_if(hip_->hipStreamCreateWithFlags(&stream_, hipStreamNonBlocking), "hipStreamCreateWithFlags");
  }
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  const HipApi& hip() const { return *hip_; }
  int index() const { return index_; }
  hipStream_t stream() const { return stream_; }
  // Cannot fail once the constructor has selected the same device.
  void make_current() const { (void)hip_->hipSetDevice(index_); }

 private:
  const HipApi* hip_;
  int index_;
  hipStream_t stream_ = nullptr;
};

// Device memory by hipMalloc; copies are hipMemcpyAsync on the device's stream, waited for.
class HipAllocator final : public tg::sdk::Allocator {
 public:
  explicit HipAllocator(std::shared_ptr<Context> ctx) : ctx_(std::move(ctx)) {}

  Status alloc(size_t nbytes, const tg::sdk::AllocOptions&, Handle* out) noexcept override {
    ctx_->make_current();
    void* p = nullptr;
    if (Status s = hip_status(ctx_->hip().hipMalloc(&p, std::max<size_t>(nbytes, 256)),
                              fmt::format("hipMalloc of {} bytes", nbytes));
        !s.ok())
      return s;
    *out = p;
    return {};
  }
  void free(Handle buf, size_t, const tg::sdk::AllocOptions&) noexcept override {
    ctx_->make_current();
    (void)ctx_->hip().hipFree(buf);
  }
  Status copyin(Handle dst, std::span<const std::byte> src) noexcept override {
    return copy(dst, src.data(), src.size(), hipMemcpyHostToDevice, "copyin");
  }
  Status copyout(std::span<std::byte> dst, Handle src) noexcept override {
    return copy(dst.data(), src, dst.size(), hipMemcpyDeviceToHost, "copyout");
  }
  size_t alignment() const noexcept override { return 256; }
  Status offset(Handle buf, size_t off, size_t, Handle* out) noexcept override {
    *out = static_cast<std::byte*>(buf) + off;
    return {};
  }
  Status transfer(Handle dst, Handle src, size_t nbytes) noexcept override {
    return copy(dst, src, nbytes, hipMemcpyDeviceToDevice, "transfer");
  }

 private:
  Status copy(void* dst, const void* src, size_t n, hipMemcpyKind kind, std::string_view what) {
    ctx_->make_current();
    if (Status s = hip_status(ctx_->hip().hipMemcpyAsync(dst, src, n, kind, ctx_->stream()), what); !s.ok())
      return s;
    return hip_status(ctx_->hip().hipStreamSynchronize(ctx_->stream()), what);
  }
  std::shared_ptr<Context> ctx_;
};

class HipProgram final : public tg::sdk::Program {
 public:
  HipProgram(std::shared_ptr<Context> ctx, hipModule_t module, hipFunction_t fn, std::string name)
      : ctx_(std::move(ctx)), module_(module), fn_(fn), name_(std::move(name)) {}
  ~HipProgram() override {
    ctx_->make_current();
    (void)ctx_->hip().hipModuleUnload(module_);
  }

  Status launch(std::span<const Handle> bufs, std::span<const int64_t> vals, const tg::sdk::LaunchDims& d,
                bool wait, double* seconds) noexcept override {
    return tg::sdk::guard([&]() -> Status {
      ctx_->make_current();
      const HipApi& hip = ctx_->hip();
      // The kernel's arguments as its kernarg segment lays them out: 8 bytes per pointer and per long long.
      std::vector<uint64_t> args;
      for (Handle b : bufs) args.push_back(reinterpret_cast<uint64_t>(b));
      for (int64_t v : vals) args.push_back(static_cast<uint64_t>(v));
      size_t size = args.size() * sizeof(uint64_t);
      void* extra[] = {HIP_LAUNCH_PARAM_BUFFER_POINTER, args.data(), HIP_LAUNCH_PARAM_BUFFER_SIZE, &size,
                       HIP_LAUNCH_PARAM_END};
      if (uint64_t(d.global[0]) * d.global[1] * d.global[2] == 0) {
        if (wait && seconds != nullptr) *seconds = 0;
        return {};
      }
      hipEvent_t start = nullptr, end = nullptr;
      auto drop_events = [&] {
        if (start != nullptr) (void)hip.hipEventDestroy(start);
        if (end != nullptr) (void)hip.hipEventDestroy(end);
      };
      if (wait) {
        hipError_t e = hip.hipEventCreate(&start);
        if (e == hipSuccess) e = hip.hipEventCreate(&end);
        if (e == hipSuccess) e = hip.hipEventRecord(start, ctx_->stream());
        if (e != hipSuccess) return drop_events(), hip_status(e, "timing events");
      }
      hipError_t r = hip.hipModuleLaunchKernel(fn_, d.global[0], d.global[1], d.global[2], d.local[0],
                                               d.local[1], d.local[2], 0, ctx_->stream(), nullptr, extra);
      if (r != hipSuccess) {
        drop_events();
        Code c = r == hipErrorInvalidValue || r == hipErrorInvalidConfiguration ? Code::invalid_argument
                                                                                : Code::runtime_error;
        return {c,
                fmt::format("[HIP launch] {} with grid ({},{},{}) block ({},{},{}): {}", name_, d.global[0],
                            d.global[1], d.global[2], d.local[0], d.local[1], d.local[2], error_name(r))};
      }
      if (!wait) return {};
      r = hip.hipEventRecord(end, ctx_->stream());
      if (r == hipSuccess) r = hip.hipEventSynchronize(end);
      float ms = 0;
      if (r == hipSuccess && seconds != nullptr)
        r = hip.hipEventElapsedTime(&ms, start, end), *seconds = ms * 1e-3;
      drop_events();
      return hip_status(r, fmt::format("running {}", name_));
    });
  }

 private:
  std::shared_ptr<Context> ctx_;
  hipModule_t module_;
  hipFunction_t fn_;
  std::string name_;
};

// The device's properties. The buffer is larger than this header's struct: a newer runtime may write more.
struct Properties {
  hipDeviceProp_t p;
  char room[4096];
};

ArchLimits limits_of(const Context& c, std::string* name, size_t* memory) {
  auto props = std::make_unique<Properties>();
  throw_if(c.hip().hipGetDeviceProperties(&props->p, c.index()), "hipGetDeviceProperties");
  std::string arch(props->p.gcnArchName);  // "gfx90a:sramecc+:xnack-": the target is before the features
  arch = arch.substr(0, arch.find(':'));
  auto a = parse_arch(arch);
  if (!a) throw std::runtime_error(fmt::format("the HIP runtime names an arch we cannot parse: '{}'", arch));
  ArchLimits l{.arch = *a};
  l.max_threads = static_cast<uint32_t>(props->p.maxThreadsPerBlock);
  for (int i = 0; i < 3; i++)
    l.block_dims[i] = static_cast<uint32_t>(props->p.maxThreadsDim[i]),
    l.grid_dims[i] = static_cast<uint32_t>(props->p.maxGridSize[i]);
  l.shared_bytes = static_cast<uint32_t>(props->p.sharedMemPerBlock);
  *name = props->p.name, *memory = props->p.totalGlobalMem;
  return l;
}

// A target with no device: the renderer and compiler of one gfx arch, host memory so tensors can be built,
// and no way to load a program.
class HipTarget final : public tg::sdk::Device {
 public:
  explicit HipTarget(const Arch& arch) : compiler_(arch), renderer_(hip_caps(ArchLimits{.arch = arch})) {
    description_ = fmt::format("compile-only {} ({})", arch.name, compiler_.cache_key());
  }
  tg::sdk::Allocator& allocator() noexcept override { return memory_; }
  tg::sdk::Renderer& renderer() noexcept override { return renderer_; }
  tg::sdk::Compiler& compiler() noexcept override { return compiler_; }
  std::string_view description() const noexcept override { return description_; }
  Status synchronize() noexcept override { return {}; }
  Status load(std::string_view name, std::span<const std::byte>, tg::sdk::Program**) noexcept override {
    return tg::sdk::unavailable(
        fmt::format("[HIP load] {}: compile-only {} target, no GPU to run on", name, compiler_.arch().name));
  }

 private:
  tg::sdk::HostMemory memory_;
  HipCompiler compiler_;
  HipRenderer renderer_;
  std::string description_;
};

class HipDevice final : public tg::sdk::Device {
 public:
  static constexpr int32_t priority = 100;  // a GPU: the default where one is present
  static constexpr const char* version = TG_PLUGIN_VERSION;

  static Status probe() {
    if (std::string why = runtime_unusable(); !why.empty()) return tg::sdk::unavailable(why);
    std::string why;
    if (toolchain(&why) == nullptr) return tg::sdk::unavailable("unavailable: " + why);
    return {};
  }

  static std::string compile_targets() {
    std::string why;
    return fmt::format("{}", fmt::join(supported_archs(&why), " "));
  }
  static tg::sdk::Device* compile_only(std::string_view name) {
    std::optional<Arch> arch = parse_arch(name);
    if (!arch)
      throw std::runtime_error(fmt::format("'{}' is not an AMD GPU arch (gfx90a, gfx1100, ...)", name));
    return new HipTarget(*arch);
  }

  explicit HipDevice(int32_t index) : ctx_(std::make_shared<Context>(index)), allocator_(ctx_) {
    std::string name;
    size_t memory = 0;
    limits_ = limits_of(*ctx_, &name, &memory);
    compiler_ = std::make_unique<HipCompiler>(limits_.arch);
    renderer_ = std::make_unique<HipRenderer>(hip_caps(limits_));
    int driver = 0;
    throw_if(ctx_->hip().hipDriverGetVersion(&driver), "hipDriverGetVersion");
    description_ = fmt::format("{} ({}, {} GiB), HIP runtime {}, {}", name, limits_.arch.name, memory >> 30,
                               driver, compiler_->cache_key());
  }

  tg::sdk::Allocator& allocator() noexcept override { return allocator_; }
  tg::sdk::Renderer& renderer() noexcept override { return *renderer_; }
  tg::sdk::Compiler& compiler() noexcept override { return *compiler_; }
  std::string_view description() const noexcept override { return description_; }

  Status synchronize() noexcept override {
    ctx_->make_current();
    return hip_status(ctx_->hip().hipStreamSynchronize(ctx_->stream()), "synchronize");
  }

  Status load(std::string_view name, std::span<const std::byte> binary,
              tg::sdk::Program** out) noexcept override {
    return tg::sdk::guard([&]() -> Status {
      ctx_->make_current();
      const HipApi& hip = ctx_->hip();
      hipModule_t module = nullptr;
      if (hipError_t r = hip.hipModuleLoadData(&module, binary.data()); r != hipSuccess)
        return {Code::invalid_argument, fmt::format("[HIP load] {}: the code object for {} was refused: {}",
                                                    name, limits_.arch.name, error_name(r))};
      hipFunction_t fn = nullptr;
      std::string kname(name);
      if (hipError_t r = hip.hipModuleGetFunction(&fn, module, kname.c_str()); r != hipSuccess) {
        (void)hip.hipModuleUnload(module);
        return {Code::invalid_argument,
                fmt::format("[HIP load] no kernel '{}' in the module: {}", kname, error_name(r))};
      }
      *out = new HipProgram(ctx_, module, fn, kname);
      return {};
    });
  }

 private:
  std::shared_ptr<Context> ctx_;
  HipAllocator allocator_;
  ArchLimits limits_;
  std::unique_ptr<HipCompiler> compiler_;
  std::unique_ptr<HipRenderer> renderer_;
  std::string description_;
};

}  // namespace

}  // namespace tg::hip

TG_PLUGIN(HIP, tg::hip::HipDevice)
