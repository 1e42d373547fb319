// CL: OpenCL devices through the ICD loader (dlopened), e.g. PoCL on the CPU. Kernels are OpenCL C built by
// the driver (or, with DEV=CL:spirv, SPIR-V from our own toolchain), launched on one in-order queue with
// profiling events.
#include <array>
#include <memory>

#include <fmt/format.h>

#include "base/env.hpp"
#include "plugins/cl/allocator.hpp"
#include "plugins/cl/compiler.hpp"
#include "plugins/cl/context.hpp"
#include "plugins/cl/opencl_renderer.hpp"
#include "plugins/cl/spirv_path.hpp"
#include "runtime/device.hpp"
#include "tg/sdk/plugin.hpp"
#include "tg/sdk/spec_fields.hpp"

namespace tg::cldev {

using tg::sdk::Code;
using tg::sdk::Status;

namespace {

class ClProgram final : public tg::sdk::Program {
 public:
  ClProgram(std::shared_ptr<Context> ctx, cl_program program, cl_kernel kernel, std::string name,
            bool global_ids)
      : ctx_(std::move(ctx)),
        program_(program),
        kernel_(kernel),
        name_(std::move(name)),
        global_ids_(global_ids) {}
  ~ClProgram() override {
    ctx_->cl().clReleaseKernel(kernel_);
    ctx_->cl().clReleaseProgram(program_);
  }

  Status launch(std::span<const tg::sdk::Handle> bufs, std::span<const int64_t> vals,
                const tg::sdk::LaunchDims& dims, bool wait, double* seconds) noexcept override {
    return tg::sdk::guard([&]() -> Status {
      const ClApi& cl = ctx_->cl();
      cl_uint arg = 0;
      for (tg::sdk::Handle h : bufs) {
        cl_mem m = static_cast<cl_mem>(h);
        if (cl_int err = cl.clSetKernelArg(kernel_, arg, sizeof m, &m); err != CL_SUCCESS)
          return bad_arg(err, arg, bufs.size(), vals.size());
        arg++;
      }
      for (int64_t v : vals) {  // the renderer declares every integer argument as long
        cl_long x = v;
        if (cl_int err = cl.clSetKernelArg(kernel_, arg, sizeof x, &x); err != CL_SUCCESS)
          return bad_arg(err, arg, bufs.size(), vals.size());
        arg++;
      }
      // A kernel rendered with global ids has no local ids: the extra work items of a larger group would only
      // repeat the same work, so it runs `global` items in groups the driver picks (on a CPU driver groups of
      // one are slow). Any other kernel runs global*local items in groups of `local`.
      std::array<size_t, 3> global{}, local{};
      for (int i = 0; i < 3; i++) {
        global[i] = global_ids_ ? size_t{dims.global[i]} : size_t{dims.global[i]} * dims.local[i];
        local[i] = dims.local[i];
      }
      if (global[0] * global[1] * global[2] == 0) {  // nothing to run (OpenCL 1.2 rejects empty ranges)
        if (wait && seconds != nullptr) *seconds = 0;
        return {};
      }
      cl_event ev = nullptr;
      cl_int err =
          cl.clEnqueueNDRangeKernel(ctx_->queue(), kernel_, 3, nullptr, global.data(),
                                    global_ids_ ? nullptr : local.data(), 0, nullptr, wait ? &ev : nullptr);
      if (err != CL_SUCCESS) {
        Status s = cl_status(
            err, fmt::format("[CL launch] {} with global ({},{},{}) local ({},{},{})", name_, dims.global[0],
                             dims.global[1], dims.global[2], dims.local[0], dims.local[1], dims.local[2]));
        bool bad_dims = err == CL_INVALID_WORK_GROUP_SIZE || err == CL_INVALID_WORK_ITEM_SIZE ||
                        err == CL_INVALID_GLOBAL_WORK_SIZE;
        return bad_dims ? Status{Code::invalid_argument, s.message()} : std::move(s);
      }
      if (!wait) return {};
      err = cl.clWaitForEvents(1, &ev);
      cl_ulong start = 0, end = 0;
      if (err == CL_SUCCESS && seconds != nullptr) {
        cl.clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof start, &start, nullptr);
        cl.clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof end, &end, nullptr);
        *seconds = end > start ? static_cast<double>(end - start) * 1e-9 : 0.0;
      }
      cl.clReleaseEvent(ev);
      return err == CL_SUCCESS ? Status{} : cl_status(err, fmt::format("[CL launch] waiting for {}", name_));
    });
  }

