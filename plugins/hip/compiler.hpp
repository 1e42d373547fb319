#pragma once
// HIP C -> an AMD GPU code object (ELF, code object v4) by clang's AMDGPU backend run as a child process
// (`-x hip --cuda-device-only --no-gpu-bundle-output`, so no offload bundle to unpack), linked with the
// ROCm device libraries' bitcode (ocml, ockl and the oclc controls for the arch). A binary is the ELF as
// hipModuleLoadData takes it.
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tg/sdk/compiler.hpp"

namespace tg::hip {

struct Arch {
  std::string name;     // "gfx90a"
  int isa_version = 0;  // the device libraries' __oclc_ISA_version: 9010 for gfx90a, 11000 for gfx1100
  bool wave64 = false;  // GCN and CDNA (gfx9) run 64 lanes a wave, RDNA (gfx10 on) 32
};

// "gfx90a" -> its Arch; nullopt for a name that is not gfx<major><minor><stepping>.
std::optional<Arch> parse_arch(std::string_view name);

// The toolchain found on this machine: a clang with the AMDGPU backend and the device libraries.
struct Toolchain {
  std::string clang, objdump, llvm_as, llvm_dis;  // the llvm tools from clang's own bin folder
  std::string version;                            // clang's first --version line
  std::string device_libs;                        // the folder with ocml.bc, ockl.bc, oclc_*.bc
};
// Found once per process (TG_HIP_CLANG, TG_ROCM_DEVICE_LIBS, else ROCm's and Debian's places); null with
// what is missing and how to install it.
const Toolchain* toolchain(std::string* why);

// The gfx targets this toolchain compiles for, gfx9 on (empty with the reason when it is missing).
std::vector<std::string> supported_archs(std::string* why);

class HipCompiler final : public tg::sdk::Compiler {
 public:
  // Throws when the toolchain is missing or arch is not one of its targets.
  explicit HipCompiler(const Arch& arch);

  // clang's version, the arch and the flags.
  std::string_view cache_key() const noexcept override { return cache_key_; }
  tg::sdk::Status compile(std::string_view source, tg::sdk::Blob& binary) noexcept override;
  // The code object's ISA through llvm-objdump.
  tg::sdk::Status disassemble(std::span<const std::byte> binary, tg::sdk::Blob& text) noexcept override;

  const Arch& arch() const { return arch_; }

 private:
  Arch arch_;
  std::vector<std::string> args_;  // clang's arguments, less the input and output files
  std::string cache_key_;
};

}  // namespace tg::hip
