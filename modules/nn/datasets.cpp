// idx reader (through zlib's gzread, which also reads uncompressed files), Fashion-MNIST and BatchSampler.
#include "nn/datasets.hpp"

#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <climits>
#include <cstring>
#include <memory>
#include <numeric>
#include <random>

#include <fmt/format.h>

#include "base/env.hpp"
#include "base/error.hpp"
#include "nn/host_bytes.hpp"
#include "nn/host_file.hpp"

namespace tg::nn {

namespace {

struct GzCloser {
  void operator()(gzFile f) const { gzclose(f); }
};
using GzFile = std::unique_ptr<std::remove_pointer_t<gzFile>, GzCloser>;

std::optional<DType> idx_dtype(uint8_t code) {
  switch (code) {
    case 0x08:
      return dtypes::uint8;
    case 0x09:
      return dtypes::int8;
    case 0x0B:
      return dtypes::int16;
    case 0x0C:
      return dtypes::int32;
    case 0x0D:
      return dtypes::float32;
    case 0x0E:
      return dtypes::float64;
    default:
      return std::nullopt;
  }
}

class IdxReader {
 public:
  explicit IdxReader(const std::filesystem::path& path) : path_(path.string()) {
    detail::HostFile file(path, "read_idx");
    file_size_ = file.size();
    int fd = file.release();
    f_.reset(gzdopen(fd, "rb"));
    if (!f_) {
      ::close(fd);
      throw ValueError("read_idx", fmt::format("cannot open '{}': {}", path_, std::strerror(errno)));
    }
    gzbuffer(f_.get(), 1 << 17);
  }
  uint64_t file_size() const { return file_size_; }
  // Whether the file is read as is, not decompressed (valid after the first read).
  bool plain() const { return gzdirect(f_.get()) == 1; }
  // Reads up to n bytes; returns how many (fewer only at the end of the data).
  size_t read(std::byte* dst, size_t n) {
    size_t done = 0;
    while (done < n) {
      unsigned chunk = static_cast<unsigned>(std::min<size_t>(n - done, 1u << 30));
      int got = gzread(f_.get(), dst + done, chunk);
      if (got < 0) throw error();
      if (got == 0) break;
      done += static_cast<size_t>(got);
    }
    return done;
  }
  FormatError error() const {
    int code = 0;
    std::string_view msg = gzerror(f_.get(), &code);
    if (size_t at = msg.find(": "); msg.starts_with("<fd:") && at != msg.npos)
      msg.remove_prefix(at + 2);  // zlib names the descriptor gzdopen got
    return FormatError("read_idx", fmt::format("'{}': gzip data is corrupt: {}", path_, msg));
  }
  bool gzip_cut_short() const {
    int code = 0;
    gzerror(f_.get(), &code);
    return code == Z_BUF_ERROR;
  }
  FormatError bad(std::string_view what) const {
    return FormatError("read_idx", fmt::format("'{}': {}", path_, what));
  }

