#pragma once
// What the recorder keeps while the program runs (UOps, texts, times), and the step that turns it into a
// Trace: one node table, rules with their source lines, rewrites grouped under the kernel they lowered.
#include <cstdint>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "uop/pattern.hpp"
#include "viz/trace.hpp"

namespace tg::viz {

struct LiveKernel {
  UOpRef ast;
  std::string name, opts, uops;
  int64_t ops = 0, bytes = 0;
  std::string device, source, disasm;
};

// One lower_kernel call: the rewrites on `thread` with a seq between begin and end are its. A kernel lowered
// again (same AST and opts) is shown once: the rewrites of its later lowerings are left out.
struct LiveLowering {
  uint64_t begin = 0, end = 0;
  std::thread::id thread;
  int kernel = 0;
  bool first = true;
};

struct LiveRun {
  int kernel = 0;
  double start = 0, seconds = 0;
};

struct LiveMemoryPlan {
  int64_t bytes_before = 0, bytes_after = 0;
  std::vector<std::pair<UOpRef, UOpRef>> placed;
};

// Helper rewrites (unnamed ones and simplify(), run thousands of times on index math) are left out;
// every named pass is kept.
Trace build_trace(std::vector<RewriteTrace> rewrites, const std::vector<LiveKernel>& kernels,
                  const std::vector<LiveLowering>& lowerings, const std::vector<LiveRun>& runs,
                  const std::vector<LiveMemoryPlan>& memory);

}  // namespace tg::viz
