#include "plugins/clang/compiler.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <cstdio>
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

tg::sdk::Status ClangCompiler::disassemble(std::span<const std::byte> binary, tg::sdk::Blob& text) noexcept {
  return tg::sdk::guard([&]() -> tg::sdk::Status {
    auto parsed = read_binary(binary);
    if (!parsed) return {tg::sdk::Code::invalid_argument, "not a CLANG binary (no TGCL header)"};
    // The ELF goes to objdump through an inherited memfd: nothing is written to disk.
    int fd = memfd_create("tg-disasm", 0);
    if (fd < 0) return {tg::sdk::Code::runtime_error, fmt::format("memfd_create: {}", std::strerror(errno))};
    auto payload = parsed->second;
    bool written = write(fd, payload.data(), payload.size()) == static_cast<ssize_t>(payload.size());
    std::string out;
    int rc = -1;
    if (written) {
      std::string cmd = fmt::format("objdump -d --no-show-raw-insn -M intel /proc/self/fd/{} 2>&1", fd);
      if (FILE* p = popen(cmd.c_str(), "r")) {
        std::array<char, 4096> buf;
        for (size_t n; (n = std::fread(buf.data(), 1, buf.size(), p)) > 0;) out.append(buf.data(), n);
        rc = pclose(p);
      }
    }
    close(fd);
    if (rc != 0)
      return {tg::sdk::Code::unavailable, fmt::format("objdump failed (install binutils): {}", out)};
    // Drop objdump's header lines (the memfd path and format): the code starts at the first section.
    size_t at = out.find("Disassembly of section");
    text.assign(at == std::string::npos ? std::string_view(out) : std::string_view(out).substr(at));
    return {};
  });
}

}  // namespace tg::clangdev
