// BEAM=2 across processes on the CLANG device: the probe's matmul and row sum equal the hand-computed
// values, a second process with the same TG_CACHE_DIR searches nothing and picks the same opts,
// CACHELEVEL=0 searches every time, a corrupted cached result is searched again, bad BEAM values are clear
// errors, and the device compiler gives the same binaries on several threads as on one. On VULKAN and CL
// (when built) the search with the workgroup actions (LOCAL, GROUP, GROUPTOP, PADTO) gives the same values.
#define BOOST_TEST_MODULE beam
#include <boost/test/unit_test.hpp>

#include <stdlib.h>

#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <utility>
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
  std::map<std::string, std::string> rows;          // "matmul" -> "23 29 ..."
  std::map<std::string, unsigned long long> stats;  // "beam_searched" -> 2
  std::map<std::string, std::string> opts;          // kernel name -> opts chosen, from the DEBUG=2 BEAM lines
};

// The probe in a clean environment with DEBUG=2: only the variables given, plus PATH for the clang binary.
Run run_probe(const std::map<std::string, std::string>& env, const std::string& mode = "") {
  std::string cmd = tg::test::clean_env();
  if (const char* path = getenv("PATH")) cmd += " PATH=" + shell_quote(path);
  cmd += " DEV=CLANG DEBUG=2 TG_PLUGIN_PATH=" + shell_quote(arg(2));
  for (const auto& [k, v] : env) cmd += " " + k + "=" + shell_quote(v);
  cmd += " " + shell_quote(arg(1)) + (mode.empty() ? "" : " " + mode) + " 2>&1";
  Run r;
  tg::test::CommandResult c = tg::test::run_command(cmd);
  r.status = c.status, r.out = std::move(c.out);
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) {
    size_t sp = line.find(' ');
    std::string head = line.substr(0, sp), rest = sp == std::string::npos ? "" : line.substr(sp + 1);
    if (head == "matmul" || head == "rowsum") r.rows[head] = rest;
    if (head == "BEAM2") {  // "BEAM2 r_8_16_12   <how> [UPCAST(axis=1, arg=16), ...]"
      std::istringstream words(rest);
      std::string kernel;
      words >> kernel;
      size_t open = line.rfind(" [");
      if (open != std::string::npos) r.opts[kernel] = line.substr(open + 1);
    }
    if (head == "stats") r.stats = tg::test::parse_counts(rest);
  }
  return r;
}

// The probe's data: x[i, k] = (3i + k) % 7 - 3 (8 x 12), w[k, j] = (5k + j) % 11 - 5 (12 x 16). Small
// integers, so every float sum is exact.
std::string expected_matmul() {
  std::string s;
  for (int i = 0; i < 8; i++)
    for (int j = 0; j < 16; j++) {
      int c = 0;
      for (int k = 0; k < 12; k++) c += ((3 * i + k) % 7 - 3) * ((5 * k + j) % 11 - 5);
      s += (s.empty() ? "" : " ") + std::to_string(c);
    }
  return s;
}
std::string expected_rowsum() {  // (w * 2).sum(1)
  std::string s;
  for (int k = 0; k < 12; k++) {
    int c = 0;
    for (int j = 0; j < 16; j++) c += 2 * ((5 * k + j) % 11 - 5);
    s += (s.empty() ? "" : " ") + std::to_string(c);
  }
  return s;
}

void check_values(const Run& r) {
  BOOST_TEST_INFO(r.out);
  BOOST_TEST(r.status == 0);
  BOOST_TEST(r.rows.count("matmul") == 1u);
  BOOST_TEST(r.rows.count("rowsum") == 1u);
  if (r.rows.count("matmul")) BOOST_TEST(r.rows.at("matmul") == expected_matmul());
  if (r.rows.count("rowsum")) BOOST_TEST(r.rows.at("rowsum") == expected_rowsum());
  BOOST_TEST(r.stats.count("beam_searched") == 1u);
}

}  // namespace

BOOST_AUTO_TEST_CASE(hand_reference_values) {  // the expected strings themselves, spot-checked by hand
  // matmul[0, 0] = sum_k (k % 7 - 3) * ((5k) % 11 - 5) = 23; rowsum[0] = 2 * sum_j (j % 11 - 5) = -30
  BOOST_TEST(expected_matmul().substr(0, 3) == "23 ");
  BOOST_TEST(expected_rowsum().substr(0, 4) == "-30 ");
}

