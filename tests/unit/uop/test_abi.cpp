// The UOp ABI of major 1, frozen: plugins render from `const UOp*` through inline accessors
// (sdk/include/tg/sdk/cstyle.hpp includes uop/uop.hpp), so the Ops and Scalar numbering and the layout of
// UOp, DType, Arg and UOpRef are compiled into every plugin. This test holds them as they were when the
// major was frozen (sdk/ABI.md, "The UOp ABI"): a change that breaks built plugins fails here. Appending
// ops or scalars is allowed (a minor change); anything else needs a new major and a new table.
#define BOOST_TEST_MODULE uop_abi
#include <boost/test/unit_test.hpp>

#include <array>
#include <string_view>
#include <utility>

#include "base/dtype.hpp"
#include "tg/sdk/plugin.hpp"
#include "uop/ops.hpp"
#include "uop/uop.hpp"

using tg::Ops;
using tg::Scalar;

namespace {

constexpr std::array<std::string_view, 68> kOpsAtMajor1 = {
    "SINK",       "NOOP",          "CONST",        "DEFINE_VAR",  "BIND",     "UNIQUE",  "DEVICE",
    "BUFFER",     "BUFFER_VIEW",   "COPY",         "ASSIGN",      "CONTIGUOUS", "DETACH", "KERNEL",
    "AFTER",      "RESHAPE",       "PERMUTE",      "EXPAND",      "PAD",      "SHRINK",  "FLIP",
    "REDUCE_AXIS", "REDUCE",       "EXP2",         "LOG2",        "SIN",      "SQRT",    "RECIPROCAL",
    "NEG",        "TRUNC",         "CAST",         "BITCAST",     "ADD",      "MUL",     "IDIV",
    "MOD",        "MAX",           "CMPLT",        "CMPNE",       "CMPEQ",    "AND",     "OR",
    "XOR",        "SHL",           "SHR",          "FDIV",        "POW",      "THREEFRY", "WHERE",
    "MULACC",     "DEFINE_GLOBAL", "DEFINE_LOCAL", "DEFINE_REG",  "RANGE",    "END",     "INDEX",
    "LOAD",       "STORE",         "SPECIAL",      "BARRIER",     "IF",       "ENDIF",   "VECTORIZE",
    "GEP",        "WMMA",          "UNROLL",       "CONTRACT",    "CUSTOM"};

constexpr std::array<std::pair<Scalar, int>, 17> kScalarsAtMajor1 = {{
    {Scalar::VOID, 0},      {Scalar::BOOL, 1},     {Scalar::INT8, 2},     {Scalar::UINT8, 3},
    {Scalar::INT16, 4},     {Scalar::UINT16, 5},   {Scalar::INT32, 6},    {Scalar::UINT32, 7},
    {Scalar::INT64, 8},     {Scalar::UINT64, 9},   {Scalar::FLOAT16, 10}, {Scalar::BFLOAT16, 11},
    {Scalar::FLOAT32, 12},  {Scalar::FLOAT64, 13}, {Scalar::FP8E4M3, 14}, {Scalar::FP8E5M2, 15},
    {Scalar::INDEX, 16},
}};

}  // namespace

BOOST_AUTO_TEST_CASE(ops_keep_their_numbers) {
  BOOST_TEST(TG_ABI_MAJOR == 1);  // a new major writes new tables
  BOOST_REQUIRE(tg::kOpsCount >= static_cast<int>(kOpsAtMajor1.size()));
  for (size_t i = 0; i < kOpsAtMajor1.size(); i++)
    BOOST_TEST(tg::op_name(static_cast<Ops>(i)) == kOpsAtMajor1[i], "op number " << i);
}

BOOST_AUTO_TEST_CASE(scalars_keep_their_numbers) {
  BOOST_REQUIRE(tg::kScalarCount >= static_cast<int>(kScalarsAtMajor1.size()));
  for (auto [s, n] : kScalarsAtMajor1) BOOST_TEST(static_cast<int>(s) == n);
}

// Sizes and alignments of what plugins read through inline accessors, on the platform the project ships
// plugins for (x86-64, libstdc++).
BOOST_AUTO_TEST_CASE(layouts_keep_their_sizes) {
#if defined(__x86_64__) && defined(__GLIBCXX__)
  BOOST_TEST(sizeof(tg::UOp) == 192u);
  BOOST_TEST(alignof(tg::UOp) == 8u);
  BOOST_TEST(sizeof(tg::DType) == 16u);
  BOOST_TEST(sizeof(tg::Arg) == 56u);
  BOOST_TEST(sizeof(tg::UOpRef) == 8u);
  BOOST_TEST(sizeof(tg::ConstValue) == 16u);
#else
  BOOST_TEST_MESSAGE("layout table recorded for x86-64 with libstdc++ only");
#endif
}
