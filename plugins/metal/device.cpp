// METAL: Apple GPUs through Metal.framework, driven by the Objective-C runtime (both dlopened). On a
// machine without macOS the plugin still loads, probes "unavailable" and offers a compile-only target whose
// compiler is a clang syntax check against the project's Metal shim (not Apple's compiler).
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include <fmt/format.h>

#include "base/env.hpp"
#include "plugins/metal/api.hpp"
#include "plugins/metal/compiler.hpp"
#include "plugins/metal/renderer.hpp"
#include "tg/sdk/plugin.hpp"

// The variables this plugin reads (`tg env` lists them under METAL).
const tg::env::Declare kEnv{"METAL",
                            {
                                {"TG_METAL_FRAMEWORK", "/System/Library/Frameworks/Metal.framework/Metal",
                                 "the Metal.framework binary the METAL device opens (macOS)"},
                                {"TG_METAL_CLANG", "clang++",
                                 "clang the METAL compile-only target type-checks kernels with (a syntax "
                                 "check, not Apple's compiler)"},
                            }};

namespace tg::metal {

using tg::sdk::Code;
using tg::sdk::Handle;
using tg::sdk::Status;

namespace {

constexpr uint64_t kStorageModeShared = 0;  // MTLResourceStorageModeShared: CPU and GPU see one copy
constexpr int64_t kFamilyApple7 = 1007;     // MTLGPUFamilyApple7 (M1, A14): simdgroup matrices

struct MTLSize {
  uint64_t width, height, depth;
};
struct NSOperatingSystemVersion {
  int64_t major, minor, patch;
};

// "metal3.1" -> 31; 0 for anything else.
int parse_arch(std::string_view arch) {
  if (arch == "metal3.0") return 30;
  if (arch == "metal3.1") return 31;
  return 0;
}

// The device, its command queue and the last command buffer committed (synchronize waits for it; command
// buffers on one queue complete in order).
class Context {
 public:
  Context() {
    std::string why;
    api_ = objc_api(&why);
    if (api_ == nullptr) throw std::runtime_error(why);
    device_ = Owned(api_, api_->MTLCreateSystemDefaultDevice());
    if (!device_) throw std::runtime_error("unavailable: MTLCreateSystemDefaultDevice found no Metal GPU");
    queue_ = Owned(api_, msg(*api_, device_.get(), "newCommandQueue"));
  }
  const ObjcApi& api() const { return *api_; }
  id device() const { return device_.get(); }
  id queue() const { return queue_.get(); }
  // Keeps cb (retained) as the last one committed.
  void committed(id cb) {
    std::lock_guard lock(mu_);
    last_ = Owned(api_, msg(*api_, cb, "retain"));
  }
  Status wait() {
    std::lock_guard lock(mu_);
    if (!last_) return {};
    msg<void>(*api_, last_.get(), "waitUntilCompleted");
    id err = msg(*api_, last_.get(), "error");
    std::string text = err != nullptr ? text_of(*api_, err) : "";
    last_ = Owned();
    if (!text.empty()) return {Code::runtime_error, "[METAL] a command buffer failed: " + text};
    return {};
  }

