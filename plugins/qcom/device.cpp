// QCOM: Adreno GPUs through the vendor's OpenCL (libOpenCL.so on the board), or any OpenCL ICD with image
// support named by QCOM_ICD (PoCL here). Kernels are Adreno OpenCL C with read-only buffers as images.
#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <memory>
#include <vector>

#include <fmt/format.h>

#include "base/env.hpp"
#include "plugins/qcom/api.hpp"
#include "plugins/qcom/renderer.hpp"
#include "tg/sdk/plugin.hpp"

// The variables this plugin reads (`tg env` lists them under QCOM).
const tg::env::Declare kEnv{"QCOM",
                            {
                                {"QCOM_ICD", "",
                                 "the OpenCL library the QCOM device runs on (default: the Adreno driver; "
                                 "any ICD with image support)"},
                            }};

namespace tg::qcom {

using tg::sdk::Code;
using tg::sdk::Handle;
using tg::sdk::Status;

namespace {

Status cl_status(cl_int err, std::string_view what) {
  if (err == CL_SUCCESS) return {};
  Code c = err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_RESOURCES || err == CL_OUT_OF_HOST_MEMORY
               ? Code::out_of_memory
               : Code::runtime_error;
  return {c, fmt::format("[QCOM] {}: {}", what, cl_error(err))};
}

template <class T>
T device_value(const QcomCl& cl, cl_device_id d, cl_device_info what) {
  T v{};
  cl.clGetDeviceInfo(d, what, sizeof v, &v, nullptr);
  return v;
}

std::string device_string(const QcomCl& cl, cl_device_id d, cl_device_info what) {
  size_t n = 0;
  cl.clGetDeviceInfo(d, what, 0, nullptr, &n);
  std::string s(n, '\0');
  cl.clGetDeviceInfo(d, what, n, s.data(), nullptr);
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

// The first GPU (else any device) of the library's platform that has images with RGBA float and half texels.
class Context {
 public:
  Context() {
    std::string why;
    cl_ = qcom_cl(&why);
    if (cl_ == nullptr) throw std::runtime_error(why);
    cl_platform_id platform = cl_->platform;
    cl_uint n = 0;
    if (platform == nullptr && (cl_->clGetPlatformIDs(1, &platform, &n) != CL_SUCCESS || n == 0))
      throw std::runtime_error(fmt::format("unavailable: {} has no OpenCL platform", cl_->library));
    if (cl_->clGetDeviceIDs(platform, CL_DEVICE_TYPE_GPU, 1, &device_, &n) != CL_SUCCESS || n == 0)
      if (cl_->clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device_, &n) != CL_SUCCESS || n == 0)
        throw std::runtime_error(fmt::format("unavailable: {} has no OpenCL device", cl_->library));
    if (!device_value<cl_bool>(*cl_, device_, CL_DEVICE_IMAGE_SUPPORT))
      throw std::runtime_error(fmt::format("unavailable: the OpenCL device of {} has no image support "
                                           "(CL_DEVICE_IMAGE_SUPPORT = 0)",
                                           cl_->library));
    cl_int err = CL_SUCCESS;
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, reinterpret_cast<cl_context_properties>(platform), 0};
    context_ = cl_->clCreateContext(props, 1, &device_, nullptr, nullptr, &err);
    if (context_ == nullptr) throw std::runtime_error("[QCOM] clCreateContext: " + cl_error(err));
    queue_ = cl_->clCreateCommandQueue(context_, device_, CL_QUEUE_PROFILING_ENABLE, &err);
    if (queue_ == nullptr) throw std::runtime_error("[QCOM] clCreateCommandQueue: " + cl_error(err));
    for (cl_channel_type t : {CL_FLOAT, CL_HALF_FLOAT})
      if (!has_rgba(t))
        throw std::runtime_error(fmt::format("unavailable: the OpenCL device of {} has no RGBA {} images",
                                             cl_->library, t == CL_FLOAT ? "float" : "half-float"));
  }
  ~Context() {
    cl_->clFinish(queue_);
    cl_->clReleaseCommandQueue(queue_);
    cl_->clReleaseContext(context_);
  }
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  const QcomCl& cl() const { return *cl_; }
  cl_context context() const { return context_; }
  cl_device_id device() const { return device_; }
  cl_command_queue queue() const { return queue_; }

