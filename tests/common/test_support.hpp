#pragma once
// Helpers every test folder shares.
#include <boost/test/unit_test.hpp>

#include <string>

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

}  // namespace tg::test
