#pragma once
// A Renderer for C-family languages (C, OpenCL C, CUDA, HIP, Metal, GLSL...). It walks the linear
// program (docs/ir-stages.md stage 3), names values, inlines single-use expressions and prints every op
// from an overridable format table; a dialect overrides the hooks below. Implemented in libtg
// (modules/codegen/cstyle.cpp), so a plugin that subclasses it links against libtg.
//
//   struct MyRenderer final : tg::sdk::CStyleRenderer {      // or reuse tg::sdk::CDialect as is
//     MyRenderer() : CStyleRenderer(my_caps()) { set_op_format(tg::Ops::SQRT, "native_sqrt({0})"); }
//     std::string render_kernel(const tg::sdk::CKernel& k) const override { ... }
//   };
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/dtype.hpp"
#include "tg/sdk/renderer.hpp"
#include "uop/ops.hpp"
#include "uop/uop.hpp"

namespace tg::sdk {

// The pieces of one kernel, handed to CStyleRenderer::render_kernel to assemble.
struct CKernel {
  struct Buf {
    std::string name;   // "data0"
    int64_t index = 0;  // DEFINE_GLOBAL arg: position in the launch's bufs
    DType dtype;        // the pointer dtype
    bool written = false;
  };
  struct Var {
    std::string name;  // the DEFINE_VAR's name, made a valid identifier
    DType dtype;       // int or long long after index lowering
  };
  std::string name;
  std::vector<Buf> bufs;            // by index
  std::vector<Var> vars;            // in the order of Program::launch's vals
  std::vector<DType> vector_types;  // vector dtypes used (for typedefs)
  std::vector<std::string> body;    // statements, indented one level per open block
};

class CStyleRenderer : public Renderer {
 public:
  explicit CStyleRenderer(const RendererCaps& caps);

  const RendererCaps& caps() const noexcept override { return caps_; }
  // Status wrapper around render_source: NotSupportedError -> unsupported, other errors -> runtime_error.
  Status render(std::string_view name, std::span<const UOp* const> uops, Blob& source) noexcept override;
  // The source of kernel `name`; throws tg::Error subclasses.
  std::string render_source(std::string_view name, std::span<const UOp* const> uops) const;
  // The threads of one workgroup of a kernel that reads local ids (the product of its lidx sizes), or 0 for
  // one that reads none and so may run any workgroup size.
  static int64_t local_threads(std::span<const UOp* const> uops);

  // How an ALU op prints: {0} {1} {2} are the operands, {t} the result type name. The per-dtype form
  // (keyed by the result's scalar type) wins over the general one.
  void set_op_format(Ops op, std::string format);
  void set_op_format(Ops op, Scalar result, std::string format);
  // For vector results of that scalar type only (e.g. a vector fma helper); wins over the scalar form.
  void set_vector_op_format(Ops op, Scalar result, std::string format);
  void set_type_name(Scalar s, std::string name);
  const std::string& op_format(Ops op, Scalar result) const;  // empty when the op has no format
  const std::string& op_format(Ops op, DType result) const;   // the vector form first for vectors

 protected:
  // ---- dialect hooks ----
  // Scalars from the table, vectors "float4" (scalar name with '_' for spaces + count), pointers "T*".
  virtual std::string type_name(DType d) const;
  // A CONST (vector CONSTs broadcast through render_vectorize).
  virtual std::string render_const(const UOp& c) const;
  virtual std::string render_float_special(DType d, double v) const;  // inf, -inf, nan
  virtual std::string render_cast(DType to, const std::string& x) const;
  virtual std::string render_bitcast(DType to, DType from, const std::string& x) const;
  // The expression of a SPECIAL launch index ("gidx0", "lidx0", "core_id"). Default: unsupported.
  virtual std::string render_special(const UOp& special) const;
  virtual std::string render_vectorize(DType d, std::span<const std::string> elems) const;
  virtual std::string render_gep(DType vec, const std::string& x, int64_t lane) const;
  // Declarations of DEFINE_REG / DEFINE_LOCAL arrays ("float acc0[4];").
  virtual std::string render_reg(const UOp& def, const std::string& name) const;
  virtual std::string render_local(const UOp& def, const std::string& name) const;
  virtual std::string barrier() const;
  // A WMMA (D = A * B + C of one tensor core, wmma.arg() naming it) on the lane's vectors a, b and c.
  // Default: unsupported.
  virtual std::string render_wmma(const UOp& wmma, const std::string& a, const std::string& b,
                                  const std::string& c) const;
  // A LOAD's expression / a STORE's statement for element `off` of buffer `b` (`buf` is its DEFINE_GLOBAL,
  // DEFINE_LOCAL or DEFINE_REG); `value` is the loaded or stored dtype, a vector for the elements from `off`
  // on. Empty (the default) = the C form; languages without pointers, or whose vector accesses need an
  // alignment the C form assumes, override them.
  virtual std::string render_load(const UOp& buf, const std::string& b, const std::string& off,
                                  DType value) const;
  virtual std::string render_store(const UOp& buf, const std::string& b, const std::string& off,
                                   const std::string& x, DType value) const;
  // The whole source from its parts. Default: "void NAME(T* data0, ..., const int n) { body }".
  virtual std::string render_kernel(const CKernel& k) const;

  RendererCaps caps_;

 private:
  std::array<std::string, kOpsCount> op_fmt_;
  std::vector<std::pair<uint32_t, std::string>> op_fmt_typed_;  // (op << 8 | vector << 7 | scalar, format)
  std::array<std::string, kScalarCount> type_names_;
};

// Plain C for a CPU device, with the calling convention
//   void NAME(void* const* bufs, const long long* vals, int core_id)
// buffers are cast from bufs[i], variables read from vals[i], SPECIAL core_id is the argument.
// Vectors are clang ext_vector_type. A CPU plugin can use it directly: `tg::sdk::CDialect r(caps);`.
class CDialect : public CStyleRenderer {
 public:
  // C99 arithmetic on bool, ints, float, double; sqrt and trunc as __builtin_sqrtf..., the rest
  // (EXP2, LOG2, SIN, POW, MAX, MULACC, THREEFRY) decomposed by codegen. Plain loops, no threads.
  static RendererCaps default_caps();
  explicit CDialect(const RendererCaps& caps = default_caps());

 protected:
  std::string render_float_special(DType d, double v) const override;
  std::string render_special(const UOp& special) const override;
  std::string render_kernel(const CKernel& k) const override;
};

}  // namespace tg::sdk
