#define BOOST_TEST_MODULE pattern
#include <boost/test/unit_test.hpp>

#include "base/error.hpp"
#include "uop/pattern.hpp"

using namespace tg;

namespace {

UOpRef var(const char* name, DType d = dtypes::index) { return UOp::variable(name, 0, 10, d); }
UOpRef cst(int64_t v, DType d = dtypes::index) { return UOp::const_(d, v); }

// The rewrite of u by pm at the root only (no graph walk).
UOpRef once(const PatternMatcher& pm, const UOpRef& u) { return pm.rewrite(u); }

}  // namespace

BOOST_AUTO_TEST_CASE(identity_rule_matches_both_orders) {
  PatternMatcher pm{{UPat::var("x") * 1, [](Match& m) { return m["x"]; }}};  // x*1 -> x
  UOpRef a = var("a");
  BOOST_TEST(once(pm, a * 1) == a);
  BOOST_TEST(once(pm, 1 * a) == a);
  BOOST_TEST(once(pm, a * 2) == nullptr);
  BOOST_TEST(once(pm, a + 1) == nullptr);
  // A float 1.0 matches the integer pattern constant too.
  UOpRef f = var("f", dtypes::float32);
  BOOST_TEST(once(pm, f * 1.0) == f);
}

BOOST_AUTO_TEST_CASE(a_name_captures_one_node) {
  PatternMatcher pm{{UPat::var("x") + UPat::var("x"), [](Match& m) { return m["x"] * 2; }}};  // x+x -> x*2
  UOpRef a = var("a"), b = var("b");
  BOOST_TEST(once(pm, a + a) == a * 2);
  BOOST_TEST(once(pm, a + b) == nullptr);
}

BOOST_AUTO_TEST_CASE(backtracking_through_nested_permutations) {
  // (x+y)*x: for a*(b+a) the outer MUL must swap and the inner ADD must swap to bind x = a consistently.
  PatternMatcher pm{{(UPat::var("x") + UPat::var("y")) * UPat::var("x"),
                     [](Match& m) { return m["x"] * m["x"] + m["x"] * m["y"]; }}};
  UOpRef a = var("a"), b = var("b");
  BOOST_TEST(once(pm, a * (b + a)) == a * a + a * b);
  BOOST_TEST(once(pm, (a + b) * a) == a * a + a * b);
  BOOST_TEST(once(pm, (a + b) * b) == b * b + b * a);
  BOOST_TEST(once(pm, (a + a) * b) == nullptr);
}

BOOST_AUTO_TEST_CASE(a_null_result_tries_the_next_match) {
  // The rule refuses when x is the variable a, so for a+b it must be retried with the sources swapped.
  PatternMatcher pm{{UPat::var("x", dtypes::index) + UPat::var("y"), [](Match& m) -> UOpRef {
                       if (m["x"]->op() == Ops::DEFINE_VAR && m["x"]->arg_as<VarArg>().name == "a")
                         return nullptr;
                       return m["x"];
                     }}};
  UOpRef a = var("a"), b = var("b");
  BOOST_TEST(once(pm, a + b) == b);
  BOOST_TEST(once(pm, b + a) == b);
  BOOST_TEST(once(pm, a + a) == nullptr);
}

