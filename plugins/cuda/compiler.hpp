#pragma once
// CUDA C -> PTX (NVRTC for compute_XX) -> cubin (nvJitLink for sm_XX). The PTX's ISA version is pinned to the
// oldest that the arch allows, so an older driver that must JIT it still can. A binary is "TGCUDA2\0", the
// cubin's size and the flags (8 bytes each; bit 0: the source starts with kGlobalIdMarker), the cubin, then
// the PTX: load() takes the cubin and falls back to the PTX when the driver refuses it.
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tg/sdk/compiler.hpp"

namespace tg::cuda {

// "sm_90" -> 90; nullopt for anything else.
std::optional<int> parse_arch(std::string_view arch);
// The sm_XX targets NVRTC can compile for, lowest first (empty with the reason when NVRTC is missing).
std::vector<int> supported_archs(std::string* why);

class CudaCompiler final : public tg::sdk::Compiler {
 public:
  // Throws when NVRTC is missing or cannot target sm.
  explicit CudaCompiler(int sm);

  // NVRTC and nvJitLink versions, the arch and the flags.
  std::string_view cache_key() const noexcept override { return cache_key_; }
  tg::sdk::Status compile(std::string_view source, tg::sdk::Blob& binary) noexcept override;
  // SASS of the cubin through cuobjdump (TG_CUOBJDUMP, PATH, the toolkit, the nvidia-cuda-cuobjdump wheel).
  tg::sdk::Status disassemble(std::span<const std::byte> binary, tg::sdk::Blob& text) noexcept override;

  int sm() const { return sm_; }

 private:
  int sm_;
  std::vector<std::string> options_;
  std::string cache_key_;
};

struct CudaBinary {
  std::span<const std::byte> cubin;
  std::string_view ptx;
  bool global_id = false;  // launched over blocks of kGlobalIdBlock threads (renderer.hpp)
};
// The parts of a binary made by CudaCompiler, or nullopt when it is not one.
std::optional<CudaBinary> cuda_binary(std::span<const std::byte> binary);

// PTX with its `.version` line set to the oldest ISA that sm accepts (7.8 up to sm_90), so drivers from
// CUDA 12.0 on load it. Newer archs keep NVRTC's version.
std::string pin_ptx_version(std::string ptx, int sm);

}  // namespace tg::cuda
