#pragma once
// Paths meson passes after `--`: the fixture plugin folder and the build root.
#include <string>
#include <string_view>

#include <boost/test/unit_test.hpp>

namespace test {

inline std::string arg(int i) {
  auto& suite = boost::unit_test::framework::master_test_suite();
  BOOST_REQUIRE_MESSAGE(suite.argc > i, "run through meson test: fixture dir and build root are arguments");
  return suite.argv[i];
}
inline std::string fixture_dir() { return arg(1); }
inline std::string fixture(std::string_view file) { return fixture_dir() + "/" + std::string(file); }
inline std::string build_root() { return arg(2); }

}  // namespace test
