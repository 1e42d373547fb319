// The expander: a loop over an UPCAST range becomes its body once per value of the range. With a vector
// width above 1 the values are taken in chunks of up to that many lanes (powers of two), and each chunk
// is built in lockstep: a load or store whose address steps by one element per lane becomes one vector
// access, float arithmetic over vectors becomes vector arithmetic (unless only memory is vectorized, as on
// GPUs), values that do not depend on the range are broadcast, and everything else (index math,
// comparisons, gathers) stays one scalar copy per lane. Width 1 gives scalar copies only. UNROLL ranges are
// unrolled where the accumulators are built (ends.cpp).
#include <algorithm>
#include <bit>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "codegen/passes.hpp"

namespace tg::codegen {

namespace {

// One template node over the lanes of a chunk: a vector node (a value, or a void vector STORE), or one
// scalar node per lane (the same node in every lane when it does not depend on the range).
struct Lanes {
  UOpRef vec;
  std::vector<UOpRef> scalar;
};

// Element types a lane group can load, store and convert as one vector: ints and float32/float64 (no bool or
// half: C has no vectors of them here). Arithmetic is vectorized for float32 and float64; on ints, the ops
// whose C vector form wraps as the scalar one's cast does (unpacking quantized weights: shifts and masks).
bool arith_dtype(DType d) {
  return d.count() == 1 && !d.is_ptr() && (d.scalar() == Scalar::FLOAT32 || d.scalar() == Scalar::FLOAT64);
}
bool memory_dtype(DType d) {
  return arith_dtype(d) || (d.count() == 1 && !d.is_ptr() && d.is_int() && d.scalar() != Scalar::INDEX);
}
bool int_arith(const UOp* u) {
  static const OpSet kIntOps{Ops::ADD, Ops::MUL, Ops::AND, Ops::OR, Ops::XOR, Ops::SHL, Ops::SHR};
  if (!kIntOps.contains(u->op()) || !memory_dtype(u->dtype()) || arith_dtype(u->dtype())) return false;
  for (const UOpRef& s : u->src())
    if (s->dtype() != u->dtype()) return false;
  return true;
}

class Chunk {
 public:
  Chunk(const UOp* range, int64_t first, size_t width, bool alu,
        const std::unordered_set<const UOp*>& varying)
      : r_(range), first_(first), w_(width), alu_(alu), varying_(varying) {}

  // The nodes that stand for `u` over the chunk (each once).
  std::vector<UOpRef> nodes(const UOp* u) {
    const Lanes& l = get(u);
    if (l.vec) return {l.vec};
    std::vector<UOpRef> out;
    for (const UOpRef& s : l.scalar)
      if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
    return out;
  }

 private:
  const Lanes& get(const UOp* u) {
    if (auto it = memo_.find(u); it != memo_.end()) return it->second;
    Lanes l;
    if (!varying_.contains(u)) {
      l.scalar.assign(w_, u->ref());
    } else if (u == r_) {
      for (size_t v = 0; v < w_; v++)
        l.scalar.push_back(UOp::const_(u->dtype(), ConstValue{first_ + static_cast<int64_t>(v)}));
    } else {
      l = build(u);
    }
    return memo_.emplace(u, std::move(l)).first->second;
  }

  Lanes build(const UOp* u) {
    if (w_ > 1) {
      if (UOpRef v = vector_access(u)) return {v, {}};
      if (u->op() == Ops::AFTER)
        if (UOpRef a = after_all(u)) return {nullptr, std::vector<UOpRef>(w_, a)};
      if (UOpRef v = alu_ ? vector_alu(u) : nullptr) return {v, {}};
    }
    Lanes l;
    for (size_t v = 0; v < w_; v++) {
      std::vector<UOpRef> src;
      for (const UOpRef& s : u->src()) src.push_back(lane(get(s.get()), v));
      l.scalar.push_back(u->with_src(std::move(src)));
    }
    return l;
  }

