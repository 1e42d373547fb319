#define BOOST_TEST_MODULE dtype
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <limits>

#include "base/dtype.hpp"
#include "base/error.hpp"

using namespace tg;
using namespace tg::dtypes;

namespace {
bool lub(DType a, DType b, DType want) {
  DType got = least_upper(a, b), rev = least_upper(b, a);
  if (got == want && rev == want) return true;
  BOOST_TEST_MESSAGE("least_upper(" << a << ", " << b << ") = " << got << ", want " << want);
  return false;
}
}  // namespace

// Pairs from tinygrad's test/null/test_dtype_spec.py (TestTypePromotion); weak results are strong here.
BOOST_AUTO_TEST_CASE(promotion_matches_tinygrad) {
  BOOST_TEST(lub(bool_, int8, int8));
  BOOST_TEST(lub(int8, uint8, int16));
  BOOST_TEST(lub(uint8, int16, int16));
  BOOST_TEST(lub(int16, uint16, int32));
  BOOST_TEST(lub(uint16, int32, int32));
  BOOST_TEST(lub(int32, uint32, int64));
  BOOST_TEST(lub(uint32, int64, int64));
  for (DType s : {int8, int16, int32, int64})
    BOOST_TEST(lub(s, uint64, float32));  // weakfloat -> default float
  BOOST_TEST(lub(float16, float32, float32));
  BOOST_TEST(lub(float32, float64, float64));
  BOOST_TEST(lub(bool_, float32, float32));
  BOOST_TEST(lub(bool_, float64, float64));
  BOOST_TEST(lub(float16, int64, float16));
  BOOST_TEST(lub(float16, uint64, float16));
  BOOST_TEST(lub(fp8e4m3, fp8e5m2, float16));
  BOOST_TEST(lub(fp8e4m3, bfloat16, bfloat16));
  BOOST_TEST(lub(fp8e5m2, bfloat16, bfloat16));
  BOOST_TEST(lub(fp8e4m3, float16, float16));
  BOOST_TEST(lub(fp8e4m3, int64, fp8e4m3));
  BOOST_TEST(lub(fp8e5m2, uint64, fp8e5m2));
  BOOST_TEST(lub(float16, bfloat16, float32));
  BOOST_TEST(lub(int32, float16, float16));
  for (DType d : all_scalars()) BOOST_TEST(lub(d, d, d));
  const DType three[] = {uint8, int8, float16};
  BOOST_TEST((least_upper(three) == float16));
  BOOST_TEST((least_upper(float32.vec(4), int32.vec(4)) == float32.vec(4)));
  BOOST_CHECK_THROW(least_upper(float32.vec(4), float32), DTypeError);
  BOOST_CHECK_THROW(least_upper(float32.ptr(), float32), DTypeError);
}

BOOST_AUTO_TEST_CASE(index_absorbs_ints) {
  BOOST_TEST(lub(dtypes::index, int32, dtypes::index));
  BOOST_TEST(lub(dtypes::index, bool_, dtypes::index));
  BOOST_TEST(lub(dtypes::index, float16, float16));
}

BOOST_AUTO_TEST_CASE(weak_scalars_keep_the_tensor_dtype) {
  BOOST_TEST((least_upper_weak(int32, WeakKind::INT) == int32));  // int_tensor * 2
  BOOST_TEST((least_upper_weak(uint8, WeakKind::INT) == uint8));
  BOOST_TEST((least_upper_weak(float16, WeakKind::FLOAT) == float16));  // half_tensor * 2.5
  BOOST_TEST((least_upper_weak(bfloat16, WeakKind::INT) == bfloat16));
  BOOST_TEST((least_upper_weak(int32, WeakKind::FLOAT) == float32));  // int_tensor * 2.5
  BOOST_TEST((least_upper_weak(uint64, WeakKind::FLOAT) == float32));
  BOOST_TEST((least_upper_weak(bool_, WeakKind::INT) == int32));  // bool_tensor * 2
  BOOST_TEST((least_upper_weak(bool_, WeakKind::FLOAT) == float32));
  BOOST_TEST((least_upper_weak(bool_, WeakKind::BOOL) == bool_));
  BOOST_TEST((least_upper_weak(int8, WeakKind::BOOL) == int8));
  BOOST_TEST((least_upper_weak(fp8e4m3, WeakKind::FLOAT) == fp8e4m3));
  BOOST_TEST((least_upper_weak(float16.vec(4), WeakKind::FLOAT) == float16.vec(4)));
}

