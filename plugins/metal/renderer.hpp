#pragma once
// Metal Shading Language: one `kernel` per program with `device` / `constant` / `threadgroup` address
// spaces, launch indices from [[threadgroup_position_in_grid]] / [[thread_position_in_threadgroup]],
// half natively, bfloat (Metal 3.1) stored and computed in float, precise:: math, as_type bitcasts and
// the simdgroup 8x8 matrices as tensor cores. Rendering needs no Apple SDK.
#include <string>

#include "tg/sdk/cstyle.hpp"

namespace tg::metal {

// What a Metal GPU offers the code generator. version is the Metal language version times 10 (31 for
// Metal 3.1, the first with bfloat); simdgroup_matrix says the GPU has simdgroup matrices (Apple7+).
struct MetalLimits {
  int version = 30;
  bool simdgroup_matrix = true;
  uint32_t max_threads = 1024;             // per threadgroup
  uint32_t threadgroup_bytes = 32 * 1024;  // threadgroup memory per threadgroup
};
tg::sdk::RendererCaps metal_caps(const MetalLimits& l);

// simdgroup_multiply_accumulate on 8x8 tiles over 32 threads, A and B of `in`, C and D float. Each thread
// holds two neighbouring columns of one row: row = 4*lane[4] + 2*lane[2] + lane[1], column =
// 4*lane[3] + 2*lane[0] + element (the same for A, B and C).
tg::sdk::TensorCore simdgroup_8x8(Scalar in);

class MetalRenderer final : public tg::sdk::CStyleRenderer {
 public:
  explicit MetalRenderer(const tg::sdk::RendererCaps& caps);

 protected:
  std::string type_name(DType d) const override;
  std::string render_const(const UOp& c) const override;
  std::string render_cast(DType to, const std::string& x) const override;
  std::string render_bitcast(DType to, DType from, const std::string& x) const override;
  std::string render_special(const UOp& special) const override;
  std::string render_vectorize(DType d, std::span<const std::string> elems) const override;
  std::string render_gep(DType vec, const std::string& x, int64_t lane) const override;
  std::string render_local(const UOp& def, const std::string& name) const override;
  std::string render_wmma(const UOp& wmma, const std::string& a, const std::string& b,
                          const std::string& c) const override;
  std::string barrier() const override;
  std::string render_kernel(const tg::sdk::CKernel& k) const override;
};

}  // namespace tg::metal
