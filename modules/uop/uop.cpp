// The intern table, reference counting, and graph walks (toposort, substitute).
#include "uop/uop.hpp"

#include <array>
#include <mutex>
#include <ostream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.hpp"
#include "base/hash.hpp"
#include "uop/intern.hpp"
#include "uop/ptr_map.hpp"

namespace tg {

// Sharded open-addressing hash set of live nodes. A node's count goes 1 -> 0 only under its shard's lock,
// and lookups take a reference under the same lock, so a dying node is never handed out again.
class UOpTable {
 public:
  static UOpTable& get() {
    static UOpTable* table = new UOpTable();  // never destroyed: nodes may outlive static destructors
    return *table;
  }

  // src views the sources; owned (if given) holds the same sources and is moved into a new node.
  UOpRef intern(Ops op, DType dtype, std::span<const UOp* const> src, std::vector<UOpRef>* owned, Arg& arg,
                uint64_t h) {
    Shard& s = shards_[h & (kShards - 1)];
    std::lock_guard lock(s.mu);
    size_t mask = s.slots.size() - 1;
    for (size_t i = home(h, mask); s.slots[i].p != nullptr; i = (i + 1) & mask) {
      const Slot& sl = s.slots[i];
      if (sl.h == h && same(sl.p, op, dtype, src, arg)) return UOpRef(sl.p);
    }
    if ((s.used + 1) * 2 > s.slots.size()) grow(s);
    std::vector<UOpRef> refs;
    if (owned) {
      refs = std::move(*owned);
    } else {
      refs.reserve(src.size());
      for (const UOp* x : src) refs.emplace_back(x);
    }
    UOp* p = new UOp(op, dtype, std::move(refs), std::move(arg), h);
    mask = s.slots.size() - 1;
    size_t i = home(h, mask);
    while (s.slots[i].p != nullptr) i = (i + 1) & mask;
    s.slots[i] = Slot{h, p}, s.used++;
    live_.fetch_add(1, std::memory_order_relaxed);
    return UOpRef(p);
  }

  // Called when p's count may drop to zero; frees it and, iteratively, every source that dies with it.
  // The work list is per thread and shared by nested calls (an OpaqueArg freeing UOps), each of which
  // only drains what it pushed.
  void release_last(const UOp* first) {
    // Static UOpRefs may die after this thread's thread_locals (at exit): then use a local list.
    static thread_local bool list_gone = false;  // trivially destructible, so readable until the end
    struct List {
      std::vector<const UOp*> v;
      ~List() { list_gone = true; }
    };
    static thread_local List list;
    std::vector<const UOp*> local;
    std::vector<const UOp*>& dead = list_gone ? local : list.v;
    size_t base = dead.size();
    if (drop(first)) dead.push_back(first);
    while (dead.size() > base) {
      const UOp* p = dead.back();
      dead.pop_back();
      std::vector<UOpRef> src = std::move(const_cast<UOp*>(p)->src_);
      delete p;
      for (UOpRef& r : src) {
        const UOp* c = std::exchange(r.p_, nullptr);
        if (!release_fast(c) && drop(c)) dead.push_back(c);
      }
    }
  }

  // Decrements unless this could be the last reference; true if it decremented.
  static bool release_fast(const UOp* p) {
    uint32_t r = p->refs_.load(std::memory_order_relaxed);
    while (r > 1)
      if (p->refs_.compare_exchange_weak(r, r - 1, std::memory_order_acq_rel, std::memory_order_relaxed))
        return true;
    return false;
  }

  size_t live() const { return live_.load(std::memory_order_relaxed); }

  static UOpRef make(Ops op, DType dtype, std::span<const UOp* const> src, std::vector<UOpRef>* owned,
                     Arg& arg);

 private:
  static constexpr size_t kShards = 64;
  struct Slot {
    uint64_t h = 0;  // the node's hash, kept here so probing does not touch other nodes' memory
    const UOp* p = nullptr;
  };
  struct Shard {
    std::mutex mu;
    std::vector<Slot> slots = std::vector<Slot>(64);
    size_t used = 0;
  };

