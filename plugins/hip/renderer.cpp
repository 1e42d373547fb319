#include "plugins/hip/renderer.hpp"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <regex>
#include <set>

#include <fmt/format.h>

#include "base/error.hpp"
#include "uop/uop.hpp"

namespace tg::hip {

using tg::sdk::CKernel;
using tg::sdk::RendererCaps;

namespace {

void set_bit(uint64_t* words, int i) { words[i / 64] |= uint64_t{1} << (i % 64); }

constexpr const char* kFlatWorkGroup = "TG_FLAT_WORK_GROUP";

// The declaration of a device-library function the body calls: ocml math on float or double (fma takes
// three), ockl launch indices.
std::string extern_decl(const std::string& fn) {
  if (fn.starts_with("__ockl_"))
    return fmt::format("extern \"C\" __attribute__((device, const)) unsigned long {}(unsigned int);", fn);
  std::string t = fn.ends_with("_f64") ? "double" : "float";
  std::string args = fn.find("_fma_") != std::string::npos ? fmt::format("{0}, {0}, {0}", t) : t;
  return fmt::format("extern \"C\" __attribute__((device, const)) {} {}({});", t, fn, args);
}

// Wave32 WMMA reads all sixteen halves of A's row (B's column) in lane l and again in lane l + 16; each lane
// holds eight, so the other eight come from lane l ^ 16 through ds_bpermute (a byte address, 4 per lane).
constexpr const char* kWmmaHelper = R"(typedef _Float16 tg_half16 __attribute__((ext_vector_type(16)));
typedef unsigned int tg_uint4 __attribute__((ext_vector_type(4)));
static inline __attribute__((device, always_inline)) tg_half16 tg_wmma_operand(half8 x, int lane) {
  tg_uint4 mine = __builtin_bit_cast(tg_uint4, x), theirs;
  for (int i = 0; i < 4; i++) theirs[i] = __builtin_amdgcn_ds_bpermute((lane ^ 16) << 2, (int)mine[i]);
  half8 y = __builtin_bit_cast(half8, theirs);
  return lane < 16 ? __builtin_shufflevector(x, y, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)
                   : __builtin_shufflevector(y, x, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
}
static inline __attribute__((device, always_inline)) float8 tg_wmma_f16(half8 a, half8 b, float8 c) {
  int lane = __builtin_amdgcn_mbcnt_lo(~0u, 0u);
  return __builtin_amdgcn_wmma_f32_16x16x16_f16_w32(tg_wmma_operand(a, lane), tg_wmma_operand(b, lane), c);
}
)";

bool has_mfma(const Arch& a) {
  return a.name == "gfx908" || a.name == "gfx90a" || a.name.starts_with("gfx94");
}
bool has_wmma(const Arch& a) { return a.isa_version / 1000 == 11; }

}  // namespace

RendererCaps hip_caps(const ArchLimits& l) {
  RendererCaps c;
  for (Scalar s :
       {Scalar::BOOL, Scalar::INT8, Scalar::UINT8, Scalar::INT16, Scalar::UINT16, Scalar::INT32,
        Scalar::UINT32, Scalar::INT64, Scalar::UINT64, Scalar::FLOAT16, Scalar::FLOAT32, Scalar::FLOAT64})
    set_bit(&c.dtypes, static_cast<int>(s));
  for (Ops o :
       {Ops::ADD, Ops::MUL,  Ops::NEG,   Ops::IDIV, Ops::MOD,  Ops::CMPLT, Ops::CMPNE, Ops::CMPEQ,
        Ops::AND, Ops::OR,   Ops::XOR,   Ops::SHL,  Ops::SHR,  Ops::WHERE, Ops::FDIV,  Ops::RECIPROCAL,
        Ops::MAX, Ops::SQRT, Ops::TRUNC, Ops::EXP2, Ops::LOG2, Ops::SIN,   Ops::MULACC})
    set_bit(c.native_ops, static_cast<int>(o));
  c.max_vector_width = 1;  // a GPU kernel's upcasts become scalars
  c.has_local = c.has_shared = true;
  c.has_threads = false;
  for (int i = 0; i < 3; i++) c.global_max[i] = l.grid_dims[i], c.local_max[i] = l.block_dims[i];
  c.max_local_size = l.max_threads;
  c.max_shared_bytes = l.shared_bytes;
  c.max_buffers = 256,
  c.max_int_args = 256;  // kernel arguments: 8 bytes each within the 4 KiB kernarg segment
  c.thread_count = 1;
  c.supports_float_ints = true;
  std::snprintf(c.dialect, sizeof c.dialect, "hip %s", l.arch.name.c_str());  // errors name the arch
  if (has_mfma(l.arch)) c.tensor_core_count = 1, c.tensor_cores[0] = mfma_16x16x16_f16();
  if (has_wmma(l.arch)) c.tensor_core_count = 1, c.tensor_cores[0] = wmma_16x16x16_f16();
  return c;
}

tg::sdk::TensorCore mfma_16x16x16_f16() {
  // A[i][k] is element k % 4 of lane i + 16 * (k / 4); B[k][j] element k % 4 of lane j + 16 * (k / 4);
  // D[i][j] element i % 4 of lane j + 16 * (i / 4).
  using T = tg::sdk::TensorCore;
  auto lane = [](int b) { return static_cast<uint8_t>(T::kLaneBit + b); };
  auto elem = [](int b) { return static_cast<uint8_t>(T::kElemBit + b); };
  T tc;
  tc.m = 16, tc.n = 16, tc.k = 16, tc.threads = 64;
  tc.in = static_cast<uint8_t>(Scalar::FLOAT16), tc.acc = static_cast<uint8_t>(Scalar::FLOAT32);
  const uint8_t a[] = {lane(0), lane(1), lane(2), lane(3), elem(0), elem(1), lane(4), lane(5)};
  const uint8_t b[] = {elem(0), elem(1), lane(4), lane(5), lane(0), lane(1), lane(2), lane(3)};
  const uint8_t c[] = {elem(0), elem(1), lane(4), lane(5), lane(0), lane(1), lane(2), lane(3)};
  std::copy(std::begin(a), std::end(a), tc.a_bits);
  std::copy(std::begin(b), std::end(b), tc.b_bits);
  std::copy(std::begin(c), std::end(c), tc.c_bits);
  return tc;
}

tg::sdk::TensorCore wmma_16x16x16_f16() {
  // A[i][k] is element k % 8 of lane i + 16 * (k / 8) (the instruction's element k of lanes i and i + 16);
  // B[k][j] the same with j for i; D[i][j] element i / 2 of lane j + 16 * (i % 2) (RDNA3 ISA, WMMA).
  using T = tg::sdk::TensorCore;
  auto lane = [](int b) { return static_cast<uint8_t>(T::kLaneBit + b); };
  auto elem = [](int b) { return static_cast<uint8_t>(T::kElemBit + b); };
  T tc;
  tc.m = 16, tc.n = 16, tc.k = 16, tc.threads = 32;
  tc.in = static_cast<uint8_t>(Scalar::FLOAT16), tc.acc = static_cast<uint8_t>(Scalar::FLOAT32);
  const uint8_t a[] = {lane(0), lane(1), lane(2), lane(3), elem(0), elem(1), elem(2), lane(4)};
  const uint8_t b[] = {elem(0), elem(1), elem(2), lane(4), lane(0), lane(1), lane(2), lane(3)};
  const uint8_t c[] = {lane(4), elem(0), elem(1), elem(2), lane(0), lane(1), lane(2), lane(3)};
  std::copy(std::begin(a), std::end(a), tc.a_bits);
  std::copy(std::begin(b), std::end(b), tc.b_bits);
  std::copy(std::begin(c), std::end(c), tc.c_bits);
  return tc;
}

HipRenderer::HipRenderer(const RendererCaps& caps) : CStyleRenderer(caps) {
  set_type_name(Scalar::FLOAT16, "half");  // typedef of _Float16
  set_type_name(Scalar::BFLOAT16, "");
  for (auto [op, f] :
       {std::pair{Ops::SQRT, "sqrt"}, std::pair{Ops::TRUNC, "trunc"}, std::pair{Ops::EXP2, "exp2"},
        std::pair{Ops::LOG2, "log2"}, std::pair{Ops::SIN, "sin"}}) {
    set_op_format(op, Scalar::FLOAT32, fmt::format("__ocml_{}_f32({{0}})", f));
    set_op_format(op, Scalar::FLOAT64, fmt::format("__ocml_{}_f64({{0}})", f));
  }
  // MULACC on float/double is the fused fma (one rounding, as INTERP); clang runs with -ffp-contract=off so
  // that a*b+c elsewhere stays two roundings.
  set_op_format(Ops::MULACC, Scalar::FLOAT32, "__ocml_fma_f32({0}, {1}, {2})");
  set_op_format(Ops::MULACC, Scalar::FLOAT64, "__ocml_fma_f64({0}, {1}, {2})");
  // half computes in float and rounds once: float's 24 bits make + - * / sqrt correctly rounded.
  auto in_float = [](const std::string& expr) { return fmt::format("((half)({}))", expr); };
  set_op_format(Ops::ADD, Scalar::FLOAT16, in_float("(float)({0})+(float)({1})"));
  set_op_format(Ops::MUL, Scalar::FLOAT16, in_float("(float)({0})*(float)({1})"));
  set_op_format(Ops::NEG, Scalar::FLOAT16, in_float("-(float)({0})"));
  set_op_format(Ops::FDIV, Scalar::FLOAT16, in_float("(float)({0})/(float)({1})"));
  set_op_format(Ops::RECIPROCAL, Scalar::FLOAT16, in_float("1.0f/(float)({0})"));
  set_op_format(Ops::MAX, Scalar::FLOAT16, "(((float)({0})<(float)({1}))?{1}:{0})");
  set_op_format(Ops::MULACC, Scalar::FLOAT16,
                in_float("(float)((half)((float)({0})*(float)({1})))+(float)({2})"));
  for (auto [op, f] :
       {std::pair{Ops::SQRT, "sqrt"}, std::pair{Ops::TRUNC, "trunc"}, std::pair{Ops::EXP2, "exp2"},
        std::pair{Ops::LOG2, "log2"}, std::pair{Ops::SIN, "sin"}})
    set_op_format(op, Scalar::FLOAT16, in_float(fmt::format("__ocml_{}_f32((float)({{0}}))", f)));
  // C++ promotes char/short operands to int: narrow results that can leave the type's range again.
  for (Scalar s : {Scalar::INT8, Scalar::UINT8, Scalar::INT16, Scalar::UINT16})
    for (Ops op : {Ops::ADD, Ops::MUL, Ops::NEG, Ops::IDIV, Ops::SHL, Ops::MULACC})
      set_op_format(op, s, "(({t})" + op_format(op, s) + ")");
}

std::string HipRenderer::render_float_special(DType d, double v) const {
  bool f64 = d.scalar() == Scalar::FLOAT64;
  std::string s = std::isnan(v)
                      ? (f64 ? "__builtin_nan(\"\")" : "__builtin_nanf(\"\")")
                      : fmt::format("{}{}", v < 0 ? "-" : "", f64 ? "__builtin_inf()" : "__builtin_inff()");
  return d.scalar() == Scalar::FLOAT32 || f64 ? "(" + s + ")" : "(" + render_cast(d, s) + ")";
}

std::string HipRenderer::render_cast(DType to, const std::string& x) const {
  if (to.count() > 1) return fmt::format("__builtin_convertvector({}, {})", x, type_name(to));
  return fmt::format("(({})({}))", type_name(to), x);
}

std::string HipRenderer::render_bitcast(DType to, DType from, const std::string& x) const {
  if (to.itemsize() != from.itemsize() || to.is_bool() || from.is_bool())
    throw NotSupportedError("render", fmt::format("the '{}' renderer cannot bitcast {} to {}", caps_.dialect,
                                                  from.str(), to.str()));
  return fmt::format("__builtin_bit_cast({}, ({})({}))", type_name(to), type_name(from), x);
}

std::string HipRenderer::render_special(const UOp& special) const {
  const std::string& n = special.arg_as<std::string>();
  int dim = n.empty() ? -1 : n.back() - '0';
  std::string t = type_name(special.dtype());
  if (dim >= 0 && dim < 3 && n.starts_with("gidx"))
    return fmt::format("(({})__ockl_get_group_id({}))", t, dim);
  if (dim >= 0 && dim < 3 && n.starts_with("lidx"))
    return fmt::format("(({})__ockl_get_local_id({}))", t, dim);
  return CStyleRenderer::render_special(special);
}

std::string HipRenderer::render_vectorize(DType d, std::span<const std::string> elems) const {
  return fmt::format("{}{{{}}}", type_name(d), fmt::join(elems, ","));
}

std::string HipRenderer::render_local(const UOp& def, const std::string& name) const {
  return fmt::format("__attribute__((shared, aligned(16))) {} {}[{}];", type_name(def.dtype().base()), name,
                     def.dtype().ptr_size());
}

std::string HipRenderer::render_wmma(const UOp& wmma, const std::string& a, const std::string& b,
                                     const std::string& c) const {
  DType out = wmma.dtype(), in = wmma.src(0)->dtype();
  bool shapes = out.scalar() == Scalar::FLOAT32 && in.scalar() == Scalar::FLOAT16 &&
                wmma.src(1)->dtype() == in && wmma.src(2)->dtype() == out;
  if (shapes && in.count() == 4 && out.count() == 4)
    return fmt::format("__builtin_amdgcn_mfma_f32_16x16x16f16({}, {}, {}, 0, 0, 0)", a, b, c);
  if (shapes && in.count() == 8 && out.count() == 8) return fmt::format("tg_wmma_f16({}, {}, {})", a, b, c);
  throw NotSupportedError("render", fmt::format("the '{}' renderer has no matrix core for {} from {}",
                                                caps_.dialect, out.str(), in.str()));
}

std::string HipRenderer::barrier() const {
  return "__builtin_amdgcn_fence(__ATOMIC_RELEASE, \"workgroup\"); __builtin_amdgcn_s_barrier(); "
         "__builtin_amdgcn_fence(__ATOMIC_ACQUIRE, \"workgroup\");";
}

std::string HipRenderer::render_kernel(const CKernel& k) const {
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
  std::string out = "typedef _Float16 half;\n";
  static const std::regex library_fn(R"(__oc[mk]l_[a-z0-9_]+)");
  std::set<std::string> fns;
  for (auto it = std::sregex_iterator(body.begin(), body.end(), library_fn); it != std::sregex_iterator();
       ++it)
    fns.insert(it->str());
  for (const std::string& fn : fns) out += extern_decl(fn) + "\n";
  for (DType v : k.vector_types)
    out += fmt::format("typedef {} {} __attribute__((ext_vector_type({})));\n",
                       CStyleRenderer::type_name(v.scalar_type()), type_name(v), v.count());
  if (body.find("tg_wmma_f16(") != std::string::npos) out += kWmmaHelper;
  out += fmt::format(
      "extern \"C\" __attribute__((global)) void __attribute__((amdgpu_flat_work_group_size(1, {}))) "
      "{}({}) {{\n{}{}}}\n",
      kFlatWorkGroup, k.name, signature, unpack, body);
  return out;
}

tg::sdk::Status HipRenderer::render(std::string_view name, std::span<const UOp* const> uops,
                                    tg::sdk::Blob& source) noexcept {
  tg::sdk::Status s = CStyleRenderer::render(name, uops, source);
  if (!s.ok()) return s;
  return tg::sdk::guard([&] {
    // A kernel that reads local ids runs workgroups of exactly the product of their sizes, which bounds its
    // registers; one without them may run any size up to the limit.
    int64_t threads = local_threads(uops);
    std::string text(source.text());
    size_t at = text.find(kFlatWorkGroup);
    text.replace(at, std::strlen(kFlatWorkGroup),
                 std::to_string(threads > 0 ? threads : caps_.max_local_size));
    source.assign(text);
  });
}

}  // namespace tg::hip
