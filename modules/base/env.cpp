#include "base/env.hpp"

#include <array>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include <fmt/format.h>

#include "base/error.hpp"

namespace tg::env {

namespace {
constexpr std::array kVars = {
    VarInfo{"DEBUG", "0",
            "1 kernel count and time per realize, 2 a line per kernel (time, GFLOPS, GB/s), 3 applied opts, "
            "4 generated source, 5 kernel AST, 6 linear UOps, 7 disassembly",
            true},
    VarInfo{"BEAM", "0", "beam width for kernel optimization search; results cached on disk", true},
    VarInfo{"IGNORE_BEAM_CACHE", "0", "1 = BEAM searches again instead of reading its cached result", true},
    VarInfo{"NOOPT", "0", "1 = apply no kernel optimizations", true},
    VarInfo{"VIZ", "0", "1 = serve the graph and rewrite viewer on localhost", true},
    VarInfo{"JIT", "1",
            "0 = run jitted functions eagerly every call, 2 = replay kernel by kernel, not as a device graph",
            true},
    VarInfo{"DEV", "", "device to use: NAME[:index][:renderer[:arch]]; NAME=1 (e.g. CLANG=1) is a shorthand"},
    VarInfo{"SPEC", "",
            "1 = check each stage's graph against the IR spec, 0 = never (default: on in debug builds)",
            true},
    VarInfo{"CACHELEVEL", "1", "0 = no on-disk cache of compiled programs and BEAM results", true},
    VarInfo{
        "SCHEDULE_CACHE", "16",
        "how many graphs' schedules are remembered (the same graph again is not scheduled again); 0 = off",
        true},
    VarInfo{
        "TG_BUILD_THREADS", "0",
        "threads that lower and compile a realize's new kernels, the realizing one included; 0 = one a core",
        true},
    VarInfo{"CONV_IM2COL", "16777216",
            "largest conv window matrix (elements) kept in memory so conv and its gradients run as matmuls; "
            "0 = never",
            true},
    VarInfo{"TG_PLUGIN_PATH", "",
            "':'-separated plugin files or directories searched before the installed ones"},
    VarInfo{"TG_CACHE_DIR", "~/.cache/tinygrad.cpp",
            "where the compile and BEAM caches live (unset: $XDG_CACHE_HOME/tinygrad.cpp when that is set)"},
    VarInfo{
        "INTERP_TC", "",
        "cuda = INTERP declares CUDA's mma.m16n8k16 tensor core (half in, float sums) and runs its WMMAs; "
        "hip_mfma / hip_wmma the same for AMD's v_mfma_f32_16x16x16f16 (CDNA) / v_wmma_f32_16x16x16_f16 "
        "(RDNA3); metal = Metal's simdgroup 8x8 matrices (half in, float sums)"},
    VarInfo{"VIZ_PORT", "8000", "port of the VIZ viewer on 127.0.0.1"},
    VarInfo{"VIZ_OUT", "",
            "with VIZ=1: write the trace to this file at exit instead of serving it (`tg viz FILE`)"},
    VarInfo{"TG_FASHION_MNIST", "/usr/share/datasets/fashion-mnist",
            "folder with the Fashion-MNIST idx files"},
    VarInfo{
        "TG_DIST_TIMEOUT", "300",
        "seconds a collective of tg::dist waits for the other ranks before it fails and the job is aborted",
        true},
};

// What plugins declared, in order (plugins are never unloaded, so the strings stay valid).
std::mutex declared_mutex;
std::vector<VarInfo> declared;

std::optional<VarInfo> lookup(std::string_view name) {
  for (const auto& v : kVars)
    if (v.name == name) return v;
  std::lock_guard lock(declared_mutex);
  for (const auto& v : declared)
    if (v.name == name) return v;
  return std::nullopt;
}
}  // namespace

std::vector<VarInfo> all() {
  std::vector<VarInfo> out(kVars.begin(), kVars.end());
  std::lock_guard lock(declared_mutex);
  out.insert(out.end(), declared.begin(), declared.end());
  return out;
}

void declare(std::string_view owner, std::span<const VarInfo> vars) {
  for (VarInfo v : vars) {
    v.owner = owner;
    if (std::optional<VarInfo> had = lookup(v.name)) {
      if (had->owner == v.owner && had->default_value == v.default_value && had->meaning == v.meaning &&
          had->integer == v.integer)
        continue;  // the same plugin loaded again (from another folder)
      throw ValueError("env", fmt::format("{} declares {}, already declared by {}", owner, v.name,
                                          had->owner.empty() ? "the core" : had->owner));
    }
    std::lock_guard lock(declared_mutex);
    declared.push_back(v);
  }
}

Declare::Declare(std::string_view owner, std::initializer_list<VarInfo> vars) noexcept {
  try {
    declare(owner, vars);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "warning: %s\n", e.what());
  }
}

static VarInfo find(std::string_view name) {
  if (std::optional<VarInfo> v = lookup(name)) return *v;
  throw ValueError("env", fmt::format("'{}' is not a declared environment variable (see base/env.cpp, or a "
                                      "plugin that is not loaded)",
                                      name));
}

std::optional<std::string> raw(std::string_view name) {
  find(name);
  const char* v = std::getenv(std::string(name).c_str());
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

std::string get(std::string_view name) {
  auto v = raw(name);
  return v ? *v : std::string(find(name).default_value);
}

std::optional<int> get_int(std::string_view name) {
  std::string s = get(name);
  if (s.empty()) return std::nullopt;
  size_t used = 0;
  int v = 0;
  try {
    v = std::stoi(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != s.size())  // "x", "2.5" or "1x" is a typo, not 0, 2 or 1
    throw ValueError("env", fmt::format("{}='{}' is not an integer", name, s));
  return v;
}

void check_all() {
  for (const VarInfo& v : all())
    if (v.integer) get_int(v.name);
}

int IntVar::value() const {
  if (!loaded_.load(std::memory_order_acquire)) {
    value_.store(get_int(name_).value_or(0));
    loaded_.store(true, std::memory_order_release);
  }
  return value_.load(std::memory_order_relaxed);
}

IntVar DEBUG{"DEBUG"};
IntVar BEAM{"BEAM"};
IntVar NOOPT{"NOOPT"};
IntVar VIZ{"VIZ"};
IntVar JIT{"JIT"};
IntVar CACHELEVEL{"CACHELEVEL"};
IntVar CONV_IM2COL{"CONV_IM2COL"};
IntVar SCHEDULE_CACHE{"SCHEDULE_CACHE"};
IntVar BUILD_THREADS{"TG_BUILD_THREADS"};

}  // namespace tg::env
