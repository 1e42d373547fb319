// CUDA: NVIDIA GPUs through the driver API (libcuda dlopened) with kernels from NVRTC. Without a GPU the
// plugin still compiles for any sm_XX NVRTC knows (the compile-only device behind tg-conformance
// --compile-only).
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/env.hpp"
#include "plugins/cuda/api.hpp"
#include "plugins/cuda/compiler.hpp"
#include "plugins/cuda/renderer.hpp"
#include "runtime/device.hpp"
#include "tg/sdk/graph.hpp"
#include "tg/sdk/host_memory.hpp"
#include "tg/sdk/plugin.hpp"
#include "tg/sdk/spec_fields.hpp"

// The variables this plugin reads (`tg env` lists them under CUDA).
const tg::env::Declare kEnv{
    "CUDA",
    {
        {"TG_LIBCUDA", "", "the NVIDIA driver library the CUDA device opens (default: libcuda.so.1)"},
        {"TG_NVRTC", "",
         "libnvrtc the CUDA device compiles with (default: the toolkit's, found by the loader)"},
        {"TG_NVJITLINK", "", "libnvJitLink the CUDA device assembles PTX with (default: the toolkit's)"},
        {"TG_CUOBJDUMP", "",
         "cuobjdump the CUDA device disassembles with (default: PATH, the toolkit, the wheel)"},
    }};

namespace tg::cuda {

using tg::sdk::Code;
using tg::sdk::Handle;
using tg::sdk::Status;

namespace {

Status cu_status(CUresult r, std::string_view what) {
  if (r == CUDA_SUCCESS) return {};
  Code c = r == CUDA_ERROR_OUT_OF_MEMORY ? Code::out_of_memory : Code::runtime_error;
  return {c, fmt::format("[CUDA] {}: {}", what, error_name(r))};
}

// One device's context (the primary one) and stream; every entry point makes the context current first, as
// the core may call from any thread.
class Context {
 public:
  explicit Context(int index) : cu_(driver_api(nullptr)) {
    if (std::string why = driver_unusable(); !why.empty()) throw std::runtime_error(why);
    int count = 0;
    cu_->cuDeviceGetCount(&count);
    if (index < 0 || index >= count)
      throw std::runtime_error(
          fmt::format("no CUDA device {}: this machine has {} (CUDA:0 to CUDA:{})", index, count, count - 1));
    throw_if(cu_->cuDeviceGet(&dev_, index), "cuDeviceGet");
    throw_if(cu_->cuDevicePrimaryCtxRetain(&ctx_, dev_), "cuDevicePrimaryCtxRetain");
    make_current();
    throw_if(cu_->cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  }
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  const DriverApi& cu() const { return *cu_; }
  CUdevice device() const { return dev_; }
  CUstream stream() const { return stream_; }
  void make_current() const { cu_->cuCtxSetCurrent(ctx_); }
  int attribute(CUdevice_attribute a) const {
    int v = 0;
    cu_->cuDeviceGetAttribute(&v, a, dev_);
    return v;
  }
  static void throw_if(CUresult r, std::string_view what) {
    if (r != CUDA_SUCCESS) throw std::runtime_error(fmt::format("{}: {}", what, error_name(r)));
  }

 private:
  const DriverApi* cu_;
  CUdevice dev_ = 0;
  CUcontext ctx_ = nullptr;
  CUstream stream_ = nullptr;
};

// Device memory by cuMemAlloc; copies go through one pinned staging buffer on the device's stream.
class CudaAllocator final : public tg::sdk::Allocator {
 public:
  explicit CudaAllocator(std::shared_ptr<Context> ctx) : ctx_(std::move(ctx)) {}
  ~CudaAllocator() override {
    if (staging_ != nullptr) ctx_->cu().cuMemFreeHost(staging_);
  }

