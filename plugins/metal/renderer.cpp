#include "plugins/metal/renderer.hpp"

#include <algorithm>
#include <cstdio>
#include <limits>

#include <fmt/format.h>

#include "base/error.hpp"
#include "uop/uop.hpp"

namespace tg::metal {

using tg::sdk::CKernel;
using tg::sdk::RendererCaps;

namespace {

void set_bit(uint64_t* words, int i) { words[i / 64] |= uint64_t{1} << (i % 64); }

}  // namespace

RendererCaps metal_caps(const MetalLimits& l) {
  RendererCaps c;
  for (Scalar s : {Scalar::BOOL, Scalar::INT8, Scalar::UINT8, Scalar::INT16, Scalar::UINT16, Scalar::INT32,
                   Scalar::UINT32, Scalar::INT64, Scalar::UINT64, Scalar::FLOAT16, Scalar::FLOAT32})
    set_bit(&c.dtypes, static_cast<int>(s));
  if (l.version >= 31) set_bit(&c.dtypes, static_cast<int>(Scalar::BFLOAT16));  // Metal has no double
  for (Ops o :
       {Ops::ADD, Ops::MUL,  Ops::NEG,   Ops::IDIV, Ops::MOD,  Ops::CMPLT, Ops::CMPNE, Ops::CMPEQ,
        Ops::AND, Ops::OR,   Ops::XOR,   Ops::SHL,  Ops::SHR,  Ops::WHERE, Ops::FDIV,  Ops::RECIPROCAL,
        Ops::MAX, Ops::SQRT, Ops::TRUNC, Ops::EXP2, Ops::LOG2, Ops::SIN,   Ops::MULACC})
    set_bit(c.native_ops, static_cast<int>(o));
  c.max_vector_width = 1;  // upcasts become scalars; vectors appear only as tensor-core operands
  c.has_local = c.has_shared = true;
  c.has_threads = false;
  for (int i = 0; i < 3; i++)
    c.global_max[i] = std::numeric_limits<int32_t>::max(), c.local_max[i] = l.max_threads;
  c.local_max[2] = std::min<uint32_t>(l.max_threads, 64);
  c.max_local_size = l.max_threads;
  c.max_shared_bytes = l.threadgroup_bytes;
  // 31 buffer slots: the data buffers, then one slot holding every integer argument.
  c.max_buffers = 30, c.max_int_args = 512;
  c.thread_count = 1;
  c.supports_float_ints = true;
  std::snprintf(c.dialect, sizeof c.dialect, "metal%d.%d", l.version / 10, l.version % 10);
  if (l.simdgroup_matrix) {
    c.tensor_core_count = 2;
    c.tensor_cores[0] = simdgroup_8x8(Scalar::FLOAT16);
    c.tensor_cores[1] = simdgroup_8x8(Scalar::FLOAT32);
  }
  return c;
}

tg::sdk::TensorCore simdgroup_8x8(Scalar in) {
  using T = tg::sdk::TensorCore;
  constexpr uint8_t L = T::kLaneBit, E = T::kElemBit;
  T tc;
  tc.m = 8, tc.n = 8, tc.k = 8, tc.threads = 32;
  tc.in = static_cast<uint8_t>(in), tc.acc = static_cast<uint8_t>(Scalar::FLOAT32);
  const uint8_t layout[] = {L + 1, L + 2, L + 4, E + 0, L + 0, L + 3};  // row bits, then column bits
  std::copy(std::begin(layout), std::end(layout), tc.a_bits);
  std::copy(std::begin(layout), std::end(layout), tc.b_bits);
  std::copy(std::begin(layout), std::end(layout), tc.c_bits);
  return tc;
}

MetalRenderer::MetalRenderer(const RendererCaps& caps) : CStyleRenderer(caps) {
  const std::pair<Scalar, const char*> names[] = {
      {Scalar::BOOL, "bool"},    {Scalar::INT8, "char"},       {Scalar::UINT8, "uchar"},
      {Scalar::INT16, "short"},  {Scalar::UINT16, "ushort"},   {Scalar::INT32, "int"},
      {Scalar::UINT32, "uint"},  {Scalar::INT64, "long"},      {Scalar::UINT64, "ulong"},
      {Scalar::FLOAT16, "half"}, {Scalar::BFLOAT16, "bfloat"}, {Scalar::FLOAT32, "float"},
      {Scalar::FLOAT64, ""},
  };
  for (const auto& [s, n] : names) set_type_name(s, n);
  // precise:: keeps the results IEEE-accurate even where a pipeline enables fast math.
  for (auto [op, f] : {std::pair{Ops::SQRT, "precise::sqrt"}, std::pair{Ops::TRUNC, "metal::trunc"},
                       std::pair{Ops::EXP2, "precise::exp2"}, std::pair{Ops::LOG2, "precise::log2"},
                       std::pair{Ops::SIN, "precise::sin"}}) {
    set_op_format(op, Scalar::FLOAT32, fmt::format("{}({{0}})", f));
    for (Scalar s : {Scalar::FLOAT16, Scalar::BFLOAT16})  // through float, rounded once
      set_op_format(op, s, fmt::format("(({{t}}){}((float)({{0}})))", f));
  }
  set_op_format(Ops::MULACC, Scalar::FLOAT32, "metal::fma({0}, {1}, {2})");  // fused, as INTERP
  // bfloat computes in float and rounds once, like half on hardware without bfloat ALUs.
  auto in_float = [](const std::string& expr) { return fmt::format("((bfloat)({}))", expr); };
  set_op_format(Ops::ADD, Scalar::BFLOAT16, in_float("(float)({0})+(float)({1})"));
  set_op_format(Ops::MUL, Scalar::BFLOAT16, in_float("(float)({0})*(float)({1})"));
  set_op_format(Ops::NEG, Scalar::BFLOAT16, in_float("-(float)({0})"));
  set_op_format(Ops::FDIV, Scalar::BFLOAT16, in_float("(float)({0})/(float)({1})"));
  set_op_format(Ops::RECIPROCAL, Scalar::BFLOAT16, in_float("1.0f/(float)({0})"));
  set_op_format(Ops::MAX, Scalar::BFLOAT16, "(((float)({0})<(float)({1}))?{1}:{0})");
  set_op_format(Ops::MULACC, Scalar::BFLOAT16,
                in_float("(float)((bfloat)((float)({0})*(float)({1})))+(float)({2})"));
  // C++ promotes char/short operands to int: narrow results that can leave the type's range again.
  for (Scalar s : {Scalar::INT8, Scalar::UINT8, Scalar::INT16, Scalar::UINT16})
    for (Ops op : {Ops::ADD, Ops::MUL, Ops::NEG, Ops::IDIV, Ops::SHL, Ops::MULACC})
      set_op_format(op, s, "(({t})" + op_format(op, s) + ")");
}

std::string MetalRenderer::type_name(DType d) const {
  if (!d.is_ptr()) return CStyleRenderer::type_name(d);
  std::string space = d.addrspace() == AddrSpace::LOCAL    ? "threadgroup "
                      : d.addrspace() == AddrSpace::GLOBAL ? "device "
                                                           : "";
  return space + CStyleRenderer::type_name(d.base()) + "*";
}

std::string MetalRenderer::render_const(const UOp& c) const {
  DType d = c.dtype();
  if (d.count() == 1 && (d.scalar() == Scalar::INT64 || d.scalar() == Scalar::UINT64)) {
    int64_t i = std::visit([](auto x) { return static_cast<int64_t>(x); }, *c.const_value());
    if (d.scalar() == Scalar::UINT64) return fmt::format("{}ul", static_cast<uint64_t>(i));
    if (i == std::numeric_limits<int64_t>::min()) return "(-9223372036854775807l-1)";
    return i < 0 ? fmt::format("({}l)", i) : fmt::format("{}l", i);
  }
  return CStyleRenderer::render_const(c);
}

std::string MetalRenderer::render_cast(DType to, const std::string& x) const {
  if (to.count() > 1) return fmt::format("{}({})", type_name(to), x);  // MSL's converting constructor
  return fmt::format("(({}){})", type_name(to), x);
}

std::string MetalRenderer::render_bitcast(DType to, DType from, const std::string& x) const {
  if (to.itemsize() != from.itemsize() || to.is_bool() || from.is_bool())
    throw NotSupportedError("render", fmt::format("the '{}' renderer cannot bitcast {} to {}", caps_.dialect,
                                                  from.str(), to.str()));
  return fmt::format("as_type<{}>({})", type_name(to), x);
}

std::string MetalRenderer::render_special(const UOp& special) const {
  const std::string& n = special.arg_as<std::string>();
  int dim = n.empty() ? -1 : n.back() - '0';
  const char* axis[] = {"x", "y", "z"};
  std::string t = type_name(special.dtype());
  if (dim >= 0 && dim < 3 && n.starts_with("gidx")) return fmt::format("(({})gid.{})", t, axis[dim]);
  if (dim >= 0 && dim < 3 && n.starts_with("lidx")) return fmt::format("(({})lid.{})", t, axis[dim]);
  return CStyleRenderer::render_special(special);
}

std::string MetalRenderer::render_vectorize(DType d, std::span<const std::string> elems) const {
  return fmt::format("{}({})", type_name(d), fmt::join(elems, ","));
}

std::string MetalRenderer::render_gep(DType vec, const std::string& x, int64_t lane) const {
  if (vec.count() <= 4) return fmt::format("{}.{}", x, "xyzw"[lane]);
  return fmt::format("{}[{}]", x, lane);
}

std::string MetalRenderer::render_local(const UOp& def, const std::string& name) const {
  return fmt::format("threadgroup {} {}[{}];", CStyleRenderer::type_name(def.dtype().base()), name,
                     def.dtype().ptr_size());
}

std::string MetalRenderer::render_wmma(const UOp& wmma, const std::string& a, const std::string& b,
                                       const std::string& c) const {
  Scalar in = wmma.src(0)->dtype().scalar();
  if (wmma.dtype().scalar() != Scalar::FLOAT32 || wmma.dtype().count() != 2 ||
      wmma.src(0)->dtype().count() != 2 || (in != Scalar::FLOAT16 && in != Scalar::FLOAT32))
    throw NotSupportedError(
        "render", fmt::format("the '{}' renderer has no simdgroup matrix for {} from {}", caps_.dialect,
                              wmma.dtype().str(), wmma.src(0)->dtype().str()));
  return fmt::format("tg_simdgroup_mma_{}({}, {}, {})", CStyleRenderer::type_name(DType(in)), a, b, c);
}

std::string MetalRenderer::barrier() const { return "threadgroup_barrier(mem_flags::mem_threadgroup);"; }

std::string MetalRenderer::render_kernel(const CKernel& k) const {
  std::string body;
  for (const auto& l : k.body) body += l + "\n";
  std::vector<std::string> params;
  for (const auto& b : k.bufs)
    params.push_back(fmt::format("{}{} {} [[buffer({})]]", b.written ? "" : "const ", type_name(b.dtype),
                                 b.name, b.index));
  // Every integer argument sits in one constant buffer after the data buffers, 64 bits each.
  std::string unpack;
  if (!k.vars.empty()) params.push_back(fmt::format("constant long* tg_vals [[buffer({})]]", k.bufs.size()));
  for (size_t i = 0; i < k.vars.size(); i++) {
    std::string t = type_name(k.vars[i].dtype);
    unpack += fmt::format("  const {} {} = ({})tg_vals[{}];\n", t, k.vars[i].name, t, i);
  }
  params.push_back("uint3 gid [[threadgroup_position_in_grid]]");
  params.push_back("uint3 lid [[thread_position_in_threadgroup]]");
  std::string out = "#include <metal_stdlib>\nusing namespace metal;\n";
  // D = A * B + C on one simdgroup: each thread's two elements of A, B and C go into the tiles and its two
  // elements of D come back.
  for (const char* in : {"half", "float"}) {
    std::string fn = fmt::format("tg_simdgroup_mma_{}", in);
    if (body.find(fn + "(") == std::string::npos) continue;
    out += fmt::format(
        "inline float2 {0}({1}2 a, {1}2 b, float2 c) {{\n"
        "  simdgroup_{1}8x8 ma, mb;\n  simdgroup_float8x8 mc;\n"
        "  ma.thread_elements()[0] = a.x; ma.thread_elements()[1] = a.y;\n"
        "  mb.thread_elements()[0] = b.x; mb.thread_elements()[1] = b.y;\n"
        "  mc.thread_elements()[0] = c.x; mc.thread_elements()[1] = c.y;\n"
        "  simdgroup_multiply_accumulate(mc, ma, mb, mc);\n"
        "  return float2(mc.thread_elements()[0], mc.thread_elements()[1]);\n}}\n",
        fn, in);
  }
  out += fmt::format("kernel void {}({}) {{\n{}{}}}\n", k.name, fmt::join(params, ", "), unpack, body);
  return out;
}

}  // namespace tg::metal
