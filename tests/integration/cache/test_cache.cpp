// The program disk cache across processes: the probe program with DEV=CLANG and a fresh TG_CACHE_DIR
// compiles nothing the second time; a corrupt cache file, an unloadable cached binary and CACHELEVEL=0
// still give the right results; lowered kernels are reused by content key and a damaged record is lowered
// again. Expected values are worked out by hand (see check_values).
#define BOOST_TEST_MODULE cache
#include <boost/test/unit_test.hpp>

#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <sqlite3.h>

#include "common/test_support.hpp"
#include "runtime/disk_cache.hpp"

namespace fs = std::filesystem;
using tg::test::shell_quote;
using tg::test::TempDir;

namespace {

std::string arg(int i) {
  auto& suite = boost::unit_test::framework::master_test_suite();
  BOOST_REQUIRE_MESSAGE(suite.argc > i,
                        "run through meson test: the probe and the CLANG plugin are arguments");
  return suite.argv[i];
}

struct Run {
  int status = -1;
  std::string out;                                  // stdout and stderr
  std::map<std::string, std::string> rows;          // "y1" -> "0 20 162"
  std::map<std::string, unsigned long long> stats;  // "compiled" -> 3
};

// The probe in a clean environment: only the variables given, plus PATH for a fallback compiler.
Run run_probe(const std::map<std::string, std::string>& env) {
  std::string cmd = tg::test::clean_env();
  if (const char* path = getenv("PATH")) cmd += " PATH=" + shell_quote(path);
  cmd += " DEV=CLANG TG_PLUGIN_PATH=" + shell_quote(arg(2));
  for (const auto& [k, v] : env) cmd += " " + k + "=" + shell_quote(v);
  cmd += " " + shell_quote(arg(1)) + " 2>&1";
  Run r;
  tg::test::CommandResult c = tg::test::run_command(cmd);
  r.status = c.status, r.out = std::move(c.out);
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) {
    size_t sp = line.find(' ');
    std::string head = line.substr(0, sp), rest = sp == std::string::npos ? "" : line.substr(sp + 1);
    if (head == "y1" || head == "y2" || head == "y3") r.rows[head] = rest;
    if (head == "stats") r.stats = tg::test::parse_counts(rest);
  }
  return r;
}

