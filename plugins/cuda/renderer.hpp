#pragma once
// CUDA C for NVRTC (no CUDA runtime needed to render): one `extern "C" __global__` kernel per program,
// blockIdx/threadIdx launch indices, __shared__ arrays with __syncthreads, half and bfloat16 through
// cuda_fp16.h / cuda_bf16.h (included only when used, computed in float), and the mma.sync.m16n8k16 tensor
// cores as inline PTX.
#include <string>

#include "tg/sdk/cstyle.hpp"

namespace tg::cuda {

// What a compute capability offers the code generator: launch limits, shared memory, dtypes and, from
// sm_80 on, the f16 and bf16 tensor cores. sm is 10 * major + minor (80 for sm_80).
struct ArchLimits {
  int sm = 80;
  uint32_t max_threads = 1024;  // per block
  uint32_t block_dims[3] = {1024, 1024, 64};
  uint32_t grid_dims[3] = {2147483647u, 65535, 65535};
  uint32_t shared_bytes = 48 * 1024;  // static __shared__ per block
};
tg::sdk::RendererCaps cuda_caps(const ArchLimits& l);

// The warp-wide mma.sync.aligned.m16n8k16 with inputs of `in` (FLOAT16 or BFLOAT16) and float sums, in the
// fragment layout of the PTX ISA: lane = 4 * groupID + threadID_in_group.
tg::sdk::TensorCore mma_m16n8k16(Scalar in);

// The first line of a kernel whose gidx0 is a global index (blockIdx.x * blockDim.x + threadIdx.x): it has
// no local ids or barriers, and is launched over blocks of kGlobalIdBlock threads instead of blocks of one.
inline constexpr const char* kGlobalIdMarker = "// tg: gidx0 is a global id\n";
inline constexpr uint32_t kGlobalIdBlock = 128;

class CudaRenderer final : public tg::sdk::CStyleRenderer {
 public:
  explicit CudaRenderer(const tg::sdk::RendererCaps& caps);
  // The C-style render plus __launch_bounds__ from the program's local sizes.
  tg::sdk::Status render(std::string_view name, std::span<const UOp* const> uops,
                         tg::sdk::Blob& source) noexcept override;

 protected:
  std::string type_name(DType d) const override;
  std::string render_float_special(DType d, double v) const override;
  std::string render_cast(DType to, const std::string& x) const override;
  std::string render_bitcast(DType to, DType from, const std::string& x) const override;
  std::string render_special(const UOp& special) const override;
  std::string render_vectorize(DType d, std::span<const std::string> elems) const override;
  std::string render_gep(DType vec, const std::string& x, int64_t lane) const override;
  std::string render_load(const UOp& buf, const std::string& b, const std::string& off,
                          DType value) const override;
  std::string render_store(const UOp& buf, const std::string& b, const std::string& off, const std::string& x,
                           DType value) const override;
  std::string render_local(const UOp& def, const std::string& name) const override;
  std::string render_wmma(const UOp& wmma, const std::string& a, const std::string& b,
                          const std::string& c) const override;
  std::string barrier() const override;
  std::string render_kernel(const tg::sdk::CKernel& k) const override;
};

}  // namespace tg::cuda
