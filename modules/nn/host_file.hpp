#pragma once
// Regular files for nn's loaders (not installed): refused before any read when they are not regular files
// (a FIFO would block forever), then read piecewise so nothing is sized from a header before it is checked.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tg::nn::detail {

class HostFile {
 public:
  // ValueError "[op] cannot open 'path': why" or "[op] 'path' is not a regular file".
  HostFile(const std::filesystem::path& path, std::string_view op);
  ~HostFile();
  HostFile(const HostFile&) = delete;
  HostFile& operator=(const HostFile&) = delete;

  uint64_t size() const { return size_; }
  // Reads dst.size() bytes at offset; returns how many (fewer only at the end of the file).
  size_t read_at(uint64_t offset, std::span<std::byte> dst) const;
  // The whole file; FormatError "[op] the file shrank while read" when it ends early.
  std::vector<std::byte> read_all() const;
  // Hands the descriptor over (to zlib's gzdopen, which closes it).
  int release();

 private:
  int fd_ = -1;
  uint64_t size_ = 0;
  std::string path_, op_;
};

}  // namespace tg::nn::detail
