// shaderc GLSL -> SPIR-V (compiler.hpp).
#include "plugins/vulkan/compiler.hpp"

#include <shaderc/shaderc.h>
#include <spirv-tools/libspirv.h>

#include <cstring>
#include <memory>
#include <vector>

#include <fmt/format.h>

#include "base/error.hpp"

namespace tg::vulkan {

using tg::sdk::Code;
using tg::sdk::Status;

namespace {
struct OptionsDeleter {
  void operator()(shaderc_compile_options* o) const { shaderc_compile_options_release(o); }
};
struct ResultDeleter {
  void operator()(shaderc_compilation_result* r) const { shaderc_result_release(r); }
};
}  // namespace

ShadercCompiler::ShadercCompiler(const std::string& device) : compiler_(shaderc_compiler_initialize()) {
  if (compiler_ == nullptr) throw DeviceError("VULKAN", "shaderc_compiler_initialize failed");
  unsigned spv = 0, rev = 0;
  shaderc_get_spv_version(&spv, &rev);
  // Vulkan 1.1 / SPIR-V 1.3 is what every device this plugin accepts consumes.
  cache_key_ = fmt::format("shaderc {} (spv {}.{}) glsl450 core vulkan1.1 spirv1.3 -O | {}", TG_SHADERC_VERSION,
                           spv >> 16, (spv >> 8) & 0xff, device);
}

ShadercCompiler::~ShadercCompiler() { shaderc_compiler_release(static_cast<shaderc_compiler_t>(compiler_)); }

Status ShadercCompiler::compile(std::string_view source, tg::sdk::Blob& binary) noexcept {
  return tg::sdk::guard([&]() -> Status {
    std::unique_ptr<shaderc_compile_options, OptionsDeleter> opts(shaderc_compile_options_initialize());
    shaderc_compile_options_set_target_env(opts.get(), shaderc_target_env_vulkan, shaderc_env_version_vulkan_1_1);
    shaderc_compile_options_set_target_spirv(opts.get(), shaderc_spirv_version_1_3);
    shaderc_compile_options_set_optimization_level(opts.get(), shaderc_optimization_level_performance);
    // Every source is GLSL 4.50; without this a source lacking #version makes glslang print its built-ins.
    shaderc_compile_options_set_forced_version_profile(opts.get(), 450, shaderc_profile_core);
    std::unique_ptr<shaderc_compilation_result, ResultDeleter> res(
        shaderc_compile_into_spv(static_cast<shaderc_compiler_t>(compiler_), source.data(), source.size(),
                                 shaderc_compute_shader, "kernel.comp", "main", opts.get()));
    if (res == nullptr) return {Code::out_of_memory, "shaderc returned no result"};
    if (shaderc_result_get_compilation_status(res.get()) != shaderc_compilation_status_success)
      return {Code::compile_error, shaderc_result_get_error_message(res.get())};
    const char* bytes = shaderc_result_get_bytes(res.get());
    binary.assign(std::as_bytes(std::span(bytes, shaderc_result_get_length(res.get()))));
    return {};
  });
}

std::string spirv_error(std::span<const uint32_t> words) {
  spv_context ctx = spvContextCreate(SPV_ENV_VULKAN_1_1);
  spv_const_binary_t bin{words.data(), words.size()};
  spv_diagnostic diag = nullptr;
  spv_result_t rc = spvValidate(ctx, &bin, &diag);
  std::string error = rc == SPV_SUCCESS ? "" : diag != nullptr ? diag->error : fmt::format("error {}", int(rc));
  spvDiagnosticDestroy(diag), spvContextDestroy(ctx);
  return error;
}

Status ShadercCompiler::disassemble(std::span<const std::byte> binary, tg::sdk::Blob& text) noexcept {
  return tg::sdk::guard([&]() -> Status {
    if (binary.size() % 4 != 0) return {Code::invalid_argument, "SPIR-V is a whole number of 32-bit words"};
    std::vector<uint32_t> words(binary.size() / 4);
    std::memcpy(words.data(), binary.data(), binary.size());
    spv_context ctx = spvContextCreate(SPV_ENV_VULKAN_1_1);
    spv_text out = nullptr;
    spv_diagnostic diag = nullptr;
    spv_result_t rc = spvBinaryToText(ctx, words.data(), words.size(),
                                      SPV_BINARY_TO_TEXT_OPTION_INDENT | SPV_BINARY_TO_TEXT_OPTION_FRIENDLY_NAMES,
                                      &out, &diag);
    Status st;
    if (rc == SPV_SUCCESS)
      text.assign(std::string_view(out->str, out->length));
    else
      st = {Code::invalid_argument, fmt::format("not valid SPIR-V: {}", diag ? diag->error : "unknown error")};
    spvTextDestroy(out), spvDiagnosticDestroy(diag), spvContextDestroy(ctx);
    return st;
  });
}

}  // namespace tg::vulkan
