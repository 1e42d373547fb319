// Running tensor graphs behind the tensor/realize.hpp boundary: buffers live in device memory
// (runtime::Buffer), graphs run as scheduled kernels (schedule -> codegen -> the device's renderer, compiler
// and program), each kernel lowered and compiled once per process and launched in schedule order.
#include "tensor/realize.hpp"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <thread>
#include <typeinfo>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include <dlfcn.h>
#include <fmt/format.h>

#include "base/env.hpp"
#include "base/error.hpp"
#include "base/hash.hpp"
#include "base/log.hpp"
#include "codegen/estimate.hpp"
#include "codegen/lower.hpp"
#include "engine/eval_host.hpp"
#include "runtime/beam.hpp"
#include "runtime/buffer.hpp"
#include "runtime/check.hpp"
#include "runtime/disk_cache.hpp"
#include "runtime/lowered_cache.hpp"
#include "runtime/registry.hpp"
#include "runtime/stats.hpp"
#include "schedule/schedule.hpp"

namespace tg::engine {

namespace {

struct DeviceStorage;

// Live storages by UNIQUE id; ids are never reused, so a stale id cannot find a newer buffer.
class StorageTable {
 public:
  void add(int64_t id, const std::shared_ptr<DeviceStorage>& b) {
    std::lock_guard lock(mu_);
    live_[id] = b;
  }
  void remove(int64_t id) {
    std::lock_guard lock(mu_);
    live_.erase(id);
  }
  std::shared_ptr<DeviceStorage> find(int64_t id) {
    std::lock_guard lock(mu_);
    auto it = live_.find(id);
    return it == live_.end() ? nullptr : it->second.lock();
  }

