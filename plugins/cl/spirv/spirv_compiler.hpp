#pragma once
// OpenCL C (the dialect of tg::opencl::OpenCLRenderer) -> SPIR-V 1.2 for OpenCL environments, all in process:
// libclang-cpp compiles for spir64 to an LLVM module, the LLVM/SPIR-V translator library writes SPIR-V capped
// at 1.2 (its default, 1.4, is refused by OpenCL drivers), and SPIRV-Tools validates every module for the
// OpenCL 2.1 environment (what `spirv-val --target-env opencl2.1` runs). LEVEL_ZERO hands the words to
// zeModuleCreate; the CL plugin's SPIR-V path (DEV=CL:spirv) to clCreateProgramWithIL.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tg/sdk/compiler.hpp"
#include "tg/sdk/renderer.hpp"

namespace tg::spirv {

// SPIR-V's own limits on top of a device's caps: a function takes at most 255 parameters (OpTypeFunction),
// so 255 buffers, or 253 integers beside two buffers.
void limit_caps(tg::sdk::RendererCaps& caps);

// A copy of the module's words when bytes hold a SPIR-V module (magic number first), else nullopt.
std::optional<std::vector<uint32_t>> spirv_words(std::span<const std::byte> bytes);

// spirv-val for the OpenCL 2.1 environment: ok, or compile_error with the validator's message.
tg::sdk::Status validate(std::span<const uint32_t> words);

// spirv-dis text of a module.
tg::sdk::Status disassemble(std::span<const uint32_t> words, std::string* text);

// The whole toolchain for one kernel source; the binary is the bare SPIR-V module.
class SpirvCompiler final : public tg::sdk::Compiler {
 public:
  // fp16/fp64: the kernels may use half/double (the target has cl_khr_fp16/cl_khr_fp64).
  SpirvCompiler(bool fp16, bool fp64);

  // clang and translator versions, the flags, the SPIR-V version cap and the validator's environment.
  std::string_view cache_key() const noexcept override { return cache_key_; }
  tg::sdk::Status compile(std::string_view source, tg::sdk::Blob& binary) noexcept override;
  tg::sdk::Status disassemble(std::span<const std::byte> binary, tg::sdk::Blob& text) noexcept override;

 private:
  std::vector<std::string> cc1_;
  std::string cache_key_;
};

}  // namespace tg::spirv
