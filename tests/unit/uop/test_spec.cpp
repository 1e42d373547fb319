// The IR checker: well-formed tensor and kernel graphs pass; each broken node is reported with its rule.
#define BOOST_TEST_MODULE spec
#include <boost/test/unit_test.hpp>

#include "base/error.hpp"
#include "uop/spec.hpp"

using namespace tg;

namespace {

UOpRef num(int64_t v, DType d = dtypes::index) { return UOp::const_(d, v); }

// The error of verifying root, or "" if it passes.
std::string kernel_error(const UOpRef& root) {
  try {
    verify_kernel_graph(root);
    return "";
  } catch (const ValueError& e) {
    return e.what();
  }
}
std::string tensor_error(const UOpRef& root) {
  try {
    verify_tensor_graph(root);
    return "";
  } catch (const ValueError& e) {
    return e.what();
  }
}
bool contains(const std::string& s, std::string_view part) { return s.find(part) != std::string::npos; }

// out[i] = in[i] * 2 + 1 over a loop of 16, as the scheduler hands it to codegen.
UOpRef small_kernel() {
  UOpRef out = UOp::make(Ops::DEFINE_GLOBAL, dtypes::float32.ptr(AddrSpace::GLOBAL, 16), {}, int64_t{0});
  UOpRef in = UOp::make(Ops::DEFINE_GLOBAL, dtypes::float32.ptr(AddrSpace::GLOBAL, 16), {}, int64_t{1});
  UOpRef r = UOp::range(num(16), 0);
  UOpRef v = UOp::make(Ops::LOAD, dtypes::float32, {UOp::make(Ops::INDEX, in->dtype(), {in, r})});
  UOpRef st =
      UOp::make(Ops::STORE, dtypes::void_, {UOp::make(Ops::INDEX, out->dtype(), {out, r}), v * 2.0 + 1.0});
  return UOp::sink({UOp::make(Ops::END, dtypes::void_, {st, r})});
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_kernel_passes) { BOOST_TEST(kernel_error(small_kernel()) == ""); }

BOOST_AUTO_TEST_CASE(kernel_errors_name_the_rule_and_the_node) {
  UOpRef g = UOp::make(Ops::DEFINE_GLOBAL, dtypes::float32.ptr(), {}, int64_t{0});
  UOpRef i = UOp::make(Ops::INDEX, g->dtype(), {g, num(0)});
  // storing an int into a float buffer
  UOpRef bad_store = UOp::make(Ops::STORE, dtypes::void_, {i, num(1, dtypes::int32)});
  std::string e = kernel_error(UOp::sink({bad_store}));
  BOOST_TEST(contains(
      e, "[spec] kernel graph: STORE is (pointer, value of the pointee's dtype[, gate]) and void at "));
  BOOST_TEST(contains(e, "UOp(Ops.STORE"));
  // an ALU mixing dtypes
  UOpRef mixed = UOp::make(Ops::ADD, dtypes::int32, {num(1, dtypes::int32), num(2, dtypes::int64)});
  BOOST_TEST(contains(kernel_error(UOp::sink({mixed})), "ALU sources must have the op's dtype"));
  // a comparison that does not give bool
  UOpRef cmp = UOp::make(Ops::CMPLT, dtypes::int32, {num(1, dtypes::int32), num(2, dtypes::int32)});
  BOOST_TEST(
      contains(kernel_error(UOp::sink({cmp})), "comparisons take two sources of one dtype and give bool"));
  // WHERE with a non-bool condition
  UOpRef w = UOp::make(Ops::WHERE, dtypes::int32,
                       {num(1, dtypes::int32), num(1, dtypes::int32), num(2, dtypes::int32)});
  BOOST_TEST(contains(kernel_error(UOp::sink({w})), "WHERE is (bool cond, a, b)"));
  // integer ops on floats
  UOpRef fd = UOp::make(Ops::IDIV, dtypes::float32,
                        {UOp::const_(dtypes::float32, 1.0), UOp::const_(dtypes::float32, 2.0)});
  BOOST_TEST(contains(kernel_error(UOp::sink({fd})), "IDIV and MOD are integer ops"));
  // tensor-level ops do not belong in a kernel
  UOpRef buf = UOp::make(Ops::BUFFER, dtypes::float32,
                         {UOp::make(Ops::UNIQUE, dtypes::void_, {}, int64_t{0}),
                          UOp::make(Ops::DEVICE, dtypes::void_, {}, std::string("CPU"))},
                         int64_t{4});
  BOOST_TEST(contains(kernel_error(UOp::sink({buf})), "tensor-level op in a kernel graph"));
  // a CONST whose arg is not its dtype's kind
  UOpRef bad_const = UOp::make(Ops::CONST, dtypes::float32, {}, int64_t{1});
  BOOST_TEST(contains(kernel_error(bad_const), "CONST arg must be the value kind of its dtype"));
  // an op no rule accepts
  BOOST_TEST(contains(tensor_error(UOp::make(Ops::BARRIER, dtypes::void_)), "BARRIER is not allowed here"));
}

BOOST_AUTO_TEST_CASE(a_tensor_graph_passes) {
  UOpRef dev = UOp::make(Ops::DEVICE, dtypes::void_, {}, std::string("CPU"));
  UOpRef buf = UOp::make(Ops::BUFFER, dtypes::float32,
                         {UOp::make(Ops::UNIQUE, dtypes::void_, {}, int64_t{0}), dev}, int64_t{12});
  UOpRef x = UOp::make(Ops::RESHAPE, dtypes::float32, {buf}, Shape{3, 4});
  UOpRef t = UOp::make(Ops::PERMUTE, dtypes::float32, {x}, IntVec{1, 0});
  UOpRef s = UOp::make(Ops::REDUCE_AXIS, dtypes::float32, {t * t}, ReduceArg{Ops::ADD, {1}});
  UOpRef p = UOp::make(Ops::PAD, dtypes::float32, {s}, ShapePairs{{1, 1}, {0, 0}});
  BOOST_TEST(tensor_error(UOp::sink({UOp::make(Ops::CONTIGUOUS, dtypes::float32, {p})})) == "");
}

BOOST_AUTO_TEST_CASE(tensor_errors) {
  UOpRef c = UOp::const_(dtypes::float32, 1.0);
  UOpRef bad_perm = UOp::make(Ops::PERMUTE, dtypes::float32, {c}, IntVec{0, 0});
  BOOST_TEST(contains(tensor_error(bad_perm), "[spec] tensor graph: PERMUTE arg is a permutation at "));
  UOpRef bad_red = UOp::make(Ops::REDUCE_AXIS, dtypes::float32, {c}, ReduceArg{Ops::SIN, {0}});
  BOOST_TEST(contains(tensor_error(bad_red), "REDUCE_AXIS is ADD, MUL or MAX"));
  UOpRef bad_pad = UOp::make(Ops::PAD, dtypes::float32, {c}, IntVec{1, 1});
  BOOST_TEST(contains(tensor_error(bad_pad), "PAD and SHRINK take (begin, end) pairs"));
  UOpRef bad_copy = UOp::make(Ops::COPY, dtypes::float32, {c, c});
  BOOST_TEST(contains(tensor_error(bad_copy), "COPY is (x, DEVICE)"));
  UOpRef var = UOp::variable("n", 1, 8);
  UOpRef bind = UOp::make(Ops::BIND, dtypes::index, {var, num(9)});
  BOOST_TEST(contains(tensor_error(bind), "BIND is (DEFINE_VAR, CONST in its range)"));
  BOOST_TEST(tensor_error(UOp::make(Ops::BIND, dtypes::index, {var, num(3)})) == "");
}

BOOST_AUTO_TEST_CASE(specs_extend_with_plus) {
  // a stage with its own op form adds one rule
  UOpRef odd = UOp::make(Ops::CUSTOM, dtypes::int32, {}, int64_t{7});
  BOOST_TEST(contains(kernel_error(odd), "CUSTOM takes a format string"));
  PatternMatcher mine = PatternMatcher{{UPat(Ops::CUSTOM), [](Match&) { return spec_ok(); }}} + kernel_spec();
  BOOST_CHECK_NO_THROW(verify_graph(odd, mine, "custom"));
}
