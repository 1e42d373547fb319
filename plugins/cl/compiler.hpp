#pragma once
// OpenCL C -> program binary through the driver (clBuildProgram), so the core's disk cache can keep it.
// A binary is an 8-byte header ("TGOCL", format 2, flags, 0) and the device's CL_PROGRAM_BINARIES. Flag bit
// 0: the source was rendered with global ids (OpenCLRenderer::kGlobalIdsMarker), so a launch runs `global`
// work items in groups of the driver's choice. Flag bit 1: the driver's binary was incomplete (see
// incomplete_driver_binary), so the payload is the OpenCL C source and load() builds it again. Flag bit 2:
// the payload is a SPIR-V module (the SPIR-V path, DEV=CL:spirv) that load() hands to clCreateProgramWithIL.
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "plugins/cl/context.hpp"
#include "tg/sdk/compiler.hpp"

namespace tg::cldev {

class ClCompiler final : public tg::sdk::Compiler {
 public:
  explicit ClCompiler(std::shared_ptr<Context> ctx);

  // Platform, device, driver and build options: the driver's binary is only valid for exactly those.
  std::string_view cache_key() const noexcept override { return cache_key_; }
  tg::sdk::Status compile(std::string_view source, tg::sdk::Blob& binary) noexcept override;
  // OpenCL has no disassembly API and the driver's binary is its own format: says so (DEBUG=7, VIZ).
  tg::sdk::Status disassemble(std::span<const std::byte> binary, tg::sdk::Blob& text) noexcept override;

  const std::string& build_options() const { return options_; }

 private:
  std::shared_ptr<Context> ctx_;
  std::string options_, cache_key_;
};

struct ProgramBinary {
  std::span<const std::byte> program;  // the driver's bytes, or the OpenCL C source when `source`
  bool global_ids = false;             // flag bit 0
  bool source = false;                 // flag bit 1
  bool spirv = false;                  // flag bit 2
};
// The parts of a binary made by ClCompiler, or nullopt when it is not one.
std::optional<ProgramBinary> program_binary(std::span<const std::byte> binary);

// Header + payload, the inverse of program_binary.
void write_program_binary(tg::sdk::Blob& out, const ProgramBinary& parts);

// Rendered with global ids (OpenCLRenderer::kGlobalIdsMarker): the launch runs exactly `global` work items.
bool rendered_with_global_ids(std::string_view source);

// Why the driver's binary `program` cannot be handed to clCreateProgramWithBinary, or "" when it can: it is
// empty, or it is a PoCL binary without kernels or without its program.bc (PoCL aborts the process on
// those instead of returning an error).
std::string incomplete_driver_binary(std::span<const std::byte> program);

// clCreateProgramWithSource + clBuildProgram with `options` for the context's device; a build that defines
// no kernel is a compile_error. Errors start with `what` ("[CL compile]"). The caller releases *out.
tg::sdk::Status build_source(const Context& ctx, std::string_view source, const std::string& options,
                             std::string_view what, cl_program* out);

// clCreateProgramWithIL + clBuildProgram of a SPIR-V module, as build_source does for source.
tg::sdk::Status build_il(const Context& ctx, std::span<const std::byte> spirv, const std::string& options,
                         std::string_view what, cl_program* out);

// The build log of program for the context's device.
std::string build_log(const Context& ctx, cl_program program);

}  // namespace tg::cldev
