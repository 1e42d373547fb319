// BEAM search (see beam.hpp): candidates from codegen's action space, lowered and rendered here, compiled on
// worker threads, loaded and timed one at a time on scratch buffers; the winner is cached on disk.
#include "runtime/beam.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <thread>
#include <unordered_set>

#include <fmt/format.h>

#include "base/env.hpp"
#include "base/error.hpp"
#include "base/log.hpp"
#include "codegen/lower.hpp"
#include "codegen/search.hpp"
#include "runtime/buffer.hpp"
#include "runtime/check.hpp"
#include "runtime/disk_cache.hpp"
#include "runtime/stats.hpp"
#include "uop/symbolic.hpp"

namespace tg::runtime {

namespace {

constexpr int kMaxRounds = 8;
constexpr double kMinGain = 0.02;      // a round must be this much faster than the last to go on
constexpr int kLaunches = 3;           // timed launches per candidate (the minimum counts)
constexpr double kEarlyStop = 3.0;     // one launch this many times slower than the best: no more launches
constexpr double kRepeatBudget = 0.2;  // seconds: a kernel this slow is not launched again (noise is small)
constexpr int kConfirmRounds = 2;      // the winner and the heuristic's choice timed in turns at the end
constexpr size_t kMaxUops = 3000;      // larger candidates take long to compile and rarely win
constexpr double kInf = std::numeric_limits<double>::infinity();

struct Candidate {
  std::vector<codegen::Opt> opts;
  codegen::LinearProgram prog;
  std::string source;
  sdk::Blob binary;
  bool ok = false;  // lowered, rendered and compiled
  double seconds = kInf;
};

// Deterministic scratch contents: small values of the buffer's type (no zero divisors for integers).
std::vector<std::byte> scratch_bytes(DType d, size_t nbytes, uint64_t seed) {
  std::vector<std::byte> out(nbytes);
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  auto next = [&] {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    return x;
  };
  size_t item = std::max<size_t>(d.scalar_itemsize(), 1);
  for (size_t i = 0; i + item <= nbytes; i += item) {
    double u = static_cast<double>(next() % 2001) / 1000.0 - 1.0;  // [-1, 1]
    std::byte* p = out.data() + i;
    if (d.scalar() == Scalar::FLOAT32) {
      auto f = static_cast<float>(u);
      std::memcpy(p, &f, 4);
    } else if (d.scalar() == Scalar::FLOAT64) {
      std::memcpy(p, &u, 8);
    } else if (d.scalar() == Scalar::FLOAT16 || d.scalar() == Scalar::BFLOAT16) {
      static constexpr uint16_t half[] = {0x3C00, 0xBC00, 0x3800, 0x4000},
                                bf[] = {0x3F80, 0xBF80, 0x3F00, 0x4000};
      size_t k = next() % 4;
      uint16_t v = d.scalar() == Scalar::FLOAT16 ? half[k] : bf[k];
      std::memcpy(p, &v, 2);
    } else if (d.is_bool()) {
      *p = static_cast<std::byte>(next() % 2);
    } else {
      uint64_t v = 1 + next() % 7;  // little-endian small positive integer (fp8: a small value too)
      std::memcpy(p, &v, item);
    }
  }
  return out;
}

template <typename T>
bool close_floats(std::span<const std::byte> a, std::span<const std::byte> b) {
  for (size_t i = 0; i + sizeof(T) <= a.size(); i += sizeof(T)) {
    T x, y;
    std::memcpy(&x, a.data() + i, sizeof(T)), std::memcpy(&y, b.data() + i, sizeof(T));
    if (std::isnan(x) && std::isnan(y)) continue;
    if (x == y) continue;  // infinities too
    if (!(std::abs(x - y) <= T(1e-4) + T(1e-3) * std::abs(y))) return false;
  }
  return true;
}

bool same_output(DType d, std::span<const std::byte> got, std::span<const std::byte> want) {
  if (got.size() != want.size()) return false;
  if (d.scalar() == Scalar::FLOAT32) return close_floats<float>(got, want);
  if (d.scalar() == Scalar::FLOAT64) return close_floats<double>(got, want);
  return std::equal(got.begin(), got.end(), want.begin());
}

std::string cache_key(Device& dev, int width) {
  return fmt::format("beam{}|{}|{}", width, dev.name(), dev.compiler().cache_key());
}

class Search {
 public:
  Search(Device& dev, const UOpRef& ast, const BeamInputs& in)
      : dev_(dev), caps_(dev.caps()), ast_(ast), in_(in) {
    sym_ = graph_rewrite(ast, symbolic(), nullptr, {.name = "initial symbolic"});
    name_ = codegen::kernel_name(sym_);
  }

