// INTERP semantics: every ALU op on every dtype through a real kernel (memory in, op, memory out), with
// values derived by hand (the comment says how) and known bit patterns for the small float formats.
#define BOOST_TEST_MODULE codegen_interp
#include <boost/test/unit_test.hpp>

#include <bit>
#include <cmath>
#include <limits>

#include "base/error.hpp"
#include "helpers.hpp"
#include "runtime/interp/program.hpp"
#include "runtime/interp/values.hpp"

using namespace tgtest;

namespace {

// out[0] = op(in0[0], in1[0], ...) on INTERP. In and Out are the C++ types holding each dtype's bytes.
template <typename Out, typename In>
Out run(Ops op, DType in_t, std::initializer_list<In> args, DType out_t = {}) {
  if (out_t == DType{}) out_t = group::Comparison.contains(op) ? dtypes::bool_ : in_t;
  std::vector<UOpRef> src;
  std::vector<std::vector<std::byte>> bufs{std::vector<std::byte>(sizeof(Out))};
  int64_t k = 1;
  for (In a : args) {
    src.push_back(load(glob(k++, in_t, 1), idx(0)));
    bufs.push_back(bytes(std::vector<In>{a}));
  }
  UOpRef ast = UOp::sink({store(glob(0, out_t, 1), idx(0), UOp::make(op, out_t, std::move(src)))});
  run_interp(codegen::lower_kernel(ast, runtime::interp::interp_caps()), bufs);
  return values<Out>(bufs[0])[0];
}

template <typename Out, typename In>
Out run_cast(Ops op, DType from, DType to, In a) {
  std::vector<std::vector<std::byte>> bufs{std::vector<std::byte>(sizeof(Out)), bytes(std::vector<In>{a})};
  UOpRef ast =
      UOp::sink({store(glob(0, to, 1), idx(0), UOp::make(op, to, {load(glob(1, from, 1), idx(0))}))});
  run_interp(codegen::lower_kernel(ast, runtime::interp::interp_caps()), bufs);
  return values<Out>(bufs[0])[0];
}

template <typename T>
T where(bool c, T a, T b, DType d) {
  std::vector<std::vector<std::byte>> bufs{std::vector<std::byte>(sizeof(T)), bytes(std::vector<uint8_t>{c}),
                                           bytes(std::vector<T>{a}), bytes(std::vector<T>{b})};
  UOpRef v = load(glob(1, dtypes::bool_, 1), idx(0))
                 ->where(load(glob(2, d, 1), idx(0)), load(glob(3, d, 1), idx(0)));
  run_interp(
      codegen::lower_kernel(UOp::sink({store(glob(0, d, 1), idx(0), v)}), runtime::interp::interp_caps()),
      bufs);
  return values<T>(bufs[0])[0];
}

constexpr double kInf = std::numeric_limits<double>::infinity();

}  // namespace

