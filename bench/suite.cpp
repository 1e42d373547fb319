// The benchmark suite's workloads (W1..W8) on the default device (DEV picks another). Prints one
// `key value` line per figure; bench/suite.py runs it next to PyTorch and prints the table.
//   suite [--only W1,W3] [--quick] [--dump DIR] [--dram N]   (--dump writes results as raw float32 for the
//   checks; --dram adds W1 and W3 at N elements)
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "apps/tg/mnist_model.hpp"
#include "bench/cpu_time.hpp"
#include "bench/transformer_block.hpp"
#include "engine/jit.hpp"
#include "nn/datasets.hpp"
#include "nn/layers.hpp"
#include "nn/losses.hpp"
#include "nn/lr_scheduler.hpp"
#include "nn/optim.hpp"
#include "runtime/stats.hpp"
#include "schedule/schedule.hpp"
#include "tensor/realize.hpp"
#include "tensor/tensor.hpp"

using tg::Tensor;

namespace {

using Clock = std::chrono::steady_clock;
std::string only, dump_dir;
bool quick = false;

bool wanted(const char* w) {
  return only.empty() || ("," + only + ",").find(fmt::format(",{},", w)) != only.npos;
}
int reps(int full) { return quick ? std::max(2, full / 3) : full; }
using tg::bench::cpu_seconds;
double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Best of `n` timed runs after one warm-up run; *cpu (when given) gets the least CPU time of one run.
double best_of(int n, const std::function<void()>& f, double* cpu = nullptr) {
  f();
  double best = 1e30, best_cpu = 1e30;
  for (int i = 0; i < n; i++) {
    auto t0 = Clock::now();
    double c0 = cpu_seconds();
    f();
    best = std::min(best, seconds_since(t0));
    best_cpu = std::min(best_cpu, cpu_seconds() - c0);
  }
  if (cpu) *cpu = best_cpu;
  return best;
}

// The process's peak resident memory (VmHWM; getrusage's maxrss keeps the parent's across fork and exec).
double peak_rss_mb() {
  std::ifstream f("/proc/self/status");
  for (std::string line; std::getline(f, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024;
  return 0;
}

void out(const std::string& key, double v) {
  fmt::print("{} {:.6g}\n", key, v);
  std::fflush(stdout);
}

// Deterministic inputs suite.py reproduces bit for bit: lo + (hi - lo) * frac(hash(i)), in double, then
// float.
std::vector<float> pattern(int64_t n, uint64_t seed, double lo, double hi) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; i++) {
    uint64_t h = ((static_cast<uint64_t>(i) + seed * 1000003u) * 2654435761u) & 0xffffffffu;
    v[static_cast<size_t>(i)] = static_cast<float>(lo + (hi - lo) * (static_cast<double>(h) / 4294967296.0));
  }
  return v;
}
Tensor input(tg::Shape shape, uint64_t seed, double lo = -1, double hi = 1) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return Tensor(pattern(n, seed, lo, hi), shape).realize();
}

void dump(const std::string& name, const Tensor& t) {
  if (dump_dir.empty()) return;
  std::vector<float> v = t.to_vector<float>();
  std::ofstream(dump_dir + "/" + name + ".f32", std::ios::binary)
      .write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(float)));
}

// Every parameter gets pattern values (weights scaled by 1/sqrt(fan-in), 1-d ones around 1) so the
// same model in PyTorch starts from the same state; suite.py's set_params mirrors this.
void set_params(const tg::nn::Module& m, uint64_t seed) {
  for (auto& [name, p] : m.named_parameters()) {
    const tg::Shape& s = p.shape();
    double b = s.size() > 1 ? 1.0 / std::sqrt(static_cast<double>(p.numel() / s[0])) : 0.1;
    double c = s.size() > 1 ? 0.0 : 1.0;
    Tensor(p).assign(Tensor(pattern(p.numel(), seed++, c - b, c + b), s)).realize();
  }
}

