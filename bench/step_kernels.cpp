// Per-kernel times of one workload's whole step: the kernels the scheduler makes for W7's training step
// (a GPT-2-small layer: forward, (y*y).mean(), backward, AdamW), W5's (the CNN with Adam) or W4's conv2d
// forward + backward, each
// lowered with the heuristic's opts, run in schedule order over its own buffers (no memory planning) and
// timed alone. Prints the kernels by time with their GFLOPS, GB/s and opts, and their sum. Asserts nothing.
//   step_kernels [--only W7|W5|W4] [--repeat R] [--source I] [--kernel I --opts "[UPCAST(axis=1, arg=16),
//   ...]"]
// (--source I: print kernel I's source; --kernel I --opts: kernel I of the schedule lowered with these opts
// too, the two timed in turns)
#include <sys/resource.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "apps/tg/mnist_model.hpp"
#include "base/log.hpp"
#include "bench/cpu_time.hpp"
#include "bench/transformer_block.hpp"
#include "codegen/estimate.hpp"
#include "codegen/lower.hpp"
#include "codegen/search.hpp"
#include "nn/losses.hpp"
#include "nn/optim.hpp"
#include "runtime/buffer.hpp"
#include "runtime/registry.hpp"
#include "tensor/realize.hpp"
#include "tensor/tensor.hpp"

using namespace tg;

namespace {

struct Kernel {
  codegen::LinearProgram prog;
  std::unique_ptr<sdk::Program> program;
  std::vector<sdk::Handle> handles;
  codegen::Estimate est;
  double best = 1e30, best_cpu = 1e30;
};

Kernel compile(runtime::Device& dev, const UOpRef& ast, std::optional<std::vector<codegen::Opt>> opts,
               bool show = false) {
  codegen::LowerOptions lo;
  lo.opts = std::move(opts);
  Kernel k;
  k.prog = codegen::lower_kernel(ast, dev.caps(), lo);
  std::vector<const UOp*> view = k.prog.view();
  sdk::Blob src;
  if (!dev.renderer().render(k.prog.name, view, src).ok()) std::abort();
  if (show) fmt::print("{}\n", src.text());
  sdk::Blob bin = dev.compile(src.text());
  k.program = dev.load(k.prog.name, bin.bytes());
  k.est = estimate(k.prog);
  return k;
}

using tg::bench::cpu_seconds;

void launch(Kernel& k, bool timed) {
  Timer t;
  double c0 = cpu_seconds();
  if (!k.program->launch(k.handles, {}, k.prog.launch_dims({}), true, nullptr).ok()) std::abort();
  double s = t.seconds(), c = cpu_seconds() - c0;
  if (timed) k.best = std::min(k.best, s), k.best_cpu = std::min(k.best_cpu, c);
}

// A training step's roots: the loss and the optimizer's updates after its backward.
std::vector<UOpRef> step_roots(Tensor loss, tg::nn::optim::Optimizer& opt) {
  opt.zero_grad();
  loss.backward();
  std::vector<Tensor> todo = opt.schedule_step();
  todo.push_back(loss);
  std::vector<UOpRef> roots;
  for (const Tensor& t : todo) roots.push_back(t.uop());
  return roots;
}

// W7's step: the transformer block, the loss and AdamW's update, as bench/suite.cpp's w7 realizes it.
std::vector<UOpRef> w7_roots() {
  static tg::bench::Block blk(768, 12);
  static std::vector<Tensor> params = blk.parameters();
  static tg::nn::optim::AdamW opt(params, 1e-4);
  Tensor x = Tensor::empty({4, 256, 768});
  Tensor y = blk.forward(x), loss = (y * y).mean();
  return step_roots(loss, opt);
}

// W5's step: the Fashion-MNIST CNN in training mode, cross entropy and Adam, batch 512.
std::vector<UOpRef> w5_roots() {
  static auto model = tg::apps::fashion_mnist_cnn();
  static std::vector<Tensor> params = model->parameters();
  static tg::nn::optim::Adam opt(params, 1e-3);
  std::vector<int32_t> labels(512);
  for (size_t i = 0; i < labels.size(); i++) labels[i] = static_cast<int32_t>((i * 7) % 10);
  model->train();
  Tensor loss = tg::nn::cross_entropy((*model)(Tensor::empty({512, 1, 28, 28})), Tensor(labels, {512}));
  return step_roots(loss, opt);
}

std::vector<UOpRef> w4_roots() {
  Tensor x = Tensor::empty({32, 32, 28, 28}), w = Tensor::empty({64, 32, 3, 3}),
         g = Tensor::empty({32, 64, 28, 28});
  x.requires_grad_();
  w.requires_grad_();
  Tensor y = x.conv2d(w, Tensor(), 1, 1);
  std::vector<Tensor> r = y.gradient({x, w}, g);
  return {y.uop(), r[0].uop(), r[1].uop()};
}

}  // namespace

