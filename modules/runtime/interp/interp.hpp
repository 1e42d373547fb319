#pragma once
// INTERP: the built-in reference device. Its renderer writes the linear program as text
// (interp/program.hpp), its compiler checks that text, and its programs run it uop by uop over host
// memory with the exact semantics of interp/values.hpp. Slow, simple, and what every device is
// compared against.
#include "tg/sdk/device.hpp"
#include "tg/sdk/plugin.hpp"

namespace tg::runtime::interp {

// Every dtype and op natively, workgroups (gidx/lidx, run in lock-step), no threads.
sdk::RendererCaps interp_caps();
// CUDA's mma.sync.m16n8k16 with half inputs and float accumulators (the PTX ISA's fragment layouts): the
// tensor core INTERP declares with INTERP_TC=cuda, to try the TC opt without the hardware.
sdk::TensorCore cuda_mma_m16n8k16();
// AMD's v_mfma_f32_16x16x16f16 (CDNA, 64 lanes) and v_wmma_f32_16x16x16_f16 (RDNA3, 32 lanes) with half
// inputs and float sums, in the layouts the HIP plugin declares: INTERP_TC=hip_mfma and INTERP_TC=hip_wmma.
sdk::TensorCore hip_mfma_16x16x16();
sdk::TensorCore hip_wmma_16x16x16();
// Metal's simdgroup 8x8 matrices (half in, float sums): INTERP_TC=metal.
sdk::TensorCore metal_simdgroup_8x8();
// A new INTERP device; the caller owns it.
sdk::Device* create_interp_device();

}  // namespace tg::runtime::interp

namespace tg::runtime {
extern const tg_plugin_descriptor interp_device_descriptor;  // listed in builtins.cpp
}