  static size_t home(uint64_t h, size_t mask) { return (h >> 6) & mask; }

  static bool same(const UOp* p, Ops op, DType dtype, std::span<const UOp* const> src, const Arg& arg) {
    if (p->op_ != op || !(p->dtype_ == dtype) || p->src_.size() != src.size()) return false;
    for (size_t i = 0; i < src.size(); i++)
      if (p->src_[i].get() != src[i]) return false;
    return arg_equal(p->arg_, arg);
  }

  static void grow(Shard& s) {
    std::vector<Slot> old(s.slots.size() * 2);
    old.swap(s.slots);
    size_t mask = s.slots.size() - 1;
    for (const Slot& sl : old) {
      if (sl.p == nullptr) continue;
      size_t i = home(sl.h, mask);
      while (s.slots[i].p != nullptr) i = (i + 1) & mask;
      s.slots[i] = sl;
    }
  }

  // Takes the last reference under the lock; true if p is now unreachable (removed from the table).
  bool drop(const UOp* p) {
    Shard& s = shards_[p->hash_ & (kShards - 1)];
    std::lock_guard lock(s.mu);
    if (p->refs_.fetch_sub(1, std::memory_order_acq_rel) != 1) return false;
    size_t mask = s.slots.size() - 1, i = home(p->hash_, mask);
    while (s.slots[i].p != p) i = (i + 1) & mask;
    // Backward-shift deletion keeps every probe chain intact without tombstones.
    for (size_t j = (i + 1) & mask; s.slots[j].p != nullptr; j = (j + 1) & mask) {
      size_t k = home(s.slots[j].h, mask);
      bool movable = i <= j ? (k <= i || k > j) : (k <= i && k > j);
      if (movable) s.slots[i] = s.slots[j], i = j;
    }
    s.slots[i] = Slot{}, s.used--;
    live_.fetch_sub(1, std::memory_order_relaxed);
    return true;
  }

