// Dequantization by tensor ops. Each block type is split into its fields by shrinking the last axis of the
// byte rows; 4- and 6-bit fields are unpacked by broadcasting the bytes against a small shift axis, so the
// expression stays elementwise (shifts, masks, a multiply) and fuses into the kernel that reads it.
#include "llm/quant.hpp"

#include <algorithm>
#include <tuple>

#include <fmt/format.h>

#include "base/error.hpp"
#include "runtime/registry.hpp"

namespace tg::llm {

namespace {

// The bytes [lo, hi) of every block: (..., blocks, hi - lo).
Tensor field(const Tensor& b, int64_t lo, int64_t hi) {
  ShapePairs bounds;
  for (int a = 0; a + 1 < b.ndim(); a++) bounds.emplace_back(0, b.shape(a));
  bounds.emplace_back(lo, hi);
  return b.shrink(bounds);
}

// The little-endian float16 at byte `at` of every block: (..., blocks, 1).
Tensor f16(const Tensor& b, int64_t at) {
  Tensor lo = field(b, at, at + 1).cast(dtypes::uint16), hi = field(b, at + 1, at + 2).cast(dtypes::uint16);
  return (lo | (hi << 8)).bitcast(dtypes::float16);
}

// A block's float16 scale, packed as float32 (exact): C has no half vectors here, so a kernel would load and
// convert half scales one lane at a time, where float32 ones come a vector at a time (2 bytes more a block).
Tensor scale(const Tensor& b, int64_t at) { return f16(b, at).cast(dtypes::float32); }

// 0, step, 2*step, ... (n values) as uint8 along an axis followed by `trailing` unit axes.
Tensor shifts(int64_t n, int64_t step, int trailing, const std::string& device) {
  Shape s{n};
  s.insert(s.end(), static_cast<size_t>(trailing), 1);
  return (Tensor::arange(n, dtypes::uint8, device) * step).cast(dtypes::uint8).reshape(s);
}

// Strips, blocks and outputs a strip of a packed field (strips, blocks, ..., strip).
std::tuple<int64_t, int64_t, int64_t> strips(const Tensor& f) {
  return {static_cast<int64_t>(f.shape(0)), static_cast<int64_t>(f.shape(1)), static_cast<int64_t>(f.shape(-1))};
}

Shape with(Shape lead, std::initializer_list<int64_t> tail) {
  for (int64_t t : tail) lead.push_back(t);
  return lead;
}

// Q4_K's 6-bit scales and mins of the 8 sub-blocks: 0..3 in the low 6 bits of bytes 0..3 (mins 4..7),
// 4..7 in the nibbles of bytes 8..11 with their top two bits in the top bits of bytes 0..3 (4..7).
std::pair<Tensor, Tensor> q4k_scales(const Tensor& b) {
  Tensor s0 = field(b, 4, 8), s1 = field(b, 8, 12), s2 = field(b, 12, 16);
  return {Tensor::cat({s0 & 63, (s2 & 15) | ((s0 >> 6) << 4)}, -1),
          Tensor::cat({s1 & 63, (s2 >> 4) | ((s1 >> 6) << 4)}, -1)};
}

// A packed weight as w = a * q + c per sub-block of L inputs: q (strips, sub-blocks, L, s) small integers as
// float32, a and c (strips, sub-blocks, s). A matmul multiplies by a and adds c once a sub-block.
struct Affine {
  Tensor q, a, c;     // c may be undefined (0)
  int64_t pairs = 1;  // > 1: q's L elements come as (L/pairs, pairs) of the file's (pairs, L/pairs)
};

// x (..., L) in q's element order: the file's (pairs, L/pairs) read as (L/pairs, pairs).
Tensor in_q_order(const Tensor& x, int64_t pairs) {
  if (pairs == 1) return x;
  Shape lead(x.shape().begin(), x.shape().end() - 1);
  int64_t len = static_cast<int64_t>(x.shape(-1));
  int nd = x.ndim();
  Dims order;
  for (int a = 0; a < nd - 1; a++) order.push_back(a);
  order.push_back(nd);
  order.push_back(nd - 1);
  return x.reshape(with(lead, {pairs, len / pairs})).permute(order).reshape(with(lead, {len}));
}

// Bit fields of packed bytes b along a new axis of n values shifted by step bits (followed by `trailing`
// axes), masked, as float32. Unpacked as int32, which a CPU shifts and masks a whole vector at a time.
Tensor unpack(const Tensor& b, int64_t n, int64_t step, int trailing, int mask) {
  Tensor sh = shifts(n, step, trailing, b.device()).cast(dtypes::int32);
  return ((b.cast(dtypes::int32) >> sh) & mask).cast(dtypes::float32);
}

// A block type's fields and its dequantization in both layouts. `lead` is the shape before the block
// axis' elements: rows (*rows, blocks) for the file layout. Packed, the fields are (strips, blocks, ...,
// outputs of a strip) and the result (strips, blocks, elements, outputs of a strip).
struct BlockType {
  std::string_view name;
  int64_t elems, bytes;
  Tensor (*rows)(const Tensor& b, const Shape& lead);        // b (..., blocks, bytes) -> (..., blocks, elems)
  std::vector<Tensor> (*fields)(const Tensor& b);            // b (out, blocks, bytes) -> fields (out, blocks, ...)
  Affine (*packed)(const std::vector<Tensor>& f);  // packed fields -> w = a * q + c
};

Tensor q4_0_rows(const Tensor& b, const Shape& lead) {
  Tensor q = field(b, 2, 18).reshape(with(lead, {1, 16})).expand(with(lead, {2, 16}));
  Tensor nib = (q >> shifts(2, 4, 1, b.device())) & 15;  // low nibbles are elements 0..15, high 16..31
  return (nib.reshape(with(lead, {32})).cast(dtypes::float32) - 8) * f16(b, 0).cast(dtypes::float32);
}
std::vector<Tensor> q4_0_fields(const Tensor& b) { return {scale(b, 0), field(b, 2, 18)}; }
// The low nibbles are elements 0..15, the high 16..31. q takes both nibbles of a byte side by side
// (elements j and j + 16), so a kernel loads each byte once and shifts it by constants.
Affine q4_0_packed(const std::vector<Tensor>& f) {
  auto [g, nb, n] = strips(f[1]);
  Tensor q = unpack(f[1].reshape({g, nb, 16, 1, n}).expand({g, nb, 16, 2, n}), 2, 4, 1, 15);
  Tensor d = f[0].reshape({g, nb, n});
  return {q.reshape({g, nb, 32, n}), d, d * -8, 2};
}

Tensor q8_0_rows(const Tensor& b, const Shape&) {
  return field(b, 2, 34).bitcast(dtypes::int8).cast(dtypes::float32) * f16(b, 0).cast(dtypes::float32);
}
std::vector<Tensor> q8_0_fields(const Tensor& b) { return {scale(b, 0), field(b, 2, 34).bitcast(dtypes::int8)}; }
Affine q8_0_packed(const std::vector<Tensor>& f) {
  auto [g, nb, n] = strips(f[1]);
  return {f[1].cast(dtypes::float32), f[0].reshape({g, nb, n}), Tensor()};
}

Tensor q4_k_rows(const Tensor& b, const Shape& lead) {
  auto [sc, mn] = q4k_scales(b);
  // 128 bytes: 4 chunks of 32 bytes, low nibbles are sub-block 2c, high nibbles 2c+1
  Tensor q = field(b, 16, 144).reshape(with(lead, {4, 1, 32})).expand(with(lead, {4, 2, 32}));
  Tensor nib = ((q >> shifts(2, 4, 1, b.device())) & 15).reshape(with(lead, {8, 32})).cast(dtypes::float32);
  Tensor d = f16(b, 0).cast(dtypes::float32).unsqueeze(-1), dmin = f16(b, 2).cast(dtypes::float32).unsqueeze(-1);
  Tensor w = d * sc.cast(dtypes::float32).unsqueeze(-1) * nib - dmin * mn.cast(dtypes::float32).unsqueeze(-1);
  return w.reshape(with(lead, {256}));
}
std::vector<Tensor> q4_k_fields(const Tensor& b) {
  auto [sc, mn] = q4k_scales(b);
  return {scale(b, 0), scale(b, 2), sc, mn, field(b, 16, 144)};
}
Affine q4_k_packed(const std::vector<Tensor>& f) {
  auto [g, nb, n] = strips(f[4]);
  Tensor q = unpack(f[4].reshape({g, nb, 4, 1, 32, n}).expand({g, nb, 4, 2, 32, n}), 2, 4, 2, 15);
  Tensor a = f[0] * f[2].cast(dtypes::float32), c = f[1] * f[3].cast(dtypes::float32) * -1;  // (g, nb, 8, n)
  return {q.reshape({g, nb * 8, 32, n}), a.reshape({g, nb * 8, n}), c.reshape({g, nb * 8, n})};
}

Tensor q6_k_rows(const Tensor& b, const Shape& lead) {
  // Two halves of 128: quarter q of half h takes the low (q < 2) or high nibble of ql[64h + 32(q%2) + l]
  // and bits 2q..2q+1 of qh[32h + l]; its 16-element groups have int8 scales sc[8h + 2q + l/16].
  Tensor ql = field(b, 0, 128).reshape(with(lead, {2, 1, 2, 32})).expand(with(lead, {2, 2, 2, 32}));
  Tensor lo = ((ql >> shifts(2, 4, 2, b.device())) & 15).reshape(with(lead, {2, 4, 32}));
  Tensor qh = field(b, 128, 192).reshape(with(lead, {2, 1, 32})).expand(with(lead, {2, 4, 32}));
  Tensor hi = (qh >> shifts(4, 2, 1, b.device())) & 3;
  Tensor q = (lo | (hi << 4)).cast(dtypes::float32) - 32;
  Tensor sc = field(b, 192, 208).bitcast(dtypes::int8).cast(dtypes::float32).reshape(with(lead, {2, 4, 2, 1}));
  Tensor d = f16(b, 208).cast(dtypes::float32).reshape(with(lead, {1, 1, 1, 1}));
  return (q.reshape(with(lead, {2, 4, 2, 16})) * sc * d).reshape(with(lead, {256}));
}
std::vector<Tensor> q6_k_fields(const Tensor& b) {
  return {scale(b, 208), field(b, 0, 128), field(b, 128, 192), field(b, 192, 208).bitcast(dtypes::int8)};
}
Affine q6_k_packed(const std::vector<Tensor>& f) {
  auto [g, nb, n] = strips(f[1]);
  Tensor lo = unpack(f[1].reshape({g, nb, 2, 1, 2, 32, n}).expand({g, nb, 2, 2, 2, 32, n}), 2, 4, 3, 15);
  Tensor hi = unpack(f[2].reshape({g, nb, 2, 1, 32, n}).expand({g, nb, 2, 4, 32, n}), 4, 2, 2, 3);
  Tensor q = lo.reshape({g, nb, 2, 4, 32, n}) + hi * 16;  // 0..63, offset by 32 in c
  Tensor a = f[0] * f[3].cast(dtypes::float32);             // (g, nb, 16, n): sub-blocks of 16
  return {q.reshape({g, nb * 16, 16, n}), a.reshape({g, nb * 16, n}), a.reshape({g, nb * 16, n}) * -32};
}

constexpr BlockType kTypes[] = {
    {"Q4_0", 32, 18, q4_0_rows, q4_0_fields, q4_0_packed},
    {"Q8_0", 32, 34, q8_0_rows, q8_0_fields, q8_0_packed},
    {"Q4_K", 256, 144, q4_k_rows, q4_k_fields, q4_k_packed},
    {"Q6_K", 256, 210, q6_k_rows, q6_k_fields, q6_k_packed},
};

const BlockType& block_type(std::string_view type) {
  for (const BlockType& t : kTypes)
    if (t.name == type) return t;
  throw ValueError("dequantize",
                   fmt::format("ggml type {} is not a block type (Q4_0, Q8_0, Q4_K, Q6_K are)", type));
}

// blocks (*rows, bytes per row) viewed as (*rows, blocks, block bytes), checked.
Tensor block_view(const Tensor& blocks, const BlockType& t, Shape& lead) {
  if (blocks.dtype() != dtypes::uint8 || blocks.ndim() < 1)
    throw DTypeError("dequantize", fmt::format("{} blocks must be uint8 rows, got {} of {} dims", t.name,
                                               blocks.dtype().name(), blocks.ndim()));
  int64_t row = static_cast<int64_t>(blocks.shape(-1));
  if (row % t.bytes)
    throw ShapeError("dequantize",
                     fmt::format("rows of {} bytes are not whole {} blocks of {} bytes", row, t.name, t.bytes));
  lead.assign(blocks.shape().begin(), blocks.shape().end() - 1);
  lead.push_back(row / t.bytes);
  return blocks.reshape(with(lead, {t.bytes}));
}

}  // namespace

std::pair<int64_t, int64_t> block_size(std::string_view type) {
  const BlockType& t = block_type(type);
  return {t.elems, t.bytes};
}

Tensor dequantize(const Tensor& blocks, std::string_view type) {
  const BlockType& t = block_type(type);
  Shape lead;
  Tensor b = block_view(blocks, t, lead);
  Shape out(lead.begin(), lead.end() - 1);
  out.push_back(lead.back() * t.elems);
  return t.rows(b, lead).reshape(out);
}

Weight Weight::from_gguf(const nn::GGUFFile& f, const std::string& name) {
  auto t = f.tensors.find(name);
  auto i = f.infos.find(name);
  if (t == f.tensors.end() || i == f.infos.end())
    throw FormatError("llm", fmt::format("the model has no tensor '{}'", name));
  return {t->second, i->second.type, i->second.shape, {}};
}

bool Weight::quantized() const { return type != "F32" && type != "F16" && type != "BF16"; }

Tensor Weight::dequantize() const {
  return quantized() ? llm::dequantize(data, type) : data.cast(dtypes::float32);
}

// The outputs a strip holds: on a CPU the matmul's register tile is two vectors of outputs wide, and with
// the strip as wide the loop over the inputs reads one contiguous run of the weight instead of a row-sized
// stride that lands on another page every few steps (as tensor/matmul.cpp's matmul_layout does for floats).
// From this many rows on, linear() dequantizes the weight into memory first.
constexpr int64_t kDequantizeRows = 16;

int64_t strip_width(const std::string& device, int64_t out) {
  const sdk::RendererCaps& caps = runtime::device(device).caps();
  bool cpu = !caps.has_local && caps.has_threads && caps.max_vector_width >= 4;
  int64_t s = std::clamp<int64_t>(2 * caps.max_vector_width, 8, 32);
  return cpu && out % s == 0 ? s : out;
}

std::vector<Tensor> Weight::pack() {
  if (shape.size() != 2) throw ShapeError("pack", fmt::format("a weight to pack is 2-d, got {}", shape_str(shape)));
  int64_t out = shape[0], in = shape[1], s = strip_width(data.device(), out);
  // (out, ...) -> (out/s, ..., s): strips of s outputs, each field's blocks in input order
  auto to_strips = [&](const Tensor& f) {
    Shape split{out / s, s};
    Dims order{0};
    for (int a = 1; a < f.ndim(); a++) split.push_back(f.shape(a)), order.push_back(a + 1);
    order.push_back(1);
    return f.reshape(split).permute(order).contiguous();
  };
  if (!quantized()) {
    packed = {to_strips(data.reshape({out, 1, in}))};  // (strips, 1, in, s)
  } else {
    const BlockType& t = block_type(type);
    Shape lead;
    Tensor b = block_view(data, t, lead);  // (out, blocks, bytes)
    for (Tensor& f : t.fields(b)) packed.push_back(to_strips(f));
  }
  data = Tensor();
  return packed;
}

Tensor Weight::dequantize_t(bool store) const {
  if (packed.empty()) throw ValueError("linear", fmt::format("the {} weight is not packed", shape_str(shape)));
  Tensor w;  // (strips, in, s)
  if (quantized()) {
    Affine f = block_type(type).packed(packed);
    if (f.pairs > 1) {  // back to the file's element order: (strips, blocks, L/pairs, pairs, s) transposed
      auto [g, nb, n] = strips(f.q);
      int64_t len = static_cast<int64_t>(f.q.shape(2));
      f.q = f.q.reshape({g, nb, len / f.pairs, f.pairs, n}).permute({0, 1, 3, 2, 4}).reshape({g, nb, len, n});
    }
    Tensor v = f.q * f.a.unsqueeze(-2);
    if (f.c.defined()) v = v + f.c.unsqueeze(-2);
    w = v.reshape({v.shape(0), shape[1], v.shape(-1)});
  } else {
    w = packed[0].cast(dtypes::float32).reshape({packed[0].shape(0), shape[1], packed[0].shape(-1)});
  }
  // stored in strips, the layout the CPU matmul packs its weight into, so it finds it packed already
  if (store) w = w.contiguous();
  return w.permute({1, 0, 2}).reshape({shape[1], shape[0]});
}

Tensor Weight::linear(const Tensor& x, const Tensor& bias) const {
  if (shape.size() != 2 || x.shape(-1) != shape[1])
    throw ShapeError("linear", fmt::format("cannot apply a weight of {} to {}", shape_str(shape),
                                           shape_str(x.shape())));
  if (packed.empty()) throw ValueError("linear", fmt::format("the {} weight is not packed", shape_str(shape)));
  Shape lead(x.shape().begin(), x.shape().end() - 1);
  sint rows = 1;
  for (const sint& d : lead) rows *= d;
  Tensor y;
  if (rows.is_number() && static_cast<int64_t>(rows) >= kDequantizeRows) {
    // many rows (a prefill chunk): each weight is read by every row, so it is dequantized once into
    // float32 and the product is the matmul's own (tiled, packed), not the dequantization per row
    y = x.matmul(dequantize_t(true));
  } else if (quantized()) {
    // y = sum over sub-blocks of a * (q . x) + c * sum(x): the scales multiply once a sub-block, not once a
    // weight, and the inner product runs over the small integers alone
    Affine f = block_type(type).packed(packed);
    int64_t sb = static_cast<int64_t>(f.q.shape(1)), len = static_cast<int64_t>(f.q.shape(2));
    Tensor xr = in_q_order(x.reshape(with(lead, {1, sb, len})), f.pairs).unsqueeze(-1);
    y = (xr * f.q).sum(-2) * f.a;  // (..., g, sb, s)
    if (f.c.defined()) y = y + xr.sum(-2) * f.c;
    y = y.sum(-2).reshape(with(lead, {shape[0]}));
  } else {
    // (..., in, 1) * (in, out) summed over in
    y = (x.unsqueeze(-1) * dequantize_t()).sum(-2);
  }
  return bias.defined() ? y + bias.cast(dtypes::float32) : y;
}

int64_t Weight::nbytes() const {
  int64_t n = data.defined() ? static_cast<int64_t>(data.numel()) * data.dtype().itemsize() : 0;
  for (const Tensor& p : packed) n += static_cast<int64_t>(p.numel()) * p.dtype().itemsize();
  return n;
}

}  // namespace tg::llm
