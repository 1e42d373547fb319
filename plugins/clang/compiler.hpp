#pragma once
#include <memory>
#include <string>

#include "plugins/clang/toolchain.hpp"
#include "tg/sdk/compiler.hpp"

namespace tg::clangdev {

// C source -> tagged binary through one Toolchain; the cache key names compiler, flags and target CPU.
class ClangCompiler final : public tg::sdk::Compiler {
 public:
  explicit ClangCompiler(std::unique_ptr<Toolchain> toolchain);

  std::string_view cache_key() const noexcept override { return cache_key_; }
  tg::sdk::Status compile(std::string_view source, tg::sdk::Blob& binary) noexcept override;
  // objdump -d of the ELF inside the binary (binutils comes with every toolchain that builds this).
  tg::sdk::Status disassemble(std::span<const std::byte> binary, tg::sdk::Blob& text) noexcept override;

  const Toolchain& toolchain() const noexcept { return *toolchain_; }

 private:
  std::unique_ptr<Toolchain> toolchain_;
  std::string cache_key_;
};

}  // namespace tg::clangdev