  int tried() const { return tried_; }
  const UOpRef& sym() const { return sym_; }

  // Lowers, renders and compiles (in parallel) the candidates not seen before and within max_uops; drops
  // the others.
  void build(std::vector<Candidate>& cands, size_t max_uops) {
    std::vector<Candidate> fresh;
    for (Candidate& c : cands) {
      try {
        c.prog = codegen::lower_kernel(ast_, caps_, {.name = name_, .opts = c.opts});
        if (c.prog.uops.size() > max_uops) continue;
        const std::vector<const UOp*> view = c.prog.view();
        sdk::Blob src;
        check(dev_.renderer().render(c.prog.name, view, src), "render", c.prog.name);
        c.source = std::string(src.text());
      } catch (const std::exception& e) {
        debug_log(5, "BEAM {} {}: {}", name_, codegen::opts_str(c.opts), e.what());
        continue;
      }
      if (seen_.insert(c.source).second) fresh.push_back(std::move(c));
    }
    cands = std::move(fresh);
    std::atomic<size_t> next{0};
    auto work = [&] {
      for (size_t i; (i = next.fetch_add(1)) < cands.size();) {
        try {
          cands[i].binary = dev_.compile(cands[i].source);
          cands[i].ok = true;
          count_stat(Stat::compiled);
        } catch (const std::exception& e) {
          debug_log(5, "BEAM {} {}: {}", name_, codegen::opts_str(cands[i].opts), e.what());
        }
      }
    };
    size_t n = std::min<size_t>(std::max(1u, std::thread::hardware_concurrency()), cands.size());
    std::vector<std::thread> workers;
    for (size_t t = 1; t < n; t++) workers.emplace_back(work);
    work();
    for (std::thread& t : workers) t.join();
  }

  // Loads c and runs it on fresh scratch data: the output must match `reference_` (set by the first call,
  // the heuristic's kernel), then up to kLaunches timed launches; c.seconds is the fastest.
  void time(Candidate& c, double best) {
    if (!c.ok) return;
    try {
      std::unique_ptr<sdk::Program> program = dev_.load(c.prog.name, c.binary.bytes());
      std::vector<sdk::Handle> handles = prepare(c.prog);
      std::vector<int64_t> vals = values(c.prog);
      sdk::LaunchDims dims = c.prog.launch_dims(vals);
      double first = 0;
      check(program->launch(handles, vals, dims, true, &first), "launch", c.prog.name);
      tried_++;
      if (!check_output(c.prog)) {
        debug_log(2, "BEAM {} {}: output differs from the heuristic kernel, dropped", name_,
                  codegen::opts_str(c.opts));
        return;
      }
      c.seconds = first;
      double spent = first;
      for (int i = 1; i < kLaunches && c.seconds < kEarlyStop * best && spent < kRepeatBudget; i++) {
        double s = 0;
        check(program->launch(handles, vals, dims, true, &s), "launch", c.prog.name);
        c.seconds = std::min(c.seconds, s), spent += s;
      }
    } catch (const Error& e) {
      c.seconds = kInf;
      debug_log(5, "BEAM {} {}: {}", name_, codegen::opts_str(c.opts), e.what());
    }
  }

  bool has_reference() const { return have_reference_; }

 private:
  Buffer& buffer(const codegen::BufferArg& a) {
    auto i = static_cast<size_t>(a.index);
    if (bufs_.size() <= i) bufs_.resize(i + 1), init_.resize(i + 1), dtypes_.resize(i + 1);
    if (!bufs_[i]) {
      int64_t n = i < in_.buf_nbytes.size()
                      ? in_.buf_nbytes[i]
                      : a.dtype.ptr_size() * static_cast<int64_t>(a.dtype.base().itemsize());
      if (n <= 0) throw ValueError("BEAM", fmt::format("{}: buffer {} has no known size", name_, a.index));
      bufs_[i] = std::make_unique<Buffer>(dev_, static_cast<size_t>(n));
      dtypes_[i] = a.dtype.base();
      init_[i] = scratch_bytes(dtypes_[i], static_cast<size_t>(n), static_cast<uint64_t>(a.index) + 1);
    }
    return *bufs_[i];
  }

