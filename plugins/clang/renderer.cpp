#include "plugins/clang/renderer.hpp"

#include <cstring>
#include <limits>

#include "base/dtype.hpp"

namespace tg::clangdev {

namespace {

constexpr uint64_t bit(tg::Scalar s) { return uint64_t{1} << static_cast<int>(s); }

// Widest float vector one register holds under -march=native.
uint32_t native_float_lanes() {
#if defined(__x86_64__) || defined(__i386__)
  if (__builtin_cpu_supports("avx512f")) return 16;
  if (__builtin_cpu_supports("avx")) return 8;
#endif
  return 4;  // SSE, NEON
}

}  // namespace

ClangRenderer::ClangRenderer(bool float16, unsigned threads) {
  using tg::Scalar;
  // bfloat16 and fp8 have no C arithmetic type in clang 14; codegen emulates them with integer ops.
  caps_.dtypes = bit(Scalar::BOOL) | bit(Scalar::INT8) | bit(Scalar::UINT8) | bit(Scalar::INT16) |
                 bit(Scalar::UINT16) | bit(Scalar::INT32) | bit(Scalar::UINT32) | bit(Scalar::INT64) |
                 bit(Scalar::UINT64) | bit(Scalar::FLOAT32) | bit(Scalar::FLOAT64);
  if (float16) caps_.dtypes |= bit(Scalar::FLOAT16);
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
  dialect_ = std::make_unique<tg::sdk::CDialect>(caps_);
}

tg::sdk::Status ClangRenderer::render(std::string_view name, std::span<const tg::UOp* const> uops,
                                      tg::sdk::Blob& source) noexcept {
  return dialect_->render(name, uops, source);
}

}  // namespace tg::clangdev
