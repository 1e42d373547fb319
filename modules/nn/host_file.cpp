#include "nn/host_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "base/error.hpp"

namespace tg::nn::detail {

HostFile::HostFile(const std::filesystem::path& path, std::string_view op) : path_(path.string()), op_(op) {
  // O_NONBLOCK: opening a FIFO would otherwise wait for a writer before fstat could refuse it
  fd_ = ::open(path_.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd_ < 0) throw ValueError(op_, fmt::format("cannot open '{}': {}", path_, std::strerror(errno)));
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd_);
    throw ValueError(op_, fmt::format("'{}' is not a regular file", path_));
  }
  ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) & ~O_NONBLOCK);
  size_ = static_cast<uint64_t>(st.st_size);
}

HostFile::~HostFile() {
  if (fd_ >= 0) ::close(fd_);
}

size_t HostFile::read_at(uint64_t offset, std::span<std::byte> dst) const {
  size_t done = 0;
  while (done < dst.size()) {
    ssize_t got = ::pread(fd_, dst.data() + done, std::min<size_t>(dst.size() - done, size_t{1} << 30),
                          static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw ValueError(op_, fmt::format("cannot read '{}': {}", path_, std::strerror(errno)));
    if (got == 0) break;
    done += static_cast<size_t>(got);
  }
  return done;
}

std::vector<std::byte> HostFile::read_all() const {
  std::vector<std::byte> bytes(size_);
  if (read_at(0, bytes) != bytes.size()) throw FormatError(op_, "the file shrank while read");
  return bytes;
}

int HostFile::release() {
  int fd = fd_;
  fd_ = -1;
  return fd;
}

}  // namespace tg::nn::detail
