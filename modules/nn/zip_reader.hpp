#pragma once
// Zip archives for the checkpoint readers (not installed): every entry's range is checked against the file
// before anything is read; errors are FormatError "[op] ...".
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tg::nn::detail {

using Bytes = std::span<const std::byte>;

struct ZipEntry {
  std::string name;
  uint16_t method = 0;
  uint64_t offset = 0, csize = 0, usize = 0;  // offset: of the data, after the local header
};

// The entries of the central directory, each checked to lie inside f with a supported method.
std::vector<ZipEntry> read_zip(Bytes f, std::string_view op);
// An entry's bytes: a view into f when stored, inflated into keep when deflated.
Bytes entry_bytes(std::string_view op, Bytes f, const ZipEntry& e, std::vector<std::byte>& keep);

}  // namespace tg::nn::detail
