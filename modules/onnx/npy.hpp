#pragma once
// NumPy's .npy format (versions 1-3, little-endian, C order): how `tg onnx run` takes inputs and writes
// outputs. Malformed files are FormatErrors "[npy] ..." and nothing is half-read.
#include <cstddef>
#include <filesystem>
#include <span>
#include <vector>

#include "tensor/tensor.hpp"

namespace tg::onnx {

Tensor npy_parse(std::span<const std::byte> bytes, std::string_view device = {});
Tensor npy_load(const std::filesystem::path& path, std::string_view device = {});
std::vector<std::byte> npy_serialize(const Tensor& t);  // realizes t
void npy_save(const Tensor& t, const std::filesystem::path& path);

}  // namespace tg::onnx
