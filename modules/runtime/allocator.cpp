#include "runtime/allocator.hpp"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "base/error.hpp"
#include "runtime/check.hpp"

namespace tg::runtime {

LruAllocator::LruAllocator(sdk::Allocator& raw, std::string name, size_t cache_limit)
    : raw_(raw), name_(std::move(name)), limit_(cache_limit) {}

LruAllocator::~LruAllocator() { flush(); }

LruAllocator::Key LruAllocator::key_of(size_t nbytes, const sdk::AllocOptions& opts) {
  auto bits = static_cast<uint8_t>(opts.host_visible | (opts.uncached << 1) | (opts.cpu_access << 2));
  return {nbytes, bits};
}

sdk::AllocOptions LruAllocator::options_of(const Key& key) {
  return {.host_visible = (key.second & 1) != 0,
          .uncached = (key.second & 2) != 0,
          .cpu_access = (key.second & 4) != 0};
}

sdk::Handle LruAllocator::alloc(size_t nbytes, const sdk::AllocOptions& opts) {
  std::lock_guard lock(mu_);
  Key key = key_of(nbytes, opts);
  if (auto found = by_key_.find(key); found != by_key_.end()) {
    auto it = found->second.back();
    found->second.pop_back();
    if (found->second.empty()) by_key_.erase(found);
    sdk::Handle h = it->handle;
    lru_.erase(it);
    cached_ -= nbytes, in_use_ += nbytes, peak_ = std::max(peak_, in_use_);
    return h;
  }
  sdk::Handle h = nullptr;
  sdk::Status s = raw_.alloc(nbytes, opts, &h);
  if (s.code() == sdk::Code::out_of_memory) {
    size_t flushed = flush_locked();
    s = raw_.alloc(nbytes, opts, &h);
    if (s.code() == sdk::Code::out_of_memory)
      throw OutOfMemoryError("alloc",
                             fmt::format("{} is out of memory allocating {} bytes ({} bytes in use, {} "
                                         "cached bytes flushed before the retry): {}",
                                         name_, nbytes, in_use_, flushed, s.message()));
  }
  check(s, "alloc", fmt::format("{} allocating {} bytes", name_, nbytes));
  in_use_ += nbytes, peak_ = std::max(peak_, in_use_);
  return h;
}

void LruAllocator::free(sdk::Handle buf, size_t nbytes, const sdk::AllocOptions& opts) {
  std::lock_guard lock(mu_);
  in_use_ -= std::min(in_use_, nbytes);
  if (nbytes > limit_) return raw_.free(buf, nbytes, opts);
  Key key = key_of(nbytes, opts);
  lru_.push_front({key, buf});
  by_key_[key].push_back(lru_.begin());
  cached_ += nbytes;
  while (cached_ > limit_) release_locked(std::prev(lru_.end()));
}

void LruAllocator::release_locked(std::list<Entry>::iterator it) {
  auto& same = by_key_[it->key];
  same.erase(std::find(same.begin(), same.end(), it));
  if (same.empty()) by_key_.erase(it->key);
  raw_.free(it->handle, it->key.first, options_of(it->key));
  cached_ -= it->key.first;
  lru_.erase(it);
}

size_t LruAllocator::flush_locked() {
  size_t flushed = cached_;
  for (auto& e : lru_) raw_.free(e.handle, e.key.first, options_of(e.key));
  lru_.clear(), by_key_.clear(), cached_ = 0;
  return flushed;
}

void LruAllocator::flush() {
  std::lock_guard lock(mu_);
  flush_locked();
}

void LruAllocator::copyin(sdk::Handle dst, std::span<const std::byte> src) {
  check(raw_.copyin(dst, src), "copyin", fmt::format("{} copying {} bytes in", name_, src.size()));
}

void LruAllocator::copyout(std::span<std::byte> dst, sdk::Handle src) {
  check(raw_.copyout(dst, src), "copyout", fmt::format("{} copying {} bytes out", name_, dst.size()));
}

sdk::Handle LruAllocator::offset(sdk::Handle buf, size_t offset, size_t nbytes) {
  sdk::Handle view = nullptr;
  check(raw_.offset(buf, offset, nbytes, &view), "view", fmt::format("{} view at byte {}", name_, offset));
  return view;
}

void LruAllocator::free_view(sdk::Handle view) { raw_.free_view(view); }

size_t LruAllocator::cached_bytes() const {
  std::lock_guard lock(mu_);
  return cached_;
}

size_t LruAllocator::in_use_bytes() const {
  std::lock_guard lock(mu_);
  return in_use_;
}

size_t LruAllocator::peak_in_use_bytes() const {
  std::lock_guard lock(mu_);
  return peak_;
}

void LruAllocator::reset_peak() {
  std::lock_guard lock(mu_);
  peak_ = in_use_;
}

}  // namespace tg::runtime
