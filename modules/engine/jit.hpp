#pragma once
// tg::jit: capture the kernels a function launches once, then replay them without building graphs,
// scheduling or compiling (tinygrad's TinyJit).
//
//   auto step = tg::jit([&](std::span<const Tensor> in) -> std::vector<Tensor> { ... return {loss}; });
//   for (...) Tensor loss = step({x, y})[0];
//
// Call 1 runs fn (warm-up: kernels compile, lazily created state is realized; JitOptions::warmup = false
// skips it and records call 1). Call 2 runs fn and records
// every kernel launch and copy of the realizes inside it. Calls 3+ replay the record without calling fn:
// the inputs' buffers take the place of the captured inputs; every other buffer fn touched that is still
// held by a tensor (parameters, optimizer state, a learning-rate tensor) stays bound, so assigns to it
// update it in place. Buffers only the captured kernels use share memory where their lifetimes allow.
// An input over several devices (Tensor::shard) is bound part by part, one buffer per device.
//
// What a replay cannot repeat: host work inside fn (reading values with item(), new host data, numbers
// baked into the graph) happens at capture only. Results are the captured output tensors, realized and
// without autograd history; each replay writes their buffers again, so copy a result you want to keep.
// JIT=0 runs fn on every call.
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <span>
#include <vector>

#include "tensor/tensor.hpp"

namespace tg::engine {

struct JitOptions {
  // Captures kept, one per input signature (shapes, dtypes, devices). With 1, an input that differs from
  // the captured one is an error; with more, a new signature is captured on its first call.
  int max_captures = 1;
  // false: call 1 already captures (no warm-up run). For a function whose lazy state is realized before
  // its first call (a model's weights and caches): the warm-up would only repeat the capture's work.
  bool warmup = true;
};

// Sizes of the last capture, for DEBUG output and tests.
struct JitInfo {
  size_t launches = 0;             // kernels and copies replayed per call
  int64_t intermediate_bytes = 0;  // buffers only the captured kernels use, one allocation each
  int64_t planned_bytes = 0;       // the same after sharing memory by lifetime
  size_t intermediates = 0, planned_buffers = 0;  // buffers before and after sharing
  bool graph = false;  // replays run as one recorded graph of the device (sdk/graph.hpp; JIT=2 turns it off)
};

class Jit {
 public:
  using Fn = std::function<std::vector<Tensor>(std::span<const Tensor>)>;
  explicit Jit(Fn fn, JitOptions opts = {});
  ~Jit();
  Jit(Jit&&) noexcept;
  Jit& operator=(Jit&&) noexcept;

  // Inputs are realized first; each must be defined and a distinct buffer.
  std::vector<Tensor> operator()(std::span<const Tensor> inputs);
  std::vector<Tensor> operator()(std::initializer_list<Tensor> inputs) {
    return (*this)(std::span<const Tensor>(inputs.begin(), inputs.size()));
  }

  size_t calls() const;     // calls so far
  size_t captures() const;  // input signatures captured
  JitInfo info() const;     // of the most recent capture
  void reset();             // forgets every capture: the next call warms up again

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

inline Jit jit(Jit::Fn fn, JitOptions opts = {}) { return Jit(std::move(fn), opts); }

}  // namespace tg::engine

// The JIT is front-end API (tinygrad exports TinyJit at its top level too): tg::jit, tg::Jit.
namespace tg {
using engine::jit;
using engine::Jit;
using engine::JitOptions;
}  // namespace tg
