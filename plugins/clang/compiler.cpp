#include "plugins/clang/compiler.hpp"

#include <array>
#include <cstring>
#include <sstream>

#include <fmt/format.h>

#include "base/env.hpp"
#include "base/hash.hpp"

namespace tg::clangdev {

namespace {
constexpr std::array<char, 4> kMagic{'T', 'G', 'C', 'L'};
}

void write_binary(tg::sdk::Blob& out, BinaryFormat format, std::span<const std::byte> payload) {
  out.resize(0);
  auto dst = out.resize(kHeaderSize + payload.size());  // resize zero-fills the header's spare bytes
  std::memcpy(dst.data(), kMagic.data(), kMagic.size());
  dst[4] = static_cast<std::byte>(format);
  if (!payload.empty()) std::memcpy(dst.data() + kHeaderSize, payload.data(), payload.size());
}

std::optional<std::pair<BinaryFormat, std::span<const std::byte>>> read_binary(
    std::span<const std::byte> bin) {
  if (bin.size() <= kHeaderSize || std::memcmp(bin.data(), kMagic.data(), kMagic.size()) != 0)
    return std::nullopt;
  auto format = static_cast<BinaryFormat>(bin[4]);
  if (format != BinaryFormat::elf_object && format != BinaryFormat::elf_shared) return std::nullopt;
  return std::pair{format, bin.subspan(kHeaderSize)};
}

// -ffp-contract=off: a*b+c stays two roundings, as in the reference (INTERP) and on every vector width.
// -fwrapv: signed overflow wraps, as INTERP defines it. -fno-math-errno: sqrtf becomes one instruction.
// -nostdinc: kernels are self-contained, no headers. -mprefer-vector-width=512: on AVX-512 the vectorizers
// use the whole register (clang defaults to 256 there); a CPU without it is unaffected.
std::vector<std::string> base_flags() {
  return {"-O2",      "-march=native",   "-mprefer-vector-width=512", "-fPIC", "-ffp-contract=off",
          "-fwrapv", "-fno-math-errno", "-nostdinc"};
}

std::vector<std::string> user_flags() {
  std::vector<std::string> out;
  std::istringstream in(tg::env::get("TG_CLANG_FLAGS"));
  for (std::string f; in >> f;) out.push_back(f);
  return out;
}

ClangCompiler::ClangCompiler(std::unique_ptr<Toolchain> toolchain) : toolchain_(std::move(toolchain)) {
  std::string flags;
  for (const auto& f : base_flags()) flags += " " + f;
  for (const auto& f : user_flags()) flags += " " + f;
  // The feature list is long; its hash still changes the key when e.g. a VM hides AVX-512.
  cache_key_ = fmt::format("{}{} cpu={} features={:016x}", toolchain_->id(), flags, toolchain_->target_cpu(),
                           tg::hash_str(toolchain_->target_features()));
}

tg::sdk::Status ClangCompiler::compile(std::string_view source, tg::sdk::Blob& binary) noexcept {
  return tg::sdk::guard([&] { return toolchain_->compile(source, binary); });
}

}  // namespace tg::clangdev