 private:
  bool has_rgba(cl_channel_type type) const {
    cl_uint n = 0;
    cl_->clGetSupportedImageFormats(context_, CL_MEM_READ_ONLY, CL_MEM_OBJECT_IMAGE2D, 0, nullptr, &n);
    std::vector<cl_image_format> formats(n);
    cl_->clGetSupportedImageFormats(context_, CL_MEM_READ_ONLY, CL_MEM_OBJECT_IMAGE2D, n, formats.data(), nullptr);
    return std::any_of(formats.begin(), formats.end(), [&](const cl_image_format& f) {
      return f.image_channel_order == CL_RGBA && f.image_channel_data_type == type;
    });
  }

  const QcomCl* cl_ = nullptr;
  cl_device_id device_ = nullptr;
  cl_context context_ = nullptr;
  cl_command_queue queue_ = nullptr;
};

// Buffers are padded to whole image rows (padded_bytes), so any float or half buffer can be an image.
class QcomAllocator final : public tg::sdk::Allocator {
 public:
  QcomAllocator(std::shared_ptr<Context> ctx, QcomArch arch) : ctx_(std::move(ctx)), arch_(arch) {}
  Status alloc(size_t nbytes, const tg::sdk::AllocOptions&, Handle* out) noexcept override {
    cl_int err = CL_SUCCESS;
    cl_mem m = ctx_->cl().clCreateBuffer(ctx_->context(), CL_MEM_READ_WRITE, padded_bytes(nbytes, arch_),
                                         nullptr, &err);
    if (m == nullptr) {
      Status s = cl_status(err, fmt::format("clCreateBuffer of {} bytes", nbytes));
      // A size over CL_DEVICE_MAX_MEM_ALLOC_SIZE is out of memory too, so the core can flush and retry.
      if (err == CL_INVALID_BUFFER_SIZE) return {Code::out_of_memory, s.message()};
      return s;
    }
    *out = m;
    return {};
  }
  void free(Handle buf, size_t, const tg::sdk::AllocOptions&) noexcept override {
    ctx_->cl().clReleaseMemObject(static_cast<cl_mem>(buf));
  }
  Status copyin(Handle dst, std::span<const std::byte> src) noexcept override {
    if (src.empty()) return {};
    return cl_status(ctx_->cl().clEnqueueWriteBuffer(ctx_->queue(), static_cast<cl_mem>(dst), CL_TRUE, 0, src.size(),
                                                     src.data(), 0, nullptr, nullptr),
                     "copyin");
  }
  Status copyout(std::span<std::byte> dst, Handle src) noexcept override {
    if (dst.empty()) return {};
    return cl_status(ctx_->cl().clEnqueueReadBuffer(ctx_->queue(), static_cast<cl_mem>(src), CL_TRUE, 0, dst.size(),
                                                    dst.data(), 0, nullptr, nullptr),
                     "copyout");
  }
  Status transfer(Handle dst, Handle src, size_t nbytes) noexcept override {
    if (nbytes == 0) return {};
    return cl_status(ctx_->cl().clEnqueueCopyBuffer(ctx_->queue(), static_cast<cl_mem>(src), static_cast<cl_mem>(dst),
                                                    0, 0, nbytes, 0, nullptr, nullptr),
                     "transfer");
  }
  size_t alignment() const noexcept override { return 128; }

 private:
  std::shared_ptr<Context> ctx_;
  QcomArch arch_;
};

// A built program, or the build log as the error.
Status build(const Context& c, std::string_view source, cl_program* out) {
  const char* text = source.data();
  size_t len = source.size();
  cl_int err = CL_SUCCESS;
  cl_program p = c.cl().clCreateProgramWithSource(c.context(), 1, &text, &len, &err);
  if (p == nullptr) return cl_status(err, "clCreateProgramWithSource");
  cl_device_id d = c.device();
  if (err = c.cl().clBuildProgram(p, 1, &d, "-cl-std=CL1.2", nullptr, nullptr); err != CL_SUCCESS) {
    size_t n = 0;
    c.cl().clGetProgramBuildInfo(p, d, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n);
    std::string log(n, '\0');
    c.cl().clGetProgramBuildInfo(p, d, CL_PROGRAM_BUILD_LOG, n, log.data(), nullptr);
    c.cl().clReleaseProgram(p);
    return {Code::compile_error, fmt::format("[QCOM compile] the OpenCL compiler said ({}):\n{}\n{}", cl_error(err),
                                             log, source)};
  }
  *out = p;
  return {};
}

// The binary is the checked source; its image lines say which arguments the runtime passes as images.
class QcomCompiler final : public tg::sdk::Compiler {
 public:
  QcomCompiler(std::shared_ptr<Context> ctx, QcomArch arch) : ctx_(std::move(ctx)), arch_(arch) {
    key_ = fmt::format("qcom-opencl-source-1 {} pitch {}", device_string(ctx_->cl(), ctx_->device(), CL_DRIVER_VERSION),
                       arch_.pitch_align);
  }
  std::string_view cache_key() const noexcept override { return key_; }
  Status compile(std::string_view source, tg::sdk::Blob& binary) noexcept override {
    return tg::sdk::guard([&]() -> Status {
      for (const auto& [arg, img] : parse_images(source)) check_image(img, arch_);
      cl_program p = nullptr;
      if (Status s = build(*ctx_, source, &p); !s.ok()) return s;
      ctx_->cl().clReleaseProgram(p);
      binary.assign(source);
      return {};
    });
  }

