#pragma once
// ggml's quantized blocks as tensor ops. A weight stays in memory as quantized bytes and its dequantization
// is a lazy elementwise expression over them, so the scheduler fuses it into the kernel that reads it: a
// matmul reads Q4_0's 4.5 bits a weight, never a float32 copy. Block layouts are ggml's (ggml-common.h):
// Q4_0, Q8_0, Q4_K, Q6_K, plus the plain F32/F16/BF16.
//
// Two layouts: the file's rows of blocks (`dequantize`, for the embedding rows gathered per token), and a
// weight packed for a matmul (`Weight::pack`): each field of the blocks split out and transposed so the
// output features are the contiguous axis, as a (in, out) float matrix is. The generated matmul then loads
// a vector of outputs' quantized values at a time instead of gathering bytes from rows far apart (llama.cpp
// repacks its CPU weights for the same reason).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "nn/gguf.hpp"
#include "tensor/tensor.hpp"

namespace tg::llm {

// One weight as the file stores it, and once packed, as the matmuls read it.
struct Weight {
  Tensor data;       // raw blocks: uint8 (*rows, bytes per row); a plain type: the tensor itself
  std::string type;  // ggml's name: "F32", "F16", "BF16", "Q4_0", "Q8_0", "Q4_K", "Q6_K"
  Shape shape;       // the logical shape, PyTorch order (out_features, in_features) for a linear layer
  std::vector<Tensor> packed;  // after pack(): the fields, realized, output features last

  static Weight from_gguf(const nn::GGUFFile& f, const std::string& name);  // FormatError when missing
  bool defined() const { return data.defined(); }
  bool quantized() const;
  Tensor dequantize() const;  // float32 of shape, lazy, from data
  // Splits a 2-d weight into its transposed fields and realizes them; data is dropped (tensors still
  // holding it keep it). Returns the tensors to realize, to pack many weights in one realize.
  std::vector<Tensor> pack();
  // float32 (in, out) from the packed fields: lazy, or with store computed into memory (in strips).
  Tensor dequantize_t(bool store = false) const;
  // x @ W^T (+ bias), float32; the dequantization runs inside the product's kernel. Needs pack().
  Tensor linear(const Tensor& x, const Tensor& bias = Tensor()) const;
  int64_t nbytes() const;  // what the weight takes in memory (its packed fields once packed)
};

// blocks: uint8 (*rows, bytes per row) of ggml type `type`; returns float32 (*rows, elements per row).
Tensor dequantize(const Tensor& blocks, std::string_view type);
// Elements and bytes per block of a block type (ValueError for another).
std::pair<int64_t, int64_t> block_size(std::string_view type);

}  // namespace tg::llm
