// Kernel benchmark: the kernels the scheduler makes for matmul, convs, a conv weight gradient, im2col copies,
// the training step's NCHW <-> channels-last copies, pool backward, pad, relu and batchnorm variance, an
// elementwise chain and a sum, lowered without opts (NOOPT) and with the heuristic's, run on one device;
// prints GFLOPS / GB/s and the ratio. Asserts nothing.
//   kernels_bench [--device CLANG] [--repeat R] [--only SUBSTRING] [--opts U1:16,U0:4,R2:4,T0:2] [--vs OPTS]
//                 [--kind r|E]
// (DEBUG=4 prints the sources; --opts lowers the reduce kernels, or with --kind E the elementwise ones, with
// these opts instead of the heuristic's, where they apply)
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "base/env.hpp"
#include "base/log.hpp"
#include "codegen/lower.hpp"
#include "runtime/buffer.hpp"
#include "runtime/registry.hpp"
#include "tensor/realize.hpp"
#include "tensor/tensor.hpp"

using namespace tg;

namespace {

struct Compiled {
  codegen::LinearProgram prog;
  std::unique_ptr<sdk::Program> program;
};

// How a variant lowers the reduce kernels: NOOPT, the heuristic's opts, or given opts (the heuristic's
// for a kernel they do not fit).
struct Variant {
  bool noopt = false;
  std::optional<std::vector<codegen::Opt>> opts;
};

char kind = 'r';  // --kind: the kernels --opts and --vs apply to (r reduce, E elementwise)

Compiled compile(runtime::Device& dev, const UOpRef& ast, const Variant& v) {
  env::Scoped s(env::NOOPT, v.noopt ? 1 : 0);
  codegen::LowerOptions lo;
  if (!v.noopt && codegen::kernel_name(ast)[0] == kind) lo.opts = v.opts;
  Compiled c;
  try {
    c.prog = codegen::lower_kernel(ast, dev.caps(), lo);
  } catch (const std::exception&) {
    c.prog = codegen::lower_kernel(ast, dev.caps(), codegen::LowerOptions{});
  }
  std::vector<const UOp*> view = c.prog.view();
  sdk::Blob src;
  if (!dev.renderer().render(c.prog.name, view, src).ok()) std::abort();
  debug_log(4, "{}", src.text());
  sdk::Blob bin = dev.compile(src.text());
  c.program = dev.load(c.prog.name, bin.bytes());
  return c;
}

// A schedule compiled one way, with its buffers filled.
struct Runnable {
  std::map<const UOp*, std::unique_ptr<runtime::Buffer>> bufs;
  std::vector<Compiled> kernels;
  std::string names;
  double best = 1e30;
};

Runnable prepare(runtime::Device& dev, const std::vector<engine::ScheduleItemView>& items, const Variant& v) {
  Runnable r;
  for (const engine::ScheduleItemView& si : items) {
    r.kernels.push_back(compile(dev, si.ast, v));
    r.names += (r.names.empty() ? "" : " ") + r.kernels.back().prog.name;
    for (const UOpRef& b : si.bufs) {
      if (r.bufs.count(b.get())) continue;
      size_t n = static_cast<size_t>(b->arg_as<int64_t>()) * b->dtype().itemsize();
      auto buf = std::make_unique<runtime::Buffer>(dev, n);
      std::vector<float> init(n / sizeof(float));
      for (size_t i = 0; i < init.size(); i++) init[i] = static_cast<float>(i % 17) * 0.125f - 1.0f;
      buf->copyin(std::as_bytes(std::span(init)));
      r.bufs[b.get()] = std::move(buf);
    }
  }
  return r;
}

// Seconds for running every kernel of the schedule once, in order.
double run_once(Runnable& r, const std::vector<engine::ScheduleItemView>& items) {
  Timer t;
  for (size_t k = 0; k < items.size(); k++) {
    std::vector<sdk::Handle> hs;
    for (const codegen::BufferArg& a : r.kernels[k].prog.bufs)
      hs.push_back(r.bufs.at(items[k].bufs.at(static_cast<size_t>(a.index)).get())->handle());
    if (!r.kernels[k].program->launch(hs, {}, r.kernels[k].prog.launch_dims({}), true, nullptr).ok())
      std::abort();
  }
  return t.seconds();
}

// Best-of-repeat seconds per variant; the variants take turns, so a slow spell of the machine hits all.
void time_variants(std::vector<Runnable>& rs, const std::vector<engine::ScheduleItemView>& items,
                   int repeat) {
  for (int i = 0; i < repeat + 1; i++)  // the first round warms caches and pages
    for (Runnable& r : rs) {
      double s = run_once(r, items);
      if (i > 0) r.best = std::min(r.best, s);
    }
}

// "U1:16,U0:4,R2:4,T0:2" (U UPCAST, R UNROLL, T THREAD, S SWAP; axis:arg).
std::vector<codegen::Opt> parse_opts(const std::string& s) {
  std::vector<codegen::Opt> out;
  for (size_t p = 0; p < s.size();) {
    size_t e = s.find(',', p);
    std::string o = s.substr(p, e == std::string::npos ? std::string::npos : e - p);
    codegen::OptOps op = o[0] == 'U'   ? codegen::OptOps::UPCAST
                         : o[0] == 'R' ? codegen::OptOps::UNROLL
                         : o[0] == 'T' ? codegen::OptOps::THREAD
                         : o[0] == 'P' ? codegen::OptOps::PADTO
                                       : codegen::OptOps::SWAP;
    size_t c = o.find(':');
    out.push_back({op, std::stoll(o.substr(1, c - 1)), std::stoll(o.substr(c + 1))});
    p = e == std::string::npos ? s.size() : e + 1;
  }
  return out;
}

std::string only;                            // run only the benchmarks whose name contains this
std::optional<std::vector<codegen::Opt>> forced,
    vs;  // --opts: these instead of the heuristic's; --vs: against these

// work: FLOPs (unit "GFLOPS") or bytes moved (unit "GB/s"). With --vs: the opts (or the heuristic's)
// against the --vs opts instead of NOOPT against the heuristic.
void bench(runtime::Device& dev, const char* what, const Tensor& t, double work, const char* unit,
           int repeat) {
  if (std::string(what).find(only) == std::string::npos) return;
  std::vector<engine::ScheduleItemView> items = t.schedule();
  std::vector<Runnable> rs;
  rs.push_back(prepare(dev, items, vs ? Variant{false, forced} : Variant{true, std::nullopt}));
  rs.push_back(prepare(dev, items, vs ? Variant{false, vs} : Variant{false, forced}));
  time_variants(rs, items, repeat);
  double slow = rs[0].best, fast = rs[1].best;
  fmt::print(
      "{:<22} {:<5} {:8.2f} {:<6} ({:8.2f} ms)  {:<4} {:8.2f} {:<6} ({:8.2f} ms)  x{:5.2f}   {} | {}\n", what,
      vs ? "A" : "NOOPT", work / slow / 1e9, unit, slow * 1e3, vs ? "B" : "opts", work / fast / 1e9, unit,
      fast * 1e3, slow / fast, rs[0].names, rs[1].names);
}

}  // namespace

