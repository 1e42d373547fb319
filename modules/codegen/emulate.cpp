// Floats a renderer stores but cannot compute (RendererCaps::emulated_dtypes): bfloat16 and fp8 live in
// memory as uint16/uint8 bits, every value in registers is a float32, each op on them is a float32 op
// rounded back (round to nearest even), and conversions are integer ops rendered into the kernel.
// Overflow follows PyTorch's .to(): fp8e4m3 (no infinities) gives NaN, fp8e5m2 gives infinity. A NaN keeps
// its sign and the top bits of its payload (as INTERP), so a copy through a kernel keeps every bit pattern.
#include "codegen/passes.hpp"

namespace tg::codegen {

namespace {

// Bit operations with a number on the right, as the arithmetic ones have in uop.hpp.
UOpRef operator>>(const UOpRef& a, int64_t b) { return a >> a->const_like(b); }
UOpRef operator<<(const UOpRef& a, int64_t b) { return a << a->const_like(b); }
UOpRef operator&(const UOpRef& a, int64_t b) { return a & a->const_like(b); }

DType f32_like(DType d) { return DType(Scalar::FLOAT32, d.count()); }
DType bits_like(DType d) {
  return DType(d.scalar_itemsize() == 2 ? Scalar::UINT16 : Scalar::UINT8, d.count());
}
DType u32_like(DType d) { return DType(Scalar::UINT32, d.count()); }

// float32 -> the bits of `to` (uint16/uint8 lanes), round to nearest even.
UOpRef encode(const UOpRef& x, Scalar to) {
  DType u32 = u32_like(x->dtype()), out = bits_like(DType(to, x->dtype().count()));
  UOpRef u = x->bitcast(u32);
  if (to == Scalar::BFLOAT16) {  // keep the high half, rounded; a NaN keeps its sign and payload's top bits
    UOpRef r = (u + ((u >> int64_t{16}) & int64_t{1}) + int64_t{0x7FFF}) >> int64_t{16};
    UOpRef nan = u->const_like(int64_t{0x7F800000})->lt(u & int64_t{0x7FFFFFFF});
    UOpRef high = u >> int64_t{16};
    UOpRef payload = (high & int64_t{0x7F})
                         ->ne(u->const_like(int64_t{0}))
                         ->where(high, high | u->const_like(int64_t{0x40}));
    return nan->where(payload, r)->cast(out);
  }
  // fp8: the magnitude's bits; denormals by adding a float whose ulp is the fp8 denormal step
  const bool e4 = to == Scalar::FP8E4M3;
  const int mbits = e4 ? 3 : 2, bias = e4 ? 7 : 15;
  UOpRef sign = (u >> int64_t{24}) & int64_t{0x80}, mag = u & int64_t{0x7FFFFFFF};
  UOpRef f = mag->bitcast(f32_like(x->dtype()));
  const int64_t min_normal = int64_t{127 + 1 - bias} << 23, step = int64_t{127 - bias + 23 - mbits + 1} << 23;
  UOpRef denorm = (f + u->const_like(step)->bitcast(f->dtype()))->bitcast(u32) - step;  // x + 2^k, ulp = step
  UOpRef odd = (mag >> int64_t{23 - mbits}) & int64_t{1};
  UOpRef normal = (mag + (int64_t{(bias - 127) * (int64_t{1} << 23)} & 0xFFFFFFFF) +
                   ((int64_t{1} << (22 - mbits)) - 1) + odd) >>
                  int64_t{23 - mbits};
  UOpRef bits = mag->lt(mag->const_like(min_normal))->where(denorm, normal);
  if (e4)  // |x| >= 480 (halfway above 448, and inf) and NaN -> 0x7F
    bits = mag->lt(mag->const_like(int64_t{0x43F00000}))->where(bits, bits->const_like(int64_t{0x7F}));
  else {  // |x| >= 65536 -> inf; NaN keeps its payload's top two bits (never 0, which would be inf)
    UOpRef m = (mag >> int64_t{21}) & int64_t{3};
    UOpRef nan = m->ne(m->const_like(int64_t{0}))->where(m, m->const_like(int64_t{2})) |
                 mag->const_like(int64_t{0x7C});
    bits =
        mag->lt(mag->const_like(int64_t{0x47800000}))
            ->where(
                bits,
                mag->lt(mag->const_like(int64_t{0x7F800001}))->where(bits->const_like(int64_t{0x7C}), nan));
  }
  return (bits | sign)->cast(out);
}

// The bits of `from` (uint16/uint8 lanes) -> float32, exact.
UOpRef decode(const UOpRef& b, Scalar from) {
  DType u32 = u32_like(b->dtype()), f32 = f32_like(b->dtype());
  UOpRef u = b->cast(u32);
  if (from == Scalar::BFLOAT16) return (u << int64_t{16})->bitcast(f32);
  const bool e4 = from == Scalar::FP8E4M3;
  const int mbits = e4 ? 3 : 2, bias = e4 ? 7 : 15;
  UOpRef sign = (u & int64_t{0x80}) << int64_t{24}, mag = u & int64_t{0x7F};
  UOpRef normal = (mag << int64_t{23 - mbits}) + (int64_t{127 - bias} << 23);
  // denormal: mantissa * 2^(1 - bias - mbits), exact in float32
  UOpRef denorm = (mag->cast(f32) * std::ldexp(1.0, 1 - bias - mbits))->bitcast(u32);
  UOpRef bits = mag->lt(mag->const_like(int64_t{1} << mbits))->where(denorm, normal);
  if (e4)
    bits = mag->ne(mag->const_like(int64_t{0x7F}))->where(bits, bits->const_like(int64_t{0x7FC00000}));
  else  // exponent all ones: inf (mantissa 0) or NaN
    bits = mag->lt(mag->const_like(int64_t{0x7C}))
               ->where(bits, bits->const_like(int64_t{0x7F800000}) | ((mag & int64_t{3}) << int64_t{21}));
  return (bits | sign)->bitcast(f32);
}

UOpRef round_to(const UOpRef& x, Scalar to) { return decode(encode(x, to), to); }

}  // namespace

PatternMatcher encode_stores(const sdk::RendererCaps& caps) {
  const uint64_t mask = sdk::emulated_dtypes(caps);
  std::vector<Rule> rules;
  if (mask == 0) return PatternMatcher(std::move(rules));
  // BITCAST(v) to an integer -> the bits of v, seen before v itself is retyped (the format is v's type)
  rules.push_back({UPat(Ops::BITCAST), [mask](Match& m) -> UOpRef {
                     const UOpRef& x = m.root();
                     DType d = x->src(0)->dtype();
                     if (((mask >> static_cast<unsigned>(d.scalar())) & 1u) == 0) return nullptr;
                     return encode(x->src(0)->cast(f32_like(d)), d.scalar())->bitcast(x->dtype());
                   }});
  // STORE(p, v) -> STORE(p, bits of v)
  rules.push_back({UPat(Ops::STORE), [mask](Match& m) -> UOpRef {
                     const UOpRef& x = m.root();
                     if (x->src().size() < 2) return nullptr;
                     DType d = x->src(1)->dtype();
                     if (((mask >> static_cast<unsigned>(d.scalar())) & 1u) == 0 ||
                         x->src(0)->dtype().addrspace() == AddrSpace::REG)
                       return nullptr;
                     std::vector<UOpRef> src(x->src().begin(), x->src().end());
                     src[1] = encode(src[1]->cast(f32_like(d)), d.scalar());
                     return x->with_src(std::move(src));
                   }});
  return PatternMatcher(std::move(rules));
}

PatternMatcher emulate_dtypes(const sdk::RendererCaps& caps) {
  const uint64_t mask = sdk::emulated_dtypes(caps);
  auto emulated = [mask](DType d) { return ((mask >> static_cast<unsigned>(d.scalar())) & 1u) != 0; };
  std::vector<Rule> rules;
  if (mask == 0) return PatternMatcher(std::move(rules));
  // buffers and their addresses: memory holds the bits, registers hold float32
  rules.push_back({UPat(), [emulated](Match& m) -> UOpRef {  // DEFINE_GLOBAL/LOCAL/REG, INDEX, AFTER
                     DType d = m.root()->dtype();
                     if (!d.is_ptr() || !emulated(d)) return nullptr;
                     DType base = d.addrspace() == AddrSpace::REG ? f32_like(d) : bits_like(d);
                     return m.root()->with_dtype(base.ptr(d.addrspace(), d.ptr_size()));
                   }});
  // LOAD bits -> decode; a gated load's alternative value is encoded too
  rules.push_back({UPat(Ops::LOAD), [emulated](Match& m) -> UOpRef {
                     const UOpRef& x = m.root();
                     if (!emulated(x->dtype())) return nullptr;
                     Scalar s = x->dtype().scalar();
                     if (x->src(0)->dtype().scalar() == Scalar::FLOAT32)
                       return x->with_dtype(f32_like(x->dtype()));
                     std::vector<UOpRef> src(x->src().begin(), x->src().end());
                     if (src.size() > 1) src[1] = encode(src[1], s);
                     return decode(UOp::make(Ops::LOAD, bits_like(x->dtype()), std::move(src), x->arg()), s);
                   }});
  // CAST to an emulated type: float32, rounded to it
  rules.push_back({UPat(Ops::CAST), [emulated](Match& m) -> UOpRef {
                     const UOpRef& x = m.root();
                     if (!emulated(x->dtype())) return nullptr;
                     return round_to(x->src(0)->cast(f32_like(x->dtype())), x->dtype().scalar());
                   }});
  // arithmetic in float32, rounded back; data movement and exact ops just change type
  rules.push_back({UPat(), [emulated](Match& m) -> UOpRef {
                     const UOpRef& x = m.root();
                     if (x->dtype().is_ptr() || !emulated(x->dtype())) return nullptr;
                     if (x->op() == Ops::BITCAST)  // integer bits -> the value they encode
                       return decode(x->src(0)->bitcast(bits_like(x->dtype())), x->dtype().scalar());
                     UOpRef f = x->with_dtype(f32_like(x->dtype()));
                     bool exact = !group::ALU.contains(x->op()) || x->op() == Ops::WHERE ||
                                  x->op() == Ops::MAX || x->op() == Ops::NEG;
                     return exact ? f : round_to(f, x->dtype().scalar());
                   }});
  return PatternMatcher(std::move(rules));
}

}  // namespace tg::codegen
