#pragma once
// The two ways the CLANG device turns C into running code: libclang-cpp + LLVM ORC in process
// (libclang.cpp), or the clang binary + dlopen (binary.cpp). Both sit behind Toolchain.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tg/sdk/status.hpp"

namespace tg::clangdev {

// The kernel ABI every rendered kernel follows (see renderer.hpp).
using KernelFn = void (*)(void* const* bufs, const long long* vals, int core_id);

// Every binary starts with an 8-byte header: "TGCL", a format byte, three zero bytes.
enum class BinaryFormat : uint8_t {
  elf_object = 1,  // relocatable ELF from libclang-cpp, linked in process by LLVM ORC
  elf_shared = 2,  // shared object from the clang binary, loaded with dlopen from a memfd
};
inline constexpr size_t kHeaderSize = 8;
void write_binary(tg::sdk::Blob& out, BinaryFormat format, std::span<const std::byte> payload);
// The format and payload of a binary, or nullopt when the header is not ours.
std::optional<std::pair<BinaryFormat, std::span<const std::byte>>> read_binary(
    std::span<const std::byte> bin);

// Loaded machine code; destroying it unloads the code.
class LoadedKernel {
 public:
  LoadedKernel() = default;
  LoadedKernel(const LoadedKernel&) = delete;
  LoadedKernel& operator=(const LoadedKernel&) = delete;
  virtual ~LoadedKernel() = default;
  virtual KernelFn entry() const noexcept = 0;
};

class Toolchain {
 public:
  Toolchain() = default;
  Toolchain(const Toolchain&) = delete;
  Toolchain& operator=(const Toolchain&) = delete;
  virtual ~Toolchain() = default;

  virtual std::string_view id() const noexcept = 0;          // "clang-14.0.6 (libclang-cpp)"
  virtual std::string_view target_cpu() const noexcept = 0;  // what -march resolved to, e.g. "skylake-avx512"
  virtual std::string_view target_features() const noexcept = 0;  // "+avx2,+fma,-xop,..."
  virtual tg::sdk::Status compile(std::string_view source, tg::sdk::Blob& binary) = 0;
};

// Flags both paths pass to the clang driver, before TG_CLANG_FLAGS. Documented in README.md.
std::vector<std::string> base_flags();
// TG_CLANG_FLAGS split on whitespace (no quoting).
std::vector<std::string> user_flags();

// In process through libclang-cpp; nullptr when this build has no libclang-cpp.
std::unique_ptr<Toolchain> make_libclang_toolchain();
// Through the clang binary named by TG_CLANG; throws DeviceError when it cannot be run.
std::unique_ptr<Toolchain> make_binary_toolchain();
// True when this build links libclang-cpp and LLVM ORC.
bool libclang_built() noexcept;
// True when `exe` names an executable file (absolute or found in PATH). Runs nothing.
bool executable_exists(const std::string& exe);

// Links a binary and finds kernel `name`: elf_object needs libclang_built(), elf_shared needs dlopen.
tg::sdk::Status load_object(std::string_view name, std::span<const std::byte> object,
                            std::unique_ptr<LoadedKernel>* out);
tg::sdk::Status load_shared(std::string_view name, std::span<const std::byte> shared,
                            std::unique_ptr<LoadedKernel>* out);

}  // namespace tg::clangdev
