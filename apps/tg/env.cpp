// tg env: every variable in the env registry (the core's, then each plugin's) with its value and meaning.
#include <fmt/format.h>

#include "apps/tg/commands.hpp"
#include "base/env.hpp"
#include "base/error.hpp"
#include "runtime/registry.hpp"

namespace tg::cli {

int env(Args args) {
  if (!args.empty()) {
    fmt::print(stderr, "tg env: takes no arguments\n");
    return 2;
  }
  runtime::Registry::global().load_all();  // the plugins declare their own variables
  int status = 0;
  for (const auto& v : tg::env::all()) {
    auto raw = tg::env::raw(v.name);
    if (raw)
      fmt::print("{}={}\n", v.name, *raw);
    else
      fmt::print("{}={} (default)\n", v.name, v.default_value);
    if (v.owner.empty())
      fmt::print("    {}\n", v.meaning);
    else
      fmt::print("    [{}] {}\n", v.owner, v.meaning);
    try {
      if (v.integer) tg::env::get_int(v.name);
    } catch (const tg::Error& e) {  // every other command refuses to start with this value
      fmt::print("    error: {}\n", e.what());
      fmt::print(stderr, "tg env: {}\n", e.what());
      status = 1;
    }
  }
  return status;
}

}  // namespace tg::cli