BOOST_AUTO_TEST_CASE(int8_and_uint8) {
  DType i8 = dtypes::int8, u8 = dtypes::uint8;
  BOOST_TEST((run<int8_t, int8_t>(Ops::ADD, i8, {100, 100}) == -56));  // 200 - 256
  BOOST_TEST((run<int8_t, int8_t>(Ops::MUL, i8, {16, 16}) == 0));      // 256 wraps to 0
  BOOST_TEST((run<int8_t, int8_t>(Ops::NEG, i8, {-128}) == -128));     // -(-128) wraps
  BOOST_TEST((run<int8_t, int8_t>(Ops::IDIV, i8, {-7, 2}) == -3));     // C truncates toward zero
  BOOST_TEST((run<int8_t, int8_t>(Ops::MOD, i8, {-7, 2}) == -1));      // sign of the dividend
  BOOST_TEST((run<int8_t, int8_t>(Ops::MOD, i8, {7, -2}) == 1));
  BOOST_TEST((run<int8_t, int8_t>(Ops::MAX, i8, {-3, 2}) == 2));
  BOOST_TEST((run<uint8_t, int8_t>(Ops::CMPLT, i8, {-1, 0}) == 1));
  BOOST_TEST((run<int8_t, int8_t>(Ops::SHL, i8, {1, 7}) == -128));
  BOOST_TEST((run<int8_t, int8_t>(Ops::SHR, i8, {-128, 1}) == -64));  // arithmetic shift
  BOOST_TEST((run<int8_t, int8_t>(Ops::AND, i8, {0x0f, 0x3c}) == 0x0c));
  BOOST_TEST((run<int8_t, int8_t>(Ops::OR, i8, {0x0f, 0x30}) == 0x3f));
  BOOST_TEST((run<int8_t, int8_t>(Ops::XOR, i8, {0x0f, 0x3c}) == 0x33));
  BOOST_TEST((run<uint8_t, uint8_t>(Ops::ADD, u8, {200, 100}) == 44));  // 300 - 256
  BOOST_TEST((run<uint8_t, uint8_t>(Ops::IDIV, u8, {200, 3}) == 66));
  BOOST_TEST((run<uint8_t, uint8_t>(Ops::MOD, u8, {200, 3}) == 2));
  BOOST_TEST((run<uint8_t, uint8_t>(Ops::CMPLT, u8, {200, 100}) == 0));  // unsigned compare
  BOOST_TEST((run<uint8_t, uint8_t>(Ops::SHR, u8, {200, 1}) == 100));    // logical shift
  BOOST_TEST((run<uint8_t, uint8_t>(Ops::SHL, u8, {200, 1}) == 144));    // 400 - 256
  BOOST_TEST((run<uint8_t, uint8_t>(Ops::NEG, u8, {1}) == 255));
  BOOST_TEST((run<uint8_t, uint8_t>(Ops::MAX, u8, {200, 100}) == 200));
  BOOST_TEST((run<uint8_t, uint8_t>(Ops::MULACC, u8, {16, 16, 7}) == 7));  // 256 + 7 wraps to 7
}

BOOST_AUTO_TEST_CASE(int16_and_uint16) {
  DType i16 = dtypes::int16, u16 = dtypes::uint16;
  BOOST_TEST((run<int16_t, int16_t>(Ops::ADD, i16, {30000, 30000}) == -5536));  // 60000 - 65536
  BOOST_TEST((run<int16_t, int16_t>(Ops::MUL, i16, {300, 300}) == 24464));      // 90000 - 65536
  BOOST_TEST((run<int16_t, int16_t>(Ops::IDIV, i16, {-32768, -1}) == -32768));  // 32768 wraps
  BOOST_TEST((run<int16_t, int16_t>(Ops::MOD, i16, {-32768, -1}) == 0));
  BOOST_TEST((run<uint16_t, uint16_t>(Ops::ADD, u16, {65535, 1}) == 0));
  BOOST_TEST((run<uint16_t, uint16_t>(Ops::SHR, u16, {0x8000, 15}) == 1));
  BOOST_TEST((run<uint8_t, uint16_t>(Ops::CMPLT, u16, {1, 65535}) == 1));
  BOOST_TEST((run<uint8_t, uint16_t>(Ops::CMPEQ, u16, {7, 7}) == 1));
  BOOST_TEST((run<uint8_t, uint16_t>(Ops::CMPNE, u16, {7, 7}) == 0));
}