  Status alloc(size_t nbytes, const tg::sdk::AllocOptions&, Handle* out) noexcept override {
    ctx_->make_current();
    CUdeviceptr p = 0;
    if (Status s = cu_status(ctx_->cu().cuMemAlloc_v2(&p, std::max<size_t>(nbytes, 256)),
                             fmt::format("cuMemAlloc of {} bytes", nbytes));
        !s.ok())
      return s;
    *out = reinterpret_cast<Handle>(p);
    return {};
  }
  void free(Handle buf, size_t, const tg::sdk::AllocOptions&) noexcept override {
    ctx_->make_current();
    ctx_->cu().cuMemFree_v2(reinterpret_cast<CUdeviceptr>(buf));
  }
  Status copyin(Handle dst, std::span<const std::byte> src) noexcept override {
    std::lock_guard lock(mu_);
    ctx_->make_current();
    for (size_t done = 0; done < src.size();) {
      size_t n = std::min(src.size() - done, kStaging);
      if (Status s = stage(); !s.ok()) return s;
      std::memcpy(staging_, src.data() + done, n);
      if (Status s = cu_status(ctx_->cu().cuMemcpyHtoDAsync_v2(reinterpret_cast<CUdeviceptr>(dst) + done,
                                                               staging_, n, ctx_->stream()),
                               "copyin");
          !s.ok())
        return s;
      // The staging buffer is reused by the next chunk: wait for this one.
      if (Status s = cu_status(ctx_->cu().cuStreamSynchronize(ctx_->stream()), "copyin"); !s.ok()) return s;
      done += n;
    }
    return {};
  }
  Status copyout(std::span<std::byte> dst, Handle src) noexcept override {
    std::lock_guard lock(mu_);
    ctx_->make_current();
    for (size_t done = 0; done < dst.size();) {
      size_t n = std::min(dst.size() - done, kStaging);
      if (Status s = stage(); !s.ok()) return s;
      if (Status s = cu_status(ctx_->cu().cuMemcpyDtoHAsync_v2(
                                   staging_, reinterpret_cast<CUdeviceptr>(src) + done, n, ctx_->stream()),
                               "copyout");
          !s.ok())
        return s;
      if (Status s = cu_status(ctx_->cu().cuStreamSynchronize(ctx_->stream()), "copyout"); !s.ok()) return s;
      std::memcpy(dst.data() + done, staging_, n);
      done += n;
    }
    return {};
  }
  size_t alignment() const noexcept override { return 256; }
  Status offset(Handle buf, size_t off, size_t, Handle* out) noexcept override {
    *out = reinterpret_cast<Handle>(reinterpret_cast<CUdeviceptr>(buf) + off);
    return {};
  }
  Status transfer(Handle dst, Handle src, size_t nbytes) noexcept override {
    ctx_->make_current();
    return cu_status(
        ctx_->cu().cuMemcpyDtoDAsync_v2(reinterpret_cast<CUdeviceptr>(dst),
                                        reinterpret_cast<CUdeviceptr>(src), nbytes, ctx_->stream()),
        "transfer");
  }

 private:
  static constexpr size_t kStaging = 16 << 20;
  Status stage() {
    if (staging_ != nullptr) return {};
    return cu_status(ctx_->cu().cuMemAllocHost_v2(&staging_, kStaging), "cuMemAllocHost (pinned staging)");
  }

  std::shared_ptr<Context> ctx_;
  std::mutex mu_;
  void* staging_ = nullptr;
};

// The grid and block of a launch: a global-id kernel (renderer.hpp) spreads global[0] over blocks of
// kGlobalIdBlock threads and ignores the local sizes; any other runs global blocks of local threads.
struct Shape3 {
  unsigned grid[3], block[3];
};
Shape3 launch_shape(const tg::sdk::LaunchDims& d, bool global_id) {
  if (!global_id) return {{d.global[0], d.global[1], d.global[2]}, {d.local[0], d.local[1], d.local[2]}};
  return {{(d.global[0] + kGlobalIdBlock - 1) / kGlobalIdBlock, d.global[1], d.global[2]},
          {kGlobalIdBlock, 1, 1}};
}

class CudaProgram final : public tg::sdk::Program {
 public:
  CudaProgram(std::shared_ptr<Context> ctx, CUmodule module, CUfunction fn, std::string name, bool global_id)
      : ctx_(std::move(ctx)), module_(module), fn_(fn), name_(std::move(name)), global_id_(global_id) {}
  ~CudaProgram() override {
    ctx_->make_current();
    ctx_->cu().cuModuleUnload(module_);
  }

  CUfunction function() const { return fn_; }
  bool global_id() const { return global_id_; }

