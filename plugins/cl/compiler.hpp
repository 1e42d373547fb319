#pragma once
// OpenCL C -> program binary through the driver (clBuildProgram), so the core's disk cache can keep it.
// A binary is an 8-byte header ("TGOCL", format 2, flags, 0) and the device's CL_PROGRAM_BINARIES. Flag bit
// 0: the source was rendered with global ids (OpenCLRenderer::kGlobalIdsMarker), so a launch runs `global`
// work items in groups of the driver's choice.
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "plugins/cl/context.hpp"
#include "tg/sdk/compiler.hpp"

namespace tg::cldev {

class ClCompiler final : public tg::sdk::Compiler {
 public:
  explicit ClCompiler(std::shared_ptr<Context> ctx);

  // Platform, device, driver and build options: the driver's binary is only valid for exactly those.
  std::string_view cache_key() const noexcept override { return cache_key_; }
  tg::sdk::Status compile(std::string_view source, tg::sdk::Blob& binary) noexcept override;

  const std::string& build_options() const { return options_; }

 private:
  std::shared_ptr<Context> ctx_;
  std::string options_, cache_key_;
};

struct ProgramBinary {
  std::span<const std::byte> program;  // the driver's bytes
  bool global_ids = false;             // flag bit 0
};
// The parts of a binary made by ClCompiler, or nullopt when it is not one.
std::optional<ProgramBinary> program_binary(std::span<const std::byte> binary);

// The build log of program for the context's device.
std::string build_log(const Context& ctx, cl_program program);

}  // namespace tg::cldev