BOOST_AUTO_TEST_CASE(second_process_searches_nothing) {
  TempDir dir;
  std::string cache = (dir.path / "cache").string();
  Run first = run_probe({{"TG_CACHE_DIR", cache}, {"BEAM", "2"}});
  check_values(first);
  BOOST_TEST(first.stats["beam_searched"] == 2u, first.out);  // the matmul and the row sum
  BOOST_TEST(first.stats["beam_cache_hits"] == 0u);
  BOOST_TEST(first.opts.size() == 2u, first.out);
  BOOST_TEST(first.out.find("candidates in") != std::string::npos, first.out);

  Run second = run_probe({{"TG_CACHE_DIR", cache}, {"BEAM", "2"}});
  check_values(second);
  BOOST_TEST(second.stats["beam_searched"] == 0u, second.out);
  BOOST_TEST(second.stats["beam_cache_hits"] == 2u);
  BOOST_TEST(second.stats["compiled"] == 0u);  // the winners' binaries come from the program cache too
  BOOST_TEST(second.opts == first.opts);
  BOOST_TEST(second.out.find("cached [") != std::string::npos, second.out);

  Run other_width = run_probe({{"TG_CACHE_DIR", cache}, {"BEAM", "1"}});  // its own cache entries
  BOOST_TEST(other_width.status == 0, other_width.out);
  BOOST_TEST(other_width.stats["beam_searched"] == 2u);
}

BOOST_AUTO_TEST_CASE(cachelevel_zero_searches_every_time) {
  TempDir dir;
  fs::path cache = dir.path / "cache";
  for (int run = 0; run < 2; run++) {
    Run r = run_probe({{"TG_CACHE_DIR", cache.string()}, {"BEAM", "2"}, {"CACHELEVEL", "0"}});
    check_values(r);
    BOOST_TEST(r.stats["beam_searched"] == 2u);
    BOOST_TEST(r.stats["beam_cache_hits"] == 0u);
  }
  BOOST_TEST(!fs::exists(cache));
}