int main(int argc, char** argv) {
  std::string only = "W7", opts_text;
  int repeat = 5;
  long pick = -1, show = -1;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--only")) only = argv[i + 1];
    if (!std::strcmp(argv[i], "--repeat")) repeat = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--kernel")) pick = std::atol(argv[i + 1]);
    if (!std::strcmp(argv[i], "--source")) show = std::atol(argv[i + 1]);
    if (!std::strcmp(argv[i], "--opts")) opts_text = argv[i + 1];
  }
  runtime::Device& dev = tg::runtime::device(engine::default_device_name());
  fmt::print("{}: {}\n", dev.str(), dev.description());
  std::vector<UOpRef> roots = only == "W4" ? w4_roots() : only == "W5" ? w5_roots() : w7_roots();
  std::vector<engine::ScheduleItemView> items = engine::schedule_uops(roots);
  std::map<const UOp*, std::unique_ptr<runtime::Buffer>> bufs;
  std::vector<Kernel> ks;
  std::optional<Kernel> alt;
  for (size_t i = 0; i < items.size(); i++) {
    const engine::ScheduleItemView& si = items[i];
    if (si.ast->op() != Ops::SINK) continue;
    std::vector<sdk::Handle> hs;
    for (const UOpRef& b : si.bufs) {
      auto& buf = bufs[b.get()];
      if (!buf) {
        size_t n = static_cast<size_t>(b->arg_as<int64_t>()) * b->dtype().itemsize();
        buf = std::make_unique<runtime::Buffer>(dev, n);
        std::vector<float> init(n / sizeof(float));
        for (size_t e = 0; e < init.size(); e++) init[e] = static_cast<float>(e % 17) * 0.0625f + 0.125f;
        buf->copyin(std::as_bytes(std::span(init)));
      }
    }
    ks.push_back(compile(dev, si.ast, std::nullopt, static_cast<long>(ks.size()) == show));
    for (const codegen::BufferArg& a : ks.back().prog.bufs)
      ks.back().handles.push_back(bufs.at(si.bufs.at(static_cast<size_t>(a.index)).get())->handle());
    if (static_cast<long>(ks.size()) - 1 == pick) {
      alt = compile(dev, si.ast, codegen::parse_opts(opts_text).value());
      alt->handles = ks.back().handles;
    }
  }
  for (int r = 0; r < repeat + 1; r++)  // the first round warms caches and pages
    for (size_t i = 0; i < ks.size(); i++) {
      launch(ks[i], r > 0);
      if (alt && static_cast<long>(i) == pick) launch(*alt, r > 0);
    }
  std::vector<size_t> order(ks.size());
  double total = 0, total_cpu = 0;
  for (size_t i = 0; i < ks.size(); i++) order[i] = i, total += ks[i].best, total_cpu += ks[i].best_cpu;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ks[a].best > ks[b].best; });
  fmt::print("{} kernels, sum of best times {:.2f} ms, of best CPU times {:.2f} ms\n", ks.size(), total * 1e3,
             total_cpu * 1e3);
  fmt::print("{:>3} {:<28} {:>9} {:>9} {:>6} {:>8} {:>8}  {}\n", "#", "kernel", "ms", "cpu ms", "share",
             "GFLOPS", "GB/s", "opts");
  auto row = [&](size_t i, const Kernel& k) {
    fmt::print("{:>3} {:<28} {:>9.3f} {:>9.3f} {:>5.1f}% {:>8.1f} {:>8.1f}  {}\n", i, k.prog.name,
               k.best * 1e3, k.best_cpu * 1e3, 100 * k.best / total,
               static_cast<double>(k.est.ops) / k.best / 1e9, static_cast<double>(k.est.bytes) / k.best / 1e9,
               codegen::opts_str(k.prog.applied_opts));
  };
  for (size_t i : order) row(i, ks[i]);
  if (alt) {
    fmt::print("--kernel {} with --opts:\n", pick);
    row(static_cast<size_t>(pick), *alt);
  }
  return 0;
}
