// LEVEL_ZERO: Intel GPUs through the Level Zero loader (dlopened), running SPIR-V made from our OpenCL C in
// process (spirv_compiler.*). Without a driver it still compiles for the Intel GPU families in kTargets.
#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include <fmt/format.h>

#include "base/env.hpp"
#include "plugins/cl/opencl_renderer.hpp"
#include "plugins/cl/spirv/spirv_compiler.hpp"
#include "plugins/level_zero/context.hpp"
#include "tg/sdk/host_memory.hpp"
#include "tg/sdk/plugin.hpp"

// The variables this plugin reads (`tg env` lists them under LEVEL_ZERO).
const tg::env::Declare kEnv{
    "LEVEL_ZERO",
    {
        {"TG_LIBZE", "", "the Level Zero loader the LEVEL_ZERO device opens (default: libze_loader.so.1)"},
    }};

namespace tg::level_zero {

using tg::sdk::Code;
using tg::sdk::Handle;
using tg::sdk::Status;

namespace {

// Compile-only targets: what the caps assume of each Intel GPU family (fp64 only where the hardware has it).
struct Target {
  const char* arch;
  const char* what;
  tg::opencl::OpenCLLimits limits;
};
constexpr uint32_t kArgBytes = 2048;  // the Intel GPU drivers' kernel argument budget
const std::array<Target, 3> kTargets = {{
    {"xe-hpc",
     "Data Center GPU Max (Ponte Vecchio)",
     {true, true, 1, 1024, {1024, 1024, 1024}, 128 << 10, kArgBytes}},
    {"xe-hpg",
     "Arc A-series (DG2/Alchemist)",
     {true, false, 1, 1024, {1024, 1024, 1024}, 64 << 10, kArgBytes}},
    {"xe-lp", "Iris Xe / UHD (Tiger Lake, DG1)", {true, false, 1, 512, {512, 512, 512}, 64 << 10, kArgBytes}},
}};

// Device memory by zeMemAllocDevice (zeMemAllocShared when the core maps it); copies through one host
// staging buffer (zeMemAllocHost) on the synchronous copy list.
class ZeAllocator final : public tg::sdk::Allocator {
 public:
  explicit ZeAllocator(std::shared_ptr<Context> ctx) : ctx_(std::move(ctx)) {}
  ~ZeAllocator() override {
    if (staging_ != nullptr) ctx_->ze().zeMemFree(ctx_->context(), staging_);
  }

  Status alloc(size_t nbytes, const tg::sdk::AllocOptions& o, Handle* out) noexcept override {
    void* p = nullptr;
    size_t n = std::max<size_t>(nbytes, kAlign);
    ze_device_mem_alloc_desc_t dd{ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, nullptr, 0, 0};
    ze_host_mem_alloc_desc_t hd{ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC, nullptr, 0};
    ze_result_t r =
        o.host_visible ? ctx_->ze().zeMemAllocShared(ctx_->context(), &dd, &hd, n, kAlign, ctx_->device(), &p)
                       : ctx_->ze().zeMemAllocDevice(ctx_->context(), &dd, n, kAlign, ctx_->device(), &p);
    if (Status s = ze_status(r, fmt::format("allocating {} bytes", nbytes)); !s.ok()) return s;
    *out = p;
    return {};
  }
  void free(Handle buf, size_t, const tg::sdk::AllocOptions&) noexcept override {
    (void)ctx_->synchronize();  // a kernel may still use it
    ctx_->ze().zeMemFree(ctx_->context(), buf);
  }
  Status copyin(Handle dst, std::span<const std::byte> src) noexcept override {
    std::lock_guard lock(mu_);
    for (size_t done = 0; done < src.size();) {
      size_t n = std::min(src.size() - done, kStaging);
      if (Status s = stage(); !s.ok()) return s;
      std::memcpy(staging_, src.data() + done, n);
      if (Status s = ctx_->copy(static_cast<std::byte*>(dst) + done, staging_, n, "copyin"); !s.ok())
        return s;
      done += n;
    }
    return {};
  }
  Status copyout(std::span<std::byte> dst, Handle src) noexcept override {
    std::lock_guard lock(mu_);
    for (size_t done = 0; done < dst.size();) {
      size_t n = std::min(dst.size() - done, kStaging);
      if (Status s = stage(); !s.ok()) return s;
      if (Status s = ctx_->copy(staging_, static_cast<const std::byte*>(src) + done, n, "copyout"); !s.ok())
        return s;
      std::memcpy(dst.data() + done, staging_, n);
      done += n;
    }
    return {};
  }
  size_t alignment() const noexcept override { return kAlign; }
  Status offset(Handle buf, size_t off, size_t, Handle* out) noexcept override {
    *out = static_cast<std::byte*>(buf) + off;
    return {};
  }
  Status transfer(Handle dst, Handle src, size_t nbytes) noexcept override {
    return ctx_->copy(dst, src, nbytes, "transfer");
  }
  void* as_host(Handle buf) noexcept override { return buf; }  // only asked of host_visible (shared) buffers

