#pragma once
// The argument parsers of tg's subcommands: "--name value" pairs and the typed values behind them, kept
// apart from the commands so they can be tested (and fuzzed) without running one.
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "apps/tg/commands.hpp"

namespace tg::cli {

// Flags as "--name value" (names point into the parsed arguments, which must outlive them).
struct Flags {
  std::vector<std::pair<std::string_view, std::string>> values;
  std::string get(std::string_view name, std::string fallback) const;
};

// Every flag of args, each one of `known`, given once and followed by its value; otherwise a ValueError
// naming cmd and the argument.
Flags parse(std::string_view cmd, Args args, std::initializer_list<std::string_view> known);
// --name as a positive integer (fallback when absent); a ValueError naming cmd and the flag otherwise.
int64_t int_flag(std::string_view cmd, const Flags& f, std::string_view name, int64_t fallback);
// --name as a positive finite number (fallback when absent); a ValueError naming cmd and the flag otherwise.
double float_flag(std::string_view cmd, const Flags& f, std::string_view name, double fallback);
// --help or -h where a flag may stand (every flag takes a value, so at even positions).
bool wants_help(Args args);

}  // namespace tg::cli
