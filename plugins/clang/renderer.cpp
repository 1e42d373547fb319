#include "plugins/clang/renderer.hpp"

#include <cstring>
#include <limits>
#include <string>

#include "base/dtype.hpp"
#include "base/env.hpp"

namespace tg::clangdev {

namespace {

constexpr uint64_t bit(tg::Scalar s) { return uint64_t{1} << static_cast<int>(s); }

// Widest float vector one register holds under -march=native, or fewer lanes when TG_CLANG_LANES asks (a
// narrower target's codegen checked on this machine).
uint32_t native_float_lanes() {
  uint32_t lanes = 4;  // SSE, NEON
#if defined(__x86_64__) || defined(__i386__)
  if (__builtin_cpu_supports("avx512f"))
    lanes = 16;
  else if (__builtin_cpu_supports("avx"))
    lanes = 8;
#endif
  int want = tg::env::get_int("TG_CLANG_LANES").value_or(0);
  return want == 4 || (want == 8 && lanes >= 8) ? static_cast<uint32_t>(want) : lanes;
}

// The C dialect with float16 as the storage type __fp16: C computes it in float, so each half result is
// rounded with a cast, as _Float16 (and INTERP) would. One float op rounded to half is the correctly rounded
// half op (24 >= 2 * 11 + 2 bits). Codegen never casts float64 to half directly (decomp.cpp), which clang
// would lower to a runtime call.
class HalfStorageDialect final : public tg::sdk::CDialect {
 public:
  explicit HalfStorageDialect(const tg::sdk::RendererCaps& caps) : CDialect(caps) {
    set_type_name(Scalar::FLOAT16, "__fp16");
    for (tg::Ops op : {tg::Ops::ADD, tg::Ops::MUL, tg::Ops::FDIV, tg::Ops::RECIPROCAL})
      set_op_format(op, Scalar::FLOAT16, "(({t})" + op_format(op, Scalar::FLOAT16) + ")");
    set_op_format(tg::Ops::MULACC, Scalar::FLOAT16, "(({t})(({t})({0}*{1})+{2}))");
  }
};

}  // namespace

ClangRenderer::ClangRenderer(HalfMode half, unsigned threads) {
  using tg::Scalar;
  // bfloat16 and fp8 have no C arithmetic type in clang 14; codegen emulates them with integer ops.
  caps_.emulated_dtypes = bit(Scalar::BFLOAT16) | bit(Scalar::FP8E4M3) | bit(Scalar::FP8E5M2);
  caps_.dtypes = bit(Scalar::BOOL) | bit(Scalar::INT8) | bit(Scalar::UINT8) | bit(Scalar::INT16) |
                 bit(Scalar::UINT16) | bit(Scalar::INT32) | bit(Scalar::UINT32) | bit(Scalar::INT64) |
                 bit(Scalar::UINT64) | bit(Scalar::FLOAT32) | bit(Scalar::FLOAT64) | caps_.emulated_dtypes;
  if (half != HalfMode::NONE) caps_.dtypes |= bit(Scalar::FLOAT16);
  // The basic ops plus MULACC (fused fma on float32/float64); the rest are decomposed by codegen.
  for (tg::Ops o : {tg::Ops::ADD, tg::Ops::MUL, tg::Ops::NEG, tg::Ops::IDIV, tg::Ops::MOD, tg::Ops::CMPLT,
                    tg::Ops::CMPNE, tg::Ops::AND, tg::Ops::OR, tg::Ops::XOR, tg::Ops::SHL, tg::Ops::SHR,
                    tg::Ops::WHERE, tg::Ops::FDIV, tg::Ops::RECIPROCAL, tg::Ops::MULACC})
    caps_.native_ops[static_cast<int>(o) / 64] |= uint64_t{1} << (static_cast<int>(o) % 64);
  caps_.max_vector_width = native_float_lanes();
  caps_.has_threads = true;
  caps_.thread_count = threads;
  caps_.global_max[0] = std::numeric_limits<uint32_t>::max();
  caps_.supports_float_ints = true;
  std::strncpy(caps_.dialect, "c", sizeof caps_.dialect - 1);
  if (half == HalfMode::STORAGE)
    dialect_ = std::make_unique<HalfStorageDialect>(caps_);
  else
    dialect_ = std::make_unique<tg::sdk::CDialect>(caps_);
}

// Loops stay rolled (`#pragma clang loop unroll(disable)`): codegen already unrolled what the opts asked
// for, and clang's unroller spent most of the -O2 compile time on copies of them. Elementwise kernels (the
// Fashion-MNIST step's 32: 1.25 s -> 0.06 s), and reduces with int64 indices (the step's kernels compiled
// in 0.7-0.8x the CPU time, its first step on a cold cache 2.8-3.5 s instead of 3.9-4.0; W4's matmuls ran
// as fast or faster). A reduce with an IDIV or MOD (indices that divide, which codegen's index_dtype.cpp
// keeps int32, or integer values that do) keeps the unroller, which shares that arithmetic between copies:
// W4's weight gradient ran 1.4-1.7x slower without it.
tg::sdk::Status ClangRenderer::render(std::string_view name, std::span<const tg::UOp* const> uops,
                                      tg::sdk::Blob& source) noexcept {
  tg::sdk::Status st = dialect_->render(name, uops, source);
  bool accumulates = false, divides = false;
  for (const tg::UOp* u : uops) {
    accumulates = accumulates || u->op() == tg::Ops::DEFINE_REG;
    divides = divides || u->op() == tg::Ops::IDIV || u->op() == tg::Ops::MOD;
  }
  if (!st.ok() || (accumulates && divides)) return st;
  return tg::sdk::guard([&]() -> tg::sdk::Status {
    std::string text(source.text()), out;
    for (size_t p = 0; p < text.size();) {
      size_t e = text.find('\n', p);
      std::string_view line(text.data() + p, (e == std::string::npos ? text.size() : e + 1) - p);
      size_t lead = line.find_first_not_of(' ');
      if (lead != std::string_view::npos && line.substr(lead).starts_with("for ("))
        out += std::string(lead, ' ') + "#pragma clang loop unroll(disable)\n";
      out += line;
      p += line.size();
    }
    source.assign(out);
    return {};
  });
}

}  // namespace tg::clangdev