  Status launch(std::span<const Handle> bufs, std::span<const int64_t> vals, const tg::sdk::LaunchDims& d,
                bool wait, double* seconds) noexcept override {
    return tg::sdk::guard([&]() -> Status {
      ctx_->make_current();
      const DriverApi& cu = ctx_->cu();
      std::vector<CUdeviceptr> ptrs(bufs.size());
      std::vector<long long> ints(vals.begin(), vals.end());
      std::vector<void*> args;
      for (size_t i = 0; i < bufs.size(); i++)
        ptrs[i] = reinterpret_cast<CUdeviceptr>(bufs[i]), args.push_back(&ptrs[i]);
      for (long long& v : ints) args.push_back(&v);
      if (uint64_t(d.global[0]) * d.global[1] * d.global[2] == 0) {
        if (wait && seconds != nullptr) *seconds = 0;
        return {};
      }
      CUevent start = nullptr, end = nullptr;
      if (wait) {
        cu.cuEventCreate(&start, CU_EVENT_DEFAULT), cu.cuEventCreate(&end, CU_EVENT_DEFAULT);
        cu.cuEventRecord(start, ctx_->stream());
      }
      Shape3 sh = launch_shape(d, global_id_);
      CUresult r = cu.cuLaunchKernel(fn_, sh.grid[0], sh.grid[1], sh.grid[2], sh.block[0], sh.block[1],
                                     sh.block[2], 0, ctx_->stream(), args.data(), nullptr);
      if (r != CUDA_SUCCESS) {
        if (start != nullptr) cu.cuEventDestroy_v2(start), cu.cuEventDestroy_v2(end);
        Code c = r == CUDA_ERROR_INVALID_VALUE || r == CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES
                     ? Code::invalid_argument
                     : Code::runtime_error;
        return {c,
                fmt::format("[CUDA launch] {} with grid ({},{},{}) block ({},{},{}): {}", name_, d.global[0],
                            d.global[1], d.global[2], d.local[0], d.local[1], d.local[2], error_name(r))};
      }
      if (!wait) return {};
      cu.cuEventRecord(end, ctx_->stream());
      r = cu.cuEventSynchronize(end);
      float ms = 0;
      if (r == CUDA_SUCCESS && seconds != nullptr)
        cu.cuEventElapsedTime_v2(&ms, start, end), *seconds = ms * 1e-3;
      cu.cuEventDestroy_v2(start), cu.cuEventDestroy_v2(end);
      return cu_status(r, fmt::format("running {}", name_));
    });
  }

 private:
  std::shared_ptr<Context> ctx_;
  CUmodule module_;
  CUfunction fn_;
  std::string name_;
  bool global_id_;
};

// A CUDA graph of kernel nodes in launch order (each depends on the one before), instantiated once; update()
// rewrites one node's arguments in the executable graph.
class CudaGraph final : public tg::sdk::LaunchGraph {
 public:
  CudaGraph(std::shared_ptr<Context> ctx, std::span<const tg::sdk::GraphLaunch> launches)
      : ctx_(std::move(ctx)) {
    const DriverApi& cu = ctx_->cu();
    ctx_->make_current();
    Context::throw_if(cu.cuGraphCreate(&graph_, 0), "cuGraphCreate");
    CUgraphNode prev = nullptr;
    for (const tg::sdk::GraphLaunch& l : launches) {
      auto* p = dynamic_cast<CudaProgram*>(l.program);
      if (p == nullptr) throw std::invalid_argument("a launch's program was not loaded by this CUDA device");
      Node& n = nodes_.emplace_back(Node{p->function(), p->global_id(), {}, {}, {}});
      set_args(n, l.bufs, l.vals);
      CUDA_KERNEL_NODE_PARAMS params = node_params(n, l.dims);
      CUgraphNode node = nullptr;
      Context::throw_if(
          cu.cuGraphAddKernelNode_v2(&node, graph_, prev ? &prev : nullptr, prev ? 1 : 0, &params),
          "cuGraphAddKernelNode");
      n.node = node, prev = node;
    }
    Context::throw_if(cu.cuGraphInstantiateWithFlags(&exec_, graph_, 0), "cuGraphInstantiate");
  }
  ~CudaGraph() override {
    ctx_->make_current();
    if (exec_ != nullptr) ctx_->cu().cuGraphExecDestroy(exec_);
    ctx_->cu().cuGraphDestroy(graph_);
  }

