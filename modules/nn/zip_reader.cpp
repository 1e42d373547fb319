// Zip archives for the checkpoint readers: the central directory (no zip64), stored and deflated entries.
#include "nn/zip_reader.hpp"

#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include <fmt/format.h>

#include "base/error.hpp"

namespace tg::nn::detail {

namespace {

template <class T>
T load_le(Bytes b, uint64_t at) {
  T v{};
  std::memcpy(&v, b.data() + at, sizeof(T));
  return v;
}

}  // namespace

std::vector<ZipEntry> read_zip(Bytes f, std::string_view op) {
  auto bad = [op](std::string_view what) { return FormatError(op, what); };
  constexpr uint64_t kEocd = 22;
  if (f.size() < kEocd) throw bad(fmt::format("file is {} bytes, too short for a zip archive", f.size()));
  uint64_t lo = f.size() > kEocd + 65535 ? f.size() - kEocd - 65535 : 0;
  std::optional<uint64_t> eocd;
  for (uint64_t at = f.size() - kEocd + 1; at-- > lo;)
    if (load_le<uint32_t>(f, at) == 0x06054b50) {
      eocd = at;
      break;
    }
  if (!eocd) throw bad("no zip end-of-central-directory record (not a zip archive, or cut short)");
  uint64_t count = load_le<uint16_t>(f, *eocd + 10);
  uint64_t cd_size = load_le<uint32_t>(f, *eocd + 12), cd_off = load_le<uint32_t>(f, *eocd + 16);
  if (count == 0xffff || cd_size == 0xffffffff || cd_off == 0xffffffff)
    throw bad("zip64 archives (over 4 GiB or 65535 entries) are not supported");
  if (cd_off > *eocd || cd_size > *eocd - cd_off)
    throw bad(fmt::format("zip central directory [{}, +{}) lies outside the file", cd_off, cd_size));
  std::vector<ZipEntry> out;
  uint64_t at = cd_off, end = cd_off + cd_size;
  for (uint64_t k = 0; k < count; ++k) {
    if (end - at < 46 || load_le<uint32_t>(f, at) != 0x02014b50)
      throw bad(fmt::format("zip central directory entry {} is malformed", k));
    ZipEntry e;
    e.method = load_le<uint16_t>(f, at + 10);
    e.csize = load_le<uint32_t>(f, at + 20);
    e.usize = load_le<uint32_t>(f, at + 24);
    uint64_t nlen = load_le<uint16_t>(f, at + 28), xlen = load_le<uint16_t>(f, at + 30),
             clen = load_le<uint16_t>(f, at + 32), local = load_le<uint32_t>(f, at + 42);
    if (end - at - 46 < nlen + xlen + clen)
      throw bad(fmt::format("zip central directory entry {} is cut short", k));
    e.name.assign(reinterpret_cast<const char*>(f.data() + at + 46), nlen);
    at += 46 + nlen + xlen + clen;
    if (local > f.size() || f.size() - local < 30 || load_le<uint32_t>(f, local) != 0x04034b50)
      throw bad(fmt::format("zip entry '{}': local header at {} is missing", e.name, local));
    uint64_t data = local + 30 + load_le<uint16_t>(f, local + 26) + load_le<uint16_t>(f, local + 28);
    if (data > f.size() || e.csize > f.size() - data)
      throw bad(fmt::format("zip entry '{}': {} bytes at {} run past the end of the file ({} bytes)", e.name,
                            e.csize, data, f.size()));
    if (e.method != 0 && e.method != 8)
      throw bad(
          fmt::format("zip entry '{}': compression method {} is not supported (only stored and deflate)",
                      e.name, e.method));
    if (e.method == 0 && e.csize != e.usize)
      throw bad(fmt::format("zip entry '{}': stored entry has sizes {} and {}", e.name, e.csize, e.usize));
    // deflate expands at most ~1032x: a larger claimed size is a lie
    if (e.method == 8 && e.usize > e.csize * 1032 + 64)
      throw bad(fmt::format("zip entry '{}': claims {} bytes from {} compressed", e.name, e.usize, e.csize));
    e.offset = data;
    out.push_back(std::move(e));
  }
  return out;
}

// An entry's bytes: a view into the file when stored, inflated into keep when deflated. keep grows with the
// bytes actually inflated (not to the size the header claims), and must end at exactly that size.
Bytes entry_bytes(std::string_view op, Bytes f, const ZipEntry& e, std::vector<std::byte>& keep) {
  auto bad = [op](std::string_view what) { return FormatError(op, what); };
  Bytes raw = f.subspan(e.offset, e.csize);
  if (e.method == 0) return raw;
  keep.clear();
  z_stream z{};
  if (inflateInit2(&z, -MAX_WBITS) != Z_OK) throw bad("zlib could not start inflating");
  z.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(raw.data()));
  z.avail_in = static_cast<uInt>(raw.size());
  int rc = Z_OK;
  while (rc == Z_OK && keep.size() <= e.usize) {
    size_t have = keep.size(), step = std::min<uint64_t>(e.usize - have + 1, uint64_t{1} << 20);
    keep.resize(have + step);
    z.next_out = reinterpret_cast<Bytef*>(keep.data() + have);
    z.avail_out = static_cast<uInt>(step);
    rc = inflate(&z, Z_NO_FLUSH);
    keep.resize(have + step - z.avail_out);
    if (rc == Z_BUF_ERROR) break;  // no progress: the input ran out before the stream ended
  }
  inflateEnd(&z);
  if (rc != Z_STREAM_END || keep.size() != e.usize)
    throw bad(
        fmt::format("zip entry '{}': deflate data is corrupt or does not hold {} bytes", e.name, e.usize));
  return keep;
}

}  // namespace tg::nn::detail