BOOST_AUTO_TEST_CASE(float_and_accumulator_types) {
  BOOST_TEST((least_upper_float(int32) == float32));
  BOOST_TEST((least_upper_float(bool_) == float32));
  BOOST_TEST((least_upper_float(float16) == float16));
  BOOST_TEST((least_upper_float(float64) == float64));
  BOOST_TEST((sum_acc_dtype(uint8) == uint32));
  BOOST_TEST((sum_acc_dtype(uint64) == uint64));
  BOOST_TEST((sum_acc_dtype(int8) == int32));
  BOOST_TEST((sum_acc_dtype(bool_) == int32));
  BOOST_TEST((sum_acc_dtype(int64) == int64));
  BOOST_TEST((sum_acc_dtype(float16) == float32));
  BOOST_TEST((sum_acc_dtype(float64) == float64));
}

BOOST_AUTO_TEST_CASE(sizes_and_limits) {
  BOOST_TEST(bool_.itemsize() == 1u);
  BOOST_TEST(int8.itemsize() == 1u);
  BOOST_TEST(uint16.itemsize() == 2u);
  BOOST_TEST(float16.itemsize() == 2u);
  BOOST_TEST(bfloat16.itemsize() == 2u);
  BOOST_TEST(int32.itemsize() == 4u);
  BOOST_TEST(float64.itemsize() == 8u);
  BOOST_TEST(fp8e5m2.itemsize() == 1u);
  BOOST_TEST(float32.vec(4).itemsize() == 16u);
  BOOST_TEST(float32.vec(4).scalar_itemsize() == 4u);
  BOOST_TEST(half.ptr().itemsize() == 8u);
  BOOST_TEST(int8.min_int() == -128);
  BOOST_TEST(int8.max_uint() == 127u);
  BOOST_TEST(uint8.max_uint() == 255u);
  BOOST_TEST(int16.min_int() == -32768);
  BOOST_TEST(int32.min_int() == -2147483648LL);
  BOOST_TEST(uint32.max_uint() == 4294967295ull);
  BOOST_TEST(int64.min_int() == std::numeric_limits<int64_t>::min());
  BOOST_TEST(int64.max_uint() == 9223372036854775807ull);
  BOOST_TEST(uint64.max_uint() == 18446744073709551615ull);
  BOOST_TEST(uint64.min_int() == 0);
  BOOST_TEST(bool_.min() == 0.0);
  BOOST_TEST(bool_.max() == 1.0);
  BOOST_TEST(float16.max() == 65504.0);
  BOOST_TEST(float16.min() == -65504.0);
  BOOST_TEST(bfloat16.max() == 3.3895313892515355e38);
  BOOST_TEST(float32.max() == 3.4028234663852886e38);
  BOOST_TEST(fp8e4m3.max() == 448.0);
  BOOST_TEST(fp8e5m2.max() == 57344.0);
  BOOST_TEST(int32.max() == 2147483647.0);
}

BOOST_AUTO_TEST_CASE(kinds) {
  BOOST_TEST(float16.is_float());
  BOOST_TEST(fp8e4m3.is_float());
  BOOST_TEST(!int32.is_float());
  BOOST_TEST(dtypes::index.is_int());
  BOOST_TEST(!bool_.is_int());
  BOOST_TEST(uint8.is_unsigned());
  BOOST_TEST(!int8.is_unsigned());
  BOOST_TEST(!dtypes::index.is_unsigned());
  BOOST_TEST(float32.vec(4).ptr(AddrSpace::LOCAL, 16).is_ptr());
  BOOST_TEST((float32.vec(4).ptr().base() == float32.vec(4)));
  BOOST_TEST((float32.vec(4).ptr().scalar_type() == float32));
}

