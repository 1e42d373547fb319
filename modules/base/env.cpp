#include "base/env.hpp"

#include <array>
#include <cstdlib>

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
    VarInfo{"CONV_IM2COL", "16777216",
            "largest conv window matrix (elements) kept in memory so conv and its gradients run as matmuls; "
            "0 = never",
            true},
    VarInfo{"TG_PLUGIN_PATH", "",
            "':'-separated plugin files or directories searched before the installed ones"},
    VarInfo{"TG_CACHE_DIR", "~/.cache/tinygrad.cpp",
            "where the compile and BEAM caches live (unset: $XDG_CACHE_HOME/tinygrad.cpp when that is set)"},
    VarInfo{"TG_CLANG", "clang", "clang binary the CLANG device uses when libclang-cpp is not available"},
    VarInfo{"TG_CLANG_FLAGS", "", "extra flags for the CLANG device's compiler (part of its cache key)"},
    VarInfo{"TG_CLANG_INPROCESS", "1",
            "0 = CLANG compiles with the TG_CLANG binary even if libclang-cpp is built in", true},
    VarInfo{"TG_VULKAN_STAGING", "0",
            "1 = VULKAN copies through staging buffers even when device memory is host-visible", true},
    VarInfo{"TG_LIBCUDA", "", "the NVIDIA driver library the CUDA device opens (default: libcuda.so.1)"},
    VarInfo{"TG_NVRTC", "",
            "libnvrtc the CUDA device compiles with (default: the toolkit's, found by the loader)"},
    VarInfo{"TG_NVJITLINK", "", "libnvJitLink the CUDA device assembles PTX with (default: the toolkit's)"},
    VarInfo{"TG_CUOBJDUMP", "",
            "cuobjdump the CUDA device disassembles with (default: PATH, the toolkit, the wheel)"},
    VarInfo{
        "INTERP_TC", "",
        "cuda = INTERP declares CUDA's mma.m16n8k16 tensor core (half in, float sums) and runs its WMMAs; "
        "hip_mfma / hip_wmma the same for AMD's v_mfma_f32_16x16x16f16 (CDNA) / v_wmma_f32_16x16x16_f16 "
        "(RDNA3); metal = Metal's simdgroup 8x8 matrices (half in, float sums)"},
    VarInfo{"VIZ_PORT", "8000", "port of the VIZ viewer on 127.0.0.1"},
    VarInfo{"VIZ_OUT", "", "with VIZ=1: write the trace to this file at exit instead of serving it (`tg viz FILE`)"},
    VarInfo{"TG_FASHION_MNIST", "/usr/share/datasets/fashion-mnist",
            "folder with the Fashion-MNIST idx files"},
    VarInfo{"TG_LIBZE", "", "the Level Zero loader the LEVEL_ZERO device opens (default: libze_loader.so.1)"},
    VarInfo{"TG_LIBAMDHIP64", "",
            "the HIP runtime library the HIP device opens (default: libamdhip64.so.6/.5)"},
    VarInfo{"TG_HIP_CLANG", "",
            "clang the HIP device compiles with (default: ROCm's, else clang-18 down to clang-15)"},
    VarInfo{"TG_ROCM_DEVICE_LIBS", "",
            "folder of the ROCm device libraries' bitcode (ocml.bc, ockl.bc, oclc_*.bc)"},
    VarInfo{"TG_METAL_FRAMEWORK", "/System/Library/Frameworks/Metal.framework/Metal",
            "the Metal.framework binary the METAL device opens (macOS)"},
    VarInfo{"TG_METAL_CLANG", "clang++",
            "clang the METAL compile-only target type-checks kernels with (a syntax check, not Apple's "
            "compiler)"},
    VarInfo{"QCOM_ICD", "",
            "the OpenCL library the QCOM device runs on (default: the Adreno driver; any ICD with image support)"},
};
}  // namespace

std::span<const VarInfo> all() { return kVars; }

static const VarInfo& find(std::string_view name) {
  for (const auto& v : kVars)
    if (v.name == name) return v;
  throw ValueError("env",
                   fmt::format("'{}' is not a declared environment variable (see base/env.cpp)", name));
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
  for (const VarInfo& v : kVars)
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

}  // namespace tg::env
