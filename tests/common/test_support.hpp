#pragma once
// Helpers every test folder shares.
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>

#include <cstdio>
#include <filesystem>
#include <map>
#include <span>
#include <sstream>
#include <cstdlib>
#include <string>
#include <system_error>
#include <vector>

#include "tg/sdk/device.hpp"

namespace tg::test {

// Runs f and checks it throws E with exactly this message.
template <typename E, typename F>
void expect_error(F&& f, const std::string& message) {
  try {
    f();
    BOOST_ERROR("expected an error: " << message);
  } catch (const E& e) {
    BOOST_CHECK_EQUAL(std::string(e.what()), message);
  }
}

// A per-process scratch folder under the system temp dir: scratch("x.bin") is a path inside it (the folder
// is created on first use). Declare BOOST_TEST_GLOBAL_FIXTURE(RemoveScratch) (after `using
// tg::test::RemoveScratch;`) to delete it at exit, also after a failed check.
inline std::filesystem::path scratch_dir() {
  return std::filesystem::temp_directory_path() / ("tg_test_" + std::to_string(::getpid()));
}
inline std::filesystem::path scratch(const std::string& name) {
  std::filesystem::create_directories(scratch_dir());
  return scratch_dir() / name;
}
struct RemoveScratch {
  ~RemoveScratch() {
    std::error_code ec;
    std::filesystem::remove_all(scratch_dir(), ec);
  }
};

// A plugin device buffer holding a copy of `host`, freed with the device's allocator (tests that drive a
// plugin's raw tg::sdk::Device).
template <typename T>
struct PluginBuffer {
  sdk::Device& dev;
  sdk::Handle h = nullptr;
  size_t n;
  PluginBuffer(sdk::Device& d, const std::vector<T>& host) : dev(d), n(host.size()) {
    BOOST_TEST_REQUIRE(dev.allocator().alloc(n * sizeof(T), {}, &h).ok());
    BOOST_TEST_REQUIRE(dev.allocator().copyin(h, std::as_bytes(std::span(host))).ok());
  }
  PluginBuffer(const PluginBuffer&) = delete;
  PluginBuffer& operator=(const PluginBuffer&) = delete;
  ~PluginBuffer() { dev.allocator().free(h, n * sizeof(T), {}); }
  std::vector<T> read() {
    std::vector<T> out(n);
    BOOST_TEST_REQUIRE(dev.allocator().copyout(std::as_writable_bytes(std::span(out)), h).ok());
    return out;
  }
};

// s in single quotes for /bin/sh.
inline std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// "env -i" plus the sanitizer settings of this process, if any: a child started in a clean environment still
// reports (and suppresses) what a sanitizer build of the test itself would.
inline std::string clean_env() {
  std::string cmd = "env -i";
  for (const char* v : {"ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"})
    if (const char* val = std::getenv(v)) cmd += std::string(" ") + v + "=" + shell_quote(val);
  return cmd;
}

// A shell command's exit status (-1 when it did not exit normally) and standard output (end the command
// with 2>&1 to get its errors too).
struct CommandResult {
  int status = -1;
  std::string out;
};
inline CommandResult run_command(const std::string& cmd) {
  FILE* p = popen(cmd.c_str(), "r");
  BOOST_REQUIRE_MESSAGE(p != nullptr, "cannot run " << cmd);
  CommandResult r;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) r.out.append(buf, n);
  int status = pclose(p);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// "compiled=3 launched=2" -> {"compiled": 3, "launched": 2} (the probes' "stats" lines).
inline std::map<std::string, unsigned long long> parse_counts(const std::string& text) {
  std::map<std::string, unsigned long long> out;
  std::istringstream kv(text);
  for (std::string item; kv >> item;) {
    size_t eq = item.find('=');
    out[item.substr(0, eq)] = std::stoull(item.substr(eq + 1));
  }
  return out;
}

// A fresh folder under the system temp dir, removed (with its contents) at the end of the scope.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::string templ = (std::filesystem::temp_directory_path() / "tg-test-XXXXXX").string();
    BOOST_REQUIRE(mkdtemp(templ.data()) != nullptr);
    path = templ;
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

}  // namespace tg::test
