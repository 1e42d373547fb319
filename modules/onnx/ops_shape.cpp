#include "onnx/ops.hpp"

namespace tg::onnx {

void add_shape_ops(OpTable&) {}

}  // namespace tg::onnx
