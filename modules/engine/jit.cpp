// tg::jit: warm-up, capture (tensor/realize.hpp records the launches), memory planning of the captured
// intermediates, and replay.
#include "engine/jit.hpp"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "base/env.hpp"
#include "base/error.hpp"
#include "base/log.hpp"
#include "runtime/buffer.hpp"
#include "runtime/check.hpp"
#include "runtime/stats.hpp"
#include "schedule/schedule.hpp"
#include "tensor/gradient.hpp"
#include "tensor/multi.hpp"
#include "tensor/realize.hpp"
#include "tg/sdk/graph.hpp"
#include "viz/record.hpp"

namespace tg::engine {

namespace {

// "(256, 10)", "(5,)", "()": the way a user writes the shape.
std::string shape_text(const Shape& s) {
  if (s.size() == 1) return fmt::format("({},)", s[0]);
  return fmt::format("({})", fmt::join(s, ", "));
}

std::string bytes_text(int64_t b) {
  if (b >= (int64_t{1} << 20)) return fmt::format("{:.1f} MiB", static_cast<double>(b) / (1 << 20));
  if (b >= (int64_t{1} << 10)) return fmt::format("{:.1f} KiB", static_cast<double>(b) / (1 << 10));
  return fmt::format("{} B", b);
}

// Captures in progress on this thread: a jitted function called inside another's capture runs as a plain
// function, so the outer capture records its kernels.
thread_local int capture_depth = 0;

// What a capture is keyed by, per input. Sizes are unbound: a capture serves every value of its
// variables.
struct InputSig {
  Shape shape;
  DType dtype;
  std::string device;
  std::optional<sint> size;  // a Tensor::from_size input: the size it holds
  bool operator==(const InputSig&) const = default;
};

// Variable values of one call, by name: read from the inputs' shapes and from_size inputs.
using Values = std::map<std::string, int64_t>;

void add_values(const sint& s, size_t input, Values& values, std::map<std::string, size_t>& from) {
  for (const auto& [var, value] : bindings(s)) {
    const std::string& name = var->arg_as<VarArg>().name;
    auto [it, fresh] = values.emplace(name, value);
    if (fresh) {
      from[name] = input;
    } else if (it->second != value) {
      throw ValueError("jit", fmt::format("variable {} is bound to {} in input {} and to {} in input {}",
                                          name, it->second, from[name], value, input));
    }
  }
}

// The size a from_size input holds; none for a tensor of data.
std::optional<sint> held_size(const Tensor& t) {
  return t.holds_size() ? std::optional(t.as_size()) : std::nullopt;
}

// The BUFFER a realized tensor is a view of.
UOpRef buffer_uop(const Tensor& t) { return realized_buffer(t.uop()); }
int64_t buffer_uid(const Tensor& t) { return buffer_uop(t)->src(0)->arg_as<int64_t>(); }

// A captured output, realized, for the variable values of a replay: the same buffer, its shape rebound.
Tensor rebind(const Tensor& t, const Values& values) {
  if (!is_symbolic(t.shape())) return t;
  Shape shape;
  for (const sint& d : t.shape()) {
    std::unordered_map<const UOp*, UOpRef> binds;
    for (const auto& [var, old] : bindings(d)) {
      int64_t v = values.at(var->arg_as<VarArg>().name);
      UOpRef from = UOp::make(Ops::BIND, dtypes::index, {var, UOp::const_(dtypes::index, old)});
      binds[from.get()] = UOp::make(Ops::BIND, dtypes::index, {var, UOp::const_(dtypes::index, v)});
    }
    shape.push_back(binds.empty() ? d : sint::of(d.expr()->substitute(binds)));
  }
  return Tensor(realized_view(buffer_uop(t), shape), t.device(), t.holds());
}

// One captured launch, ready to replay: handles of bound buffers filled in, input arguments patched per call.
struct Launch {
  runtime::Device* device = nullptr;  // where the program runs
  std::string name;
  std::shared_ptr<sdk::Program> program;  // null for a copy
  std::vector<std::shared_ptr<runtime::Buffer>> buffers;
  std::vector<sdk::Handle> handles;
  std::vector<std::pair<size_t, size_t>> input_args;  // (argument, input index)
  std::vector<std::pair<size_t, int64_t>> held_args;  // (argument, buffer id) of buffers tensors hold
  std::vector<bool> written;
  std::vector<std::string> vars;  // set from each call's values
  std::vector<int64_t> vals;
  sdk::LaunchDims dims;
  std::function<sdk::LaunchDims(std::span<const int64_t>)> dims_at;  // null: static
};

struct Capture {
  std::vector<InputSig> sig;
  std::vector<Launch> launches;
  std::vector<Tensor> outputs;
  std::vector<int> output_input;    // output i is input j's buffer (-1: its own)
  std::vector<bool> input_written;  // a launch writes input i in place
  JitInfo info;
  // The whole replay as one recorded list on a device that offers it (sdk/graph.hpp); tried once.
  std::unique_ptr<sdk::LaunchGraph> graph;
  bool graph_tried = false;
  uint64_t moves = 0;  // buffer_moves() when the launches last took their buffers' storage
};

// What the planner knows of one buffer of the capture.
struct BufferUse {
  std::shared_ptr<runtime::Buffer> buffer;
  size_t first = 0, last = 0;
  bool first_written = false, alive = false;
};

// Intermediates (written before read, held by no tensor after fn returned) get storage shared by
// lifetime over the launches (share_by_lifetime, per device).
std::unordered_map<int64_t, std::shared_ptr<runtime::Buffer>> plan_intermediates(
    const std::map<int64_t, BufferUse>& uses, JitInfo& info) {
  std::vector<int64_t> ids;
  std::vector<sched::Lifetime> lifetimes;
  std::vector<runtime::Device*> devices;  // per group
  for (const auto& [id, u] : uses) {
    if (u.alive || !u.first_written || u.buffer->base()) continue;
    runtime::Device* d = &u.buffer->device();
    size_t g = static_cast<size_t>(std::find(devices.begin(), devices.end(), d) - devices.begin());
    if (g == devices.size()) devices.push_back(d);
    ids.push_back(id), lifetimes.push_back({static_cast<int64_t>(u.buffer->nbytes()), u.first, u.last, g});
    info.intermediates++, info.intermediate_bytes += lifetimes.back().size;
  }
  sched::SharedStorage shared = sched::share_by_lifetime(lifetimes);
  std::vector<std::shared_ptr<runtime::Buffer>> storage(shared.sizes.size());
  for (size_t s = 0; s < storage.size(); s++) info.planned_bytes += shared.sizes[s];
  // A storage is the captured buffer of its size when it has one (the capture's own realize planned its
  // intermediates, so most have): memory already touched, not a second set of buffers that the first
  // replay would fault in page by page.
  for (size_t i = 0; i < ids.size(); i++)
    if (size_t s = shared.storage_of[i]; !storage[s] && lifetimes[i].size == shared.sizes[s])
      storage[s] = uses.at(ids[i]).buffer;
  std::unordered_map<int64_t, std::shared_ptr<runtime::Buffer>> placed;
  for (size_t i = 0; i < ids.size(); i++) {
    size_t s = shared.storage_of[i];
    if (!storage[s])
      storage[s] = std::make_shared<runtime::Buffer>(*devices[lifetimes[i].group],
                                                     static_cast<size_t>(shared.sizes[s]));
    placed[ids[i]] = storage[s];
  }
  info.planned_buffers = storage.size();
  return placed;
}

}  // namespace

struct Jit::Impl {
  Fn fn;
  JitOptions opts;
  size_t calls = 0, n_inputs = 0;
  std::vector<Capture> captures;