BOOST_AUTO_TEST_CASE(int32_and_uint32) {
  DType i32 = dtypes::int32, u32 = dtypes::uint32;
  constexpr int32_t lo = std::numeric_limits<int32_t>::min(), hi = std::numeric_limits<int32_t>::max();
  BOOST_TEST((run<int32_t, int32_t>(Ops::ADD, i32, {hi, 1}) == lo));
  BOOST_TEST((run<int32_t, int32_t>(Ops::MUL, i32, {65536, 65536}) == 0));  // 2^32 wraps
  BOOST_TEST((run<int32_t, int32_t>(Ops::IDIV, i32, {lo, -1}) == lo));
  BOOST_TEST((run<int32_t, int32_t>(Ops::IDIV, i32, {-7, 2}) == -3));
  BOOST_TEST(
      (run<int32_t, int32_t>(Ops::IDIV, i32, {5, 0}) == 0));  // defined as 0 here (C leaves it undefined)
  BOOST_TEST((run<int32_t, int32_t>(Ops::MOD, i32, {-7, 3}) == -1));
  BOOST_TEST((run<int32_t, int32_t>(Ops::MOD, i32, {7, -3}) == 1));
  BOOST_TEST((run<int32_t, int32_t>(Ops::MOD, i32, {5, 0}) == 0));
  BOOST_TEST((run<int32_t, int32_t>(Ops::SHL, i32, {1, 31}) == lo));
  BOOST_TEST((run<int32_t, int32_t>(Ops::SHL, i32, {1, 32}) == 0));  // by the width or more: 0
  BOOST_TEST((run<int32_t, int32_t>(Ops::SHR, i32, {-8, 1}) == -4));
  BOOST_TEST((run<int32_t, int32_t>(Ops::SHR, i32, {-1, 40}) == -1));  // or the sign
  BOOST_TEST((run<int32_t, int32_t>(Ops::NEG, i32, {lo}) == lo));
  BOOST_TEST((run<int32_t, int32_t>(Ops::MAX, i32, {-5, -9}) == -5));
  BOOST_TEST((run<int32_t, int32_t>(Ops::MULACC, i32, {3, 4, 5}) == 17));
  BOOST_TEST((run<int32_t, int32_t>(Ops::TRUNC, i32, {-9}) == -9));
  BOOST_TEST((where<int32_t>(true, 3, 4, i32) == 3));
  BOOST_TEST((where<int32_t>(false, 3, 4, i32) == 4));
  BOOST_TEST((run<uint32_t, uint32_t>(Ops::ADD, u32, {0xffffffffu, 1}) == 0u));
  BOOST_TEST((run<uint32_t, uint32_t>(Ops::IDIV, u32, {0xffffffffu, 2}) == 0x7fffffffu));
  BOOST_TEST((run<uint32_t, uint32_t>(Ops::SHR, u32, {0x80000000u, 31}) == 1u));
  BOOST_TEST((run<uint32_t, uint32_t>(Ops::NEG, u32, {1}) == 0xffffffffu));
  BOOST_TEST((run<uint8_t, uint32_t>(Ops::CMPLT, u32, {0xffffffffu, 1}) == 0));
}

BOOST_AUTO_TEST_CASE(int64_and_uint64) {
  DType i64 = dtypes::int64, u64 = dtypes::uint64;
  constexpr int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
  BOOST_TEST((run<int64_t, int64_t>(Ops::ADD, i64, {hi, 1}) == lo));
  BOOST_TEST((run<int64_t, int64_t>(Ops::IDIV, i64, {lo, -1}) == lo));
  BOOST_TEST((run<int64_t, int64_t>(Ops::MOD, i64, {lo, -1}) == 0));
  BOOST_TEST((run<int64_t, int64_t>(Ops::SHR, i64, {lo, 63}) == -1));
  BOOST_TEST(
      (run<int64_t, int64_t>(Ops::MUL, i64, {int64_t{1} << 32, int64_t{1} << 31}) == lo));  // 2^63 wraps
  BOOST_TEST((run<uint64_t, uint64_t>(Ops::ADD, u64, {~uint64_t{0}, 1}) == 0u));
  BOOST_TEST((run<uint64_t, uint64_t>(Ops::SHR, u64, {uint64_t{1} << 63, 63}) == 1u));
  BOOST_TEST((run<uint64_t, uint64_t>(Ops::MUL, u64, {uint64_t{1} << 32, uint64_t{1} << 32}) == 0u));
  BOOST_TEST((run<uint8_t, uint64_t>(Ops::CMPLT, u64, {~uint64_t{0}, 0}) == 0));
}

BOOST_AUTO_TEST_CASE(threefry_known_answers) {
  // Random123's kat_vectors for threefry2x32_20: counter (c0, c1), key (k0, k1) -> (r0, r1), packed as hi <<
  // 32 | lo
  auto word = [](uint64_t lo, uint64_t hi) { return hi << 32 | lo; };
  BOOST_TEST((runtime::interp::threefry2x32(0, 0) == word(0x6b200159, 0x99ba4efe)));
  BOOST_TEST((runtime::interp::threefry2x32(word(0xffffffff, 0xffffffff), word(0xffffffff, 0xffffffff)) ==
              word(0x1cb996fc, 0xbb002be7)));
  uint64_t x = word(0x243f6a88, 0x85a308d3), key = word(0x13198a2e, 0x03707344);
  BOOST_TEST((runtime::interp::threefry2x32(x, key) == word(0xc4923a9c, 0x483df7a0)));
  BOOST_TEST(
      (run<uint64_t, uint64_t>(Ops::THREEFRY, dtypes::uint64, {x, key}) == word(0xc4923a9c, 0x483df7a0)));
}

