// GGUF reader: every count and size is checked against the bytes left in the file before anything is
// allocated, tensor data ranges are checked (aligned, inside the file, not overlapping), then blocks are
// dequantized on the host or kept as raw blocks. gguf_load maps the file instead of reading it.
#include "nn/gguf.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <optional>
#include <set>

#include <boost/interprocess/file_mapping.hpp>
#include <boost/interprocess/mapped_region.hpp>
#include <fmt/format.h>

#include "base/error.hpp"
#include "nn/checkpoint_fuzz.hpp"
#include "nn/host_bytes.hpp"
#include "nn/host_file.hpp"

namespace tg::nn {

static_assert(std::endian::native == std::endian::little, "GGUF data is little-endian");

namespace {

FormatError gguf_error(std::string_view what) { return FormatError("gguf_load", what); }
using Bytes = std::span<const std::byte>;
using T = GGUFValue::Type;
constexpr int kMaxArrayDepth = 8;

float half_to_float(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  if (exp == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (man << 13));
  if (exp == 0) {
    float v = static_cast<float>(man) * 0x1p-24f;  // subnormal: exact in float
    return sign ? -v : v;
  }
  return std::bit_cast<float>(sign | ((exp + 112) << 23) | (man << 13));
}

class Reader {
 public:
  explicit Reader(Bytes b) : b_(b) {}
  uint64_t left() const { return b_.size() - at_; }
  uint64_t at() const { return at_; }
  Bytes take(uint64_t n, std::string_view what) {
    if (n > left())
      throw gguf_error(
          fmt::format("{} needs {} bytes at byte {} but the file has only {} left", what, n, at_, left()));
    Bytes r = b_.subspan(at_, n);
    at_ += n;
    return r;
  }
  template <class V>
  V get(std::string_view what) {
    V v{};
    std::memcpy(&v, take(sizeof(V), what).data(), sizeof(V));
    return v;
  }
  std::string str(std::string_view what) {
    uint64_t n = get<uint64_t>(what);
    Bytes s = take(n, what);  // a huge length fails here, before any allocation
    return {reinterpret_cast<const char*>(s.data()), s.size()};
  }

