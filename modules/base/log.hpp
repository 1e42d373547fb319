#pragma once
// DEBUG-gated logging to stderr and a steady-clock timer.
#include <chrono>
#include <cstdio>

#include <fmt/format.h>

#include "base/env.hpp"

namespace tg {

// Prints when DEBUG >= level. Formatting happens only when it prints.
template <typename... Args>
void debug_log(int level, fmt::format_string<Args...> f, Args&&... args) {
  if (env::DEBUG.value() >= level) {
    fmt::print(stderr, f, std::forward<Args>(args)...);
    std::fputc('\n', stderr);
  }
}

class Timer {
 public:
  Timer() : start_(std::chrono::steady_clock::now()) {}
  double seconds() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }
  void reset() { start_ = std::chrono::steady_clock::now(); }

 private:
  std::chrono::steady_clock::time_point start_;
};

}  // namespace tg
