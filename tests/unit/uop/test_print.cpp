#define BOOST_TEST_MODULE print
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <limits>

#include "uop/print.hpp"

using namespace tg;

BOOST_AUTO_TEST_CASE(tree_names_shared_nodes) {
  UOpRef a = UOp::variable("a", 0, 5, dtypes::int32);
  UOpRef e = (a + 1) * a;
  BOOST_TEST(print_tree(e) ==
             "UOp(Ops.MUL, dtypes.int, arg=None, src=(\n"
             "  UOp(Ops.ADD, dtypes.int, arg=None, src=(\n"
             "    x1:=UOp(Ops.DEFINE_VAR, dtypes.int, arg=('a', 0, 5), src=()),\n"
             "    UOp(Ops.CONST, dtypes.int, arg=1, src=()),)),\n"
             "  x1,))");
  BOOST_TEST(print_tree(a) == "UOp(Ops.DEFINE_VAR, dtypes.int, arg=('a', 0, 5), src=())");
}

BOOST_AUTO_TEST_CASE(tree_of_a_deep_chain) {
  UOpRef x = UOp::variable("a", 0, 5);
  for (int i = 0; i < 100000; i++) x = x->alu(Ops::SQRT);
  std::string s = print_tree(x);
  BOOST_TEST(s.substr(0, 46) == "UOp(Ops.SQRT, dtypes.index, arg=None, src=(\n  ");
  BOOST_TEST(s.substr(s.size() - 3) == ",))");
}

BOOST_AUTO_TEST_CASE(uops_list) {
  UOpRef a = UOp::variable("a", 0, 5, dtypes::int32);
  UOpRef b = a * 2;
  std::vector<const UOp*> lst{a.get(), b.get()};
  BOOST_TEST(print_uops(lst) ==
             "   0 DEFINE_VAR       dtypes.int                   [] ('a', 0, 5)\n"
             "   1 MUL              dtypes.int                   [0, 2] None\n");
}

BOOST_AUTO_TEST_CASE(dtype_and_arg_literals) {
  BOOST_TEST(render_cpp(dtypes::float32) == "dtypes::float32");
  BOOST_TEST(render_cpp(dtypes::half.vec(4)) == "dtypes::float16.vec(4)");
  BOOST_TEST(render_cpp(dtypes::float32.ptr()) == "dtypes::float32.ptr()");
  BOOST_TEST(render_cpp(dtypes::float32.ptr(AddrSpace::LOCAL, 16)) ==
             "dtypes::float32.ptr(AddrSpace::LOCAL, 16)");
  BOOST_TEST(render_cpp(Arg{}) == "Arg{}");
  BOOST_TEST(render_cpp(Arg{int64_t{-3}}) == "int64_t{-3}");
  BOOST_TEST(render_cpp(Arg{2.0}) == "2.0");
  BOOST_TEST(render_cpp(Arg{0.1}) == "0.1");
  BOOST_TEST(render_cpp(Arg{-std::numeric_limits<double>::infinity()}) ==
             "-std::numeric_limits<double>::infinity()");
  BOOST_TEST(render_cpp(Arg{std::string("gidx\"0")}) == "std::string(\"gidx\\\"0\")");
  BOOST_TEST(render_cpp(Arg{IntVec{1, 2}}) == "IntVec{1, 2}");
  BOOST_TEST(render_cpp(Arg{IntPairs{{0, 1}, {2, 3}}}) == "IntPairs{{0, 1}, {2, 3}}");
  BOOST_TEST(render_cpp(Arg{AxisArg{1, AxisType::REDUCE}}) == "AxisArg{1, AxisType::REDUCE}");
  BOOST_TEST(render_cpp(Arg{ReduceArg{Ops::MAX, {0}}}) == "ReduceArg{Ops::MAX, {0}}");
  BOOST_TEST(render_cpp(Arg{Ops::ADD}) == "Ops::ADD");
}

// The expected text of each case below is also compiled right after it: rebuilding must give the same node.

