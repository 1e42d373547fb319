#pragma once
// safetensors: save and load named tensors in the Hugging Face format (an 8-byte little-endian header
// size, a JSON header of dtype/shape/data_offsets and optional __metadata__, then row-major data).
#include <cstddef>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tensor/tensor.hpp"

namespace tg::nn {

using StateDict = std::map<std::string, Tensor>;
using Metadata = std::map<std::string, std::string>;

struct SafeTensors {
  StateDict tensors;
  Metadata metadata;
};

// The file's bytes: tensors ordered by element size (largest first, then name) so each one is aligned.
std::vector<std::byte> safe_serialize(const StateDict& tensors, const Metadata& metadata = {});
// Writes a temporary file next to path and renames it over path, so a failure never leaves half a file.
void safe_save(const StateDict& tensors, const std::filesystem::path& path, const Metadata& metadata = {});

// Validates the whole file before creating any tensor; malformed input throws FormatError
// "[safe_load] ..." and returns nothing. Tensors go to device (empty = the default device).
SafeTensors safe_parse(std::span<const std::byte> data, std::string_view device = {});
StateDict safe_load(std::span<const std::byte> data, std::string_view device = {});
StateDict safe_load(const std::filesystem::path& path, std::string_view device = {});
Metadata safe_load_metadata(const std::filesystem::path& path);

// The safetensors dtype name ("F32", "BF16", "U8", "BOOL", ...) of d; DTypeError if it has none.
std::string_view safe_dtype_name(DType d);

}  // namespace tg::nn