  UOpRef lane(const Lanes& l, size_t v) {
    if (!l.vec) return l.scalar[v];
    if (l.vec->dtype() == dtypes::void_) return l.vec;
    return UOp::make(Ops::GEP, l.vec->dtype().scalar_type(), {l.vec}, IntVec{static_cast<int64_t>(v)});
  }

  static bool uniform(const Lanes& l) {
    return !l.vec &&
           std::all_of(l.scalar.begin(), l.scalar.end(), [&](const UOpRef& s) { return s == l.scalar[0]; });
  }

  UOpRef as_vector(const Lanes& l, DType scalar) {
    if (l.vec) return l.vec;
    DType d = scalar.vec(static_cast<int>(w_));
    if (uniform(l) && l.scalar[0]->is_const()) return UOp::const_(d, *l.scalar[0]->const_value());
    return UOp::make(Ops::VECTORIZE, d, l.scalar);
  }

  // How far the integer expression e moves per step of the range, when that is a constant.
  std::optional<int64_t> slope(const UOp* e) {
    if (e == r_) return 1;
    if (auto it = slopes_.find(e); it != slopes_.end()) return it->second;
    auto s = [&](size_t i) { return slope(e->src(i).get()); };
    std::optional<int64_t> out = 0;
    if (e->op() == Ops::ADD) {
      auto a = s(0), b = s(1);
      out = a && b ? std::optional(*a + *b) : std::nullopt;
    } else if (e->op() == Ops::MUL && e->src(1)->is_const() && e->src(1)->dtype().is_int()) {
      auto a = s(0);
      out = a ? std::optional(*a * std::get<int64_t>(*e->src(1)->const_value())) : std::nullopt;
    } else {
      for (size_t i = 0; i < e->src().size() && out; i++)
        if (s(i) != 0) out = std::nullopt;  // a function of the range other than a sum of multiples
    }
    return slopes_.emplace(e, out).first->second;
  }

  // LOAD/STORE through INDEX(buf, idx[, valid]) with idx stepping by one: one access of w elements at
  // lane 0's address. The buffer and the validity must be the same for every lane.
  UOpRef vector_access(const UOp* u) {
    bool load = u->op() == Ops::LOAD && u->src().size() == 1;
    bool store = u->op() == Ops::STORE && u->src().size() == 2;
    if (!load && !store) return nullptr;
    DType value = load ? u->dtype() : u->src(1)->dtype();
    const UOp* index = u->src(0).get();
    if (!memory_dtype(value) || index->op() != Ops::INDEX || !varying_.contains(index->src(1).get()))
      return nullptr;
    // Simplified first: the opts' splits leave (outer*k + r) / k and % k in addresses.
    UOpRef idx = index->src(1)->simplify();
    simplified_.push_back(idx);  // slopes_ keys its nodes by address: they must outlive the chunk
    if (slope(idx.get()) != 1) return nullptr;
    std::vector<UOpRef> src;
    for (size_t i = 0; i < index->src().size(); i++) {
      const Lanes& l = get(index->src(i).get());
      if (i != 1 && !uniform(l)) return nullptr;
      src.push_back(i == 1 ? idx->substitute({{r_, UOp::const_(r_->dtype(), ConstValue{first_})}})
                           : l.scalar[0]);
    }
    UOpRef at = index->with_src(std::move(src));
    if (load) return UOp::make(Ops::LOAD, value.vec(static_cast<int>(w_)), {at});
    return UOp::make(Ops::STORE, dtypes::void_, {at, as_vector(get(u->src(1).get()), value)});
  }

