#pragma once
// The core's allocator: wraps a plugin's raw allocator with an LRU cache of freed buffers, and on
// out-of-memory flushes the cache and retries once before throwing OutOfMemoryError.
#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "tg/sdk/allocator.hpp"

namespace tg::runtime {

class LruAllocator {
 public:
  static constexpr size_t kDefaultCacheLimit = size_t{512} << 20;

  // name appears in error messages ("CLANG:0"); cache_limit bounds the bytes kept for reuse.
  LruAllocator(sdk::Allocator& raw, std::string name, size_t cache_limit = kDefaultCacheLimit);
  ~LruAllocator();  // returns every cached buffer to the plugin
  LruAllocator(const LruAllocator&) = delete;
  LruAllocator& operator=(const LruAllocator&) = delete;

  sdk::Handle alloc(size_t nbytes, const sdk::AllocOptions& opts = {});
  // Keeps the buffer for reuse by a later alloc of the same size and options.
  void free(sdk::Handle buf, size_t nbytes, const sdk::AllocOptions& opts = {});
  // Gives every cached buffer back to the plugin.
  void flush();

  void copyin(sdk::Handle dst, std::span<const std::byte> src);
  void copyout(std::span<std::byte> dst, sdk::Handle src);
  // A view [offset, offset+nbytes) of buf; NotSupportedError if the plugin has no views.
  sdk::Handle offset(sdk::Handle buf, size_t offset, size_t nbytes);
  void free_view(sdk::Handle view);

  size_t alignment() const { return raw_.alignment(); }
  size_t cached_bytes() const;
  size_t in_use_bytes() const;
  size_t peak_in_use_bytes() const;  // the most in use at once since creation or reset_peak()
  void reset_peak();
  size_t cache_limit() const { return limit_; }
  sdk::Allocator& raw() { return raw_; }

 private:
  using Key = std::pair<size_t, uint8_t>;  // size, option bits
  struct Entry {
    Key key;
    sdk::Handle handle;
  };
  static Key key_of(size_t nbytes, const sdk::AllocOptions& opts);
  static sdk::AllocOptions options_of(const Key& key);
  void release_locked(std::list<Entry>::iterator it);  // hands a cached entry back to the plugin
  size_t flush_locked();

  sdk::Allocator& raw_;
  std::string name_;
  size_t limit_;
  mutable std::mutex mu_;
  std::list<Entry> lru_;  // most recently freed first
  std::map<Key, std::vector<std::list<Entry>::iterator>> by_key_;
  size_t cached_ = 0, in_use_ = 0, peak_ = 0;
};

}  // namespace tg::runtime
