#pragma once
// GLSL -> SPIR-V with shaderc (linked: it is a compiler library, not a driver). The binary is the SPIR-V
// module's words as bytes.
#include <cstdint>
#include <span>
#include <string>

#include "tg/sdk/compiler.hpp"

namespace tg::vulkan {

// SPIRV-Tools' validator on a module for Vulkan 1.1: empty when valid, else its message. Loading checks
// this because a module is only handed to the driver when a pipeline is made, at the first launch, too
// late for the caller to compile it again.
std::string spirv_error(std::span<const uint32_t> words);

class ShadercCompiler final : public tg::sdk::Compiler {
 public:
  // device: name and driver version of the device the SPIR-V is for (part of the cache key).
  explicit ShadercCompiler(const std::string& device);
  ~ShadercCompiler() override;

  std::string_view cache_key() const noexcept override { return cache_key_; }
  tg::sdk::Status compile(std::string_view source, tg::sdk::Blob& binary) noexcept override;
  // SPIR-V assembly, as spirv-dis prints it (SPIRV-Tools' disassembler, linked with shaderc).
  tg::sdk::Status disassemble(std::span<const std::byte> binary, tg::sdk::Blob& text) noexcept override;

 private:
  void* compiler_ = nullptr;  // shaderc_compiler_t
  std::string cache_key_;
};

}  // namespace tg::vulkan