int main(int argc, char** argv) {
  std::string device = "CLANG";
  int repeat = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--device")) device = argv[i + 1];
    if (!std::strcmp(argv[i], "--repeat")) repeat = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--only")) only = argv[i + 1];
    if (!std::strcmp(argv[i], "--kind")) kind = argv[i + 1][0];
    if (!std::strcmp(argv[i], "--opts")) forced = parse_opts(argv[i + 1]);
    if (!std::strcmp(argv[i], "--vs")) vs = parse_opts(argv[i + 1]);
  }
  runtime::Device& dev = tg::runtime::device(device);
  fmt::print("{}: {}\n", dev.str(), dev.description());
  auto f32 = dtypes::float32;
  for (int64_t n : {256, 512, 1024, 2048}) {
    Tensor a = Tensor::empty({n, n}, f32, device), b = Tensor::empty({n, n}, f32, device);
    bench(dev, fmt::format("matmul {}", n).c_str(), a.matmul(b), 2.0 * n * n * n, "GFLOPS", repeat);
  }
  {
    Tensor x = Tensor::empty({512, 32, 28, 28}, f32, device), w = Tensor::empty({32, 32, 5, 5}, f32, device);
    bench(dev, "conv 5x5 32->32 b512", x.conv2d(w), 2.0 * 512 * 32 * 24 * 24 * 32 * 25, "GFLOPS", repeat);
  }
  {
    Tensor x = Tensor::empty({512, 1, 28, 28}, f32, device), w = Tensor::empty({32, 1, 5, 5}, f32, device);
    bench(dev, "conv 5x5 1->32 b512", x.conv2d(w), 2.0 * 512 * 32 * 24 * 24 * 25, "GFLOPS", repeat);
  }
  {
    // the CNN's 3x3 convs (short rows: direct, channels last)
    Tensor x = Tensor::empty({512, 32, 10, 10}, f32, device), w = Tensor::empty({64, 32, 3, 3}, f32, device);
    bench(dev, "conv 3x3 32->64 10x10", x.conv2d(w), 2.0 * 512 * 64 * 8 * 8 * 32 * 9, "GFLOPS", repeat);
    Tensor x2 = Tensor::empty({512, 64, 8, 8}, f32, device), w2 = Tensor::empty({64, 64, 3, 3}, f32, device);
    bench(dev, "conv 3x3 64->64 8x8", x2.conv2d(w2), 2.0 * 512 * 64 * 6 * 6 * 64 * 9, "GFLOPS", repeat);
  }
  {
    Tensor x = Tensor::empty({512, 32, 24, 24}, f32, device), w = Tensor::empty({32, 32, 5, 5}, f32, device);
    bench(dev, "conv 5x5 24->20 b512", x.conv2d(w), 2.0 * 512 * 32 * 20 * 20 * 32 * 25, "GFLOPS", repeat);
  }
  {
    // the window matrix of 5x5 windows over 24x24 inputs (the CNN's second conv, dw), stored row-major
    // with the output axes merged first or after
    Tensor x = Tensor::empty({26, 32, 24, 24}, f32, device);
    Tensor w = x.pool({5, 5}, {1, 1}, {1, 1}, "im2col").permute({0, 1, 4, 5, 2, 3});
    bench(dev, "im2col 5x5 merged", w.reshape({26, 800, 400}).contiguous(), 8.0 * 26 * 800 * 400, "GB/s",
          repeat);
    bench(dev, "im2col 5x5 rows", w.contiguous(), 8.0 * 26 * 800 * 400, "GB/s", repeat);
  }
  {
    // W4's forward: 3x3 windows of a padded 28x28 input, stored, times the weights
    Tensor x = Tensor::empty({32, 32, 28, 28}, f32, device), w = Tensor::empty({64, 32, 3, 3}, f32, device);
    bench(dev, "conv 3x3 32->64 pad 1", x.conv2d(w, Tensor(), 1, 1), 2.0 * 32 * 64 * 28 * 28 * 32 * 9,
          "GFLOPS", repeat);
  }
  {
    // the first conv's weight gradient (1->32, 5x5 over 28x28, batch 512): a matmul with 800 outputs and a
    // reduce of 512 * 576
    Tensor cols = Tensor::empty({512, 25, 576}, f32, device), dy = Tensor::empty({512, 576, 32}, f32, device);
    Tensor dw = (cols.reshape({512, 25, 576, 1}) * dy.reshape({512, 1, 576, 32})).sum({0, 2});
    bench(dev, "conv dw 1->32 5x5", dw, 2.0 * 512 * 25 * 32 * 576, "GFLOPS", repeat);
  }
  {
    // the second conv's weight gradient (32->32, 5x5 over 24x24, batch 512) as conv.cpp computes it when
    // the forward ran direct: the windows times dy with its channels last, in partials of 16 samples
    Tensor x = Tensor::empty({512, 32, 24, 24}, f32, device),
           dyt = Tensor::empty({32, 16, 20, 20, 32}, f32, device);
    Tensor xw = x.pool({5, 5}, {1, 1}, {1, 1}, "dw")
                    .permute({0, 2, 3, 1, 4, 5})
                    .reshape({32, 16, 20, 20, 32, 5, 5, 1});
    Tensor dw = (xw * dyt.reshape({32, 16, 20, 20, 1, 1, 1, 32})).sum({1, 2, 3}).contiguous().sum(0);
    bench(dev, "conv dw 32->32 5x5", dw, 2.0 * 512 * 25 * 32 * 32 * 400, "GFLOPS", repeat);
  }
  // the training step's layout copies: a direct conv's channels-last output back to NCHW with its bias,
  // and NCHW input to channels last
  for (auto [c, hw] : {std::pair<int64_t, int64_t>{32, 20}, {32, 24}, {64, 12}, {64, 6}}) {
    Tensor x = Tensor::empty({512, hw, hw, c}, f32, device), bias = Tensor::empty({c}, f32, device);
    bench(dev, fmt::format("to NCHW {}x{}x{}", c, hw, hw).c_str(),
          (x.permute({0, 3, 1, 2}) + bias.reshape({1, c, 1, 1})).contiguous(), 8.0 * 512 * c * hw * hw,
          "GB/s", repeat);
    Tensor y = Tensor::empty({512, c, hw, hw}, f32, device);
    bench(dev, fmt::format("to NHWC {}x{}x{}", c, hw, hw).c_str(), y.permute({0, 2, 3, 1}).contiguous(),
          8.0 * 512 * c * hw * hw, "GB/s", repeat);
  }
  {
    // a 2x2 max pool's backward fused with the step's elementwise work: loads at (h/2, w/2) next to
    // full-resolution ones
    Tensor x = Tensor::empty({512, 32, 20, 20}, f32, device),
           t = Tensor::empty({512, 32, 10, 10}, f32, device),
           g = Tensor::empty({512, 32, 10, 10}, f32, device);
    auto up = [](const Tensor& v) {
      return v.reshape({512, 32, 10, 1, 10, 1}).expand({512, 32, 10, 2, 10, 2}).reshape({512, 32, 20, 20});
    };
    bench(dev, "pool bwd 32x20x20", (x == up(t)).where(up(g) / (up(t) + 1.5f), 0.0f) + x,
          4.0 * 512 * 32 * 1000, "GB/s", repeat);
  }
  {
    Tensor x = Tensor::empty({512, 32, 24, 24}, f32, device);
    bench(dev, "relu 4d", x.relu(), 8.0 * 512 * 32 * 576, "GB/s", repeat);
    bench(dev, "relu 1d", x.reshape({512 * 32 * 576}).relu(), 8.0 * 512 * 32 * 576, "GB/s", repeat);
    Tensor g = Tensor::empty({512, 32, 20, 20}, f32, device);
    bench(dev, "pad 4", g.pad({{0, 0}, {0, 0}, {4, 4}, {4, 4}}), 4.0 * 512 * 32 * (400 + 784), "GB/s",
          repeat);
    // the 3x3 convs' dx inputs: dy padded by 2
    Tensor g8 = Tensor::empty({512, 64, 8, 8}, f32, device), g6 = Tensor::empty({512, 64, 6, 6}, f32, device);
    bench(dev, "pad 2 64x8x8", g8.pad({{0, 0}, {0, 0}, {2, 2}, {2, 2}}), 4.0 * 512 * 64 * (64 + 144), "GB/s",
          repeat);
    bench(dev, "pad 2 64x6x6", g6.pad({{0, 0}, {0, 0}, {2, 2}, {2, 2}}), 4.0 * 512 * 64 * (36 + 100), "GB/s",
          repeat);
  }
  {
    // batchnorm's variance over (N, H, W) after its mean
    Tensor x = Tensor::empty({512, 32, 20, 20}, f32, device), mu = Tensor::empty({1, 32, 1, 1}, f32, device);
    Tensor d = x.relu() - mu;
    bench(dev, "bn var 32x20x20", (d * d).sum({0, 2, 3}), 4.0 * 512 * 32 * 400, "GB/s", repeat);
    bench(dev, "maxpool 32x20x20", x.max_pool2d(2), 4.0 * 512 * 32 * (400 + 100), "GB/s", repeat);
    bench(dev, "bn+maxpool 32x20x20", (d * mu + mu).max_pool2d(2), 4.0 * 512 * 32 * (400 + 100), "GB/s",
          repeat);
  }
  const int64_t m = 16 << 20;
  Tensor a = Tensor::empty({m}, f32, device), b = Tensor::empty({m}, f32, device);
  bench(dev, "elementwise 16M", ((a * b + a) * 0.5f).relu(), 3.0 * 4 * m, "GB/s", repeat);
  bench(dev, "sum 16M", a.sum(), 4.0 * m, "GB/s", repeat);
  bench(dev, "sum axis=1 4096x4096", a.reshape({4096, 4096}).sum({1}), 4.0 * m, "GB/s", repeat);
  return 0;
}