// x = arange(12).reshape(3, 4), w = [[1, 2], [3, 4], [5, 6], [7, 8]]:
// x @ w = [[34, 40], [98, 120], [162, 200]]; relu(x @ w - 100).sum(1) = [0, 20, 162]
// x.sum(0) = [12, 15, 18, 21]; * 0.5 = [6, 7.5, 9, 10.5]
void check_values(const Run& r) {
  BOOST_TEST_INFO(r.out);
  BOOST_TEST(r.status == 0);
  BOOST_TEST(r.rows.count("y1") == 1u);
  BOOST_TEST(r.rows.count("y2") == 1u);
  if (r.rows.count("y1")) BOOST_TEST(r.rows.at("y1") == "0 20 162");
  if (r.rows.count("y2")) BOOST_TEST(r.rows.at("y2") == "6 7.5 9 10.5");
  // x.sum(1) = [6, 22, 38], x.max(0) = [8, 9, 10, 11], (2x).sum(0) = [24, 30, 36, 42]
  BOOST_TEST(r.rows.count("y3") == 1u);
  if (r.rows.count("y3")) BOOST_TEST(r.rows.at("y3") == "6 22 38 8 9 10 11 24 30 36 42");
  BOOST_TEST(r.stats.count("compiled") == 1u);
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

// A stored program entry, as the cache's table holds it.
struct Entry {
  std::string compiler, source_hash, checksum;
  std::vector<std::byte> binary;
};

// Reads every program entry, lets change edit the list, writes each back in place (by position, so an
// entry's binary and checksum may move to another key); returns how many entries there are.
template <class Change>
unsigned long long edit_entries(const std::string& cache, Change change) {
  sqlite3* db = nullptr;
  BOOST_REQUIRE(sqlite3_open((fs::path(cache) / "cache.db").c_str(), &db) == SQLITE_OK);
  std::vector<Entry> entries;
  sqlite3_stmt* st = nullptr;
  BOOST_REQUIRE(sqlite3_prepare_v2(db, "SELECT compiler, source_hash, checksum, binary FROM programs_v2", -1,
                                   &st, nullptr) == SQLITE_OK);
  while (sqlite3_step(st) == SQLITE_ROW) {
    const auto* bin = static_cast<const std::byte*>(sqlite3_column_blob(st, 3));
    entries.push_back({reinterpret_cast<const char*>(sqlite3_column_text(st, 0)),
                       reinterpret_cast<const char*>(sqlite3_column_text(st, 1)),
                       reinterpret_cast<const char*>(sqlite3_column_text(st, 2)),
                       {bin, bin + sqlite3_column_bytes(st, 3)}});
  }
  sqlite3_finalize(st);
  std::vector<Entry> keys = entries;
  change(entries);
  for (size_t i = 0; i < entries.size(); i++) {
    BOOST_REQUIRE(sqlite3_prepare_v2(db,
                                     "UPDATE programs_v2 SET binary = ?1, checksum = ?2 WHERE compiler = ?3 AND "
                                     "source_hash = ?4",
                                     -1, &st, nullptr) == SQLITE_OK);
    sqlite3_bind_blob(st, 1, entries[i].binary.data(), static_cast<int>(entries[i].binary.size()),
                      SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, entries[i].checksum.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 3, keys[i].compiler.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 4, keys[i].source_hash.c_str(), -1, SQLITE_TRANSIENT);
    BOOST_TEST(sqlite3_step(st) == SQLITE_DONE);
    sqlite3_finalize(st);
  }
  sqlite3_close(db);
  return entries.size();
}

BOOST_AUTO_TEST_CASE(second_process_compiles_nothing) {
  TempDir dir;
  std::string cache = (dir.path / "cache").string();
  Run first = run_probe({{"TG_CACHE_DIR", cache}});
  check_values(first);
  BOOST_TEST(first.stats["compiled"] > 0u);
  BOOST_TEST(first.stats["disk_hits"] == 0u);
  BOOST_TEST(first.stats["launched"] >= first.stats["compiled"]);
  BOOST_TEST(fs::exists(fs::path(cache) / "cache.db"));

  Run second = run_probe({{"TG_CACHE_DIR", cache}, {"DEBUG", "1"}});
  check_values(second);
  BOOST_TEST(second.stats["compiled"] == 0u);
  BOOST_TEST(second.stats["disk_hits"] == first.stats["compiled"]);
  BOOST_TEST(second.stats["launched"] == first.stats["launched"]);
  BOOST_TEST(second.rows == first.rows);
  BOOST_TEST(second.out.find("(0 compiled, 0 lowered,") != std::string::npos, second.out);  // DEBUG=1 line
  // The lowered kernels came from disk too: no codegen in the second process.
  BOOST_TEST(first.stats["lowered"] > 0u);
  BOOST_TEST(first.stats["lowered_disk_hits"] == 0u);
  BOOST_TEST(second.stats["lowered"] == 0u);
  BOOST_TEST(second.stats["lowered_disk_hits"] == first.stats["lowered"]);
}

// The lowered-kernel key covers what changes the generated code: NOOPT, BEAM and the device miss the
// entries of the default run, and each setting hits its own entries in the next process.
BOOST_AUTO_TEST_CASE(lowered_kernels_keyed_by_options_and_device) {
  TempDir dir;
  std::string cache = (dir.path / "cache").string();
  Run base = run_probe({{"TG_CACHE_DIR", cache}});
  check_values(base);
  std::vector<std::map<std::string, std::string>> variants = {
      {{"NOOPT", "1"}}, {{"BEAM", "1"}}, {{"DEV", "INTERP"}}};
  for (std::map<std::string, std::string> env : variants) {
    env["TG_CACHE_DIR"] = cache;
    Run miss = run_probe(env);
    check_values(miss);
    BOOST_TEST(miss.stats["lowered"] > 0u, env.begin()->first);
    BOOST_TEST(miss.stats["lowered_disk_hits"] == 0u, env.begin()->first);
    Run hit = run_probe(env);
    check_values(hit);
    BOOST_TEST(hit.stats["lowered"] == 0u, env.begin()->first);
    BOOST_TEST(hit.stats["lowered_disk_hits"] == miss.stats["lowered"], env.begin()->first);
    BOOST_TEST(hit.rows == base.rows);
  }
  Run again = run_probe({{"TG_CACHE_DIR", cache}});  // the default entries are still there
  BOOST_TEST(again.stats["lowered"] == 0u);
  BOOST_TEST(again.rows == base.rows);
}

// New kernels of a schedule are compiled ahead on two threads, except at DEBUG>=3 (ordered output): the
// counters and results are the same either way.
BOOST_AUTO_TEST_CASE(compiling_ahead_keeps_counters_exact) {
  TempDir a, b;
  Run ahead = run_probe({{"TG_CACHE_DIR", a.path.string()}});
  Run serial = run_probe({{"TG_CACHE_DIR", b.path.string()}, {"DEBUG", "3"}});
  check_values(ahead);
  check_values(serial);
  BOOST_TEST(ahead.rows == serial.rows);
  for (const char* k : {"compiled", "disk_hits", "memory_hits", "launched", "lowered", "lowered_disk_hits"})
    BOOST_TEST(ahead.stats[k] == serial.stats[k], k);
  BOOST_TEST(ahead.stats["compiled"] == ahead.stats["lowered"]);
}

// DEBUG=2 tells, on each kernel's first launch, where building it went: one "compiled" note per compile in
// a cold process, one "binary from disk" note per disk hit in the next.
BOOST_AUTO_TEST_CASE(first_launch_line_tells_how_the_kernel_was_built) {
  TempDir dir;
  std::string cache = (dir.path / "cache").string();
  auto count = [](const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) n++;
    return static_cast<unsigned long long>(n);
  };
  Run cold = run_probe({{"TG_CACHE_DIR", cache}, {"DEBUG", "2"}});
  check_values(cold);
  BOOST_TEST(cold.stats["compiled"] > 0u);
  BOOST_TEST(count(cold.out, ", compiled ") == cold.stats["compiled"], cold.out);
  BOOST_TEST(count(cold.out, ", binary from disk ") == 0u, cold.out);
  Run warm = run_probe({{"TG_CACHE_DIR", cache}, {"DEBUG", "2"}});
  check_values(warm);
  BOOST_TEST(warm.stats["compiled"] == 0u);
  BOOST_TEST(count(warm.out, ", compiled ") == 0u, warm.out);
  BOOST_TEST(count(warm.out, ", binary from disk ") == warm.stats["disk_hits"], warm.out);
  BOOST_TEST(count(warm.out, "(lowered ") == warm.stats["disk_hits"], warm.out);
}

