#include "onnx/ops.hpp"

namespace tg::onnx {

void add_nn_ops(OpTable&) {}

}  // namespace tg::onnx