  std::array<Shard, kShards> shards_;
  std::atomic<size_t> live_{0};
};

size_t live_uop_count() { return UOpTable::get().live(); }

// ---- UOpRef ----

UOpRef::UOpRef(const UOp* p) noexcept : p_(p) {
  if (p_) p_->refs_.fetch_add(1, std::memory_order_relaxed);
}
UOpRef::UOpRef(const UOpRef& o) noexcept : UOpRef(o.p_) {}
UOpRef& UOpRef::operator=(const UOpRef& o) noexcept {
  UOpRef tmp(o);
  std::swap(p_, tmp.p_);
  return *this;
}
UOpRef& UOpRef::operator=(UOpRef&& o) noexcept {
  UOpRef tmp(std::move(o));
  std::swap(p_, tmp.p_);
  return *this;
}
UOpRef::~UOpRef() {
  if (p_ && !UOpTable::release_fast(p_)) UOpTable::get().release_last(p_);
}

// ---- UOp ----

UOp::UOp(Ops op, DType dtype, std::vector<UOpRef> src, Arg arg, uint64_t hash)
    : op_(op), dtype_(dtype), src_(std::move(src)), arg_(std::move(arg)), hash_(hash) {
  if (op_ == Ops::CONST) {
    if (const bool* b = std::get_if<bool>(&arg_))
      cval_ = *b;
    else if (const int64_t* i = std::get_if<int64_t>(&arg_))
      cval_ = *i;
    else if (const double* d = std::get_if<double>(&arg_))
      cval_ = *d;
  }
}

UOp::~UOp() = default;

UOpRef UOpTable::make(Ops op, DType dtype, std::span<const UOp* const> src, std::vector<UOpRef>* owned,
                      Arg& arg) {
  uint64_t h = hash_combine(static_cast<uint64_t>(op), static_cast<uint64_t>(dtype.scalar()) |
                                                           uint64_t{dtype.count()} << 8 |
                                                           static_cast<uint64_t>(dtype.addrspace()) << 24);
  h = hash_combine(h, static_cast<uint64_t>(dtype.ptr_size()));
  h = hash_combine(h, hash_arg(arg));
  for (const UOp* s : src) {
    if (!s) throw ValueError(op_name(op), "a source is null");
    h = hash_combine(h, s->hash_);
  }
  h ^= h >> 33, h *= 0xC4CEB9FE1A85EC53ull, h ^= h >> 29;  // spread into the low bits (shard, slot)
  return get().intern(op, dtype, src, owned, arg, h);
}

UOpRef UOp::make(Ops op, DType dtype, std::vector<UOpRef> src, Arg arg) {
  constexpr size_t kInline = 8;
  const UOp* inline_ptrs[kInline];
  std::vector<const UOp*> heap_ptrs;
  const UOp** ptrs = inline_ptrs;
  if (src.size() > kInline) heap_ptrs.resize(src.size()), ptrs = heap_ptrs.data();
  for (size_t i = 0; i < src.size(); i++) ptrs[i] = src[i].get();
  return UOpTable::make(op, dtype, {ptrs, src.size()}, &src, arg);
}

namespace detail {
UOpRef make_view(Ops op, DType dtype, std::span<const UOp* const> src, Arg arg) {
  return UOpTable::make(op, dtype, src, nullptr, arg);
}
}  // namespace detail

UOpRef UOp::with_src(std::vector<UOpRef> src) const { return make(op_, dtype_, std::move(src), arg_); }
UOpRef UOp::with_arg(Arg arg) const { return make(op_, dtype_, src_, std::move(arg)); }
UOpRef UOp::with_dtype(DType d) const { return make(op_, d, src_, arg_); }

const ConstValue* UOp::const_value() const noexcept { return op_ == Ops::CONST ? &cval_ : nullptr; }

void throw_bad_arg(Ops op) {
  throw ValueError(op_name(op), "the node's arg does not hold the requested type");
}

std::vector<const UOp*> UOp::toposort() const {
  std::vector<const UOp*> out;
  detail::PtrMap<char> seen;
  std::vector<std::pair<const UOp*, size_t>> stack{{this, 0}};
  seen.insert(this, 1);
  while (!stack.empty()) {
    auto& [u, i] = stack.back();
    if (i == u->src_.size()) {
      out.push_back(u);
      stack.pop_back();
      continue;
    }
    const UOp* s = u->src_[i++].get();
    if (seen.insert(s, 1).second) stack.emplace_back(s, 0);
  }
  return out;
}

UOpRef UOp::substitute(const std::unordered_map<const UOp*, UOpRef>& map) const {
  if (map.empty()) return ref();
  detail::PtrMap<UOpRef> done;
  std::vector<UOpRef> src;
  for (const UOp* u : toposort()) {
    if (auto it = map.find(u); it != map.end()) {
      done.insert(u, it->second);
      continue;
    }
    bool changed = false;
    src.clear();
    for (const UOpRef& s : u->src_) {
      const UOpRef* n = done.find(s.get());
      changed |= n != nullptr;
      src.push_back(n ? *n : s);
    }
    if (changed) done.insert(u, make(u->op_, u->dtype_, src, u->arg_));
  }
  const UOpRef* r = done.find(this);
  return r ? *r : ref();
}

std::ostream& operator<<(std::ostream& os, const UOpRef& u) { return os << (u ? u->str() : "nullptr"); }

std::string UOp::str() const {
  std::vector<std::string> srcs;
  for (const UOpRef& s : src_) srcs.push_back(fmt::format("Ops.{}", op_name(s->op_)));
  return fmt::format("UOp(Ops.{}, {}, arg={}, src=({}))", op_name(op_), dtype_.str(), arg_str(arg_),
                     fmt::join(srcs, ", "));
}

}  // namespace tg