 private:
  Status bad_arg(cl_int err, cl_uint arg, size_t nbufs, size_t nvals) const {
    return {Code::invalid_argument,
            fmt::format("[CL launch] {}: argument {} ({} buffers, {} integers given) rejected: {}", name_,
                        arg, nbufs, nvals, cl_error(err))};
  }

  std::shared_ptr<Context> ctx_;
  cl_program program_;
  cl_kernel kernel_;
  std::string name_;
  bool global_ids_;
};

// The renderer field of DEV when DEV names CL ("" otherwise). create() receives only the device index, so
// the plugin reads DEV itself, with the core's parser; the field applies to every CL device of the process.
std::string renderer_from_dev() {
  std::string dev = env::get("DEV");
  if (dev.empty()) return "";
  tg::runtime::DeviceSpec spec = tg::runtime::DeviceSpec::parse(dev);
  if (spec.name != "CL" || spec.renderer.empty() || spec.renderer == "opencl") return "";
  if (spec.renderer != "spirv")
    throw std::runtime_error(
        fmt::format("[CL] unknown renderer '{}' in DEV={}: CL renders 'opencl' (OpenCL C "
                    "built by the driver, the default) or 'spirv' (SPIR-V made in process, "
                    "built with clCreateProgramWithIL)",
                    spec.renderer, dev));
  return spec.renderer;
}

tg::sdk::RendererCaps caps_for(const DeviceInfo& info, bool spirv) {
  tg::sdk::RendererCaps c = tg::opencl::opencl_caps(info.limits);
  if (spirv) limit_spirv_caps(c);
  return c;
}

class ClDevice final : public tg::sdk::Device {
 public:
  // Below CLANG: on a machine whose only OpenCL device is the CPU (PoCL), CLANG stays the default.
  static constexpr int32_t priority = 40;
  static constexpr const char* version = TG_PLUGIN_VERSION;

  static Status probe() {
    std::string why;
    const ClApi* cl = cl_api(&why);
    if (cl == nullptr) return tg::sdk::unavailable(why);
    std::vector<std::pair<cl_platform_id, cl_device_id>> devices;
    return list_devices(*cl, &devices);
  }

  explicit ClDevice(int32_t index)
      : ctx_(std::make_shared<Context>(index)),
        allocator_(ctx_),
        compiler_(ctx_),
        spirv_compiler_(renderer_from_dev() == "spirv" ? make_spirv_compiler(ctx_) : nullptr),
        renderer_(caps_for(ctx_->info(), spirv_compiler_ != nullptr), /*global_ids=*/true) {
    const DeviceInfo& i = ctx_->info();
    description_ = fmt::format("{} ({}), {}, driver {}", i.device_name, i.platform_version, i.c_version,
                               i.driver_version);
    if (spirv_compiler_ != nullptr)
      description_ += fmt::format(", SPIR-V path ({})", spirv_compiler_->cache_key());
  }