 private:
  std::shared_ptr<Context> ctx_;
  QcomArch arch_;
  std::string key_;
};

class QcomProgram final : public tg::sdk::Program {
 public:
  QcomProgram(std::shared_ptr<Context> ctx, cl_program program, cl_kernel kernel, std::string name,
              std::map<int64_t, ImageLayout> images)
      : ctx_(std::move(ctx)), program_(program), kernel_(kernel), name_(std::move(name)), images_(std::move(images)) {}
  ~QcomProgram() override {
    ctx_->cl().clReleaseKernel(kernel_);
    ctx_->cl().clReleaseProgram(program_);
  }

  Status launch(std::span<const Handle> bufs, std::span<const int64_t> vals, const tg::sdk::LaunchDims& dims, bool wait,
                double* seconds) noexcept override {
    return tg::sdk::guard([&]() -> Status {
      const QcomCl& cl = ctx_->cl();
      // Images of this launch, released on the way out: once enqueued, OpenCL keeps them alive.
      struct Made {
        const QcomCl& cl;
        std::vector<cl_mem> mems;
        ~Made() {
          for (cl_mem m : mems) cl.clReleaseMemObject(m);
        }
      } made{cl, {}};
      // Output images: their buffers and layouts, and the images, in the order they were made.
      std::vector<std::pair<cl_mem, const ImageLayout*>> outputs;
      std::vector<cl_mem> written;
      for (size_t i = 0; i < bufs.size(); i++) {
        cl_mem m = static_cast<cl_mem>(bufs[i]);
        if (auto it = images_.find(static_cast<int64_t>(i)); it != images_.end()) {
          cl_mem img = nullptr;
          if (Status s = image_of(m, it->second, &img); !s.ok()) return s;
          made.mems.push_back(img);
          if (it->second.write) outputs.push_back({m, &it->second}), written.push_back(img);
          m = img;
        }
        if (cl_int err = cl.clSetKernelArg(kernel_, static_cast<cl_uint>(i), sizeof m, &m); err != CL_SUCCESS)
          return cl_status(err, fmt::format("{}: argument {}", name_, i));
      }
      for (size_t i = 0; i < vals.size(); i++) {
        cl_long x = vals[i];
        if (cl_int err = cl.clSetKernelArg(kernel_, static_cast<cl_uint>(bufs.size() + i), sizeof x, &x);
            err != CL_SUCCESS)
          return cl_status(err, fmt::format("{}: integer argument {}", name_, i));
      }
      std::array<size_t, 3> global{}, local{};
      for (int i = 0; i < 3; i++) global[i] = size_t{dims.global[i]} * dims.local[i], local[i] = dims.local[i];
      if (global[0] * global[1] * global[2] == 0) {
        if (wait && seconds != nullptr) *seconds = 0;
        return {};
      }
      cl_event ev = nullptr;
      cl_int err = cl.clEnqueueNDRangeKernel(ctx_->queue(), kernel_, 3, nullptr, global.data(), local.data(), 0,
                                             nullptr, wait ? &ev : nullptr);
      if (err != CL_SUCCESS)
        return cl_status(err, fmt::format("[QCOM launch] {} with global ({},{},{}) local ({},{},{})", name_,
                                          dims.global[0], dims.global[1], dims.global[2], dims.local[0],
                                          dims.local[1], dims.local[2]));
      // Output images back into their buffers, after the kernel on the same in-order queue.
      cl_event back = nullptr;
      for (size_t o = 0; o < outputs.size(); o++) {
        const ImageLayout& l = *outputs[o].second;
        size_t origin[3] = {0, 0, 0},
               region[3] = {static_cast<size_t>(l.width), static_cast<size_t>(l.height), 1};
        bool last = wait && o + 1 == outputs.size();
        err = cl.clEnqueueCopyImageToBuffer(ctx_->queue(), written[o], outputs[o].first, origin, region, 0, 0,
                                            nullptr, last ? &back : nullptr);
        if (err != CL_SUCCESS) {
          if (ev != nullptr) cl.clReleaseEvent(ev);
          return cl_status(err,
                           fmt::format("{}: copying output image {} back into its buffer", name_, l.arg));
        }
      }
      if (!wait) return {};
      if (back != nullptr) {
        err = cl.clWaitForEvents(1, &back);
        cl.clReleaseEvent(back);
      }
      if (err == CL_SUCCESS) err = cl.clWaitForEvents(1, &ev);
      cl_ulong t0 = 0, t1 = 0;
      if (err == CL_SUCCESS && seconds != nullptr) {
        cl.clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof t0, &t0, nullptr);
        cl.clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof t1, &t1, nullptr);
        *seconds = static_cast<double>(t1 - t0) * 1e-9;
      }
      cl.clReleaseEvent(ev);
      return cl_status(err, fmt::format("waiting for {}", name_));
    });
  }

 private:
  // An RGBA image with the buffer's values, copied in on the queue before the kernel (an output image too:
  // texels the kernel does not write keep the buffer's values when it is copied back). On Adreno the image
  // could alias the buffer (cl_khr_image2d_from_buffer, rows at the pitch alignment) and skip the copies.
  Status image_of(cl_mem buf, const ImageLayout& l, cl_mem* out) {
    const QcomCl& cl = ctx_->cl();
    cl_image_format format{CL_RGBA, static_cast<cl_channel_type>(l.half ? CL_HALF_FLOAT : CL_FLOAT)};
    cl_image_desc desc{};
    desc.image_type = CL_MEM_OBJECT_IMAGE2D;
    desc.image_width = static_cast<size_t>(l.width), desc.image_height = static_cast<size_t>(l.height);
    cl_int err = CL_SUCCESS;
    cl_mem img = cl.clCreateImage(ctx_->context(), l.write ? CL_MEM_WRITE_ONLY : CL_MEM_READ_ONLY, &format,
                                  &desc, nullptr, &err);
    if (img == nullptr) return cl_status(err, fmt::format("{}: clCreateImage {} x {}", name_, l.width, l.height));
    size_t origin[3] = {0, 0, 0}, region[3] = {desc.image_width, desc.image_height, 1};
    err = cl.clEnqueueCopyBufferToImage(ctx_->queue(), buf, img, 0, origin, region, 0, nullptr, nullptr);
    if (err != CL_SUCCESS) {
      cl.clReleaseMemObject(img);
      return cl_status(err, fmt::format("{}: copying buffer {} into its image", name_, l.arg));
    }
    *out = img;
    return {};
  }

  std::shared_ptr<Context> ctx_;
  cl_program program_;
  cl_kernel kernel_;
  std::string name_;
  std::map<int64_t, ImageLayout> images_;
};

