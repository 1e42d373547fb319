// Applying kernel optimizations: each Opt splits one RANGE of the AST (r -> outer * k + inner); the
// inner ranges are unrolled later by the expander (UPCAST) and the accumulator lowering (UNROLL).
#include "codegen/opts.hpp"

#include <algorithm>
#include <unordered_map>

#include <fmt/format.h>

#include "base/error.hpp"

namespace tg {

namespace {

int64_t const_size(const UOp* r) {
  const UOp* end = r->src(0).get();
  if (!end->is_const()) return 0;
  const ConstValue& v = *end->const_value();
  if (const int64_t* i = std::get_if<int64_t>(&v)) return *i;
  return 0;
}

AxisType axis_type(const UOp* r) { return r->arg_as<AxisArg>().type; }

// Replaces range r by expr, except where r is listed as a loop (END and REDUCE sources): there it
// becomes the ranges `loops`.
UOpRef split_range(const UOpRef& ast, const UOpRef& r, const UOpRef& expr, const std::vector<UOpRef>& loops) {
  std::unordered_map<const UOp*, UOpRef> done;
  for (const UOp* n : ast->toposort()) {
    if (n == r.get()) {
      done[n] = expr;
      continue;
    }
    bool lists_loops = n->op() == Ops::END || n->op() == Ops::REDUCE;
    std::vector<UOpRef> src;
    bool changed = false;
    for (size_t i = 0; i < n->src().size(); i++) {
      const UOpRef& s = n->src(i);
      if (lists_loops && i > 0 && s == r) {
        src.insert(src.end(), loops.begin(), loops.end());
        changed = true;
        continue;
      }
      src.push_back(done.at(s.get()));
      changed |= src.back() != s;
    }
    done[n] = changed ? n->with_src(std::move(src)) : n->ref();
  }
  return done.at(ast.get());
}

}  // namespace

namespace {

bool reduces_over(const UOp* red, const UOp* r) {
  auto srcs = red->src();
  return std::find(srcs.begin() + 1, srcs.end(), r->ref()) != srcs.end();
}

// Whether x depends on r other than through a REDUCE over r (which closes it).
bool depends_open(const UOp* x, const UOp* r, std::unordered_map<const UOp*, bool>& memo) {
  if (x == r) return true;
  if (x->op() == Ops::REDUCE && reduces_over(x, r)) return false;
  if (auto it = memo.find(x); it != memo.end()) return it->second;
  bool dep = false;
  for (const UOpRef& s : x->src()) dep = dep || depends_open(s.get(), r, memo);
  return memo[x] = dep;
}

}  // namespace

bool inside_other_reduce(const UOpRef& ast, const UOp* r) {
  std::unordered_map<const UOp*, bool> memo;
  for (const UOp* u : ast->toposort())
    if (u->op() == Ops::REDUCE && !reduces_over(u, r) && depends_open(u->src(0).get(), r, memo)) {
      // u is inside r's reduce only if some REDUCE over r contains it.
      for (const UOp* w : ast->toposort())
        if (w->op() == Ops::REDUCE && reduces_over(w, r)) {
          std::vector<const UOp*> topo = w->src(0)->toposort();
          if (std::find(topo.begin(), topo.end(), u) != topo.end()) return true;
        }
    }
  return false;
}

namespace {

struct Applier {
  UOpRef ast;
  std::vector<UOpRef> axes;   // the splittable axes (nullptr: an axis used up by a split of its full size)
  std::vector<UOpRef> order;  // every range, outermost first: the final ids
  int64_t next_id = 0;
  bool threaded = false;

  UOpRef fresh(int64_t size, AxisType t) {
    return UOp::range(UOp::const_(dtypes::index, ConstValue{size}), next_id++, t);
  }

  void replace(const UOpRef& old, const UOpRef& now) {
    std::replace(order.begin(), order.end(), old, now);
    std::replace(axes.begin(), axes.end(), old, now);
  }