  // Every buffer of p back to its initial scratch contents (a kernel may write its inputs).
  std::vector<sdk::Handle> prepare(const codegen::LinearProgram& p) {
    std::vector<sdk::Handle> handles;
    for (const codegen::BufferArg& a : p.bufs) {
      Buffer& b = buffer(a);
      b.copyin(init_[static_cast<size_t>(a.index)]);
      handles.push_back(b.handle());
    }
    return handles;
  }

  std::vector<int64_t> values(const codegen::LinearProgram& p) const {
    std::vector<int64_t> vals;
    for (const UOpRef& v : p.vars) {
      const std::string& n = v->arg_as<VarArg>().name;
      auto it = std::find_if(in_.var_vals.begin(), in_.var_vals.end(),
                             [&](const auto& kv) { return kv.first == n; });
      if (it == in_.var_vals.end())
        throw ValueError("BEAM", fmt::format("{}: variable {} has no value", name_, n));
      vals.push_back(it->second);
    }
    return vals;
  }

  bool check_output(const codegen::LinearProgram& p) {
    bool first = !have_reference_;
    for (const codegen::BufferArg& a : p.bufs) {
      if (!a.written) continue;
      auto i = static_cast<size_t>(a.index);
      std::vector<std::byte> out(bufs_[i]->nbytes());
      bufs_[i]->copyout(out);
      if (first) {
        if (reference_.size() <= i) reference_.resize(i + 1);
        reference_[i] = std::move(out);
      } else if (i >= reference_.size() || !same_output(dtypes_[i], out, reference_[i])) {
        return false;
      }
    }
    have_reference_ = true;
    return true;
  }

