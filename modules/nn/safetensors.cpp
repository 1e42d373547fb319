// safetensors save/load: header validation follows the reference implementation (contiguous offsets from
// 0 with no holes or overlaps, sizes matching shape * itemsize, no trailing data).
#include "nn/safetensors.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cerrno>
#include <cstring>
#include <optional>
#include <unordered_set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "nn/host_bytes.hpp"
#include "nn/host_file.hpp"

namespace tg::nn {

static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian");

namespace {

using json = nlohmann::json;
constexpr uint64_t kMaxHeader = 100'000'000;  // the reference refuses larger headers too

constexpr std::array<std::pair<std::string_view, DType>, 15> kDTypes{{
    {"F64", dtypes::float64},
    {"F32", dtypes::float32},
    {"F16", dtypes::float16},
    {"BF16", dtypes::bfloat16},
    {"I64", dtypes::int64},
    {"I32", dtypes::int32},
    {"I16", dtypes::int16},
    {"I8", dtypes::int8},
    {"U64", dtypes::uint64},
    {"U32", dtypes::uint32},
    {"U16", dtypes::uint16},
    {"U8", dtypes::uint8},
    {"BOOL", dtypes::bool_},
    {"F8_E4M3", dtypes::fp8e4m3},
    {"F8_E5M2", dtypes::fp8e5m2},
}};

std::optional<DType> dtype_from_name(std::string_view name) {
  for (const auto& [n, d] : kDTypes)
    if (n == name) return d;
  return std::nullopt;
}

FormatError safe_error(std::string_view what) { return FormatError("safe_load", what); }

struct Entry {
  std::string name;
  DType dtype;
  Shape shape;
  uint64_t begin = 0, end = 0;
};

struct Header {
  std::vector<Entry> entries;  // sorted by data offset
  Metadata metadata;
};

uint64_t read_u64_le(std::span<const std::byte> data) {
  uint64_t n = 0;
  std::memcpy(&n, data.data(), sizeof(n));
  return n;
}

// nlohmann's parser would merge repeated keys and nest without limit (its dump() recurses): this SAX pass
// rejects both first, in one linear pass with a hash set per level that the reference checks.
class HeaderChecker : public nlohmann::json_sax<json> {
 public:
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return open(); }
  bool start_array(std::size_t) override { return open(); }
  bool end_object() override { return --depth_, true; }
  bool end_array() override { return --depth_, true; }
  bool key(string_t& k) override {
    if (depth_ == 1) {  // tensor names (the reference rejects a repeated __metadata__; we reject any repeat)
      if (!names_.insert(k).second)
        throw safe_error(k == "__metadata__" ? std::string("header has '__metadata__' twice")
                                             : fmt::format("header names tensor '{}' twice", k));
      entry_ = k;
    } else if (depth_ == 2 && entry_ != "__metadata__" && !fields_.insert(k).second) {
      throw safe_error(fmt::format("tensor '{}': field '{}' appears twice", entry_, k));
    }
    return true;
  }
  bool parse_error(std::size_t byte, const std::string&, const nlohmann::detail::exception&) override {
    throw safe_error(fmt::format("header is not valid JSON (error at byte {})", byte));
  }

 private:
  static constexpr int kMaxDepth = 127;  // the reference's serde_json accepts 127 nested containers
  bool open() {
    if (++depth_ > kMaxDepth)
      throw safe_error(fmt::format("header nests JSON deeper than {} levels", kMaxDepth));
    if (depth_ == 2) fields_.clear();
    return true;
  }
  int depth_ = 0;
  std::string entry_;
  std::unordered_set<std::string> names_, fields_;
};

// Header bytes -> parsed JSON, checked by HeaderChecker first.
json parse_json(std::string_view text) {
  if (text.empty() || text.front() != '{') throw safe_error("header does not start with '{'");
  // nlohmann stops at a NUL as at the end of the input; the reference rejects any NUL in the header
  if (size_t nul = text.find('\0'); nul != std::string_view::npos)
    throw safe_error(fmt::format("header has a NUL byte at byte {}", nul));
  HeaderChecker checker;
  json::sax_parse(text, &checker);
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    throw safe_error(fmt::format("header is not valid JSON (error at byte {})", e.byte));
  }
  if (!j.is_object()) throw safe_error("header is not a JSON object");
  return j;
}

// A value for an error message: its JSON, cut short if long.
std::string excerpt(const json& v) {
  std::string s = v.dump();
  return s.size() <= 64 ? s : s.substr(0, 60) + " ...";
}

uint64_t non_negative(const json& v, std::string_view name, std::string_view field) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer())
    throw safe_error(fmt::format("tensor '{}': {} has a negative value {}", name, field, v.get<int64_t>()));
  throw safe_error(fmt::format("tensor '{}': {} must hold integers, got {}", name, field, excerpt(v)));
}

const json& field(const json& info, std::string_view name, const char* key) {
  auto it = info.find(key);
  if (it == info.end()) throw safe_error(fmt::format("tensor '{}': missing field '{}'", name, key));
  return *it;
}