tg::sdk::RendererCaps qcom_caps(const Context& c) {
  const QcomCl& cl = c.cl();
  cl_device_id d = c.device();
  tg::opencl::OpenCLLimits l;
  std::string ext = device_string(cl, d, CL_DEVICE_EXTENSIONS);
  l.fp16 = ext.find("cl_khr_fp16") != std::string::npos;
  l.fp64 = false;  // Adreno has no double
  l.preferred_float_width = 4;  // float4 loads and stores: one RGBA texel of an image
  l.max_work_group_size = static_cast<uint32_t>(device_value<size_t>(cl, d, CL_DEVICE_MAX_WORK_GROUP_SIZE));
  size_t items[3] = {1, 1, 1};
  cl.clGetDeviceInfo(d, CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof items, items, nullptr);
  for (int i = 0; i < 3; i++) l.max_work_item_sizes[i] = static_cast<uint32_t>(std::min<size_t>(items[i], UINT32_MAX));
  l.local_mem_size = device_value<cl_ulong>(cl, d, CL_DEVICE_LOCAL_MEM_SIZE);
  l.max_parameter_size = device_value<size_t>(cl, d, CL_DEVICE_MAX_PARAMETER_SIZE);
  tg::sdk::RendererCaps caps = tg::opencl::opencl_caps(l, "qcom adreno");
  caps.max_buffers = std::min<uint32_t>(caps.max_buffers, device_value<cl_uint>(cl, d, CL_DEVICE_MAX_READ_IMAGE_ARGS));
  return caps;
}

