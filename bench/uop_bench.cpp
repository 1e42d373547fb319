// UOp benchmark: how fast nodes are created (new and already interned) and how fast the symbolic
// simplifier rewrites a large graph of kernel-style index expressions. Prints numbers (thread CPU time);
// asserts nothing.
//   uop_bench [--nodes N] [--repeat R]
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <vector>

#include <fmt/format.h>

#include "uop/symbolic.hpp"

using namespace tg;

namespace {

// CPU time of this thread: the numbers stay meaningful on a machine busy with other work.
class CpuTimer {
 public:
  CpuTimer() { reset(); }
  void reset() { start_ = now(); }
  double seconds() const { return now() - start_; }

 private:
  static double now() {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
  }
  double start_;
};

// A sink of index expressions over loop ranges and launch indices, distinct by their constants, with
// at least `target` unique nodes: the shape of what the scheduler and codegen hand the simplifier.
UOpRef index_graph(size_t target) {
  std::vector<UOpRef> vars;
  for (int i = 0; i < 4; i++) vars.push_back(UOp::range(UOp::const_(dtypes::index, int64_t{4 << i}), i));
  vars.push_back(UOp::make(Ops::SPECIAL, dtypes::index, {UOp::const_(dtypes::index, int64_t{1024})},
                           std::string("gidx0")));
  vars.push_back(UOp::make(Ops::SPECIAL, dtypes::index, {UOp::const_(dtypes::index, int64_t{16})},
                           std::string("lidx0")));
  vars.push_back(UOp::variable("n", 1, 4096));
  uint64_t s = 12345;
  auto rnd = [&](int64_t lo, int64_t hi) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return lo + static_cast<int64_t>((s >> 33) % static_cast<uint64_t>(hi - lo + 1));
  };
  std::vector<UOpRef> outs;
  while (UOp::sink(outs)->toposort().size() < target) {
    for (int j = 0; j < 1024; j++) {
      const UOpRef &a = vars[rnd(0, 6)], &b = vars[rnd(0, 6)], &c = vars[rnd(0, 6)];
      int64_t k = rnd(1, 8);
      UOpRef idx = a * (k * 4) + b * k + c + rnd(0, 64);  // e.g. gidx*16 + lidx*4 + r + offset
      UOpRef e = (idx / (k * 4)) % rnd(2, 9) * rnd(1, 512) + (idx % (k * 4)) + (b + 3) / 3 * 3;
      UOpRef valid = (idx + rnd(-8, 0))->lt(UOp::const_(dtypes::index, rnd(64, 4096)));
      outs.push_back(valid->where(e, UOp::const_(dtypes::index, int64_t{0})));
    }
  }
  return UOp::sink(std::move(outs));
}

void bench_creation(size_t n) {
  UOpRef x = UOp::variable("x", 0, 1 << 20);
  std::vector<UOpRef> keep;
  keep.reserve(n);
  CpuTimer t;
  for (size_t i = 0; i < n; i++) keep.push_back(x + static_cast<int64_t>(i));  // a CONST and an ADD each
  double fresh = t.seconds();
  t.reset();
  for (size_t i = 0; i < n; i++) {
    UOpRef again = x + static_cast<int64_t>(i);  // both already interned: hash + probe + refcount
    if (again != keep[i]) std::abort();
  }
  double hit = t.seconds();
  fmt::print("uop creation:   {:6.2f} M new nodes/s ({} nodes), {:6.2f} M interned lookups/s\n",
             2.0 * n / fresh / 1e6, 2 * n, 2.0 * n / hit / 1e6);
  keep.clear();
}

void bench_rewrite(const char* name, const PatternMatcher& pm, size_t nodes, int repeat) {
  double best = 1e30;
  size_t before = 0, after = 0;
  for (int r = 0; r < repeat; r++) {
    UOpRef g = index_graph(nodes);  // fresh each run: no range or rewrite memo survives from the last one
    before = g->toposort().size();
    CpuTimer t;
    UOpRef out = graph_rewrite(g, pm, nullptr, {.name = name});
    best = std::min(best, t.seconds());
    after = out->toposort().size();
  }
  fmt::print("{:<15} {:7} nodes in {:7.1f} ms: {:6.3f} M nodes/s (best of {}), graph -> {} nodes\n", name,
             before, best * 1e3, before / best / 1e6, repeat, after);
}

}  // namespace

int main(int argc, char** argv) {
  size_t nodes = 100000;
  int repeat = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--nodes"))
      nodes = std::strtoull(argv[i + 1], nullptr, 10);
    else if (!std::strcmp(argv[i], "--repeat"))
      repeat = std::atoi(argv[i + 1]);
  }
  bench_creation(1000000);
  bench_rewrite("symbolic_simple", symbolic_simple(), nodes, repeat);
  bench_rewrite("symbolic", symbolic(), nodes, repeat);
  bench_rewrite("symbolic_flat", symbolic_flat(), nodes, repeat);
  return 0;
}