 private:
  static constexpr size_t kAlign = 256, kStaging = 16 << 20;
  Status stage() {
    if (staging_ != nullptr) return {};
    ze_host_mem_alloc_desc_t hd{ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC, nullptr, 0};
    return ze_status(ctx_->ze().zeMemAllocHost(ctx_->context(), &hd, kStaging, 64, &staging_),
                     "zeMemAllocHost (staging)");
  }

  std::shared_ptr<Context> ctx_;
  std::mutex mu_;
  void* staging_ = nullptr;
};

class ZeProgram final : public tg::sdk::Program {
 public:
  ZeProgram(std::shared_ptr<Context> ctx, ze_module_handle_t module, ze_kernel_handle_t kernel,
            std::string name)
      : ctx_(std::move(ctx)), module_(module), kernel_(kernel), name_(std::move(name)) {}
  ~ZeProgram() override {
    (void)ctx_->synchronize();
    ctx_->ze().zeKernelDestroy(kernel_);
    ctx_->ze().zeModuleDestroy(module_);
  }

  Status launch(std::span<const Handle> bufs, std::span<const int64_t> vals, const tg::sdk::LaunchDims& d,
                bool wait, double* seconds) noexcept override {
    return tg::sdk::guard([&]() -> Status {
      const ZeApi& ze = ctx_->ze();
      std::lock_guard lock(mu_);  // arguments and group size live on the kernel object
      uint32_t arg = 0;
      for (Handle h : bufs)
        if (ze_result_t r = ze.zeKernelSetArgumentValue(kernel_, arg++, sizeof h, &h); r != ZE_RESULT_SUCCESS)
          return bad(r, fmt::format("buffer argument {}", arg - 1));
      for (int64_t v : vals)  // the renderer declares every integer argument as long
        if (ze_result_t r = ze.zeKernelSetArgumentValue(kernel_, arg++, sizeof v, &v); r != ZE_RESULT_SUCCESS)
          return bad(r, fmt::format("integer argument {}", arg - 1));
      if (uint64_t(d.global[0]) * d.global[1] * d.global[2] == 0) {
        if (wait && seconds != nullptr) *seconds = 0;
        return {};
      }
      if (ze_result_t r = ze.zeKernelSetGroupSize(kernel_, d.local[0], d.local[1], d.local[2]);
          r != ZE_RESULT_SUCCESS)
        return bad(r, fmt::format("group size ({},{},{})", d.local[0], d.local[1], d.local[2]));
      ze_group_count_t groups{d.global[0], d.global[1], d.global[2]};
      Timestamp ts(*ctx_, wait);
      ze_command_list_handle_t list = ctx_->new_command_list("zeCommandListCreate");
      ze_result_t r = ze.zeCommandListAppendLaunchKernel(list, kernel_, &groups, ts.event, 0, nullptr);
      if (r != ZE_RESULT_SUCCESS) {
        ze.zeCommandListDestroy(list);
        return bad(r, fmt::format("groups ({},{},{})", d.global[0], d.global[1], d.global[2]));
      }
      if (Status s = ctx_->submit(list, fmt::format("running {}", name_)); !s.ok() || !wait) return s;
      if (ts.event == nullptr) {  // no timestamp event could be made: wait for the queue, time unknown
        if (seconds != nullptr) *seconds = 0;
        return ctx_->synchronize();
      }
      if (Status s =
              ze_status(ze.zeEventHostSynchronize(ts.event, UINT64_MAX), fmt::format("running {}", name_));
          !s.ok())
        return s;
      ze_kernel_timestamp_result_t t{};
      if (seconds != nullptr && ze.zeEventQueryKernelTimestamp(ts.event, &t) == ZE_RESULT_SUCCESS)
        *seconds = ctx_->kernel_seconds(t);
      return {};
    });
  }