Entry parse_entry(const std::string& name, const json& info) {
  if (!info.is_object()) throw safe_error(fmt::format("tensor '{}': entry is not a JSON object", name));
  Entry e{name, {}, {}, 0, 0};
  const json& dt = field(info, name, "dtype");
  if (!dt.is_string()) throw safe_error(fmt::format("tensor '{}': dtype is not a string", name));
  std::optional<DType> d = dtype_from_name(dt.get<std::string>());
  if (!d) throw safe_error(fmt::format("tensor '{}': unknown dtype '{}'", name, dt.get<std::string>()));
  e.dtype = *d;
  const json& shape = field(info, name, "shape");
  if (!shape.is_array()) throw safe_error(fmt::format("tensor '{}': shape is not an array", name));
  // Like NumPy, the non-zero dims times the itemsize must fit in int64 even when another dim is 0: strides
  // are products of the later dims.
  uint64_t itemsize = e.dtype.itemsize(), nonzero_bytes = itemsize;
  bool empty = false;
  for (const json& s : shape) {
    uint64_t n = non_negative(s, name, "shape");
    empty |= n == 0;
    if (n != 0 && nonzero_bytes > static_cast<uint64_t>(INT64_MAX) / n)
      throw safe_error(fmt::format("tensor '{}': shape {} is too large", name, excerpt(shape)));
    nonzero_bytes *= std::max<uint64_t>(n, 1);
    e.shape.push_back(static_cast<int64_t>(n));
  }
  const json& off = field(info, name, "data_offsets");
  if (!off.is_array() || off.size() != 2)
    throw safe_error(fmt::format("tensor '{}': data_offsets must be [begin, end]", name));
  e.begin = non_negative(off[0], name, "data_offsets");
  e.end = non_negative(off[1], name, "data_offsets");
  if (e.end < e.begin)
    throw safe_error(
        fmt::format("tensor '{}': data_offsets [{},{}] end before they begin", name, e.begin, e.end));
  uint64_t nbytes = empty ? 0 : nonzero_bytes;
  if (e.end - e.begin != nbytes)
    throw safe_error(
        fmt::format("tensor '{}': data_offsets [{},{}] hold {} bytes but shape {} of {} needs {}", name,
                    e.begin, e.end, e.end - e.begin, excerpt(shape), dt.get<std::string>(), nbytes));
  return e;
}

Header parse_header(std::string_view text, uint64_t data_size) {
  json j = parse_json(text);
  Header h;
  for (const auto& [name, info] : j.items()) {
    if (name == "__metadata__") {
      if (!info.is_object()) throw safe_error("__metadata__ is not a JSON object");
      for (const auto& [k, v] : info.items()) {
        if (!v.is_string()) throw safe_error(fmt::format("__metadata__ value of '{}' is not a string", k));
        h.metadata[k] = v.get<std::string>();
      }
      continue;
    }
    h.entries.push_back(parse_entry(name, info));
  }
  std::sort(h.entries.begin(), h.entries.end(), [](const Entry& a, const Entry& b) {
    return std::tie(a.begin, a.end) < std::tie(b.begin, b.end);
  });
  uint64_t at = 0;
  const Entry* prev = nullptr;
  for (const Entry& e : h.entries) {
    if (e.begin < at)
      throw safe_error(fmt::format("tensor '{}': data_offsets [{},{}] overlap tensor '{}' ending at {}",
                                   e.name, e.begin, e.end, prev->name, at));
    if (e.begin > at)
      throw safe_error(fmt::format("tensor '{}': data_offsets [{},{}] leave a hole of {} bytes before it",
                                   e.name, e.begin, e.end, e.begin - at));
    if (e.end > data_size)
      throw safe_error(fmt::format("tensor '{}' ends at byte {} but the file has only {} bytes of data",
                                   e.name, e.end, data_size));
    at = e.end, prev = &e;
  }
  if (at != data_size)
    throw safe_error(fmt::format("tensors end at byte {} but the file has {} bytes of data", at, data_size));
  return h;
}

// The header size from the file's first 8 bytes (of total), checked against the limit and the file.
uint64_t header_size(std::span<const std::byte> first, uint64_t total) {
  if (total < 8)
    throw safe_error(fmt::format("file is {} bytes, too short for the 8-byte header size", total));
  uint64_t n = read_u64_le(first);
  if (n > kMaxHeader)
    throw safe_error(fmt::format("header size {} is larger than the limit {}", n, kMaxHeader));
  if (n > total - 8)
    throw safe_error(
        fmt::format("header size {} is larger than the file ({} bytes after the size)", n, total - 8));
  return n;
}

// The header of a file, read and checked before any of its data.
struct FileHeader {
  uint64_t data_start;
  Header header;
};
FileHeader read_header(const detail::HostFile& f) {
  std::array<std::byte, 8> first{};
  f.read_at(0, first);
  uint64_t n = header_size(first, f.size());
  std::string text(n, '\0');
  if (f.read_at(8, std::as_writable_bytes(std::span(text))) != n)
    throw safe_error("the file shrank while read");
  return {8 + n, parse_header(text, f.size() - 8 - n)};
}

}  // namespace

