#include "plugins/cl/spirv_path.hpp"

#include <stdexcept>

#include <fmt/format.h>

#include "plugins/cl/compiler.hpp"
#include "plugins/cl/spirv/spirv_compiler.hpp"

namespace tg::cldev {

namespace {

class ClSpirvCompiler final : public tg::sdk::Compiler {
 public:
  explicit ClSpirvCompiler(const DeviceInfo& i) : spirv_(i.limits.fp16, i.limits.fp64) {
    cache_key_ = fmt::format("{} | OpenCL IL", spirv_.cache_key());
  }
  std::string_view cache_key() const noexcept override { return cache_key_; }
  tg::sdk::Status compile(std::string_view source, tg::sdk::Blob& binary) noexcept override {
    tg::sdk::Blob module;
    if (tg::sdk::Status s = spirv_.compile(source, module); !s.ok()) return s;
    return tg::sdk::guard([&] {
      write_program_binary(binary,
                           ProgramBinary{module.bytes(), rendered_with_global_ids(source), false, true});
    });
  }
  tg::sdk::Status disassemble(std::span<const std::byte> binary, tg::sdk::Blob& text) noexcept override {
    auto bin = program_binary(binary);
    if (!bin || !bin->spirv) return {tg::sdk::Code::invalid_argument, "[CL disassemble] not a SPIR-V binary"};
    return spirv_.disassemble(bin->program, text);
  }

 private:
  tg::spirv::SpirvCompiler spirv_;
  std::string cache_key_;
};

}  // namespace

void limit_spirv_caps(tg::sdk::RendererCaps& caps) { tg::spirv::limit_caps(caps); }

std::unique_ptr<tg::sdk::Compiler> make_spirv_compiler(const std::shared_ptr<Context>& ctx) {
  const DeviceInfo& i = ctx->info();
  if (i.il_version.find("SPIR-V_1.2") == std::string::npos)
    throw std::runtime_error(fmt::format(
        "[CL] DEV=CL:spirv needs a device that takes SPIR-V 1.2 (CL_DEVICE_IL_VERSION), but {} ({}) reports "
        "'{}'; "
        "use an OpenCL 2.1+ driver with IL support (e.g. Intel's CPU runtime, pip install intel-opencl-rt "
        "intel-cmplr-lib-rt)",
        i.device_name, i.platform_version, i.il_version));
  if (ctx->cl().clCreateProgramWithIL == nullptr)
    throw std::runtime_error(
        "[CL] DEV=CL:spirv: the OpenCL loader has no clCreateProgramWithIL (OpenCL 2.1)");
  return std::make_unique<ClSpirvCompiler>(i);
}

}  // namespace tg::cldev