BOOST_AUTO_TEST_CASE(bools) {
  DType b = dtypes::bool_;
  BOOST_TEST((run<uint8_t, uint8_t>(Ops::ADD, b, {1, 1}) == 1));  // bool + is or
  BOOST_TEST((run<uint8_t, uint8_t>(Ops::MUL, b, {1, 0}) == 0));  // bool * is and
  BOOST_TEST((run<uint8_t, uint8_t>(Ops::XOR, b, {1, 1}) == 0));
  BOOST_TEST((run<uint8_t, uint8_t>(Ops::OR, b, {0, 1}) == 1));
  BOOST_TEST((run<uint8_t, uint8_t>(Ops::AND, b, {1, 1}) == 1));
  BOOST_TEST((run<uint8_t, uint8_t>(Ops::CMPLT, b, {0, 1}) == 1));
  BOOST_TEST((run<uint8_t, uint8_t>(Ops::CMPNE, b, {0, 1}) == 1));
  BOOST_TEST((run<uint8_t, uint8_t>(Ops::MAX, b, {0, 1}) == 1));
}

BOOST_AUTO_TEST_CASE(float32_rounds_like_float) {
  DType f = dtypes::float32;
  BOOST_TEST(
      (run<float, float>(Ops::ADD, f, {16777216.0f, 1.0f}) == 16777216.0f));  // 2^24 + 1 is not a float
  BOOST_TEST((run<float, float>(Ops::MUL, f, {3.0f, 0.5f}) == 1.5f));
  BOOST_TEST((run<float, float>(Ops::NEG, f, {2.5f}) == -2.5f));
  BOOST_TEST((run<float, float>(Ops::FDIV, f, {1.0f, 4.0f}) == 0.25f));
  BOOST_TEST((std::bit_cast<uint32_t>(run<float, float>(Ops::FDIV, f, {1.0f, 3.0f})) ==
              0x3eaaaaabu));  // 1/3 rounded
  BOOST_TEST((run<float, float>(Ops::FDIV, f, {1.0f, 0.0f}) == static_cast<float>(kInf)));
  BOOST_TEST((run<float, float>(Ops::MAX, f, {-1.0f, 2.0f}) == 2.0f));
  BOOST_TEST((run<uint8_t, float>(Ops::CMPLT, f, {NAN, 1.0f}) == 0));
  BOOST_TEST((run<uint8_t, float>(Ops::CMPNE, f, {NAN, NAN}) == 1));
  BOOST_TEST((run<uint8_t, float>(Ops::CMPEQ, f, {NAN, NAN}) == 0));
  BOOST_TEST((run<float, float>(Ops::SQRT, f, {2.25f}) == 1.5f));
  BOOST_TEST((run<float, float>(Ops::EXP2, f, {3.0f}) == 8.0f));
  BOOST_TEST((run<float, float>(Ops::LOG2, f, {1024.0f}) == 10.0f));
  BOOST_TEST((run<float, float>(Ops::SIN, f, {0.0f}) == 0.0f));
  BOOST_TEST((run<float, float>(Ops::RECIPROCAL, f, {8.0f}) == 0.125f));
  BOOST_TEST((run<float, float>(Ops::TRUNC, f, {-2.7f}) == -2.0f));
  BOOST_TEST((run<float, float>(Ops::POW, f, {2.0f, 10.0f}) == 1024.0f));
  // (1+2^-23)^2 - 1: the product rounds to 1+2^-22 first (no fused multiply-add), leaving exactly 2^-22
  BOOST_TEST(
      (run<float, float>(Ops::MULACC, f, {1.00000012f, 1.00000012f, -1.0f}) == 2.384185791015625e-07f));
  BOOST_TEST((where<float>(true, 1.5f, 2.5f, f) == 1.5f));
}