  void apply(const Opt& o, const sdk::RendererCaps& caps) {
    auto fail = [&](const std::string& why) {
      throw ValueError("opts", fmt::format("{}: {}", o.str(), why));
    };
    if (o.axis < 0 || o.axis >= static_cast<int64_t>(axes.size()))
      fail(fmt::format("axis out of range (the kernel has {} axes)", axes.size()));
    UOpRef r = axes[static_cast<size_t>(o.axis)];
    if (o.op == OptOps::SWAP) {
      if (o.arg < 0 || o.arg >= static_cast<int64_t>(axes.size()) || o.arg == o.axis)
        fail(fmt::format("the other axis must be a different axis below {}", axes.size()));
      UOpRef q = axes[static_cast<size_t>(o.arg)];
      if (!r || !q) fail("an axis split by its full size has no loop left");
      if (axis_type(r.get()) == AxisType::REDUCE || axis_type(q.get()) == AxisType::REDUCE)
        fail("SWAP takes two output axes");
      std::iter_swap(std::find(order.begin(), order.end(), r), std::find(order.begin(), order.end(), q));
      return;
    }
    int64_t n = r ? const_size(r.get()) : 1;
    bool reduce = r && axis_type(r.get()) == AxisType::REDUCE;
    if (o.op == OptOps::UNROLL && r && !reduce) fail("UNROLL takes a reduce axis");
    if (o.op != OptOps::UNROLL && reduce) fail(fmt::format("{} takes an output axis", opt_op_name(o.op)));
    if (r && n == 0) fail("the axis has a symbolic size");
    if (o.arg < 1 || n % o.arg != 0)
      fail(fmt::format("amount {} does not divide the axis size {}", o.arg, n));
    if (o.op == OptOps::THREAD && threaded) fail("the kernel already has a THREAD axis");
    if (o.op == OptOps::UNROLL && r && inside_other_reduce(ast, r.get()))
      fail("a reduce nested in this axis' reduce depends on it");
    if (o.op == OptOps::THREAD && !caps.has_threads && !caps.has_local)
      fail(fmt::format("the '{}' renderer has no parallel tasks", caps.dialect));
    if (o.arg == 1) return;

    AxisType t = o.op == OptOps::UPCAST   ? AxisType::UPCAST
                 : o.op == OptOps::UNROLL ? AxisType::UNROLL
                                          : AxisType::THREAD;
    UOpRef inner = fresh(o.arg, t);
    if (o.op == OptOps::THREAD) {
      threaded = true;
      order.insert(order.begin(), inner);
      if (o.arg == n) {
        ast = ast->substitute({{r.get(), inner}});
        std::erase(order, r);
        axes[static_cast<size_t>(o.axis)] = nullptr;
        return;
      }
      UOpRef rest = fresh(n / o.arg, axis_type(r.get()));
      ast = split_range(ast, r, inner * (n / o.arg) + rest, {inner, rest});
      replace(r, rest);
      return;
    }
    // A later UPCAST goes outside the earlier ones: the first (the contiguous axis) varies fastest.
    auto first_upcast = std::find_if(order.begin(), order.end(),
                                     [](const UOpRef& x) { return axis_type(x.get()) == AxisType::UPCAST; });
    order.insert(o.op == OptOps::UPCAST ? first_upcast : order.end(), inner);
    if (o.arg == n) {
      ast = ast->substitute({{r.get(), inner}});
      std::erase(order, r);
      axes[static_cast<size_t>(o.axis)] = nullptr;
      return;
    }
    UOpRef outer = fresh(n / o.arg, axis_type(r.get()));
    ast = split_range(ast, r, outer * o.arg + inner, {outer, inner});
    replace(r, outer);
  }
};

}  // namespace

std::string_view opt_op_name(OptOps op) {
  switch (op) {
    case OptOps::UPCAST:
      return "UPCAST";
    case OptOps::UNROLL:
      return "UNROLL";
    case OptOps::THREAD:
      return "THREAD";
    case OptOps::SWAP:
      return "SWAP";
  }
  return "?";
}

std::string Opt::str() const { return fmt::format("{}(axis={}, arg={})", opt_op_name(op), axis, arg); }

std::string opts_str(std::span<const Opt> opts) {
  std::string s;
  for (const Opt& o : opts) s += (s.empty() ? "" : ", ") + o.str();
  return "[" + s + "]";
}

std::vector<KernelAxis> kernel_axes(const UOpRef& ast) {
  std::vector<KernelAxis> out;
  for (const UOp* u : ast->toposort())
    if (u->op() == Ops::RANGE && (axis_type(u) == AxisType::LOOP || axis_type(u) == AxisType::REDUCE))
      out.push_back({u->ref(), const_size(u), axis_type(u) == AxisType::REDUCE});
  std::sort(out.begin(), out.end(), [](const KernelAxis& a, const KernelAxis& b) {
    return std::pair{a.reduce, a.range->arg_as<AxisArg>().id} <
           std::pair{b.reduce, b.range->arg_as<AxisArg>().id};
  });
  return out;
}

UOpRef apply_opts(const UOpRef& ast, std::span<const Opt> opts, const sdk::RendererCaps& caps) {
  if (opts.empty()) return ast;
  Applier a{ast, {}, {}, 0, false};
  for (const KernelAxis& k : kernel_axes(ast)) a.axes.push_back(k.range);
  std::vector<const UOp*> others;
  for (const UOp* u : ast->toposort())
    if (u->op() == Ops::RANGE) {
      a.next_id = std::max(a.next_id, u->arg_as<AxisArg>().id + 1);
      if (std::find(a.axes.begin(), a.axes.end(), u->ref()) == a.axes.end()) others.push_back(u);
    }
  for (const UOp* u : others) a.order.push_back(u->ref());
  a.order.insert(a.order.end(), a.axes.begin(), a.axes.end());
  for (const Opt& o : opts) a.apply(o, caps);
  // Renumber: the position in `order` is the id, so THREAD loops are outermost and unrolled ones innermost.
  // Two passes through ids past every current one keep the ranges distinct while they change.
  std::unordered_map<const UOp*, UOpRef> tmp, fin;
  std::vector<UOpRef> mid;
  for (size_t i = 0; i < a.order.size(); i++) {
    const UOpRef& r = a.order[i];
    mid.push_back(UOp::range(r->src(0), a.next_id + static_cast<int64_t>(i), axis_type(r.get())));
    tmp[r.get()] = mid.back();
  }
  UOpRef s = a.ast->substitute(tmp);
  for (size_t i = 0; i < mid.size(); i++)
    fin[mid[i].get()] = UOp::range(mid[i]->src(0), static_cast<int64_t>(i), axis_type(mid[i].get()));
  return s->substitute(fin);
}

}  // namespace tg