  tg::sdk::Allocator& allocator() noexcept override { return allocator_; }
  tg::sdk::Renderer& renderer() noexcept override { return renderer_; }
  tg::sdk::Compiler& compiler() noexcept override {
    return spirv_compiler_ != nullptr ? *spirv_compiler_ : static_cast<tg::sdk::Compiler&>(compiler_);
  }
  std::string_view description() const noexcept override { return description_; }
  const void* extension(uint32_t id) noexcept override {
    static constexpr tg::sdk::SpecFields kFields{.renderers = "opencl spirv", .archs = ""};
    return id == tg::sdk::kSpecFieldsExtension ? &kFields : nullptr;
  }

  Status synchronize() noexcept override {
    cl_int err = ctx_->cl().clFinish(ctx_->queue());
    return err == CL_SUCCESS ? Status{} : cl_status(err, "[CL synchronize] clFinish");
  }

  Status load(std::string_view name, std::span<const std::byte> binary,
              tg::sdk::Program** out) noexcept override {
    return tg::sdk::guard([&]() -> Status {
      auto bin = program_binary(binary);
      if (!bin) return {Code::invalid_argument, "[CL load] not a binary made by the CL compiler"};
      const ClApi& cl = ctx_->cl();
      cl_device_id dev = ctx_->device();
      cl_program prog = nullptr;
      if (bin->spirv) {
        if (Status s = build_il(*ctx_, bin->program, compiler_.build_options(), "[CL load]", &prog); !s.ok())
          return s;
        return make_program(prog, name, bin->global_ids, out);
      }
      if (bin->source) {  // the driver's binary was incomplete at compile time: build the kept source
        std::string_view src(reinterpret_cast<const char*>(bin->program.data()), bin->program.size());
        if (Status s = build_source(*ctx_, src, compiler_.build_options(), "[CL load]", &prog); !s.ok())
          return s;
        return make_program(prog, name, bin->global_ids, out);
      }
      if (std::string why = incomplete_driver_binary(bin->program); !why.empty())
        return {Code::invalid_argument, fmt::format("[CL load] {}", why)};
      size_t len = bin->program.size();
      const auto* bytes = reinterpret_cast<const unsigned char*>(bin->program.data());
      cl_int status = CL_SUCCESS, err = CL_SUCCESS;
      prog = cl.clCreateProgramWithBinary(ctx_->context(), 1, &dev, &len, &bytes, &status, &err);
      if (prog == nullptr)
        return {Code::invalid_argument,
                fmt::format("[CL load] the driver rejected the binary: {}", cl_error(err))};
      if ((err = cl.clBuildProgram(prog, 1, &dev, compiler_.build_options().c_str(), nullptr, nullptr)) !=
          CL_SUCCESS) {
        std::string log = build_log(*ctx_, prog);
        cl.clReleaseProgram(prog);
        return {Code::invalid_argument,
                fmt::format("[CL load] building the binary failed: {}\n{}", cl_error(err), log)};
      }
      return make_program(prog, name, bin->global_ids, out);
    });
  }

 private:
  // Kernel `name` of the built program prog (released here on failure).
  Status make_program(cl_program prog, std::string_view name, bool global_ids, tg::sdk::Program** out) {
    const ClApi& cl = ctx_->cl();
    std::string kname(name);
    cl_int err = CL_SUCCESS;
    cl_kernel k = cl.clCreateKernel(prog, kname.c_str(), &err);
    if (k == nullptr) {
      cl.clReleaseProgram(prog);
      return {Code::invalid_argument,
              fmt::format("[CL load] no kernel '{}' in the binary: {}", kname, cl_error(err))};
    }
    *out = new ClProgram(ctx_, prog, k, kname, global_ids);
    return {};
  }

  std::shared_ptr<Context> ctx_;
  ClAllocator allocator_;
  ClCompiler compiler_;                                // also the build options of the SPIR-V path
  std::unique_ptr<tg::sdk::Compiler> spirv_compiler_;  // DEV=CL:spirv
  tg::opencl::OpenCLRenderer renderer_;
  std::string description_;
};

}  // namespace

}  // namespace tg::cldev

TG_PLUGIN(CL, tg::cldev::ClDevice)