BOOST_AUTO_TEST_CASE(float64_rounds_like_double) {
  DType d = dtypes::float64;
  BOOST_TEST(
      (run<double, double>(Ops::ADD, d, {9007199254740992.0, 1.0}) == 9007199254740992.0));  // 2^53 + 1
  BOOST_TEST((run<double, double>(Ops::ADD, d, {16777216.0, 1.0}) == 16777217.0));
  BOOST_TEST((run<double, double>(Ops::ADD, d, {0.1, 0.2}) == 0.30000000000000004));
  BOOST_TEST((run<double, double>(Ops::SQRT, d, {2.25}) == 1.5));
  BOOST_TEST((run<double, double>(Ops::TRUNC, d, {-1e300}) == -1e300));
  BOOST_TEST((run<double, double>(Ops::LOG2, d, {0.0}) == -kInf));
}

BOOST_AUTO_TEST_CASE(small_floats_compute_in_float_and_round) {
  // float16: 1.0 = 0x3c00, 2048 = 0x6800, 300 = 0x5cb0 (1.171875 * 2^8), inf = 0x7c00
  DType h = dtypes::float16;
  BOOST_TEST((run<uint16_t, uint16_t>(Ops::ADD, h, {0x6800, 0x3c00}) == 0x6800));   // 2049 ties to even 2048
  BOOST_TEST((run<uint16_t, uint16_t>(Ops::MUL, h, {0x5cb0, 0x5cb0}) == 0x7c00));   // 90000 > 65504: inf
  BOOST_TEST((run<uint16_t, uint16_t>(Ops::FDIV, h, {0x3c00, 0x4200}) == 0x3555));  // 1/3 -> 0.333251953125
  BOOST_TEST((run<uint16_t, uint16_t>(Ops::SQRT, h, {0x4000}) == 0x3da8));          // sqrt(2) -> 1.4140625
  BOOST_TEST((run<uint8_t, uint16_t>(Ops::CMPLT, h, {0x3c00, 0x4000}) == 1));
  // bfloat16: 1.0 = 0x3f80, 256 = 0x4380, 3 = 0x4040, 9 = 0x4110
  DType bf = dtypes::bfloat16;
  BOOST_TEST((run<uint16_t, uint16_t>(Ops::ADD, bf, {0x4380, 0x3f80}) == 0x4380));  // 257 ties to even 256
  BOOST_TEST((run<uint16_t, uint16_t>(Ops::MUL, bf, {0x4040, 0x4040}) == 0x4110));
  // fp8e4m3: 1.0 = 0x38, 0.125 = 0x20, 448 = 0x7e (the largest), 64 = 0x68; no inf: overflow is NaN (PyTorch)
  DType e4 = dtypes::fp8e4m3;
  BOOST_TEST((run<uint8_t, uint8_t>(Ops::ADD, e4, {0x38, 0x20}) == 0x39));  // 1.125
  BOOST_TEST((run<uint8_t, uint8_t>(Ops::ADD, e4, {0x7e, 0x68}) == 0x7f));  // 512 -> NaN
  // fp8e5m2: 1.0 = 0x3c, 0.25 = 0x34, 57344 = 0x7b (the largest)
  DType e5 = dtypes::fp8e5m2;
  BOOST_TEST((run<uint8_t, uint8_t>(Ops::ADD, e5, {0x3c, 0x34}) == 0x3d));  // 1.25
  BOOST_TEST((run<uint8_t, uint8_t>(Ops::MUL, e5, {0x7b, 0x3c}) == 0x7b));
}