  Status update(size_t i, std::span<const Handle> bufs, std::span<const int64_t> vals,
                const tg::sdk::LaunchDims& dims) noexcept override {
    return tg::sdk::guard([&]() -> Status {
      if (i >= nodes_.size()) return {Code::invalid_argument, fmt::format("[CUDA graph] no launch {}", i)};
      Node& n = nodes_[i];
      if (bufs.size() != n.ptrs.size() || vals.size() != n.ints.size())
        return {Code::invalid_argument,
                fmt::format("[CUDA graph] launch {} was recorded with {} buffers and {} "
                            "values, not {} and {}",
                            i, n.ptrs.size(), n.ints.size(), bufs.size(), vals.size())};
      set_args(n, bufs, vals);
      CUDA_KERNEL_NODE_PARAMS params = node_params(n, dims);
      ctx_->make_current();
      return cu_status(ctx_->cu().cuGraphExecKernelNodeSetParams_v2(exec_, n.node, &params),
                       "updating a graph node");
    });
  }

  Status run(bool wait, double* seconds) noexcept override {
    ctx_->make_current();
    const DriverApi& cu = ctx_->cu();
    CUevent start = nullptr, end = nullptr;
    if (wait) cu.cuEventCreate(&start, CU_EVENT_DEFAULT), cu.cuEventCreate(&end, CU_EVENT_DEFAULT);
    if (wait) cu.cuEventRecord(start, ctx_->stream());
    CUresult r = cu.cuGraphLaunch(exec_, ctx_->stream());
    if (r == CUDA_SUCCESS && wait) {
      cu.cuEventRecord(end, ctx_->stream());
      r = cu.cuEventSynchronize(end);
      float ms = 0;
      if (r == CUDA_SUCCESS && seconds != nullptr)
        cu.cuEventElapsedTime_v2(&ms, start, end), *seconds = ms * 1e-3;
    }
    if (wait) cu.cuEventDestroy_v2(start), cu.cuEventDestroy_v2(end);
    return cu_status(r, "running a graph");
  }

 private:
  struct Node {
    CUfunction fn;
    bool global_id;
    std::vector<CUdeviceptr> ptrs;
    std::vector<long long> ints;
    std::vector<void*> args;  // pointers into ptrs and ints, as kernelParams wants
    CUgraphNode node = nullptr;
  };
  static void set_args(Node& n, std::span<const Handle> bufs, std::span<const int64_t> vals) {
    n.ptrs.assign(bufs.size(), 0);
    for (size_t k = 0; k < bufs.size(); k++) n.ptrs[k] = reinterpret_cast<CUdeviceptr>(bufs[k]);
    n.ints.assign(vals.begin(), vals.end());
    n.args.clear();
    for (CUdeviceptr& p : n.ptrs) n.args.push_back(&p);
    for (long long& v : n.ints) n.args.push_back(&v);
  }
  static CUDA_KERNEL_NODE_PARAMS node_params(Node& n, const tg::sdk::LaunchDims& d) {
    CUDA_KERNEL_NODE_PARAMS p{};
    p.func = n.fn;
    Shape3 sh = launch_shape(d, n.global_id);
    p.gridDimX = sh.grid[0], p.gridDimY = sh.grid[1], p.gridDimZ = sh.grid[2];
    p.blockDimX = sh.block[0], p.blockDimY = sh.block[1], p.blockDimZ = sh.block[2];
    p.kernelParams = n.args.data();
    return p;
  }

  std::shared_ptr<Context> ctx_;
  CUgraph graph_ = nullptr;
  CUgraphExec exec_ = nullptr;
  std::vector<Node> nodes_;
};

class CudaGraphs final : public tg::sdk::LaunchGraphs {
 public:
  explicit CudaGraphs(std::shared_ptr<Context> ctx) : ctx_(std::move(ctx)) {}
  Status build(std::span<const tg::sdk::GraphLaunch> launches, tg::sdk::LaunchGraph** out) noexcept override {
    return tg::sdk::guard([&]() -> Status {
      for (const tg::sdk::GraphLaunch& l : launches)
        if (uint64_t(l.dims.global[0]) * l.dims.global[1] * l.dims.global[2] == 0)
          return tg::sdk::unsupported("[CUDA graph] an empty launch");
      *out = new CudaGraph(ctx_, launches);
      return {};
    });
  }

 private:
  std::shared_ptr<Context> ctx_;
};

ArchLimits limits_of(const Context& c) {
  ArchLimits l;
  l.sm = c.attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR) * 10 +
         c.attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  l.max_threads = static_cast<uint32_t>(c.attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK));
  const CUdevice_attribute block[] = {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X,
                                      CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y,
                                      CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z},
                           grid[] = {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y,
                                     CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z};
  for (int i = 0; i < 3; i++)
    l.block_dims[i] = static_cast<uint32_t>(c.attribute(block[i])),
    l.grid_dims[i] = static_cast<uint32_t>(c.attribute(grid[i]));
  l.shared_bytes = static_cast<uint32_t>(c.attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK));
  return l;
}

