// The sqlite program cache on its own: round trip, missing keys, reopening, a corrupt file, the folder rule.
#include <boost/test/unit_test.hpp>

#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include <sqlite3.h>

#include "base/error.hpp"
#include "runtime/disk_cache.hpp"

namespace fs = std::filesystem;

namespace {

// A fresh folder under the system temp dir, removed with everything in it at the end of the test.
struct TempDir {
  fs::path path;
  TempDir() {
    std::string templ = (fs::temp_directory_path() / "tg-disk-cache-XXXXXX").string();
    BOOST_REQUIRE(mkdtemp(templ.data()) != nullptr);
    path = templ;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

std::vector<std::byte> blob(std::string_view s) {
  std::vector<std::byte> b;
  for (char c : s) b.push_back(static_cast<std::byte>(c));
  return b;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

BOOST_AUTO_TEST_CASE(disk_cache_round_trip_and_missing_keys) {
  TempDir dir;
  tg::runtime::DiskCache cache((dir.path / "sub" / "cache.db").string());  // the folder is created
  BOOST_TEST(fs::exists(dir.path / "sub" / "cache.db"));
  BOOST_TEST(!cache.get("cc-1", "int main(){}").has_value());
  std::vector<std::byte> bin =
      blob(std::string("\x7f"
                       "ELF\0\1binary",
                       11));
  cache.put("cc-1", "int main(){}", bin);
  std::optional<std::vector<std::byte>> got = cache.get("cc-1", "int main(){}");
  BOOST_REQUIRE(got.has_value());
  BOOST_TEST((*got == bin));
  BOOST_TEST(!cache.get("cc-2", "int main(){}").has_value());   // another compiler key
  BOOST_TEST(!cache.get("cc-1", "int main(){ }").has_value());  // another source
  cache.put("cc-1", "int main(){}", blob("newer"));             // replaces
  BOOST_TEST((*cache.get("cc-1", "int main(){}") == blob("newer")));
  cache.put("cc-1", "empty", {});
  BOOST_REQUIRE(cache.get("cc-1", "empty").has_value());
  BOOST_TEST(cache.get("cc-1", "empty")->empty());
}

BOOST_AUTO_TEST_CASE(disk_cache_survives_reopening) {
  TempDir dir;
  std::string path = (dir.path / "cache.db").string();
  {
    tg::runtime::DiskCache first(path);
    first.put("cc", "src", blob("bin"));
  }
  tg::runtime::DiskCache second(path);
  BOOST_TEST((second.get("cc", "src") == std::optional(blob("bin"))));
  tg::runtime::DiskCache third(path);  // two handles on one file at once
  third.put("cc", "src2", blob("bin2"));
  BOOST_TEST((second.get("cc", "src2") == std::optional(blob("bin2"))));
}

// Damage inside the database (a flipped byte, entries swapped between keys) is a miss, never the wrong binary.
BOOST_AUTO_TEST_CASE(disk_cache_entries_are_checked_before_use) {
  TempDir dir;
  std::string path = (dir.path / "cache.db").string();
  tg::runtime::DiskCache cache(path);
  cache.put("cc", "kernel a", blob("binary of a"));
  cache.put("cc", "kernel b", blob("binary of b"));
  cache.put("cc", "kernel c", blob("binary of c"));
  sqlite3* db = nullptr;
  BOOST_REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  const char* damage =
      // a and b exchange binary and checksum: each row is intact, but for the other key
      "CREATE TEMP TABLE t AS SELECT source_hash, binary, checksum FROM programs_v2;"
      "UPDATE programs_v2 SET binary = (SELECT binary FROM t WHERE t.source_hash != programs_v2.source_hash "
      "  AND t.binary != CAST('binary of c' AS BLOB)), checksum = (SELECT checksum FROM t WHERE "
      "  t.source_hash != programs_v2.source_hash AND t.binary != CAST('binary of c' AS BLOB)) "
      "  WHERE binary != CAST('binary of c' AS BLOB);"
      // c gets one byte changed
      "UPDATE programs_v2 SET binary = CAST('binary of C' AS BLOB) WHERE binary = CAST('binary of c' AS BLOB);";
  BOOST_TEST(sqlite3_exec(db, damage, nullptr, nullptr, nullptr) == SQLITE_OK, sqlite3_errmsg(db));
  sqlite3_close(db);
  BOOST_TEST(!cache.get("cc", "kernel a").has_value());
  BOOST_TEST(!cache.get("cc", "kernel b").has_value());
  BOOST_TEST(!cache.get("cc", "kernel c").has_value());
  BOOST_TEST(cache.corrupt_entries() == 3u);
  cache.put("cc", "kernel c", blob("binary of c"));  // the caller compiles again and replaces it
  BOOST_TEST((cache.get("cc", "kernel c") == std::optional(blob("binary of c"))));
  BOOST_TEST(cache.corrupt_entries() == 3u);
}

// The disk filling up mid-write (the file size limit stands in for it): the write fails with a clear error,
// what was stored before reads back unchanged, and once there is room again the cache takes new entries.
BOOST_AUTO_TEST_CASE(disk_full_while_writing_loses_nothing_stored_before) {
  TempDir dir;
  std::string path = (dir.path / "cache.db").string();
  tg::runtime::DiskCache cache(path);
  cache.put("cc", "kernel a", blob("binary of a"));
  std::vector<std::byte> big(1 << 20, std::byte{0x5a});
  rlimit old_limit{};
  BOOST_REQUIRE(getrlimit(RLIMIT_FSIZE, &old_limit) == 0);
  rlimit small = old_limit;
  small.rlim_cur = 64 * 1024;  // the database and its journal hold a few pages, not a megabyte
  auto old_handler = signal(SIGXFSZ, SIG_IGN);  // write() fails with EFBIG instead of killing the process
  BOOST_REQUIRE(setrlimit(RLIMIT_FSIZE, &small) == 0);
  std::string error = "no error";
  try {
    cache.put("cc", "kernel big", big);
  } catch (const tg::FormatError& e) {
    error = e.what();
  }
  std::optional<std::vector<std::byte>> a_while_full = cache.get("cc", "kernel a");
  setrlimit(RLIMIT_FSIZE, &old_limit);
  signal(SIGXFSZ, old_handler);
  // sqlite says SQLITE_FULL for ENOSPC and an I/O error for EFBIG, the file size limit's errno
  BOOST_TEST(error == "[disk cache] " + path + ": write failed: disk I/O error");
  BOOST_TEST((a_while_full == std::optional(blob("binary of a"))));
  BOOST_TEST(!cache.get("cc", "kernel big").has_value());
  tg::runtime::DiskCache reopened(path);  // another process's view: the file is whole
  BOOST_TEST((reopened.get("cc", "kernel a") == std::optional(blob("binary of a"))));
  BOOST_TEST(!reopened.get("cc", "kernel big").has_value());
  reopened.put("cc", "kernel big", big);
  BOOST_TEST((cache.get("cc", "kernel big") == std::optional(big)));
  BOOST_TEST(cache.corrupt_entries() == 0u);
  sqlite3* db = nullptr;
  BOOST_REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  std::string check;
  sqlite3_exec(
      db, "PRAGMA integrity_check",
      [](void* out, int, char** v, char**) {
        *static_cast<std::string*>(out) = v[0] ? v[0] : "";
        return 0;
      },
      &check, nullptr);
  sqlite3_close(db);
  BOOST_TEST(check == "ok");
}

BOOST_AUTO_TEST_CASE(disk_cache_rejects_a_corrupt_file_without_touching_it) {
  TempDir dir;
  fs::path path = dir.path / "cache.db";
  std::string garbage;
  for (int i = 0; i < 8192; i++) garbage += static_cast<char>((i * 131 + 7) % 251);
  std::ofstream(path, std::ios::binary) << garbage;
  BOOST_CHECK_THROW(tg::runtime::DiskCache(path.string()), tg::FormatError);
  BOOST_TEST(read_file(path) == garbage);
}

BOOST_AUTO_TEST_CASE(cache_dir_follows_tg_cache_dir) {
  const char* old = getenv("TG_CACHE_DIR");
  std::optional<std::string> saved = old ? std::optional<std::string>(old) : std::nullopt;
  setenv("TG_CACHE_DIR", "/some/where", 1);
  BOOST_TEST(tg::runtime::cache_dir() == "/some/where");
  if (getenv("HOME") == nullptr) setenv("HOME", "/home/tester", 1);
  setenv("TG_CACHE_DIR", "~/c", 1);
  BOOST_TEST(tg::runtime::cache_dir() == std::string(getenv("HOME")) + "/c");
  unsetenv("TG_CACHE_DIR");
  BOOST_TEST(tg::runtime::cache_dir().ends_with("/tinygrad.cpp"));
  if (saved) setenv("TG_CACHE_DIR", saved->c_str(), 1);
}
