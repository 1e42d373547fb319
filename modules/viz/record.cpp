// The live recording: UOps and texts kept while the program runs, turned into a Trace at exit.
#include "viz/record.hpp"

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "base/error.hpp"
#include "base/hash.hpp"
#include "base/log.hpp"
#include "codegen/estimate.hpp"
#include "codegen/lower.hpp"
#include "codegen/opts.hpp"
#include "schedule/schedule.hpp"
#include "tg/sdk/compiler.hpp"
#include "tg/sdk/program.hpp"
#include "uop/pattern.hpp"
#include "viz/record_build.hpp"
#include "viz/server.hpp"

namespace tg::viz {

namespace {

struct Recorder {
  std::mutex mu;
  std::vector<LiveKernel> kernels;
  std::vector<LiveLowering> lowerings;
  std::map<std::pair<const UOp*, std::string>, int> by_ast;  // (AST, opts): a kernel lowered again is one
  std::map<uint64_t, int> by_binary;                         // binary hash -> kernel, for record_runs
  std::vector<LiveRun> runs;
  std::vector<LiveMemoryPlan> memory;
  Timer clock;
};

// Leaked: programs that record runs may outlive every static destructor.
Recorder& recorder() {
  static Recorder* r = new Recorder;
  return *r;
}

thread_local int t_kernel = -1;  // the kernel this thread lowered last

uint64_t binary_hash(std::span<const std::byte> b) {
  return hash_str(std::string_view(reinterpret_cast<const char*>(b.data()), b.size()));
}

void finish() {
  Recorder& r = recorder();
  std::lock_guard lock(r.mu);
  Trace t = build_trace(take_rewrite_traces(), r.kernels, r.lowerings, r.runs, r.memory);
  std::string out = env::get("VIZ_OUT");
  try {
    if (!out.empty()) {
      write_trace(t, out);
      fmt::print(stderr, "VIZ: wrote {} kernels, {} rewrites to {} (serve it with `tg viz {}`)\n",
                 t.kernels.size(), t.rewrites.size(), out, out);
      return;
    }
    serve(std::move(t), port_from_env());
  } catch (const Error& e) {
    fmt::print(stderr, "VIZ: {}\n", e.what());
  }
}

void at_exit_once() {
  static std::once_flag once;
  std::call_once(once, [] { std::atexit(finish); });
}

// Forwards every launch and records its time (launches always wait under VIZ, as they do for DEBUG=2).
class RecordedProgram final : public sdk::Program {
 public:
  RecordedProgram(std::unique_ptr<sdk::Program> p, int kernel) : p_(std::move(p)), kernel_(kernel) {}
  sdk::Status launch(std::span<const sdk::Handle> bufs, std::span<const int64_t> vals,
                     const sdk::LaunchDims& dims, bool wait, double* seconds) noexcept override {
    Recorder& r = recorder();
    double start = r.clock.seconds(), s = 0;
    sdk::Status st = p_->launch(bufs, vals, dims, true, &s);
    if (seconds != nullptr) *seconds = s;
    (void)wait;
    try {
      std::lock_guard lock(r.mu);
      r.runs.push_back(LiveRun{kernel_, start, s});
    } catch (...) {  // out of memory: the run still happened
    }
    return st;
  }

 private:
  std::unique_ptr<sdk::Program> p_;
  int kernel_;
};

}  // namespace

void record_lowered(uint64_t seq_begin, const UOpRef& ast, const codegen::LinearProgram& p) {
  Recorder& r = recorder();
  at_exit_once();
  uint64_t seq_end = next_trace_seq();
  std::string opts = codegen::opts_str(p.applied_opts);
  codegen::Estimate e;
  try {
    e = estimate(p);
  } catch (const Error&) {  // no estimate: the timeline shows the time alone
  }
  std::lock_guard lock(r.mu);
  auto [it, fresh] = r.by_ast.try_emplace({ast.get(), opts}, static_cast<int>(r.kernels.size()));
  t_kernel = it->second;
  r.lowerings.push_back(LiveLowering{seq_begin, seq_end, std::this_thread::get_id(), t_kernel, fresh});
  if (fresh) r.kernels.push_back(LiveKernel{ast, p.name, opts, p.str(), e.ops, e.bytes, {}, {}, {}});
}

void record_binary(std::string_view device, std::string_view source, std::span<const std::byte> binary,
                   sdk::Compiler& compiler) {
  if (t_kernel < 0) return;
  sdk::Blob text;
  sdk::Status s = compiler.disassemble(binary, text);
  Recorder& r = recorder();
  std::lock_guard lock(r.mu);
  LiveKernel& k = r.kernels[static_cast<size_t>(t_kernel)];
  k.device = device, k.source = source;
  k.disasm = s.ok() ? std::string(text.text()) : fmt::format("(no disassembly: {})", s.message());
  r.by_binary[binary_hash(binary)] = t_kernel;
}

std::unique_ptr<sdk::Program> record_runs(std::unique_ptr<sdk::Program> program,
                                          std::span<const std::byte> binary) {
  Recorder& r = recorder();
  at_exit_once();
  std::lock_guard lock(r.mu);
  auto it = r.by_binary.find(binary_hash(binary));
  if (it == r.by_binary.end()) return program;  // not a kernel this process lowered (a test's own binary)
  return std::make_unique<RecordedProgram>(std::move(program), it->second);
}

void record_memory_plan(const tg::sched::MemoryPlan& plan) {
  Recorder& r = recorder();
  at_exit_once();
  LiveMemoryPlan m{plan.bytes_before, plan.bytes_after, {}};
  for (const auto& [buf, storage] : plan.storage) m.placed.emplace_back(buf, storage);
  std::lock_guard lock(r.mu);
  r.memory.push_back(std::move(m));
}

int port_from_env() {
  std::string s = env::get("VIZ_PORT");
  try {
    size_t used = 0;
    int p = std::stoi(s, &used);
    if (used == s.size() && p > 0 && p < 65536) return p;
  } catch (const std::exception&) {
  }
  throw ValueError("viz", fmt::format("VIZ_PORT={} is not a port number (1..65535)", s));
}

}  // namespace tg::viz