// W1 and W3 at 16M elements, and at --dram N elements (arrays several times the last-level cache, from
// bench/probe): the second set measures DRAM, where the first may fit in a large cache.
int64_t dram_elems = 0;

// A strided sample of a big result, what the DRAM variants dump for the check (the whole would be GBs).
Tensor sample(const Tensor& y) { return y[tg::Index{tg::Slice{0, y.numel(), 4099}}]; }

void w1_at(int64_t n, const std::string& prefix) {
  Tensor x = input({n}, 1);
  for (bool with_exp : {false, true}) {
    Tensor y;
    double s = best_of(reps(6), [&] {
      y = ((x * 2 + 1).relu() * x) - 0.5f;
      if (with_exp) y = y.exp();
      y.realize();
    });
    std::string k = prefix + (with_exp ? ".exp" : ".noexp");
    out(k + ".gbps", 2.0 * 4 * static_cast<double>(n) / s / 1e9);
    dump(k, prefix == "W1" ? y : sample(y));
  }
}

void w1() {
  w1_at(int64_t{16} << 20, "W1");
  if (dram_elems > 0) w1_at(dram_elems, "W1.dram");
}

void w2() {
  for (int64_t n : {1024, 2048}) {
    Tensor a = input({n, n}, 2), b = input({n, n}, 3);
    Tensor c;
    double s = best_of(reps(n == 1024 ? 6 : 3), [&] { c = a.matmul(b).realize(); });
    out(fmt::format("W2.mm{}.gflops", n), 2.0 * static_cast<double>(n * n * n) / s / 1e9);
    dump(fmt::format("W2.mm{}", n), c);
  }
}

void w3_at(int64_t n, const std::string& prefix) {
  Tensor x = input({n}, 4, 0, 1), m = input({n / 4096, 4096}, 5, 0, 1);
  Tensor s0, s1;
  double t0 = best_of(reps(6), [&] { s0 = x.sum().realize(); });
  double t1 = best_of(reps(6), [&] { s1 = m.sum(1).realize(); });
  out(prefix + ".sum.gbps", 4.0 * static_cast<double>(n) / t0 / 1e9);
  out(prefix + ".sum1.gbps", 4.0 * static_cast<double>(n / 4096 * 4096) / t1 / 1e9);
  dump(prefix + ".sum", s0);
  dump(prefix + ".sum1", s1);
}

void w3() {
  w3_at(int64_t{16} << 20, "W3");
  if (dram_elems > 0) w3_at(dram_elems / 4096 * 4096, "W3.dram");
}

void w4() {
  Tensor x = input({32, 32, 28, 28}, 6), w = input({64, 32, 3, 3}, 7, -0.2, 0.2),
         g = input({32, 64, 28, 28}, 8);
  x.requires_grad_();
  w.requires_grad_();
  std::vector<Tensor> r;
  double cpu = 0;
  double s = best_of(
      reps(6),
      [&] {
        Tensor y = x.conv2d(w, Tensor(), 1, 1);
        r = y.gradient({x, w}, g);
        r.insert(r.begin(), y);
        Tensor::realize_all(r);
      },
      &cpu);
  double flops = 3 * 2.0 * 32 * 64 * 28 * 28 * 32 * 9;  // forward, grad input, grad weight
  out("W4.ms", s * 1e3);
  out("W4.cpu_ms", cpu * 1e3);  // both threads' CPU time: steadier than wall time on a busy machine
  out("W4.gflops", flops / s / 1e9);
  dump("W4.y", r[0]);
  dump("W4.gx", r[1]);
  dump("W4.gw", r[2]);
}

