// Environment variables: an integer variable's value is a whole int or a ValueError naming it, never a
// silent 0 or a prefix ("1x" read as 1). The input is BEAM's value, cut at its first NUL.
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <string>

#include "base/env.hpp"
#include "base/error.hpp"
#include "common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string value(reinterpret_cast<const char*>(data), size);
  value.resize(value.find('\0') == std::string::npos ? value.size() : value.find('\0'));
  ::setenv("BEAM", value.c_str(), 1);
  try {
    std::optional<int> v = tg::env::get_int("BEAM");
    // Accepted: the whole text is that one int (strtol's reading, which stoi shares).
    if (!v) {
      if (!value.empty()) __builtin_trap();
    } else {
      errno = 0;
      char* end = nullptr;
      long parsed = std::strtol(value.c_str(), &end, 10);
      if (errno || *end || parsed != *v) __builtin_trap();
    }
  } catch (const tg::Error&) {
  }
  try {
    tg::env::check_all();
  } catch (const tg::Error&) {
  }
  ::unsetenv("BEAM");
  return 0;
}