// A damaged lowered-kernel record is reported, lowered again and replaced; the run stays right.
BOOST_AUTO_TEST_CASE(corrupt_lowered_record_is_lowered_again) {
  TempDir dir;
  std::string cache = (dir.path / "cache").string();
  Run first = run_probe({{"TG_CACHE_DIR", cache}});
  check_values(first);
  sqlite3* db = nullptr;
  BOOST_REQUIRE(sqlite3_open((fs::path(cache) / "cache.db").c_str(), &db) == SQLITE_OK);
  // One record truncated, the others with one byte of the source changed (checksum mismatch).
  const char* damage =
      "UPDATE lowered_v2 SET record = substr(record, 1, length(record) - 1) || 'X';"
      "UPDATE lowered_v2 SET record = substr(record, 1, 40) WHERE rowid = (SELECT min(rowid) FROM "
      "lowered_v2)";
  BOOST_TEST(sqlite3_exec(db, damage, nullptr, nullptr, nullptr) == SQLITE_OK);
  sqlite3_close(db);
  Run second = run_probe({{"TG_CACHE_DIR", cache}});
  check_values(second);
  BOOST_TEST(second.rows == first.rows);
  BOOST_TEST(second.stats["lowered"] == first.stats["lowered"]);
  BOOST_TEST(second.stats["lowered_disk_hits"] == 0u);
  BOOST_TEST(second.stats["compiled"] == 0u);  // the same source: its binary is still cached
  BOOST_TEST(second.out.find("is corrupt") != std::string::npos, second.out);
  Run third = run_probe({{"TG_CACHE_DIR", cache}});  // replaced by good records
  check_values(third);
  BOOST_TEST(third.stats["lowered"] == 0u);
  BOOST_TEST(third.out.find("is corrupt") == std::string::npos, third.out);
}

