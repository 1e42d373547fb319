// tg env: every variable in the env registry with its current value and meaning.
#include <fmt/format.h>

#include "apps/tg/commands.hpp"
#include "base/env.hpp"

namespace tg::cli {

int env(Args args) {
  if (!args.empty()) {
    fmt::print(stderr, "tg env: takes no arguments\n");
    return 2;
  }
  for (const auto& v : tg::env::all()) {
    auto raw = tg::env::raw(v.name);
    if (raw)
      fmt::print("{}={}\n", v.name, *raw);
    else
      fmt::print("{}={} (default)\n", v.name, v.default_value);
    fmt::print("    {}\n", v.meaning);
  }
  return 0;
}

}  // namespace tg::cli