BOOST_AUTO_TEST_CASE(dtype_sets) {
  PatternMatcher pm{
      {UPat::var("x", DTypeSet::floats()) * 1, [](Match& m) { return m["x"]; }},
      {UPat::var("x", DTypeSet{dtypes::int32, dtypes::int64}) + 0, [](Match& m) { return m["x"]; }}};
  UOpRef f = var("f", dtypes::float32), h = var("h", dtypes::half), i = var("i", dtypes::int32);
  BOOST_TEST(once(pm, f * 1.0) == f);
  BOOST_TEST(once(pm, h * 1.0) == h);
  BOOST_TEST(once(pm, i * 1) == nullptr);
  BOOST_TEST(once(pm, i + 0) == i);
  BOOST_TEST(once(pm, var("j", dtypes::int8) + 0) == nullptr);
  // Vector widths of a listed scalar type match; pointers match only pointer entries.
  BOOST_TEST(DTypeSet{dtypes::float32}.matches(dtypes::float32.vec(4)));
  BOOST_TEST(!DTypeSet{dtypes::float32}.matches(dtypes::float32.ptr()));
  BOOST_TEST(DTypeSet{dtypes::float32.ptr()}.matches(dtypes::float32.ptr(AddrSpace::GLOBAL, 64)));
  BOOST_TEST(!DTypeSet{dtypes::float32.ptr()}.matches(dtypes::float32.ptr(AddrSpace::LOCAL)));
  BOOST_TEST(DTypeSet::ints().matches(dtypes::index));
  BOOST_TEST(!DTypeSet::ints().matches(dtypes::bool_));
  BOOST_TEST(DTypeSet().matches(dtypes::void_));
}

BOOST_AUTO_TEST_CASE(arg_and_const_match) {
  PatternMatcher pm{
      {UPat(Ops::DEFINE_VAR).arg(VarArg{"a", 0, 10}), [](Match&) { return cst(100); }},
      {UPat::cnst(int64_t{7}), [](Match&) { return cst(8); }},
      {UPat(Ops::RANGE, std::nullopt, AxisArg{2, AxisType::REDUCE}), [](Match&) { return cst(9); }},
      {UPat::cvar("c", dtypes::bool_),
       [](Match& m) { return UOp::const_(dtypes::bool_, !std::get<bool>(*m["c"]->const_value())); }},
  };
  BOOST_TEST(once(pm, var("a")) == cst(100));
  BOOST_TEST(once(pm, var("b")) == nullptr);
  BOOST_TEST(once(pm, cst(7)) == cst(8));
  BOOST_TEST(once(pm, UOp::const_(dtypes::float32, 7.0)) == cst(8));
  BOOST_TEST(once(pm, cst(6)) == nullptr);
  BOOST_TEST(once(pm, UOp::range(cst(4), 2, AxisType::REDUCE)) == cst(9));
  BOOST_TEST(once(pm, UOp::range(cst(4), 2, AxisType::LOOP)) == nullptr);
  BOOST_TEST(once(pm, UOp::const_(dtypes::bool_, true)) == UOp::const_(dtypes::bool_, false));
}

BOOST_AUTO_TEST_CASE(op_sets_and_alternatives) {
  PatternMatcher pm{
      {UPat::op(OpSet{Ops::ADD, Ops::MUL}, {UPat::var("x"), UPat::cnst(int64_t{0})}),
       [](Match& m) { return m["x"]; }},
      {UPat::any({UPat(Ops::EXP2, {{UPat::var("x")}}), UPat(Ops::LOG2, {{UPat::var("x")}})}).named("u"),
       [](Match& m) { return m["x"]->alu(Ops::SQRT); }},
      {UPat(Ops::SINK).allow_extra_src(), [](Match& m) { return m.root()->src(0); }},
  };
  UOpRef a = var("a", dtypes::float32), z = UOp::const_(dtypes::float32, 0.0);
  BOOST_TEST(once(pm, a + z) == a);
  BOOST_TEST(once(pm, a * z) == a);
  BOOST_TEST(once(pm, z * a) == nullptr);  // UPat::op keeps source order
  BOOST_TEST(once(pm, a->alu(Ops::EXP2)) == a->alu(Ops::SQRT));
  BOOST_TEST(once(pm, a->alu(Ops::LOG2)) == a->alu(Ops::SQRT));
  BOOST_TEST(once(pm, a->alu(Ops::SIN)) == nullptr);
  BOOST_TEST(once(pm, UOp::sink({a, z})) == a);
}