// The archs a device of compute capability `sm` runs: every one NVRTC knows from sm_75 up to its own (the
// driver compiles older PTX for it; a cubin of the same major version runs as it is).
std::vector<int> runnable_archs(int sm) {
  std::string why;
  std::vector<int> out;
  for (int a : supported_archs(&why))
    if (a >= 75 && a <= sm) out.push_back(a);
  return out;
}

// The arch field of DEV (DEV=CUDA[:n]:cuda:sm_XX) when DEV names CUDA: code is compiled for that arch instead
// of the device's own, e.g. to run sm_80 code (no sm_90 features) on an H100. create() receives only the
// index, so the plugin reads DEV itself, with the core's parser; the field applies to every CUDA device of
// the process. `limits` are the device's; the result is what the renderer and compiler target.
ArchLimits arch_from_dev(ArchLimits limits) {
  std::string dev = env::get("DEV");
  if (dev.empty()) return limits;
  tg::runtime::DeviceSpec spec = tg::runtime::DeviceSpec::parse(dev);
  if (spec.name != "CUDA" || (spec.renderer.empty() && spec.arch.empty())) return limits;
  if (spec.renderer != "cuda")
    throw std::runtime_error(
        fmt::format("[CUDA] unknown renderer '{}' in DEV={}: CUDA renders 'cuda' (CUDA C through NVRTC)",
                    spec.renderer, dev));
  if (spec.arch.empty()) return limits;
  std::optional<int> sm = parse_arch(spec.arch);
  std::vector<int> ok = runnable_archs(limits.sm);
  if (!sm || std::find(ok.begin(), ok.end(), *sm) == ok.end())
    throw std::runtime_error(fmt::format(
        "[CUDA] DEV={}: this sm_{} device runs {}; '{}' is {}", dev, limits.sm,
        ok.empty() ? std::string("no arch NVRTC knows") : fmt::format("sm_{}", fmt::join(ok, ", sm_")),
        spec.arch,
        !sm ? "not a CUDA arch (sm_80, sm_90, ...)"
            : (*sm > limits.sm ? "newer than the device" : "older than sm_75 or unknown to NVRTC")));
  limits.sm = *sm;
  return limits;
}

// A target with no device: the renderer and compiler of sm_XX, host memory so tensors can be built, and no
// way to load a program.
class CudaTarget final : public tg::sdk::Device {
 public:
  explicit CudaTarget(int sm) : compiler_(sm), renderer_(cuda_caps(ArchLimits{.sm = sm})) {
    description_ = fmt::format("compile-only sm_{} ({})", sm, compiler_.cache_key());
  }
  tg::sdk::Allocator& allocator() noexcept override { return memory_; }
  tg::sdk::Renderer& renderer() noexcept override { return renderer_; }
  tg::sdk::Compiler& compiler() noexcept override { return compiler_; }
  std::string_view description() const noexcept override { return description_; }
  Status synchronize() noexcept override { return {}; }
  Status load(std::string_view name, std::span<const std::byte>, tg::sdk::Program**) noexcept override {
    return tg::sdk::unavailable(
        fmt::format("[CUDA load] {}: compile-only sm_{} target, no GPU to run on", name, compiler_.sm()));
  }

 private:
  tg::sdk::HostMemory memory_;
  CudaCompiler compiler_;
  CudaRenderer renderer_;
  std::string description_;
};

class CudaDevice final : public tg::sdk::Device {
 public:
  static constexpr int32_t priority = 100;  // a GPU: the default where one is present
  static constexpr const char* version = TG_PLUGIN_VERSION;

  static Status probe() {
    if (std::string why = driver_unusable(); !why.empty()) return tg::sdk::unavailable(why);
    std::string why;
    if (nvrtc_api(&why) == nullptr) return tg::sdk::unavailable("unavailable: " + why);
    return {};
  }

  // sm_XX for every arch NVRTC supports from sm_75 on (tensor cores from sm_80).
  static std::string compile_targets() {
    std::string why, out;
    for (int sm : supported_archs(&why))
      if (sm >= 75) out += fmt::format("{}sm_{}", out.empty() ? "" : " ", sm);
    return out;
  }
  static tg::sdk::Device* compile_only(std::string_view arch) {
    std::optional<int> sm = parse_arch(arch);
    if (!sm) throw std::runtime_error(fmt::format("'{}' is not a CUDA arch (sm_80, sm_90, ...)", arch));
    if (*sm < 75)
      throw std::runtime_error(fmt::format("sm_{} is older than the oldest supported arch, sm_75", *sm));
    return new CudaTarget(*sm);
  }

