#pragma once
// Helpers every test folder shares.
#include <unistd.h>

#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <string>
#include <system_error>

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

}  // namespace tg::test
