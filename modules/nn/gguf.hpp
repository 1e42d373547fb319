#pragma once
// GGUF (llama.cpp's model files), versions 2 and 3: typed key/value metadata, then tensor infos and
// aligned tensor data (general.alignment, default 32). F32/F16/BF16/F64 and I8..I64 tensors load with their
// own dtype; Q4_0, Q8_0, Q4_K and Q6_K blocks are dequantized to float32, or kept as their raw blocks.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "nn/safetensors.hpp"

namespace tg::nn {

// One metadata value: type says which member holds it (u for unsigned and bool, i for signed, f for
// floats, s for strings, array for arrays, whose items all have type array_type).
struct GGUFValue {
  enum class Type : uint32_t {
    UINT8 = 0,
    INT8 = 1,
    UINT16 = 2,
    INT16 = 3,
    UINT32 = 4,
    INT32 = 5,
    FLOAT32 = 6,
    BOOL = 7,
    STRING = 8,
    ARRAY = 9,
    UINT64 = 10,
    INT64 = 11,
    FLOAT64 = 12,
  };
  Type type = Type::UINT8;
  uint64_t u = 0;
  int64_t i = 0;
  double f = 0;
  std::string s;
  Type array_type = Type::UINT8;
  std::vector<GGUFValue> array;
};
using GGUFMetadata = std::map<std::string, GGUFValue>;

// How one tensor is stored in the file.
struct GGUFTensorInfo {
  std::string type;     // ggml's name: "F32", "Q4_0", "Q6_K", ...
  uint32_t ggml_type;   // ggml's number for it
  Shape shape;          // the logical shape, PyTorch order
  int64_t block_elems;  // elements per block (1 for plain types)
  int64_t block_bytes;  // bytes per block
  uint64_t offset;      // of its first byte in the file
  uint64_t nbytes;
  bool quantized() const { return block_elems > 1; }
};

struct GGUFOptions {
  // Quantized tensors as their raw blocks: uint8 of shape (*rows, bytes per row), for a model that
  // dequantizes inside its own kernels (llm::dequantize), instead of float32 copies.
  bool keep_quantized = false;
};

struct GGUFFile {
  GGUFMetadata metadata;  // every key/value pair, general.alignment included
  StateDict tensors;      // shapes in PyTorch order: GGUF's ne[0] (the fastest dim) is the last dim
  std::map<std::string, GGUFTensorInfo> infos;
  // gguf_load maps the file read-only: tensors on a device that reads host memory in place (CLANG) point
  // into it, and `bytes` stays valid while the mapping (held by those tensors too) lives.
  std::shared_ptr<const void> mapping;
  std::span<const std::byte> bytes;
};

// The whole file is validated (counts and sizes against the file size first) before any tensor is
// created: malformed input throws FormatError "[gguf_load] ..." and returns nothing.
GGUFFile gguf_parse(std::span<const std::byte> data, std::string_view device = {}, GGUFOptions opts = {});
GGUFFile gguf_load(const std::filesystem::path& path, std::string_view device = {}, GGUFOptions opts = {});
// The metadata and tensor infos only (a vocabulary file, a model's configuration): no tensor is made.
GGUFFile gguf_load_metadata(const std::filesystem::path& path);
GGUFFile gguf_parse_metadata(std::span<const std::byte> data);

}  // namespace tg::nn
