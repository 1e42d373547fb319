// Host element values through the one table of scalar semantics (uop/scalar.hpp).
#include "tensor/host_value.hpp"

#include "uop/scalar.hpp"

namespace tg::host {

ConstValue normalize(DType d, ConstValue v) { return scalar::to_const(scalar::from_const(v, d), d); }

ConstValue convert(DType to, DType from, ConstValue v) {
  return scalar::to_const(scalar::cast(scalar::from_const(v, from), from, to), to);
}

ConstValue load(DType d, const std::byte* p) { return scalar::to_const(scalar::load(p, d), d); }

void store(DType d, ConstValue v, std::byte* p) { scalar::store(p, d, scalar::from_const(v, d)); }

}  // namespace tg::host
