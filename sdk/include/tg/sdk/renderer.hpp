#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "tg/sdk/status.hpp"

namespace tg {
class UOp;  // core IR node (uop/uop.hpp); renderers read it, never own it
}

namespace tg::sdk {

// A tensor core: one warp-wide D = A * B + C over an m x n x k tile (A m x k, B k x n, C and D m x n), A and
// B of scalar `in`, C and D of `acc` (tg::Scalar). Each operand's elements are spread evenly over the
// `threads` lanes (m, n, k and threads powers of two): every bit of an element's row and column comes from
// one bit of its lane id or of its position among the lane's elements. a_bits, b_bits and c_bits list the
// row's bits then the column's, lowest first: kLaneBit + i is bit i of the lane id, kElemBit + i bit i of the
// position. CUDA's mma.m16n8k16 (f16 in, f32 acc): A's row bits are lane bits 2, 3, 4 and element bit 1, its
// column bits element bit 0, lane bits 0, 1 and element bit 2.
struct TensorCore {
  static constexpr uint8_t kLaneBit = 0, kElemBit = 8;
  uint8_t m = 0, n = 0, k = 0, threads = 0;
  uint8_t in = 0, acc = 0;
  uint8_t a_bits[16] = {}, b_bits[16] = {}, c_bits[16] = {};
};

// What a device's code can do. Codegen reads these and only emits what is declared; the
// conformance suite checks every claim. Plain data so it can be read across the boundary.
struct RendererCaps {
  uint32_t struct_size = sizeof(RendererCaps);
  // Bit i set = scalar dtype i (tg::Scalar order, base/dtype.hpp) can be loaded, stored and computed.
  uint64_t dtypes = 0;
  // Bit i set = op i (tg::Ops order, uop/ops.hpp) is native; codegen decomposes the others
  // (e.g. EXP2, LOG2, SIN into polynomials). 0 means "only the basic arithmetic".
  uint64_t native_ops[4] = {0, 0, 0, 0};
  uint32_t max_vector_width = 1;  // widest float vector the renderer can emit (1 = scalar only)
  bool has_local = false;         // workgroups with local ids (GPU-style)
  bool has_shared = false;        // DEFINE_LOCAL memory and BARRIER
  bool has_threads = false;       // CPU-style parallel tasks over global[0] (THREAD opt)
  uint32_t global_max[3] = {1, 1, 1};
  uint32_t local_max[3] = {1, 1, 1};
  uint32_t max_local_size = 1;  // threads per workgroup
  uint32_t max_shared_bytes = 0;
  uint32_t max_buffers = 0;         // buffer arguments per kernel (0 = unlimited)
  uint32_t max_int_args = 0;        // integer arguments per kernel (0 = unlimited)
  uint32_t thread_count = 1;        // parallel tasks the device runs at once (CPU cores)
  bool supports_float_ints = true;  // e.g. int64 emulation not needed
  char dialect[32] = {0};           // "c", "opencl", "glsl", "cuda", "metal"...: for logs and caches
  // ABI minor 1: the tensor cores WMMA can use (the TC opt), read through tensor_cores().
  uint32_t tensor_core_count = 0;
  TensorCore tensor_cores[4] = {};
  // ABI minor 3: bit i set = scalar dtype i (also set in `dtypes`) is stored as an unsigned integer of its
  // width and computed in float32 by codegen (bfloat16, fp8 on devices without the type); read through
  // emulated_dtypes().
  uint64_t emulated_dtypes = 0;
};

// The caps' tensor cores; none for caps of a plugin built before they existed (a shorter struct_size).
inline std::span<const TensorCore> tensor_cores(const RendererCaps& c) {
  size_t end = offsetof(RendererCaps, tensor_cores) + sizeof(c.tensor_cores);
  if (c.struct_size < end) return {};
  return {c.tensor_cores, c.tensor_core_count < 4 ? c.tensor_core_count : 4};
}

// The caps' emulated dtypes; none for caps of a plugin built before they existed.
inline uint64_t emulated_dtypes(const RendererCaps& c) {
  return c.struct_size < offsetof(RendererCaps, emulated_dtypes) + sizeof(c.emulated_dtypes) ? 0 : c.emulated_dtypes;
}

inline bool has_dtype(const RendererCaps& c, unsigned scalar) { return (c.dtypes >> scalar) & 1u; }
inline bool has_native_op(const RendererCaps& c, unsigned op) {
  return (c.native_ops[op / 64] >> (op % 64)) & 1u;
}

// Linear UOps -> device source. The core keeps every UOp alive for the duration of render().
class Renderer {
 public:
  Renderer() = default;
  Renderer(const Renderer&) = delete;
  Renderer& operator=(const Renderer&) = delete;
  virtual ~Renderer() = default;

  // --- required ---
  virtual const RendererCaps& caps() const noexcept = 0;
  // uops is a linearized kernel (SINK last). The source must define a kernel named `name`.
  virtual Status render(std::string_view name, std::span<const UOp* const> uops, Blob& source) noexcept = 0;
};

}  // namespace tg::sdk
