#pragma once
// Test helpers: tensor graphs built directly from UOps (the composite ops follow the structure tinygrad's
// Tensor gives them), and a tiny evaluator for kernel ASTs so schedules can be checked against hand-derived
// numbers without a device.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "schedule/schedule.hpp"

namespace tgt {

using namespace tg;

inline UOpRef device(const char* name = "NULL") {
  return UOp::make(Ops::DEVICE, dtypes::void_, {}, std::string(name));
}
inline IntVec shp(const UOpRef& x) { return to_ints(*x->shape()); }
inline int64_t numel(const IntVec& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

// ---- movement ----
inline UOpRef reshape(const UOpRef& x, IntVec s) {
  return UOp::make(Ops::RESHAPE, x->dtype(), {x}, Shape(s.begin(), s.end()));
}
inline UOpRef expand(const UOpRef& x, IntVec s) {
  return UOp::make(Ops::EXPAND, x->dtype(), {x}, Shape(s.begin(), s.end()));
}
inline UOpRef permute(const UOpRef& x, IntVec o) {
  return UOp::make(Ops::PERMUTE, x->dtype(), {x}, std::move(o));
}
inline UOpRef pad(const UOpRef& x, IntPairs p) {
  return UOp::make(Ops::PAD, x->dtype(), {x}, ShapePairs(p.begin(), p.end()));
}
inline UOpRef shrink(const UOpRef& x, IntPairs p) {
  return UOp::make(Ops::SHRINK, x->dtype(), {x}, ShapePairs(p.begin(), p.end()));
}
inline UOpRef flip(const UOpRef& x, IntVec f) { return UOp::make(Ops::FLIP, x->dtype(), {x}, std::move(f)); }

// ---- leaves ----
inline UOpRef input(IntVec shape, DType dt = dtypes::float32, const char* dev = "NULL") {
  UOpRef b = sched::new_buffer(device(dev), numel(shape), dt);
  return reshape(b, std::move(shape));
}
inline UOpRef full(IntVec shape, double v, DType dt = dtypes::float32) {
  UOpRef c = UOp::const_(dt, v)->with_src({device()});
  if (shape.empty()) return c;
  UOpRef ones = reshape(c, IntVec(shape.size(), 1));
  return expand(ones, std::move(shape));
}

// ---- elementwise and reduce ----
inline UOpRef alu(Ops op, std::vector<UOpRef> src) {
  DType dt = group::Comparison.contains(op) ? dtypes::bool_
             : op == Ops::WHERE             ? src[1]->dtype()
                                            : src[0]->dtype();
  return UOp::make(op, dt, std::move(src));
}
inline UOpRef add(const UOpRef& a, const UOpRef& b) { return alu(Ops::ADD, {a, b}); }
inline UOpRef mul(const UOpRef& a, const UOpRef& b) { return alu(Ops::MUL, {a, b}); }
inline UOpRef neg(const UOpRef& a) { return alu(Ops::NEG, {a}); }
inline UOpRef sub(const UOpRef& a, const UOpRef& b) { return add(a, neg(b)); }
inline UOpRef maximum(const UOpRef& a, const UOpRef& b) { return alu(Ops::MAX, {a, b}); }
inline UOpRef cast(const UOpRef& x, DType dt) { return UOp::make(Ops::CAST, dt, {x}); }
inline UOpRef reduce(const UOpRef& x, Ops op, IntVec axes) {
  return UOp::make(Ops::REDUCE_AXIS, x->dtype(), {x}, ReduceArg{op, std::move(axes)});
}
inline UOpRef sum(const UOpRef& x, IntVec axes) { return reduce(x, Ops::ADD, std::move(axes)); }
inline UOpRef max(const UOpRef& x, IntVec axes) { return reduce(x, Ops::MAX, std::move(axes)); }
// x (with 1s on the broadcast axes) expanded to the shape of like.
inline UOpRef bcast(const UOpRef& x, const UOpRef& like) { return expand(x, shp(like)); }
inline UOpRef scalar_like(const UOpRef& x, double v) { return full(shp(x), v, x->dtype()); }
inline UOpRef exp(const UOpRef& x) { return alu(Ops::EXP2, {mul(x, scalar_like(x, 1.0 / std::log(2.0)))}); }
inline UOpRef log(const UOpRef& x) { return mul(alu(Ops::LOG2, {x}), scalar_like(x, std::log(2.0))); }

// ---- composites ----
inline UOpRef mean(const UOpRef& x, IntVec axes) {
  int64_t n = 1;
  for (int64_t a : axes) n *= shp(x)[static_cast<size_t>(a)];
  UOpRef s = sum(x, axes);
  return mul(s, scalar_like(s, 1.0 / static_cast<double>(n)));
}
inline UOpRef softmax_last(const UOpRef& x) {
  size_t ax = shp(x).size() - 1;
  UOpRef m = sub(x, bcast(max(x, {static_cast<int64_t>(ax)}), x));
  UOpRef e = exp(m);
  UOpRef s = sum(e, {static_cast<int64_t>(ax)});
  return mul(e, bcast(alu(Ops::RECIPROCAL, {s}), e));
}
inline UOpRef log_softmax_last(const UOpRef& x) {
  int64_t ax = static_cast<int64_t>(shp(x).size()) - 1;
  UOpRef m = sub(x, bcast(max(x, {ax}), x));
  return sub(m, bcast(log(sum(exp(m), {ax})), m));
}
// cumsum of a 1-d tensor as tinygrad's _cumalu: pad, pool windows with repeat+shrink+reshape, then sum.
inline UOpRef cumsum(const UOpRef& x) {
  int64_t n = shp(x)[0], l = 2 * n - 1, reps = (n * (l + 1) + l - 1) / l;
  UOpRef p = pad(x, {{n - 1, 0}});
  UOpRef r = reshape(expand(reshape(p, {1, l}), {reps, l}), {reps * l});
  r = reshape(shrink(r, {{0, n * (l + 1)}}), {n, l + 1});
  r = reshape(shrink(r, {{0, n}, {0, n}}), {n, n, 1});
  r = reshape(shrink(r, {{0, n}, {0, n}, {0, 1}}), {n, n});
  return reshape(sum(permute(r, {1, 0}), {1}), {n});
}
inline UOpRef arange(int64_t start, int64_t stop, int64_t step, DType dt = dtypes::int32) {
  int64_t n = (stop - start + step + (step > 0 ? -1 : 1)) / step;
  UOpRef c = cumsum(full({n}, static_cast<double>(step), dt));
  return add(c, full({n}, static_cast<double>(start - step), dt));
}
// a (n,k) @ b (k,m) from primitives: broadcast multiply, then sum over k.
inline UOpRef matmul(const UOpRef& a, const UOpRef& b) {
  int64_t n = shp(a)[0], k = shp(a)[1], m = shp(b)[1];
  UOpRef a3 = expand(reshape(a, {n, 1, k}), {n, m, k});
  UOpRef b3 = expand(reshape(permute(b, {1, 0}), {1, m, k}), {n, m, k});
  return reshape(sum(mul(a3, b3), {2}), {n, m});
}
inline UOpRef argmax_last(const UOpRef& x) {
  int64_t b = shp(x)[0], n = shp(x)[1];
  UOpRef is_max = alu(Ops::CMPEQ, {x, bcast(max(x, {1}), x)});
  UOpRef ar = expand(reshape(arange(n, 0, -1), {1, n}), {b, n});
  UOpRef idx = mul(cast(is_max, dtypes::int32), ar);
  UOpRef r = sub(full({b, 1}, static_cast<double>(n), dtypes::int32), max(idx, {1}));
  return reshape(r, {b});
}
inline UOpRef layernorm(const UOpRef& x, IntVec axes, double eps = 1e-5) {
  UOpRef y = sub(x, bcast(mean(x, axes), x));
  UOpRef var = mean(mul(y, y), axes);
  UOpRef inv = alu(Ops::RECIPROCAL, {alu(Ops::SQRT, {add(var, scalar_like(var, eps))})});
  return mul(y, bcast(inv, y));
}
// tinygrad's sparse_categorical_crossentropy (ignore_index=-1, no smoothing, mean reduction).
inline UOpRef sparse_categorical_crossentropy(const UOpRef& logits, const UOpRef& labels) {
  int64_t b = shp(logits)[0], c = shp(logits)[1];
  UOpRef lp = log_softmax_last(logits);
  UOpRef mask = alu(Ops::CMPNE, {labels, full({b}, -1, labels->dtype())});
  UOpRef onehot = alu(Ops::CMPEQ, {expand(reshape(labels, {b, 1}), {b, c}),
                                   expand(reshape(arange(0, c, 1), {1, c}), {b, c})});
  UOpRef y = mul(cast(onehot, dtypes::float32), expand(reshape(cast(mask, dtypes::float32), {b, 1}), {b, c}));
  UOpRef unreduced = reshape(sum(mul(lp, y), {1}), {b});
  UOpRef total = neg(sum(unreduced, {0}));
  return alu(Ops::FDIV,
             {reshape(total, {}), reshape(cast(sum(cast(mask, dtypes::int32), {0}), dtypes::float32), {})});
}

inline std::vector<sched::ScheduleItem> schedule(std::vector<UOpRef> roots,
                                                 sched::BecomesMap* becomes = nullptr) {
  sched::BecomesMap b;
  auto items = sched::create_schedule(UOp::sink(std::move(roots)), becomes ? *becomes : b);
  for (const sched::ScheduleItem& si : items) BOOST_TEST_MESSAGE(si.str());
  return items;
}
inline size_t kernels(std::vector<UOpRef> roots) { return schedule(std::move(roots)).size(); }

// ---- evaluating kernel ASTs on host memory (doubles; enough for small hand-checked cases) ----
class Memory {
 public:
  void set(const UOpRef& view, std::vector<double> v) { data_[buffer_of(view)] = std::move(v); }
  std::vector<double>& at(const UOpRef& buf) {
    auto& v = data_[buf];
    if (v.empty()) v.assign(static_cast<size_t>(buf->arg_as<int64_t>()), 0.0);
    return v;
  }
  void run(const std::vector<sched::ScheduleItem>& items, const sched::VarVals& vars = {}) {
    vars_ = vars;
    for (const sched::ScheduleItem& si : items) {
      if (si.is_copy()) {
        at(si.bufs[0]) = at(si.bufs[1]);
        continue;
      }
      bufs_.clear();
      for (const UOpRef& b : si.bufs) bufs_.push_back(&at(b));
      for (const UOpRef& s : si.ast->src()) exec(s.get());
    }
  }

 private:
  static UOpRef buffer_of(UOpRef v) {
    while (v->op() == Ops::RESHAPE) v = v->src(0);
    return v;
  }
  void loop(std::span<const UOpRef> ranges, const std::function<void()>& body) {
    if (ranges.empty()) return body();
    int64_t n = static_cast<int64_t>(eval(ranges[0]->src(0).get()));
    for (int64_t i = 0; i < n; i++) env_[ranges[0].get()] = i, loop(ranges.subspan(1), body);
  }
  void exec(const UOp* u) {
    if (u->op() == Ops::END) return loop(u->src().subspan(1), [&] { exec(u->src(0).get()); });
    BOOST_REQUIRE(u->op() == Ops::STORE);
    const UOp* idx = u->src(0).get();
    auto& b = *bufs_.at(static_cast<size_t>(idx->src(0)->arg_as<int64_t>()));
    int64_t i = static_cast<int64_t>(eval(idx->src(1).get()));
    BOOST_REQUIRE(i >= 0 && i < static_cast<int64_t>(b.size()));
    b[static_cast<size_t>(i)] = eval(u->src(1).get());
  }
  double eval(const UOp* u) {
    auto s = [&](size_t i) { return eval(u->src(i).get()); };
    bool is_int = u->dtype().is_int();
    switch (u->op()) {
      case Ops::CONST:
        return std::visit([](auto v) { return static_cast<double>(v); }, *u->const_value());
      case Ops::RANGE:
        return static_cast<double>(env_.at(u));
      case Ops::DEFINE_VAR:
        return static_cast<double>(vars_.at(u->ref()));
      case Ops::LOAD: {
        const UOp* idx = u->src(0).get();
        if (idx->src().size() > 2 && eval(idx->src(2).get()) == 0) return 0;
        auto& b = *bufs_.at(static_cast<size_t>(idx->src(0)->arg_as<int64_t>()));
        int64_t i = static_cast<int64_t>(eval(idx->src(1).get()));
        BOOST_REQUIRE(i >= 0 && i < static_cast<int64_t>(b.size()));
        return b[static_cast<size_t>(i)];
      }
      case Ops::REDUCE: {
        Ops op = u->arg_as<Ops>();
        double acc = op == Ops::ADD ? 0 : op == Ops::MUL ? 1 : -INFINITY;
        loop(u->src().subspan(1), [&] {
          double v = s(0);
          acc = op == Ops::ADD ? acc + v : op == Ops::MUL ? acc * v : std::max(acc, v);
        });
        return acc;
      }
      case Ops::ADD:
        return s(0) + s(1);
      case Ops::MUL:
        return s(0) * s(1);
      case Ops::MAX:
        return std::max(s(0), s(1));
      case Ops::NEG:
        return -s(0);
      case Ops::IDIV:
        return std::trunc(s(0) / s(1));
      case Ops::FDIV:
        return s(0) / s(1);
      case Ops::MOD:
        return std::fmod(s(0), s(1));
      case Ops::CMPLT:
        return s(0) < s(1);
      case Ops::CMPNE:
        return s(0) != s(1);
      case Ops::CMPEQ:
        return s(0) == s(1);
      case Ops::AND:
        return is_int ? static_cast<double>(static_cast<int64_t>(s(0)) & static_cast<int64_t>(s(1)))
                      : (s(0) != 0 && s(1) != 0);
      case Ops::OR:
        return is_int ? static_cast<double>(static_cast<int64_t>(s(0)) | static_cast<int64_t>(s(1)))
                      : (s(0) != 0 || s(1) != 0);
      case Ops::WHERE:
        return s(0) != 0 ? s(1) : s(2);
      case Ops::RECIPROCAL:
        return 1.0 / s(0);
      case Ops::SQRT:
        return std::sqrt(s(0));
      case Ops::EXP2:
        return std::exp2(s(0));
      case Ops::LOG2:
        return std::log2(s(0));
      case Ops::CAST:
        return u->dtype().is_bool() ? s(0) != 0 : is_int ? std::trunc(s(0)) : s(0);
      default:
        BOOST_FAIL("evaluator: unexpected " << op_name(u->op()));
        return 0;
    }
  }
  std::unordered_map<UOpRef, std::vector<double>> data_;
  std::vector<std::vector<double>*> bufs_;
  sched::VarVals vars_;
  std::unordered_map<const UOp*, int64_t> env_;
};

}  // namespace tgt