// Disk corruption inside the database never runs: a byte flipped in the middle of every cached binary, then
// binaries (with their checksums) swapped between keys; each run gives the right values, says why it
// compiles again, and the next run finds good entries.
BOOST_AUTO_TEST_CASE(corrupted_or_swapped_binaries_are_never_run) {
  TempDir dir;
  std::string cache = (dir.path / "cache").string();
  Run first = run_probe({{"TG_CACHE_DIR", cache}});
  check_values(first);
  BOOST_REQUIRE(first.stats["compiled"] >= 2u);
  // A byte in the middle of every binary flipped; then every binary, with its checksum, moved to the next key.
  auto flip = [](std::vector<Entry>& entries) {
    for (Entry& e : entries) e.binary[e.binary.size() / 2] ^= std::byte{0x10};
  };
  auto rotate = [](std::vector<Entry>& entries) {
    std::rotate(entries.begin(), entries.begin() + 1, entries.end());
  };
  for (const std::function<void(std::vector<Entry>&)>& damage :
       {std::function<void(std::vector<Entry>&)>(flip), std::function<void(std::vector<Entry>&)>(rotate)}) {
    BOOST_TEST(edit_entries(cache, damage) == first.stats["compiled"]);
    Run second = run_probe({{"TG_CACHE_DIR", cache}});
    check_values(second);
    BOOST_TEST(second.rows == first.rows);
    BOOST_TEST(second.stats["disk_hits"] == 0u);
    BOOST_TEST(second.stats["compiled"] == first.stats["compiled"]);
    BOOST_TEST(second.out.find("fails its checksum") != std::string::npos, second.out);
    Run third = run_probe({{"TG_CACHE_DIR", cache}});
    check_values(third);
    BOOST_TEST(third.stats["compiled"] == 0u);
    BOOST_TEST(third.out.find("fails its checksum") == std::string::npos, third.out);
  }
}

BOOST_AUTO_TEST_CASE(corrupt_cache_file_is_left_alone) {
  TempDir dir;
  std::string garbage;
  for (int i = 0; i < 4096; i++) garbage += static_cast<char>((i * 37 + 11) % 256);
  std::ofstream(dir.path / "cache.db", std::ios::binary) << garbage;
  Run r = run_probe({{"TG_CACHE_DIR", dir.path.string()}, {"DEBUG", "1"}});
  check_values(r);
  BOOST_TEST(r.stats["compiled"] > 0u);
  BOOST_TEST(r.stats["disk_hits"] == 0u);
  BOOST_TEST(r.out.find("program disk cache disabled") != std::string::npos, r.out);
  BOOST_TEST((read_file(dir.path / "cache.db") == garbage));  // never rewritten or removed
}