  // Checks and realizes the inputs; returns their signature and fills values with their variables.
  std::vector<InputSig> prepare(std::span<const Tensor> inputs, Values& values) {
    if (calls > 0 && inputs.size() != n_inputs)
      throw ValueError("jit",
                       fmt::format("called with {} input{}, but the function was called with {} before",
                                   inputs.size(), inputs.size() == 1 ? "" : "s", n_inputs));
    for (size_t i = 0; i < inputs.size(); i++)
      if (!inputs[i].defined()) throw ValueError("jit", fmt::format("input {} is undefined", i));
    std::vector<Tensor> data;
    for (const Tensor& t : inputs)
      if (!held_size(t)) data.push_back(t);
    Tensor::realize_all(data);
    std::vector<InputSig> sig;
    std::unordered_map<int64_t, size_t> seen;
    std::map<std::string, size_t> from;
    for (size_t i = 0; i < inputs.size(); i++) {
      const Tensor& t = inputs[i];
      if (std::optional<sint> size = held_size(t)) {
        add_values(*size, i, values, from);
        sig.push_back({{}, t.dtype(), t.device(), unbound(*size)});
        continue;
      }
      if (!realized_buffer(t.uop()))
        throw ValueError("jit", fmt::format("input {} did not realize to a buffer", i));
      if (auto [it, fresh] = seen.emplace(buffer_uid(t), i); !fresh)
        throw ValueError(
            "jit", fmt::format("inputs {} and {} are the same buffer; pass distinct tensors", it->second, i));
      Shape shape;
      for (const sint& d : t.shape()) add_values(d, i, values, from), shape.push_back(unbound(d));
      sig.push_back({std::move(shape), t.dtype(), t.device(), std::nullopt});
    }
    return sig;
  }

