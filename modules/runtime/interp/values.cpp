// INTERP's scalar semantics (values.hpp): the one table in uop/scalar.hpp, on INTERP's lanes.
#include "runtime/interp/values.hpp"

#include "uop/scalar.hpp"

namespace tg::runtime::interp {

namespace {

scalar::Value lane(const Val& v) { return scalar::int_value(v.i); }  // the union's bits, whichever member
Val val(scalar::Value v) { return int_val(v.i); }

}  // namespace

Val from_const(const ConstValue& c, DType d) { return val(scalar::from_const(c, d)); }

Val alu(Ops op, DType out, DType in, std::span<const Val> src) {
  if (op == Ops::WHERE) return src[0].i != 0 ? src[1] : src[2];  // keeps the pointer part of pointer lanes
  scalar::Value s[3];
  for (size_t i = 0; i < src.size() && i < 3; i++) s[i] = lane(src[i]);
  return val(scalar::alu(op, out, in, std::span(s, src.size())));
}

Val cast(const Val& v, DType from, DType to) { return val(scalar::cast(lane(v), from, to)); }

void store_scalar(std::byte* p, DType d, const Val& v) { scalar::store(p, d, lane(v)); }

Val load_scalar(const std::byte* p, DType d) { return val(scalar::load(p, d)); }

uint64_t threefry2x32(uint64_t x, uint64_t key) { return scalar::threefry2x32(x, key); }

}  // namespace tg::runtime::interp
