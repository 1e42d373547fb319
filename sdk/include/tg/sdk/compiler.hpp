#pragma once
#include <span>
#include <string_view>

#include "tg/sdk/status.hpp"

namespace tg::sdk {

// Source -> binary. The core caches binaries in memory and on disk keyed by
// hash(source) + cache_key(), so cache_key must change whenever the output could.
class Compiler {
 public:
  Compiler() = default;
  Compiler(const Compiler&) = delete;
  Compiler& operator=(const Compiler&) = delete;
  virtual ~Compiler() = default;

  // --- required ---
  // Compiler id, version, flags and target arch, e.g. "clang-14.0.6 -O2 -march=znver3".
  virtual std::string_view cache_key() const noexcept = 0;
  // On failure return Code::compile_error with the compiler's log. May run on several threads at once.
  virtual Status compile(std::string_view source, Blob& binary) noexcept = 0;

  // --- optional ---
  virtual Status disassemble(std::span<const std::byte> binary, Blob& text) noexcept {
    (void)binary, (void)text;
    return unsupported("disassemble");
  }
};

}  // namespace tg::sdk