  // The error for inputs that match no capture, naming the first difference from the first capture.
  [[noreturn]] static void mismatch(const std::vector<InputSig>& got, const std::vector<InputSig>& want) {
    for (size_t i = 0; i < got.size(); i++) {
      if (got[i].size.has_value() != want[i].size.has_value())
        throw ValueError("jit", fmt::format("input {} is {} but was {} at the capture", i,
                                            got[i].size ? "a size" : "a tensor of data",
                                            want[i].size ? "a size" : "a tensor of data"));
      if (got[i].size && !(*got[i].size == *want[i].size))
        throw ShapeError("jit", fmt::format("input {}: size {} differs from the captured {}", i,
                                            got[i].size->str(), want[i].size->str()));
      if (got[i].shape != want[i].shape)
        throw ShapeError("jit", fmt::format("input {}: shape {} differs from the captured {}", i,
                                            shape_text(got[i].shape), shape_text(want[i].shape)));
      if (got[i].dtype != want[i].dtype)
        throw DTypeError("jit", fmt::format("input {}: dtype {} differs from the captured {}", i,
                                            got[i].dtype.name(), want[i].dtype.name()));
      if (got[i].device != want[i].device)
        throw DeviceError("jit", fmt::format("input {}: device {} differs from the captured {}", i,
                                             got[i].device, want[i].device));
    }
    throw ValueError("jit", "inputs differ from the captured ones");
  }

  // fn's results, realized, as fresh tensors on their buffers (no autograd history keeps graphs alive).
  std::vector<Tensor> run(std::span<const Tensor> inputs) {
    std::vector<Tensor> outs = fn(inputs);
    for (size_t i = 0; i < outs.size(); i++)
      if (!outs[i].defined()) throw ValueError("jit", fmt::format("output {} is undefined", i));
    Tensor::realize_all(outs);
    std::vector<Tensor> plain;
    for (const Tensor& t : outs) {
      if (!t.is_leaf()) forget_graph(t.uop());  // replays rewrite the buffer: it has no graph to go back to
      plain.emplace_back(t.uop(), t.device(), t.holds());
    }
    return plain;
  }

  // inputs are the buffers (a tensor over several devices as its parts); fn gets `given`
  Capture capture(std::span<const Tensor> inputs, std::span<const Tensor> given, std::vector<InputSig> sig,
                  const Values& values) {
    CaptureLog log;
    Capture c;
    c.sig = std::move(sig);
    {
      CaptureScope scope(log);
      struct Depth {
        Depth() { capture_depth++; }
        ~Depth() { capture_depth--; }
      } depth;
      c.outputs = run(given);
    }
    if (!log.host_reads.empty())
      throw ValueError("jit",
                       fmt::format("the function read device data on the host ({}: item(), to_vector() "
                                   "or printing); a replay cannot repeat that, return the tensor instead",
                                   log.host_reads[0]));
    if (log.launches.empty())
      throw ValueError("jit", "the function realized nothing: there are no kernels to capture");

    std::unordered_map<int64_t, size_t> input_of;
    for (size_t i = 0; i < inputs.size(); i++)
      if (!held_size(inputs[i])) input_of[buffer_uid(inputs[i])] = i;
    for (const Tensor& o : c.outputs) {
      if (o.uop()->op() == Ops::MULTI) {  // its parts' buffers are replayed in place
        c.output_input.push_back(-1);
        continue;
      }
      auto it = input_of.find(buffer_uid(o));
      c.output_input.push_back(it == input_of.end() ? -1 : static_cast<int>(it->second));
    }
    for (const CapturedLaunch& l : log.launches)
      for (const std::string& v : l.vars)
        if (!values.contains(v))
          throw ValueError("jit",
                           fmt::format("kernel {} uses variable {}, which no input binds: bind it in an "
                                       "input's shape or pass Tensor::from_size of it",
                                       l.name, v));
    // Lifetimes; a buffer some tensor still holds (fn's locals are gone by now) is bound, never shared.
    std::map<int64_t, BufferUse> uses;
    for (size_t i = 0; i < log.launches.size(); i++) {
      const CapturedLaunch& l = log.launches[i];
      for (size_t a = 0; a < l.buffer_ids.size(); a++) {
        auto [it, fresh] = uses.try_emplace(l.buffer_ids[a]);
        BufferUse& u = it->second;
        if (fresh) u.buffer = l.buffers[a], u.first = i, u.first_written = l.written[a];
        u.last = i;
        u.alive = u.alive || !l.holds[a].expired() || input_of.count(l.buffer_ids[a]);
      }
    }
    std::unordered_map<int64_t, std::shared_ptr<runtime::Buffer>> placed = plan_intermediates(uses, c.info);
    for (CapturedLaunch& l : log.launches) {
      Launch& r = c.launches.emplace_back();
      r.device = l.buffers.empty() ? nullptr : &l.buffers[0]->device();
      r.name = std::move(l.name), r.program = std::move(l.program), r.vars = std::move(l.vars),
      r.vals = std::move(l.vals), r.dims = l.dims, r.dims_at = std::move(l.dims_at);
      r.written = l.written;
      for (size_t a = 0; a < l.buffer_ids.size(); a++) {
        int64_t id = l.buffer_ids[a];
        std::shared_ptr<runtime::Buffer> b = l.buffers[a];
        if (auto in = input_of.find(id); in != input_of.end()) {
          r.input_args.emplace_back(a, in->second);
          if (l.written[a]) c.input_written.resize(inputs.size()), c.input_written[in->second] = true;
          b = nullptr;  // the capture's input is not kept: every replay brings its own
        } else if (auto p = placed.find(id); p != placed.end()) {
          b = p->second;
        } else if (uses.at(id).alive) {
          r.held_args.emplace_back(a, id);
        }
        r.handles.push_back(b ? b->handle() : nullptr);
        r.buffers.push_back(std::move(b));
      }
    }
    c.info.launches = c.launches.size();
    c.moves = buffer_moves();
    debug_log(1, "jit: captured {} kernels, intermediates {} -> {} ({} buffers -> {})", c.launches.size(),
              bytes_text(c.info.intermediate_bytes), bytes_text(c.info.planned_bytes), c.info.intermediates,
              c.info.planned_buffers);
    return c;
  }