  // An AFTER whose dependencies differ per lane: one AFTER on all of them, so a vector access waits for
  // every lane's writes.
  UOpRef after_all(const UOp* u) {
    const Lanes& b = get(u->src(0).get());
    if (!uniform(b)) return nullptr;
    std::vector<UOpRef> src{b.scalar[0]};
    for (size_t i = 1; i < u->src().size(); i++)
      for (const UOpRef& n : nodes(u->src(i).get()))
        if (!n->is_const() && std::find(src.begin(), src.end(), n) == src.end()) src.push_back(n);
    return UOp::make(Ops::AFTER, u->dtype(), std::move(src), u->arg());
  }

  // Float and int arithmetic and conversions: the same op on vectors, operands packed where they are lanes. Always
  // vectors, so a product and the sum it feeds stay side by side and still fuse into one fma.
  UOpRef vector_alu(const UOp* u) {
    static const OpSet kOps{Ops::ADD, Ops::MUL, Ops::NEG, Ops::FDIV, Ops::RECIPROCAL, Ops::MULACC};
    bool cast = u->op() == Ops::CAST && memory_dtype(u->dtype()) && memory_dtype(u->src(0)->dtype());
    if (!cast && !(kOps.contains(u->op()) && arith_dtype(u->dtype())) && !int_arith(u)) return nullptr;
    std::vector<UOpRef> src;
    for (const UOpRef& s : u->src()) src.push_back(as_vector(get(s.get()), s->dtype()));
    return UOp::make(u->op(), u->dtype().vec(static_cast<int>(w_)), std::move(src), u->arg());
  }

  const UOp* r_;
  int64_t first_;
  size_t w_;
  bool alu_;  // vector arithmetic too, not only vector loads and stores
  const std::unordered_set<const UOp*>& varying_;
  std::unordered_map<const UOp*, Lanes> memo_;
  std::unordered_map<const UOp*, std::optional<int64_t>> slopes_;
  std::vector<UOpRef> simplified_;
};

// Lane counts of the chunks: the widest power of two that fits, at most `width`.
std::vector<size_t> chunk_widths(int64_t n, uint32_t width) {
  std::vector<size_t> out;
  for (int64_t left = n; left > 0;) {
    size_t w = std::bit_floor(static_cast<uint64_t>(std::min<int64_t>(left, std::max<uint32_t>(width, 1))));
    out.push_back(w);
    left -= static_cast<int64_t>(w);
  }
  return out;
}

struct ExpandCtx {
  uint32_t width;
  bool alu;
};

UOpRef expand_end(Match& m) {
  const auto& [width, alu] = m.ctx<ExpandCtx>();
  const UOpRef& e = m.root();
  if (e->src().size() != 2 || e->src(1)->op() != Ops::RANGE) return nullptr;
  const UOp* r = e->src(1).get();
  if (r->arg_as<AxisArg>().type != AxisType::UPCAST || !r->src(0)->is_const()) return nullptr;
  int64_t n = std::get<int64_t>(*r->src(0)->const_value());
  std::unordered_set<const UOp*> varying;
  for (const UOp* u : e->src(0)->toposort())
    if (u == r || std::any_of(u->src().begin(), u->src().end(),
                              [&](const UOpRef& s) { return varying.contains(s.get()); }))
      varying.insert(u);
  std::vector<UOpRef> out;
  int64_t first = 0;
  for (size_t w : chunk_widths(n, width)) {
    for (UOpRef& x : Chunk(r, first, w, alu, varying).nodes(e->src(0).get())) out.push_back(std::move(x));
    first += static_cast<int64_t>(w);
  }
  if (out.size() == 1) return out[0];
  return UOp::make(Ops::NOOP, dtypes::void_, std::move(out));
}

}  // namespace

UOpRef expand_upcasts(const UOpRef& sink, uint32_t vector_width, bool vector_alu) {
  static const PatternMatcher pm{{UPat(Ops::END, std::nullopt, std::nullopt, "e"), expand_end}};
  ExpandCtx ctx{vector_width, vector_alu};
  return graph_rewrite(sink, pm, ctx, {.name = "expand upcasts"});
}

}  // namespace tg::codegen