// The rest of a training step once the loss is built: backward, the optimizer's update and the loss, all
// realized. w5, w7 and w8 run it under tg::engine::jit, so from the third call on only its kernels are
// replayed.
Tensor minimize(tg::nn::optim::Optimizer& opt, Tensor loss) {
  opt.zero_grad();
  loss.backward();
  std::vector<Tensor> todo = opt.schedule_step();
  todo.push_back(loss);
  Tensor::realize_all(todo);
  opt.zero_grad();  // the lazy gradients would keep this step's activations alive
  return loss;
}

void w5() {
  const int64_t batch = 512;
  int steps = quick ? 3 : 5;  // call 1 runs, call 2 captures, calls 3+ replay
  auto model = tg::apps::fashion_mnist_cnn();
  set_params(*model, 100);
  tg::nn::optim::Adam opt(model->parameters(), 1e-3);
  std::vector<int32_t> labels(static_cast<size_t>(batch));
  for (size_t i = 0; i < labels.size(); i++) labels[i] = static_cast<int32_t>((i * 7) % 10);
  Tensor x = input({batch, 1, 28, 28}, 9, 0, 1), y = Tensor(labels, {batch}).realize();
  tg::engine::Jit step = tg::engine::jit([&](std::span<const Tensor> in) -> std::vector<Tensor> {
    model->train();
    return {minimize(opt, tg::nn::cross_entropy((*model)(in[0]), in[1]))};
  });
  double best = 1e30;
  for (int s = 0; s < steps; s++) {
    auto t0 = Clock::now();
    double cpu0 = cpu_seconds();
    uint64_t compiled0 = tg::runtime::runtime_stats().compiled;
    float l = step({x, y})[0].item<float>();
    double dt = seconds_since(t0);
    if (s == 0) {
      out("W5.first_step_s", dt);
      out("W5.first_step_cpu_s", cpu_seconds() - cpu0);
      out("W5.first_step_compiled", static_cast<double>(tg::runtime::runtime_stats().compiled - compiled0));
    }
    if (s >= 2) best = std::min(best, dt);
    if (s < 2) out(fmt::format("W5.loss{}", s + 1), l);
  }
  out("W5.ms", best * 1e3);
  out("W5.maxrss_mb", peak_rss_mb());  // the process: W5 runs alone in it
}

using Block = tg::bench::Block;

void w6() {
  Block blk(256, 4);
  uint64_t seed = 200;
  std::vector<Tensor> params;
  for (auto& l : blk.layers()) {
    set_params(*l, seed);
    seed += 2;
    for (Tensor& p : l->parameters()) params.push_back(p);
  }
  Tensor x = input({4, 64, 256}, 10);
  size_t kernels = 0;
  auto build = [&] {
    Tensor y = blk.forward(x);
    std::vector<Tensor> gs = (y * y).mean().gradient(params);
    std::vector<tg::UOpRef> roots{y.uop()};
    for (Tensor& g : gs) roots.push_back(g.uop());
    kernels = tg::engine::schedule_uops(roots).size();
  };
  // The same graph again hits the schedule cache (what a loop rebuilding its step sees); cold is the
  // scheduler itself.
  double s = best_of(reps(6), build);
  out("W6.build_schedule_ms", s * 1e3);
  out("W6.kernels", static_cast<double>(kernels));
  size_t cache_size = tg::sched::set_schedule_cache_size(0);
  out("W6.build_schedule_cold_ms", best_of(reps(6), build) * 1e3);
  double cpu0 = cpu_seconds();
  for (int i = 0; i < reps(6); i++) build();
  out("W6.build_schedule_cold_cpu_ms", (cpu_seconds() - cpu0) / reps(6) * 1e3);  // the mean, not the best
  tg::sched::set_schedule_cache_size(cache_size);
  {  // the values for the check
    Tensor y = blk.forward(x);
    std::vector<Tensor> gs = (y * y).mean().gradient({params[0]});
    Tensor::realize_all({y, gs[0]});
    dump("W6.y", y);
    dump("W6.gq", gs[0]);
  }
  // Realize-per-op overhead: a 1-element tensor updated in place, one launch per realize.
  const int n = 1000;
  Tensor t = Tensor(std::vector<float>{0.0f}, {1}).realize();
  t.assign(t + 1.0f).realize();
  uint64_t launched = tg::runtime::runtime_stats().launched;
  double best = 1e30;
  for (int r = 0; r < reps(3); r++) {
    auto t0 = Clock::now();
    for (int i = 0; i < n; i++) t.assign(t + 1.0f).realize();
    best = std::min(best, seconds_since(t0));
  }
  out("W6.tiny_us", best / n * 1e6);
  out("W6.tiny_updates", 1 + n * reps(3));
  out("W6.tiny_launches_per_op", static_cast<double>(tg::runtime::runtime_stats().launched - launched) /
                                     (n * static_cast<double>(reps(3))));
  out("W6.tiny_value", t.item<float>());
}

