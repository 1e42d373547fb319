// tg's argument parsers (apps/tg/flags.hpp): the input is an argument list, NUL-separated, as after
// `tg train-mnist`. Parsed flags must be exactly the known names given once, each followed by its value;
// an integer flag a whole positive integer, a number flag a positive finite number. Anything else accepted
// is a wrong acceptance and traps.
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "apps/tg/flags.hpp"
#include "base/error.hpp"
#include "common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string_view> args;
  for (size_t at = 0; at <= text.size() && !text.empty();) {
    size_t end = text.find('\0', at);
    if (end == std::string::npos) end = text.size();
    args.push_back(std::string_view(text).substr(at, end - at));
    at = end + 1;
  }
  (void)tg::cli::wants_help(args);
  tg::cli::Flags f;
  try {
    f = tg::cli::parse("train-mnist", args, {"steps", "lr", "out"});
  } catch (const tg::Error&) {
    return 0;
  }
  // Accepted: the arguments are those pairs, in order.
  if (f.values.size() * 2 != args.size()) __builtin_trap();
  for (size_t i = 0; i < f.values.size(); i++) {
    const auto& [name, value] = f.values[i];
    if (args[2 * i] != "--" + std::string(name) || args[2 * i + 1] != value) __builtin_trap();
    if (name != "steps" && name != "lr" && name != "out") __builtin_trap();
    for (size_t j = 0; j < i; j++)
      if (f.values[j].first == name) __builtin_trap();
  }
  try {
    int64_t steps = tg::cli::int_flag("train-mnist", f, "steps", 7);
    std::string v = f.get("steps", "7");
    errno = 0;
    char* end = nullptr;
    long long parsed = std::strtoll(v.c_str(), &end, 10);
    if (steps <= 0 || errno != 0 || end != v.c_str() + v.size() || parsed != steps) __builtin_trap();
  } catch (const tg::Error&) {
  }
  try {
    double lr = tg::cli::float_flag("train-mnist", f, "lr", 0.5);
    if (!(lr > 0) || !std::isfinite(lr)) __builtin_trap();
  } catch (const tg::Error&) {
  }
  return 0;
}
