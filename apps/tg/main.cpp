// tg: the command-line entry point. A subcommand is a function in its own file plus one row below.
#include <cstdio>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "apps/tg/commands.hpp"
#include "base/error.hpp"
#include "tg/sdk/plugin.hpp"

namespace {

struct Command {
  std::string_view name, help;
  int (*run)(tg::cli::Args);
};

constexpr Command kCommands[] = {
    {"devices", "list every device candidate, why it is or is not usable, and the default", tg::cli::devices},
    {"env", "list the environment variables tinygrad.cpp reads, with their values", tg::cli::env},
    {"demo", "follow one small computation through schedule, generated source and result", tg::cli::demo},
    {"train-mnist", "train the Fashion-MNIST CNN (--steps --batch --lr --seed --out --data --eval)", tg::cli::train_mnist},
    {"viz", "serve a trace saved with VIZ=1 VIZ_OUT=FILE on 127.0.0.1 (VIZ_PORT, default 8000)", tg::cli::viz},
    {"infer", "classify Fashion-MNIST test images with a saved model (--model --data --show --eval)", tg::cli::infer},
};

void usage(std::FILE* out) {
  fmt::print(out, "usage: tg <command> [args]\n       tg --help | --version\n\ncommands:\n");
  for (const auto& c : kCommands) fmt::print(out, "  {:<12} {}\n", c.name, c.help);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string_view> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    usage(args.empty() ? stderr : stdout);
    return args.empty() ? 2 : 0;
  }
  if (args[0] == "--version") {
    fmt::print("tg (tinygrad.cpp) {}, plugin ABI {}.{}\n", TG_VERSION, TG_ABI_MAJOR, TG_ABI_MINOR);
    return 0;
  }
  for (const auto& c : kCommands) {
    if (c.name != args[0]) continue;
    try {
      return c.run(tg::cli::Args(args).subspan(1));
    } catch (const tg::Error& e) {
      fmt::print(stderr, "tg {}: {}\n", c.name, e.what());
      return 1;
    }
  }
  fmt::print(stderr, "tg: unknown command '{}'\n\n", args[0]);
  usage(stderr);
  return 2;
}