BOOST_AUTO_TEST_CASE(names) {
  BOOST_TEST(float32.name() == "float");
  BOOST_TEST(float16.name() == "half");
  BOOST_TEST(uint8.name() == "unsigned char");
  BOOST_TEST(int64.name() == "long");
  BOOST_TEST(float32.str() == "dtypes.float");
  BOOST_TEST(int32.vec(4).str() == "dtypes.int.vec(4)");
  BOOST_TEST(float32.ptr().str() == "dtypes.float.ptr()");
  BOOST_TEST(float32.ptr(AddrSpace::GLOBAL, 16).str() == "dtypes.float.ptr(16)");
  BOOST_TEST(float32.ptr(AddrSpace::LOCAL, 16).str() == "dtypes.float.ptr(16, AddrSpace.LOCAL)");
  BOOST_TEST((from_name("float32") == float32));
  BOOST_TEST((from_name("float") == float32));
  BOOST_TEST((from_name("half") == float16));
  BOOST_TEST((from_name("int64") == int64));
  BOOST_TEST((from_name("uchar") == uint8));
  BOOST_TEST((from_name("bfloat16") == bfloat16));
  BOOST_TEST(!from_name("float128").has_value());
  BOOST_TEST(all_scalars().size() == 15u);
}

// Hand-checked roundings: half has 10 mantissa bits, bfloat16 7, fp8 e4m3 3 and e5m2 2.
BOOST_AUTO_TEST_CASE(float_truncation) {
  BOOST_TEST(truncate_float(float16, 0.1) == 0.0999755859375);         // 1638/16384
  BOOST_TEST(truncate_float(float16, 65519.0) == 65504.0);             // below the halfway point to 65536
  BOOST_TEST(std::isinf(truncate_float(float16, 65520.0)));            // ties to even: overflows
  BOOST_TEST(truncate_float(float16, 1e-8) == 0.0);                    // below half the smallest subnormal
  BOOST_TEST(truncate_float(float16, 6e-8) == 5.960464477539063e-08);  // smallest subnormal 2^-24
  BOOST_TEST(truncate_float(float16, 2049.0) == 2048.0);               // ties to even
  BOOST_TEST(truncate_float(float16, 2051.0) == 2052.0);
  BOOST_TEST(truncate_float(bfloat16, 1.00390625) == 1.0);  // 1 + 2^-8 ties to even
  BOOST_TEST(truncate_float(bfloat16, 3.14159265) == 3.140625);
  BOOST_TEST(truncate_float(float32, 0.1) == static_cast<double>(0.1f));
  BOOST_TEST(truncate_float(float64, 0.1) == 0.1);
  BOOST_TEST(std::isnan(truncate_float(fp8e4m3, 1000.0)));  // overflow is NaN, as PyTorch's .to()
  BOOST_TEST(truncate_float(fp8e4m3, 464.0) == 448.0);      // the tie below 480 rounds to even
  BOOST_TEST(truncate_float(fp8e4m3, 0.3) == 0.3125);    // 1.25 * 2^-2
  BOOST_TEST(std::isnan(truncate_float(fp8e4m3, INFINITY)));
  BOOST_TEST(std::isinf(truncate_float(fp8e5m2, 100000.0)));  // overflow is inf, as PyTorch's .to()
  BOOST_TEST(truncate_float(fp8e5m2, 0.3) == 0.3125);
  BOOST_TEST(truncate_float(fp8e5m2, -3.3) == -3.5);
  BOOST_CHECK_THROW(truncate_float(int32, 1.0), DTypeError);
}

BOOST_AUTO_TEST_CASE(integer_wrapping) {
  BOOST_TEST(wrap_int(int8, 128) == -128);
  BOOST_TEST(wrap_int(uint8, 256 + 7) == 7);
  BOOST_TEST(wrap_int(int16, 40000) == 40000 - 65536);
  BOOST_TEST(wrap_int(uint32, -1) == 4294967295LL);
  BOOST_TEST(wrap_int(int32, 2147483648LL) == -2147483648LL);
  BOOST_TEST(wrap_int(int64, -5) == -5);
  BOOST_TEST(wrap_int(bool_, 4) == 1);
}