  static void run_one(Launch& l) {
    if (!l.program) {  // a copy
      // a longer source holds the value in its prefix, as in the realize that was captured
      std::vector<std::byte> bytes(std::min(l.buffers[1]->nbytes(), l.buffers[0]->nbytes()));
      l.buffers[1]->copyout(bytes);
      l.buffers[0]->copyin(bytes);
      return;
    }
    double seconds = 0;
    runtime::check(l.program->launch(l.handles, l.vals, l.dims, true, &seconds), "launch", l.name);
    runtime::count_stat(runtime::Stat::launched);
    debug_log(2, "jit    {:<20} {:>10.2f} us", l.name, seconds * 1e6);
  }

  // Records the capture's launches as one graph when they are all kernels of one device that offers graphs
  // (JIT=2 turns graphs off, as in tinygrad; VIZ times each kernel, so it does too); null when they cannot be.
  static std::unique_ptr<sdk::LaunchGraph> make_graph(Capture& c) {
    if (env::JIT.value() >= 2 || viz::on() || c.launches.empty()) return nullptr;
    runtime::Device* dev = c.launches[0].device;
    std::vector<sdk::GraphLaunch> list;
    for (const Launch& l : c.launches) {
      if (!l.program || l.device != dev) return nullptr;
      list.push_back({l.program.get(), l.handles, l.vals, l.dims});
    }
    auto* graphs = static_cast<const sdk::LaunchGraphs*>(dev->plugin().extension(sdk::kLaunchGraphExtension));
    if (graphs == nullptr) return nullptr;
    sdk::LaunchGraph* g = nullptr;
    sdk::Status s = const_cast<sdk::LaunchGraphs*>(graphs)->build(list, &g);
    if (!s.ok()) {
      debug_log(1, "jit: {} cannot record the replay as a graph: {}", dev->str(), s.message());
      return nullptr;
    }
    debug_log(1, "jit: replaying {} kernels as one graph on {}", list.size(), dev->str());
    c.info.graph = true;
    return std::unique_ptr<sdk::LaunchGraph>(g);
  }

  // Buffers this replay writes that a host view (numpy()) shows move to new memory first, as in a realize;
  // then every launch takes the buffers' storage now (also after a realize moved one since the last call).
  static void rebind_moved(Capture& c) {
    for (Launch& l : c.launches)
      for (auto [a, id] : l.held_args)
        if (l.written[a]) live_buffer(id, true);
    bool moved = false;
    for (Launch& l : c.launches)
      for (auto [a, id] : l.held_args)
        if (std::shared_ptr<runtime::Buffer> b = live_buffer(id, false); b && b != l.buffers[a])
          l.buffers[a] = b, l.handles[a] = b->handle(), moved = true;
    if (moved) c.graph.reset(), c.graph_tried = false;
    c.moves = buffer_moves();
  }

