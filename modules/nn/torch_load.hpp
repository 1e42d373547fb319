#pragma once
// PyTorch checkpoints (.pt/.pth written by torch.save): a zip archive holding data.pkl, a pickle of
// containers and tensors, and one entry per storage. The pickle is interpreted, never executed: only the
// globals that rebuild tensors, storages and OrderedDicts are known, any other is refused by name.
#include <cstddef>
#include <filesystem>
#include <span>
#include <string_view>

#include "nn/safetensors.hpp"

namespace tg::nn {

// Tensors of a checkpoint by their path in the pickled object: dict keys and list/tuple indices joined by
// '.' ("model.fc.weight", "layers.0.bias"); a tensor at the top level is named "". Values other than tensors
// (ints, floats, strings, None) are checked and skipped. Views keep their values (strides and storage
// offsets are applied; tensors sharing a storage get a copy each). Zip entries may be stored or deflated.
// The whole file is validated before any tensor is created: malformed input throws FormatError
// "[torch_load] ..." and returns nothing. The legacy (pre-1.6, non-zip) format is refused with a message.
StateDict torch_parse(std::span<const std::byte> data, std::string_view device = {});
StateDict torch_load(const std::filesystem::path& path, std::string_view device = {});

}  // namespace tg::nn
