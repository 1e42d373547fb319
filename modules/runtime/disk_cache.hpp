#pragma once
// The on-disk cache of compiled programs: one sqlite3 file under TG_CACHE_DIR mapping
// (compiler cache key, source hash) -> binary, shared by every process of the user. Each entry carries a
// checksum of its key and binary, verified before use, so a flipped byte or an entry moved to another key
// is a miss (with a warning) rather than wrong code. The checksum is xxHash: it catches corruption, not an
// attacker, who could as well write a plugin.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tg/sdk/status.hpp"

struct sqlite3;

namespace tg::runtime {

class Device;

class DiskCache {
 public:
  // Opens or creates the database at path, creating its folder. Throws FormatError when the file
  // cannot be used (not a database, unreadable); an existing file is never removed or rewritten.
  explicit DiskCache(std::string path);
  ~DiskCache();
  DiskCache(const DiskCache&) = delete;
  DiskCache& operator=(const DiskCache&) = delete;

  // The binary stored for source under this compiler key, if any; an entry failing its checksum is reported
  // once per read (a warning line) and counted as a miss. Throws FormatError on a database error.
  std::optional<std::vector<std::byte>> get(std::string_view compiler_key, std::string_view source);
  // Stores (or replaces) the binary. Throws FormatError on a database error (e.g. a read-only file).
  void put(std::string_view compiler_key, std::string_view source, std::span<const std::byte> binary);
  // Lowered kernels (runtime/lowered_cache.hpp) by their content key: the stored record, if any.
  std::optional<std::string> get_lowered(std::string_view key);
  void put_lowered(std::string_view key, std::string_view record);
  const std::string& path() const { return path_; }
  // Entries get() found failing their checksum, in this process.
  uint64_t corrupt_entries() const { return corrupt_entries_.load(std::memory_order_relaxed); }

 private:
  std::string path_;
  std::atomic<uint64_t> corrupt_entries_{0};
  sqlite3* db_ = nullptr;
  std::mutex mu_;
};

// The checksum stored with a program entry: of the compiler key, the source's hash and the binary.
std::string entry_checksum(std::string_view compiler_key, std::string_view source_hash,
                           std::span<const std::byte> binary);

// TG_CACHE_DIR if set (a leading "~/" is the home folder), else $XDG_CACHE_HOME/tinygrad.cpp, else
// ~/.cache/tinygrad.cpp.
std::string cache_dir();

// The process's program cache (<cache_dir()>/cache.db), or nullptr when CACHELEVEL=0 or the file cannot
// be used; the first failure is reported once at DEBUG>=1 and the cache stays off for the process.
DiskCache* program_disk_cache();

// Turns the program disk cache off for the rest of the process after a database error, saying why once
// (DEBUG>=1).
void disable_disk_cache(const std::exception& e);

// Source -> binary for dev, through the program disk cache: a hit never calls the device compiler.
// The key is the device name and its compiler's cache_key(). Counts Stat::compiled or Stat::disk_hits;
// from_disk says which. Compile errors are thrown as by Device::compile.
sdk::Blob compile_cached(Device& dev, std::string_view source, bool* from_disk = nullptr);
// Compiles without looking and stores the result: for a cached binary the device could not load.
sdk::Blob compile_and_store(Device& dev, std::string_view source);

}  // namespace tg::runtime