// A GPT-2-small layer (d=768, 12 heads, seq 256, batch 4): a training step (forward, loss (y*y).mean(),
// backward, AdamW) under tg::engine::jit, and inference (the forward alone) as tokens per second.
void w7() {
  const int64_t b = 4, t = 256, d = 768;
  Block blk(d, 12);
  uint64_t seed = 300;
  std::vector<Tensor> params;
  for (auto& l : blk.layers()) {
    set_params(*l, seed);
    seed += 2;
    for (Tensor& p : l->parameters()) params.push_back(p);
  }
  Tensor x = input({b, t, d}, 11);
  {  // inference first, on the initial weights (what the check compares)
    Tensor y;
    double s = best_of(reps(6), [&] { y = blk.forward(x).realize(); });
    out("W7.infer_tokens_per_s", static_cast<double>(b * t) / s);
    dump("W7.y", sample(y.reshape({b * t * d})));
  }
  tg::nn::optim::AdamW opt(params, 1e-4);
  tg::engine::Jit step = tg::engine::jit([&](std::span<const Tensor> in) -> std::vector<Tensor> {
    Tensor y = blk.forward(in[0]);
    return {minimize(opt, (y * y).mean())};
  });
  int steps = quick ? 4 : 6;
  double best = 1e30, best_cpu = 1e30;
  for (int i = 0; i < steps; i++) {
    auto t0 = Clock::now();
    double c0 = cpu_seconds();
    float l = step({x})[0].item<float>();
    double dt = seconds_since(t0), dc = cpu_seconds() - c0;
    if (i < 2) out(fmt::format("W7.loss{}", i + 1), l);
    if (i >= 2) best = std::min(best, dt), best_cpu = std::min(best_cpu, dc);
  }
  out("W7.train_ms", best * 1e3);
  out("W7.train_cpu_ms", best_cpu * 1e3);
  out("W7.maxrss_mb", peak_rss_mb());
}

// W8: time to 90% Fashion-MNIST test accuracy with the CNN, Adam and a one-cycle lr (max 3e-3 over 1500
// steps), batch 128, pattern weights and a fixed batch order that suite.py's peer repeats; the test set is
// evaluated every 100 steps from step 800 (that time counts). Prints the steps and seconds it took (-1 when
// 1500 did not).
constexpr int64_t kW8Steps = 1500, kW8Batch = 128, kW8Every = 100, kW8FirstEval = 800;

// Row j of the global batch order: a fixed permutation of the 60000 training images.
int64_t w8_row(int64_t j) { return (j * 7919 + 13) % 60000; }

Tensor w8_images(const std::vector<uint8_t>& x, int64_t begin, int64_t n, bool train) {
  std::vector<float> v(static_cast<size_t>(n) * 784);
  for (int64_t r = 0; r < n; r++) {
    size_t src = static_cast<size_t>(train ? w8_row(begin + r) : begin + r) * 784;
    for (size_t i = 0; i < 784; i++) v[static_cast<size_t>(r) * 784 + i] = x[src + i] / 255.0f;
  }
  return Tensor(v, {n, 1, 28, 28});
}

