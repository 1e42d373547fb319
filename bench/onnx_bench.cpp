// One ONNX model on .npy inputs, called repeatedly through tg::jit (the first call builds and compiles, the
// second captures, the rest replay): prints one JSON line of the first call's and the replays' times.
// Usage: onnx_bench MODEL ITERS name=a.npy [name=b.npy ...] (bench/onnx.py runs it beside onnxruntime).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <map>

#include "engine/jit.hpp"
#include "onnx/npy.hpp"
#include "onnx/runner.hpp"

int main(int argc, char** argv) {
  if (argc < 4) {
    fmt::print(stderr, "usage: onnx_bench MODEL ITERS name=a.npy [...]\n");
    return 2;
  }
  tg::onnx::Runner runner = tg::onnx::Runner::load(argv[1]);
  int iters = std::stoi(argv[2]);
  std::vector<std::string> names;
  std::vector<tg::Tensor> inputs;
  for (int i = 3; i < argc; i++) {
    std::string a = argv[i];
    size_t eq = a.find('=');
    names.push_back(a.substr(0, eq));
    inputs.push_back(tg::onnx::npy_load(a.substr(eq + 1), runner.device()).contiguous().realize());
  }
  std::string out_name = runner.outputs()[0].name;
  auto step = tg::jit([&](std::span<const tg::Tensor> in) {
    std::map<std::string, tg::onnx::Value> feeds;
    for (size_t i = 0; i < in.size(); i++) feeds[names[i]] = in[i];
    return std::vector<tg::Tensor>{std::get<tg::Tensor>(runner.run(feeds).at(out_name))};
  });
  std::vector<double> ms;
  for (int i = 0; i < iters + 2; i++) {
    auto t0 = std::chrono::steady_clock::now();
    std::vector<tg::Tensor> out = step(inputs);
    (void)out[0].host_view();  // waits for the kernels (no copy where the device maps host memory)
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::vector<double> replays(ms.begin() + 2, ms.end());
  std::sort(replays.begin(), replays.end());
  fmt::print(
      "{{\"first_ms\": {:.3f}, \"capture_ms\": {:.3f}, \"best_ms\": {:.3f}, \"median_ms\": {:.3f}, "
      "\"launches\": {}}}\n",
      ms[0], ms[1], replays.front(), replays[replays.size() / 2], step.info().launches);
  return 0;
}
