#pragma once
// ggml's quantized blocks as tensor ops. A weight stays in memory as its raw blocks (uint8 rows, from
// gguf_load with keep_quantized) and dequantize() is a lazy elementwise expression over those bytes, so the
// scheduler fuses it into the kernel that reads it: a matmul reads Q4_0's 4.5 bits a weight, never a
// float32 copy. Block layouts are ggml's (ggml-common.h): Q4_0, Q8_0, Q4_K, Q6_K, plus the plain types.
#include <cstdint>
#include <string>
#include <string_view>

#include "nn/gguf.hpp"
#include "tensor/tensor.hpp"

namespace tg::llm {

// One weight as the file stores it.
struct Weight {
  Tensor data;       // raw blocks: uint8 (*rows, bytes per row); a plain type: the tensor itself
  std::string type;  // ggml's name: "F32", "F16", "BF16", "Q4_0", "Q8_0", "Q4_K", "Q6_K"
  Shape shape;       // the logical shape, PyTorch order (out_features, in_features) for a linear layer

  static Weight from_gguf(const nn::GGUFFile& f, const std::string& name);  // FormatError when missing
  bool quantized() const;
  Tensor dequantize() const;  // float32 of shape, lazy
  // x @ W^T (+ bias): the dequantization runs inside the multiply-reduce, per element of the product.
  Tensor linear(const Tensor& x, const Tensor& bias = Tensor()) const;
  int64_t nbytes() const;  // what the weight takes in memory
};

// blocks: uint8 (*rows, bytes per row) of ggml type `type`; returns float32 (*rows, elements per row).
Tensor dequantize(const Tensor& blocks, std::string_view type);
// Elements and bytes per block of a type this file dequantizes (ValueError for another).
std::pair<int64_t, int64_t> block_size(std::string_view type);

}  // namespace tg::llm