QcomArch arch_of(const Context& c) {
  QcomArch a;  // the pitch stays Adreno's 64 bytes, so every driver runs the kernels a board would
  a.max_width = static_cast<uint32_t>(std::min<size_t>(device_value<size_t>(c.cl(), c.device(), CL_DEVICE_IMAGE2D_MAX_WIDTH), a.max_width));
  a.max_height = static_cast<uint32_t>(std::min<size_t>(device_value<size_t>(c.cl(), c.device(), CL_DEVICE_IMAGE2D_MAX_HEIGHT), a.max_height));
  return a;
}

class QcomDevice final : public tg::sdk::Device {
 public:
  static constexpr int32_t priority = 90;  // a GPU, below CUDA and METAL
  static constexpr const char* version = TG_PLUGIN_VERSION;

  static Status probe() {
    std::string why;
    if (qcom_cl(&why) == nullptr) return tg::sdk::unavailable(why);
    return {};
  }

  explicit QcomDevice(int32_t index) : ctx_(std::make_shared<Context>()), arch_(arch_of(*ctx_)) {
    if (index != 0) throw std::runtime_error(fmt::format("no QCOM device {}: only QCOM:0", index));
    allocator_ = std::make_unique<QcomAllocator>(ctx_, arch_);
    compiler_ = std::make_unique<QcomCompiler>(ctx_, arch_);
    renderer_ = std::make_unique<QcomRenderer>(qcom_caps(*ctx_), arch_);
    description_ = fmt::format("{} ({}), Adreno OpenCL C with image2d_t, {}-byte row pitch",
                               device_string(ctx_->cl(), ctx_->device(), CL_DEVICE_NAME), ctx_->cl().library,
                               arch_.pitch_align);
  }

  tg::sdk::Allocator& allocator() noexcept override { return *allocator_; }
  tg::sdk::Renderer& renderer() noexcept override { return *renderer_; }
  tg::sdk::Compiler& compiler() noexcept override { return *compiler_; }
  std::string_view description() const noexcept override { return description_; }
  Status synchronize() noexcept override { return cl_status(ctx_->cl().clFinish(ctx_->queue()), "synchronize"); }

  Status load(std::string_view name, std::span<const std::byte> binary, tg::sdk::Program** out) noexcept override {
    return tg::sdk::guard([&]() -> Status {
      std::string_view src(reinterpret_cast<const char*>(binary.data()), binary.size());
      auto images = parse_images(src);
      for (const auto& [arg, img] : images) check_image(img, arch_);
      cl_program p = nullptr;
      if (Status s = build(*ctx_, src, &p); !s.ok()) return s;
      std::string kname(name);
      cl_int err = CL_SUCCESS;
      cl_kernel k = ctx_->cl().clCreateKernel(p, kname.c_str(), &err);
      if (k == nullptr) {
        ctx_->cl().clReleaseProgram(p);
        return {Code::invalid_argument, fmt::format("[QCOM load] no kernel '{}': {}", kname, cl_error(err))};
      }
      // DEBUG>=2: which kernels read and write images, with running counts (how much of a run uses textures).
      int64_t outputs =
          std::count_if(images.begin(), images.end(), [](const auto& i) { return i.second.write; });
      int64_t inputs = static_cast<int64_t>(images.size()) - outputs;
      loaded_++, reading_ += inputs > 0, writing_ += outputs > 0;
      if (std::atoi(env::get("DEBUG").c_str()) >= 2)
        fmt::print(stderr,
                   "[QCOM images] {}: {} image argument(s), {} read, {} written; of {} kernels loaded so far "
                   "{} read images, {} write images\n",
                   kname, images.size(), inputs, outputs, loaded_.load(), reading_.load(), writing_.load());
      *out = new QcomProgram(ctx_, p, k, kname, std::move(images));
      return {};
    });
  }

 private:
  std::shared_ptr<Context> ctx_;
  QcomArch arch_;
  std::unique_ptr<QcomAllocator> allocator_;
  std::unique_ptr<QcomCompiler> compiler_;
  std::unique_ptr<QcomRenderer> renderer_;
  std::string description_;
  std::atomic<int64_t> loaded_{0}, reading_{0}, writing_{0};
};

}  // namespace

}  // namespace tg::qcom

TG_PLUGIN(QCOM, tg::qcom::QcomDevice)
