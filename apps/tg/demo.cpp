// `tg demo`: one small computation followed through the pipeline: the lazy graph, its schedule, the
// generated source of each kernel for the default device, the result, and what the run compiled.
#include <iostream>
#include <vector>

#include <fmt/format.h>

#include "apps/tg/commands.hpp"
#include "codegen/lower.hpp"
#include "runtime/check.hpp"
#include "runtime/disk_cache.hpp"
#include "runtime/registry.hpp"
#include "runtime/stats.hpp"
#include "tensor/tensor.hpp"

namespace tg::cli {

int demo(Args args) {
  if (!args.empty()) {
    fmt::print(stderr, "tg demo: takes no arguments\n");
    return 2;
  }
  runtime::Device& dev = tg::runtime::default_device();
  fmt::print("device: {} ({})\n\n", dev.str(), dev.description());

  Tensor x = Tensor::arange(12).reshape({3, 4}).cast(dtypes::float32);
  Tensor w = Tensor(std::vector<float>{0.5f, -1.0f, 0.25f, 1.0f, -0.5f, 0.0f, 1.0f, 0.5f}, {4, 2});
  Tensor y = (x.matmul(w) - 2).relu().softmax(-1);
  fmt::print("y = softmax(relu(x @ w - 2), -1) with x = arange(12).reshape(3,4): nothing has run yet\n\n");

  std::vector<engine::ScheduleItemView> schedule = y.schedule();
  fmt::print("schedule: {} kernel{}\n", schedule.size(), schedule.size() == 1 ? "" : "s");
  for (const engine::ScheduleItemView& si : schedule) {
    std::cout << si << "\n";
    codegen::LinearProgram prog = codegen::lower_kernel(si.ast, dev.caps());
    std::vector<const UOp*> uops = prog.view();
    sdk::Blob source;
    runtime::check(dev.renderer().render(prog.name, uops, source), "render", prog.name);
    fmt::print("--- generated source of {} for {} ---\n{}\n", prog.name, dev.name(), source.text());
  }
  std::cout << "result (realized now):\n" << y << "\n";
  // A second run with the same cache folder reads every binary from disk and compiles nothing.
  runtime::RuntimeStats st = runtime::runtime_stats();
  std::string cache = runtime::program_disk_cache() ? runtime::cache_dir() : "off (CACHELEVEL=0 or unusable)";
  fmt::print(
      "\nruntime: {} kernels launched, {} compiled, {} from the disk cache, {} from memory; disk cache: {}\n",
      st.launched, st.compiled, st.disk_hits, st.memory_hits, cache);
  return 0;
}

}  // namespace tg::cli