 private:
  const ObjcApi* api_ = nullptr;
  Owned device_, queue_, last_;
  std::mutex mu_;
};

// MTLBuffers in shared storage: copies are memcpy on the buffer's contents after the GPU is done with it.
class MetalAllocator final : public tg::sdk::Allocator {
 public:
  explicit MetalAllocator(std::shared_ptr<Context> ctx) : ctx_(std::move(ctx)) {}
  Status alloc(size_t nbytes, const tg::sdk::AllocOptions&, Handle* out) noexcept override {
    AutoreleasePool pool(ctx_->api());
    id b = msg(ctx_->api(), ctx_->device(),
               "newBufferWithLength:options:", uint64_t(std::max<size_t>(nbytes, 1)), kStorageModeShared);
    if (b == nullptr)
      return {Code::out_of_memory, fmt::format("[METAL] newBufferWithLength of {} bytes", nbytes)};
    *out = b;
    return {};
  }
  void free(Handle buf, size_t, const tg::sdk::AllocOptions&) noexcept override {
    msg<void>(ctx_->api(), buf, "release");
  }
  Status copyin(Handle dst, std::span<const std::byte> src) noexcept override {
    if (Status s = ctx_->wait(); !s.ok()) return s;
    std::memcpy(contents(dst), src.data(), src.size());
    return {};
  }
  Status copyout(std::span<std::byte> dst, Handle src) noexcept override {
    if (Status s = ctx_->wait(); !s.ok()) return s;
    std::memcpy(dst.data(), contents(src), dst.size());
    return {};
  }
  size_t alignment() const noexcept override { return 256; }

 private:
  void* contents(Handle b) const { return msg<void*>(ctx_->api(), b, "contents"); }
  std::shared_ptr<Context> ctx_;
};

// On a Mac the Metal compiler checks the source at compile() (its log is the error); the binary is the
// source, which load() builds into a pipeline (Metal caches compiled shaders itself).
class MetalCompiler final : public tg::sdk::Compiler {
 public:
  explicit MetalCompiler(std::shared_ptr<Context> ctx) : ctx_(std::move(ctx)) {}
  std::string_view cache_key() const noexcept override { return "metal-source-1"; }
  Status compile(std::string_view source, tg::sdk::Blob& binary) noexcept override {
    return tg::sdk::guard([&]() -> Status {
      std::string err;
      Owned lib = library(*ctx_, std::string(source), &err);
      if (!lib)
        return {Code::compile_error,
                fmt::format("[METAL compile] the Metal compiler said:\n{}\n{}", err, source)};
      binary.assign(source);
      return {};
    });
  }
  // A library from source with fast math off (results as IEEE as the reference's), or none with *err.
  static Owned library(const Context& c, const std::string& source, std::string* err) {
    const ObjcApi& a = c.api();
    AutoreleasePool pool(a);
    Owned options(&a, msg(a, msg(a, a.objc_getClass("MTLCompileOptions"), "alloc"), "init"));
    msg<void>(a, options.get(), "setFastMathEnabled:", false);
    id error = nullptr;
    id lib = msg(a, c.device(), "newLibraryWithSource:options:error:", ns_string(a, source), options.get(),
                 &error);
    if (lib == nullptr) *err = text_of(a, error);
    return Owned(&a, lib);
  }

 private:
  std::shared_ptr<Context> ctx_;
};

class MetalProgram final : public tg::sdk::Program {
 public:
  MetalProgram(std::shared_ptr<Context> ctx, Owned pipeline, std::string name)
      : ctx_(std::move(ctx)), pipeline_(std::move(pipeline)), name_(std::move(name)) {}

