#pragma once
// Open-addressing map keyed by node pointer, for the per-call memo tables of toposort, substitute and
// graph_rewrite (no erase; cheaper than std::unordered_map's node allocations). Internal header.
#include <bit>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

namespace tg::detail {

inline uint64_t mix_ptr(const void* p) {
  uint64_t x = reinterpret_cast<uintptr_t>(p);
  x ^= x >> 33, x *= 0xff51afd7ed558ccdull, x ^= x >> 33;
  return x;
}

template <typename V>
class PtrMap {
 public:
  explicit PtrMap(size_t expected = 16) { rehash(std::bit_ceil(expected * 2 + 2)); }

  V* find(const void* k) {
    for (size_t i = mix_ptr(k) & mask_;; i = (i + 1) & mask_) {
      if (slots_[i].k == k) return &slots_[i].v;
      if (slots_[i].k == nullptr) return nullptr;
    }
  }
  bool contains(const void* k) { return find(k) != nullptr; }
  // Inserts k -> v unless present; returns the stored value and whether it was inserted.
  // Pointers to values stay valid until an insert adds a new key.
  std::pair<V*, bool> insert(const void* k, V v) {
    size_t i = mix_ptr(k) & mask_;
    for (; slots_[i].k != nullptr; i = (i + 1) & mask_)
      if (slots_[i].k == k) return {&slots_[i].v, false};
    if ((size_ + 1) * 4 > slots_.size() * 3) {
      rehash(slots_.size() * 2);
      for (i = mix_ptr(k) & mask_; slots_[i].k != nullptr;) i = (i + 1) & mask_;
    }
    slots_[i].k = k, slots_[i].v = std::move(v), size_++;
    return {&slots_[i].v, true};
  }
  V& operator[](const void* k) { return *insert(k, V{}).first; }
  size_t size() const { return size_; }

 private:
  struct Slot {
    const void* k = nullptr;  // key and value side by side: one cache line per probe
    V v{};
  };

  void rehash(size_t cap) {
    std::vector<Slot> old(cap);
    old.swap(slots_);
    mask_ = cap - 1, size_ = 0;
    for (Slot& s : old)
      if (s.k != nullptr) insert(s.k, std::move(s.v));
  }

  std::vector<Slot> slots_;
  size_t mask_ = 0, size_ = 0;
};

}  // namespace tg::detail
