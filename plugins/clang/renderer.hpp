#pragma once
// The CLANG kernel ABI, which the C renderer must emit:
//
//   void NAME(void* const* bufs, const long long* vals, int core_id)
//
// bufs are the buffer arguments in kernel-argument order (host pointers, 64-byte aligned unless a view),
// vals the integer (symbolic) arguments in order. launch() calls NAME once per core_id in
// [0, global[0]), concurrently on a thread pool; each call does its 1/global[0] share of the work.
// Kernels are self-contained C11 (no #include); math functions (sqrtf, expf, ...) may be declared and
// called and resolve from libm, or used as __builtin_sqrtf etc. Vectors: __attribute__((ext_vector_type(n))).
#include <string_view>

#include <memory>

#include "tg/sdk/cstyle.hpp"
#include "tg/sdk/renderer.hpp"

namespace tg::clangdev {

// How float16 compiles here: _Float16 arithmetic (clang 14 on x86 needs AVX512-FP16), the storage type
// __fp16 (arithmetic in float, each result rounded back to half by a cast), or not at all.
enum class HalfMode { NONE, NATIVE, STORAGE };

class ClangRenderer final : public tg::sdk::Renderer {
 public:
  ClangRenderer(HalfMode half, unsigned threads);

  const tg::sdk::RendererCaps& caps() const noexcept override { return caps_; }
  tg::sdk::Status render(std::string_view name, std::span<const tg::UOp* const> uops,
                         tg::sdk::Blob& source) noexcept override;

 private:
  tg::sdk::RendererCaps caps_;
  std::unique_ptr<tg::sdk::CDialect> dialect_;  // the C renderer base emits exactly this calling convention
};

}  // namespace tg::clangdev