namespace {

// Gives every BEAM entry the checksum of its current content, as the cache would have written it.
void reseal(sqlite3* db) {
  sqlite3_stmt* st = nullptr;
  BOOST_REQUIRE(sqlite3_prepare_v2(db, "SELECT compiler, source_hash, binary FROM programs_v2 WHERE compiler LIKE "
                                   "'beam2|%'", -1, &st, nullptr) == SQLITE_OK);
  std::vector<std::pair<std::string, std::string>> rows;
  std::vector<std::string> sums;
  while (sqlite3_step(st) == SQLITE_ROW) {
    const auto* bin = static_cast<const std::byte*>(sqlite3_column_blob(st, 2));
    std::vector<std::byte> binary(bin, bin + sqlite3_column_bytes(st, 2));
    rows.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)),
                      reinterpret_cast<const char*>(sqlite3_column_text(st, 1)));
    sums.push_back(tg::runtime::entry_checksum(rows.back().first, rows.back().second, binary));
  }
  sqlite3_finalize(st);
  for (size_t i = 0; i < rows.size(); i++) {
    BOOST_REQUIRE(sqlite3_prepare_v2(db, "UPDATE programs_v2 SET checksum = ?1 WHERE compiler = ?2 AND "
                                     "source_hash = ?3", -1, &st, nullptr) == SQLITE_OK);
    sqlite3_bind_text(st, 1, sums[i].c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, rows[i].first.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 3, rows[i].second.c_str(), -1, SQLITE_TRANSIENT);
    BOOST_TEST(sqlite3_step(st) == SQLITE_DONE);
    sqlite3_finalize(st);
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(corrupted_entry_is_searched_again) {
  TempDir dir;
  std::string cache = (dir.path / "cache").string();
  Run first = run_probe({{"TG_CACHE_DIR", cache}, {"BEAM", "2"}});
  check_values(first);
  // One stored result becomes text that is no opts list, the other an opts list that does not apply.
  sqlite3* db = nullptr;
  BOOST_REQUIRE(sqlite3_open((fs::path(cache) / "cache.db").c_str(), &db) == SQLITE_OK);
  BOOST_TEST(sqlite3_exec(db,
                          "UPDATE programs_v2 SET binary = CAST('[UPCAST(axis=9, arg=3)]' AS BLOB) "
                          "WHERE compiler LIKE 'beam2|%'",
                          nullptr, nullptr, nullptr) == SQLITE_OK);
  BOOST_TEST(sqlite3_changes(db) == 2);
  BOOST_TEST(sqlite3_exec(db,
                          "UPDATE programs_v2 SET binary = x'00ff10' WHERE rowid = "
                          "(SELECT min(rowid) FROM programs_v2 WHERE compiler LIKE 'beam2|%')",
                          nullptr, nullptr, nullptr) == SQLITE_OK);
  BOOST_TEST(sqlite3_changes(db) == 1);
  reseal(db);  // well-formed entries with bad content, so they reach the BEAM reader past the checksum
  sqlite3_close(db);

  Run second = run_probe({{"TG_CACHE_DIR", cache}, {"BEAM", "2"}});
  check_values(second);
  BOOST_TEST(second.stats["beam_searched"] == 2u);
  BOOST_TEST(second.stats["beam_cache_hits"] == 0u);
  BOOST_TEST(second.out.find("searching again") != std::string::npos, second.out);

  Run third = run_probe({{"TG_CACHE_DIR", cache}, {"BEAM", "2"}});  // the new results replaced the bad ones
  check_values(third);
  BOOST_TEST(third.stats["beam_searched"] == 0u);
  BOOST_TEST(third.stats["beam_cache_hits"] == 2u);
}

// IGNORE_BEAM_CACHE=1 (tinygrad's name) searches again over a warm cache, and the results are stored.
BOOST_AUTO_TEST_CASE(ignore_beam_cache_searches_again) {
  TempDir dir;
  std::string cache = (dir.path / "cache").string();
  Run first = run_probe({{"TG_CACHE_DIR", cache}, {"BEAM", "2"}});
  check_values(first);
  Run again = run_probe({{"TG_CACHE_DIR", cache}, {"BEAM", "2"}, {"IGNORE_BEAM_CACHE", "1"}});
  check_values(again);
  BOOST_TEST(again.stats["beam_searched"] == 2u, again.out);
  BOOST_TEST(again.stats["beam_cache_hits"] == 0u);
  Run third = run_probe({{"TG_CACHE_DIR", cache}, {"BEAM", "2"}});
  check_values(third);
  BOOST_TEST(third.stats["beam_searched"] == 0u);
  BOOST_TEST(third.stats["beam_cache_hits"] == 2u);
}

BOOST_AUTO_TEST_CASE(beam_zero_searches_nothing) {
  TempDir dir;
  Run r = run_probe({{"TG_CACHE_DIR", dir.path.string()}, {"BEAM", "0"}});
  check_values(r);
  BOOST_TEST(r.stats["beam_searched"] == 0u);
  BOOST_TEST(r.stats["beam_cache_hits"] == 0u);
}

BOOST_AUTO_TEST_CASE(bad_beam_values_are_clear_errors) {
  TempDir dir;
  for (std::string bad : {"-1", "2.5", "two", "3x"}) {
    Run r = run_probe({{"TG_CACHE_DIR", dir.path.string()}, {"BEAM", bad}});
    BOOST_TEST_INFO(r.out);
    BOOST_TEST(r.status != 0);
    BOOST_TEST(r.out.find("[BEAM] BEAM=" + bad + " is not a beam width: expected a non-negative integer") !=
               std::string::npos);
  }
}

BOOST_AUTO_TEST_CASE(compiler_is_safe_on_several_threads) {
  // The in-process compiler (when built) and the clang binary: 16 sources on 4 threads give the same
  // binaries as one after the other.
  for (std::string inprocess : {"1", "0"}) {
    Run r = run_probe({{"TG_CLANG_INPROCESS", inprocess}}, "compile");
    BOOST_TEST_INFO(r.out);
    BOOST_TEST(r.status == 0);
    BOOST_TEST(r.out.find("parallel_compile same=16 of 16") != std::string::npos);
  }
}

BOOST_AUTO_TEST_CASE(workgroup_devices_search_local_and_group) {
  // Arguments 3 and 4 are the VULKAN and CL plugins, empty when not built.
  for (auto [dev, at] : {std::pair{"VULKAN", 3}, std::pair{"CL", 4}}) {
    std::string plugin = arg(at);
    if (plugin.empty()) continue;
    BOOST_TEST_CONTEXT(dev) {
      TempDir dir;
      Run r = run_probe({{"TG_CACHE_DIR", (dir.path / "cache").string()},
                         {"BEAM", "2"},
                         {"DEV", dev},
                         {"TG_PLUGIN_PATH", plugin}});
      check_values(r);
      BOOST_TEST(r.stats["beam_searched"] == 2u, r.out);
      BOOST_TEST(r.opts.size() == 2u, r.out);
      for (const auto& [kernel, opts] : r.opts) BOOST_TEST_MESSAGE(dev << " " << kernel << " " << opts);
    }
  }
}