std::string_view safe_dtype_name(DType d) {
  for (const auto& [n, dt] : kDTypes)
    if (dt == d) return n;
  throw DTypeError("safe_save", fmt::format("safetensors has no dtype for {}", d.name()));
}

std::vector<std::byte> safe_serialize(const StateDict& tensors, const Metadata& metadata) {
  std::vector<std::pair<std::string, Tensor>> order(tensors.begin(), tensors.end());
  for (const auto& [name, t] : order) {
    if (!t.defined()) throw ValueError("safe_save", fmt::format("tensor '{}' is undefined", name));
    if (name == "__metadata__")
      throw ValueError("safe_save", "'__metadata__' is reserved, not a tensor name");
    safe_dtype_name(t.dtype());
  }
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return a.second.dtype().itemsize() > b.second.dtype().itemsize();
  });
  std::vector<Tensor> all;
  for (const auto& kv : order) all.push_back(kv.second);
  Tensor::realize_all(all);  // lazy tensors run together
  json header = json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::vector<std::vector<std::byte>> blobs;
  uint64_t at = 0;
  for (const auto& [name, t] : order) {
    blobs.push_back(t.to_bytes());
    uint64_t end = at + blobs.back().size();
    header[name] = {{"dtype", std::string(safe_dtype_name(t.dtype()))},
                    {"shape", to_ints(t.shape())},
                    {"data_offsets", {at, end}}};
    at = end;
  }
  std::string text = header.dump();
  text.resize((text.size() + 7) / 8 * 8, ' ');  // pad so the data starts 8-byte aligned
  std::vector<std::byte> out(8 + text.size());
  uint64_t n = text.size();
  std::memcpy(out.data(), &n, 8);
  std::memcpy(out.data() + 8, text.data(), text.size());
  out.reserve(out.size() + at);
  for (const auto& b : blobs) out.insert(out.end(), b.begin(), b.end());
  return out;
}

void safe_save(const StateDict& tensors, const std::filesystem::path& path, const Metadata& metadata) {
  std::vector<std::byte> bytes = safe_serialize(tensors, metadata);
  std::filesystem::path tmp = path;
  static std::atomic<uint64_t> counter{0};  // distinct temporaries for concurrent saves to one path
  tmp += fmt::format(".tmp{}.{}", ::getpid(), counter++);
  auto fail = [&](std::string_view what, int err) {
    std::error_code ec;
    std::filesystem::remove(tmp, ec);
    return ValueError("safe_save",
                      fmt::format("cannot {} '{}': {}", what, path.string(), std::strerror(err)));
  };
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    throw ValueError("safe_save", fmt::format("cannot create '{}': {}", tmp.string(), std::strerror(errno)));
  auto close_and_fail = [&](std::string_view what) {
    int err = errno;  // before close() can change it
    ::close(fd);
    return fail(what, err);
  };
  for (size_t done = 0; done < bytes.size();) {
    ssize_t w = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) throw close_and_fail("write");
    done += static_cast<size_t>(w);
  }
  if (::fsync(fd) != 0) throw close_and_fail("sync");
  if (::close(fd) != 0) throw fail("close", errno);
  if (::rename(tmp.c_str(), path.c_str()) != 0) throw fail("rename onto", errno);
}

SafeTensors safe_parse(std::span<const std::byte> data, std::string_view device) {
  uint64_t n = header_size(data, data.size());
  std::string_view text(reinterpret_cast<const char*>(data.data() + 8), n);
  std::span<const std::byte> body = data.subspan(8 + n);
  Header h = parse_header(text, body.size());
  SafeTensors out;
  out.metadata = std::move(h.metadata);
  for (const Entry& e : h.entries)
    out.tensors.emplace(
        e.name, detail::tensor_from_bytes(body.subspan(e.begin, e.end - e.begin), e.dtype, e.shape, device));
  return out;
}

StateDict safe_load(std::span<const std::byte> data, std::string_view device) {
  return safe_parse(data, device).tensors;
}

// Reads one tensor at a time after the header is checked, so a bad file costs no memory and at most one
// tensor's bytes are held twice.
StateDict safe_load(const std::filesystem::path& path, std::string_view device) {
  detail::HostFile f(path, "safe_load");
  auto [start, h] = read_header(f);
  StateDict out;
  std::vector<std::byte> bytes;
  for (const Entry& e : h.entries) {
    bytes.resize(e.end - e.begin);
    if (f.read_at(start + e.begin, bytes) != bytes.size()) throw safe_error("the file shrank while read");
    out.emplace(e.name, detail::tensor_from_bytes(bytes, e.dtype, e.shape, device));
  }
  return out;
}

Metadata safe_load_metadata(const std::filesystem::path& path) {
  return read_header(detail::HostFile(path, "safe_load")).header.metadata;
}

}  // namespace tg::nn
