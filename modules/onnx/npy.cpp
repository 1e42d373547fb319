// .npy: a magic string, a version, a header length, a Python-dict header (descr, fortran_order, shape),
// then the row-major data.
#include "onnx/npy.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstring>
#include <fstream>
#include <limits>
#include <regex>

#include "base/error.hpp"
#include "nn/host_bytes.hpp"

namespace tg::onnx {
namespace {

[[noreturn]] void malformed(std::string_view what) { throw FormatError("npy", what); }

struct Descr {
  std::string_view code;
  DType dtype;
};
constexpr Descr kDescrs[] = {{"f4", dtypes::float32}, {"f8", dtypes::float64}, {"f2", dtypes::float16},
                             {"i1", dtypes::int8},    {"i2", dtypes::int16},   {"i4", dtypes::int32},
                             {"i8", dtypes::int64},   {"u1", dtypes::uint8},   {"u2", dtypes::uint16},
                             {"u4", dtypes::uint32},  {"u8", dtypes::uint64},  {"b1", dtypes::bool_}};

std::string header_value(const std::string& header, const std::string& key) {
  std::smatch m;
  std::regex re("'" + key + "'\\s*:\\s*('[^']*'|True|False|\\([^)]*\\))");
  if (!std::regex_search(header, m, re)) malformed(fmt::format("the header has no '{}'", key));
  return m[1].str();
}

}  // namespace

Tensor npy_parse(std::span<const std::byte> bytes, std::string_view device) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  if (bytes.size() < 10 || std::memcmp(p, "\x93NUMPY", 6) != 0)
    malformed("not a .npy file (no \\x93NUMPY magic)");
  int major = p[6];
  size_t len_size = major == 1 ? 2 : 4;
  if (major < 1 || major > 3) malformed(fmt::format("version {} is not supported", major));
  if (bytes.size() < 8 + len_size) malformed("the file ends inside its header");
  size_t hlen = len_size == 2 ? (p[8] | p[9] << 8) : (p[8] | p[9] << 8 | p[10] << 16 | size_t(p[11]) << 24);
  size_t start = 8 + len_size + hlen;
  if (start > bytes.size()) malformed("the file ends inside its header");
  std::string header(reinterpret_cast<const char*>(p + 8 + len_size), hlen);
  std::string descr = header_value(header, "descr");
  if (header_value(header, "fortran_order") != "False") malformed("Fortran-ordered arrays are not supported");
  descr = descr.substr(1, descr.size() - 2);
  if (descr.size() == 3 && (descr[0] == '<' || descr[0] == '|' || descr[0] == '=')) descr = descr.substr(1);
  const Descr* d = nullptr;
  for (const auto& x : kDescrs)
    if (x.code == descr) d = &x;
  if (!d)
    malformed(
        fmt::format("dtype '{}' is not supported (little-endian bool, int, uint and float only)", descr));
  Shape shape;
  int64_t numel = 1;
  std::string dims = header_value(header, "shape");
  std::regex num("\\d+");
  for (auto it = std::sregex_iterator(dims.begin(), dims.end(), num); it != std::sregex_iterator(); ++it) {
    int64_t v = std::stoll(it->str());
    if (v > 0 && numel > std::numeric_limits<int64_t>::max() / 8 / v) malformed("the shape is too large");
    numel *= v;
    shape.push_back(v);
  }
  size_t want = static_cast<size_t>(numel) * d->dtype.itemsize();
  if (bytes.size() - start != want)
    malformed(fmt::format("shape {} of {} needs {} data bytes, the file has {}", dims, descr, want,
                          bytes.size() - start));
  return nn::detail::tensor_from_bytes(bytes.subspan(start), d->dtype, shape, device);
}

Tensor npy_load(const std::filesystem::path& path, std::string_view device) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw ValueError("npy", fmt::format("cannot open '{}'", path.string()));
  std::vector<char> data((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  try {
    return npy_parse(std::as_bytes(std::span(data)), device);
  } catch (const FormatError& e) {
    throw FormatError("npy", fmt::format("'{}': {}", path.string(), e.what_only()));
  }
}

std::vector<std::byte> npy_serialize(const Tensor& t) {
  const Descr* d = nullptr;
  for (const auto& x : kDescrs)
    if (x.dtype == t.dtype()) d = &x;
  if (!d) throw DTypeError("npy", fmt::format("{} has no .npy dtype", t.dtype().name()));
  std::vector<std::string> dims;
  for (const auto& s : t.shape()) dims.push_back(fmt::format("{}", static_cast<int64_t>(s)));
  std::string shape = dims.size() == 1 ? dims[0] + "," : fmt::format("{}", fmt::join(dims, ", "));
  std::string header = fmt::format("{{'descr': '{}{}', 'fortran_order': False, 'shape': ({}), }}",
                                   d->code[1] == '1' ? '|' : '<', d->code, shape);
  header.append(64 - (10 + header.size() + 1) % 64, ' ');  // data starts 64-byte aligned
  header += '\n';
  std::vector<std::byte> out(10);
  std::memcpy(out.data(), "\x93NUMPY\x01\x00", 8);
  out[8] = std::byte(header.size() & 0xff);
  out[9] = std::byte(header.size() >> 8);
  for (char c : header) out.push_back(std::byte(c));
  std::vector<std::byte> data = t.to_bytes();
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

void npy_save(const Tensor& t, const std::filesystem::path& path) {
  std::vector<std::byte> bytes = npy_serialize(t);
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!f) throw ValueError("npy", fmt::format("cannot write '{}'", path.string()));
}

}  // namespace tg::onnx
