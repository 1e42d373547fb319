// One ONNX model on .npy inputs, run repeatedly, two ways: plain calls (each builds the lazy graph, and
// schedules it or takes the schedule from the cache, then runs the kernels) and under tg::jit (the kernels
// of one call captured, then replayed: what a serving loop or openpilot's compiled model does). Prints one
// JSON line of times. Usage: onnx_bench MODEL ITERS OUT.npy name=a.npy [name=b.npy ...] (bench/onnx.py
// runs it beside onnxruntime and compares OUT.npy, the first output of the last replay, with onnxruntime's).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <map>

#include "engine/jit.hpp"
#include "onnx/npy.hpp"
#include "onnx/runner.hpp"

int main(int argc, char** argv) {
  if (argc < 5) {
    fmt::print(stderr, "usage: onnx_bench MODEL ITERS OUT.npy name=a.npy [...]\n");
    return 2;
  }
  tg::onnx::Runner runner = tg::onnx::Runner::load(argv[1]);
  int iters = std::stoi(argv[2]);
  std::vector<std::string> names;
  std::vector<tg::Tensor> inputs;
  for (int i = 4; i < argc; i++) {
    std::string a = argv[i];
    size_t eq = a.find('=');
    names.push_back(a.substr(0, eq));
    inputs.push_back(tg::onnx::npy_load(a.substr(eq + 1), runner.device()).contiguous().realize());
  }
  std::string out_name = runner.outputs()[0].name;
  auto step = [&](std::span<const tg::Tensor> in) {
    std::map<std::string, tg::onnx::Value> feeds;
    for (size_t i = 0; i < in.size(); i++) feeds[names[i]] = in[i];
    return std::vector<tg::Tensor>{std::get<tg::Tensor>(runner.run(feeds).at(out_name)).realize()};
  };
  std::vector<tg::Tensor> out;
  auto time = [&](auto&& fn, int n) {
    std::vector<double> ms;
    for (int i = 0; i < n; i++) {
      auto t0 = std::chrono::steady_clock::now();
      out = fn(inputs);
      (void)out[0].host_view();  // waits for the kernels (no copy where the device maps host memory)
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    return ms;
  };
  std::vector<double> plain = time(step, iters + 2);
  tg::Jit jitted = tg::jit(step);
  std::vector<double> jit = time(jitted, iters + 2);  // warm-up, capture, then replays
  tg::onnx::npy_save(out[0], argv[3]);
  auto best = [](std::vector<double> v, size_t skip) { return *std::min_element(v.begin() + skip, v.end()); };
  fmt::print("{{\"first_ms\": {:.3f}, \"second_ms\": {:.3f}, \"best_ms\": {:.3f}, \"jit_best_ms\": {:.3f}, "
             "\"jit_launches\": {}}}\n",
             plain[0], plain[1], best(plain, 1), best(jit, 2), jitted.info().launches);
  return 0;
}