 private:
  // A kernel-timestamp event of its own pool, when the caller waits and wants the time.
  struct Timestamp {
    Timestamp(const Context& c, bool want) : ctx(c) {
      if (!want) return;
      ze_event_pool_desc_t pd{ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, nullptr,
                              ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP | ZE_EVENT_POOL_FLAG_HOST_VISIBLE, 1};
      ze_device_handle_t dev = c.device();
      if (c.ze().zeEventPoolCreate(c.context(), &pd, 1, &dev, &pool) != ZE_RESULT_SUCCESS) return;
      ze_event_desc_t ed{ZE_STRUCTURE_TYPE_EVENT_DESC, nullptr, 0, ZE_EVENT_SCOPE_FLAG_HOST,
                         ZE_EVENT_SCOPE_FLAG_HOST};
      if (c.ze().zeEventCreate(pool, &ed, &event) != ZE_RESULT_SUCCESS) event = nullptr;
    }
    ~Timestamp() {
      if (event != nullptr) ctx.ze().zeEventDestroy(event);
      if (pool != nullptr) ctx.ze().zeEventPoolDestroy(pool);
    }
    const Context& ctx;
    ze_event_pool_handle_t pool = nullptr;
    ze_event_handle_t event = nullptr;
  };

  Status bad(ze_result_t r, const std::string& what) const {
    bool arg = r == ZE_RESULT_ERROR_INVALID_ARGUMENT || r == ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION ||
               r == ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX ||
               r == ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE;
    return {arg ? Code::invalid_argument : Code::runtime_error,
            fmt::format("[LEVEL_ZERO launch] {}: {} rejected: {}", name_, what, ze_error(r))};
  }

  std::shared_ptr<Context> ctx_;
  ze_module_handle_t module_;
  ze_kernel_handle_t kernel_;
  std::string name_;
  std::mutex mu_;
};

tg::sdk::RendererCaps caps_of(const tg::opencl::OpenCLLimits& l) {
  tg::sdk::RendererCaps c = tg::opencl::opencl_caps(l, "opencl");
  tg::spirv::limit_caps(c);
  return c;
}

class ZeTarget final : public tg::sdk::Device {
 public:
  explicit ZeTarget(const Target& t)
      : arch_(t.arch), compiler_(t.limits.fp16, t.limits.fp64), renderer_(caps_of(t.limits)) {
    description_ = fmt::format("compile-only {} ({}), {}", t.arch, t.what, compiler_.cache_key());
  }
  tg::sdk::Allocator& allocator() noexcept override { return memory_; }
  tg::sdk::Renderer& renderer() noexcept override { return renderer_; }
  tg::sdk::Compiler& compiler() noexcept override { return compiler_; }
  std::string_view description() const noexcept override { return description_; }
  Status synchronize() noexcept override { return {}; }
  Status load(std::string_view name, std::span<const std::byte>, tg::sdk::Program**) noexcept override {
    return tg::sdk::unavailable(fmt::format(
        "[LEVEL_ZERO load] {}: compile-only {} target, no Level Zero driver to run on", name, arch_));
  }

 private:
  std::string arch_;
  tg::sdk::HostMemory memory_;
  tg::spirv::SpirvCompiler compiler_;
  tg::opencl::OpenCLRenderer renderer_;
  std::string description_;
};

class ZeDevice final : public tg::sdk::Device {
 public:
  static constexpr int32_t priority = 100;  // a GPU: the default where one is present
  static constexpr const char* version = TG_PLUGIN_VERSION;