  static std::vector<Tensor> replay(Capture& c, std::span<const Tensor> inputs, const Values& values) {
    Timer t;
    if (host_views_alive() || buffer_moves() != c.moves) rebind_moved(c);
    std::vector<std::shared_ptr<runtime::Buffer>> in;
    for (size_t i = 0; i < inputs.size(); i++) {
      // an input written in place that is read-only caller memory or shown by a host view moves first
      const Tensor& x = inputs[i];
      bool written = i < c.input_written.size() && c.input_written[i];
      in.push_back(held_size(x) ? nullptr
                   : written    ? live_buffer(buffer_uid(x), true)
                                : device_buffer(buffer_uop(x)));
    }
    for (Launch& l : c.launches) {
      for (auto [a, i] : l.input_args) l.buffers[a] = in[i], l.handles[a] = in[i]->handle();
      if (!l.vars.empty()) {
        for (size_t v = 0; v < l.vars.size(); v++) l.vals[v] = values.at(l.vars[v]);
        if (l.dims_at) l.dims = l.dims_at(l.vals);
      }
    }
    if (!c.graph_tried) c.graph = make_graph(c), c.graph_tried = true;
    if (c.graph) {  // the launches that read inputs or variables get this call's arguments, then one run
      for (size_t k = 0; k < c.launches.size(); k++)
        if (const Launch& l = c.launches[k]; !l.input_args.empty() || !l.vars.empty())
          runtime::check(c.graph->update(k, l.handles, l.vals, l.dims), "launch", l.name);
      double seconds = 0;
      runtime::check(c.graph->run(env::DEBUG >= 2, &seconds), "launch", "graph");
      runtime::count_stat(runtime::Stat::launched, c.launches.size());
      debug_log(2, "jit    graph of {} kernels {:>10.2f} us", c.launches.size(), seconds * 1e6);
    }
    for (Launch& l : c.launches) {
      if (!c.graph) run_one(l);
      for (auto [a, i] : l.input_args) l.buffers[a] = nullptr;
    }
    debug_log(1, "jit: replayed {} kernels in {:.3f} ms", c.launches.size(), t.seconds() * 1e3);
    std::vector<Tensor> out;
    for (size_t i = 0; i < c.outputs.size(); i++)
      out.push_back(c.output_input[i] >= 0 ? inputs[static_cast<size_t>(c.output_input[i])]
                                           : rebind(c.outputs[i], values));
    return out;
  }

  std::vector<Tensor> call(std::span<const Tensor> given) {
    // a tensor over several devices takes part as its parts, one buffer each
    std::vector<Tensor> multi, inputs;
    for (const Tensor& t : given)
      if (t.defined() && t.uop()->op() == Ops::MULTI) multi.push_back(t);
    Tensor::realize_all(multi);
    for (const Tensor& t : given)
      for (const Tensor& part : t.defined() ? shards(t) : std::vector<Tensor>{t}) inputs.push_back(part);
    Values values;
    std::vector<InputSig> sig = prepare(inputs, values);
    n_inputs = inputs.size();
    size_t call_no = calls++;
    if (env::JIT.value() == 0 || capture_depth > 0) return run(given);
    for (Capture& c : captures)
      if (c.sig == sig) return replay(c, inputs, values);
    if (!captures.empty() && captures.size() >= static_cast<size_t>(std::max(opts.max_captures, 1)))
      mismatch(sig, captures[0].sig);
    if (call_no == 0 && opts.warmup) return run(given);
    captures.push_back(capture(inputs, given, std::move(sig), values));
    return captures.back().outputs;
  }
};

Jit::Jit(Fn fn, JitOptions opts) : impl_(std::make_unique<Impl>()) {
  if (!fn) throw ValueError("jit", "the function is empty");
  impl_->fn = std::move(fn), impl_->opts = opts;
}
Jit::~Jit() = default;
Jit::Jit(Jit&&) noexcept = default;
Jit& Jit::operator=(Jit&&) noexcept = default;

std::vector<Tensor> Jit::operator()(std::span<const Tensor> inputs) { return impl_->call(inputs); }
size_t Jit::calls() const { return impl_->calls; }
size_t Jit::captures() const { return impl_->captures.size(); }
JitInfo Jit::info() const { return impl_->captures.empty() ? JitInfo{} : impl_->captures.back().info; }
void Jit::reset() { impl_->captures.clear(), impl_->calls = 0; }

}  // namespace tg::engine
