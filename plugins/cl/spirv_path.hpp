#pragma once
// The CL plugin's SPIR-V path (DEV=CL:spirv): kernels are compiled to SPIR-V in process by the toolchain
// LEVEL_ZERO uses (spirv/), and the driver gets each module through clCreateProgramWithIL, so the SPIR-V
// LEVEL_ZERO would hand to zeModuleCreate runs here on an OpenCL driver that takes IL.
#include <memory>

#include "plugins/cl/context.hpp"
#include "tg/sdk/compiler.hpp"
#include "tg/sdk/renderer.hpp"

namespace tg::cldev {

// The SPIR-V compiler for the context's device. Its binaries are ProgramBinary with the spirv flag. Throws
// when the device takes no SPIR-V 1.2 (CL_DEVICE_IL_VERSION) or this build has no SPIR-V toolchain.
std::unique_ptr<tg::sdk::Compiler> make_spirv_compiler(const std::shared_ptr<Context>& ctx);

// SPIR-V's own limits on the caps (at most 255 kernel parameters).
void limit_spirv_caps(tg::sdk::RendererCaps& caps);

}  // namespace tg::cldev
