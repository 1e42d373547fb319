#pragma once
// The compile-only METAL target's compiler: clang type-checks each kernel's MSL as C++17 against the
// project's Metal stdlib shim (shim/metal_stdlib). This is a syntax check, not Apple's compiler: it
// catches what does not parse or type-check as MSL, never what the Metal compiler alone would reject.
// The "binary" is the checked source, as on a Mac, where the Metal runtime compiles it at load time.
#include <filesystem>
#include <string>

#include "tg/sdk/compiler.hpp"

namespace tg::metal {

class ShimSyntaxCompiler final : public tg::sdk::Compiler {
 public:
  // Writes the shim into a private temporary folder; throws when that fails.
  ShimSyntaxCompiler();
  ~ShimSyntaxCompiler() override;

  // The clang binary (TG_METAL_CLANG), its version, the flags and the shim's hash.
  std::string_view cache_key() const noexcept override { return cache_key_; }
  tg::sdk::Status compile(std::string_view source, tg::sdk::Blob& binary) noexcept override;

 private:
  std::string clang_;
  std::filesystem::path dir_;
  std::string cache_key_;
};

// The clang flags of the syntax check (after the binary, before -I and the file).
const char* shim_flags();

}  // namespace tg::metal
