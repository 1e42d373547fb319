// bfloat16 and fp8 on CLANG, which has no C type for them: codegen stores their bits in uint16/uint8 and
// computes in float32 (codegen/emulate.cpp). Casts are checked bit for bit against PyTorch's .to().
#define BOOST_TEST_MODULE clang_emulated_dtypes
#include <boost/test/unit_test.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

#include "tensor/tensor.hpp"

namespace {

using tg::Tensor;
namespace dtypes = tg::dtypes;

struct Row {
  uint32_t f32;
  uint16_t bf16;
  uint8_t e4m3, e5m2;
};
// Generated with python3: torch.tensor(x).to(torch.bfloat16).view(torch.int16) for bfloat16. The installed
// torch (1.13) has no float8, so fp8 comes from ml_dtypes' float8_e4m3fn/float8_e5m2 astype, which rounds as
// PyTorch's c10 conversions do (overflow: e4m3 -> NaN, e5m2 -> inf; no saturation). NaN rows are the one
// place we differ from PyTorch: a NaN keeps its sign and its payload's top bits (bfloat16 0x7FC0/0xFFC0, e5m2
// 0x7E/0xFE as ml_dtypes and INTERP) so copies keep bits; PyTorch's CPU bfloat16 NaN is 0xFFFF, c10's e5m2 0x7F.
const Row kRows[] = {
    {0x00000000, 0x0000, 0x00, 0x00},  // 0.0
    {0x80000000, 0x8000, 0x80, 0x80},  // -0.0
    {0x3F800000, 0x3F80, 0x38, 0x3C},  // 1.0
    {0xBF800000, 0xBF80, 0xB8, 0xBC},  // -1.0
    {0x7FC00000, 0x7FC0, 0x7F, 0x7E},  // nan
    {0xFFC00000, 0xFFC0, 0xFF, 0xFE},  // nan
    {0x7F800000, 0x7F80, 0x7F, 0x7C},  // inf
    {0xFF800000, 0xFF80, 0xFF, 0xFC},  // -inf
    {0x3DCCCCCD, 0x3DCD, 0x1D, 0x2E},  // 0.10000000149011612
    {0xC06CCCCD, 0xC06D, 0xC7, 0xC3},  // -3.700000047683716
    {0x42C80000, 0x42C8, 0x6C, 0x56},  // 100.0
    {0x3A83126F, 0x3A83, 0x01, 0x14},  // 0.0010000000474974513
    {0x322BCC77, 0x322C, 0x00, 0x00},  // 9.99999993922529e-09
    {0x3F808000, 0x3F80, 0x38, 0x3C},  // 1.00390625
    {0x3F818000, 0x3F82, 0x38, 0x3C},  // 1.01171875
    {0x3F808008, 0x3F81, 0x38, 0x3C},  // 1.0039072036743164
    {0x7F7F0000, 0x7F7F, 0x7F, 0x7C},  // 3.3895313892515355e+38
    {0x7F7FC99E, 0x7F80, 0x7F, 0x7C},  // 3.3999999521443642e+38
    {0x000116C2, 0x0001, 0x00, 0x00},  // 9.99994610111476e-41
    {0x80010075, 0x8001, 0x80, 0x80},  // -9.199944807831722e-41
    {0x43E00000, 0x43E0, 0x7E, 0x5F},  // 448.0
    {0x43E80000, 0x43E8, 0x7E, 0x5F},  // 464.0
    {0x43EB0000, 0x43EB, 0x7F, 0x5F},  // 470.0
    {0x43F00000, 0x43F0, 0x7F, 0x60},  // 480.0
    {0x3B000000, 0x3B00, 0x01, 0x18},  // 0.001953125
    {0x3A800000, 0x3A80, 0x00, 0x14},  // 0.0009765625
    {0x3B400000, 0x3B40, 0x02, 0x1A},  // 0.0029296875
    {0x3C800000, 0x3C80, 0x08, 0x24},  // 0.015625
    {0x3F880000, 0x3F88, 0x38, 0x3C},  // 1.0625
    {0x3F980000, 0x3F98, 0x3A, 0x3D},  // 1.1875
    {0xC61C4000, 0xC61C, 0xFF, 0xF1},  // -10000.0
    {0x3C666666, 0x3C66, 0x07, 0x23},  // 0.01406249962747097
    {0x47600000, 0x4760, 0x7F, 0x7B},  // 57344.0
    {0x47700000, 0x4770, 0x7F, 0x7C},  // 61440.0
    {0x476A6000, 0x476A, 0x7F, 0x7B},  // 60000.0
    {0x37800000, 0x3780, 0x00, 0x01},  // 1.52587890625e-05
    {0x37000000, 0x3700, 0x00, 0x00},  // 7.62939453125e-06
    {0x37C00000, 0x37C0, 0x00, 0x02},  // 2.288818359375e-05
    {0x3F900000, 0x3F90, 0x39, 0x3C},  // 1.125
    {0x3FB00000, 0x3FB0, 0x3B, 0x3E},  // 1.375
    {0x47C35000, 0x47C3, 0x7F, 0x7C},  // 100000.0
    {0xB8E00000, 0xB8E0, 0x80, 0x87},  // -0.0001068115234375
};

std::vector<float> inputs() {
  std::vector<float> v;
  for (const Row& r : kRows) v.push_back(std::bit_cast<float>(r.f32));
  return v;
}

// The bits of the storage type after a cast on CLANG, and the float32 the stored value reads back as.
template <typename Bits>
void check_cast(tg::DType d, tg::DType bits_dtype, Bits Row::*expected) {
  Tensor x(inputs(), {}, dtypes::float32, "CLANG");
  Tensor y = x.cast(d).realize();
  std::vector<Bits> bits = y.bitcast(bits_dtype).template to_vector<Bits>();
  std::vector<float> back = y.cast(dtypes::float32).template to_vector<float>();
  std::vector<Bits> want_bits;
  for (const Row& r : kRows) want_bits.push_back(r.*expected);
  BOOST_REQUIRE_EQUAL(bits.size(), std::size(kRows));
  for (size_t i = 0; i < bits.size(); i++) {
    float in = std::bit_cast<float>(kRows[i].f32);
    BOOST_TEST_CONTEXT(d.str() << " of " << in << " (0x" << std::hex << kRows[i].f32 << ")") {
      BOOST_TEST(uint32_t{bits[i]} == uint32_t{want_bits[i]});
      // reading the bits back: the same value as decoding the expected bits through a second cast
      Tensor ref =
          Tensor(std::vector<Bits>{want_bits[i]}, {}, bits_dtype, "CLANG").bitcast(d).cast(dtypes::float32);
      float want = ref.to_vector<float>()[0];
      if (std::isnan(want))
        BOOST_TEST(std::isnan(back[i]));
      else
        BOOST_TEST(std::bit_cast<uint32_t>(back[i]) == std::bit_cast<uint32_t>(want));
    }
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(float32_to_bfloat16_matches_torch_bits) {
  check_cast(dtypes::bfloat16, dtypes::uint16, &Row::bf16);
}
BOOST_AUTO_TEST_CASE(float32_to_fp8e4m3_matches_torch_bits) {
  check_cast(dtypes::fp8e4m3, dtypes::uint8, &Row::e4m3);
}
BOOST_AUTO_TEST_CASE(float32_to_fp8e5m2_matches_torch_bits) {
  check_cast(dtypes::fp8e5m2, dtypes::uint8, &Row::e5m2);
}

// Decoded values checked by hand: bfloat16 is the high half of a float32; fp8 by its exponent and mantissa.
BOOST_AUTO_TEST_CASE(bits_decode_to_their_values) {
  auto decode = [](std::vector<uint8_t> b, tg::DType d) {
    return Tensor(b, {}, dtypes::uint8, "CLANG").bitcast(d).cast(dtypes::float32).to_vector<float>();
  };
  std::vector<float> e4 = decode({0x01, 0x08, 0x38, 0x7E, 0xB8, 0x80}, dtypes::fp8e4m3);
  BOOST_TEST((e4 == std::vector<float>{0x1p-9f, 0x1p-6f, 1.0f, 448.0f, -1.0f, -0.0f}));
  BOOST_TEST(std::signbit(e4[5]));
  std::vector<float> e5 = decode({0x01, 0x3C, 0x7B, 0x7C, 0xFC}, dtypes::fp8e5m2);
  BOOST_TEST((e5 == std::vector<float>{0x1p-16f, 1.0f, 57344.0f, INFINITY, -INFINITY}));
  BOOST_TEST(std::isnan(decode({0x7F}, dtypes::fp8e4m3)[0]));
  BOOST_TEST(std::isnan(decode({0x7D}, dtypes::fp8e5m2)[0]));
}

// torch: a = ((i*7)%11-5)*0.37 (6x8), b = ((i*5)%9-4)*0.53 (8x5); (a.bfloat16() @ b.bfloat16()).float()
BOOST_AUTO_TEST_CASE(bfloat16_matmul_matches_torch) {
  std::vector<float> av, bv;
  for (int i = 0; i < 48; i++) av.push_back(static_cast<float>(((i * 7) % 11 - 5) * 0.37));
  for (int i = 0; i < 40; i++) bv.push_back(static_cast<float>(((i * 5) % 9 - 4) * 0.53));
  Tensor a = Tensor(av, {6, 8}, dtypes::float32, "CLANG").cast(dtypes::bfloat16);
  Tensor b = Tensor(bv, {8, 5}, dtypes::float32, "CLANG").cast(dtypes::bfloat16);
  Tensor m = a.matmul(b);
  BOOST_TEST(m.dtype() == dtypes::bfloat16);
  std::vector<float> got = m.cast(dtypes::float32).to_vector<float>();
  const std::vector<float> want = {
      2.34375,  2.59375,   8.0625,   -5.90625, 4.90625,  4.90625,  -6.6875,  8.25,      1.96875,  2.765625,
      0.984375, -2.90625,  1.9375,   3.3125,   -5.90625, 1.382812, -3.53125, 2.203125,  2.546875, -5.875,
      -4.75,    -1.953125, -6.28125, 1.765625, 2.75,     2.171875, -6.875,   -1.765625, -5.5,     4.90625};
  BOOST_REQUIRE_EQUAL(got.size(), want.size());
  for (size_t i = 0; i < got.size(); i++) BOOST_TEST(got[i] == want[i], boost::test_tools::tolerance(0.02f));
}

// The front end: bfloat16 times float32 promotes to float32 (as torch), summed; torch
// gives 68.14359283447266.
BOOST_AUTO_TEST_CASE(bfloat16_front_end_sum_matches_torch) {
  std::vector<float> av;
  for (int i = 0; i < 48; i++) av.push_back(static_cast<float>(((i * 7) % 11 - 5) * 0.37));
  Tensor a(av, {6, 8}, dtypes::float32, "CLANG");
  Tensor s = (a.cast(dtypes::bfloat16) * a).sum();
  BOOST_TEST(s.dtype() == dtypes::float32);
  BOOST_TEST(s.item<float>() == 68.14359283447266f, boost::test_tools::tolerance(1e-5f));
}
