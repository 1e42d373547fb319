#include "plugins/cuda/renderer.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include <fmt/format.h>

#include "base/error.hpp"
#include "uop/uop.hpp"

namespace tg::cuda {

using tg::sdk::CKernel;
using tg::sdk::RendererCaps;

namespace {

void set_bit(uint64_t* words, int i) { words[i / 64] |= uint64_t{1} << (i % 64); }

bool narrow_float(Scalar s) { return s == Scalar::FLOAT16 || s == Scalar::BFLOAT16; }

constexpr const char* kLaunchBounds = "TG_LAUNCH_BOUNDS";
constexpr const char* kGidx0 = "TG_GIDX0";

}  // namespace

RendererCaps cuda_caps(const ArchLimits& l) {
  RendererCaps c;
  for (Scalar s : {Scalar::BOOL, Scalar::INT8, Scalar::UINT8, Scalar::INT16, Scalar::UINT16, Scalar::INT32,
                   Scalar::UINT32, Scalar::INT64, Scalar::UINT64, Scalar::FLOAT16, Scalar::BFLOAT16,
                   Scalar::FLOAT32, Scalar::FLOAT64})
    set_bit(&c.dtypes, static_cast<int>(s));
  // fp8 lives in memory as bytes and computes in float (codegen's emulation, as CLANG): cuda_fp8.h converts
  // in hardware only with saturation (cvt.rn.satfinite), and PyTorch's .to() gives NaN/inf on overflow.
  for (Scalar s : {Scalar::FP8E4M3, Scalar::FP8E5M2}) {
    set_bit(&c.dtypes, static_cast<int>(s));
    c.emulated_dtypes |= uint64_t{1} << static_cast<int>(s);
  }
  for (Ops o :
       {Ops::ADD, Ops::MUL,  Ops::NEG,   Ops::IDIV, Ops::MOD,  Ops::CMPLT, Ops::CMPNE, Ops::CMPEQ,
        Ops::AND, Ops::OR,   Ops::XOR,   Ops::SHL,  Ops::SHR,  Ops::WHERE, Ops::FDIV,  Ops::RECIPROCAL,
        Ops::MAX, Ops::SQRT, Ops::TRUNC, Ops::EXP2, Ops::LOG2, Ops::SIN,   Ops::MULACC})
    set_bit(c.native_ops, static_cast<int>(o));
  c.max_vector_width = 4;  // loads and stores of up to 4 lanes (16 bytes of float); arithmetic stays scalar
  c.has_local = c.has_shared = true;
  c.has_threads = false;
  for (int i = 0; i < 3; i++) c.global_max[i] = l.grid_dims[i], c.local_max[i] = l.block_dims[i];
  c.max_local_size = l.max_threads;
  c.max_shared_bytes = l.shared_bytes;
  // Kernel parameters share 4 KiB: 8 bytes per pointer or long long.
  c.max_buffers = 256, c.max_int_args = 256;
  c.thread_count = 1;
  c.supports_float_ints = true;
  std::snprintf(c.dialect, sizeof c.dialect, "cuda sm_%d", l.sm);  // errors name the arch
  if (l.sm >= 80) {
    c.tensor_core_count = 2;
    c.tensor_cores[0] = mma_m16n8k16(Scalar::FLOAT16);
    c.tensor_cores[1] = mma_m16n8k16(Scalar::BFLOAT16);
  }
  return c;
}

tg::sdk::TensorCore mma_m16n8k16(Scalar in) {
  // PTX ISA, "Matrix Fragments for mma.m16n8k16": A row = groupID (+8 for a2,a3,a6,a7), A col =
  // 2 * threadID_in_group + (i & 1) (+8 for a4..a7); B row = 2 * threadID_in_group + (i & 1) (+8 for b2,b3),
  // B col = groupID; C as A's first half. groupID is lane bits 2..4, threadID_in_group lane bits 0..1.
  using T = tg::sdk::TensorCore;
  auto lane = [](int b) { return static_cast<uint8_t>(T::kLaneBit + b); };
  auto elem = [](int b) { return static_cast<uint8_t>(T::kElemBit + b); };
  T tc;
  tc.m = 16, tc.n = 8, tc.k = 16, tc.threads = 32;
  tc.in = static_cast<uint8_t>(in), tc.acc = static_cast<uint8_t>(Scalar::FLOAT32);
  const uint8_t a[] = {lane(2), lane(3), lane(4), elem(1), elem(0), lane(0), lane(1), elem(2)};
  const uint8_t b[] = {elem(0), lane(0), lane(1), elem(1), lane(2), lane(3), lane(4)};
  const uint8_t c[] = {lane(2), lane(3), lane(4), elem(1), elem(0), lane(0), lane(1)};
  std::copy(std::begin(a), std::end(a), tc.a_bits);
  std::copy(std::begin(b), std::end(b), tc.b_bits);
  std::copy(std::begin(c), std::end(c), tc.c_bits);
  return tc;
}

CudaRenderer::CudaRenderer(const RendererCaps& caps) : CStyleRenderer(caps) {
  set_type_name(Scalar::FLOAT16, "half");
  set_type_name(Scalar::BFLOAT16, "__nv_bfloat16");
  set_type_name(Scalar::INT8, "signed char");
  for (auto [op, f] :
       {std::pair{Ops::SQRT, "sqrt"}, std::pair{Ops::TRUNC, "trunc"}, std::pair{Ops::EXP2, "exp2"},
        std::pair{Ops::LOG2, "log2"}, std::pair{Ops::SIN, "sin"}}) {
    set_op_format(op, Scalar::FLOAT32, fmt::format("{}f({{0}})", f));
    set_op_format(op, Scalar::FLOAT64, fmt::format("{}({{0}})", f));
  }
  // MULACC on float/double is the fused fma (one rounding, as INTERP); NVRTC runs with --fmad=false so
  // that a*b+c elsewhere stays two roundings.
  set_op_format(Ops::MULACC, Scalar::FLOAT32, "fmaf({0}, {1}, {2})");
  set_op_format(Ops::MULACC, Scalar::FLOAT64, "fma({0}, {1}, {2})");
  // half and bfloat16 compute in float and round once: float's 24 bits make + - * / sqrt correctly rounded.
  for (Scalar s : {Scalar::FLOAT16, Scalar::BFLOAT16}) {
    std::string t = s == Scalar::FLOAT16 ? "half" : "__nv_bfloat16";
    auto in_float = [&](const std::string& expr) { return fmt::format("(({})({}))", t, expr); };
    set_op_format(Ops::ADD, s, in_float("(float)({0})+(float)({1})"));
    set_op_format(Ops::MUL, s, in_float("(float)({0})*(float)({1})"));
    set_op_format(Ops::NEG, s, in_float("-(float)({0})"));
    set_op_format(Ops::FDIV, s, in_float("(float)({0})/(float)({1})"));
    set_op_format(Ops::RECIPROCAL, s, in_float("1.0f/(float)({0})"));
    set_op_format(Ops::MAX, s, "(((float)({0})<(float)({1}))?{1}:{0})");
    set_op_format(Ops::MULACC, s, in_float("(float)(({t})((float)({0})*(float)({1})))+(float)({2})"));
    for (auto [op, f] :
         {std::pair{Ops::SQRT, "sqrtf"}, std::pair{Ops::TRUNC, "truncf"}, std::pair{Ops::EXP2, "exp2f"},
          std::pair{Ops::LOG2, "log2f"}, std::pair{Ops::SIN, "sinf"}})
      set_op_format(op, s, in_float(fmt::format("{}((float)({{0}}))", f)));
  }
  // C++ promotes char/short operands to int: narrow results that can leave the type's range again.
  for (Scalar s : {Scalar::INT8, Scalar::UINT8, Scalar::INT16, Scalar::UINT16})
    for (Ops op : {Ops::ADD, Ops::MUL, Ops::NEG, Ops::IDIV, Ops::SHL, Ops::MULACC})
      set_op_format(op, s, "(({t})" + op_format(op, s) + ")");
}

std::string CudaRenderer::type_name(DType d) const {
  if (d.is_ptr()) return CStyleRenderer::type_name(d.base()) + "*";
  if (d.count() > 1) {  // tg_float4, tg_signed_char4: one identifier even where the scalar's name has spaces
    std::string s = CStyleRenderer::type_name(d.scalar_type());
    std::replace(s.begin(), s.end(), ' ', '_');
    return fmt::format("tg_{}{}", s, d.count());
  }
  return CStyleRenderer::type_name(d);
}

std::string CudaRenderer::render_float_special(DType d, double v) const {
  std::string f = std::isnan(v) ? "__int_as_float(0x7fffffff)"
                                : (v < 0 ? "__int_as_float(0xff800000)" : "__int_as_float(0x7f800000)");
  if (d.scalar() == Scalar::FLOAT64)
    return std::isnan(v) ? "__longlong_as_double(0x7ff8000000000000ll)"
                         : (v < 0 ? "__longlong_as_double((long long)0xfff0000000000000ull)"
                                  : "__longlong_as_double(0x7ff0000000000000ll)");
  return d.scalar() == Scalar::FLOAT32 ? f : render_cast(d, f);
}

std::string CudaRenderer::render_cast(DType to, const std::string& x) const {
  if (to.count() > 1)
    throw NotSupportedError("render", fmt::format("the 'cuda' renderer has no vector cast to {}", to.str()));
  // Through tg_cast: double goes to half and bfloat16 in one rounding, half and bfloat16 leave through float.
  return fmt::format("tg_cast<{}>({})", type_name(to), x);
}

std::string CudaRenderer::render_bitcast(DType to, DType from, const std::string& x) const {
  if (to.itemsize() != from.itemsize() || to.is_bool() || from.is_bool())
    throw NotSupportedError("render",
                            fmt::format("the 'cuda' renderer cannot bitcast {} to {}", from.str(), to.str()));
  return fmt::format("tg_bitcast<{}>({})", type_name(to), x);
}

std::string CudaRenderer::render_special(const UOp& special) const {
  const std::string& n = special.arg_as<std::string>();
  int dim = n.empty() ? -1 : n.back() - '0';
  const char* axis[] = {"x", "y", "z"};
  std::string t = type_name(special.dtype());
  if (n == "gidx0") return fmt::format("(({}){})", t, kGidx0);  // blockIdx.x, or a global id: see render()
  if (dim >= 0 && dim < 3 && n.starts_with("gidx")) return fmt::format("(({})blockIdx.{})", t, axis[dim]);
  if (dim >= 0 && dim < 3 && n.starts_with("lidx")) return fmt::format("(({})threadIdx.{})", t, axis[dim]);
  return CStyleRenderer::render_special(special);
}

std::string CudaRenderer::render_vectorize(DType d, std::span<const std::string> elems) const {
  return fmt::format("{}{{{{{}}}}}", type_name(d), fmt::join(elems, ","));
}

std::string CudaRenderer::render_gep(DType vec, const std::string& x, int64_t lane) const {
  (void)vec;
  return fmt::format("{}.v[{}]", x, lane);
}

// Vector accesses of global and shared memory check their alignment at run time (a view may start anywhere
// in its buffer): aligned, one wide load or store; else element by element. Register arrays go element by
// element, so they stay in registers.
std::string CudaRenderer::render_load(const UOp& buf, const std::string& b, const std::string& off,
                                      DType value) const {
  if (value.count() == 1) return {};
  if (buf.op() != Ops::DEFINE_REG) return fmt::format("tg_vload<{}>({}+{})", type_name(value), b, off);
  std::vector<std::string> el;
  for (int i = 0; i < value.count(); i++) el.push_back(fmt::format("{}[{}+{}]", b, off, i));
  return render_vectorize(value, el);
}

std::string CudaRenderer::render_store(const UOp& buf, const std::string& b, const std::string& off,
                                       const std::string& x, DType value) const {
  if (value.count() == 1) return {};
  if (buf.op() != Ops::DEFINE_REG) return fmt::format("tg_vstore({}+{}, {});", b, off, x);
  std::string out = fmt::format("{{ {} tg_v = {};", type_name(value), x);
  for (int i = 0; i < value.count(); i++) out += fmt::format(" {}[{}+{}] = tg_v.v[{}];", b, off, i, i);
  return out + " }";
}

std::string CudaRenderer::render_local(const UOp& def, const std::string& name) const {
  return fmt::format("__shared__ __align__(16) {} {}[{}];", CStyleRenderer::type_name(def.dtype().base()),
                     name, def.dtype().ptr_size());
}

std::string CudaRenderer::render_wmma(const UOp& wmma, const std::string& a, const std::string& b,
                                      const std::string& c) const {
  Scalar in = wmma.src(0)->dtype().scalar();
  if (wmma.dtype().scalar() != Scalar::FLOAT32 || wmma.dtype().count() != 4 ||
      wmma.src(0)->dtype().count() != 8 || !narrow_float(in))
    throw NotSupportedError("render", fmt::format("the 'cuda' renderer has no tensor core for {} from {}",
                                                  wmma.dtype().str(), wmma.src(0)->dtype().str()));
  return fmt::format("tg_mma_{}({}, {}, {})", in == Scalar::FLOAT16 ? "f16" : "bf16", a, b, c);
}

std::string CudaRenderer::barrier() const { return "__syncthreads();"; }

std::string CudaRenderer::render_kernel(const CKernel& k) const {
  std::string body;
  for (const auto& l : k.body) body += l + "\n";
  std::vector<std::string> params;
  for (const auto& b : k.bufs)
    params.push_back(fmt::format("{}{} {}", b.written ? "" : "const ", type_name(b.dtype), b.name));
  std::string unpack;
  for (size_t i = 0; i < k.vars.size(); i++) {  // every integer argument is 64-bit at the launch
    params.push_back(fmt::format("const long long tg_val{}", i));
    std::string t = type_name(k.vars[i].dtype);
    unpack += fmt::format("  const {} {} = ({})tg_val{};\n", t, k.vars[i].name, t, i);
  }
  std::string signature = fmt::format("{}", fmt::join(params, ", "));
  auto uses = [&](std::string_view word) {
    return body.find(word) != std::string::npos || signature.find(word) != std::string::npos;
  };
  std::string out;
  if (uses("half")) out += "#include <cuda_fp16.h>\n";
  if (uses("__nv_bfloat16")) out += "#include <cuda_bf16.h>\n";
  out +=
      "template <class T, class F> __device__ __forceinline__ T tg_bitcast(F x) { T r; memcpy(&r, &x, sizeof "
      "r); "
      "return r; }\n";
  out += "template <class T, class F> __device__ __forceinline__ T tg_cast(F x) { return (T)x; }\n";
  if (uses("half")) {
    out +=
        "template <> __device__ __forceinline__ half tg_cast<half, double>(double x) { return "
        "__double2half(x); }\n";
    for (const char* t : {"signed char", "unsigned char", "short", "unsigned short", "int", "unsigned int",
                          "long long", "unsigned long long", "bool", "double"})
      out += fmt::format(
          "template <> __device__ __forceinline__ {0} tg_cast<{0}, half>(half x) {{ return ({0})"
          "__half2float(x); }}\n",
          t);
  }
  if (uses("__nv_bfloat16")) {
    out +=
        "template <> __device__ __forceinline__ __nv_bfloat16 tg_cast<__nv_bfloat16, double>(double x) { "
        "return "
        "__double2bfloat16(x); }\n";
    for (const char* t : {"signed char", "unsigned char", "short", "unsigned short", "int", "unsigned int",
                          "long long", "unsigned long long", "bool", "double"})
      out += fmt::format(
          "template <> __device__ __forceinline__ {0} tg_cast<{0}, __nv_bfloat16>(__nv_bfloat16 x) "
          "{{ return ({0})__bfloat162float(x); }}\n",
          t);
  }
  if (uses("half") && uses("__nv_bfloat16")) {
    out +=
        "template <> __device__ __forceinline__ half tg_cast<half, __nv_bfloat16>(__nv_bfloat16 x) { return "
        "__float2half(__bfloat162float(x)); }\n";
    out +=
        "template <> __device__ __forceinline__ __nv_bfloat16 tg_cast<__nv_bfloat16, half>(half x) { return "
        "__float2bfloat16(__half2float(x)); }\n";
  }
  for (DType v : k.vector_types) {
    std::string s = CStyleRenderer::type_name(v.scalar_type());
    out += fmt::format("struct __align__({}) {} {{ {} v[{}]; }};\n", std::min<size_t>(16, v.itemsize()),
                       type_name(v), s, v.count());
  }
  if (body.find("tg_vload<") != std::string::npos)
    out +=
        "template <class V, class T> __device__ __forceinline__ V tg_vload(const T* p) {\n"
        "  if ((reinterpret_cast<size_t>(p) & (alignof(V) - 1)) == 0) return *reinterpret_cast<const "
        "V*>(p);\n"
        "  V v;\n  for (int i = 0; i < (int)(sizeof(V) / sizeof(T)); i++) v.v[i] = p[i];\n  return v;\n}\n";
  if (body.find("tg_vstore(") != std::string::npos)
    out +=
        "template <class T, class V> __device__ __forceinline__ void tg_vstore(T* p, V v) {\n"
        "  if ((reinterpret_cast<size_t>(p) & (alignof(V) - 1)) == 0) { *reinterpret_cast<V*>(p) = v; "
        "return; }\n"
        "  for (int i = 0; i < (int)(sizeof(V) / sizeof(T)); i++) p[i] = v.v[i];\n}\n";
  // D = A * B + C on one warp: each lane's eight A and four B values go as pairs packed in 32-bit registers.
  for (auto [tag, ptx] : {std::pair{"f16", "f16"}, std::pair{"bf16", "bf16"}}) {
    std::string fn = fmt::format("tg_mma_{}", tag);
    if (body.find(fn + "(") == std::string::npos) continue;
    std::string t = std::string(tag) == "f16" ? "half" : "__nv_bfloat16";
    out += fmt::format(
        "__device__ __forceinline__ tg_float4 {0}(tg_{1}8 a, tg_{1}4 b, tg_float4 c) {{\n"
        "  const unsigned *ra = (const unsigned*)&a, *rb = (const unsigned*)&b;\n"
        "  asm(\"mma.sync.aligned.m16n8k16.row.col.f32.{2}.{2}.f32 {{%0, %1, %2, %3}}, {{%4, %5, %6, %7}}, "
        "{{%8, %9}}, {{%0, %1, %2, %3}};\"\n"
        "      : \"+f\"(c.v[0]), \"+f\"(c.v[1]), \"+f\"(c.v[2]), \"+f\"(c.v[3])\n"
        "      : \"r\"(ra[0]), \"r\"(ra[1]), \"r\"(ra[2]), \"r\"(ra[3]), \"r\"(rb[0]), \"r\"(rb[1]));\n"
        "  return c;\n}}\n",
        fn, t, ptx);
  }
  out += fmt::format("extern \"C\" __global__ void {} {}({}) {{\n{}{}}}\n", kLaunchBounds, k.name, signature,
                     unpack, body);
  return out;
}

tg::sdk::Status CudaRenderer::render(std::string_view name, std::span<const UOp* const> uops,
                                     tg::sdk::Blob& source) noexcept {
  tg::sdk::Status s = CStyleRenderer::render(name, uops, source);
  if (!s.ok()) return s;
  return tg::sdk::guard([&] {
    // A kernel that reads local ids runs blocks of exactly the product of their sizes, which bounds its
    // registers; one without them may run any block size (every thread does the same work), so it has none.
    int64_t threads = local_threads(uops);
    bool local = threads > 0;
    std::string text(source.text());
    size_t at = text.find(kLaunchBounds);
    text.replace(at, std::strlen(kLaunchBounds) + 1,
                 local ? fmt::format("__launch_bounds__({}) ", threads) : "");
    // Without local ids or barriers a block of one thread would waste 31 lanes of each warp: gidx0 becomes a
    // global id over blocks of kGlobalIdBlock threads, the ones past its size return, and the marker tells
    // the compiler (and so the launch) to size the grid that way.
    const UOp* gidx0 = nullptr;
    bool barrier = false;
    for (const UOp* u : uops) {
      if (u->op() == Ops::SPECIAL && u->arg_as<std::string>() == "gidx0") gidx0 = u;
      barrier = barrier || u->op() == Ops::BARRIER;
    }
    bool global_id = gidx0 != nullptr && !local && !barrier && gidx0->src(0)->is_const();
    for (size_t p; (p = text.find(kGidx0)) != std::string::npos;)
      text.replace(p, std::strlen(kGidx0), global_id ? "(blockIdx.x*blockDim.x+threadIdx.x)" : "blockIdx.x");
    if (global_id) {
      int64_t n = std::visit([](auto v) { return static_cast<int64_t>(v); }, *gidx0->src(0)->const_value());
      size_t decl = text.find(" gidx0 = ");
      size_t eol = text.find('\n', decl);
      text.insert(eol + 1, fmt::format("  if (gidx0 >= {}) return;\n", n));
      text.insert(0, kGlobalIdMarker);
    }
    source.assign(text);
  });
}

}  // namespace tg::cuda