void w8() {
  tg::nn::FashionMnist d = tg::nn::fashion_mnist({}, "INTERP");  // host bytes only
  std::vector<uint8_t> xtr = d.X_train.to_vector<uint8_t>(), ytr = d.Y_train.to_vector<uint8_t>(),
                       xte = d.X_test.to_vector<uint8_t>(), yte = d.Y_test.to_vector<uint8_t>();
  auto model = tg::apps::fashion_mnist_cnn();
  // PyTorch's default scale (weights within 1/sqrt(fan-in)) from the pattern, biases 0, batchnorm weights 1.
  uint64_t seed = 400;
  for (auto& [name, p] : model->named_parameters()) {
    const tg::Shape& sh = p.shape();
    double b = sh.size() > 1 ? 1.0 / std::sqrt(static_cast<double>(p.numel() / sh[0])) : 0.0;
    double c = sh.size() > 1 || name.ends_with("bias") ? 0.0 : 1.0;
    Tensor(p).assign(Tensor(pattern(p.numel(), seed++, c - b, c + b), sh)).realize();
  }
  tg::nn::optim::Adam opt(model->parameters(), 3e-3);
  tg::nn::optim::OneCycleLR sched(opt, 3e-3, kW8Steps);
  tg::engine::Jit step = tg::engine::jit([&](std::span<const Tensor> in) -> std::vector<Tensor> {
    return {minimize(opt, tg::nn::cross_entropy((*model)(in[0]), in[1]))};
  });
  auto t0 = Clock::now();
  double acc = 0;
  int64_t reached = -1;
  for (int64_t s = 1; s <= kW8Steps && reached < 0; s++) {
    std::vector<int32_t> y(kW8Batch);
    for (int64_t r = 0; r < kW8Batch; r++)
      y[static_cast<size_t>(r)] = ytr[static_cast<size_t>(w8_row((s - 1) * kW8Batch + r))];
    model->train();
    step({w8_images(xtr, (s - 1) * kW8Batch, kW8Batch, true), Tensor(y, {kW8Batch})})[0].realize();
    sched.step();
    if (s < kW8FirstEval || s % kW8Every != 0) continue;
    model->eval();
    int64_t right = 0;
    for (int64_t b = 0; b < 10000; b += 1000) {
      std::vector<int32_t> p = (*model)(w8_images(xte, b, 1000, false)).argmax(-1).to_vector<int32_t>();
      for (size_t i = 0; i < p.size(); i++) right += p[i] == yte[static_cast<size_t>(b) + i];
    }
    acc = static_cast<double>(right) / 10000;
    if (acc >= 0.9) reached = s;
  }
  out("W8.steps", static_cast<double>(reached));
  out("W8.seconds", reached > 0 ? seconds_since(t0) : -1);
  out("W8.accuracy", acc);
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    if (a == "--quick")
      quick = true;
    else if (a == "--only" && i + 1 < argc)
      only = argv[++i];
    else if (a == "--dump" && i + 1 < argc)
      dump_dir = argv[++i];
    else if (a == "--dram" && i + 1 < argc)
      dram_elems = std::stoll(argv[++i]);
    else {
      std::fprintf(stderr, "usage: suite [--only W1,W3] [--quick] [--dump DIR] [--dram ELEMENTS]\n");
      return 2;
    }
  }
  fmt::print("device {}\n", tg::engine::default_device_name());
  struct W {
    const char* name;
    void (*run)();
  };
  for (W w : {W{"W1", w1}, W{"W2", w2}, W{"W3", w3}, W{"W4", w4}, W{"W5", w5}, W{"W6", w6}, W{"W7", w7},
              W{"W8", w8}}) {
    if (!wanted(w.name)) continue;
    auto t0 = Clock::now();
    w.run();
    std::fprintf(stderr, "%s done in %.1f s\n", w.name, seconds_since(t0));
  }
  return 0;
}
