// Work estimates of a linear program (see estimate.hpp), counted the way tinygrad's Estimates does:
// one pass in execution order with the product of the enclosing trip counts.
#include "codegen/estimate.hpp"

#include <algorithm>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace tg::codegen {

namespace {

int64_t to_int(const ConstValue& v) {
  if (const int64_t* i = std::get_if<int64_t>(&v)) return *i;
  if (const bool* b = std::get_if<bool>(&v)) return *b;
  return static_cast<int64_t>(std::get<double>(v));
}

// Value of an integer expression over constants and variables; nullopt for anything else.
std::optional<int64_t> eval(const UOp& u, const std::unordered_map<const UOp*, int64_t>& vars) {
  auto s = [&](size_t i) { return eval(*u.src(i), vars); };
  std::optional<int64_t> a = u.src().empty() ? std::nullopt : s(0);
  std::optional<int64_t> b = u.src().size() < 2 ? std::nullopt : s(1);
  switch (u.op()) {
    case Ops::CONST:
      return to_int(*u.const_value());
    case Ops::DEFINE_VAR: {
      auto it = vars.find(&u);
      return it == vars.end() ? std::nullopt : std::optional(it->second);
    }
    case Ops::CAST:
      return a;
    case Ops::ADD:
      return a && b ? std::optional(*a + *b) : std::nullopt;
    case Ops::MUL:
      return a && b ? std::optional(*a * *b) : std::nullopt;
    case Ops::MAX:
      return a && b ? std::optional(std::max(*a, *b)) : std::nullopt;
    case Ops::IDIV:
      return a && b && *b != 0 ? std::optional(*a / *b) : std::nullopt;
    case Ops::MOD:
      return a && b && *b != 0 ? std::optional(*a % *b) : std::nullopt;
    default:
      return std::nullopt;
  }
}

int64_t trip_count(const UOp& size, const std::unordered_map<const UOp*, int64_t>& vars) {
  std::optional<int64_t> v = eval(size, vars);
  return std::max<int64_t>(0, v ? *v : to_int(size.vmax()));
}

// Index math: everything that only computes addresses, validity and gates. The walk stops at loads
// (their own index is walked when the load is) and at AFTER's dependencies (the work it waits for).
std::unordered_set<const UOp*> index_math(const LinearProgram& p) {
  std::unordered_set<const UOp*> seen;
  std::vector<const UOp*> todo;
  auto push = [&](const UOp* u) {
    if (seen.insert(u).second) todo.push_back(u);
  };
  for (const UOpRef& u : p.uops) {
    if (u->op() == Ops::INDEX)
      for (size_t i = 1; i < u->src().size(); i++) push(u->src(i).get());
    if ((u->op() == Ops::LOAD || u->op() == Ops::STORE) && u->src().size() > 2) push(u->src(2).get());
    if (u->op() == Ops::IF || u->op() == Ops::RANGE || u->op() == Ops::SPECIAL) push(u->src(0).get());
  }
  while (!todo.empty()) {
    const UOp* u = todo.back();
    todo.pop_back();
    if (u->op() == Ops::LOAD) continue;
    if (u->op() == Ops::AFTER) {
      push(u->src(0).get());
      continue;
    }
    for (const UOpRef& s : u->src()) push(s.get());
  }
  return seen;
}

}  // namespace

Estimate estimate(const LinearProgram& p, std::span<const int64_t> vals,
                  std::span<const int64_t> buf_nbytes) {
  std::unordered_map<const UOp*, int64_t> vars;
  for (size_t i = 0; i < p.vars.size() && i < vals.size(); i++) vars[p.vars[i].get()] = vals[i];
  std::unordered_set<const UOp*> skip = index_math(p);
  Estimate e;
  int64_t mult = 1;
  std::unordered_map<const UOp*, int64_t> outer;  // RANGE -> the multiplier outside it
  for (const UOpRef& u : p.uops) {
    if (u->op() == Ops::SPECIAL) {
      mult *= trip_count(*u->src(0), vars);
    } else if (u->op() == Ops::RANGE) {
      outer[u.get()] = mult;
      mult *= trip_count(*u->src(0), vars);
    } else if (u->op() == Ops::END) {
      std::optional<int64_t> closed;  // the multiplier outside the outermost range this END closes
      for (size_t i = 1; i < u->src().size(); i++)
        if (auto it = outer.find(u->src(i).get()); it != outer.end())
          closed = closed ? std::min(*closed, it->second) : it->second;
      if (closed) mult = *closed;
    } else if (group::ALU.contains(u->op()) && !skip.contains(u.get())) {
      e.ops += mult * (u->op() == Ops::MULACC ? 2 : 1) * u->dtype().count();
    }
  }
  for (size_t i = 0; i < p.bufs.size(); i++) {
    const BufferArg& b = p.bufs[i];
    int64_t n = i < buf_nbytes.size() ? buf_nbytes[i]
                                      : std::max<int64_t>(0, b.dtype.ptr_size()) *
                                            static_cast<int64_t>(b.dtype.base().itemsize());
    e.bytes += (b.read ? n : 0) + (b.written ? n : 0);
  }
  return e;
}

}  // namespace tg::codegen