BOOST_AUTO_TEST_CASE(extra_sources_and_exact_counts) {
  UOpRef a = var("a"), b = var("b"), c = var("c");
  PatternMatcher exact{
      {UPat(Ops::SINK, {{UPat::var("x"), UPat::var("y")}}), [](Match& m) { return m["y"]; }}};
  PatternMatcher prefix{
      {UPat(Ops::SINK, {{UPat::var("x")}}).allow_extra_src(), [](Match& m) { return m["x"]; }}};
  BOOST_TEST(once(exact, UOp::sink({a, b})) == b);
  BOOST_TEST(once(exact, UOp::sink({a, b, c})) == nullptr);
  BOOST_TEST(once(prefix, UOp::sink({a, b, c})) == a);
  BOOST_TEST(once(prefix, UOp::sink({})) == nullptr);
}

BOOST_AUTO_TEST_CASE(rules_fire_in_order_and_combine_with_plus) {
  PatternMatcher first{{UPat::var("x") + 0, [](Match&) { return cst(1); }}};
  PatternMatcher second{{UPat::var("x") + 0, [](Match&) { return cst(2); }},
                        {UPat::var("x") * 0, [](Match&) { return cst(3); }}};
  UOpRef a = var("a");
  BOOST_TEST(once(first + second, a + 0) == cst(1));
  BOOST_TEST(once(second + first, a + 0) == cst(2));
  BOOST_TEST(once(first + second, a * 0) == cst(3));
  BOOST_TEST((first + second).rules().size() == 3u);
  // A rule answering with the node itself is "no change", so the next rule gets its turn.
  PatternMatcher self{{UPat::var("x"), [](Match& m) { return m.root(); }},
                      {UPat::var("x") + 0, [](Match& m) { return m["x"]; }}};
  BOOST_TEST(once(self, a + 0) == a);
}

BOOST_AUTO_TEST_CASE(match_reports_missing_captures) {
  PatternMatcher pm{{UPat::var("x") + 0, [](Match& m) {
                       BOOST_TEST(m.find("y") == nullptr);
                       BOOST_CHECK_THROW(m["y"], ValueError);
                       BOOST_TEST(!m.has_ctx());
                       return m["x"];
                     }}};
  BOOST_TEST(once(pm, var("a") + 0) == var("a"));
}

BOOST_AUTO_TEST_CASE(builder_patterns_read_like_the_algebra) {
  UOpRef a = var("a"), b = var("b"), f = var("f", dtypes::float32);
  auto hit = [](const UPat& p, const UOpRef& u) {
    PatternMatcher pm{{p, [](Match&) { return cst(42); }}};
    return pm.rewrite(u) == cst(42);
  };
  BOOST_TEST(hit(-UPat::var("x"), -a));
  BOOST_TEST(hit(-UPat::var("x"), -f));
  BOOST_TEST(hit(UPat::var("x") / 4, a / 4));
  BOOST_TEST(hit(UPat::var("x") % 4, a % 4));
  BOOST_TEST(hit(UPat::var("x").lt(UPat::var("y")), a->lt(b)));
  BOOST_TEST(!hit(UPat::var("x").lt(UPat::cvar()), cst(3)->lt(b)));  // CMPLT is not commutative
  BOOST_TEST(hit(UPat::var("x").ne(UPat::cvar()), cst(3)->ne(b)));   // CMPNE is
  BOOST_TEST(hit(UPat::var("c").where(UPat::var("t"), UPat::var("f")), a->lt(b)->where(a, b)));
  BOOST_TEST(hit(UPat::var("x").cast(DTypeSet::floats()), a->cast(dtypes::half)));
  BOOST_TEST(!hit(UPat::var("x").cast(DTypeSet::floats()), a->cast(dtypes::int32)));
  BOOST_TEST(hit(UPat::var("x").maximum(UPat::cvar("c")), cst(1)->maximum(a)));
  BOOST_TEST(hit((UPat::var("x") & 1) | UPat::var("y"), b | (a & cst(1))));
  BOOST_TEST(hit(UPat::var("x") << 2, a << cst(2)));
}
