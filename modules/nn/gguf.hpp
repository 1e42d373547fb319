#pragma once
// GGUF (llama.cpp's model files), versions 2 and 3: typed key/value metadata, then tensor infos and
// aligned tensor data (general.alignment, default 32). F32/F16/BF16/F64 and I8..I64 tensors load with their
// own dtype; Q4_0, Q8_0 and Q6_K blocks are dequantized to float32.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
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

struct GGUFFile {
  GGUFMetadata metadata;  // every key/value pair, general.alignment included
  StateDict tensors;      // shapes in PyTorch order: GGUF's ne[0] (the fastest dim) is the last dim
};

// The whole file is validated (counts and sizes against the file size first) before any tensor is
// created: malformed input throws FormatError "[gguf_load] ..." and returns nothing.
GGUFFile gguf_parse(std::span<const std::byte> data, std::string_view device = {});
GGUFFile gguf_load(const std::filesystem::path& path, std::string_view device = {});

}  // namespace tg::nn
