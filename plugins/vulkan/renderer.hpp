#pragma once
// GLSL 4.50 compute shaders for the VULKAN device. The shader interface the device's launch matches:
//   layout(set = 0, binding = i, std430) buffer Buf<i> { T data<i>[]; };   one per buffer argument, in order
//   layout(push_constant) uniform Vals { uvec3 tg_grid; float tg_zero; layout(offset = 16 + 8*i) T name; }
//       tg_vals;     the launch's global size, 0.0 (the source of +0.0 constants), the integer arguments
//   layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;   workgroup size set at
//                                                    pipeline creation
// With local dims (lidx): gidx/lidx are gl_WorkGroupID / gl_LocalInvocationID and the launch's local size is
// the workgroup size. Without (local = 1,1,1): the device picks the workgroup size, gidx is
// gl_GlobalInvocationID and invocations outside tg_grid return at once. The entry point is main.
#include <string>

#include "tg/sdk/cstyle.hpp"

namespace tg::vulkan {

// What the device's features allow the shaders to use (the caps are derived from it).
struct ShaderFeatures {
  bool storage8 = false;   // storageBuffer8BitAccess (bool buffers are uint8_t)
  bool storage16 = false;  // storageBuffer16BitAccess
  bool int8 = false, int16 = false, int64 = false, float16 = false, float64 = false;
  // shaderSignedZeroInfNanPreserveFloat16/32/64: the shader can ask the driver to keep -0, inf and nan
  bool signed_zero16 = false, signed_zero32 = false, signed_zero64 = false;
};

// Limits from VkPhysicalDeviceLimits that the caps report.
struct ShaderLimits {
  uint32_t group_count[3] = {65535, 65535, 65535};
  uint32_t group_size[3] = {128, 128, 64};
  uint32_t invocations = 128;
  uint32_t shared_bytes = 16384;
  uint32_t storage_buffers = 4;
  uint32_t push_constant_bytes = 128;
};

tg::sdk::RendererCaps glsl_caps(const ShaderFeatures& f, const ShaderLimits& l);

class GlslRenderer final : public tg::sdk::CStyleRenderer {
 public:
  GlslRenderer(const tg::sdk::RendererCaps& caps, const ShaderFeatures& features);

 protected:
  std::string render_const(const UOp& c) const override;
  std::string render_float_special(DType d, double v) const override;
  std::string render_cast(DType to, const std::string& x) const override;
  std::string render_bitcast(DType to, DType from, const std::string& x) const override;
  std::string render_special(const UOp& special) const override;
  std::string render_local(const UOp& def, const std::string& name) const override;
  std::string barrier() const override;
  std::string render_load(const UOp& buf, const std::string& b, const std::string& off,
                          DType value) const override;
  std::string render_store(const UOp& buf, const std::string& b, const std::string& off, const std::string& x,
                           DType value) const override;
  std::string render_kernel(const tg::sdk::CKernel& k) const override;

 private:
  std::string helpers(const std::string& body) const;
  ShaderFeatures features_;
};

}  // namespace tg::vulkan
