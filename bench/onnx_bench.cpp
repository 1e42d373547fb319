// One ONNX model on .npy inputs, run repeatedly: each call builds the lazy graph, schedules it and runs the
// kernels (compiled on the first call, then taken from the program cache). Prints one JSON line of times.
// (tg::jit cannot capture it yet: the shape inputs of Reshape and friends are read on the host.)
// Usage: onnx_bench MODEL ITERS OUT.npy name=a.npy [name=b.npy ...] (bench/onnx.py runs it beside
// onnxruntime and compares OUT.npy, the first output of the last call, with onnxruntime's).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <map>

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
  std::vector<double> ms;
  std::vector<tg::Tensor> out;
  for (int i = 0; i < iters + 2; i++) {
    auto t0 = std::chrono::steady_clock::now();
    out = step(inputs);
    (void)out[0].host_view();  // waits for the kernels (no copy where the device maps host memory)
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  tg::onnx::npy_save(out[0], argv[3]);
  std::vector<double> replays(ms.begin() + 1, ms.end());
  std::sort(replays.begin(), replays.end());
  fmt::print("{{\"first_ms\": {:.3f}, \"second_ms\": {:.3f}, \"best_ms\": {:.3f}, \"median_ms\": {:.3f}}}\n",
             ms[0], ms[1], replays.front(), replays[replays.size() / 2]);
  return 0;
}
