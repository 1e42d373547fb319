// Dequantization by tensor ops. Each block type is split into its fields by shrinking the last axis of the
// byte rows; 4- and 6-bit fields are unpacked by broadcasting the bytes against a small shift axis, so the
// expression stays elementwise (shifts, masks, a multiply) and fuses into the kernel that reads it.
#include "llm/quant.hpp"

#include <fmt/format.h>

#include "base/error.hpp"

namespace tg::llm {

namespace {

// The bytes [lo, hi) of every block: (..., blocks, hi - lo).
Tensor field(const Tensor& b, int64_t lo, int64_t hi) {
  ShapePairs bounds;
  for (int a = 0; a + 1 < b.ndim(); a++) bounds.emplace_back(0, b.shape(a));
  bounds.emplace_back(lo, hi);
  return b.shrink(bounds);
}

// The little-endian float16 at byte `at` of every block, as float32: (..., blocks, 1).
Tensor f16(const Tensor& b, int64_t at) {
  Tensor lo = field(b, at, at + 1).cast(dtypes::uint16), hi = field(b, at + 1, at + 2).cast(dtypes::uint16);
  return (lo | (hi << 8)).bitcast(dtypes::float16).cast(dtypes::float32);
}

// 0, step, 2*step, ... (n values) as uint8 along a new axis that broadcasts against `rank` trailing axes.
Tensor shifts(int64_t n, int64_t step, int trailing, const std::string& device) {
  Shape s{n};
  s.insert(s.end(), static_cast<size_t>(trailing), 1);
  return (Tensor::arange(n, dtypes::uint8, device) * step).cast(dtypes::uint8).reshape(s);
}

Shape with(Shape lead, std::initializer_list<int64_t> tail) {
  for (int64_t t : tail) lead.push_back(t);
  return lead;
}

// b: (..., blocks, block bytes) -> float32 (..., blocks, block elements).
Tensor q4_0(const Tensor& b, const Shape& lead) {
  Tensor q = field(b, 2, 18).reshape(with(lead, {1, 16})).expand(with(lead, {2, 16}));
  Tensor nib = (q >> shifts(2, 4, 1, b.device())) & 15;  // low nibbles are elements 0..15, high 16..31
  return (nib.reshape(with(lead, {32})).cast(dtypes::float32) - 8) * f16(b, 0);
}

Tensor q8_0(const Tensor& b, const Shape&) {
  return field(b, 2, 34).bitcast(dtypes::int8).cast(dtypes::float32) * f16(b, 0);
}

Tensor q4_k(const Tensor& b, const Shape& lead) {
  // 8 sub-blocks of 32 with 6-bit scales and mins: sub-blocks 0..3 in the low 6 bits of bytes 0..3 / 4..7,
  // 4..7 in the nibbles of bytes 8..11 with their top two bits in bytes 0..3 / 4..7.
  Tensor s0 = field(b, 4, 8), s1 = field(b, 8, 12), s2 = field(b, 12, 16);
  Tensor sc = Tensor::cat({s0 & 63, (s2 & 15) | ((s0 >> 6) << 4)}, -1).cast(dtypes::float32);
  Tensor mn = Tensor::cat({s1 & 63, (s2 >> 4) | ((s1 >> 6) << 4)}, -1).cast(dtypes::float32);
  // 128 bytes: 4 chunks of 32 bytes, low nibbles are sub-block 2c, high nibbles 2c+1
  Tensor q = field(b, 16, 144).reshape(with(lead, {4, 1, 32})).expand(with(lead, {4, 2, 32}));
  Tensor nib = ((q >> shifts(2, 4, 1, b.device())) & 15).reshape(with(lead, {8, 32})).cast(dtypes::float32);
  Tensor w = f16(b, 0).unsqueeze(-1) * sc.unsqueeze(-1) * nib - f16(b, 2).unsqueeze(-1) * mn.unsqueeze(-1);
  return w.reshape(with(lead, {256}));
}

Tensor q6_k(const Tensor& b, const Shape& lead) {
  // Two halves of 128: quarter q of half h takes the low (q < 2) or high nibble of ql[64h + 32(q%2) + l]
  // and bits 2q..2q+1 of qh[32h + l]; its 16-element groups have int8 scales sc[8h + 2q + l/16].
  Tensor ql = field(b, 0, 128).reshape(with(lead, {2, 1, 2, 32})).expand(with(lead, {2, 2, 2, 32}));
  Tensor lo = ((ql >> shifts(2, 4, 2, b.device())) & 15).reshape(with(lead, {2, 4, 32}));
  Tensor qh = field(b, 128, 192).reshape(with(lead, {2, 1, 32})).expand(with(lead, {2, 4, 32}));
  Tensor hi = (qh >> shifts(4, 2, 1, b.device())) & 3;
  Tensor q = (lo | (hi << 4)).cast(dtypes::float32) - 32;
  Tensor sc = field(b, 192, 208).bitcast(dtypes::int8).cast(dtypes::float32).reshape(with(lead, {2, 4, 2, 1}));
  Tensor d = f16(b, 208).reshape(with(lead, {1, 1, 1, 1}));
  return (q.reshape(with(lead, {2, 4, 2, 16})) * sc * d).reshape(with(lead, {256}));
}

struct BlockType {
  std::string_view name;
  int64_t elems, bytes;
  Tensor (*dequant)(const Tensor&, const Shape&);
};
constexpr BlockType kTypes[] = {
    {"Q4_0", 32, 18, q4_0}, {"Q8_0", 32, 34, q8_0}, {"Q4_K", 256, 144, q4_k}, {"Q6_K", 256, 210, q6_k}};

const BlockType& block_type(std::string_view type) {
  for (const BlockType& t : kTypes)
    if (t.name == type) return t;
  throw ValueError("dequantize", fmt::format("ggml type {} is not a block type (Q4_0, Q8_0, Q4_K, Q6_K are)", type));
}

}  // namespace

std::pair<int64_t, int64_t> block_size(std::string_view type) {
  const BlockType& t = block_type(type);
  return {t.elems, t.bytes};
}

Tensor dequantize(const Tensor& blocks, std::string_view type) {
  const BlockType& t = block_type(type);
  if (blocks.dtype() != dtypes::uint8 || blocks.ndim() < 1)
    throw DTypeError("dequantize", fmt::format("{} blocks must be uint8 rows, got {} of {} dims", type,
                                               blocks.dtype().name(), blocks.ndim()));
  int64_t row = static_cast<int64_t>(blocks.shape(-1));
  if (row % t.bytes)
    throw ShapeError("dequantize", fmt::format("rows of {} bytes are not whole {} blocks of {} bytes", row,
                                               type, t.bytes));
  Shape lead(blocks.shape().begin(), blocks.shape().end() - 1), out = lead;
  lead.push_back(row / t.bytes);
  out.push_back(row / t.bytes * t.elems);
  return t.dequant(blocks.reshape(with(lead, {t.bytes})), lead).reshape(out);
}

Weight Weight::from_gguf(const nn::GGUFFile& f, const std::string& name) {
  auto t = f.tensors.find(name);
  auto i = f.infos.find(name);
  if (t == f.tensors.end() || i == f.infos.end())
    throw FormatError("llm", fmt::format("the model has no tensor '{}'", name));
  return {t->second, i->second.type, i->second.shape};
}

bool Weight::quantized() const { return data.dtype() == dtypes::uint8 && type != "I8"; }

Tensor Weight::dequantize() const {
  return quantized() ? llm::dequantize(data, type) : data.cast(dtypes::float32);
}

Tensor Weight::linear(const Tensor& x, const Tensor& bias) const {
  if (shape.size() != 2 || x.shape(-1) != shape[1])
    throw ShapeError("linear", fmt::format("cannot apply a weight of {} to {}", shape_str(shape), shape_str(x.shape())));
  // (..., 1, in) * (out, in) summed over in: the weight is read through its dequantization, never stored
  Tensor y = (x.unsqueeze(-2) * dequantize()).sum(-1);
  return bias.defined() ? y + bias.cast(dtypes::float32) : y;
}

int64_t Weight::nbytes() const { return static_cast<int64_t>(data.numel()) * data.dtype().itemsize(); }

}  // namespace tg::llm
