// A device whose compiler goes wrong (BROKEN_COMPILE, tests/fixtures/broken.cpp: the real CLANG plugin with a
// bad compiler, one failure per device index): the realize throws one tg::Error naming the device and what
// went wrong, nothing crashes, the same realize fails the same way again (no bad binary was kept), and the
// next realize on a good device (CLANG) is right (values worked out by hand).
#define BOOST_TEST_MODULE faults_bad_compile
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "tensor/tensor.hpp"

using tg::Tensor;
namespace data = boost::unit_test::data;

// A program cache of this run's own, so no binary from an earlier run is found instead of compiling.
struct FreshCache {
  std::string dir;
  FreshCache() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "tg-bad-compile-XXXXXX").string();
    dir = mkdtemp(tmpl.data());
    setenv("TG_CACHE_DIR", dir.c_str(), 1);
  }
  ~FreshCache() { std::filesystem::remove_all(dir); }
};
BOOST_TEST_GLOBAL_FIXTURE(FreshCache);

struct Case {
  int index;
  const char* op;    // the stage named in brackets
  const char* says;  // part of the reason
};
std::ostream& operator<<(std::ostream& os, const Case& c) { return os << "BROKEN_COMPILE:" << c.index; }

const std::vector<Case> cases = {
    {0, "[compile]", "the compiler fell over"},
    {1, "[load]", "not a binary made by the CLANG compiler"},
    {2, "[load]",
     "not a binary made by the CLANG compiler"},  // empty is a binary for NULL: the loader judges
    {3, "[compile]", "status code 77, which the plugin ABI does not define"},
    {4, "[load]", "CLANG load"},
};

// Two kernels, so the second is compiled ahead on the realize's helper thread while the first runs.
std::string realize_error(const std::string& device) {
  Tensor x = Tensor({1.f, 2.f, 3.f, 4.f}, {4}, {}, device);
  Tensor y = ((x + 1) * x).contiguous() + x.sum();
  try {
    y.realize();
  } catch (const tg::Error& e) {
    return e.what();
  }
  return "no error";
}

BOOST_DATA_TEST_CASE(a_failed_compile_is_one_clear_error_and_the_next_realize_works, data::make(cases), c) {
  std::string device = "BROKEN_COMPILE:" + std::to_string(c.index);
  std::string first = realize_error(device);
  BOOST_TEST_MESSAGE(first);
  BOOST_TEST(first.find(c.op) != std::string::npos, first);
  BOOST_TEST(first.find(device) != std::string::npos, first);
  BOOST_TEST(first.find(c.says) != std::string::npos, first);
  BOOST_TEST(realize_error(device) == first);
  Tensor x = Tensor({1.f, 2.f, 3.f, 4.f}, {4}, {}, "CLANG");
  std::vector<float> got = (((x + 1) * x).contiguous() + x.sum()).to_vector<float>();
  BOOST_TEST(got == (std::vector<float>{12, 16, 22, 30}), boost::test_tools::per_element());
}
