// Applying kernel optimizations: each Opt splits one RANGE of the AST (r -> outer * k + inner); the
// inner ranges are unrolled later by the expander (UPCAST) and the accumulator lowering (UNROLL).
#include "codegen/opts.hpp"

#include <algorithm>
#include <unordered_map>

#include <fmt/format.h>

#include "base/error.hpp"
#include "codegen/passes.hpp"

namespace tg::codegen {

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

// Whether a REDUCE over r sits inside another REDUCE (whose loop would enclose a workgroup's barrier).
bool reduce_nested(const UOpRef& ast, const UOp* r) {
  for (const UOp* w : ast->toposort())
    if (w->op() == Ops::REDUCE && !reduces_over(w, r))
      for (const UOp* u : w->src(0)->toposort())
        if (u->op() == Ops::REDUCE && reduces_over(u, r)) return true;
  return false;
}

// r -> a range of size m (> n) with the part past n masked: loads and stores whose index uses r get the
// gate r < n, and a REDUCE over r adds its identity there.
UOpRef pad_range(const UOpRef& ast, const UOpRef& r, const UOpRef& nr, int64_t n) {
  UOpRef valid = nr->lt(UOp::const_(dtypes::index, ConstValue{n}));
  std::unordered_map<const UOp*, UOpRef> done;
  std::unordered_map<const UOp*, bool> uses;
  for (const UOp* u : ast->toposort()) {
    bool use = u == r.get();
    for (const UOpRef& s : u->src()) use = use || uses.at(s.get());
    uses[u] = use;
    if (u == r.get()) {
      done[u] = nr;
      continue;
    }
    std::vector<UOpRef> src;
    for (const UOpRef& s : u->src()) src.push_back(done.at(s.get()));
    if (u->op() == Ops::INDEX && uses.at(u->src(1).get()))
      src.size() > 2 ? void(src[2] = src[2] & valid) : src.push_back(valid);
    if (u->op() == Ops::REDUCE && reduces_over(u, r.get()))
      src[0] = valid->where(src[0], codegen::identity_element(u->arg_as<Ops>(), src[0]->dtype()));
    done[u] = u->with_src(std::move(src));
  }
  return done.at(ast.get());
}

bool is_local(AxisType t) { return t == AxisType::LOCAL || t == AxisType::GROUP_REDUCE; }

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

  static int64_t product(const std::vector<UOpRef>& rs, bool (*pick)(AxisType)) {
    int64_t p = 1;
    for (const UOpRef& r : rs)
      if (pick(axis_type(r.get()))) p *= const_size(r.get());
    return p;
  }

  // Workgroup limits after an opt: local dims (innermost is lidx0) within local_max and max_local_size, the
  // shared memory of the grouped reduces within max_shared_bytes.
  void check_workgroup(const Opt& o, const sdk::RendererCaps& caps) {
    auto fail = [&](const std::string& why) {
      throw ValueError("opts", fmt::format("{}: {}", o.str(), why));
    };
    std::vector<int64_t> dims;
    for (auto it = order.rbegin(); it != order.rend(); ++it)
      if (is_local(axis_type(it->get()))) dims.push_back(const_size(it->get()));
    if (dims.empty()) return;
    if (dims.size() > 3) fail("a workgroup has at most 3 local dims");
    int64_t total = 1;
    for (size_t i = 0; i < dims.size(); i++) {
      if (dims[i] > caps.local_max[i])
        fail(fmt::format("local dim {} of size {} exceeds the device's local_max {}", i, dims[i],
                         caps.local_max[i]));
      total *= dims[i];
    }
    if (total > caps.max_local_size)
      fail(fmt::format("a workgroup of {} work items exceeds the device's local_size limit {}", total,
                       caps.max_local_size));
    int64_t grouped = 0, itemsize = 0;
    for (const UOp* u : ast->toposort())
      if (u->op() == Ops::REDUCE && std::any_of(u->src().begin() + 1, u->src().end(), [](const UOpRef& s) {
            return axis_type(s.get()) == AxisType::GROUP_REDUCE;
          }))
        grouped++, itemsize = std::max<int64_t>(itemsize, u->dtype().itemsize());
    int64_t upcast = product(order, [](AxisType t) { return t == AxisType::UPCAST; });
    int64_t bytes = grouped * total * upcast * itemsize;
    if (bytes > caps.max_shared_bytes)
      fail(fmt::format("needs {} bytes of shared memory, the device has {}", bytes, caps.max_shared_bytes));
  }

