// Built instead of spirv_path.cpp when the SPIR-V toolchain (spirv/meson.build) was not found.
#include <stdexcept>

#include "plugins/cl/spirv_path.hpp"

namespace tg::cldev {

void limit_spirv_caps(tg::sdk::RendererCaps&) {}

std::unique_ptr<tg::sdk::Compiler> make_spirv_compiler(const std::shared_ptr<Context>&) {
  throw std::runtime_error(
      "[CL] DEV=CL:spirv: this CL plugin was built without the SPIR-V toolchain (" TG_SPIRV_WHY ")");
}

}  // namespace tg::cldev
