// lower_kernel: the codegen pipeline in order, plus the kernel's name, arguments and launch sizes.
#include "codegen/lower.hpp"

#include <algorithm>
#include <map>
#include <unordered_map>

#include <fmt/format.h>

#include "base/error.hpp"
#include "base/log.hpp"
#include "codegen/passes.hpp"
#include "uop/symbolic.hpp"
#include "viz/record.hpp"

namespace tg::codegen {

namespace {

const UOp* buffer_root(const UOp* u) {
  while (u->op() == Ops::INDEX || u->op() == Ops::AFTER || u->op() == Ops::CAST || u->op() == Ops::BITCAST) {
    if (u->src().empty()) break;
    u = u->src(0).get();
  }
  return u;
}

int64_t as_int(const ConstValue& v) {
  if (const int64_t* i = std::get_if<int64_t>(&v)) return *i;
  if (const bool* b = std::get_if<bool>(&v)) return *b;
  return static_cast<int64_t>(std::get<double>(v));
}

// Value of an integer expression over CONSTs and DEFINE_VARs.
int64_t eval_int(const UOp& u, const std::unordered_map<const UOp*, int64_t>& vars) {
  auto s = [&](size_t i) { return eval_int(*u.src(i), vars); };
  switch (u.op()) {
    case Ops::CONST:
      return as_int(*u.const_value());
    case Ops::DEFINE_VAR:
      return vars.at(&u);
    case Ops::CAST:
      return s(0);
    case Ops::ADD:
      return s(0) + s(1);
    case Ops::MUL:
      return s(0) * s(1);
    case Ops::NEG:
      return -s(0);
    case Ops::MAX:
      return std::max(s(0), s(1));
    case Ops::IDIV:
      return s(1) == 0 ? 0 : s(0) / s(1);
    case Ops::MOD:
      return s(1) == 0 ? 0 : s(0) % s(1);
    default:
      throw ValueError("launch_dims", fmt::format("cannot evaluate {} in a launch size", op_name(u.op())));
  }
}

void check_supported(const UOpRef& sink, const sdk::RendererCaps& caps) {
  for (const UOp* u : sink->toposort()) {
    if (group::ALU.contains(u->op()) && !native_op(caps, u->op()))
      throw NotSupportedError(
          "codegen", fmt::format("{} on {} is not native to the '{}' renderer and has no decomposition",
                                 op_name(u->op()), u->dtype().str(), caps.dialect));
    Scalar s = u->dtype().scalar();
    if (caps.dtypes != 0 && s != Scalar::VOID && !sdk::has_dtype(caps, static_cast<unsigned>(s)))
      throw NotSupportedError("codegen",
                              fmt::format("dtype {} is not supported by the '{}' renderer (in {})",
                                          u->dtype().scalar_type().str(), caps.dialect, op_name(u->op())));
  }
}

}  // namespace

OpSet basic_ops() {
  return {Ops::ADD, Ops::MUL, Ops::NEG, Ops::IDIV, Ops::MOD,   Ops::CMPLT, Ops::CMPNE,     Ops::AND,
          Ops::OR,  Ops::XOR, Ops::SHL, Ops::SHR,  Ops::WHERE, Ops::FDIV,  Ops::RECIPROCAL};
}

bool native_op(const sdk::RendererCaps& caps, Ops op) {
  bool declared = (caps.native_ops[0] | caps.native_ops[1] | caps.native_ops[2] | caps.native_ops[3]) != 0;
  return declared ? sdk::has_native_op(caps, static_cast<unsigned>(op)) : basic_ops().contains(op);
}

std::string kernel_name(const UOpRef& ast) {
  std::vector<const UOp*> ranges;
  bool reduce = false;
  for (const UOp* u : ast->toposort()) {
    if (u->op() == Ops::RANGE) ranges.push_back(u);
    reduce = reduce || u->op() == Ops::REDUCE || u->op() == Ops::WMMA;
  }
  auto rank = [](const UOp* r) {
    AxisArg a = r->arg_as<AxisArg>();
    return std::pair{
        a.type == AxisType::REDUCE || a.type == AxisType::GROUP_REDUCE || a.type == AxisType::UNROLL, a.id};
  };
  std::sort(ranges.begin(), ranges.end(), [&](const UOp* a, const UOp* b) { return rank(a) < rank(b); });
  std::string name = reduce ? "r" : "E";
  for (const UOp* r : ranges) {
    const UOp* end = r->src(0).get();
    if (end->is_const())
      name += fmt::format("_{}", as_int(*end->const_value()));
    else if (end->op() == Ops::DEFINE_VAR)
      name += "_" + end->arg_as<VarArg>().name;
    else
      name += "_s";
  }
  return name;
}

namespace {

// What every stage starts from: the AST simplified, one-hot selections collapsed to loads.
UOpRef initial_rewrite(const UOpRef& ast) {
  return codegen::collapse_onehot_reduces(graph_rewrite(ast, symbolic(), nullptr, {.name = "initial symbolic"}));
}

void check_ast(const UOpRef& ast) {
  if (!ast || ast->op() != Ops::SINK)
    throw ValueError("codegen",
                     fmt::format("a kernel AST is a SINK of stores, got {}", ast ? ast->str() : "null"));
}

}  // namespace

std::vector<Opt> choose_opts(const UOpRef& ast, const sdk::RendererCaps& caps, const LowerOptions& options) {
  if (options.opts) return *options.opts;
  if (env::NOOPT.value() != 0) return {};
  check_ast(ast);
  UOpRef s = initial_rewrite(ast);
  return hand_coded_optimizations(s, caps);
}

UOpRef rewrite_kernel(const UOpRef& ast, const sdk::RendererCaps& caps, const LowerOptions& opts,
                      std::span<const Opt> applied) {
  check_ast(ast);
  UOpRef s = initial_rewrite(ast);
  s = apply_opts(s, applied, caps);
  s = codegen::add_group_reduces(s);
  s = codegen::add_local_ids(s, caps);
  s = codegen::split_ends(s);
  s = codegen::reduce_to_acc(s);
  // Explicit vectors on CPU-style renderers; workgroup renderers vectorize loads and stores only (up to
  // max_vector_width lanes, 1 on most) and keep arithmetic in scalar lanes.
  s = codegen::expand_upcasts(s, caps.max_vector_width, /*vector_alu=*/!caps.has_local);
  s = codegen::merge_ends(s);
  s = codegen::add_gpudims(s, caps);
  s = graph_rewrite(s, symbolic(), nullptr, {.name = "symbolic"});
  s = codegen::lower_index_dtype(s, caps);
  PatternMatcher pm = symbolic_simple() + codegen::decompositions(caps);
  if (opts.extra != nullptr) pm = pm + *opts.extra;
  s = graph_rewrite(s, pm, nullptr, {.name = "decompositions"});
  if (sdk::emulated_dtypes(caps) != 0) {
    s = graph_rewrite(s, codegen::encode_stores(caps), nullptr, {.name = "encode stores", .bottom_up = true});
    s = graph_rewrite(s, codegen::emulate_dtypes(caps), nullptr, {.name = "emulate dtypes"});
  }
  if (native_op(caps, Ops::MULACC))
    s = graph_rewrite(s, codegen::form_mulacc(caps), nullptr, {.name = "form mulacc"});
  check_supported(s, caps);
  return s;
}

LinearProgram lower_kernel(const UOpRef& ast, const sdk::RendererCaps& caps, const LowerOptions& opts) {
  uint64_t viz_seq = viz::on() ? next_trace_seq() : 0;  // the rewrites after it lower this kernel
  LinearProgram p;
  p.applied_opts = choose_opts(ast, caps, opts);
  if (opts.name.empty())
    p.name = kernel_name(apply_opts(initial_rewrite(ast),
                                    p.applied_opts, caps));
  else
    p.name = opts.name;
  p.uops = linearize(rewrite_kernel(ast, caps, opts, p.applied_opts));
  debug_log(3, "{:<28} opts {}", p.name, opts_str(p.applied_opts));
  std::map<int64_t, BufferArg> bufs;
  UOpRef one = UOp::const_(dtypes::int32, ConstValue{int64_t{1}});
  p.global_size = {one, one, one}, p.local_size = {one, one, one};
  for (const UOpRef& u : p.uops) {
    switch (u->op()) {
      case Ops::DEFINE_GLOBAL:
        bufs[u->arg_as<int64_t>()] = BufferArg{u->arg_as<int64_t>(), u->dtype()};
        break;
      case Ops::DEFINE_VAR:
        p.vars.push_back(u);
        break;
      case Ops::STORE:
      case Ops::LOAD: {
        const UOp* b = buffer_root(u->src(0).get());
        if (b->op() != Ops::DEFINE_GLOBAL) break;
        BufferArg& a = bufs[b->arg_as<int64_t>()];
        (u->op() == Ops::STORE ? a.written : a.read) = true;
        break;
      }
      case Ops::SPECIAL: {
        const std::string& n = u->arg_as<std::string>();
        int dim = n.back() - '0';
        if (n == "core_id")
          p.global_size[0] = u->src(0);
        else if (n.starts_with("gidx") && dim >= 0 && dim < 3)
          p.global_size[dim] = u->src(0);
        else if (n.starts_with("lidx") && dim >= 0 && dim < 3)
          p.local_size[dim] = u->src(0);
        break;
      }
      default:
        break;
    }
  }
  for (auto& [i, b] : bufs) p.bufs.push_back(b);
  if (env::DEBUG.value() >= 6) debug_log(6, "{}", p.str());
  if (viz_seq != 0) viz::record_lowered(viz_seq, ast, p);
  return p;
}

sdk::LaunchDims LinearProgram::launch_dims(std::span<const int64_t> vals) const {
  if (vals.size() != vars.size())
    throw ValueError("launch_dims",
                     fmt::format("{} takes {} variable values, got {}", name, vars.size(), vals.size()));
  std::unordered_map<const UOp*, int64_t> env;
  for (size_t i = 0; i < vars.size(); i++) env[vars[i].get()] = vals[i];
  sdk::LaunchDims d;
  for (int i = 0; i < 3; i++) {
    d.global[i] = static_cast<uint32_t>(eval_int(*global_size[i], env));
    d.local[i] = static_cast<uint32_t>(eval_int(*local_size[i], env));
  }
  return d;
}

std::vector<const UOp*> LinearProgram::view() const {
  std::vector<const UOp*> v;
  v.reserve(uops.size());
  for (const UOpRef& u : uops) v.push_back(u.get());
  return v;
}

std::string LinearProgram::str() const {
  std::unordered_map<const UOp*, size_t> idx;
  std::string out = fmt::format("{} ({} uops) opts {}\n", name, uops.size(), opts_str(applied_opts));
  for (size_t i = 0; i < uops.size(); i++) {
    const UOp* u = uops[i].get();
    idx[u] = i;
    std::string srcs;
    for (const UOpRef& s : u->src()) {
      auto it = idx.find(s.get());
      srcs += fmt::format("{}{}", srcs.empty() ? "" : ", ",
                          it == idx.end() ? std::string("?") : std::to_string(it->second));
    }
    out += fmt::format("{:4} {:<14} {:<28} ({}) {}\n", i, op_name(u->op()), u->dtype().str(), srcs,
                       arg_str(u->arg()));
  }
  return out;
}

}  // namespace tg::codegen