  explicit CudaDevice(int32_t index)
      : ctx_(std::make_shared<Context>(index)),
        limits_(limits_of(*ctx_)),
        target_(arch_from_dev(limits_)),
        allocator_(ctx_),
        compiler_(target_.sm),
        renderer_(cuda_caps(target_)),
        graphs_(ctx_) {
    for (int a : runnable_archs(limits_.sm)) archs_ += fmt::format("{}sm_{}", archs_.empty() ? "" : " ", a);
    fields_ = {.renderers = "cuda", .archs = archs_.c_str()};
    char name[256] = {};
    ctx_->cu().cuDeviceGetName(name, sizeof name, ctx_->device());
    int driver = 0;
    ctx_->cu().cuDriverGetVersion(&driver);
    size_t mem = 0;
    ctx_->cu().cuDeviceTotalMem_v2(&mem, ctx_->device());
    description_ =
        fmt::format("{} (sm_{}, {} GiB), driver CUDA {}.{}, {}{}", name, limits_.sm, mem >> 30, driver / 1000,
                    driver % 1000 / 10, compiler_.cache_key(),
                    target_.sm != limits_.sm ? fmt::format(", compiling for sm_{}", target_.sm) : "");
  }

  tg::sdk::Allocator& allocator() noexcept override { return allocator_; }
  tg::sdk::Renderer& renderer() noexcept override { return renderer_; }
  tg::sdk::Compiler& compiler() noexcept override { return compiler_; }
  std::string_view description() const noexcept override { return description_; }
  const void* extension(uint32_t id) noexcept override {
    if (id == tg::sdk::kSpecFieldsExtension) return &fields_;
    return id == tg::sdk::kLaunchGraphExtension ? static_cast<const tg::sdk::LaunchGraphs*>(&graphs_)
                                                : nullptr;
  }

  Status synchronize() noexcept override {
    ctx_->make_current();
    return cu_status(ctx_->cu().cuStreamSynchronize(ctx_->stream()), "synchronize");
  }

  Status load(std::string_view name, std::span<const std::byte> binary,
              tg::sdk::Program** out) noexcept override {
    return tg::sdk::guard([&]() -> Status {
      auto bin = cuda_binary(binary);
      if (!bin) return {Code::invalid_argument, "[CUDA load] not a binary made by the CUDA compiler"};
      ctx_->make_current();
      const DriverApi& cu = ctx_->cu();
      CUmodule module = nullptr;
      CUresult r = cu.cuModuleLoadData(&module, bin->cubin.data());
      if (r != CUDA_SUCCESS) {  // a cubin this driver refuses: let it compile the PTX instead
        std::string ptx(bin->ptx);
        CUresult r2 = cu.cuModuleLoadData(&module, ptx.c_str());
        if (r2 != CUDA_SUCCESS) {
          std::string hint =
              r2 == CUDA_ERROR_UNSUPPORTED_PTX_VERSION ? ": the driver is older than the PTX; update it" : "";
          return {Code::invalid_argument,
                  fmt::format("[CUDA load] {}: cubin refused ({}), PTX refused ({}){}", name, error_name(r),
                              error_name(r2), hint)};
        }
      }
      CUfunction fn = nullptr;
      std::string kname(name);
      if (CUresult e = cu.cuModuleGetFunction(&fn, module, kname.c_str()); e != CUDA_SUCCESS) {
        cu.cuModuleUnload(module);
        return {Code::invalid_argument,
                fmt::format("[CUDA load] no kernel '{}' in the module: {}", kname, error_name(e))};
      }
      *out = new CudaProgram(ctx_, module, fn, kname, bin->global_id);
      return {};
    });
  }

 private:
  std::shared_ptr<Context> ctx_;
  ArchLimits limits_;  // the device's
  ArchLimits target_;  // what code is compiled for: the device's, or DEV's arch field
  std::string archs_;
  tg::sdk::SpecFields fields_;
  CudaAllocator allocator_;
  CudaCompiler compiler_;
  CudaRenderer renderer_;
  CudaGraphs graphs_;
  std::string description_;
};

}  // namespace

}  // namespace tg::cuda

TG_PLUGIN(CUDA, tg::cuda::CudaDevice)
