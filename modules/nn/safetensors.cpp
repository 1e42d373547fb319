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
#include <fstream>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "nn/host_bytes.hpp"

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

FormatError bad(std::string_view what) { return FormatError("safe_load", what); }

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

// Header bytes -> parsed JSON; the reference also rejects duplicate names, which nlohmann would merge.
json parse_json(std::string_view text) {
  if (text.empty() || text.front() != '{') throw bad("header does not start with '{'");
  std::optional<std::string> duplicate;
  std::set<std::string> keys;
  json::parser_callback_t on_event = [&](int depth, json::parse_event_t event, json& parsed) {
    if (depth == 1 && event == json::parse_event_t::key && !keys.insert(parsed.get<std::string>()).second &&
        !duplicate)
      duplicate = parsed.get<std::string>();
    return true;
  };
  json j;
  try {
    j = json::parse(text, on_event);
  } catch (const json::parse_error& e) {
    throw bad(fmt::format("header is not valid JSON (error at byte {})", e.byte));
  }
  if (duplicate) throw bad(fmt::format("header names tensor '{}' twice", *duplicate));
  if (!j.is_object()) throw bad("header is not a JSON object");
  return j;
}

uint64_t non_negative(const json& v, std::string_view name, std::string_view field) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer())
    throw bad(fmt::format("tensor '{}': {} has a negative value {}", name, field, v.get<int64_t>()));
  throw bad(fmt::format("tensor '{}': {} must hold integers, got {}", name, field, v.dump()));
}

const json& field(const json& info, std::string_view name, const char* key) {
  auto it = info.find(key);
  if (it == info.end()) throw bad(fmt::format("tensor '{}': missing field '{}'", name, key));
  return *it;
}

Entry parse_entry(const std::string& name, const json& info) {
  if (!info.is_object()) throw bad(fmt::format("tensor '{}': entry is not a JSON object", name));
  Entry e{name, {}, {}, 0, 0};
  const json& dt = field(info, name, "dtype");
  if (!dt.is_string()) throw bad(fmt::format("tensor '{}': dtype is not a string", name));
  std::optional<DType> d = dtype_from_name(dt.get<std::string>());
  if (!d) throw bad(fmt::format("tensor '{}': unknown dtype '{}'", name, dt.get<std::string>()));
  e.dtype = *d;
  const json& shape = field(info, name, "shape");
  if (!shape.is_array()) throw bad(fmt::format("tensor '{}': shape is not an array", name));
  uint64_t numel = 1;
  for (const json& s : shape) {
    uint64_t n = non_negative(s, name, "shape");
    if (n > static_cast<uint64_t>(INT64_MAX) || (n != 0 && numel > UINT64_MAX / n))
      throw bad(fmt::format("tensor '{}': shape {} is too large", name, shape.dump()));
    numel *= n;
    e.shape.push_back(static_cast<int64_t>(n));
  }
  const json& off = field(info, name, "data_offsets");
  if (!off.is_array() || off.size() != 2)
    throw bad(fmt::format("tensor '{}': data_offsets must be [begin, end]", name));
  e.begin = non_negative(off[0], name, "data_offsets");
  e.end = non_negative(off[1], name, "data_offsets");
  if (e.end < e.begin)
    throw bad(fmt::format("tensor '{}': data_offsets [{},{}] end before they begin", name, e.begin, e.end));
  uint64_t itemsize = e.dtype.itemsize();
  if (numel > UINT64_MAX / itemsize || e.end - e.begin != numel * itemsize)
    throw bad(fmt::format("tensor '{}': data_offsets [{},{}] hold {} bytes but shape {} of {} needs {}", name,
                          e.begin, e.end, e.end - e.begin, shape.dump(), dt.get<std::string>(),
                          numel * itemsize));
  return e;
}