BOOST_AUTO_TEST_CASE(cache_folder_that_cannot_be_made) {
  TempDir dir;
  std::ofstream(dir.path / "file") << "a file, not a folder";
  Run r = run_probe({{"TG_CACHE_DIR", (dir.path / "file" / "cache").string()}, {"DEBUG", "1"}});
  check_values(r);
  BOOST_TEST(r.stats["compiled"] > 0u);
  BOOST_TEST(r.out.find("program disk cache disabled") != std::string::npos, r.out);
  BOOST_TEST(read_file(dir.path / "file") == "a file, not a folder");
}

BOOST_AUTO_TEST_CASE(unloadable_cached_binary_is_compiled_again) {
  TempDir dir;
  std::string cache = (dir.path / "cache").string();
  Run first = run_probe({{"TG_CACHE_DIR", cache}});
  check_values(first);
  // Every stored binary replaced by bytes no device can load, as an older plugin's format would be: whole
  // entries, checksums included, so they pass the cache's check and fail in the device's loader.
  auto unloadable = [](std::vector<Entry>& entries) {
    for (Entry& e : entries) {
      e.binary = {std::byte{0}, std::byte{1}, std::byte{2}, std::byte{3}};
      e.checksum = tg::runtime::entry_checksum(e.compiler, e.source_hash, e.binary);
    }
  };
  BOOST_TEST(edit_entries(cache, unloadable) == first.stats["compiled"]);
  Run second = run_probe({{"TG_CACHE_DIR", cache}, {"DEBUG", "1"}});
  check_values(second);
  BOOST_TEST(second.stats["disk_hits"] == first.stats["compiled"]);
  BOOST_TEST(second.stats["compiled"] == first.stats["compiled"]);
  BOOST_TEST(second.out.find("compiling") != std::string::npos, second.out);
  Run third = run_probe({{"TG_CACHE_DIR", cache}});  // the fresh binaries replaced the bad ones
  check_values(third);
  BOOST_TEST(third.stats["compiled"] == 0u);
}

BOOST_AUTO_TEST_CASE(cachelevel_zero_writes_nothing) {
  TempDir dir;
  fs::path cache = dir.path / "cache";
  for (int run = 0; run < 2; run++) {
    Run r = run_probe({{"TG_CACHE_DIR", cache.string()}, {"CACHELEVEL", "0"}});
    check_values(r);
    BOOST_TEST(r.stats["compiled"] > 0u);  // the second run too: nothing was kept
    BOOST_TEST(r.stats["disk_hits"] == 0u);
  }
  BOOST_TEST(!fs::exists(cache));
}

BOOST_AUTO_TEST_CASE(concurrent_processes_share_the_file) {
  TempDir dir;
  std::string cache = (dir.path / "cache").string();
  // Four probes at once on an empty cache: all must be right and none may lose the cache.
  std::string one = tg::test::clean_env() + " DEV=CLANG TG_PLUGIN_PATH=" + shell_quote(arg(2)) +
                    " TG_CACHE_DIR=" + shell_quote(cache) + " DEBUG=1 " + shell_quote(arg(1));
  std::string cmd = "for i in 1 2 3 4; do " + one + " > " + shell_quote((dir.path / "out").string()) +
                    "$i 2>&1 & done; wait";
  BOOST_REQUIRE(std::system(cmd.c_str()) == 0);
  for (int i = 1; i <= 4; i++) {
    std::string out = read_file(dir.path / ("out" + std::to_string(i)));
    BOOST_TEST_INFO(out);
    BOOST_TEST(out.find("y1 0 20 162") != std::string::npos);
    BOOST_TEST(out.find("y2 6 7.5 9 10.5") != std::string::npos);
    BOOST_TEST(out.find("disk cache disabled") == std::string::npos);
  }
  Run after = run_probe({{"TG_CACHE_DIR", cache}});
  check_values(after);
  BOOST_TEST(after.stats["compiled"] == 0u);
}
