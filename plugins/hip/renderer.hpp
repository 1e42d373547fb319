#pragma once
// HIP C without headers, as clang compiles it for an AMD GPU: `extern "C" __attribute__((global))`
// kernels with amdgpu_flat_work_group_size, launch indices and math from the device libraries (__ockl_*,
// __ocml_* declared extern), _Float16 and ext_vector_type vectors, __attribute__((shared)) arrays with
// fence + s_barrier + fence, and the matrix cores as clang builtins: MFMA on CDNA, WMMA on RDNA3.
#include <string>

#include "plugins/hip/compiler.hpp"
#include "tg/sdk/cstyle.hpp"

namespace tg::hip {

// What an arch offers the code generator: launch limits, LDS, dtypes and its matrix core, if any.
struct ArchLimits {
  Arch arch;
  uint32_t max_threads = 1024;  // per workgroup
  uint32_t block_dims[3] = {1024, 1024, 1024};
  uint32_t grid_dims[3] = {2147483647u, 65535, 65535};
  uint32_t shared_bytes = 64 * 1024;  // LDS per workgroup
};
tg::sdk::RendererCaps hip_caps(const ArchLimits& l);

// v_mfma_f32_16x16x16f16 (CDNA: gfx908, gfx90a, gfx940): 64 lanes, four halves of A and of B and four
// floats of C per lane, in the layout of AMD's matrix instruction calculator.
tg::sdk::TensorCore mfma_16x16x16_f16();
// v_wmma_f32_16x16x16_f16 (RDNA3, wave32): eight halves of A and of B per lane (the instruction's other
// eight come from lane ^ 16), eight floats of C.
tg::sdk::TensorCore wmma_16x16x16_f16();

class HipRenderer final : public tg::sdk::CStyleRenderer {
 public:
  explicit HipRenderer(const tg::sdk::RendererCaps& caps);
  // The C-style render plus amdgpu_flat_work_group_size from the program's local sizes.
  tg::sdk::Status render(std::string_view name, std::span<const UOp* const> uops,
                         tg::sdk::Blob& source) noexcept override;

 protected:
  std::string render_float_special(DType d, double v) const override;
  std::string render_cast(DType to, const std::string& x) const override;
  std::string render_bitcast(DType to, DType from, const std::string& x) const override;
  std::string render_special(const UOp& special) const override;
  std::string render_vectorize(DType d, std::span<const std::string> elems) const override;
  std::string render_local(const UOp& def, const std::string& name) const override;
  std::string render_wmma(const UOp& wmma, const std::string& a, const std::string& b,
                          const std::string& c) const override;
  std::string barrier() const override;
  std::string render_kernel(const tg::sdk::CKernel& k) const override;
};

}  // namespace tg::hip