BOOST_AUTO_TEST_CASE(casts_and_bitcasts) {
  BOOST_TEST((run_cast<int32_t, float>(Ops::CAST, dtypes::float32, dtypes::int32, -2.7f)) ==
             -2);  // toward zero
  BOOST_TEST((run_cast<uint8_t, float>(Ops::CAST, dtypes::float32, dtypes::uint8, 300.0f)) == 44);  // wraps
  BOOST_TEST((run_cast<float, int32_t>(Ops::CAST, dtypes::int32, dtypes::float32, 16777217)) == 16777216.0f);
  BOOST_TEST((run_cast<uint16_t, int32_t>(Ops::CAST, dtypes::int32, dtypes::float16, 65519)) ==
             0x7bff);  // 65504
  BOOST_TEST((run_cast<uint16_t, int32_t>(Ops::CAST, dtypes::int32, dtypes::float16, 65520)) ==
             0x7c00);  // inf
  BOOST_TEST((run_cast<uint16_t, float>(Ops::CAST, dtypes::float32, dtypes::float16, 5.9604645e-08f)) ==
             0x0001);  // 2^-24
  BOOST_TEST((run_cast<uint8_t, float>(Ops::CAST, dtypes::float32, dtypes::bool_, 0.5f)) == 1);
  BOOST_TEST((run_cast<uint8_t, float>(Ops::CAST, dtypes::float32, dtypes::bool_, NAN)) == 1);
  BOOST_TEST((run_cast<double, uint32_t>(Ops::CAST, dtypes::uint32, dtypes::float64, 0xffffffffu)) ==
             4294967295.0);
  BOOST_TEST((run_cast<uint8_t, int8_t>(Ops::CAST, dtypes::int8, dtypes::uint8, -1)) == 255);
  BOOST_TEST((run_cast<int8_t, uint8_t>(Ops::CAST, dtypes::uint8, dtypes::int8, 255)) == -1);
  BOOST_TEST((run_cast<float, uint16_t>(Ops::CAST, dtypes::bfloat16, dtypes::float32, 0x3fc0)) == 1.5f);
  BOOST_TEST((run_cast<uint8_t, float>(Ops::CAST, dtypes::float32, dtypes::fp8e4m3, 1000.0f)) ==
             0x7f);  // NaN, as PyTorch's .to() (no saturation)
  BOOST_TEST((run_cast<int32_t, float>(Ops::BITCAST, dtypes::float32, dtypes::int32, 1.0f)) == 0x3f800000);
  BOOST_TEST((run_cast<float, uint16_t>(Ops::CAST, dtypes::float16, dtypes::float32, 0x3c00)) == 1.0f);
  BOOST_TEST((run_cast<uint16_t, int16_t>(Ops::BITCAST, dtypes::int16, dtypes::float16, 0x3c00)) == 0x3c00);
}

BOOST_AUTO_TEST_CASE(undefined_ops_and_bad_launches_are_errors) {
  BOOST_CHECK_THROW((run<float, float>(Ops::IDIV, dtypes::float32, {1.0f, 2.0f})), std::runtime_error);
  BOOST_CHECK_THROW((run<int32_t, int32_t>(Ops::EXP2, dtypes::int32, {1})), std::runtime_error);
  // an out-of-bounds store names the kernel and the access
  UOpRef out = glob(0, dtypes::float32, 2);
  codegen::LinearProgram p = codegen::lower_kernel(
      UOp::sink({store(out, idx(5), UOp::const_(dtypes::float32, 1.0))}), runtime::interp::interp_caps());
  std::vector<std::vector<std::byte>> bufs{std::vector<std::byte>(8)};
  try {
    run_interp(p, bufs);
    BOOST_FAIL("expected an out-of-bounds error");
  } catch (const std::runtime_error& e) {
    BOOST_TEST(std::string(e.what()).find("element 5") != std::string::npos, e.what());
  }
  BOOST_CHECK_THROW(runtime::interp::parse("TGINTERP 1 1:E\nNOT_AN_OP 1 1 0 -1 0 -\n"), FormatError);
  BOOST_CHECK_THROW(runtime::interp::parse("TGINTERP 1 1:E\nADD 6 1 0 -1 2 0 1 -\n"),
                    FormatError);  // sources not earlier
}

BOOST_AUTO_TEST_CASE(program_text_round_trips) {
  UOpRef r = range(3, 0);
  UOpRef out = glob(0, dtypes::float32, 3);
  codegen::LinearProgram p =
      codegen::lower_kernel(UOp::sink({end(store(out, r, r->cast(dtypes::float32) * 0.5), {r})}), cpu_caps());
  auto view = p.view();
  std::string text = runtime::interp::serialize(p.name, view);
  runtime::interp::Program q = runtime::interp::parse(text);
  BOOST_TEST(q.name == p.name);
  BOOST_REQUIRE(q.insts.size() == p.uops.size());
  for (size_t i = 0; i < q.insts.size(); i++) {
    BOOST_TEST(q.insts[i].op == p.uops[i]->op());
    BOOST_TEST(q.insts[i].dtype == p.uops[i]->dtype());
    BOOST_TEST(arg_equal(q.insts[i].arg, p.uops[i]->arg()));
  }
}