BOOST_AUTO_TEST_CASE(render_index_expression) {
  UOpRef g = UOp::variable("g", 0, 15);
  UOpRef r = UOp::range(UOp::const_(dtypes::index, int64_t{4}), 0, AxisType::LOOP);
  UOpRef root = ((g * 4 + r) % 16)->lt(UOp::const_(dtypes::index, int64_t{10}));
  BOOST_TEST(render_cpp(root) ==
             "UOpRef c0 = UOp::variable(\"g\", 0, 15);\n"
             "UOpRef c3 = UOp::range(UOp::const_(dtypes::index, int64_t{4}), 0, AxisType::LOOP);\n"
             "UOpRef ast = (((c0 * 4) + c3) % 16)->lt(UOp::const_(dtypes::index, int64_t{10}));\n");
  UOpRef c0 = UOp::variable("g", 0, 15);
  UOpRef c3 = UOp::range(UOp::const_(dtypes::index, int64_t{4}), 0, AxisType::LOOP);
  UOpRef ast = (((c0 * 4) + c3) % 16)->lt(UOp::const_(dtypes::index, int64_t{10}));
  BOOST_TEST(ast == root);
}

BOOST_AUTO_TEST_CASE(render_shared_nodes_and_sink) {
  UOpRef x = UOp::variable("x", -5, 5, dtypes::int32);
  UOpRef f = x->cast(dtypes::float32);
  UOpRef y = f * 0.5 + f;
  UOpRef root = UOp::sink({y->alu(Ops::SQRT), y->maximum(f), x->lt(x)->where(f, y)});
  BOOST_TEST(render_cpp(root) ==
             "UOpRef c0 = UOp::variable(\"x\", -5, 5, dtypes::int32);\n"
             "UOpRef c1 = c0->cast(dtypes::float32);\n"
             "UOpRef c4 = (c1 * 0.5) + c1;\n"
             "UOpRef c5 = c4->alu(Ops::SQRT);\n"
             "UOpRef c6 = c4->maximum(c1);\n"
             "UOpRef c8 = c0->lt(c0)->where(c1, c4);\n"
             "UOpRef ast = UOp::sink({c5, c6, c8});\n");
  UOpRef c0 = UOp::variable("x", -5, 5, dtypes::int32);
  UOpRef c1 = c0->cast(dtypes::float32);
  UOpRef c4 = (c1 * 0.5) + c1;
  UOpRef c5 = c4->alu(Ops::SQRT);
  UOpRef c6 = c4->maximum(c1);
  UOpRef c8 = c0->lt(c0)->where(c1, c4);
  UOpRef ast = UOp::sink({c5, c6, c8});
  BOOST_TEST(ast == root);
}

BOOST_AUTO_TEST_CASE(render_falls_back_to_make) {
  // A STORE, a kernel-level INDEX and an int32 CONST holding a float arg have no builder that rebuilds them.
  UOpRef buf = UOp::make(Ops::DEFINE_GLOBAL, dtypes::float32.ptr(), {}, int64_t{0});
  UOpRef idx = UOp::make(Ops::INDEX, dtypes::float32.ptr(), {buf, UOp::const_(dtypes::index, int64_t{3})});
  UOpRef odd = UOp::make(Ops::CONST, dtypes::int32, {}, 2.5);
  UOpRef root = UOp::make(Ops::STORE, dtypes::void_, {idx, odd->cast(dtypes::float32)});
  BOOST_TEST(
      render_cpp(root) ==
      "UOpRef c0 = UOp::make(Ops::DEFINE_GLOBAL, dtypes::float32.ptr(), {}, int64_t{0});\n"
      "UOpRef ast = UOp::make(Ops::STORE, dtypes::void_, {UOp::make(Ops::INDEX, dtypes::float32.ptr(), "
      "{c0, UOp::const_(dtypes::index, int64_t{3})}), UOp::make(Ops::CONST, dtypes::int32, {}, "
      "2.5)->cast(dtypes::float32)});\n");
  UOpRef c0 = UOp::make(Ops::DEFINE_GLOBAL, dtypes::float32.ptr(), {}, int64_t{0});
  UOpRef ast =
      UOp::make(Ops::STORE, dtypes::void_,
                {UOp::make(Ops::INDEX, dtypes::float32.ptr(), {c0, UOp::const_(dtypes::index, int64_t{3})}),
                 UOp::make(Ops::CONST, dtypes::int32, {}, 2.5)->cast(dtypes::float32)});
  BOOST_TEST(ast == root);
}

BOOST_AUTO_TEST_CASE(render_deep_chain_splits) {
  UOpRef x = UOp::variable("a", 0, 5);
  for (int i = 0; i < 1000; i++) x = x + 1;
  std::string s = render_cpp(x);
  // 1000 nested additions cannot be one expression; every 48th level gets a name.
  BOOST_TEST(std::count(s.begin(), s.end(), '\n') == 1 + 1000 / 48 + 1);
  BOOST_TEST(s.substr(0, 38) == "UOpRef c0 = UOp::variable(\"a\", 0, 5);\n");
}
