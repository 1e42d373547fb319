#pragma once
// Host-side element values for every dtype: encoding to and from storage bytes and C-style conversion
// (rounding and wrapping as dtypes::truncate_float and dtypes::wrap_int). Used to move data between C++
// vectors and buffers and by the host reference evaluator.
#include <cstddef>
#include <cstdint>

#include "base/dtype.hpp"
#include "uop/uop.hpp"

namespace tg::host {

// Values are kept in the kind of their dtype: bool, int64_t (every integer; uint64 keeps its bit
// pattern) or double (every float, already rounded to the dtype).
ConstValue normalize(DType d, ConstValue v);
// C conversion semantics between dtypes (float->int truncates, ints wrap, anything->bool is != 0).
ConstValue convert(DType to, DType from, ConstValue v);

ConstValue load(DType d, const std::byte* p);
void store(DType d, ConstValue v, std::byte* p);

inline double as_double(DType d, ConstValue v) {
  if (auto* b = std::get_if<bool>(&v)) return *b ? 1.0 : 0.0;
  if (auto* i = std::get_if<int64_t>(&v))
    return d.scalar() == Scalar::UINT64 ? static_cast<double>(static_cast<uint64_t>(*i))
                                        : static_cast<double>(*i);
  return std::get<double>(v);
}

}  // namespace tg::host