  Status launch(std::span<const Handle> bufs, std::span<const int64_t> vals, const tg::sdk::LaunchDims& d,
                bool wait, double* seconds) noexcept override {
    return tg::sdk::guard([&]() -> Status {
      const ObjcApi& a = ctx_->api();
      uint64_t threads = uint64_t(d.local[0]) * d.local[1] * d.local[2];
      uint64_t max = msg<uint64_t>(a, pipeline_.get(), "maxTotalThreadsPerThreadgroup");
      if (threads > max)
        return {Code::invalid_argument,
                fmt::format("[METAL launch] {}: a threadgroup of {} threads, the pipeline "
                            "allows {}",
                            name_, threads, max)};
      if (uint64_t(d.global[0]) * d.global[1] * d.global[2] == 0) {
        if (wait && seconds != nullptr) *seconds = 0;
        return {};
      }
      AutoreleasePool pool(a);  // the command buffer and encoder are autoreleased
      id cb = msg(a, ctx_->queue(), "commandBuffer");
      id enc = msg(a, cb, "computeCommandEncoder");
      msg<void>(a, enc, "setComputePipelineState:", pipeline_.get());
      for (size_t i = 0; i < bufs.size(); i++)
        msg<void>(a, enc, "setBuffer:offset:atIndex:", bufs[i], uint64_t(0), uint64_t(i));
      if (!vals.empty())
        msg<void>(a, enc, "setBytes:length:atIndex:", static_cast<const void*>(vals.data()),
                  uint64_t(vals.size_bytes()), uint64_t(bufs.size()));
      msg<void>(a, enc,
                "dispatchThreadgroups:threadsPerThreadgroup:", MTLSize{d.global[0], d.global[1], d.global[2]},
                MTLSize{d.local[0], d.local[1], d.local[2]});
      msg<void>(a, enc, "endEncoding");
      msg<void>(a, cb, "commit");
      ctx_->committed(cb);
      if (!wait) return {};
      if (Status s = ctx_->wait(); !s.ok())
        return {s.code(), fmt::format("running {}: {}", name_, s.message())};
      if (seconds != nullptr)
        *seconds = msg<double>(a, cb, "GPUEndTime") - msg<double>(a, cb, "GPUStartTime");
      return {};
    });
  }

 private:
  std::shared_ptr<Context> ctx_;
  Owned pipeline_;
  std::string name_;
};

// Host memory for the compile-only target, so tensors can be built; nothing is ever launched on it.
class HostMemory final : public tg::sdk::Allocator {
 public:
  Status alloc(size_t nbytes, const tg::sdk::AllocOptions&, Handle* out) noexcept override {
    *out = std::aligned_alloc(256, (std::max<size_t>(nbytes, 1) + 255) / 256 * 256);
    return *out != nullptr ? Status{} : Status{Code::out_of_memory, "host memory"};
  }
  void free(Handle buf, size_t, const tg::sdk::AllocOptions&) noexcept override { std::free(buf); }
  Status copyin(Handle dst, std::span<const std::byte> src) noexcept override {
    std::memcpy(dst, src.data(), src.size());
    return {};
  }
  Status copyout(std::span<std::byte> dst, Handle src) noexcept override {
    std::memcpy(dst.data(), src, dst.size());
    return {};
  }
  size_t alignment() const noexcept override { return 256; }
};

class MetalTarget final : public tg::sdk::Device {
 public:
  explicit MetalTarget(int version)
      : version_(version), renderer_(metal_caps(MetalLimits{.version = version})) {
    description_ = fmt::format(
        "compile-only metal{}.{}: SYNTAX CHECK ONLY (clang against the project's Metal shim, "
        "not Apple's compiler; {})",
        version / 10, version % 10, compiler_.cache_key());
  }
  tg::sdk::Allocator& allocator() noexcept override { return memory_; }
  tg::sdk::Renderer& renderer() noexcept override { return renderer_; }
  tg::sdk::Compiler& compiler() noexcept override { return compiler_; }
  std::string_view description() const noexcept override { return description_; }
  Status synchronize() noexcept override { return {}; }
  Status load(std::string_view name, std::span<const std::byte>, tg::sdk::Program**) noexcept override {
    return tg::sdk::unavailable(
        fmt::format("[METAL load] {}: compile-only metal{}.{} target, no Metal GPU to run on", name,
                    version_ / 10, version_ % 10));
  }

 private:
  int version_;
  HostMemory memory_;
  ShimSyntaxCompiler compiler_;
  MetalRenderer renderer_;
  std::string description_;
};

MetalLimits limits_of(const Context& c) {
  const ObjcApi& a = c.api();
  MetalLimits l;
  l.simdgroup_matrix = msg<bool>(a, c.device(), "supportsFamily:", kFamilyApple7);
  l.threadgroup_bytes = static_cast<uint32_t>(msg<uint64_t>(a, c.device(), "maxThreadgroupMemoryLength"));
  id info = msg(a, a.objc_getClass("NSProcessInfo"), "processInfo");
  l.version =
      msg<bool>(a, info, "isOperatingSystemAtLeastVersion:", NSOperatingSystemVersion{14, 0, 0}) ? 31 : 30;
  return l;
}

class MetalDevice final : public tg::sdk::Device {
 public:
  static constexpr int32_t priority = 100;  // a GPU: the default where one is present
  static constexpr const char* version = TG_PLUGIN_VERSION;