Header parse_header(std::string_view text, uint64_t data_size) {
  json j = parse_json(text);
  Header h;
  for (const auto& [name, info] : j.items()) {
    if (name == "__metadata__") {
      if (!info.is_object()) throw bad("__metadata__ is not a JSON object");
      for (const auto& [k, v] : info.items()) {
        if (!v.is_string()) throw bad(fmt::format("__metadata__ value of '{}' is not a string", k));
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
      throw bad(fmt::format("tensor '{}': data_offsets [{},{}] overlap tensor '{}' ending at {}", e.name,
                            e.begin, e.end, prev->name, at));
    if (e.begin > at)
      throw bad(fmt::format("tensor '{}': data_offsets [{},{}] leave a hole of {} bytes before it", e.name,
                            e.begin, e.end, e.begin - at));
    if (e.end > data_size)
      throw bad(fmt::format("tensor '{}' ends at byte {} but the file has only {} bytes of data", e.name,
                            e.end, data_size));
    at = e.end, prev = &e;
  }
  if (at != data_size)
    throw bad(fmt::format("tensors end at byte {} but the file has {} bytes of data", at, data_size));
  return h;
}

// Splits a file image into header text and data, checking the size prefix.
std::pair<std::string_view, std::span<const std::byte>> split(std::span<const std::byte> data) {
  if (data.size() < 8)
    throw bad(fmt::format("file is {} bytes, too short for the 8-byte header size", data.size()));
  uint64_t n = read_u64_le(data);
  if (n > kMaxHeader) throw bad(fmt::format("header size {} is larger than the limit {}", n, kMaxHeader));
  if (n > data.size() - 8)
    throw bad(
        fmt::format("header size {} is larger than the file ({} bytes after the size)", n, data.size() - 8));
  std::string_view text(reinterpret_cast<const char*>(data.data() + 8), n);
  return {text, data.subspan(8 + n)};
}

std::vector<std::byte> read_file(const std::filesystem::path& path, std::optional<size_t> limit = {}) {
  std::error_code ec;
  std::filesystem::file_status st = std::filesystem::status(path, ec);
  if (!std::filesystem::exists(st)) throw ValueError("safe_load", fmt::format("no file '{}'", path.string()));
  if (!std::filesystem::is_regular_file(st))
    throw ValueError("safe_load", fmt::format("'{}' is not a regular file", path.string()));
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw ValueError("safe_load", fmt::format("cannot open '{}': {}", path.string(), std::strerror(errno)));
  std::vector<std::byte> out;
  if (limit) {
    out.resize(*limit);
    in.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(out.size()));
    out.resize(static_cast<size_t>(in.gcount()));
    return out;
  }
  in.seekg(0, std::ios::end);
  out.resize(static_cast<size_t>(in.tellg()));
  in.seekg(0);
  if (!in.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(out.size())))
    throw ValueError("safe_load", fmt::format("cannot read '{}'", path.string()));
  return out;
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
  auto fail = [&](std::string_view what) {
    int err = errno;
    std::error_code ec;
    std::filesystem::remove(tmp, ec);
    return ValueError("safe_save",
                      fmt::format("cannot {} '{}': {}", what, path.string(), std::strerror(err)));
  };
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    throw ValueError("safe_save", fmt::format("cannot create '{}': {}", tmp.string(), std::strerror(errno)));
  for (size_t done = 0; done < bytes.size();) {
    ssize_t w = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) {
      ::close(fd);
      throw fail("write");
    }
    done += static_cast<size_t>(w);
  }
  if (::fsync(fd) != 0) {
    ::close(fd);
    throw fail("sync");
  }
  if (::close(fd) != 0) throw fail("close");
  if (::rename(tmp.c_str(), path.c_str()) != 0) throw fail("rename onto");
}

SafeTensors safe_parse(std::span<const std::byte> data, std::string_view device) {
  auto [text, body] = split(data);
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

StateDict safe_load(const std::filesystem::path& path, std::string_view device) {
  std::vector<std::byte> bytes = read_file(path);
  return safe_parse(bytes, device).tensors;
}

Metadata safe_load_metadata(const std::filesystem::path& path) {
  std::vector<std::byte> head = read_file(path, 8);
  if (head.size() < 8) split(head);  // throws the short-file error
  uint64_t n = std::min(read_u64_le(head), kMaxHeader + 1);
  std::vector<std::byte> start = read_file(path, static_cast<size_t>(8 + n));
  auto [text, rest] = split(start);
  (void)rest;
  uint64_t size = std::filesystem::file_size(path);
  return parse_header(text, size - 8 - text.size()).metadata;
}

}  // namespace tg::nn
