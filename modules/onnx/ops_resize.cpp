#include "onnx/ops.hpp"

namespace tg::onnx {

void add_resize_ops(OpTable&) {}

}  // namespace tg::onnx