  static Status probe() {
    std::string why;
    if (objc_api(&why) == nullptr)
      return tg::sdk::unavailable(why +
                                  "; --compile-only here is a syntax check (clang + the project's Metal "
                                  "shim), not Apple's compiler");
    return {};
  }
  static std::string compile_targets() { return "metal3.1 metal3.0"; }
  static tg::sdk::Device* compile_only(std::string_view arch) {
    int v = parse_arch(arch);
    if (v == 0)
      throw std::runtime_error(
          fmt::format("'{}' is not a Metal language version (metal3.0, metal3.1)", arch));
    return new MetalTarget(v);
  }

  explicit MetalDevice(int32_t index) : ctx_(index == 0 ? std::make_shared<Context>() : nullptr) {
    if (index != 0)
      throw std::runtime_error(fmt::format("no METAL device {}: only METAL:0, the system default", index));
    limits_ = limits_of(*ctx_);
    allocator_ = std::make_unique<MetalAllocator>(ctx_);
    compiler_ = std::make_unique<MetalCompiler>(ctx_);
    renderer_ = std::make_unique<MetalRenderer>(metal_caps(limits_));
    AutoreleasePool pool(ctx_->api());
    description_ = fmt::format(
        "{} (metal{}.{}{})", text_of(ctx_->api(), msg(ctx_->api(), ctx_->device(), "name")),
        limits_.version / 10, limits_.version % 10, limits_.simdgroup_matrix ? ", simdgroup matrices" : "");
  }

  tg::sdk::Allocator& allocator() noexcept override { return *allocator_; }
  tg::sdk::Renderer& renderer() noexcept override { return *renderer_; }
  tg::sdk::Compiler& compiler() noexcept override { return *compiler_; }
  std::string_view description() const noexcept override { return description_; }
  Status synchronize() noexcept override { return ctx_->wait(); }

  Status load(std::string_view name, std::span<const std::byte> binary,
              tg::sdk::Program** out) noexcept override {
    return tg::sdk::guard([&]() -> Status {
      const ObjcApi& a = ctx_->api();
      std::string err, kname(name);
      Owned lib = MetalCompiler::library(
          *ctx_, std::string(reinterpret_cast<const char*>(binary.data()), binary.size()), &err);
      if (!lib) return {Code::invalid_argument, fmt::format("[METAL load] {}: {}", kname, err)};
      AutoreleasePool pool(a);
      Owned fn(&a, msg(a, lib.get(), "newFunctionWithName:", ns_string(a, kname)));
      if (!fn)
        return {Code::invalid_argument, fmt::format("[METAL load] no kernel '{}' in the library", kname)};
      id error = nullptr;
      Owned pipeline(&a,
                     msg(a, ctx_->device(), "newComputePipelineStateWithFunction:error:", fn.get(), &error));
      if (!pipeline)
        return {Code::invalid_argument, fmt::format("[METAL load] {}: {}", kname, text_of(a, error))};
      *out = new MetalProgram(ctx_, std::move(pipeline), kname);
      return {};
    });
  }

 private:
  std::shared_ptr<Context> ctx_;
  MetalLimits limits_;
  std::unique_ptr<MetalAllocator> allocator_;
  std::unique_ptr<MetalCompiler> compiler_;
  std::unique_ptr<MetalRenderer> renderer_;
  std::string description_;
};

}  // namespace

}  // namespace tg::metal

TG_PLUGIN(METAL, tg::metal::MetalDevice)
