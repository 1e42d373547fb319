#pragma once
// The on-disk cache of compiled programs: one sqlite3 file under TG_CACHE_DIR mapping
// (compiler cache key, source hash) -> binary, shared by every process of the user.
#include <cstddef>
#include <exception>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tg/sdk/status.hpp"

struct sqlite3;

namespace tg {

class Device;

class DiskCache {
 public:
  // Opens or creates the database at path, creating its folder. Throws FormatError when the file
  // cannot be used (not a database, unreadable); an existing file is never removed or rewritten.
  explicit DiskCache(std::string path);
  ~DiskCache();
  DiskCache(const DiskCache&) = delete;
  DiskCache& operator=(const DiskCache&) = delete;

  // The binary stored for source under this compiler key, if any. Throws FormatError on a database error.
  std::optional<std::vector<std::byte>> get(std::string_view compiler_key, std::string_view source);
  // Stores (or replaces) the binary. Throws FormatError on a database error (e.g. a read-only file).
  void put(std::string_view compiler_key, std::string_view source, std::span<const std::byte> binary);
  // Lowered kernels (runtime/lowered_cache.hpp) by their content key: the stored record, if any.
  std::optional<std::string> get_lowered(std::string_view key);
  void put_lowered(std::string_view key, std::string_view record);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  sqlite3* db_ = nullptr;
  std::mutex mu_;
};

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

}  // namespace tg
