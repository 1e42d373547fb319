// Built without libonnx-dev: the reader says what to install; the runner and operators still build.
#include "base/error.hpp"
#include "onnx/graph.hpp"

namespace tg::onnx {
namespace {
[[noreturn]] void missing() {
  throw NotSupportedError("onnx",
                          "this build has no ONNX reader: install libonnx-dev and libprotobuf-dev, "
                          "then reconfigure");
}
}  // namespace

Model load_model(const std::filesystem::path&, std::string_view) { missing(); }
Model parse_model(std::span<const std::byte>, const std::filesystem::path&, std::string_view) { missing(); }
Tensor parse_tensor(std::span<const std::byte>, std::string_view) { missing(); }
Value parse_value(std::span<const std::byte>, const ValueInfo&, std::string_view) { missing(); }

}  // namespace tg::onnx
