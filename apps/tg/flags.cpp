// tg's argument parsers (see flags.hpp).
#include "apps/tg/flags.hpp"

#include <algorithm>
#include <cmath>
#include <exception>

#include <fmt/format.h>

#include "base/error.hpp"

namespace tg::cli {

std::string Flags::get(std::string_view name, std::string fallback) const {
  for (const auto& [n, v] : values)
    if (n == name) return v;
  return fallback;
}

Flags parse(std::string_view cmd, Args args, std::initializer_list<std::string_view> known) {
  Flags f;
  for (size_t i = 0; i < args.size(); i++) {
    std::string_view a = args[i];
    bool ok = a.starts_with("--") && std::find(known.begin(), known.end(), a.substr(2)) != known.end();
    if (!ok) throw ValueError(std::string(cmd), fmt::format("unknown argument '{}'", a));
    if (i + 1 >= args.size()) throw ValueError(std::string(cmd), fmt::format("{} needs a value", a));
    for (const auto& [n, v] : f.values)
      if (n == a.substr(2)) throw ValueError(std::string(cmd), fmt::format("{} is given twice", a));
    f.values.emplace_back(a.substr(2), std::string(args[++i]));
  }
  return f;
}

int64_t int_flag(std::string_view cmd, const Flags& f, std::string_view name, int64_t fallback) {
  std::string v = f.get(name, std::to_string(fallback));
  try {
    size_t used = 0;
    int64_t x = std::stoll(v, &used);
    if (used == v.size() && x > 0) return x;
  } catch (const std::exception&) {
  }
  throw ValueError(std::string(cmd), fmt::format("--{} must be a positive integer, got '{}'", name, v));
}

double float_flag(std::string_view cmd, const Flags& f, std::string_view name, double fallback) {
  std::string v = f.get(name, fmt::format("{}", fallback));
  try {
    size_t used = 0;
    double x = std::stod(v, &used);
    if (used == v.size() && x > 0 && std::isfinite(x)) return x;  // "inf" would train on NaNs
  } catch (const std::exception&) {
  }
  throw ValueError(std::string(cmd), fmt::format("--{} must be a positive finite number, got '{}'", name, v));
}

bool wants_help(Args args) {
  for (size_t i = 0; i < args.size(); i += 2)
    if (args[i] == "--help" || args[i] == "-h") return true;
  return false;
}

}  // namespace tg::cli
