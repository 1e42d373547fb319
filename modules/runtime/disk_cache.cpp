// The sqlite3 program cache (see disk_cache.hpp). Several processes may share the file: writes are
// single statements, readers wait on a busy timeout, and WAL keeps readers off the writers' lock.
#include "runtime/disk_cache.hpp"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <system_error>
#include <utility>

#include <fmt/format.h>
#include <sqlite3.h>

#include "base/env.hpp"
#include "base/error.hpp"
#include "base/hash.hpp"
#include "base/log.hpp"
#include "runtime/device.hpp"
#include "runtime/stats.hpp"
#include "viz/record.hpp"

namespace tg::runtime {

namespace {

constexpr int kBusyTimeoutMs = 10000;

// A prepared statement, finalized on scope exit.
struct Statement {
  sqlite3_stmt* s = nullptr;
  ~Statement() { sqlite3_finalize(s); }
};

[[noreturn]] void fail(sqlite3* db, const std::string& path, std::string_view what) {
  throw FormatError("disk cache",
                    fmt::format("{}: {} failed: {}", path, what, db ? sqlite3_errmsg(db) : "out of memory"));
}

void prepare(sqlite3* db, const std::string& path, const char* sql, Statement& st) {
  if (sqlite3_prepare_v2(db, sql, -1, &st.s, nullptr) != SQLITE_OK) fail(db, path, "prepare");
}

void bind_text(sqlite3* db, const std::string& path, Statement& st, int i, std::string_view v) {
  if (sqlite3_bind_text(st.s, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT) != SQLITE_OK)
    fail(db, path, "bind");
}

std::string home_dir() {
  const char* h = std::getenv("HOME");  // a system variable, not one of ours: not in the registry
  return h != nullptr && *h != '\0' ? h : ".";
}

}  // namespace

DiskCache::DiskCache(std::string path) : path_(std::move(path)) {
  std::error_code ec;
  std::filesystem::path dir = std::filesystem::path(path_).parent_path();
  if (!dir.empty()) std::filesystem::create_directories(dir, ec);
  if (ec) throw FormatError("disk cache", fmt::format("cannot create {}: {}", dir.string(), ec.message()));
  int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX;
  if (sqlite3_open_v2(path_.c_str(), &db_, flags, nullptr) != SQLITE_OK) {
    std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    throw FormatError("disk cache", fmt::format("cannot open {}: {}", path_, msg));
  }
  sqlite3_busy_timeout(db_, kBusyTimeoutMs);
  // The file is data, never code: triggers or views a damaged (or planted) file carries do not run.
  sqlite3_db_config(db_, SQLITE_DBCONFIG_ENABLE_TRIGGER, 0, nullptr);
  sqlite3_db_config(db_, SQLITE_DBCONFIG_ENABLE_VIEW, 0, nullptr);
  sqlite3_db_config(db_, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, nullptr);
  sqlite3_db_config(db_, SQLITE_DBCONFIG_DEFENSIVE, 1, nullptr);
  // WAL is best effort (some file systems lack shared memory); the table is not.
  sqlite3_exec(db_, "PRAGMA journal_mode=WAL", nullptr, nullptr, nullptr);
  const char* schema =
      "CREATE TABLE IF NOT EXISTS programs_v2 (compiler TEXT NOT NULL, source_hash TEXT NOT NULL, "
      "binary BLOB NOT NULL, checksum TEXT NOT NULL, PRIMARY KEY (compiler, source_hash))";
  if (sqlite3_exec(db_, schema, nullptr, nullptr, nullptr) != SQLITE_OK) {
    std::string msg = sqlite3_errmsg(db_);
    sqlite3_close(db_);
    db_ = nullptr;
    throw FormatError("disk cache", fmt::format("{} is not a usable program cache: {}", path_, msg));
  }
  const char* lowered =
      "CREATE TABLE IF NOT EXISTS lowered_v2 (key TEXT NOT NULL PRIMARY KEY, record BLOB NOT NULL)";
  if (sqlite3_exec(db_, lowered, nullptr, nullptr, nullptr) != SQLITE_OK) {
    std::string msg = sqlite3_errmsg(db_);
    sqlite3_close(db_);
    db_ = nullptr;
    throw FormatError("disk cache", fmt::format("{} is not a usable program cache: {}", path_, msg));
  }
}

DiskCache::~DiskCache() { sqlite3_close(db_); }

std::string entry_checksum(std::string_view compiler_key, std::string_view source_hash,
                           std::span<const std::byte> binary) {
  std::string text = fmt::format("{}\n{}\n", compiler_key, source_hash);
  text.append(reinterpret_cast<const char*>(binary.data()), binary.size());
  return hash_hex(text);
}

std::optional<std::vector<std::byte>> DiskCache::get(std::string_view compiler_key, std::string_view source) {
  std::lock_guard lock(mu_);
  Statement st;
  prepare(db_, path_, "SELECT binary, checksum FROM programs_v2 WHERE compiler = ?1 AND source_hash = ?2", st);
  std::string source_hash = hash_hex(source);
  bind_text(db_, path_, st, 1, compiler_key);
  bind_text(db_, path_, st, 2, source_hash);
  int rc = sqlite3_step(st.s);
  if (rc == SQLITE_DONE) return std::nullopt;
  if (rc != SQLITE_ROW) fail(db_, path_, "read");
  const auto* data = static_cast<const std::byte*>(sqlite3_column_blob(st.s, 0));
  auto n = static_cast<size_t>(sqlite3_column_bytes(st.s, 0));
  std::vector<std::byte> binary(data, data + n);
  const auto* sum = reinterpret_cast<const char*>(sqlite3_column_text(st.s, 1));
  if (sum == nullptr || entry_checksum(compiler_key, source_hash, binary) != sum) {
    corrupt_entries_.fetch_add(1, std::memory_order_relaxed);
    debug_log(0, "warning: [disk cache] {}: the entry for {} {} fails its checksum; making it again", path_,
              compiler_key, source_hash);
    return std::nullopt;
  }
  return binary;
}

void DiskCache::put(std::string_view compiler_key, std::string_view source,
                    std::span<const std::byte> binary) {
  std::lock_guard lock(mu_);
  Statement st;
  prepare(db_, path_,
          "INSERT OR REPLACE INTO programs_v2 (compiler, source_hash, binary, checksum) VALUES (?1, ?2, ?3, ?4)",
          st);
  std::string source_hash = hash_hex(source);
  bind_text(db_, path_, st, 1, compiler_key);
  bind_text(db_, path_, st, 2, source_hash);
  // sqlite3 takes a non-null pointer for an empty blob as a zero-length blob, not NULL.
  static const std::byte empty{};
  const void* data = binary.empty() ? &empty : static_cast<const void*>(binary.data());
  if (sqlite3_bind_blob64(st.s, 3, data, binary.size(), SQLITE_TRANSIENT) != SQLITE_OK)
    fail(db_, path_, "bind");
  bind_text(db_, path_, st, 4, entry_checksum(compiler_key, source_hash, binary));
  if (sqlite3_step(st.s) != SQLITE_DONE) fail(db_, path_, "write");
}

std::optional<std::string> DiskCache::get_lowered(std::string_view key) {
  std::lock_guard lock(mu_);
  Statement st;
  prepare(db_, path_, "SELECT record FROM lowered_v2 WHERE key = ?1", st);
  bind_text(db_, path_, st, 1, key);
  int rc = sqlite3_step(st.s);
  if (rc == SQLITE_DONE) return std::nullopt;
  if (rc != SQLITE_ROW) fail(db_, path_, "read");
  const auto* data = static_cast<const char*>(sqlite3_column_blob(st.s, 0));
  auto n = static_cast<size_t>(sqlite3_column_bytes(st.s, 0));
  return data == nullptr ? std::string() : std::string(data, n);
}

void DiskCache::put_lowered(std::string_view key, std::string_view record) {
  std::lock_guard lock(mu_);
  Statement st;
  prepare(db_, path_, "INSERT OR REPLACE INTO lowered_v2 (key, record) VALUES (?1, ?2)", st);
  bind_text(db_, path_, st, 1, key);
  static const char empty{};
  const void* data = record.empty() ? &empty : static_cast<const void*>(record.data());
  if (sqlite3_bind_blob64(st.s, 2, data, record.size(), SQLITE_TRANSIENT) != SQLITE_OK)
    fail(db_, path_, "bind");
  if (sqlite3_step(st.s) != SQLITE_DONE) fail(db_, path_, "write");
}

std::string cache_dir() {
  if (std::optional<std::string> dir = env::raw("TG_CACHE_DIR"); dir && !dir->empty()) {
    if (*dir == "~" || dir->starts_with("~/")) return home_dir() + dir->substr(1);
    return *dir;
  }
  const char* xdg = std::getenv("XDG_CACHE_HOME");  // system variable, see home_dir()
  if (xdg != nullptr && *xdg != '\0') return std::string(xdg) + "/tinygrad.cpp";
  return home_dir() + "/.cache/tinygrad.cpp";
}

namespace {

struct CacheState {
  std::once_flag opened;
  std::unique_ptr<DiskCache> cache;
  std::atomic<bool> broken{false};
};
CacheState& state() {
  static CacheState* s = new CacheState();  // never destroyed: compiles may run during static destruction
  return *s;
}

// Turns the cache off for the rest of the process, saying why once.
void disable(const std::exception& e) {
  if (!state().broken.exchange(true))
    debug_log(1, "warning: program disk cache disabled, compiling without it: {}", e.what());
}

// Binaries are loaded by the device that compiled them, so its name is part of the key.
std::string program_key(Device& dev) { return fmt::format("{}|{}", dev.name(), dev.compiler().cache_key()); }

}  // namespace

void disable_disk_cache(const std::exception& e) { disable(e); }

DiskCache* program_disk_cache() {
  if (env::CACHELEVEL.value() <= 0) return nullptr;
  CacheState& s = state();
  std::call_once(s.opened, [&] {
    try {
      s.cache = std::make_unique<DiskCache>(cache_dir() + "/cache.db");
    } catch (const std::exception& e) {
      disable(e);
    }
  });
  return s.broken.load() ? nullptr : s.cache.get();
}

sdk::Blob compile_and_store(Device& dev, std::string_view source) {
  sdk::Blob binary = dev.compile(source);
  count_stat(Stat::compiled);
  if (DiskCache* cache = program_disk_cache()) {
    try {
      cache->put(program_key(dev), source, binary.bytes());
    } catch (const std::exception& e) {
      disable(e);
    }
  }
  return binary;
}

namespace {
sdk::Blob lookup_or_compile(Device& dev, std::string_view source, bool* from_disk) {
  if (from_disk != nullptr) *from_disk = false;
  if (DiskCache* cache = program_disk_cache()) {
    try {
      if (std::optional<std::vector<std::byte>> bin = cache->get(program_key(dev), source)) {
        count_stat(Stat::disk_hits);
        if (from_disk != nullptr) *from_disk = true;
        sdk::Blob b;
        b.assign(*bin);
        return b;
      }
    } catch (const std::exception& e) {
      disable(e);
    }
  }
  return compile_and_store(dev, source);
}
}  // namespace

sdk::Blob compile_cached(Device& dev, std::string_view source, bool* from_disk) {
  sdk::Blob b = lookup_or_compile(dev, source, from_disk);
  if (viz::on()) viz::record_binary(dev.str(), source, b.bytes(), dev.compiler());
  return b;
}

}  // namespace tg::runtime
