// GLSL 4.50 compute renderer of the VULKAN device (renderer.hpp): linear program -> one compute shader.
#include "plugins/vulkan/renderer.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "base/error.hpp"

namespace tg::vulkan {

namespace {

constexpr uint64_t bit(Scalar s) { return uint64_t{1} << static_cast<int>(s); }
void set_native(tg::sdk::RendererCaps& c, Ops o) {
  c.native_ops[static_cast<int>(o) / 64] |= uint64_t{1} << (static_cast<int>(o) % 64);
}

struct IntType {
  Scalar s;
  const char* name;
  int bits;
  bool sgn;
};
constexpr IntType kInts[] = {
    {Scalar::INT8, "int8_t", 8, true},       {Scalar::UINT8, "uint8_t", 8, false},
    {Scalar::INT16, "int16_t", 16, true},    {Scalar::UINT16, "uint16_t", 16, false},
    {Scalar::INT32, "int", 32, true},        {Scalar::UINT32, "uint", 32, false},
    {Scalar::INT64, "int64_t", 64, true},    {Scalar::UINT64, "uint64_t", 64, false},
};

// Integer division, remainder and shifts with the reference (INTERP) semantics, which GLSL leaves undefined:
// x/0 = x%0 = 0, C truncation for negatives, INT_MIN/-1 wraps, shifts by >= bits give 0 (or -1 for >> of a
// negative). 8/16-bit types compute in 32 bits and wrap back.
std::string int_helpers(const IntType& t, const std::string& fn) {
  const std::string T = t.name;
  if (t.bits < 32) {
    std::string W = t.sgn ? "int" : "uint";
    return fmt::format("{0} {1}({0} a, {0} b) {{ return {0}({1}({2}(a), {2}(b))); }}\n", T, fn, W);
  }
  const std::string U = t.bits == 64 ? "uint64_t" : "uint", z = t.bits == 64 ? (t.sgn ? "0l" : "0ul") : (t.sgn ? "0" : "0u");
  const std::string uz = t.bits == 64 ? "0ul" : "0u";
  if (fn == "tg_idiv" && !t.sgn) return fmt::format("{0} tg_idiv({0} a, {0} b) {{ return b == {1} ? {1} : a / b; }}\n", T, z);
  if (fn == "tg_mod" && !t.sgn) return fmt::format("{0} tg_mod({0} a, {0} b) {{ return b == {1} ? {1} : a % b; }}\n", T, z);
  std::string mag = fmt::format("{0} ua = a < {1} ? {2} - {0}(a) : {0}(a), ub = b < {1} ? {2} - {0}(b) : {0}(b);", U, z, uz);
  if (fn == "tg_idiv")
    return fmt::format("{0} tg_idiv({0} a, {0} b) {{ if (b == {1}) return {1}; {2} return (a < {1}) != (b < {1}) ? -{0}(ua / ub) : {0}(ua / ub); }}\n",
                       T, z, mag);
  if (fn == "tg_mod")
    return fmt::format("{0} tg_mod({0} a, {0} b) {{ if (b == {1}) return {1}; {2} return a < {1} ? -{0}(ua % ub) : {0}(ua % ub); }}\n",
                       T, z, mag);
  std::string out_of_range = t.sgn ? fmt::format("b < {} || b >= {}", z, t.bits) : fmt::format("b >= {}u", t.bits);
  if (t.bits == 64) out_of_range = t.sgn ? "b < 0l || b >= 64l" : "b >= 64ul";
  if (fn == "tg_shl")
    return fmt::format("{0} tg_shl({0} a, {0} b) {{ return ({1}) ? {2} : a << b; }}\n", T, out_of_range, z);
  std::string fill = t.sgn ? fmt::format("(a < {0} ? -{1}(1) : {0})", z, T) : z;
  return fmt::format("{0} tg_shr({0} a, {0} b) {{ return ({1}) ? {2} : a >> b; }}\n", T, out_of_range, fill);
}

constexpr const char* kDeclTypes[] = {"bool",     "int8_t", "uint8_t", "int16_t",   "uint16_t", "int",   "uint",
                                      "int64_t", "uint64_t", "float16_t", "float", "double"};

std::string hex_float(Scalar s, double v) {
  if (s == Scalar::FLOAT64) {
    uint32_t hi = std::isnan(v) ? 0x7ff80000u : v > 0 ? 0x7ff00000u : 0xfff00000u;
    return fmt::format("packDouble2x32(uvec2(0u, 0x{:08x}u))", hi);
  }
  uint32_t bits = std::isnan(v) ? 0x7fc00000u : v > 0 ? 0x7f800000u : 0xff800000u;
  std::string f = fmt::format("uintBitsToFloat(0x{:08x}u)", bits);
  return s == Scalar::FLOAT32 ? f : fmt::format("float16_t({})", f);
}

}  // namespace

tg::sdk::RendererCaps glsl_caps(const ShaderFeatures& f, const ShaderLimits& l) {
  tg::sdk::RendererCaps c;
  c.dtypes = bit(Scalar::INT32) | bit(Scalar::UINT32) | bit(Scalar::FLOAT32);
  if (f.storage8) c.dtypes |= bit(Scalar::BOOL);  // bools live in uint8_t buffers
  if (f.storage8 && f.int8) c.dtypes |= bit(Scalar::INT8) | bit(Scalar::UINT8);
  if (f.storage16 && f.int16) c.dtypes |= bit(Scalar::INT16) | bit(Scalar::UINT16);
  if (f.storage16 && f.float16) c.dtypes |= bit(Scalar::FLOAT16);
  if (f.int64) c.dtypes |= bit(Scalar::INT64) | bit(Scalar::UINT64);
  if (f.float64) c.dtypes |= bit(Scalar::FLOAT64);
  // bfloat16 and fp8 have no GLSL type: their bits live in uint16_t/uint8_t and codegen computes in float.
  if (f.storage16 && f.int16) c.emulated_dtypes |= bit(Scalar::BFLOAT16);
  if (f.storage8 && f.int8) c.emulated_dtypes |= bit(Scalar::FP8E4M3) | bit(Scalar::FP8E5M2);
  c.dtypes |= c.emulated_dtypes;
  // EXP2/LOG2/SIN/POW are left to codegen's polynomials: Vulkan only bounds GLSL's exp2/log2/sin loosely.
  for (Ops o : {Ops::ADD, Ops::MUL, Ops::NEG, Ops::IDIV, Ops::MOD, Ops::CMPLT, Ops::CMPNE, Ops::CMPEQ, Ops::AND,
                Ops::OR, Ops::XOR, Ops::SHL, Ops::SHR, Ops::WHERE, Ops::FDIV, Ops::RECIPROCAL, Ops::SQRT, Ops::TRUNC,
                Ops::MAX})
    set_native(c, o);
  if (f.float64) set_native(c, Ops::MULACC);  // the exact float fma is computed in double (tg_fma)
  c.max_vector_width = 1;
  c.has_local = true;
  c.has_shared = true;
  for (int i = 0; i < 3; i++) c.global_max[i] = l.group_count[i], c.local_max[i] = l.group_size[i];
  c.max_local_size = l.invocations;
  c.max_shared_bytes = l.shared_bytes;
  c.max_buffers = l.storage_buffers;
  c.max_int_args = (l.push_constant_bytes - 16) / 8;  // after the 16-byte tg_grid
  c.thread_count = 1;
  c.supports_float_ints = true;
  std::strncpy(c.dialect, "glsl", sizeof c.dialect - 1);
  return c;
}

GlslRenderer::GlslRenderer(const tg::sdk::RendererCaps& caps, const ShaderFeatures& features)
    : CStyleRenderer(caps), features_(features) {
  const std::pair<Scalar, const char*> names[] = {
      {Scalar::BOOL, "bool"},        {Scalar::INT8, "int8_t"},   {Scalar::UINT8, "uint8_t"},
      {Scalar::INT16, "int16_t"},    {Scalar::UINT16, "uint16_t"}, {Scalar::INT32, "int"},
      {Scalar::UINT32, "uint"},      {Scalar::INT64, "int64_t"}, {Scalar::UINT64, "uint64_t"},
      {Scalar::FLOAT16, "float16_t"}, {Scalar::BFLOAT16, ""},    {Scalar::FLOAT32, "float"},
      {Scalar::FLOAT64, "double"},
  };
  for (const auto& [s, n] : names) set_type_name(s, n);
  set_op_format(Ops::IDIV, "tg_idiv({0},{1})");
  set_op_format(Ops::MOD, "tg_mod({0},{1})");
  set_op_format(Ops::SHL, "tg_shl({0},{1})");
  set_op_format(Ops::SHR, "tg_shr({0},{1})");
  set_op_format(Ops::CMPLT, "tg_lt({0},{1})");  // result is bool whatever the operands: an overload per type
  set_op_format(Ops::RECIPROCAL, "({t}(1)/{0})");
  // MULACC on float is the fused fma of INTERP (one rounding). GLSL's fma() may be a multiply then an add
  // (Vulkan gives it the precision of OpFMul + OpFAdd; lavapipe does that): tg_fma is exact (helpers).
  set_op_format(Ops::MULACC, Scalar::FLOAT32, "tg_fma({0},{1},{2})");
  // lavapipe's double trunc() loses the sign of a zero result on some CPUs (trunc(-0.5) is +0): tg_trunc64
  // copies x's sign bit onto it (a compare with 0 would be folded away with the signed zero).
  set_op_format(Ops::TRUNC, Scalar::FLOAT64, "tg_trunc64({0})");
  // bool arithmetic as INTERP defines it (GLSL has no + * & | on bool)
  set_op_format(Ops::ADD, Scalar::BOOL, "({0}||{1})");
  set_op_format(Ops::OR, Scalar::BOOL, "({0}||{1})");
  set_op_format(Ops::MAX, Scalar::BOOL, "({0}||{1})");
  set_op_format(Ops::MUL, Scalar::BOOL, "({0}&&{1})");
  set_op_format(Ops::AND, Scalar::BOOL, "({0}&&{1})");
  set_op_format(Ops::XOR, Scalar::BOOL, "({0}^^{1})");
  set_op_format(Ops::NEG, Scalar::BOOL, "(!{0})");
}

std::string GlslRenderer::render_const(const UOp& c) const {
  DType d = c.dtype();
  if (d.count() == 1) {
    const ConstValue& v = *c.const_value();
    if (d.is_bool()) return std::visit([](auto x) { return x ? "true" : "false"; }, v);
    // +0.0 is read from a push constant: lavapipe folds x * 0.0 to +0.0 even under SignedZeroInfNanPreserve
    // and NoContraction, which loses the sign of -x * 0 (round() relies on it).
    double f = std::visit([](auto x) { return static_cast<double>(x); }, v);
    if (d.is_float() && f == 0 && !std::signbit(f) && type_name(d) != "") return "tg_zero_" + type_name(d);
    if (d.scalar() == Scalar::FLOAT64) {
      double f = std::visit([](auto x) { return static_cast<double>(x); }, v);
      if (!std::isfinite(f)) return render_float_special(d, f);
      std::string s = fmt::format("{}", f);
      if (s.find_first_of(".e") == std::string::npos) s += ".0";
      return f < 0 || (f == 0 && std::signbit(f)) ? "(" + s + "lf)" : s + "lf";
    }
    int64_t i = std::visit([](auto x) { return static_cast<int64_t>(x); }, v);
    if (d.scalar() == Scalar::INT64) {
      if (i == std::numeric_limits<int64_t>::min()) return "(-9223372036854775807l-1l)";
      return i < 0 ? fmt::format("({}l)", i) : fmt::format("{}l", i);
    }
    if (d.scalar() == Scalar::UINT64) return fmt::format("{}ul", static_cast<uint64_t>(i));
  }
  return CStyleRenderer::render_const(c);
}

std::string GlslRenderer::render_float_special(DType d, double v) const { return hex_float(d.scalar(), v); }

std::string GlslRenderer::render_cast(DType to, const std::string& x) const {
  if (to.count() > 1) throw NotSupportedError("render", "the glsl renderer has no vector casts");
  // Out-of-range float -> integer conversions are undefined in SPIR-V; INTERP wraps. Going through a wider
  // signed integer wraps like it for 8/16-bit targets and for uint32 (negative floats included).
  Scalar t = to.scalar();
  if (t == Scalar::INT8 || t == Scalar::UINT8 || t == Scalar::INT16 || t == Scalar::UINT16)
    return fmt::format("{}(int({}))", type_name(to), x);
  if (t == Scalar::UINT32 && tg::sdk::has_dtype(caps_, static_cast<unsigned>(Scalar::INT64)))
    return fmt::format("uint(int64_t({}))", x);
  return fmt::format("{}({})", type_name(to), x);
}

std::string GlslRenderer::render_bitcast(DType to, DType from, const std::string& x) const {
  Scalar t = to.scalar(), f = from.scalar();
  auto is = [](Scalar s, std::initializer_list<Scalar> l) { return std::find(l.begin(), l.end(), s) != l.end(); };
  if (f == Scalar::FLOAT32 && t == Scalar::INT32) return fmt::format("floatBitsToInt({})", x);
  if (f == Scalar::FLOAT32 && t == Scalar::UINT32) return fmt::format("floatBitsToUint({})", x);
  if (t == Scalar::FLOAT32 && f == Scalar::INT32) return fmt::format("intBitsToFloat({})", x);
  if (t == Scalar::FLOAT32 && f == Scalar::UINT32) return fmt::format("uintBitsToFloat({})", x);
  if (f == Scalar::FLOAT64 && t == Scalar::INT64) return fmt::format("doubleBitsToInt64({})", x);
  if (f == Scalar::FLOAT64 && t == Scalar::UINT64) return fmt::format("doubleBitsToUint64({})", x);
  if (t == Scalar::FLOAT64 && f == Scalar::INT64) return fmt::format("int64BitsToDouble({})", x);
  if (t == Scalar::FLOAT64 && f == Scalar::UINT64) return fmt::format("uint64BitsToDouble({})", x);
  if (f == Scalar::FLOAT16 && t == Scalar::INT16) return fmt::format("float16BitsToInt16({})", x);
  if (f == Scalar::FLOAT16 && t == Scalar::UINT16) return fmt::format("float16BitsToUint16({})", x);
  if (t == Scalar::FLOAT16 && f == Scalar::INT16) return fmt::format("int16BitsToFloat16({})", x);
  if (t == Scalar::FLOAT16 && f == Scalar::UINT16) return fmt::format("uint16BitsToFloat16({})", x);
  // between signed and unsigned integers of one size a conversion keeps the bits
  if (to.scalar_itemsize() == from.scalar_itemsize() && to.is_int() && from.is_int() &&
      is(t, {Scalar::INT8, Scalar::UINT8, Scalar::INT16, Scalar::UINT16, Scalar::INT32, Scalar::UINT32,
             Scalar::INT64, Scalar::UINT64}))
    return render_cast(to, x);
  throw NotSupportedError("render", fmt::format("the glsl renderer has no bitcast {} -> {}", from.str(), to.str()));
}

std::string GlslRenderer::render_special(const UOp& special) const {
  const std::string& n = special.arg_as<std::string>();
  const char axis = "xyz"[std::clamp(n.back() - '0', 0, 2)];
  if (n.starts_with("gidx")) return fmt::format("{}(tg_gid.{})", type_name(special.dtype()), axis);
  if (n.starts_with("lidx")) return fmt::format("{}(gl_LocalInvocationID.{})", type_name(special.dtype()), axis);
  return CStyleRenderer::render_special(special);
}

// GLSL declares shared memory at global scope: render_kernel moves these lines out of main.
std::string GlslRenderer::render_local(const UOp& def, const std::string& name) const {
  DType e = def.dtype().base();
  return fmt::format("shared {} {}[{}];", type_name(e), name, def.dtype().ptr_size());
}

std::string GlslRenderer::barrier() const { return "barrier();"; }

namespace {
// GLSL indexes arrays with 32-bit ints, and no storage buffer range reaches past that: a larger buffer is
// refused here, by name, rather than rendered into an index the shader compiler rejects.
void check_indexable(const UOp& buf, const std::string& b) {
  if (buf.op() == Ops::DEFINE_GLOBAL && buf.dtype().ptr_size() > std::numeric_limits<int32_t>::max())
    throw NotSupportedError("render", fmt::format("VULKAN indexes buffers with 32-bit ints; {} holds {} elements",
                                                  b, buf.dtype().ptr_size()));
}
}  // namespace

std::string GlslRenderer::render_load(const UOp& buf, const std::string& b, const std::string& off,
                                      DType value) const {
  if (value.count() > 1) throw NotSupportedError("render", "the glsl renderer has no vector loads");
  check_indexable(buf, b);
  bool global_bool = buf.op() == Ops::DEFINE_GLOBAL && value.is_bool();
  return global_bool ? fmt::format("bool(uint({}[{}]))", b, off) : fmt::format("{}[{}]", b, off);
}

std::string GlslRenderer::render_store(const UOp& buf, const std::string& b, const std::string& off,
                                       const std::string& x, DType) const {
  check_indexable(buf, b);
  bool global_bool = buf.op() == Ops::DEFINE_GLOBAL && buf.dtype().base().is_bool();
  if (global_bool) return fmt::format("{}[{}] = uint8_t(uint({}));", b, off, x);
  DType e = buf.dtype().base();
  if (e.is_float()) return fmt::format("{{ precise {} tg_st = {}; {}[{}] = tg_st; }}", type_name(e), x, b, off);
  return fmt::format("{}[{}] = {};", b, off, x);
}

// Overloads only for the types the shader mentions (its buffers, arguments and casts; 32-bit ones always).
std::string GlslRenderer::helpers(const std::string& body) const {
  auto used = [&](Scalar s) {
    return tg::sdk::has_dtype(caps_, static_cast<unsigned>(s)) &&
           (s == Scalar::INT32 || s == Scalar::UINT32 || s == Scalar::FLOAT32 ||
            body.find(type_name(DType(s))) != std::string::npos);
  };
  std::string out;
  for (const char* fn : {"tg_idiv", "tg_mod", "tg_shl", "tg_shr"}) {
    if (body.find(std::string(fn) + "(") == std::string::npos) continue;
    for (int pass = 0; pass < 2; pass++)  // 32-bit overloads first: the narrow ones call them
      for (const IntType& t : kInts)
        if (used(t.s) && (t.bits < 32) == (pass == 1))
          out += int_helpers(t, fn);
  }
  // float fma, one rounding: the product is exact in double; the double sum is made round-to-odd (an inexact
  // sum gets an odd last bit, from its exact error by TwoSum), so rounding it to float is correctly rounded.
  if (body.find("tg_trunc64(") != std::string::npos)
    out += "double tg_trunc64(double x) {\n"
           "  uvec2 t = unpackDouble2x32(trunc(x));\n"
           "  t.y = (t.y & 0x7fffffffu) | (unpackDouble2x32(x).y & 0x80000000u);\n"
           "  return packDouble2x32(t);\n"
           "}\n";
  if (body.find("tg_fma(") != std::string::npos)
    out += "float tg_fma(float a, float b, float c) {\n"
           "  precise double p = double(a) * double(b);\n"
           "  precise double s = p + double(c);\n"
           "  precise double v = s - p;\n"
           "  precise double e = (p - (s - v)) + (double(c) - v);\n"
           "  if (e != 0.0 && !isinf(s) && !isnan(s)) {\n"
           "    uvec2 w = unpackDouble2x32(s);\n"
           "    if ((w.x & 1u) == 0u) {\n"
           "      if ((e > 0.0) == (s > 0.0)) w.x += 1u;\n"
           "      else if (w.x != 0u) w.x -= 1u;\n"
           "      else w = uvec2(0xffffffffu, w.y - 1u);\n"
           "      s = packDouble2x32(w);\n"
           "    }\n"
           "  }\n"
           "  return float(s);\n"
           "}\n";
  if (body.find("tg_lt(") != std::string::npos) {
    out += "bool tg_lt(bool a, bool b) { return !a && b; }\n";
    for (Scalar s : {Scalar::INT8, Scalar::UINT8, Scalar::INT16, Scalar::UINT16, Scalar::INT32, Scalar::UINT32,
                     Scalar::INT64, Scalar::UINT64, Scalar::FLOAT16, Scalar::FLOAT32, Scalar::FLOAT64})
      if (used(s)) out += fmt::format("bool tg_lt({0} a, {0} b) {{ return a < b; }}\n", type_name(DType(s)));
  }
  return out;
}

std::string GlslRenderer::render_kernel(const tg::sdk::CKernel& k) const {
  // Every variable is precise (NoContraction): a*b+c stays two roundings, as in INTERP, instead of the fma
  // drivers may form. Stores wrap their value in one too (render_store).
  std::string body, shared;
  for (const auto& l : k.body) {
    size_t at = l.find_first_not_of(' ');
    std::string first = l.substr(at, l.find(' ', at) - at);
    if (first == "shared") {
      shared += l.substr(at) + "\n";
      continue;
    }
    bool decl = std::any_of(std::begin(kDeclTypes), std::end(kDeclTypes), [&](const char* t) { return first == t; });
    body += "  " + (decl ? l.substr(0, at) + "precise " + l.substr(at) : l) + "\n";
  }
  std::string out = fmt::format("#version 450\n// kernel {}\n", k.name);
  // Enabling an extension adds no SPIR-V capability; only the types a shader uses do.
  out += "#extension GL_EXT_shader_explicit_arithmetic_types : require\n"
         "#extension GL_EXT_shader_8bit_storage : require\n"
         "#extension GL_EXT_shader_16bit_storage : require\n";
  // Keep -0, inf and nan through the driver's algebra (x*0 is not 0 for x = -1 or inf), where it can.
  const std::pair<bool, int> widths[] = {{features_.signed_zero16 && tg::sdk::has_dtype(caps_, static_cast<unsigned>(Scalar::FLOAT16)), 16},
                                         {features_.signed_zero32, 32},
                                         {features_.signed_zero64 && tg::sdk::has_dtype(caps_, static_cast<unsigned>(Scalar::FLOAT64)), 64}};
  if (features_.signed_zero32) out += "#extension GL_EXT_spirv_intrinsics : require\n";
  for (auto [on, bits] : widths)
    if (on)
      out += fmt::format("spirv_execution_mode(extensions = [\"SPV_KHR_float_controls\"], capabilities = [4466], "
                         "4461, {});  // SignedZeroInfNanPreserve\n", bits);
  out += "layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;\n";
  for (size_t i = 0; i < k.bufs.size(); i++) {
    const auto& b = k.bufs[i];
    if (b.index != static_cast<int64_t>(i))
      throw ValueError("render", fmt::format("buffer arguments are not 0..n-1 (got data{})", b.index));
    DType e = b.dtype.base();
    std::string t = e.is_bool() ? "uint8_t" : type_name(e);
    out += fmt::format("layout(set = 0, binding = {}, std430) {}buffer Buf{} {{ {} {}[]; }};\n", b.index,
                       b.written ? "" : "readonly ", b.index, t, b.name);
  }
  // Without lidx the device picks the workgroup size: gidx is the global invocation id, and invocations past
  // the launch's global size (tg_grid) return at once.
  const bool packed = body.find("gl_LocalInvocationID") == std::string::npos;
  out += "layout(push_constant) uniform Vals { uvec3 tg_grid; float tg_zero;";
  for (size_t i = 0; i < k.vars.size(); i++)
    out += fmt::format(" layout(offset = {}) {} {};", 16 + 8 * i, type_name(k.vars[i].dtype), k.vars[i].name);
  out += " } tg_vals;\n" + shared;
  out += helpers(out + body);
  out += "void main() {\n";
  if (packed)
    out += "  if (any(greaterThanEqual(gl_GlobalInvocationID, tg_vals.tg_grid))) return;\n"
           "  uvec3 tg_gid = gl_GlobalInvocationID;\n";
  else
    out += "  uvec3 tg_gid = gl_WorkGroupID;\n";
  for (const auto& v : k.vars) out += fmt::format("  {} {} = tg_vals.{};\n", type_name(v.dtype), v.name, v.name);
  for (const char* t : {"float16_t", "float", "double"})
    if (body.find(fmt::format("tg_zero_{}", t)) != std::string::npos)
      out += fmt::format("  {0} tg_zero_{0} = {0}(tg_vals.tg_zero);\n", t);
  return out + body + "}\n";
}

}  // namespace tg::vulkan