 private:
  Bytes b_;
  uint64_t at_ = 0;
};

uint64_t min_size(T t) {
  switch (t) {
    case T::UINT8:
    case T::INT8:
    case T::BOOL:
      return 1;
    case T::UINT16:
    case T::INT16:
      return 2;
    case T::UINT32:
    case T::INT32:
    case T::FLOAT32:
      return 4;
    case T::UINT64:
    case T::INT64:
    case T::FLOAT64:
    case T::STRING:
      return 8;
    case T::ARRAY:
      return 12;
  }
  return 1;
}

GGUFValue value(Reader& r, T type, const std::string& key, int depth) {
  GGUFValue v;
  v.type = type;
  switch (type) {
    case T::UINT8:
      v.u = r.get<uint8_t>(key);
      break;
    case T::INT8:
      v.i = r.get<int8_t>(key);
      break;
    case T::UINT16:
      v.u = r.get<uint16_t>(key);
      break;
    case T::INT16:
      v.i = r.get<int16_t>(key);
      break;
    case T::UINT32:
      v.u = r.get<uint32_t>(key);
      break;
    case T::INT32:
      v.i = r.get<int32_t>(key);
      break;
    case T::UINT64:
      v.u = r.get<uint64_t>(key);
      break;
    case T::INT64:
      v.i = r.get<int64_t>(key);
      break;
    case T::FLOAT32:
      v.f = r.get<float>(key);
      break;
    case T::FLOAT64:
      v.f = r.get<double>(key);
      break;
    case T::BOOL: {
      uint8_t b = r.get<uint8_t>(key);
      if (b > 1) throw gguf_error(fmt::format("key '{}': bool value {} is not 0 or 1", key, b));
      v.u = b;
      break;
    }
    case T::STRING:
      v.s = r.str(key);
      break;
    case T::ARRAY: {
      if (depth >= kMaxArrayDepth)
        throw gguf_error(fmt::format("key '{}': arrays nest deeper than {}", key, kMaxArrayDepth));
      uint32_t et = r.get<uint32_t>(key);
      if (et > 12) throw gguf_error(fmt::format("key '{}': unknown array item type {}", key, et));
      v.array_type = static_cast<T>(et);
      uint64_t n = r.get<uint64_t>(key);
      if (n > r.left() / min_size(v.array_type))
        throw gguf_error(
            fmt::format("key '{}': array of {} items does not fit in the {} bytes left", key, n, r.left()));
      v.array.reserve(n);
      for (uint64_t k = 0; k < n; ++k) v.array.push_back(value(r, v.array_type, key, depth + 1));
      break;
    }
    default:
      throw gguf_error(fmt::format("key '{}': unknown value type {}", key, static_cast<uint32_t>(type)));
  }
  return v;
}

struct Kind {
  uint32_t id;
  std::string_view name;
  DType out;
  uint64_t block, bytes;  // elements per block, bytes per block
};
constexpr Kind kKinds[] = {
    {0, "F32", dtypes::float32, 1, 4},       {1, "F16", dtypes::float16, 1, 2},
    {2, "Q4_0", dtypes::float32, 32, 18},    {8, "Q8_0", dtypes::float32, 32, 34},
    {12, "Q4_K", dtypes::float32, 256, 144}, {14, "Q6_K", dtypes::float32, 256, 210},
    {24, "I8", dtypes::int8, 1, 1},          {25, "I16", dtypes::int16, 1, 2},
    {26, "I32", dtypes::int32, 1, 4},        {27, "I64", dtypes::int64, 1, 8},
    {28, "F64", dtypes::float64, 1, 8},      {30, "BF16", dtypes::bfloat16, 1, 2},
};
// ggml types this reader knows by name but cannot load, for a clear error.
constexpr std::pair<uint32_t, std::string_view> kUnsupported[] = {
    {3, "Q4_1"},  {6, "Q5_0"},    {7, "Q5_1"},    {9, "Q8_1"},     {10, "Q2_K"},    {11, "Q3_K"},
    {13, "Q5_K"}, {15, "Q8_K"},   {16, "IQ2_XXS"}, {17, "IQ2_XS"}, {18, "IQ3_XXS"}, {19, "IQ1_S"},
    {20, "IQ4_NL"}, {21, "IQ3_S"}, {22, "IQ2_S"},  {23, "IQ4_XS"}, {29, "IQ1_M"},   {34, "TQ1_0"},
    {35, "TQ2_0"}, {39, "MXFP4"},
};

struct Info {
  std::string name;
  Shape shape;
  const Kind* kind;
  uint64_t offset, nbytes, count;  // offset within the data section
};

struct Header {
  GGUFMetadata metadata;
  std::vector<Info> infos;
  uint64_t data_start = 0;
};

float f16_at(Bytes src, uint64_t at) {
  uint16_t h;
  std::memcpy(&h, src.data() + at, 2);
  return half_to_float(h);
}

// Q4_K's eight 6-bit scales and mins, packed in 12 bytes.
void q4k_scale_min(Bytes q, int j, int& sc, int& m) {
  auto u8 = [&](int k) { return static_cast<int>(static_cast<uint8_t>(q[k])); };
  if (j < 4) {
    sc = u8(j) & 63;
    m = u8(j + 4) & 63;
  } else {
    sc = (u8(j + 4) & 0xf) | ((u8(j - 4) >> 6) << 4);
    m = (u8(j + 4) >> 4) | ((u8(j) >> 6) << 4);
  }
}

std::vector<std::byte> dequantize(const Info& t, Bytes src) {
  std::vector<std::byte> out(t.count * 4);
  float* y = reinterpret_cast<float*>(out.data());
  auto u8 = [&](uint64_t at) { return static_cast<uint8_t>(src[at]); };
  uint64_t blocks = t.count / t.kind->block;
  for (uint64_t b = 0; b < blocks; ++b) {
    uint64_t p = b * t.kind->bytes;
    float* yb = y + b * t.kind->block;
    if (t.kind->id == 2) {  // Q4_0: d, then 16 bytes of two 4-bit values (low nibbles first half)
      float d = f16_at(src, p);
      for (int j = 0; j < 16; ++j) {
        yb[j] = static_cast<float>((u8(p + 2 + j) & 0xf) - 8) * d;
        yb[j + 16] = static_cast<float>((u8(p + 2 + j) >> 4) - 8) * d;
      }
    } else if (t.kind->id == 8) {  // Q8_0: d, then 32 signed bytes
      float d = f16_at(src, p);
      for (int j = 0; j < 32; ++j) yb[j] = static_cast<float>(static_cast<int8_t>(u8(p + 2 + j))) * d;
    } else if (t.kind->id == 12) {  // Q4_K: d, dmin, 12 bytes of scales/mins, 128 bytes of nibbles
      float d = f16_at(src, p), dmin = f16_at(src, p + 2);
      Bytes scales = src.subspan(p + 4, 12);
      for (int c = 0; c < 4; ++c)  // 64 elements per chunk: 32 low nibbles, then 32 high
        for (int h = 0; h < 2; ++h) {
          int sc = 0, m = 0;
          q4k_scale_min(scales, 2 * c + h, sc, m);
          for (int l = 0; l < 32; ++l) {
            int q = (u8(p + 16 + 32 * c + l) >> (4 * h)) & 0xf;
            yb[64 * c + 32 * h + l] = d * static_cast<float>(sc) * static_cast<float>(q) -
                                      dmin * static_cast<float>(m);
          }
        }
    } else {  // Q6_K: 128 bytes of low 4 bits, 64 of high 2 bits, 16 signed scales, d
      uint64_t ql = p, qh = p + 128, sc = p + 192;
      float d = f16_at(src, p + 208);
      for (int half = 0; half < 2; ++half, ql += 64, qh += 32, sc += 8, yb += 128)
        for (int l = 0; l < 32; ++l) {
          int is = l / 16;
          int q1 = ((u8(ql + l) & 0xf) | (((u8(qh + l) >> 0) & 3) << 4)) - 32;
          int q2 = ((u8(ql + l + 32) & 0xf) | (((u8(qh + l) >> 2) & 3) << 4)) - 32;
          int q3 = ((u8(ql + l) >> 4) | (((u8(qh + l) >> 4) & 3) << 4)) - 32;
          int q4 = ((u8(ql + l + 32) >> 4) | (((u8(qh + l) >> 6) & 3) << 4)) - 32;
          auto s = [&](int k) { return d * static_cast<float>(static_cast<int8_t>(u8(sc + is + k))); };
          yb[l] = s(0) * static_cast<float>(q1);
          yb[l + 32] = s(2) * static_cast<float>(q2);
          yb[l + 64] = s(4) * static_cast<float>(q3);
          yb[l + 96] = s(6) * static_cast<float>(q4);
        }
    }
  }
  return out;
}

const Kind& kind_of(uint32_t type, const std::string& tensor) {
  for (const Kind& kd : kKinds)
    if (kd.id == type) return kd;
  for (auto [id, name] : kUnsupported)
    if (id == type)
      throw gguf_error(fmt::format("tensor '{}': ggml type {} is not supported (F32, F16, BF16, F64, I8..I64, "
                                   "Q4_0, Q8_0, Q4_K, Q6_K are)",
                                   tensor, name));
  throw gguf_error(fmt::format("tensor '{}': ggml type {} is not supported", tensor, type));
}

// Everything but the tensor data, checked: metadata, tensor infos, data ranges (aligned, inside, disjoint).
Header parse_header(Bytes f) {
  Reader r(f);
  if (f.size() < 4 || std::memcmp(f.data(), "GGUF", 4) != 0) throw gguf_error("bad magic: not a GGUF file");
  r.take(4, "magic");
  uint32_t version = r.get<uint32_t>("version");
  if (version != 2 && version != 3)
    throw gguf_error(fmt::format("version {} is not supported (only 2 and 3)", version));
  uint64_t n_tensors = r.get<uint64_t>("tensor count"), n_kv = r.get<uint64_t>("metadata count");
  if (n_kv > r.left() / 12) throw gguf_error(fmt::format("metadata count {} does not fit in the file", n_kv));
  Header out;
  for (uint64_t k = 0; k < n_kv; ++k) {
    std::string key = r.str("metadata key");
    uint32_t type = r.get<uint32_t>(key);
    if (type > 12) throw gguf_error(fmt::format("key '{}': unknown value type {}", key, type));
    if (out.metadata.count(key)) throw gguf_error(fmt::format("key '{}' appears twice", key));
    out.metadata.emplace(key, value(r, static_cast<T>(type), key, 0));
  }
  uint64_t align = 32;
  if (auto it = out.metadata.find("general.alignment"); it != out.metadata.end()) {
    if (it->second.type != T::UINT32 || it->second.u == 0 || !std::has_single_bit(it->second.u))
      throw gguf_error("general.alignment must be a uint32 power of two");
    align = it->second.u;
  }
  if (n_tensors > r.left() / 24)
    throw gguf_error(fmt::format("tensor count {} does not fit in the file", n_tensors));
  std::set<std::string> names;
  for (uint64_t k = 0; k < n_tensors; ++k) {
    Info t;
    t.name = r.str("tensor name");
    if (!names.insert(t.name).second) throw gguf_error(fmt::format("tensor '{}' appears twice", t.name));
    uint32_t nd = r.get<uint32_t>(t.name);
    if (nd > 4) throw gguf_error(fmt::format("tensor '{}': {} dims (at most 4)", t.name, nd));
    std::vector<uint64_t> ne(nd);
    t.count = 1;
    for (uint64_t& n : ne) {
      n = r.get<uint64_t>(t.name);
      if (n > static_cast<uint64_t>(INT64_MAX) || (n && t.count > f.size() * 1024 / n))
        throw gguf_error(fmt::format("tensor '{}': dim {} is too large for the file", t.name, n));
      t.count *= n;
    }
    for (auto it = ne.rbegin(); it != ne.rend(); ++it) t.shape.push_back(static_cast<int64_t>(*it));
    t.kind = &kind_of(r.get<uint32_t>(t.name), t.name);
    if (nd > 0 && ne[0] % t.kind->block)
      throw gguf_error(fmt::format("tensor '{}': {} rows of {} elements are not whole {} blocks of {}",
                                   t.name, t.count / std::max<uint64_t>(ne[0], 1), ne[0], t.kind->name,
                                   t.kind->block));
    if (nd == 0 && t.kind->block != 1)
      throw gguf_error(fmt::format("tensor '{}': a scalar cannot be {}", t.name, t.kind->name));
    t.nbytes = t.count / t.kind->block * t.kind->bytes;
    t.offset = r.get<uint64_t>(t.name);
    if (t.offset % align)
      throw gguf_error(
          fmt::format("tensor '{}': offset {} is not a multiple of {}", t.name, t.offset, align));
    out.infos.push_back(std::move(t));
  }
  out.data_start = (r.at() + align - 1) / align * align;
  if (out.data_start > f.size() && !out.infos.empty())
    throw gguf_error("tensor data starts past the end of the file");
  uint64_t data_size = out.data_start > f.size() ? 0 : f.size() - out.data_start;
  std::vector<const Info*> order;
  for (const Info& t : out.infos) {
    if (t.offset > data_size || t.nbytes > data_size - t.offset)
      throw gguf_error(
          fmt::format("tensor '{}': {} bytes at offset {} run past the end of the data ({} bytes)", t.name,
                      t.nbytes, t.offset, data_size));
    order.push_back(&t);
  }
  std::sort(order.begin(), order.end(), [](const Info* a, const Info* b) { return a->offset < b->offset; });
  for (size_t k = 1; k < order.size(); ++k)
    if (order[k]->offset < order[k - 1]->offset + order[k - 1]->nbytes)
      throw gguf_error(fmt::format("tensors '{}' and '{}' overlap", order[k - 1]->name, order[k]->name));
  return out;
}

GGUFTensorInfo public_info(const Info& t, uint64_t data_start) {
  return {std::string(t.kind->name),
          t.kind->id,
          t.shape,
          static_cast<int64_t>(t.kind->block),
          static_cast<int64_t>(t.kind->bytes),
          data_start + t.offset,
          t.nbytes};
}

// Raw blocks as uint8 rows: (*rows, bytes per row).
Shape block_shape(const Info& t) {
  Shape s = t.shape;
  s.back() = s.back() / static_cast<int64_t>(t.kind->block) * static_cast<int64_t>(t.kind->bytes);
  return s;
}

// The tensors of a checked header. With an owner, plain and kept tensors point into f (no copy where the
// device reads host memory in place); otherwise every tensor is a copy.
GGUFFile make_file(Header h, Bytes f, std::string_view device, GGUFOptions opts,
                   std::shared_ptr<const void> owner) {
  GGUFFile out;
  for (const Info& t : h.infos) {
    Bytes src = f.subspan(h.data_start + t.offset, t.nbytes);
    bool raw = t.kind->block == 1 || opts.keep_quantized;
    DType dt = t.kind->block == 1 ? t.kind->out : raw ? dtypes::uint8 : dtypes::float32;
    Shape shape = t.kind->block > 1 && raw ? block_shape(t) : t.shape;
    Tensor x;
    if (!raw) {
      x = detail::tensor_from_bytes(dequantize(t, src), dt, shape, device);
    } else if (owner && reinterpret_cast<uintptr_t>(src.data()) % dt.itemsize() == 0) {
      x = Tensor::from_blob(const_cast<std::byte*>(src.data()), shape, dt,
                            {.device = device, .owner = owner, .read_only = true});
    } else {
      x = detail::tensor_from_bytes(src, dt, shape, device);
    }
    out.tensors.emplace(t.name, std::move(x));
    out.infos.emplace(t.name, public_info(t, h.data_start));
  }
  out.metadata = std::move(h.metadata);
  return out;
}

// The file mapped read-only for as long as a tensor or the GGUFFile holds it.
struct Mapping {
  boost::interprocess::file_mapping file;
  boost::interprocess::mapped_region region;
};

std::shared_ptr<Mapping> map_file(const std::filesystem::path& path) {
  uint64_t size = detail::HostFile(path, "gguf_load").size();  // refuses what is not a regular file
  if (size < 4) throw gguf_error(fmt::format("'{}' has {} bytes: not a GGUF file", path.string(), size));
  try {
    auto m = std::make_shared<Mapping>();
    m->file = boost::interprocess::file_mapping(path.c_str(), boost::interprocess::read_only);
    m->region = boost::interprocess::mapped_region(m->file, boost::interprocess::read_only, 0, size);
    return m;
  } catch (const boost::interprocess::interprocess_exception& e) {
    throw ValueError("gguf_load", fmt::format("cannot map '{}': {}", path.string(), e.what()));
  }
}

Bytes bytes_of(const Mapping& m) { return {static_cast<const std::byte*>(m.region.get_address()), m.region.get_size()}; }

}  // namespace

GGUFFile gguf_parse(std::span<const std::byte> data, std::string_view device, GGUFOptions opts) {
  return make_file(parse_header(data), data, device, opts, nullptr);
}

GGUFFile gguf_load(const std::filesystem::path& path, std::string_view device, GGUFOptions opts) {
  std::shared_ptr<Mapping> m = map_file(path);
  Bytes f = bytes_of(*m);
  GGUFFile out = make_file(parse_header(f), f, device, opts, m);
  out.bytes = f;
  out.mapping = std::move(m);
  return out;
}

GGUFFile gguf_parse_metadata(std::span<const std::byte> data) {
  Header h = parse_header(data);
  GGUFFile out;
  for (const Info& t : h.infos) out.infos.emplace(t.name, public_info(t, h.data_start));
  out.metadata = std::move(h.metadata);
  out.bytes = data;
  return out;
}

GGUFFile gguf_load_metadata(const std::filesystem::path& path) {
  std::shared_ptr<Mapping> m = map_file(path);
  GGUFFile out = gguf_parse_metadata(bytes_of(*m));
  out.mapping = std::move(m);
  return out;
}

int fuzz_gguf_load(const uint8_t* data, size_t size) {
  try {
    Bytes f{reinterpret_cast<const std::byte*>(data), size};
    Header h = parse_header(f);
    for (const Info& t : h.infos)
      if (t.kind->block > 1) dequantize(t, f.subspan(h.data_start + t.offset, t.nbytes));
  } catch (const Error&) {
  }
  return 0;
}

}  // namespace tg::nn
