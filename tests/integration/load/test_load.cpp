// Load: several processes training at once on one program cache, a JIT loop's memory over 1000 calls, and a
// BEAM search killed part way and resumed. Suite `slow` (each takes tens of seconds to minutes).
// Arguments after --: tg, the BEAM probe (tests/integration/beam/probe.cpp), the test plugin folder.
#define BOOST_TEST_MODULE load
#include <boost/test/unit_test.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <sqlite3.h>

#include "common/test_support.hpp"
#include "engine/jit.hpp"
#include "nn/layers.hpp"
#include "nn/optim.hpp"
#include "runtime/disk_cache.hpp"
#include "tensor/tensor.hpp"

namespace fs = std::filesystem;
using tg::Tensor;
using tg::test::shell_quote;
using tg::test::TempDir;

namespace {

std::string arg(int i) {
  auto& suite = boost::unit_test::framework::master_test_suite();
  BOOST_REQUIRE_MESSAGE(suite.argc > i, "run through meson test: tg, the BEAM probe and the fixture folder");
  return suite.argv[i];
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// A command in a clean environment (PATH kept for the clang binary), started without waiting: its pid is the
// program's own (sh execs env, env execs the program), so a signal reaches it. Output goes to `log`.
pid_t spawn(const std::map<std::string, std::string>& env, const std::string& cmd, const fs::path& log) {
  std::string line = "exec " + tg::test::clean_env();
  if (const char* path = std::getenv("PATH")) line += " PATH=" + shell_quote(path);
  for (const auto& [k, v] : env) line += " " + k + "=" + shell_quote(v);
  line += " " + cmd + " >" + shell_quote(log.string()) + " 2>&1";
  pid_t pid = fork();
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", line.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  BOOST_REQUIRE(pid > 0);
  return pid;
}

int wait_status(pid_t pid) {
  int status = 0;
  BOOST_REQUIRE(waitpid(pid, &status, 0) == pid);
  return status;
}

// The program cache after a load: sqlite's own integrity check passes and every program entry's checksum
// matches its key and binary. Returns the number of program entries.
int check_cache(const fs::path& dir) {
  sqlite3* db = nullptr;
  BOOST_REQUIRE(sqlite3_open_v2((dir / "cache.db").c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  BOOST_REQUIRE(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, nullptr) == SQLITE_OK);
  BOOST_REQUIRE(sqlite3_step(st) == SQLITE_ROW);
  BOOST_TEST(std::string(reinterpret_cast<const char*>(sqlite3_column_text(st, 0))) == "ok");
  sqlite3_finalize(st);
  BOOST_REQUIRE(sqlite3_prepare_v2(db, "SELECT compiler, source_hash, binary, checksum FROM programs_v2", -1,
                                   &st, nullptr) == SQLITE_OK);
  int entries = 0, bad = 0;
  while (sqlite3_step(st) == SQLITE_ROW) {
    std::string key(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)));
    std::string hash(reinterpret_cast<const char*>(sqlite3_column_text(st, 1)));
    const auto* bin = static_cast<const std::byte*>(sqlite3_column_blob(st, 2));
    std::span<const std::byte> binary(bin, static_cast<size_t>(sqlite3_column_bytes(st, 2)));
    std::string sum(reinterpret_cast<const char*>(sqlite3_column_text(st, 3)));
    entries++;
    bad += tg::runtime::entry_checksum(key, hash, binary) != sum;
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  BOOST_TEST(bad == 0, bad << " of " << entries << " program entries fail their checksum");
  return entries;
}

std::string accuracy_line(const std::string& out) {
  size_t at = out.find("test accuracy: ");
  return at == std::string::npos ? "" : out.substr(at, out.find('\n', at) - at);
}

}  // namespace

// Four tg train-mnist at once on one cache folder: all succeed, each model file is byte for byte the one a
// lone run (with a cache of its own) saves, and the shared cache passes its integrity check.
BOOST_AUTO_TEST_CASE(four_trainings_share_one_program_cache) {
  TempDir dir;
  const std::string train = shell_quote(arg(1)) + " train-mnist --steps 12 --batch 32 --eval 200 --out ";
  pid_t lone = spawn({{"DEV", "CLANG"}, {"TG_CACHE_DIR", (dir.path / "lone").string()}},
                     train + shell_quote((dir.path / "lone.safetensors").string()), dir.path / "lone.log");
  int lone_status = wait_status(lone);
  std::string lone_out = read_file(dir.path / "lone.log");
  BOOST_REQUIRE_MESSAGE(WIFEXITED(lone_status) && WEXITSTATUS(lone_status) == 0, lone_out);
  std::string lone_model = read_file(dir.path / "lone.safetensors");
  BOOST_REQUIRE(!lone_model.empty());
  BOOST_REQUIRE(!accuracy_line(lone_out).empty());

  std::vector<pid_t> pids;
  for (int i = 0; i < 4; i++) {
    std::string n = std::to_string(i);
    pids.push_back(spawn({{"DEV", "CLANG"}, {"TG_CACHE_DIR", (dir.path / "shared").string()}},
                         train + shell_quote((dir.path / (n + ".safetensors")).string()),
                         dir.path / (n + ".log")));
  }
  for (int i = 0; i < 4; i++) {
    std::string n = std::to_string(i);
    int status = wait_status(pids[static_cast<size_t>(i)]);
    std::string out = read_file(dir.path / (n + ".log"));
    BOOST_TEST((WIFEXITED(status) && WEXITSTATUS(status) == 0), "run " << n << ":\n" << out);
    BOOST_TEST(accuracy_line(out) == accuracy_line(lone_out), "run " << n << ":\n" << out);
    BOOST_TEST((read_file(dir.path / (n + ".safetensors")) == lone_model),
               "run " << n << " saved another model");
    BOOST_TEST(out.find("warning") == std::string::npos, "run " << n << ":\n" << out);
  }
  BOOST_TEST(check_cache(dir.path / "shared") > 0);
}

// 1000 calls of a JIT-compiled training step: the process's resident memory after call 1100 is within
// 4 MiB of what it was after call 100 (a leak of 4 KiB a call would be 4 MiB).
BOOST_AUTO_TEST_CASE(a_thousand_jit_replays_keep_memory_flat) {
#if defined(__SANITIZE_ADDRESS__)
  BOOST_TEST_MESSAGE("not measured under AddressSanitizer: its quarantine holds freed memory on purpose");
#else
  auto rss = [] {
    std::ifstream statm("/proc/self/statm");
    long pages = 0, resident = 0;
    statm >> pages >> resident;
    return resident * sysconf(_SC_PAGESIZE);
  };
  tg::nn::Linear l1(32, 64), l2(64, 10);
  std::vector<Tensor> params = {l1.weight, l1.bias, l2.weight, l2.bias};
  tg::nn::optim::Adam opt(params, 1e-3);
  tg::engine::Jit step = tg::engine::jit([&](std::span<const Tensor> in) -> std::vector<Tensor> {
    Tensor loss = l2.forward(l1.forward(in[0]).relu()).cross_entropy(in[1]);
    opt.zero_grad();
    loss.backward();
    std::vector<Tensor> todo = opt.schedule_step();
    todo.push_back(loss);
    Tensor::realize_all(todo);
    opt.zero_grad();
    return {loss};
  });
  std::vector<float> x(16 * 32);
  std::vector<int32_t> y(16);
  long warm = 0;
  float first = 0, last = 0;
  for (int i = 1; i <= 1100; i++) {
    for (size_t k = 0; k < x.size(); k++)
      x[k] = static_cast<float>((k * 7 + static_cast<size_t>(i)) % 13) / 13.f;
    for (size_t k = 0; k < y.size(); k++) y[k] = static_cast<int32_t>((k + static_cast<size_t>(i)) % 10);
    float loss = step({Tensor(x, {16, 32}), Tensor(y, {16})})[0].item<float>();
    if (i == 1) first = loss;
    if (i == 100) warm = rss();
    last = loss;
  }
  long grown = rss() - warm;
  BOOST_TEST_MESSAGE("RSS after call 100: " << warm / 1024 << " KiB, grown by " << grown / 1024
                                            << " KiB by 1100");
  BOOST_TEST(grown < 4L << 20, "grew by " << grown << " bytes");
  BOOST_TEST(step.calls() == 1100u);
  BOOST_TEST(std::isfinite(last));
  BOOST_TEST(last < first);  // the replays trained the model
#endif
}

// BEAM=2 on BROKEN_CLOCK (tests/fixtures/broken.cpp: CLANG with launch times made up from the binary, so the
// choice is the same in every run, and 5 ms a timed launch, so the search lasts seconds) is killed part way
// with SIGINT and with SIGKILL, then run again on the same cache: the resumed search finishes with the
// opts an uninterrupted search picks and the right values, and the cache passes its integrity check.
BOOST_AUTO_TEST_CASE(an_interrupted_beam_search_resumes_to_the_same_choice) {
  TempDir dir;
  std::string plugin = (fs::path(arg(3)) / "libtg-broken-clock.so").string();
  auto env = [&](const std::string& cache) {
    return std::map<std::string, std::string>{{"DEV", "BROKEN_CLOCK"},
                                              {"BEAM", "2"},
                                              {"DEBUG", "2"},
                                              {"TG_PLUGIN_PATH", plugin},
                                              {"TG_CACHE_DIR", cache}};
  };
  auto chosen = [](const std::string& out) {  // "BEAM2 <kernel> ... [opts]" lines, sorted by kernel
    std::map<std::string, std::string> opts;
    std::istringstream in(out);
    for (std::string line; std::getline(in, line);) {
      if (!line.starts_with("BEAM2 ")) continue;
      std::istringstream words(line.substr(6));
      std::string kernel;
      words >> kernel;
      opts[kernel] = line.substr(line.rfind(" [") + 1);
    }
    return opts;
  };
  auto values = [](const std::string& out) {  // the probe's "matmul ..." and "rowsum ..." lines
    std::string v;
    std::istringstream in(out);
    for (std::string line; std::getline(in, line);)
      if (line.starts_with("matmul ") || line.starts_with("rowsum ")) v += line + "\n";
    return v;
  };
  const std::string probe = shell_quote(arg(2));
  auto started = std::chrono::steady_clock::now();
  int status = wait_status(spawn(env((dir.path / "whole").string()), probe, dir.path / "whole.log"));
  double whole_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::string whole = read_file(dir.path / "whole.log");
  BOOST_REQUIRE_MESSAGE(WIFEXITED(status) && WEXITSTATUS(status) == 0, whole);
  std::map<std::string, std::string> want = chosen(whole);
  BOOST_REQUIRE_MESSAGE(want.size() == 2u, whole);
  BOOST_TEST_MESSAGE("uninterrupted search: " << whole_s << " s");

  for (int sig : {SIGINT, SIGKILL}) {
    for (double at : {0.3, 0.6}) {
      std::string name =
          std::string(sig == SIGINT ? "int" : "kill") + std::to_string(static_cast<int>(at * 10));
      fs::path cache = dir.path / name;
      pid_t pid = spawn(env(cache.string()), probe, dir.path / (name + ".log"));
      std::this_thread::sleep_for(std::chrono::duration<double>(at * whole_s));
      kill(pid, sig);
      int st = wait_status(pid);
      BOOST_TEST((WIFSIGNALED(st) && WTERMSIG(st) == sig), name << ": not stopped by the signal part way:\n"
                                                                << read_file(dir.path / (name + ".log")));
      fs::path log = dir.path / (name + "-resumed.log");
      int rs = wait_status(spawn(env(cache.string()), probe, log));
      std::string out = read_file(log);
      BOOST_TEST((WIFEXITED(rs) && WEXITSTATUS(rs) == 0), name << ":\n" << out);
      BOOST_TEST(chosen(out) == want, name << ":\n" << out);
      // The values the probe prints, the same as the uninterrupted run's (the BEAM test checks them by hand).
      BOOST_TEST(values(out) == values(whole), name << ":\n" << out);
      std::map<std::string, unsigned long long> stats =
          tg::test::parse_counts(out.substr(out.rfind("stats ") + 6));
      BOOST_TEST(stats["beam_searched"] + stats["beam_cache_hits"] == 2u, name << ":\n" << out);
      BOOST_TEST(stats["beam_searched"] >= 1u, name << ": the interrupted run had finished both searches");
      check_cache(cache);
    }
  }
}