 private:
  std::string path_;
  uint64_t file_size_ = 0;
  GzFile f_;
};

// idx data is big-endian.
void to_native(std::vector<std::byte>& data, size_t itemsize) {
  if (itemsize == 1) return;
  for (size_t i = 0; i < data.size(); i += itemsize)
    std::reverse(data.begin() + i, data.begin() + i + itemsize);
}

std::filesystem::path find_file(const std::filesystem::path& dir, const std::string& name) {
  for (const std::string& candidate : {name + ".gz", name}) {
    std::error_code ec;  // anything there (a dangling link, a FIFO) is returned for read_idx to say why
    if (std::filesystem::symlink_status(dir / candidate, ec).type() !=
            std::filesystem::file_type::not_found &&
        !ec)
      return dir / candidate;
  }
  throw ValueError("fashion_mnist",
                   fmt::format("'{}' has no {}[.gz]; install the data set with `apt-get install "
                               "dataset-fashion-mnist` or set TG_FASHION_MNIST to the folder that holds it",
                               dir.string(), name));
}

}  // namespace

Tensor read_idx(const std::filesystem::path& path, std::string_view device) {
  IdxReader in(path);
  std::array<uint8_t, 4> magic{};
  if (in.read(reinterpret_cast<std::byte*>(magic.data()), 4) != 4)
    throw in.bad("too short for an idx header");
  std::optional<DType> dtype = idx_dtype(magic[2]);
  if (magic[0] != 0 || magic[1] != 0 || !dtype)
    throw in.bad(fmt::format("bad magic {:02x}{:02x}{:02x}{:02x}, not an idx file", magic[0], magic[1],
                             magic[2], magic[3]));
  if (magic[3] == 0) throw in.bad("has 0 dimensions");
  std::vector<uint8_t> raw(magic[3] * 4u);
  if (in.read(reinterpret_cast<std::byte*>(raw.data()), raw.size()) != raw.size())
    throw in.bad(fmt::format("truncated header: {} dimensions need {} bytes", magic[3], raw.size()));
  Shape shape;
  uint64_t numel = 1;
  for (size_t d = 0; d < magic[3]; d++) {
    uint64_t n = uint64_t{raw[4 * d]} << 24 | uint64_t{raw[4 * d + 1]} << 16 | uint64_t{raw[4 * d + 2]} << 8 |
                 uint64_t{raw[4 * d + 3]};
    if (n != 0 && numel > (uint64_t{1} << 40) / n)
      throw in.bad("dimensions describe more than 2^40 elements");
    numel *= n;
    shape.push_back(static_cast<int64_t>(n));
  }
  // The header is checked against the file before any memory is sized from it: exactly for a plain file;
  // a gzip file's data is read in growing pieces, so memory follows what the file really holds.
  size_t bytes = numel * dtype->itemsize();
  auto truncated = [&](size_t got) {
    return in.bad(fmt::format("truncated: the header says {} bytes of data, the file has {}{}", bytes, got,
                              in.gzip_cut_short() ? " (the gzip stream ends early)" : ""));
  };
  uint64_t header_bytes = 4 + raw.size();
  if (in.plain() && in.file_size() - header_bytes < bytes) throw truncated(in.file_size() - header_bytes);
  if (in.plain() && in.file_size() - header_bytes > bytes)
    throw in.bad(fmt::format("has data after the {} bytes its header describes", bytes));
  std::vector<std::byte> data;
  for (size_t got = 0; got < bytes;) {
    data.resize(in.plain() ? bytes : std::min(bytes, std::max<size_t>(2 * got, size_t{1} << 20)));
    got += in.read(data.data() + got, data.size() - got);
    if (got < data.size()) throw truncated(got);
  }
  std::byte extra{};
  if (in.read(&extra, 1) != 0)
    throw in.bad(fmt::format("has data after the {} bytes its header describes", bytes));
  // zlib reports a stream without its trailer only as "cut short"; its CRC was never checked
  if (in.gzip_cut_short()) throw in.bad("the gzip stream ends without its trailer (CRC and length)");
  to_native(data, dtype->itemsize());
  return detail::tensor_from_bytes(data, *dtype, shape, device);
}

FashionMnist fashion_mnist(std::optional<std::filesystem::path> dir, std::string_view device) {
  std::filesystem::path root = dir.value_or(std::filesystem::path(env::get("TG_FASHION_MNIST")));
  auto images = [&](const std::string& name) {
    std::filesystem::path p = find_file(root, name);
    Tensor t = read_idx(p, device);
    if (t.dtype() != dtypes::uint8 || t.ndim() != 3 || t.shape(1) != 28 || t.shape(2) != 28)
      throw FormatError("fashion_mnist", fmt::format("'{}' is not uint8 images of 28x28", p.string()));
    return t.reshape({t.shape(0), 1, 28, 28});
  };
  auto labels = [&](const std::string& name, int64_t n) {
    std::filesystem::path p = find_file(root, name);
    Tensor t = read_idx(p, device);
    if (t.dtype() != dtypes::uint8 || t.ndim() != 1 || t.shape(0) != n)
      throw FormatError("fashion_mnist", fmt::format("'{}' is not {} uint8 labels", p.string(), n));
    std::vector<uint8_t> v = t.to_vector<uint8_t>();  // a label >= 10 would index past the 10 classes
    auto bad = std::find_if(v.begin(), v.end(), [](uint8_t c) { return c >= 10; });
    if (bad != v.end())
      throw FormatError("fashion_mnist", fmt::format("'{}': label {} of image {} is not a class 0..9",
                                                     p.string(), *bad, bad - v.begin()));
    return t;
  };
  FashionMnist out;
  out.X_train = images("train-images-idx3-ubyte");
  out.Y_train = labels("train-labels-idx1-ubyte", out.X_train.shape(0));
  out.X_test = images("t10k-images-idx3-ubyte");
  out.Y_test = labels("t10k-labels-idx1-ubyte", out.X_test.shape(0));
  return out;
}

BatchSampler::BatchSampler(int64_t n, int64_t batch_size, bool shuffle, uint64_t seed, bool drop_last)
    : n_(n), batch_size_(batch_size), shuffle_(shuffle), drop_last_(drop_last), seed_(seed) {
  if (n < 0) throw ValueError("BatchSampler", fmt::format("needs n >= 0, got {}", n));
  if (batch_size <= 0)
    throw ValueError("BatchSampler", fmt::format("needs batch_size > 0, got {}", batch_size));
  set_epoch(0);
}

int64_t BatchSampler::size() const {
  return drop_last_ ? n_ / batch_size_ : (n_ + batch_size_ - 1) / batch_size_;
}

void BatchSampler::set_epoch(uint64_t epoch) {
  epoch_ = epoch;
  order_.resize(static_cast<size_t>(n_));
  std::iota(order_.begin(), order_.end(), int64_t{0});
  if (!shuffle_) return;
  // mt19937_64 and seed_seq are fully specified by the standard; std::shuffle and the distributions are
  // not, so Fisher-Yates with rejection sampling keeps the order identical across standard libraries.
  std::seed_seq seq{static_cast<uint32_t>(seed_), static_cast<uint32_t>(seed_ >> 32),
                    static_cast<uint32_t>(epoch), static_cast<uint32_t>(epoch >> 32)};
  std::mt19937_64 rng(seq);
  for (uint64_t i = order_.size(); i > 1; i--) {
    uint64_t limit = UINT64_MAX - UINT64_MAX % i, r = rng();
    while (r >= limit) r = rng();
    std::swap(order_[i - 1], order_[r % i]);
  }
}

std::vector<int64_t> BatchSampler::batch(int64_t i) const {
  if (i < 0 || i >= size())
    throw IndexError("BatchSampler", fmt::format("batch {} is out of range for {} batches", i, size()));
  auto first = order_.begin() + i * batch_size_;
  return {first, first + std::min(batch_size_, n_ - i * batch_size_)};
}

Tensor BatchSampler::indices(int64_t i, std::string_view device) const {
  std::vector<int64_t> b = batch(i);
  return Tensor(std::vector<int32_t>(b.begin(), b.end()), {}, std::nullopt, device);
}

}  // namespace tg::nn
