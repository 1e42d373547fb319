// fuzz_symbolic --seconds N [--seed S]: checks random expressions against simplify() until time is up.
// Prints how many expressions and assignments it checked; on a disagreement prints the minimized
// expression and exits 1.
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "symbolic_fuzz.hpp"

int main(int argc, char** argv) {
  double seconds = 60;
  uint64_t seed = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--seconds"))
      seconds = std::atof(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--seed"))
      seed = std::strtoull(argv[i + 1], nullptr, 10);
    else
      return std::cerr << "usage: fuzz_symbolic [--seconds N] [--seed S]\n", 2;
  }
  std::cout << "fuzz_symbolic: seed " << seed << ", " << seconds << " s" << std::endl;
  tg::fuzz::Generator g(seed);
  auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  uint64_t exprs = 0, samples = 0;
  double next_report = 60;
  while (elapsed() < seconds) {
    tg::UOpRef e = g.expr();
    exprs++, samples += 16;
    if (auto f = tg::fuzz::check(e, g, 16)) {
      std::cout << "DISAGREEMENT after " << exprs
                << " expressions: " << tg::fuzz::report(tg::fuzz::minimize(*f, g)) << std::endl;
      return 1;
    }
    if (elapsed() > next_report) {
      std::cout << "  " << exprs << " expressions checked (" << samples << " assignments)" << std::endl;
      next_report += 60;
    }
  }
  std::cout << "ok: " << exprs << " expressions, " << samples << " assignments, no disagreement" << std::endl;
  return 0;
}