 private:
  std::mutex mu_;
  std::unordered_map<int64_t, std::weak_ptr<DeviceStorage>> live_;
};

StorageTable& table() {
  static StorageTable* t = new StorageTable();  // never destroyed: holds may outlive static destruction
  return *t;
}

struct DeviceStorage {
  int64_t id = 0;
  DType dtype;
  std::shared_ptr<runtime::Buffer> buf;
  // Memory others see: caller memory given read-only, or bytes a host view shows (the view's hold keeps
  // buf). A kernel or copy that writes the storage first moves it to a private copy (make_writable).
  bool read_only = false;
  std::weak_ptr<const void> viewed;
  // Caller memory a device cannot use in place: copied into buf at first use (filled), owner kept until then.
  const std::byte* fill_from = nullptr;
  std::shared_ptr<const void> fill_owner;
  std::once_flag fill_once;
  ~DeviceStorage() { table().remove(id); }
};

std::shared_ptr<DeviceStorage> filled(std::shared_ptr<DeviceStorage> b) {
  if (b->fill_from != nullptr)
    std::call_once(b->fill_once, [&] {
      b->buf->copyin(std::span(b->fill_from, b->buf->nbytes()));
      b->fill_owner.reset();
    });
  return b;
}

// A host view's hold: the memory it shows, counted so that replays check for views only while there are some.
std::atomic<int64_t> live_views{0};
std::atomic<uint64_t> moves{0};  // storages make_writable moved to new memory
struct ViewHold {
  std::shared_ptr<runtime::Buffer> buf;
  explicit ViewHold(std::shared_ptr<runtime::Buffer> b) : buf(std::move(b)) { live_views++; }
  ~ViewHold() { live_views--; }
  ViewHold(const ViewHold&) = delete;
  ViewHold& operator=(const ViewHold&) = delete;
};

// Before a kernel or copy writes s: memory others see stays as it is, and s moves to a copy of it.
void make_writable(DeviceStorage& s) {
  if (!s.read_only && s.viewed.expired()) return;
  auto fresh = std::make_shared<runtime::Buffer>(s.buf->device(), s.buf->nbytes());
  if (const std::byte* p = s.buf->host_address()) {
    fresh->copyin(std::span(p, s.buf->nbytes()));
  } else {
    std::vector<std::byte> bytes(s.buf->nbytes());
    s.buf->copyout(bytes);
    fresh->copyin(bytes);
  }
  s.buf = std::move(fresh);
  moves++;
  s.read_only = false;
  s.viewed.reset();
}

// The storages a realize holds while it runs, by buffer id.
using Keep = std::unordered_map<int64_t, std::shared_ptr<DeviceStorage>>;

// The JIT's recorder on this thread, if a capture is active (CaptureScope).
thread_local CaptureLog* active_capture = nullptr;

// Where a realize's time went, for its DEBUG=1 line (this thread's current realize).
struct RealizeTimes {
  double schedule = 0, lower = 0, compile = 0, run = 0;
};
thread_local RealizeTimes realize_times;

int64_t buffer_id(const UOp& buffer) { return buffer.src(0)->arg_as<int64_t>(); }
std::string buffer_device(const UOp& buffer) { return buffer.src(1)->arg_as<std::string>(); }

// Storage for a BUFFER UOp made by the scheduler (or anyone): created on first use.
std::shared_ptr<DeviceStorage> storage_for(const UOp& buffer) {
  if (buffer.op() != Ops::BUFFER)
    throw ValueError("realize", fmt::format("{} is not a BUFFER", op_name(buffer.op())));
  int64_t id = buffer_id(buffer);
  if (auto b = table().find(id)) return filled(std::move(b));
  auto b = std::make_shared<DeviceStorage>();
  b->id = id, b->dtype = buffer.dtype();
  size_t nbytes = static_cast<size_t>(buffer.arg_as<int64_t>()) * buffer.dtype().itemsize();
  b->buf = std::make_shared<runtime::Buffer>(tg::runtime::device(buffer_device(buffer)), nbytes);
  table().add(id, b);
  return b;
}

std::shared_ptr<DeviceStorage> storage_of(const UOp& buffer) {
  if (buffer.op() != Ops::BUFFER)
    throw ValueError("realize", fmt::format("{} is not a BUFFER", op_name(buffer.op())));
  std::shared_ptr<DeviceStorage> b = table().find(buffer_id(buffer));
  if (!b)
    throw ValueError("realize", fmt::format("buffer {} was freed (no tensor holds it)", buffer_id(buffer)));
  return filled(std::move(b));
}

RealizedBuffer make_buffer(std::string_view device, DType dtype, int64_t numel,
                           std::span<const std::byte> data) {
  UOpRef buf =
      tg::sched::new_buffer(UOp::make(Ops::DEVICE, dtypes::void_, {}, std::string(device)), numel, dtype);
  std::shared_ptr<DeviceStorage> b = storage_for(*buf);
  if (!data.empty()) b->buf->copyin(data);
  return {buf, b};
}

// The device a tensor-graph node computes on: follow the first source down to a DEVICE.
std::string device_of(const UOp& u) {
  const UOp* n = &u;
  while (true) {
    for (const UOpRef& s : n->src())
      if (s->op() == Ops::DEVICE) return s->arg_as<std::string>();
    if (n->src().empty()) return default_device_name();
    n = n->src(0).get();
  }
}

// The BUFFER a root already is, when it is the whole buffer in row-major order.
const UOp* whole_buffer(const UOp& u) {
  const UOp* b = &u;
  if (b->op() == Ops::ASSIGN) b = b->src(0).get();
  while (b->op() == Ops::RESHAPE) b = b->src(0).get();
  // a symbolic tensor's buffer_view: the prefix of a buffer sized for the variables' largest values
  if (b->op() == Ops::SHRINK) {
    const auto& [begin, end] = b->arg_as<ShapePairs>()[0];
    if (begin == 0 && !end.is_number()) b = b->src(0).get();
  }
  return b->op() == Ops::BUFFER ? b : nullptr;
}

// A root already held whole in a buffer needs no kernel (an ASSIGN still has to run).
bool already_realized(const UOp& r) { return whole_buffer(r) != nullptr && r.op() != Ops::ASSIGN; }

// What the scheduler realizes for these roots: each computed root through CONTIGUOUS, so its buffer
// is row-major.
std::vector<UOpRef> realize_targets(std::span<const UOpRef> roots) {
  std::vector<UOpRef> targets;
  for (const UOpRef& r : roots) {
    if (already_realized(*r)) continue;
    // An ASSIGN to part of a buffer (a shrunk view) is read back by a copy kernel, not on the host. A
    // reshape of a CONTIGUOUS is already row-major: its buffer is reshaped, not copied (a conv's output,
    // (N, Cout, L) from its matmul viewed as (N, Cout, H, W), was copied whole).
    const UOp* base = r.get();
    while (base->op() == Ops::RESHAPE) base = base->src(0).get();
    bool keep_as_is = base->op() == Ops::CONTIGUOUS || (r->op() == Ops::ASSIGN && whole_buffer(*r));
    targets.push_back(keep_as_is ? r : UOp::make(Ops::CONTIGUOUS, r->dtype(), {r}));
  }
  return targets;
}

// What the schedule made of a target. A target kept as a reshape of a CONTIGUOUS is not a key of the map
// (the scheduler keys a root by its base): it is its base's value, reshaped.
UOpRef value_of(const sched::BecomesMap& becomes, const UOpRef& target) {
  if (auto it = becomes.find(target); it != becomes.end()) return it->second;
  const UOp* base = target.get();
  while (base->op() == Ops::RESHAPE) base = base->src(0).get();
  if (base == target.get()) return nullptr;
  auto it = becomes.find(base->ref());
  return it == becomes.end() ? nullptr : target->substitute({{base, it->second}});
}

// Kernels by (device, AST): lowered, rendered and compiled (or read from the disk cache) once per process.
// Interned ASTs make the pointer the identity; the entry holds the AST so the pointer cannot be reused.
struct CompiledKernel {
  UOpRef ast;
  std::optional<codegen::LinearProgram> prog;  // empty when the lowered kernel came from the disk cache
  runtime::LoweredKernel lowered;              // what the launch needs: name, arguments, static launch sizes
  bool static_dims = true;  // false: sizes depend on variables, prog computes them per launch
  std::shared_ptr<sdk::Program> program;
  // Where building it went, for the DEBUG=2 line of its first launch (printed there, so in order).
  double lower_seconds = 0, compile_seconds = 0;
  bool binary_from_disk = false;
  mutable std::atomic<bool> build_reported{false};
};
struct KernelCache {
  std::mutex mu;
  std::unordered_map<std::string, std::shared_ptr<const CompiledKernel>> kernels;
};
KernelCache& kernel_cache() {
  static KernelCache* c = new KernelCache();  // never destroyed: programs may outlive static destruction
  return *c;
}

// What BEAM times a kernel with: its buffers' sizes and the variable values of this realize.
runtime::BeamInputs beam_inputs(const sched::ScheduleItem& si, const sched::VarVals& var_vals) {
  runtime::BeamInputs in;
  for (const UOpRef& b : si.bufs) {
    auto item = static_cast<int64_t>(b->dtype().itemsize());
    in.buf_nbytes.push_back(b->op() == Ops::BUFFER ? b->arg_as<int64_t>() * item : 0);
  }
  for (const auto& [v, val] : var_vals) in.var_vals.emplace_back(v->arg_as<VarArg>().name, val);
  return in;
}

// Size and modification time of the file holding addr's code: a new build of the library (or of the
// plugin behind a renderer) changes it, so lowered kernels of an older build are not reused.
std::string code_stamp(const void* addr) {
  Dl_info info{};
  if (dladdr(addr, &info) == 0 || info.dli_fname == nullptr) return "?";
  std::error_code ec;
  auto size = std::filesystem::file_size(info.dli_fname, ec);
  auto time = std::filesystem::last_write_time(info.dli_fname, ec);
  if (ec) return info.dli_fname;
  return fmt::format("{}:{}:{}", info.dli_fname, size, time.time_since_epoch().count());
}

// The content key of a lowered kernel: the AST's structure (never its address), the device with its
// renderer, the compiler key, the code that lowers and renders, and the options that change the output.
std::string lowered_key(runtime::Device& dev, const UOpRef& ast,
                        const std::optional<std::vector<codegen::Opt>>& opts) {
  static const std::string lib = code_stamp(reinterpret_cast<const void*>(&lowered_key));
  // The renderer's type information lives in the binary that implements it.
  const sdk::Renderer& renderer = dev.renderer();
  const void* renderer_code = typeid(renderer).name();
  std::string text = fmt::format("{}|{}|{}|{}|NOOPT={}|BEAM={}|opts=", dev.str(), dev.compiler().cache_key(),
                                 lib, code_stamp(renderer_code), env::NOOPT.value(), runtime::beam_width());
  if (opts)
    for (const codegen::Opt& o : *opts) text += o.str() + ",";
  const sdk::RendererCaps& c = dev.caps();  // what the heuristic and the decompositions read
  text += fmt::format("|caps={} {} {} {} {} {} {}{}{} {},{},{} {},{},{} {} {} {} {} {} {} {}\n", c.dtypes,
                      c.native_ops[0], c.native_ops[1], c.native_ops[2], c.native_ops[3], c.max_vector_width,
                      int{c.has_local}, int{c.has_shared}, int{c.has_threads}, c.global_max[0],
                      c.global_max[1], c.global_max[2], c.local_max[0], c.local_max[1], c.local_max[2],
                      c.max_local_size, c.max_shared_bytes, c.max_buffers, c.max_int_args, c.thread_count,
                      int{c.supports_float_ints},
                      std::string_view(c.dialect, strnlen(c.dialect, sizeof(c.dialect))));
  std::unordered_map<const UOp*, size_t> index;
  for (const UOp* u : ast->toposort()) {
    text +=
        fmt::format("{} {} {}:{} [", op_name(u->op()), u->dtype().str(), u->arg().index(), arg_str(u->arg()));
    for (const UOpRef& src : u->src()) text += fmt::format("{},", index.at(src.get()));
    text += "]\n";
    index.emplace(u, index.size());
  }
  return hash_hex(text);
}

bool dims_are_static(const codegen::LinearProgram& prog) {
  for (int i = 0; i < 3; i++)
    if (!prog.global_size[i]->is_const() || !prog.local_size[i]->is_const()) return false;
  return true;
}

// AST -> lowered kernel: from the disk cache when this exact kernel was lowered before (any process),
// else through codegen and the renderer (then stored). DEBUG>=2 always lowers, so its per-launch rates,
// applied opts (3) and linear uops (6) are there.
void lower(runtime::Device& dev, const sched::ScheduleItem& si, const sched::VarVals& var_vals,
           CompiledKernel& k) {
  const UOpRef& ast = si.ast;
  // BEAM's own disk cache makes a repeated search cheap, but the key needs its result: search first.
  codegen::LowerOptions options;
  if (int width = runtime::beam_width(); width > 0 && env::NOOPT == 0)
    options.opts = runtime::beam_search(dev, ast, width, beam_inputs(si, var_vals));
  std::string key = lowered_key(dev, ast, options.opts);
  std::optional<runtime::LoweredKernel> hit;
  if (env::DEBUG < 2) hit = runtime::load_lowered(key);
  if (hit) {
    runtime::count_stat(runtime::Stat::lowered_disk_hits);
    k.lowered = std::move(*hit);
    return;
  }
  // DEBUG: 3 applied opts and 6 linear uops come from lower_kernel, 5 the AST from the scheduler.
  k.prog = codegen::lower_kernel(ast, dev.caps(), options);
  runtime::count_stat(runtime::Stat::lowered);
  const std::vector<const UOp*> view = k.prog->view();
  sdk::Blob source;
  {
    // Renderers promise nothing about threads; kernels may be lowered on several (AheadBuilder).
    static std::mutex render_mu;
    std::lock_guard lock(render_mu);
    runtime::check(dev.renderer().render(k.prog->name, view, source), "render", k.prog->name);
  }
  debug_log(4, "{}", source.text());
  k.lowered.name = k.prog->name;
  k.lowered.source = std::string(source.text());
  for (const codegen::BufferArg& a : k.prog->bufs) k.lowered.bufs.push_back({a.index, a.written});
  for (const UOpRef& v : k.prog->vars) k.lowered.vars.push_back(v->arg_as<VarArg>().name);
  k.static_dims = dims_are_static(*k.prog);
  if (!k.static_dims) return;  // sizes over variables need the program: lowered again by each process
  k.lowered.dims = k.prog->launch_dims(std::vector<int64_t>(k.prog->vars.size(), 0));
  runtime::store_lowered(key, k.lowered);
}

std::string memory_key(runtime::Device& dev, const UOpRef& ast) {
  return fmt::format("{}|{}", dev.str(), static_cast<const void*>(ast.get()));
}

// A kernel lowered and compiled (or read from the disk caches) but not yet loaded: safe on any thread.
struct BuiltKernel {
  std::shared_ptr<CompiledKernel> kernel;
  sdk::Blob binary;
  bool from_disk = false;
};

BuiltKernel build_kernel(runtime::Device& dev, const sched::ScheduleItem& si,
                         const sched::VarVals& var_vals) {
  BuiltKernel b;
  b.kernel = std::make_shared<CompiledKernel>();
  b.kernel->ast = si.ast;
  Timer t;
  lower(dev, si, var_vals, *b.kernel);
  b.kernel->lower_seconds = t.seconds();
  realize_times.lower += b.kernel->lower_seconds;
  t.reset();
  b.binary = runtime::compile_cached(dev, b.kernel->lowered.source, &b.from_disk);
  b.kernel->compile_seconds = t.seconds();
  b.kernel->binary_from_disk = b.from_disk;
  realize_times.compile += b.kernel->compile_seconds;
  return b;
}

// Loads a built kernel on the realizing thread and keeps it for the process.
std::shared_ptr<const CompiledKernel> load_kernel(runtime::Device& dev, BuiltKernel b) {
  Timer t;
  CompiledKernel& k = *b.kernel;
  try {
    k.program = dev.load(k.lowered.name, b.binary.bytes());
  } catch (const Error& e) {
    if (!b.from_disk) throw;
    // A cached binary this device cannot load (written by an older plugin): compile it again.
    debug_log(1, "warning: {}; compiling {} again", e.what(), k.lowered.name);
    b.binary = runtime::compile_and_store(dev, k.lowered.source);
    k.program = dev.load(k.lowered.name, b.binary.bytes());
  }
  realize_times.compile += t.seconds();
  KernelCache& cache = kernel_cache();
  std::lock_guard lock(cache.mu);
  return cache.kernels.emplace(memory_key(dev, k.ast), std::move(b.kernel)).first->second;
}

std::shared_ptr<const CompiledKernel> compile_kernel(runtime::Device& dev, const sched::ScheduleItem& si,
                                                     const sched::VarVals& var_vals) {
  KernelCache& cache = kernel_cache();
  {
    std::lock_guard lock(cache.mu);
    if (auto it = cache.kernels.find(memory_key(dev, si.ast)); it != cache.kernels.end()) {
      runtime::count_stat(runtime::Stat::memory_hits);
      return it->second;
    }
  }
  return load_kernel(dev, build_kernel(dev, si, var_vals));
}

// Cold caches: the schedule's new kernels are lowered and compiled on helper threads (one a core less the
// realizing thread, at least one; TG_BUILD_THREADS counts both) and the realizing one, claimed in first-use
// order, while the kernels already built run: take(i) waits for item i's kernel
// and builds later ones meanwhile. It gives null for kernels left to run_kernel: those already loaded,
// repeats of an earlier kernel (run_kernel counts them as memory hits) and any whose build failed
// (run_kernel builds it again and reports the error in order). Off under BEAM (its timings need the
// machine) or DEBUG>=3 (per-kernel output stays in schedule order).
class AheadBuilder {
 public:
  AheadBuilder(std::span<const sched::ScheduleItem> items, const sched::VarVals& var_vals)
      : items_(items), var_vals_(var_vals), slot_(items.size(), -1) {
    if (runtime::beam_width() > 0 || env::DEBUG >= 3) return;
    {
      KernelCache& cache = kernel_cache();
      std::lock_guard lock(cache.mu);
      std::unordered_map<std::string, bool> seen;
      for (size_t i = 0; i < items.size(); i++) {
        if (items[i].is_copy()) continue;
        runtime::Device& dev =
            tg::runtime::device(buffer_device(*items[i].bufs.at(0)));  // the registry is this thread's
        std::string key = memory_key(dev, items[i].ast);
        if (!cache.kernels.contains(key) && seen.emplace(key, true).second) {
          slot_[i] = static_cast<int>(todo_.size());
          todo_.push_back(i), devs_.push_back(&dev);
        }
      }
    }
    if (todo_.size() < 2) {
      std::fill(slot_.begin(), slot_.end(), -1);
      todo_.clear();
      return;
    }
    built_.resize(todo_.size());
    done_ = std::make_unique<std::atomic<bool>[]>(todo_.size());
    int threads = env::BUILD_THREADS > 0
                      ? env::BUILD_THREADS.value()
                      : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    size_t helpers = std::clamp<size_t>(static_cast<size_t>(std::max(threads - 1, 1)), 1, todo_.size() - 1);
    for (size_t h = 0; h < helpers; h++)
      helpers_.emplace_back([this] {
        while (build_next()) {
        }
        std::lock_guard lock(mu_);
        helper_times_.lower += realize_times.lower, helper_times_.compile += realize_times.compile;
      });
  }
  ~AheadBuilder() {
    next_.store(todo_.size());  // nothing more to claim: each helper ends after the build it is in
    for (std::thread& t : helpers_) t.join();
    realize_times.lower += helper_times_.lower, realize_times.compile += helper_times_.compile;
  }
  AheadBuilder(const AheadBuilder&) = delete;
  AheadBuilder& operator=(const AheadBuilder&) = delete;