namespace {

// 7 op 3 (and friends) on one integer dtype; the same small values give the same results at every width,
// except NEG of an unsigned value, which is 2^bits - 7.
template <typename T>
void int_table(DType d) {
  const T a = 7, b = 3;
  BOOST_TEST_CONTEXT(d.str()) {
    BOOST_TEST((run<T, T>(Ops::ADD, d, {a, b}) == T(10)));
    BOOST_TEST((run<T, T>(Ops::MUL, d, {a, b}) == T(21)));
    BOOST_TEST((run<T, T>(Ops::NEG, d, {a}) ==
                static_cast<T>(std::is_signed_v<T> ? -7 : (uint64_t{1} << (8 * sizeof(T) - 1)) * 2 - 7)));
    BOOST_TEST((run<T, T>(Ops::IDIV, d, {a, b}) == T(2)));
    BOOST_TEST((run<T, T>(Ops::MOD, d, {a, b}) == T(1)));
    BOOST_TEST((run<T, T>(Ops::MAX, d, {a, b}) == T(7)));
    BOOST_TEST((run<uint8_t, T>(Ops::CMPLT, d, {a, b}) == 0));
    BOOST_TEST((run<uint8_t, T>(Ops::CMPNE, d, {a, b}) == 1));
    BOOST_TEST((run<uint8_t, T>(Ops::CMPEQ, d, {a, a}) == 1));
    BOOST_TEST((run<T, T>(Ops::AND, d, {a, b}) == T(3)));
    BOOST_TEST((run<T, T>(Ops::OR, d, {T(4), b}) == T(7)));
    BOOST_TEST((run<T, T>(Ops::XOR, d, {a, b}) == T(4)));
    BOOST_TEST((run<T, T>(Ops::SHL, d, {a, b}) == T(56)));
    BOOST_TEST((run<T, T>(Ops::SHR, d, {a, T(1)}) == T(3)));
    BOOST_TEST((run<T, T>(Ops::MULACC, d, {a, b, b}) == T(24)));
    BOOST_TEST((run<T, T>(Ops::TRUNC, d, {a}) == T(7)));
    BOOST_TEST((where<T>(false, a, b, d) == T(3)));
  }
}

// The float ops on one float dtype, with inputs and results given as that format's bits (written out
// by hand in the test below: every value used is exact in every format, fp8e5m2 included).
struct FloatBits {
  uint64_t half_, quarter, three_quarters, one, one_and_half, minus_one_and_half, two, three, four, eight;
};

template <typename T>
void float_table(DType d, const FloatBits& f) {
  auto b = [](uint64_t v) { return static_cast<T>(v); };
  BOOST_TEST_CONTEXT(d.str()) {
    BOOST_TEST((run<T, T>(Ops::ADD, d, {b(f.one_and_half), b(f.half_)}) == b(f.two)));
    BOOST_TEST((run<T, T>(Ops::MUL, d, {b(f.one_and_half), b(f.half_)}) == b(f.three_quarters)));
    BOOST_TEST((run<T, T>(Ops::NEG, d, {b(f.one_and_half)}) == b(f.minus_one_and_half)));
    BOOST_TEST((run<T, T>(Ops::FDIV, d, {b(f.one_and_half), b(f.half_)}) == b(f.three)));
    BOOST_TEST((run<T, T>(Ops::MAX, d, {b(f.minus_one_and_half), b(f.half_)}) == b(f.half_)));
    BOOST_TEST((run<uint8_t, T>(Ops::CMPLT, d, {b(f.half_), b(f.one)}) == 1));
    BOOST_TEST((run<uint8_t, T>(Ops::CMPNE, d, {b(f.half_), b(f.half_)}) == 0));
    BOOST_TEST((run<uint8_t, T>(Ops::CMPEQ, d, {b(f.half_), b(f.half_)}) == 1));
    BOOST_TEST((run<T, T>(Ops::SQRT, d, {b(f.four)}) == b(f.two)));
    BOOST_TEST((run<T, T>(Ops::EXP2, d, {b(f.three)}) == b(f.eight)));
    BOOST_TEST((run<T, T>(Ops::LOG2, d, {b(f.eight)}) == b(f.three)));
    BOOST_TEST((run<T, T>(Ops::SIN, d, {T(0)}) == T(0)));
    BOOST_TEST((run<T, T>(Ops::RECIPROCAL, d, {b(f.quarter)}) == b(f.four)));
    BOOST_TEST((run<T, T>(Ops::TRUNC, d, {b(f.one_and_half)}) == b(f.one)));
    BOOST_TEST((run<T, T>(Ops::POW, d, {b(f.two), b(f.three)}) == b(f.eight)));
    BOOST_TEST((run<T, T>(Ops::MULACC, d, {b(f.one_and_half), b(f.half_), b(f.quarter)}) == b(f.one)));
    BOOST_TEST((where<T>(true, b(f.two), b(f.three), d) == b(f.two)));
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(every_op_on_every_int_dtype) {
  int_table<int8_t>(dtypes::int8);
  int_table<uint8_t>(dtypes::uint8);
  int_table<int16_t>(dtypes::int16);
  int_table<uint16_t>(dtypes::uint16);
  int_table<int32_t>(dtypes::int32);
  int_table<uint32_t>(dtypes::uint32);
  int_table<int64_t>(dtypes::int64);
  int_table<uint64_t>(dtypes::uint64);
}

BOOST_AUTO_TEST_CASE(every_op_on_every_float_dtype) {
  //       0.5     0.25    0.75    1       1.5     -1.5    2       3       4       8
  float_table<uint16_t>(dtypes::float16,
                        {0x3800, 0x3400, 0x3a00, 0x3c00, 0x3e00, 0xbe00, 0x4000, 0x4200, 0x4400, 0x4800});
  float_table<uint16_t>(dtypes::bfloat16,
                        {0x3f00, 0x3e80, 0x3f40, 0x3f80, 0x3fc0, 0xbfc0, 0x4000, 0x4040, 0x4080, 0x4100});
  float_table<uint8_t>(dtypes::fp8e4m3, {0x30, 0x28, 0x34, 0x38, 0x3c, 0xbc, 0x40, 0x44, 0x48, 0x50});
  float_table<uint8_t>(dtypes::fp8e5m2, {0x38, 0x34, 0x3a, 0x3c, 0x3e, 0xbe, 0x40, 0x42, 0x44, 0x48});
  float_table<uint32_t>(dtypes::float32, {0x3f000000, 0x3e800000, 0x3f400000, 0x3f800000, 0x3fc00000,
                                          0xbfc00000, 0x40000000, 0x40400000, 0x40800000, 0x41000000});
  float_table<uint64_t>(
      dtypes::float64,
      {0x3fe0000000000000, 0x3fd0000000000000, 0x3fe8000000000000, 0x3ff0000000000000, 0x3ff8000000000000,
       0xbff8000000000000, 0x4000000000000000, 0x4008000000000000, 0x4010000000000000, 0x4020000000000000});
}

BOOST_AUTO_TEST_CASE(vectors) {
  // out[4r + k] = 2 x[4r + k] + x[4r + 3 - k] + r with x[i] = i: 13r + k + 3
  UOpRef ast = vector_ast();
  for (const auto& caps : {cpu_caps(), runtime::interp::interp_caps()}) {
    std::vector<float> xs(16);
    for (int i = 0; i < 16; i++) xs[i] = static_cast<float>(i);
    std::vector<std::vector<std::byte>> bufs{bytes(std::vector<float>(16)), bytes(xs)};
    run_interp(codegen::lower_kernel(ast, caps), bufs);
    auto o = values<float>(bufs[0]);
    for (int i = 0; i < 16; i++) BOOST_TEST(o[i] == static_cast<float>(13 * (i / 4) + i % 4 + 3));
  }
}
