// tg: the command-line entry point. A subcommand is a function in its own file plus one row below.
#include <cstdio>
#include <exception>
#include <new>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "apps/tg/commands.hpp"
#include "apps/tg/flags.hpp"
#include "base/env.hpp"
#include "base/error.hpp"
#include "tg/sdk/plugin.hpp"

namespace {

struct Command {
  std::string_view name, help, flags;
  int (*run)(tg::cli::Args);
};

constexpr Command kCommands[] = {
    {"devices", "list every device candidate, why it is or is not usable, and the default", "",
     tg::cli::devices},
    {"env", "list the environment variables tinygrad.cpp reads, with their values", "", tg::cli::env},
    {"demo", "follow one small computation through schedule, generated source and result", "", tg::cli::demo},
    {"train-mnist",
     "train the Fashion-MNIST CNN (--steps --batch --lr --seed --out --data --eval --devices --losses "
     "--dtype "
     "--dist --overlap)",
     "[--steps 1000] [--batch 128] [--lr 0.003] [--seed 42] [--out fashion_mnist_cnn.safetensors] "
     "[--data DIR] [--eval N] [--devices CLANG:0,CLANG:1] [--losses FILE] [--dtype float32|float64] "
     "[--dist mpi [--overlap on|off]]",
     tg::cli::train_mnist},
    {"viz", "serve a trace saved with VIZ=1 VIZ_OUT=FILE on 127.0.0.1 (VIZ_PORT, default 8000)", "FILE",
     tg::cli::viz},
    {"infer", "classify Fashion-MNIST test images with a saved model (--model --data --show --eval)",
     "[--model fashion_mnist_cnn.safetensors] [--data DIR] [--show 10] [--eval N]", tg::cli::infer},
    {"onnx", "run an ONNX model on .npy inputs, describe it, or run ONNX's backend node tests",
     "info MODEL | run MODEL [--inputs a.npy,name=b.npy] [--out DIR] [--device DEV] | "
     "test --suite DIR [--expect FILE] [--report FILE] [--filter REGEX]",
     tg::cli::onnx},
    {"llm",
     "run a gguf language model: one prompt, an interactive chat, or `serve` (an OpenAI-compatible server)",
     "[serve] --model FILE.gguf [--prompt TEXT | --tokens 1,2,3] [--system TEXT] [--max-tokens 256] "
     "[--temperature 0] [--top-k 0] [--top-p 1] [--seed 0] [--context 4096] [--logits FILE] [--json FILE] "
     "[--port 8000] [--host 127.0.0.1] [--name NAME]",
     tg::cli::llm},
};

void usage(std::FILE* out) {
  fmt::print(
      out,
      "usage: tg <command> [args]\n       tg --help | --version\n       tg <command> --help\n\ncommands:\n");
  for (const auto& c : kCommands) fmt::print(out, "  {:<12} {}\n", c.name, c.help);
}

// Runs a command; every exception ends in one line naming the command and a non-zero exit, never an abort.
int run(const Command& c, tg::cli::Args args) {
  if (tg::cli::wants_help(args)) {
    fmt::print("usage: tg {}{}{}\n\n{}\n", c.name, c.flags.empty() ? "" : " ", c.flags, c.help);
    return 0;
  }
  try {
    if (c.name != "env") tg::env::check_all();  // `tg env` shows the bad values instead
    return c.run(args);
  } catch (const tg::Error& e) {
    fmt::print(stderr, "tg {}: {}\n", c.name, e.what());
  } catch (const std::bad_alloc&) {
    fmt::print(stderr, "tg {}: out of memory\n", c.name);
  } catch (const std::exception& e) {
    fmt::print(stderr, "tg {}: unexpected error: {}\n", c.name, e.what());
  }
  return 1;
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
  for (const auto& c : kCommands)
    if (c.name == args[0]) return run(c, tg::cli::Args(args).subspan(1));
  fmt::print(stderr, "tg: unknown command '{}'\n\n", args[0]);
  usage(stderr);
  return 2;
}
