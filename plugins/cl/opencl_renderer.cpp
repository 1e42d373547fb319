// OpenCL C dialect of the C-style renderer (no OpenCL runtime needed).
#include "plugins/cl/opencl_renderer.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "base/error.hpp"

namespace tg::opencl {

using tg::sdk::CKernel;
using tg::sdk::RendererCaps;

namespace {

void set_bit(uint64_t* words, int i) { words[i / 64] |= uint64_t{1} << (i % 64); }

}  // namespace

RendererCaps opencl_caps(const OpenCLLimits& l, const char* dialect) {
  RendererCaps c;
  for (Scalar s : {Scalar::BOOL, Scalar::INT8, Scalar::UINT8, Scalar::INT16, Scalar::UINT16, Scalar::INT32,
                   Scalar::UINT32, Scalar::INT64, Scalar::UINT64, Scalar::FLOAT32})
    set_bit(&c.dtypes, static_cast<int>(s));
  if (l.fp16) set_bit(&c.dtypes, static_cast<int>(Scalar::FLOAT16));
  // bfloat16 and fp8 have no OpenCL C type: stored as ushort/uchar, computed in float (codegen's emulation).
  for (Scalar s : {Scalar::BFLOAT16, Scalar::FP8E4M3, Scalar::FP8E5M2}) {
    set_bit(&c.dtypes, static_cast<int>(s));
    c.emulated_dtypes |= uint64_t{1} << static_cast<int>(s);
  }
  if (l.fp64) set_bit(&c.dtypes, static_cast<int>(Scalar::FLOAT64));
  // MAX stays the C ternary (a<b?b:a, NaN as the reference has it), the rest are OpenCL builtins.
  for (Ops o :
       {Ops::ADD, Ops::MUL,  Ops::NEG,   Ops::IDIV, Ops::MOD,  Ops::CMPLT, Ops::CMPNE, Ops::CMPEQ,
        Ops::AND, Ops::OR,   Ops::XOR,   Ops::SHL,  Ops::SHR,  Ops::WHERE, Ops::FDIV,  Ops::RECIPROCAL,
        Ops::MAX, Ops::SQRT, Ops::TRUNC, Ops::EXP2, Ops::LOG2, Ops::SIN,   Ops::POW,   Ops::MULACC})
    set_bit(c.native_ops, static_cast<int>(o));
  c.max_vector_width = std::clamp<uint32_t>(l.preferred_float_width, 1, 16);
  c.has_local = true;
  c.has_shared = l.local_mem_size > 0;
  c.has_threads = false;
  // Launch indices are rendered as int: keep every group count within int32.
  for (int i = 0; i < 3; i++) {
    c.global_max[i] = std::numeric_limits<int32_t>::max();
    c.local_max[i] = std::min(l.max_work_item_sizes[i], l.max_work_group_size);
  }
  c.max_local_size = l.max_work_group_size;
  c.max_shared_bytes = static_cast<uint32_t>(std::min<uint64_t>(l.local_mem_size, UINT32_MAX));
  // Buffers (pointers) and integer arguments (longs) share CL_DEVICE_MAX_PARAMETER_SIZE; each limit below
  // is what fits when the other kind is absent.
  c.max_buffers = static_cast<uint32_t>(l.max_parameter_size / 8);
  c.max_int_args = static_cast<uint32_t>(l.max_parameter_size / 8);
  c.thread_count = 1;
  c.supports_float_ints = true;
  std::strncpy(c.dialect, dialect, sizeof c.dialect - 1);
  return c;
}

OpenCLRenderer::OpenCLRenderer(const RendererCaps& caps, bool global_ids)
    : CStyleRenderer(caps), global_ids_(global_ids) {
  const std::pair<Scalar, const char*> names[] = {
      {Scalar::BOOL, "bool"},      {Scalar::INT8, "char"},     {Scalar::UINT8, "uchar"},
      {Scalar::INT16, "short"},    {Scalar::UINT16, "ushort"}, {Scalar::INT32, "int"},
      {Scalar::UINT32, "uint"},    {Scalar::INT64, "long"},    {Scalar::UINT64, "ulong"},
      {Scalar::FLOAT16, "half"},   {Scalar::BFLOAT16, ""},     {Scalar::FLOAT32, "float"},
      {Scalar::FLOAT64, "double"},
  };
  for (const auto& [s, n] : names) set_type_name(s, n);
  // MULACC on float/double is the fused fma() (one rounding, as INTERP); other dtypes keep a*b+c.
  set_op_format(Ops::MULACC, Scalar::FLOAT32, "fma({0}, {1}, {2})");
  set_op_format(Ops::MULACC, Scalar::FLOAT64, "fma({0}, {1}, {2})");
  // C promotes char/short operands to int: results that can leave the type's range are narrowed again so
  // they wrap like the reference (INTERP) even when the expression is inlined into a wider one.
  for (Scalar s : {Scalar::INT8, Scalar::UINT8, Scalar::INT16, Scalar::UINT16})
    for (Ops op : {Ops::ADD, Ops::MUL, Ops::NEG, Ops::IDIV, Ops::SHL, Ops::MULACC})
      set_op_format(op, s, "(({t})" + op_format(op, s) + ")");
}

std::string OpenCLRenderer::type_name(DType d) const {
  if (!d.is_ptr()) return CStyleRenderer::type_name(d);
  // bool has no defined size in OpenCL and may not sit behind a kernel's pointer: buffers of bool are uchar.
  DType elem = d.base().is_bool() && d.base().count() == 1 ? DType(Scalar::UINT8) : d.base();
  std::string space = d.addrspace() == AddrSpace::LOCAL    ? "__local "
                      : d.addrspace() == AddrSpace::GLOBAL ? "__global "
                                                           : "";
  return space + CStyleRenderer::type_name(elem) + "*";
}

std::string OpenCLRenderer::render_const(const UOp& c) const {
  DType d = c.dtype();
  if (d.count() == 1 && (d.scalar() == Scalar::INT64 || d.scalar() == Scalar::UINT64)) {
    int64_t i = std::visit([](auto x) { return static_cast<int64_t>(x); }, *c.const_value());
    if (d.scalar() == Scalar::UINT64) return fmt::format("{}ul", static_cast<uint64_t>(i));
    if (i == std::numeric_limits<int64_t>::min()) return "(-9223372036854775807l-1)";
    return i < 0 ? fmt::format("({}l)", i) : fmt::format("{}l", i);
  }
  return CStyleRenderer::render_const(c);
}

std::string OpenCLRenderer::render_cast(DType to, const std::string& x) const {
  if (to.count() > 1) return fmt::format("convert_{}({})", type_name(to), x);
  return fmt::format("(({}){})", type_name(to), x);
}

std::string OpenCLRenderer::render_bitcast(DType to, DType from, const std::string& x) const {
  if (to.itemsize() != from.itemsize() || to.is_bool() || from.is_bool())
    throw NotSupportedError("render", fmt::format("the '{}' renderer cannot bitcast {} to {}", caps_.dialect,
                                                  from.str(), to.str()));
  return fmt::format("as_{}({})", type_name(to), x);
}

std::string OpenCLRenderer::render_special(const UOp& special) const {
  const std::string& n = special.arg_as<std::string>();
  int dim = n.empty() ? -1 : n.back() - '0';
  std::string t = type_name(special.dtype());
  if (dim >= 0 && dim < 3 && n.starts_with("gidx")) return fmt::format("(({})get_group_id({}))", t, dim);
  if (dim >= 0 && dim < 3 && n.starts_with("lidx")) return fmt::format("(({})get_local_id({}))", t, dim);
  return CStyleRenderer::render_special(special);
}

std::string OpenCLRenderer::render_vectorize(DType d, std::span<const std::string> elems) const {
  return fmt::format("(({})({}))", type_name(d), fmt::join(elems, ","));
}

std::string OpenCLRenderer::render_gep(DType vec, const std::string& x, int64_t lane) const {
  (void)vec;
  return fmt::format("{}.s{:x}", x, lane);
}

// Vector accesses: vloadN/vstoreN, which need only the element's alignment (a view may start anywhere in
// its buffer); register arrays go element by element, so they stay in registers.
std::string OpenCLRenderer::render_load(const UOp& buf, const std::string& b, const std::string& off,
                                        DType value) const {
  if (value.count() == 1) return {};
  if (buf.op() != Ops::DEFINE_REG) return fmt::format("vload{}(0, {}+{})", value.count(), b, off);
  std::vector<std::string> el;
  for (int i = 0; i < value.count(); i++) el.push_back(fmt::format("{}[{}+{}]", b, off, i));
  return render_vectorize(value, el);
}

std::string OpenCLRenderer::render_store(const UOp& buf, const std::string& b, const std::string& off,
                                         const std::string& x, DType value) const {
  if (value.count() == 1) return {};
  if (buf.op() != Ops::DEFINE_REG) return fmt::format("vstore{}({}, 0, {}+{});", value.count(), x, b, off);
  std::string out = fmt::format("{{ {} tg_v = {};", type_name(value), x);
  for (int i = 0; i < value.count(); i++) out += fmt::format(" {}[{}+{}] = tg_v.s{:x};", b, off, i, i);
  return out + " }";
}

std::string OpenCLRenderer::render_local(const UOp& def, const std::string& name) const {
  return fmt::format("__local {} {}[{}];", CStyleRenderer::type_name(def.dtype().base()), name,
                     def.dtype().ptr_size());
}

std::string OpenCLRenderer::barrier() const { return "barrier(CLK_LOCAL_MEM_FENCE);"; }

std::string OpenCLRenderer::preamble(const CKernel& k) const {
  (void)k;
  // a*b+c stays two roundings, as in the reference (INTERP).
  std::string out = "#pragma OPENCL FP_CONTRACT OFF\n";
  if (has_dtype(caps_, static_cast<unsigned>(Scalar::FLOAT16)))
    out += "#pragma OPENCL EXTENSION cl_khr_fp16 : enable\n";
  if (has_dtype(caps_, static_cast<unsigned>(Scalar::FLOAT64)))
    out += "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n";
  return out;
}

std::string OpenCLRenderer::render_kernel(const CKernel& k) const {
  // Without local ids no work item can see its group, so gidx may be the global id (see the constructor).
  bool grouped = std::any_of(k.body.begin(), k.body.end(), [](const std::string& l) {
    return l.find("get_local_id(") != std::string::npos || l.find("barrier(") != std::string::npos;
  });
  bool global = global_ids_ && !grouped;
  std::vector<std::string> body = k.body;
  if (global)
    for (std::string& l : body)
      for (size_t at; (at = l.find("get_group_id(")) != std::string::npos;)
        l.replace(at, 13, "get_global_id(");
  std::vector<std::string> params;
  for (const auto& b : k.bufs) {
    std::string t = type_name(b.dtype);  // "__global float*"
    if (!b.written) t.insert(std::strlen("__global "), "const ");
    params.push_back(fmt::format("{} {}", t, b.name));
  }
  // Integer arguments are 64-bit at the launch (one clSetKernelArg size for all), narrowed here.
  std::string unpack;
  for (size_t i = 0; i < k.vars.size(); i++) {
    params.push_back(fmt::format("const long tg_val{}", i));
    std::string t = type_name(k.vars[i].dtype);
    unpack += fmt::format("  const {} {} = ({})tg_val{};\n", t, k.vars[i].name, t, i);
  }
  return fmt::format("{}{}__kernel void {}({}) {{\n{}{}\n}}\n", global ? kGlobalIdsMarker : "", preamble(k),
                     k.name, fmt::join(params, ", "), unpack, fmt::join(body, "\n"));
}

}  // namespace tg::opencl
