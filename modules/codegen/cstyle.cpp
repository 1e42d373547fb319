// CStyleRenderer and CDialect (sdk/include/tg/sdk/cstyle.hpp): linear program -> C-family source.
#include "tg/sdk/cstyle.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <limits>
#include <unordered_map>

#include <fmt/args.h>
#include <fmt/format.h>

#include "base/error.hpp"

namespace tg::sdk {

namespace {

std::string identifier(std::string_view s) {
  std::string out;
  for (char c : s) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out = "v" + out;
  return out;
}

// Shortest text that reads back as the same value, always with a '.' or exponent.
std::string float_text(double v, bool single) {
  std::string s = single ? fmt::format("{}", static_cast<float>(v)) : fmt::format("{}", v);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

const UOp* buffer_root(const UOp* u) {
  while ((u->op() == Ops::INDEX || u->op() == Ops::AFTER) && !u->src().empty()) u = u->src(0).get();
  return u;
}

bool inlinable(Ops op) {
  return group::ALU.contains(op) || op == Ops::CAST || op == Ops::BITCAST || op == Ops::GEP ||
         op == Ops::VECTORIZE;
}

// A multiply-add that user accumulates onto, in a chain that starts from a register (an unrolled reduce
// into an accumulator): it stays a statement, so the steps of several chains keep the interleaved order
// the linearizer gave them instead of nesting into one expression per accumulator.
bool accumulating(const UOp* u, const UOp* user) {
  if (u->op() != Ops::MULACC || user->op() != Ops::MULACC || user->src(2).get() != u) return false;
  const UOp* base = u;
  while (base->op() == Ops::MULACC) base = base->src(2).get();
  return base->op() == Ops::LOAD && buffer_root(base->src(0).get())->op() == Ops::DEFINE_REG;
}

}  // namespace

CStyleRenderer::CStyleRenderer(const RendererCaps& caps) : caps_(caps) {
  const std::pair<Ops, const char*> formats[] = {
      {Ops::ADD, "({0}+{1})"},
      {Ops::MUL, "({0}*{1})"},
      {Ops::NEG, "(-{0})"},
      {Ops::IDIV, "({0}/{1})"},
      {Ops::MOD, "({0}%{1})"},
      {Ops::FDIV, "({0}/{1})"},
      {Ops::MAX, "(({0}<{1})?{1}:{0})"},
      {Ops::CMPLT, "({0}<{1})"},
      {Ops::CMPNE, "({0}!={1})"},
      {Ops::CMPEQ, "({0}=={1})"},
      {Ops::AND, "({0}&{1})"},
      {Ops::OR, "({0}|{1})"},
      {Ops::XOR, "({0}^{1})"},
      {Ops::SHL, "({0}<<{1})"},
      {Ops::SHR, "({0}>>{1})"},
      {Ops::WHERE, "({0}?{1}:{2})"},
      {Ops::MULACC, "(({0}*{1})+{2})"},
      {Ops::RECIPROCAL, "(1/{0})"},
      {Ops::SQRT, "sqrt({0})"},
      {Ops::EXP2, "exp2({0})"},
      {Ops::LOG2, "log2({0})"},
      {Ops::SIN, "sin({0})"},
      {Ops::TRUNC, "trunc({0})"},
      {Ops::POW, "pow({0},{1})"},
  };
  for (const auto& [op, f] : formats) op_fmt_[static_cast<size_t>(op)] = f;
  const std::pair<Scalar, const char*> names[] = {
      {Scalar::VOID, "void"},        {Scalar::BOOL, "bool"},
      {Scalar::INT8, "signed char"}, {Scalar::UINT8, "unsigned char"},
      {Scalar::INT16, "short"},      {Scalar::UINT16, "unsigned short"},
      {Scalar::INT32, "int"},        {Scalar::UINT32, "unsigned int"},
      {Scalar::INT64, "long long"},  {Scalar::UINT64, "unsigned long long"},
      {Scalar::FLOAT16, "half"},     {Scalar::BFLOAT16, "__bf16"},
      {Scalar::FLOAT32, "float"},    {Scalar::FLOAT64, "double"},
  };
  for (const auto& [s, n] : names) type_names_[static_cast<size_t>(s)] = n;
}

void CStyleRenderer::set_op_format(Ops op, std::string format) {
  op_fmt_[static_cast<size_t>(op)] = std::move(format);
}

namespace {

// Keys of the per-dtype formats: op << 8 | vector << 7 | scalar.
uint32_t format_key(Ops op, Scalar result, bool vector) {
  return static_cast<uint32_t>(op) << 8 | (vector ? 0x80u : 0u) | static_cast<uint32_t>(result);
}

void put_format(std::vector<std::pair<uint32_t, std::string>>& table, uint32_t key, std::string format) {
  std::erase_if(table, [&](const auto& e) { return e.first == key; });
  table.emplace_back(key, std::move(format));
}

const std::string* find_format(const std::vector<std::pair<uint32_t, std::string>>& table, uint32_t key) {
  for (const auto& [k, f] : table)
    if (k == key) return &f;
  return nullptr;
}

}  // namespace

void CStyleRenderer::set_op_format(Ops op, Scalar result, std::string format) {
  put_format(op_fmt_typed_, format_key(op, result, false), std::move(format));
}

void CStyleRenderer::set_vector_op_format(Ops op, Scalar result, std::string format) {
  put_format(op_fmt_typed_, format_key(op, result, true), std::move(format));
}

void CStyleRenderer::set_type_name(Scalar s, std::string name) {
  type_names_[static_cast<size_t>(s)] = std::move(name);
}

const std::string& CStyleRenderer::op_format(Ops op, Scalar result) const {
  const std::string* f = find_format(op_fmt_typed_, format_key(op, result, false));
  return f ? *f : op_fmt_[static_cast<size_t>(op)];
}

const std::string& CStyleRenderer::op_format(Ops op, DType result) const {
  const std::string* f =
      result.count() > 1 ? find_format(op_fmt_typed_, format_key(op, result.scalar(), true)) : nullptr;
  return f ? *f : op_format(op, result.scalar());
}

std::string CStyleRenderer::type_name(DType d) const {
  const std::string& base = type_names_[static_cast<size_t>(d.scalar())];
  if (base.empty())
    throw NotSupportedError("render", fmt::format("no {} type for {}", caps_.dialect, d.str()));
  std::string t = base;
  if (d.count() > 1) {
    std::replace(t.begin(), t.end(), ' ', '_');
    t += std::to_string(d.count());
  }
  return d.is_ptr() ? t + "*" : t;
}

std::string CStyleRenderer::render_float_special(DType d, double v) const {
  std::string s = std::isnan(v) ? "NAN" : v > 0 ? "INFINITY" : "-INFINITY";
  return render_cast(d, s);
}

std::string CStyleRenderer::render_const(const UOp& c) const {
  DType d = c.dtype();
  if (d.count() > 1) {
    std::string one = render_const(*UOp::const_(d.scalar_type(), *c.const_value()));
    return render_vectorize(d, std::vector<std::string>(d.count(), one));
  }
  const ConstValue& v = *c.const_value();
  if (d.is_bool()) return std::visit([](auto x) { return x ? "1" : "0"; }, v);
  if (d.is_float()) {
    double f = std::visit([](auto x) { return static_cast<double>(x); }, v);
    if (!std::isfinite(f)) return render_float_special(d, f);
    std::string s = d.scalar() == Scalar::FLOAT64 ? float_text(f, false) : float_text(f, true) + "f";
    if (f < 0 || (f == 0 && std::signbit(f))) s = "(" + s + ")";
    if (d.scalar() == Scalar::FLOAT32 || d.scalar() == Scalar::FLOAT64) return s;
    return "(" + render_cast(d, s) + ")";
  }
  int64_t i = std::visit([](auto x) { return static_cast<int64_t>(x); }, v);
  switch (d.scalar()) {
    case Scalar::INT32:
      if (i == std::numeric_limits<int32_t>::min()) return "(-2147483647-1)";
      return i < 0 ? fmt::format("({})", i) : std::to_string(i);
    case Scalar::INT64:
      if (i == std::numeric_limits<int64_t>::min()) return "(-9223372036854775807ll-1)";
      return i < 0 ? fmt::format("({}ll)", i) : fmt::format("{}ll", i);
    case Scalar::UINT32:
      return fmt::format("{}u", static_cast<uint32_t>(i));
    case Scalar::UINT64:
      return fmt::format("{}ull", static_cast<uint64_t>(i));
    default:
      return "(" + render_cast(d, std::to_string(i)) + ")";
  }
}

std::string CStyleRenderer::render_cast(DType to, const std::string& x) const {
  if (to.count() > 1)
    return fmt::format("__builtin_convertvector({}, {})", x, type_name(to));  // (T)v would bitcast
  return fmt::format("(({}){})", type_name(to), x);
}

std::string CStyleRenderer::render_bitcast(DType to, DType from, const std::string& x) const {
  return fmt::format("(((union {{ {} a; {} b; }}){{.a = {}}}).b)", type_name(from), type_name(to), x);
}

std::string CStyleRenderer::render_special(const UOp& special) const {
  throw NotSupportedError("render", fmt::format("the '{}' renderer has no launch index {}", caps_.dialect,
                                                special.arg_as<std::string>()));
}

std::string CStyleRenderer::render_vectorize(DType d, std::span<const std::string> elems) const {
  return fmt::format("(({}){{{}}})", type_name(d), fmt::join(elems, ","));
}

std::string CStyleRenderer::render_gep(DType, const std::string& x, int64_t lane) const {
  return fmt::format("{}[{}]", x, lane);
}

std::string CStyleRenderer::render_reg(const UOp& def, const std::string& name) const {
  return fmt::format("{} {}[{}];", type_name(def.dtype().base()), name, def.dtype().ptr_size());
}

std::string CStyleRenderer::render_local(const UOp& def, const std::string& name) const {
  (void)def, (void)name;
  throw NotSupportedError("render", fmt::format("the '{}' renderer has no shared memory", caps_.dialect));
}

std::string CStyleRenderer::render_wmma(const UOp& wmma, const std::string& a, const std::string& b,
                                        const std::string& c) const {
  (void)wmma, (void)a, (void)b, (void)c;
  throw NotSupportedError("render",
                          fmt::format("the '{}' renderer has no tensor core (WMMA)", caps_.dialect));
}

std::string CStyleRenderer::barrier() const {
  throw NotSupportedError("render", fmt::format("the '{}' renderer has no barrier", caps_.dialect));
}

std::string CStyleRenderer::render_load(const UOp&, const std::string&, const std::string&, DType) const {
  return {};
}

std::string CStyleRenderer::render_store(const UOp&, const std::string&, const std::string&,
                                         const std::string&, DType) const {
  return {};
}

std::string CStyleRenderer::render_kernel(const CKernel& k) const {
  std::vector<std::string> params;
  for (const auto& b : k.bufs)
    params.push_back(fmt::format("{}{} {}", b.written ? "" : "const ", type_name(b.dtype), b.name));
  for (const auto& v : k.vars) params.push_back(fmt::format("const {} {}", type_name(v.dtype), v.name));
  return fmt::format("void {}({}) {{\n{}\n}}\n", k.name, fmt::join(params, ", "), fmt::join(k.body, "\n"));
}

Status CStyleRenderer::render(std::string_view name, std::span<const UOp* const> uops,
                              Blob& source) noexcept {
  try {
    source.assign(render_source(name, uops));
    return {};
  } catch (const NotSupportedError& e) {
    return {Code::unsupported, e.what()};
  } catch (const std::bad_alloc&) {
    return {Code::out_of_memory, "host allocation failed while rendering"};
  } catch (const std::exception& e) {
    return {Code::runtime_error, e.what()};
  }
}

int64_t CStyleRenderer::local_threads(std::span<const UOp* const> uops) {
  int64_t threads = 0;
  for (const UOp* u : uops)
    if (u->op() == Ops::SPECIAL && u->arg_as<std::string>().starts_with("lidx") && u->src(0)->is_const())
      threads = std::max<int64_t>(threads, 1) *
                std::visit([](auto v) { return static_cast<int64_t>(v); }, *u->src(0)->const_value());
  return threads;
}

std::string CStyleRenderer::render_source(std::string_view name, std::span<const UOp* const> uops) const {
  CKernel k;
  k.name = std::string(name);
  const size_t n = uops.size();
  std::unordered_map<const UOp*, size_t> at;
  std::vector<int> block(n), uses(n, 0), stores(n + 1, 0);
  std::vector<size_t> user(n, 0);
  std::vector<int> stack{0};
  int blocks = 0;
  for (size_t i = 0; i < n; i++) {
    const UOp* u = uops[i];
    at[u] = i;
    if (u->op() == Ops::END || u->op() == Ops::ENDIF) stack.pop_back();
    block[i] = stack.back();
    if (u->op() == Ops::RANGE || u->op() == Ops::IF) stack.push_back(++blocks);
    for (const UOpRef& s : u->src()) {
      auto it = at.find(s.get());
      if (it == at.end())
        throw ValueError("render", fmt::format("{} uses a source that comes later in the program", u->str()));
      uses[it->second]++, user[it->second] = i;
    }
    stores[i + 1] = stores[i] + (u->op() == Ops::STORE);
    if (stack.empty()) throw ValueError("render", "END or ENDIF without an open block");
  }
  // A value used once in its own block is printed inside its user; eval[i] is where it is then computed.
  // A register read may only move that far when no store comes in between.
  std::vector<bool> inl(n, false);
  std::vector<size_t> eval(n);
  for (size_t i = n; i-- > 0;) {
    const UOp* u = uops[i];
    bool once = uses[i] == 1 && block[user[i]] == block[i];
    if (once && inlinable(u->op()) && !accumulating(u, uops[user[i]])) inl[i] = true;
    if (once && u->op() == Ops::LOAD && buffer_root(u->src(0).get())->op() == Ops::DEFINE_REG)
      inl[i] = stores[eval[user[i]]] == stores[i + 1];
    eval[i] = inl[i] ? eval[user[i]] : i;
  }
  std::vector<bool> written(n, false);
  for (const UOp* u : uops)
    if (u->op() == Ops::STORE) written[at.at(buffer_root(u->src(0).get()))] = true;

  std::vector<std::string> r(n), gate(n);
  std::unordered_map<std::string, int> counters;
  auto src = [&](const UOp* u, size_t i) -> const std::string& { return r[at.at(u->src(i).get())]; };
  auto line = [&](const std::string& s) { k.body.push_back(std::string(2 * stack.size(), ' ') + s); };
  auto add_vector_type = [&](DType d) {
    DType v = d.is_ptr() ? d.base() : d;
    if (v.count() > 1 && std::find(k.vector_types.begin(), k.vector_types.end(), v) == k.vector_types.end())
      k.vector_types.push_back(v);
  };
  // memory access through an INDEX; a vector access from a scalar buffer goes through a cast pointer
  auto access = [&](const UOp* index, DType value) {
    const UOp* buf = index->src(0).get();
    const std::string& b = r[at.at(buf)];
    const std::string& off = src(index, 1);
    if (value.count() > 1 && buf->dtype().count() == 1)
      return fmt::format("(*(({}*)({}+{})))", type_name(value), b, off);
    // x + c as (buf+x)[c]: the pointer arithmetic shows neighbouring accesses as neighbours even where
    // integer overflow wraps (-fwrapv), so unrolled copies can become vector loads.
    const UOp* i = index->src(1).get();
    if (i->op() == Ops::ADD && i->src(1)->is_const() && i->dtype().is_int())
      return fmt::format("({}+{})[{}]", b, src(i, 0), src(i, 1));
    return fmt::format("{}[{}]", b, off);
  };
  stack.assign(1, 0);
  for (size_t i = 0; i < n; i++) {
    const UOp* u = uops[i];
    add_vector_type(u->dtype());
    auto value = [&](const std::string& prefix, const std::string& expr) {
      if (inl[i]) {
        r[i] = expr;
        return;
      }
      r[i] = fmt::format("{}{}", prefix, counters[prefix]++);
      line(fmt::format("{} {} = {};", type_name(u->dtype()), r[i], expr));
    };
    switch (u->op()) {
      case Ops::SINK:
      case Ops::NOOP:
        break;
      case Ops::DEFINE_GLOBAL: {
        r[i] = fmt::format("data{}", u->arg_as<int64_t>());
        k.bufs.push_back({r[i], u->arg_as<int64_t>(), u->dtype(), written[i]});
        break;
      }
      case Ops::DEFINE_VAR:
        r[i] = identifier(u->arg_as<VarArg>().name);
        k.vars.push_back({r[i], u->dtype()});
        break;
      case Ops::CONST:
        r[i] = render_const(*u);
        break;
      case Ops::SPECIAL: {
        r[i] = identifier(u->arg_as<std::string>());
        std::string expr = render_special(*u);
        if (expr != r[i])  // else it is a kernel parameter of that name already (core_id)
          line(fmt::format("{} {} = {}; /* {} */", type_name(u->dtype()), r[i], expr, src(u, 0)));
        break;
      }
      case Ops::DEFINE_REG:
        r[i] = fmt::format("acc{}", u->arg_as<int64_t>());
        line(render_reg(*u, r[i]));
        break;
      case Ops::DEFINE_LOCAL:
        r[i] = fmt::format("temp{}", counters["temp"]++);
        line(render_local(*u, r[i]));
        break;
      case Ops::RANGE:
        r[i] = fmt::format("ridx{}", u->arg_as<AxisArg>().id);
        line(fmt::format("for ({} {} = 0; {} < {}; {}++) {{", type_name(u->dtype()), r[i], r[i], src(u, 0),
                         r[i]));
        stack.push_back(0);
        break;
      case Ops::IF:
        line(fmt::format("if ({}) {{", src(u, 0)));
        stack.push_back(0);
        break;
      case Ops::END:
      case Ops::ENDIF:
        stack.pop_back();
        line("}");
        break;
      case Ops::BARRIER:
        line(barrier());
        break;
      case Ops::AFTER:
        r[i] = src(u, 0);
        break;
      case Ops::INDEX:
        r[i] = src(u, 0);
        if (u->src().size() > 2) gate[i] = src(u, 2);
        break;
      case Ops::LOAD: {
        const UOp* idx = u->src(0).get();
        std::string a = render_load(*buffer_root(idx), src(idx, 0), src(idx, 1), u->dtype());
        if (a.empty()) a = access(idx, u->dtype());
        std::string g = u->src().size() > 2 ? src(u, 2) : gate[at.at(idx)];
        if (!g.empty())
          a = fmt::format("({}?{}:{})", g, a,
                          u->src().size() > 1 ? src(u, 1) : render_const(*u->const_like(int64_t{0})));
        if (inl[i])
          r[i] = a;
        else
          value("val", a);
        break;
      }
      case Ops::STORE: {
        const UOp* idx = u->src(0).get();
        std::string g = u->src().size() > 2 ? src(u, 2) : gate[at.at(idx)];
        std::string st =
            render_store(*buffer_root(idx), src(idx, 0), src(idx, 1), src(u, 1), u->src(1)->dtype());
        if (st.empty()) st = fmt::format("{} = {};", access(idx, u->src(1)->dtype()), src(u, 1));
        line(g.empty() ? st : fmt::format("if ({}) {{ {} }}", g, st));
        break;
      }
      case Ops::CAST:
        value("cast", render_cast(u->dtype(), src(u, 0)));
        break;
      case Ops::BITCAST:
        value("cast", render_bitcast(u->dtype(), u->src(0)->dtype(), src(u, 0)));
        break;
      case Ops::VECTORIZE: {
        std::vector<std::string> el;
        for (size_t s = 0; s < u->src().size(); s++) el.push_back(src(u, s));
        value("cast", render_vectorize(u->dtype(), el));
        break;
      }
      case Ops::GEP:
        value("alu", render_gep(u->src(0)->dtype(), src(u, 0), u->arg_as<IntVec>().at(0)));
        break;
      case Ops::WMMA:
        value("wmma", render_wmma(*u, src(u, 0), src(u, 1), src(u, 2)));
        break;
      case Ops::CUSTOM: {
        fmt::dynamic_format_arg_store<fmt::format_context> args;
        for (size_t s = 0; s < u->src().size(); s++) args.push_back(src(u, s));
        std::string text = fmt::vformat(u->arg_as<std::string>(), args);
        if (u->dtype() == dtypes::void_)
          line(text);
        else
          value("alu", text);
        break;
      }
      default: {
        if (!group::ALU.contains(u->op()))
          throw NotSupportedError(
              "render", fmt::format("the '{}' renderer cannot print {}", caps_.dialect, op_name(u->op())));
        const std::string& f = op_format(u->op(), u->dtype());
        if (f.empty())
          throw NotSupportedError("render", fmt::format("the '{}' renderer has no format for {} on {}",
                                                        caps_.dialect, op_name(u->op()), u->dtype().str()));
        std::string a[3];
        for (size_t s = 0; s < u->src().size() && s < 3; s++) a[s] = src(u, s);
        value("alu", fmt::format(fmt::runtime(f), a[0], a[1], a[2], fmt::arg("t", type_name(u->dtype()))));
      }
    }
  }
  std::sort(k.bufs.begin(), k.bufs.end(), [](const auto& a, const auto& b) { return a.index < b.index; });
  return render_kernel(k);
}

// ---- CDialect ----

RendererCaps CDialect::default_caps() {
  RendererCaps c;
  for (Scalar s : {Scalar::BOOL, Scalar::INT8, Scalar::UINT8, Scalar::INT16, Scalar::UINT16, Scalar::INT32,
                   Scalar::UINT32, Scalar::INT64, Scalar::UINT64, Scalar::FLOAT32, Scalar::FLOAT64})
    c.dtypes |= uint64_t{1} << static_cast<int>(s);
  for (Ops o : {Ops::ADD, Ops::MUL, Ops::NEG, Ops::IDIV, Ops::MOD, Ops::CMPLT, Ops::CMPNE, Ops::CMPEQ,
                Ops::AND, Ops::OR, Ops::XOR, Ops::SHL, Ops::SHR, Ops::WHERE, Ops::FDIV, Ops::RECIPROCAL,
                Ops::SQRT, Ops::TRUNC, Ops::MULACC})
    c.native_ops[static_cast<int>(o) / 64] |= uint64_t{1} << (static_cast<int>(o) % 64);
  c.global_max[0] = c.global_max[1] = c.global_max[2] = 1;
  std::strncpy(c.dialect, "c", sizeof c.dialect - 1);
  return c;
}

CDialect::CDialect(const RendererCaps& caps) : CStyleRenderer(caps) {
  set_type_name(Scalar::BOOL, "_Bool");
  set_type_name(Scalar::FLOAT16, "_Float16");
  set_type_name(Scalar::BFLOAT16, "");
  for (Ops op : {Ops::SQRT, Ops::TRUNC, Ops::EXP2, Ops::LOG2, Ops::SIN}) {
    std::string n(op == Ops::SQRT    ? "sqrt"
                  : op == Ops::TRUNC ? "trunc"
                  : op == Ops::EXP2  ? "exp2"
                  : op == Ops::LOG2  ? "log2"
                                     : "sin");
    set_op_format(op, fmt::format("__builtin_{}f({{0}})", n));  // half and float compute in float
    set_op_format(op, Scalar::FLOAT64, fmt::format("__builtin_{}({{0}})", n));
  }
  // MULACC on float32/float64 is fused (one rounding); other dtypes keep the table's a*b+c.
  set_op_format(Ops::MULACC, Scalar::FLOAT32, "__builtin_fmaf({0}, {1}, {2})");
  set_op_format(Ops::MULACC, Scalar::FLOAT64, "__builtin_fma({0}, {1}, {2})");
  // Vectors: a helper per type (render_kernel) fusing lane by lane, which clang makes one vector fma.
  set_vector_op_format(Ops::MULACC, Scalar::FLOAT32, "tg_fma_{t}({0}, {1}, {2})");
  set_vector_op_format(Ops::MULACC, Scalar::FLOAT64, "tg_fma_{t}({0}, {1}, {2})");
  // C computes char/short in int: narrow results that can leave the type's range again, so a value
  // inlined into a wider expression (a compare, a division, a cast) has wrapped like everywhere else.
  for (Scalar s : {Scalar::INT8, Scalar::UINT8, Scalar::INT16, Scalar::UINT16})
    for (Ops op : {Ops::ADD, Ops::MUL, Ops::NEG, Ops::IDIV, Ops::SHL, Ops::MULACC})
      set_op_format(op, s, "(({t})" + op_format(op, s) + ")");
}

std::string CDialect::render_float_special(DType d, double v) const {
  bool f64 = d.scalar() == Scalar::FLOAT64;
  std::string s = std::isnan(v)
                      ? (f64 ? "__builtin_nan(\"\")" : "__builtin_nanf(\"\")")
                      : fmt::format("{}{}", v < 0 ? "-" : "", f64 ? "__builtin_inf()" : "__builtin_inff()");
  return d.scalar() == Scalar::FLOAT32 || f64 ? "(" + s + ")" : "(" + render_cast(d, s) + ")";
}

std::string CDialect::render_special(const UOp& special) const {
  if (special.arg_as<std::string>() == "core_id") return "core_id";
  return CStyleRenderer::render_special(special);
}

std::string CDialect::render_kernel(const CKernel& k) const {
  std::string out;
  // Vectors aligned as their elements (a vector access may start at any element of a buffer), and a fused
  // multiply-add helper per float vector type. The helpers are internal and inlined: wide vector arguments
  // change no ABI that matters.
  if (!k.vector_types.empty()) out += "#pragma clang diagnostic ignored \"-Wpsabi\"\n";
  for (DType v : k.vector_types) {
    DType s = v.scalar_type();
    std::string t = type_name(v);
    out += fmt::format("typedef {} {} __attribute__((aligned({}),ext_vector_type({})));\n", type_name(s), t,
                       s.itemsize(), v.count());
    if (v.scalar() != Scalar::FLOAT32 && v.scalar() != Scalar::FLOAT64) continue;
    bool f32 = v.scalar() == Scalar::FLOAT32;
    std::vector<std::string> lanes;
    for (int i = 0; i < v.count(); i++)
      lanes.push_back(
          fmt::format("{}(a[{}], b[{}], c[{}])", f32 ? "__builtin_fmaf" : "__builtin_fma", i, i, i));
    std::string by_lane =
        fmt::format("static inline {0} tg_fma_{0}({0} a, {0} b, {0} c) {{ return ({0}){{{1}}}; }}\n", t,
                    fmt::join(lanes, ", "));
    // The same fused lanes as one x86 fma builtin where the target has it: clang no longer has to inline
    // and re-vectorize a scalar fma per lane, which was a large part of compiling a big reduce.
    size_t bytes = v.count() * s.itemsize();
    std::string_view guard = bytes == 16   ? "__FMA__"
                             : bytes == 32 ? "__FMA__) && defined(__AVX__"
                                           : "__AVX512F__";
    std::string call = fmt::format("__builtin_ia32_vfmadd{}{}", f32 ? "ps" : "pd",
                                   bytes == 16   ? ""
                                   : bytes == 32 ? "256"
                                                 : "512_mask");
    std::string tail =
        bytes == 64 ? fmt::format(", ({})-1, 4", f32 ? "unsigned short" : "unsigned char") : "";
    if (bytes != 16 && bytes != 32 && bytes != 64) {
      out += by_lane;
      continue;
    }
    out += fmt::format(
        "#if defined({1})\n"
        "typedef {2} tg_x86_{0} __attribute__((vector_size({3})));\n"
        "static inline {0} tg_fma_{0}({0} a, {0} b, {0} c) {{ return ({0}){4}((tg_x86_{0})a, (tg_x86_{0})b, "
        "(tg_x86_{0})c{5}); }}\n#else\n{6}#endif\n",
        t, guard, type_name(s), bytes, call, tail, by_lane);
  }
  // The body takes the buffers as restrict parameters (compilers ignore restrict on locals), so the
  // unrolled copies of a statement can be packed into vectors; the entry point only unpacks bufs.
  std::string params, args;
  for (const auto& b : k.bufs) {
    std::string t = (b.written ? "" : "const ") + type_name(b.dtype.base());
    params += fmt::format("{}* restrict {}, ", t, b.name);
    args += fmt::format("({}*)bufs[{}], ", t, b.index);
  }
  out += fmt::format("static void {}_body({}const long long* vals, int core_id) {{\n", k.name, params);
  for (size_t i = 0; i < k.vars.size(); i++)
    out += fmt::format("  const {} {} = ({})vals[{}];\n", type_name(k.vars[i].dtype), k.vars[i].name,
                       type_name(k.vars[i].dtype), i);
  out += "  (void)vals; (void)core_id;\n";
  for (const auto& l : k.body) out += l + "\n";
  out += "}\n";
  out += fmt::format("void {}(void* const* bufs, const long long* vals, int core_id) {{\n", k.name);
  out += fmt::format("  (void)bufs;\n  {}_body({}vals, core_id);\n}}\n", k.name, args);
  return out;
}

}  // namespace tg::sdk
