// onnx: the protobuf read of a model (tensors inline, every attribute kind, sub-graphs) and the runner's
// checks (unsupported operators, producers, cycles), up to a runnable graph.
#include <span>

#include "base/error.hpp"
#include "onnx/runner.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    tg::onnx::Model m = tg::onnx::parse_model(std::as_bytes(std::span(data, size)));
    tg::onnx::Runner r(std::move(m));
  } catch (const tg::Error&) {
  }
  return 0;
}