  static Status probe() {
    if (std::string why = driver_unusable(); !why.empty()) return tg::sdk::unavailable(why);
    return {};
  }

  static std::string compile_targets() {
    std::string out;
    for (const Target& t : kTargets) out += (out.empty() ? "" : " ") + std::string(t.arch);
    return out;
  }
  static tg::sdk::Device* compile_only(std::string_view arch) {
    for (const Target& t : kTargets)
      if (arch == t.arch) return new ZeTarget(t);
    throw std::runtime_error(
        fmt::format("'{}' is not a LEVEL_ZERO target; it compiles for: {}", arch, compile_targets()));
  }

  explicit ZeDevice(int32_t index)
      : ctx_(std::make_shared<Context>(index)),
        allocator_(ctx_),
        compiler_(ctx_->limits().fp16, ctx_->limits().fp64),
        renderer_(caps_of(ctx_->limits())) {
    description_ = fmt::format("{}, {}", ctx_->description(), compiler_.cache_key());
  }

  tg::sdk::Allocator& allocator() noexcept override { return allocator_; }
  tg::sdk::Renderer& renderer() noexcept override { return renderer_; }
  tg::sdk::Compiler& compiler() noexcept override { return compiler_; }
  std::string_view description() const noexcept override { return description_; }
  Status synchronize() noexcept override { return ctx_->synchronize(); }

  Status load(std::string_view name, std::span<const std::byte> binary,
              tg::sdk::Program** out) noexcept override {
    return tg::sdk::guard([&]() -> Status {
      auto words = tg::spirv::spirv_words(binary);
      if (!words) return {Code::invalid_argument, "[LEVEL_ZERO load] not a SPIR-V module"};
      const ZeApi& ze = ctx_->ze();
      // Correctly rounded division and sqrt, as in the reference (the option IGC takes from OpenCL).
      ze_module_desc_t md{ZE_STRUCTURE_TYPE_MODULE_DESC,
                          nullptr,
                          ZE_MODULE_FORMAT_IL_SPIRV,
                          words->size() * 4,
                          reinterpret_cast<const uint8_t*>(words->data()),
                          "-cl-fp32-correctly-rounded-divide-sqrt",
                          nullptr};
      ze_module_handle_t module = nullptr;
      ze_module_build_log_handle_t log = nullptr;
      ze_result_t r = ze.zeModuleCreate(ctx_->context(), ctx_->device(), &md, &module, &log);
      std::string text;
      if (log != nullptr) {
        size_t n = 0;
        if (ze.zeModuleBuildLogGetString(log, &n, nullptr) == ZE_RESULT_SUCCESS && n > 0) {
          text.resize(n);
          ze.zeModuleBuildLogGetString(log, &n, text.data());
          while (!text.empty() && text.back() == '\0') text.pop_back();
        }
        ze.zeModuleBuildLogDestroy(log);
      }
      if (r != ZE_RESULT_SUCCESS)
        return {Code::invalid_argument,
                fmt::format("[LEVEL_ZERO load] zeModuleCreate refused {}: {}\n{}", name, ze_error(r), text)};
      std::string kname(name);
      ze_kernel_desc_t kd{ZE_STRUCTURE_TYPE_KERNEL_DESC, nullptr, 0, kname.c_str()};
      ze_kernel_handle_t kernel = nullptr;
      if ((r = ze.zeKernelCreate(module, &kd, &kernel)) != ZE_RESULT_SUCCESS) {
        ze.zeModuleDestroy(module);
        return {Code::invalid_argument,
                fmt::format("[LEVEL_ZERO load] no kernel '{}' in the module: {}", kname, ze_error(r))};
      }
      *out = new ZeProgram(ctx_, module, kernel, kname);
      return {};
    });
  }

 private:
  std::shared_ptr<Context> ctx_;
  ZeAllocator allocator_;
  tg::spirv::SpirvCompiler compiler_;
  tg::opencl::OpenCLRenderer renderer_;
  std::string description_;
};

}  // namespace

}  // namespace tg::level_zero

TG_PLUGIN(LEVEL_ZERO, tg::level_zero::ZeDevice)