  Device& dev_;
  const sdk::RendererCaps& caps_;
  UOpRef ast_, sym_;
  const BeamInputs& in_;
  std::string name_;
  std::vector<std::unique_ptr<Buffer>> bufs_;
  std::vector<std::vector<std::byte>> init_, reference_;
  std::vector<DType> dtypes_;
  bool have_reference_ = false;
  std::unordered_set<std::string> seen_;
  int tried_ = 0;
};

std::vector<codegen::Opt> run_search(Device& dev, const UOpRef& ast, int width, const BeamInputs& in) {
  Timer timer;
  Search s(dev, ast, in);
  // Round 0: the heuristic's choice (no opts when it chooses none) gives the reference output and the start
  // of the beam. The search only extends it: on a CPU, one launch of a big kernel without opts takes seconds
  // (13 s for a 1024 matmul here), and timing every such candidate made a search take many minutes.
  std::vector<Candidate> start(1);
  start[0].opts = codegen::choose_opts(ast, dev.caps());
  s.build(start, std::numeric_limits<size_t>::max());
  if (start.empty() || !start[0].ok)
    throw CompileError(
        "BEAM", fmt::format("{}: the kernel with the heuristic's opts {} does not compile",
                            codegen::kernel_name(s.sym()),
                            codegen::opts_str(start.empty() ? std::vector<codegen::Opt>{} : start[0].opts)));
  s.time(start[0], kInf);
  if (!s.has_reference())
    throw DeviceError("BEAM", fmt::format("{}: the kernel with the heuristic's opts does not run",
                                          codegen::kernel_name(s.sym())));
  double heuristic = start[0].seconds;

  Candidate best;  // the heuristic's opts and time until a round beats them (then ok: built and timed)
  best.opts = start[0].opts, best.seconds = start[0].seconds;
  std::vector<std::vector<codegen::Opt>> beam{best.opts};
  for (int round = 0; round < kMaxRounds; round++) {
    std::vector<Candidate> cands;
    for (const std::vector<codegen::Opt>& base : beam)
      for (std::vector<codegen::Opt>& opts : codegen::search_expand(s.sym(), base, dev.caps())) {
        cands.emplace_back();
        cands.back().opts = std::move(opts);
      }
    s.build(cands, kMaxUops);
    for (Candidate& c : cands) s.time(c, std::min(best.seconds, heuristic));
    std::erase_if(cands, [](const Candidate& c) { return !std::isfinite(c.seconds); });
    if (cands.empty()) break;
    std::stable_sort(cands.begin(), cands.end(),
                     [](const Candidate& a, const Candidate& b) { return a.seconds < b.seconds; });
    beam.clear();
    for (size_t i = 0; i < cands.size() && i < static_cast<size_t>(width); i++) beam.push_back(cands[i].opts);
    if (!(cands[0].seconds < best.seconds * (1 - kMinGain))) break;
    best = std::move(cands[0]);
  }
  // A winner found through one noisy timing must beat the heuristic again, timed in turns with it.
  if (best.ok && best.opts != start[0].opts) {
    double h = heuristic, b = best.seconds;
    for (int i = 0; i < kConfirmRounds; i++) {
      s.time(start[0], kInf), h = std::min(h, start[0].seconds);
      s.time(best, kInf), b = std::min(b, best.seconds);
    }
    heuristic = h, best.seconds = b;
    if (!(b < h)) best.opts = start[0].opts, best.seconds = h;
  }
  debug_log(2, "BEAM{} {:<24} {} candidates in {:.2f} s: {:.2f} us (heuristic {:.2f} us) {}", width,
            codegen::kernel_name(s.sym()), s.tried(), timer.seconds(), best.seconds * 1e6, heuristic * 1e6,
            codegen::opts_str(best.opts));
  return best.opts;
}

}  // namespace

int beam_width() {
  int v = -1;
  try {
    v = env::BEAM.value();  // strict: "2.5" or "3x" throw
  } catch (const ValueError&) {
  }
  if (v < 0)
    throw ValueError("BEAM", fmt::format("BEAM={} is not a beam width: expected a non-negative integer",
                                         env::get("BEAM")));
  return v;
}

env::IntVar IGNORE_BEAM_CACHE{"IGNORE_BEAM_CACHE"};

std::vector<codegen::Opt> beam_search(Device& dev, const UOpRef& ast, int width, const BeamInputs& in) {
  if (width <= 0) throw ValueError("BEAM", fmt::format("beam width {} must be positive", width));
  // The kernel's identity in the cache is its source without opts.
  codegen::LinearProgram plain =
      codegen::lower_kernel(ast, dev.caps(), {.opts = std::vector<codegen::Opt>{}});
  const std::vector<const UOp*> view = plain.view();
  sdk::Blob source;
  check(dev.renderer().render(plain.name, view, source), "render", plain.name);
  std::string key = cache_key(dev, width);
  DiskCache* cache = program_disk_cache();
  if (cache != nullptr && IGNORE_BEAM_CACHE.value() <= 0) {
    try {
      if (auto bytes = cache->get(key, source.text())) {
        std::string text(reinterpret_cast<const char*>(bytes->data()), bytes->size());
        UOpRef sym = graph_rewrite(ast, symbolic(), nullptr, {.name = "initial symbolic"});
        if (auto opts = codegen::parse_opts(text); opts && codegen::opts_apply(sym, *opts, dev.caps())) {
          count_stat(Stat::beam_cache_hits);
          debug_log(2, "BEAM{} {:<24} cached {}", width, plain.name, text);
          return *opts;
        }
        debug_log(1,
                  "warning: BEAM cache entry for {} is not an opts list that applies ('{}'); searching again",
                  plain.name, text.substr(0, 80));
      }
    } catch (const std::exception& e) {
      debug_log(1, "warning: BEAM cache unreadable, searching: {}", e.what());
    }
  }
  count_stat(Stat::beam_searched);
  std::vector<codegen::Opt> opts;
  try {
    opts = run_search(dev, ast, width, in);
  } catch (const Error& e) {
    // Nothing to compare with (e.g. a buffer of unknown size): the heuristic's choice, not cached.
    debug_log(1, "warning: BEAM cannot search {}, using the heuristic: {}", plain.name, e.what());
    return codegen::choose_opts(ast, dev.caps());
  }
  if (cache != nullptr) {
    std::string text = codegen::opts_str(opts);
    try {
      cache->put(key, source.text(), std::as_bytes(std::span(text.data(), text.size())));
    } catch (const std::exception& e) {
      debug_log(1, "warning: BEAM result for {} not cached: {}", plain.name, e.what());
    }
  }
  return opts;
}

}  // namespace tg::runtime