  std::shared_ptr<const CompiledKernel> take(size_t item) {
    if (slot_[item] < 0) return nullptr;
    auto j = static_cast<size_t>(slot_[item]);
    while (!done_[j].load(std::memory_order_acquire)) {
      if (build_next()) continue;  // claimed one, item's own or a later one
      std::unique_lock lock(mu_);
      ready_.wait(lock, [&] { return done_[j].load(std::memory_order_acquire); });
    }
    if (!built_[j]) return nullptr;
    return load_kernel(*devs_[j], std::move(*built_[j]));
  }

 private:
  bool build_next() {
    size_t j = next_.fetch_add(1);
    if (j >= todo_.size()) return false;
    try {
      built_[j] = build_kernel(*devs_[j], items_[todo_[j]], var_vals_);
    } catch (...) {  // built again by run_kernel, which reports it in schedule order
    }
    {
      std::lock_guard lock(mu_);
      done_[j].store(true, std::memory_order_release);
    }
    ready_.notify_all();
    return true;
  }

  std::span<const sched::ScheduleItem> items_;
  const sched::VarVals& var_vals_;
  std::vector<int> slot_;  // item -> its index in todo_, -1 when left to run_kernel
  std::vector<size_t> todo_;
  std::vector<runtime::Device*> devs_;
  std::vector<std::optional<BuiltKernel>> built_;
  std::unique_ptr<std::atomic<bool>[]> done_;
  std::atomic<size_t> next_{0};
  std::mutex mu_;
  std::condition_variable ready_;
  std::vector<std::thread> helpers_;
  RealizeTimes helper_times_;  // summed over the helpers
};

// A kernel read from the lowered-kernel cache has no program to estimate from: its line has no rates.
void log_launch(runtime::Device& dev, const CompiledKernel& k, const sdk::LaunchDims& d,
                std::span<const int64_t> vals, std::span<const int64_t> nbytes, double seconds) {
  std::string line =
      fmt::format("{:<6} {:<20} g[{},{},{}] l[{},{},{}] {:>10.2f} us", dev.name(), k.lowered.name,
                  d.global[0], d.global[1], d.global[2], d.local[0], d.local[1], d.local[2], seconds * 1e6);
  if (k.prog) {
    codegen::Estimate e = estimate(*k.prog, vals, nbytes);
    double s = std::max(seconds, 1e-9);
    line += fmt::format(" {:>9.3f} GFLOPS {:>8.3f} GB/s", static_cast<double>(e.ops) / s * 1e-9,
                        static_cast<double>(e.bytes) / s * 1e-9);
  }
  if (!k.build_reported.exchange(true))
    line += fmt::format("  (lowered {:.1f} ms, {} {:.1f} ms)", k.lower_seconds * 1e3,
                        k.binary_from_disk ? "binary from disk" : "compiled", k.compile_seconds * 1e3);
  debug_log(2, "{}", line);
}

void run_kernel(const sched::ScheduleItem& si, const sched::VarVals& var_vals, Keep& keep,
                std::shared_ptr<const CompiledKernel> k) {
  runtime::Device& dev = tg::runtime::device(buffer_device(*si.bufs.at(0)));
  if (!k) k = compile_kernel(dev, si, var_vals);
  const runtime::LoweredKernel& prog = k->lowered;
  std::vector<sdk::Handle> handles;
  std::vector<int64_t> nbytes;
  CapturedLaunch* rec = active_capture ? &active_capture->launches.emplace_back() : nullptr;
  if (rec) rec->name = prog.name, rec->program = k->program;
  for (const runtime::LoweredKernel::Buf& a : prog.bufs) {
    std::shared_ptr<DeviceStorage> s = storage_for(*si.bufs.at(static_cast<size_t>(a.index)));
    if (a.written) make_writable(*s);
    handles.push_back(s->buf->handle());
    nbytes.push_back(static_cast<int64_t>(s->buf->nbytes()));
    if (rec) {
      rec->buffer_ids.push_back(s->id), rec->buffers.push_back(s->buf), rec->holds.push_back(s);
      rec->written.push_back(a.written);
    }
    keep.emplace(s->id, std::move(s));
  }
  std::vector<int64_t> vals;
  for (const std::string& name : prog.vars) {
    auto it = std::find_if(var_vals.begin(), var_vals.end(),
                           [&](const auto& kv) { return kv.first->template arg_as<VarArg>().name == name; });
    if (it == var_vals.end()) throw ValueError("realize", fmt::format("variable {} has no value", name));
    vals.push_back(it->second);
  }
  double seconds = 0;
  sdk::LaunchDims dims = k->static_dims ? prog.dims : k->prog->launch_dims(vals);
  if (rec) {
    rec->vars = prog.vars, rec->vals = vals, rec->dims = dims;
    if (!k->static_dims) rec->dims_at = [k](std::span<const int64_t> v) { return k->prog->launch_dims(v); };
  }
  Timer t;
  runtime::check(k->program->launch(handles, vals, dims, true, &seconds), "launch", prog.name);
  realize_times.run += t.seconds();
  runtime::count_stat(runtime::Stat::launched);
  if (env::DEBUG >= 2) log_launch(dev, *k, dims, vals, nbytes, seconds);
}

void run_copy(const sched::ScheduleItem& si, Keep& keep) {
  std::shared_ptr<DeviceStorage> dst = storage_for(*si.bufs.at(0)), src = storage_of(*si.bufs.at(1));
  make_writable(*dst);
  // The source may be a longer buffer whose prefix is the value (a contiguous view of its first elements,
  // kept as a view): the copy moves what the destination holds.
  std::vector<std::byte> bytes(std::min(src->buf->nbytes(), dst->buf->nbytes()));
  src->buf->copyout(bytes);
  dst->buf->copyin(bytes);
  if (active_capture) {
    CapturedLaunch& rec = active_capture->launches.emplace_back();
    rec.name = fmt::format("copy_{}", bytes.size());
    rec.buffer_ids = {dst->id, src->id}, rec.buffers = {dst->buf, src->buf}, rec.holds = {dst, src};
    rec.written = {true, false};
  }
  keep.emplace(dst->id, dst), keep.emplace(src->id, src);
}

// A new buffer holding a copy of src's elements.
RealizedBuffer copy_of(const UOpRef& src, Keep& keep) {
  RealizedBuffer dst = make_buffer(buffer_device(*src), src->dtype(), src->arg_as<int64_t>(), {});
  run_copy({UOp::make(Ops::COPY, src->dtype(), {src, src->src(1)}), {dst.buffer, src}}, keep);
  return dst;
}

}  // namespace

std::ostream& operator<<(std::ostream& os, const ScheduleItemView& si) {
  return os << sched::ScheduleItem{si.ast, si.bufs}.str();
}

std::string canonical_device(std::string_view spec) {
  if (size_t comma = spec.find(','); comma != std::string_view::npos)  // several devices, one tensor
    return canonical_device(spec.substr(0, comma)) + "," + canonical_device(spec.substr(comma + 1));
  std::string s(spec);
  size_t colon = s.find(':');
  std::string name = s.substr(0, colon), rest = colon == std::string::npos ? "" : s.substr(colon);
  if (name.empty() || rest == ":" || rest.find("::") != std::string::npos)
    throw DeviceError("device",
                      fmt::format("malformed device '{}': expected NAME[:index][:renderer[:arch]]", spec));
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  if (rest == ":0") rest.clear();
  return name + rest;
}

std::string default_device_name() {
  runtime::Device& d = tg::runtime::default_device();
  return d.index() == 0 ? d.name() : d.str();
}

RealizedBuffer buffer_from_host(std::string_view device, DType dtype, std::span<const std::byte> data) {
  if (data.size() % dtype.itemsize() != 0)
    throw ValueError("buffer",
                     fmt::format("{} bytes is not a whole number of {}", data.size(), dtype.name()));
  return make_buffer(device, dtype, static_cast<int64_t>(data.size() / dtype.itemsize()), data);
}

RealizedBuffer buffer_empty(std::string_view device, DType dtype, int64_t numel) {
  if (numel < 0) throw ValueError("buffer", fmt::format("negative element count {}", numel));
  return make_buffer(device, dtype, numel, {});
}

RealizedBuffer buffer_over_host(std::string_view device, DType dtype, int64_t numel, void* data,
                                std::shared_ptr<const void> owner, bool read_only) {
  if (numel < 0) throw ValueError("buffer", fmt::format("negative element count {}", numel));
  UOpRef buf =
      tg::sched::new_buffer(UOp::make(Ops::DEVICE, dtypes::void_, {}, std::string(device)), numel, dtype);
  runtime::Device& dev = tg::runtime::device(device);
  size_t nbytes = static_cast<size_t>(numel) * dtype.itemsize();
  auto b = std::make_shared<DeviceStorage>();
  b->id = buffer_id(*buf), b->dtype = dtype;
  if ((b->buf = runtime::Buffer::wrap_host(dev, data, nbytes, owner))) {
    b->read_only = read_only;
  } else {
    b->buf = std::make_shared<runtime::Buffer>(dev, nbytes);
    b->fill_from = static_cast<const std::byte*>(data), b->fill_owner = std::move(owner);
  }
  table().add(b->id, b);
  return {buf, b};
}

HostView host_view(const UOpRef& buffer) {
  std::shared_ptr<DeviceStorage> s = storage_of(*buffer);
  const std::byte* p = s->buf->host_address();
  if (p == nullptr) return {};
  if (active_capture) active_capture->host_reads.push_back(fmt::format("a host view of buffer {}", s->id));
  std::shared_ptr<const void> hold = s->viewed.lock();
  if (!hold) {
    hold = std::make_shared<ViewHold>(s->buf);
    s->viewed = hold;
  }
  return {std::span(p, s->buf->nbytes()), hold};
}

UOpRef realized_view(const UOpRef& buffer, const Shape& shape) {
  // always RESHAPE(BUFFER) for concrete shapes, also when the shapes agree: the form tensors are read by
  if (!is_symbolic(shape)) return UOp::make(Ops::RESHAPE, buffer->dtype(), {buffer}, shape);
  return sched::buffer_view(buffer, shape);
}

UOpRef realized_buffer(const UOpRef& view) {
  const UOp* b = view->op() == Ops::ASSIGN ? nullptr : whole_buffer(*view);
  return b ? b->ref() : nullptr;
}

std::vector<RealizedBuffer> realize_uops(std::span<const UOpRef> roots) {
  std::vector<UOpRef> targets = realize_targets(roots);
  int64_t first_new_id = sched::peek_unique_id();  // buffers with this id or above are made by this realize
  sched::BecomesMap becomes;
  sched::VarVals var_vals;
  Keep keep;
  if (!targets.empty()) {
    Timer t;
    runtime::RuntimeStats before = runtime::runtime_stats();
    realize_times = {};
    std::vector<sched::ScheduleItem> items = sched::create_schedule(UOp::sink(targets), becomes, &var_vals);
    realize_times.schedule = t.seconds();
    runtime::count_stat(runtime::Stat::scheduled);
    // The buffers this schedule made for intermediates share storage by lifetime, and each is let go
    // after the last item that uses it: the allocator's cache hands its memory to the next buffer of that
    // size. Fresh memory costs a page fault per 4 KiB on first touch. Outputs stay.
    std::unordered_set<int64_t> outputs;
    for (const UOpRef& target : targets)
      if (UOpRef v = value_of(becomes, target))
        for (const UOp* n : v->toposort())
          if (n->op() == Ops::BUFFER) outputs.insert(buffer_id(*n));
    sched::MemoryPlan plan = sched::plan_memory(items, [&](const UOp& b) {
      return !outputs.contains(buffer_id(b)) && table().find(buffer_id(b)) == nullptr;
    });
    sched::apply_memory_plan(items, plan);
    std::unordered_map<int64_t, size_t> last_use;
    for (size_t i = 0; i < items.size(); i++)
      for (const UOpRef& b : items[i].bufs) last_use[buffer_id(*b)] = i;
    {
      AheadBuilder ahead(items, var_vals);
      for (size_t i = 0; i < items.size(); i++) {
        items[i].is_copy() ? run_copy(items[i], keep) : run_kernel(items[i], var_vals, keep, ahead.take(i));
        for (const UOpRef& b : items[i].bufs)
          if (int64_t id = buffer_id(*b); last_use.at(id) == i && !outputs.contains(id)) keep.erase(id);
      }
    }
    if (env::DEBUG >= 1) {
      runtime::RuntimeStats after = runtime::runtime_stats();
      const RealizeTimes& r = realize_times;
      debug_log(1,
                "realized {} kernel{} ({} compiled, {} lowered, {} lowered from disk) in {:.3f} ms: schedule "
                "{:.1f}, lower {:.1f}, compile {:.1f}, run {:.1f} ms",
                items.size(), items.size() == 1 ? "" : "s", after.compiled - before.compiled,
                after.lowered - before.lowered, after.lowered_disk_hits - before.lowered_disk_hits,
                t.seconds() * 1e3, r.schedule * 1e3, r.lower * 1e3, r.compile * 1e3, r.run * 1e3);
    }
  }

  std::vector<RealizedBuffer> out;
  size_t next = 0;
  std::unordered_set<const UOp*> computed;
  for (const UOpRef& r : roots) {
    if (already_realized(*r)) {
      out.push_back({whole_buffer(*r)->ref(), storage_of(*whole_buffer(*r))});
      continue;
    }
    const UOpRef& target = targets[next++];
    UOpRef value_ref = value_of(becomes, target);
    const UOp* value = value_ref.get();
    const UOp* buf = value ? whole_buffer(*value) : nullptr;
    if (buf != nullptr) {
      // Equal graphs are one node, computed once: a repeat of a root gets a copy of the new buffer, as
      // roots are distinct tensors (an assign to one must not show in the other).
      bool repeat = !computed.insert(r.get()).second && buffer_id(*buf) >= first_new_id;
      out.push_back(repeat ? copy_of(buf->ref(), keep) : RealizedBuffer{buf->ref(), storage_of(*buf)});
      continue;
    }
    // Folded constants (and anything else without a buffer) are small: evaluate them on the host.
    auto lookup = [](const UOp& b) -> std::shared_ptr<Storage> {
      if (active_capture) active_capture->host_reads.push_back("a value computed on the host");
      auto s = std::make_shared<Storage>();
      std::shared_ptr<DeviceStorage> d = storage_of(b);
      s->dtype = d->dtype;
      s->bytes.resize(d->buf->nbytes());
      d->buf->copyout(s->bytes);
      return s;
    };
    const UOpRef src = value ? value->ref() : r;
    std::vector<std::vector<std::byte>> bytes = evaluate(std::span(&src, 1), lookup);
    out.push_back(make_buffer(device_of(*r), r->dtype(),
                              static_cast<int64_t>(bytes[0].size() / r->dtype().itemsize()), bytes[0]));
  }
  return out;
}

void copy_to_host(const UOpRef& buffer, std::span<std::byte> dst) {
  std::shared_ptr<DeviceStorage> b = storage_of(*buffer);
  if (active_capture)
    active_capture->host_reads.push_back(fmt::format("a copy of buffer {} to the host", b->id));
  if (dst.size() > b->buf->nbytes())
    throw ValueError("copyout",
                     fmt::format("asked for {} bytes of a {}-byte buffer", dst.size(), b->buf->nbytes()));
  b->buf->copyout(dst);
}

CaptureScope::CaptureScope(CaptureLog& log) : prev_(active_capture) { active_capture = &log; }
CaptureScope::~CaptureScope() { active_capture = prev_; }

std::shared_ptr<runtime::Buffer> device_buffer(const UOpRef& buffer) { return storage_of(*buffer)->buf; }

bool host_views_alive() { return live_views.load() > 0; }
uint64_t buffer_moves() { return moves.load(); }

std::shared_ptr<runtime::Buffer> live_buffer(int64_t id, bool for_write) {
  std::shared_ptr<DeviceStorage> s = table().find(id);
  if (!s) return nullptr;
  if (for_write) make_writable(*s);
  return s->buf;
}

std::vector<ScheduleItemView> schedule_uops(std::span<const UOpRef> roots) {
  std::vector<UOpRef> targets = realize_targets(roots);
  std::vector<ScheduleItemView> out;
  if (targets.empty()) return out;
  sched::BecomesMap becomes;
  for (sched::ScheduleItem& si : sched::create_schedule(UOp::sink(targets), becomes))
    out.push_back({si.ast, si.bufs});
  return out;
}

}  // namespace tg::engine
