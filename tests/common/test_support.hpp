#pragma once
// Helpers every test folder shares.
#include <unistd.h>

#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <span>
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
// is created on first use). Declare BOOST_TEST_GLOBAL_FIXTURE(RemoveScratch) (after `using tg::test::RemoveScratch;`) to delete it at exit,
// also after a failed check.
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

}  // namespace tg::test
