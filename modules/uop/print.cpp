// Tree and list printing, and the C++ renderer of graphs. Everything walks iteratively (deep graphs).
#include "uop/print.hpp"

#include <cmath>
#include <cstdio>
#include <limits>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "uop/ptr_map.hpp"

namespace tg {

namespace {

constexpr int kMaxIndent =
    200;  // deeper levels stay at this indent, so a 100k-deep chain prints in linear size

// Python-like rendering of a node's own fields (no sources).
std::string head(const UOp* u) {
  return fmt::format("UOp(Ops.{}, {}, arg={}, src=(", op_name(u->op()), u->dtype().str(), arg_str(u->arg()));
}

std::string cpp_string(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\', out += c;
    else if (c == '\n')
      out += "\\n";
    else if (static_cast<unsigned char>(c) < 0x20)
      out += fmt::format("\\x{:02x}", static_cast<unsigned>(c));
    else
      out += c;
  }
  return out + "\"";
}

std::string cpp_double(double d) {
  if (std::isnan(d)) return "std::numeric_limits<double>::quiet_NaN()";
  if (std::isinf(d))
    return d > 0 ? "std::numeric_limits<double>::infinity()" : "-std::numeric_limits<double>::infinity()";
  std::string s = fmt::format("{}", d);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string cpp_int(int64_t v) {
  if (v == std::numeric_limits<int64_t>::min()) return "std::numeric_limits<int64_t>::min()";
  return std::to_string(v);
}

std::string cpp_ints(const IntVec& v) {
  std::vector<std::string> parts;
  for (int64_t x : v) parts.push_back(cpp_int(x));
  return fmt::format("{{{}}}", fmt::join(parts, ", "));
}

}  // namespace

std::string print_tree(const UOpRef& root) {
  // First pass numbers nodes in the order tinygrad's pretty_print does (first sight in a depth-first walk)
  // and counts their uses.
  struct Info {
    int id = -1, uses = 0;
    bool printed = false;
  };
  detail::PtrMap<Info> info;
  int next_id = 0;
  std::vector<std::pair<const UOp*, size_t>> walk{{root.get(), 0}};
  while (!walk.empty()) {
    auto& [u, i] = walk.back();
    if (i == u->src().size()) {
      walk.pop_back();
      continue;
    }
    const UOp* s = u->src()[i++].get();
    Info& in = info[s];
    if (in.uses++ == 0) in.id = next_id++, walk.emplace_back(s, 0);
  }
  info[root.get()].id = next_id;
  struct Frame {
    const UOp* u;
    size_t next;
    int depth;
  };
  std::string out;
  // Returns whether the node's sources still have to be printed.
  auto open = [&](const UOp* u, int depth) -> bool {
    Info& in = info[u];
    out.append(static_cast<size_t>(std::min(depth, kMaxIndent)), ' ');
    if (in.printed) return out += fmt::format("x{}", in.id), false;
    in.printed = true;
    if (in.uses > 1) out += fmt::format("x{}:=", in.id);
    out += head(u);
    return true;
  };
  std::vector<Frame> stack{{root.get(), 0, 0}};
  open(root.get(), 0);
  while (!stack.empty()) {
    Frame& f = stack.back();
    if (f.next == f.u->src().size()) {
      out += "))";
      stack.pop_back();
      if (!stack.empty()) out += ",";
      continue;
    }
    const UOp* s = f.u->src()[f.next++].get();
    int depth = f.depth + 2;
    out += "\n";
    if (open(s, depth))
      stack.push_back({s, 0, depth});
    else
      out += ",";
  }
  return out;
}

std::string print_uops(std::span<const UOp* const> uops) {
  detail::PtrMap<size_t> index;
  for (size_t i = 0; i < uops.size(); i++) index.insert(uops[i], i);
  std::string out;
  for (size_t i = 0; i < uops.size(); i++) {
    const UOp* u = uops[i];
    std::vector<std::string> srcs;
    for (const UOpRef& s : u->src()) {
      if (s->is_const())
        srcs.push_back(arg_str(s->arg()));
      else if (const size_t* j = index.find(s.get()))
        srcs.push_back(std::to_string(*j));
      else
        srcs.push_back("--");
    }
    out += fmt::format("{:4d} {:<16} {:<28} [{}] {}\n", i, op_name(u->op()), u->dtype().str(),
                       fmt::join(srcs, ", "), arg_str(u->arg()));
  }
  return out;
}

std::string render_cpp(DType d) {
  static constexpr std::string_view kNames[] = {
      "void_",  "bool_",   "int8",     "uint8",   "int16",   "uint16",  "int32",   "uint32", "int64",
      "uint64", "float16", "bfloat16", "float32", "float64", "fp8e4m3", "fp8e5m2", "index"};
  std::string s = fmt::format("dtypes::{}", kNames[static_cast<int>(d.scalar())]);
  if (d.count() != 1) s += fmt::format(".vec({})", d.count());
  if (d.is_ptr()) {
    static constexpr std::string_view kSpace[] = {"NONE", "GLOBAL", "LOCAL", "REG"};
    if (d.addrspace() == AddrSpace::GLOBAL && d.ptr_size() == -1)
      s += ".ptr()";
    else
      s += fmt::format(".ptr(AddrSpace::{}, {})", kSpace[static_cast<int>(d.addrspace())], d.ptr_size());
  }
  return s;
}

std::string render_cpp(const Arg& a) {
  if (const bool* b = std::get_if<bool>(&a)) return *b ? "true" : "false";
  if (const int64_t* i = std::get_if<int64_t>(&a)) return fmt::format("int64_t{{{}}}", cpp_int(*i));
  if (const double* d = std::get_if<double>(&a)) return cpp_double(*d);
  if (const std::string* s = std::get_if<std::string>(&a))
    return fmt::format("std::string({})", cpp_string(*s));
  if (const IntVec* v = std::get_if<IntVec>(&a)) return "IntVec" + cpp_ints(*v);
  if (const IntPairs* v = std::get_if<IntPairs>(&a)) {
    std::vector<std::string> parts;
    for (auto [x, y] : *v) parts.push_back(fmt::format("{{{}, {}}}", cpp_int(x), cpp_int(y)));
    return fmt::format("IntPairs{{{}}}", fmt::join(parts, ", "));
  }
  auto size = [](const sint& x) { return x.is_number() ? cpp_int(x) : fmt::format("/* {} */ sint()", x); };
  if (const Shape* v = std::get_if<Shape>(&a)) {
    std::vector<std::string> parts;
    for (const sint& x : *v) parts.push_back(size(x));
    return fmt::format("Shape{{{}}}", fmt::join(parts, ", "));
  }
  if (const ShapePairs* v = std::get_if<ShapePairs>(&a)) {
    std::vector<std::string> parts;
    for (const auto& [x, y] : *v) parts.push_back(fmt::format("{{{}, {}}}", size(x), size(y)));
    return fmt::format("ShapePairs{{{}}}", fmt::join(parts, ", "));
  }
  if (const AxisArg* x = std::get_if<AxisArg>(&a))
    return fmt::format("AxisArg{{{}, AxisType::{}}}", cpp_int(x->id), axis_type_name(x->type));
  if (const ReduceArg* x = std::get_if<ReduceArg>(&a))
    return fmt::format("ReduceArg{{Ops::{}, {}}}", op_name(x->op), cpp_ints(x->axes));
  if (const VarArg* x = std::get_if<VarArg>(&a))
    return fmt::format("VarArg{{{}, {}, {}}}", cpp_string(x->name), cpp_int(x->min), cpp_int(x->max));
  if (const Ops* o = std::get_if<Ops>(&a)) return fmt::format("Ops::{}", op_name(*o));
  if (const OpaquePtr* p = std::get_if<OpaquePtr>(&a)) {
    std::string text = *p ? (*p)->str() : "null";
    for (size_t i; (i = text.find("*/")) != std::string::npos;) text.replace(i, 2, "* /");
    return fmt::format("OpaquePtr{{}} /* {} */", text);
  }
  return "Arg{}";
}

}  // namespace tg