  void apply(const Opt& o, const sdk::RendererCaps& caps) {
    auto fail = [&](const std::string& why) {
      throw ValueError("opts", fmt::format("{}: {}", o.str(), why));
    };
    if (o.axis < 0 || o.axis >= static_cast<int64_t>(axes.size()))
      fail(fmt::format("axis out of range (the kernel has {} axes)", axes.size()));
    UOpRef r = axes[static_cast<size_t>(o.axis)];
    if (o.op == OptOps::TC) fail("TC must be the first opt");
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
    bool group = o.op == OptOps::GROUP || o.op == OptOps::GROUPTOP;
    if ((o.op == OptOps::LOCAL || group) && !caps.has_local)
      fail(fmt::format("the '{}' renderer has no workgroups", caps.dialect));
    if (group && !caps.has_shared) fail(fmt::format("the '{}' renderer has no shared memory", caps.dialect));
    int64_t n = r ? const_size(r.get()) : 1;
    bool reduce = r && axis_type(r.get()) == AxisType::REDUCE;
    if (o.op == OptOps::PADTO) {
      if (!r) fail("an axis split by its full size has no loop left");
      if (n == 0) fail("the axis has a symbolic size");
      if (o.arg < 1) fail(fmt::format("amount {} is not positive", o.arg));
      int64_t m = (n + o.arg - 1) / o.arg * o.arg;
      if (m > 4 * n) fail(fmt::format("padding {} to {} more than quadruples the work", n, m));
      if (m == n) return;
      UOpRef nr = fresh(m, axis_type(r.get()));
      ast = pad_range(ast, r, nr, n);
      replace(r, nr);
      return;
    }
    if ((o.op == OptOps::UNROLL || group) && r && !reduce)
      fail(fmt::format("{} takes a reduce axis", opt_op_name(o.op)));
    // UPCAST of a reduce axis: vector accumulators along it, on a CPU-style renderer (no workgroups).
    if (o.op != OptOps::UNROLL && !group && reduce && (o.op != OptOps::UPCAST || caps.has_local))
      fail(fmt::format("{} takes an output axis", opt_op_name(o.op)));
    if (r && n == 0) fail("the axis has a symbolic size");
    if (o.arg < 1 || n % o.arg != 0)
      fail(fmt::format("amount {} does not divide the axis size {}", o.arg, n));
    if (o.op == OptOps::THREAD && threaded) fail("the kernel already has a THREAD axis");
    if (o.op == OptOps::UNROLL && r && inside_other_reduce(ast, r.get()))
      fail("a reduce nested in this axis' reduce depends on it");
    if (group && r && reduce_nested(ast, r.get())) fail("the reduce over this axis is inside another reduce");
    if (o.op == OptOps::THREAD && !caps.has_threads && !caps.has_local)
      fail(fmt::format("the '{}' renderer has no parallel tasks", caps.dialect));
    if (o.arg == 1) return;

    AxisType t = o.op == OptOps::UPCAST   ? AxisType::UPCAST
                 : o.op == OptOps::UNROLL ? AxisType::UNROLL
                 : o.op == OptOps::LOCAL  ? AxisType::LOCAL
                 : group                  ? AxisType::GROUP_REDUCE
                                          : AxisType::THREAD;
    UOpRef inner = fresh(o.arg, t);
    bool top = o.op == OptOps::THREAD || o.op == OptOps::GROUPTOP;
    if (o.op == OptOps::THREAD) {
      threaded = true;
      order.insert(order.begin(), inner);
    } else if (o.op == OptOps::UPCAST) {
      // A later UPCAST goes outside the earlier ones: the first (the contiguous axis) varies fastest.
      order.insert(std::find_if(order.begin(), order.end(),
                                [](const UOpRef& x) { return axis_type(x.get()) == AxisType::UPCAST; }),
                   inner);
    } else if (o.op == OptOps::LOCAL || group) {
      // Local dims sit after the loops, LOCAL before GROUP, later ones inside (the last is lidx0).
      auto at = std::find_if(order.begin(), order.end(), [&](const UOpRef& x) {
        AxisType a = axis_type(x.get());
        return a == AxisType::UPCAST || a == AxisType::UNROLL || (!group && a == AxisType::GROUP_REDUCE);
      });
      order.insert(at, inner);
    } else {
      order.push_back(inner);
    }
    if (o.arg == n) {
      ast = ast->substitute({{r.get(), inner}});
      std::erase(order, r);
      axes[static_cast<size_t>(o.axis)] = nullptr;
    } else {
      UOpRef rest = fresh(n / o.arg, axis_type(r.get()));
      UOpRef expr = top ? inner * (n / o.arg) + rest : rest * o.arg + inner;
      ast = split_range(ast, r, expr,
                        top ? std::vector<UOpRef>{inner, rest} : std::vector<UOpRef>{rest, inner});
      replace(r, rest);
    }
    if (o.op == OptOps::LOCAL || group || o.op == OptOps::UPCAST) check_workgroup(o, caps);
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
    case OptOps::LOCAL:
      return "LOCAL";
    case OptOps::GROUP:
      return "GROUP";
    case OptOps::GROUPTOP:
      return "GROUPTOP";
    case OptOps::PADTO:
      return "PADTO";
    case OptOps::TC:
      return "TC";
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
  if (opts[0].op == OptOps::TC) return apply_tc(ast, opts[0], opts.subspan(1), caps);
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

}  // namespace tg::codegen
