#pragma once
// OpenCL C for the linear program: the dialect the CL, QCOM and LEVEL_ZERO devices share. It needs no
// OpenCL runtime: caps come in as plain numbers (OpenCLLimits), so a device that only compiles can use it.
//
//   #pragma OPENCL FP_CONTRACT OFF
//   __kernel void NAME(__global float* data0, __global const float* data1, const long tg_val0) {
//     const int n = (int)tg_val0;   // every integer argument is passed as a 64-bit long
//     int gidx0 = ((int)get_group_id(0)); /* 1024 */
//     ...
//   }
#include <cstdint>
#include <string>
#include <string_view>

#include "tg/sdk/cstyle.hpp"

namespace tg::opencl {

// What the device reports (clGetDeviceInfo), in the units OpenCL uses.
struct OpenCLLimits {
  bool fp16 = false;                   // cl_khr_fp16
  bool fp64 = false;                   // cl_khr_fp64 (or a non-zero CL_DEVICE_DOUBLE_FP_CONFIG)
  uint32_t preferred_float_width = 1;  // CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT
  uint32_t max_work_group_size = 1;    // CL_DEVICE_MAX_WORK_GROUP_SIZE
  uint32_t max_work_item_sizes[3] = {1, 1, 1};
  uint64_t local_mem_size = 0;      // CL_DEVICE_LOCAL_MEM_SIZE
  uint64_t max_parameter_size = 0;  // CL_DEVICE_MAX_PARAMETER_SIZE, bytes of all kernel arguments
};

// Caps of an OpenCL C device with these limits: ints, float32 (+ half/double when the extensions exist),
// workgroups with local ids and __local memory, sqrt/exp2/log2/sin/pow/trunc/max as builtins.
tg::sdk::RendererCaps opencl_caps(const OpenCLLimits& limits, const char* dialect = "opencl");

class OpenCLRenderer : public tg::sdk::CStyleRenderer {
 public:
  // First line of a kernel rendered with global ids (see global_ids below).
  static constexpr std::string_view kGlobalIdsMarker = "// tg: work items indexed by get_global_id\n";

  // global_ids: a kernel without local ids reads gidx from get_global_id and starts with kGlobalIdsMarker.
  // Its launch must then run exactly `global` work items (any group size), not global*local: a runtime that
  // knows the marker may let the driver pick the group size. Off, every kernel follows the SDK launch rule
  // (global*local work items, gidx = get_group_id).
  explicit OpenCLRenderer(const tg::sdk::RendererCaps& caps, bool global_ids = false);

 protected:
  std::string type_name(DType d) const override;
  std::string render_const(const UOp& c) const override;
  std::string render_cast(DType to, const std::string& x) const override;
  std::string render_bitcast(DType to, DType from, const std::string& x) const override;
  std::string render_special(const UOp& special) const override;
  std::string render_vectorize(DType d, std::span<const std::string> elems) const override;
  std::string render_gep(DType vec, const std::string& x, int64_t lane) const override;
  std::string render_load(const UOp& buf, const std::string& b, const std::string& off,
                          DType value) const override;
  std::string render_store(const UOp& buf, const std::string& b, const std::string& off, const std::string& x,
                           DType value) const override;
  std::string render_local(const UOp& def, const std::string& name) const override;
  std::string barrier() const override;
  std::string render_kernel(const tg::sdk::CKernel& k) const override;
  // Lines before the kernel (pragmas); a dialect may add its own.
  virtual std::string preamble(const tg::sdk::CKernel& k) const;

 private:
  bool global_ids_;
};

}  // namespace tg::opencl
