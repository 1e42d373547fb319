// Conformance area "ops": every tensor op x every scalar dtype x shapes (odd sizes, broadcast, reductions,
// non-contiguous and padded views), run on the device under test and on INTERP from the same host values.
// Item ids are "<op>/<dtype>[/<shape tag>]" inside the test cases unary, binary, ternary, cast, bitcast,
// reduce, movement, shapes, indexing and matmul.
#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

#include "op_check.hpp"

namespace {

using namespace tg;
using namespace tg::conformance::ops;
using Ts = std::vector<Tensor>;

std::vector<DType> select(bool want_bool, bool want_ints, bool want_floats) {
  std::vector<DType> out;
  for (DType d : dtypes::all_scalars())
    if ((d.is_bool() && want_bool) || (d.is_int() && want_ints) || (d.is_float() && want_floats))
      out.push_back(d);
  return out;
}
const std::vector<DType> kAll = select(true, true, true), kNum = select(false, true, true),
                         kInts = select(false, true, false), kIntBool = select(true, true, false),
                         kFloats = select(false, false, true), kBool = select(true, false, false);

// Machine epsilon of a float dtype.
double eps(DType d) {
  switch (d.scalar()) {
    case Scalar::FLOAT16:
      return 0x1p-10;
    case Scalar::BFLOAT16:
      return 0x1p-7;
    case Scalar::FP8E4M3:
      return 0x1p-3;
    case Scalar::FP8E5M2:
      return 0x1p-2;
    case Scalar::FLOAT64:
      return 0x1p-52;
    default:
      return 0x1p-23;
  }
}

// exact: one correctly rounded result or no arithmetic (signed zeros must match); basic: IEEE division and
// square roots, maybe via float; math: transcendentals, which the device may decompose; sum: reductions in
// any order.
enum class Prec { exact, basic, math, sum };
Tol tol(Prec p, DType d) {
  if (!d.is_float() || p == Prec::exact) return {0, 0, true};
  double e = eps(d);
  bool narrow = d.scalar_itemsize() <= 2;
  if (p == Prec::basic) return {4 * e, 0, !narrow};  // a decomposed sqrt may be an ulp or two off
  if (narrow) return {2 * e, p == Prec::sum ? 8 * e : e, false};
  if (d == dtypes::float64) return {1e-12, 1e-12, false};
  return {1e-5, p == Prec::math ? 1e-6 : 1e-4, false};
}

const Shape kShape = {7, 33};

uint64_t seed_of(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return h;
}

// One item: inputs of the given dtypes and kinds (shape kShape unless given), fn on them, compared.
void item(const std::string& id, const std::vector<std::pair<DType, Kind>>& ins, const Program& fn, Tol t,
          std::vector<Shape> shapes = {}) {
  std::vector<HostValues> hv;
  for (size_t k = 0; k < ins.size(); k++)
    hv.push_back(
        make_values(ins[k].first, k < shapes.size() ? shapes[k] : kShape, ins[k].second, seed_of(id) + k));
  check_program(id, id, hv, fn, t);
}

struct Unary {
  const char* op;
  Tensor (*fn)(const Tensor&);
  const std::vector<DType>* dtypes;
  Kind kind;
  Prec prec;
};
#define U(NAME, DTS, KIND, PREC)                                                  \
  Unary {                                                                         \
#NAME, [](const Tensor& x) { return x.NAME(); }, &DTS, Kind::KIND, Prec::PREC \
  }
const Unary kUnary[] = {
    U(neg, kNum, any, exact),
    U(abs, kNum, any, exact),
    U(relu, kNum, any, exact),
    U(sign, kNum, any, exact),
    U(square, kNum, math, exact),
    U(sqrt, kFloats, any, basic),
    U(rsqrt, kFloats, positive, math),
    U(reciprocal, kFloats, any, basic),
    U(exp, kFloats, math, math),
    U(exp2, kFloats, math, math),
    U(log, kFloats, any, math),
    U(log2, kFloats, any, math),
    U(sin, kFloats, math, math),
    U(cos, kFloats, math, math),
    U(tan, kFloats, math, math),
    U(tanh, kFloats, math, math),
    U(sigmoid, kFloats, math, math),
    U(trunc, kFloats, any, exact),
    U(floor, kFloats, any, exact),
    U(ceil, kFloats, any, exact),
    U(round, kFloats, any, exact),
    U(isnan, kFloats, any, exact),
    U(isinf, kFloats, any, exact),
    U(isfinite, kFloats, any, exact),
    U(bitwise_not, kIntBool, any, exact),
    U(logical_not, kBool, any, exact),
};
#undef U

struct Binary {
  const char* op;
  Tensor (*fn)(const Tensor&, const Tensor&);
  const std::vector<DType>* dtypes;
  Kind a, b;
  Prec prec;
};
#define B(NAME, EXPR, DTS, KA, KB, PREC)                                                              \
  Binary {                                                                                            \
    NAME, [](const Tensor& a, const Tensor& b) { return EXPR; }, &DTS, Kind::KA, Kind::KB, Prec::PREC \
  }
const Binary kBinary[] = {
    B("add", a.add(b), kAll, any, any, exact),
    B("sub", a.sub(b), kNum, any, any, exact),
    B("mul", a.mul(b), kAll, any, any, exact),
    B("div", a.div(b), kFloats, any, any, basic),
    B("idiv", a.div(b, Rounding::TRUNC), kInts, no_min, nonzero, exact),
    B("div_floor", a.div(b, Rounding::FLOOR), kInts, no_min, nonzero, exact),
    B("mod", a.mod(b), kNum, math, nonzero, math),
    B("pow", a.pow(b), kFloats, any, math, math),
    B("maximum", a.maximum(b), kAll, any, any, exact),
    B("minimum", a.minimum(b), kAll, any, any, exact),
    B("lt", a.lt(b), kAll, any, any, exact),
    B("eq", a.eq(b), kAll, any, any, exact),
    B("ne", a.ne(b), kAll, any, any, exact),
    B("bitwise_and", a.bitwise_and(b), kIntBool, any, any, exact),
    B("bitwise_or", a.bitwise_or(b), kIntBool, any, any, exact),
    B("bitwise_xor", a.bitwise_xor(b), kIntBool, any, any, exact),
    B("lshift", a.lshift(b), kInts, any, shift, exact),
    B("rshift", a.rshift(b), kInts, any, shift, exact),
};
#undef B

}  // namespace

BOOST_AUTO_TEST_SUITE(ops)

BOOST_AUTO_TEST_CASE(unary) {
  for (const Unary& u : kUnary)
    for (DType d : *u.dtypes)
      item(
          std::string(u.op) + "/" + name(d), {{d, u.kind}}, [&](const Ts& x) { return u.fn(x[0]); },
          tol(u.prec, d));
}

BOOST_AUTO_TEST_CASE(binary) {
  for (const Binary& b : kBinary)
    for (DType d : *b.dtypes)
      item(
          std::string(b.op) + "/" + name(d), {{d, b.a}, {d, b.b}},
          [&](const Ts& x) { return b.fn(x[0], x[1]); }, tol(b.prec, d));
}

BOOST_AUTO_TEST_CASE(ternary) {
  for (DType d : kAll)
    item(
        "where/" + name(d), {{dtypes::bool_, Kind::any}, {d, Kind::any}, {d, Kind::any}},
        [](const Ts& x) { return x[0].where(x[1], x[2]); }, tol(Prec::exact, d));
  // a*b+c on float32 is one fused multiply-add (one rounding) on every device, as on INTERP. The "cancel"
  // values tell fused from unfused: (1 + 2^-12)(1 - 2^-12) - 1 is -2^-24 fused, 0 with a rounded product.
  const DType f = dtypes::float32;
  item("mulacc/float32", {{f, Kind::any}, {f, Kind::any}, {f, Kind::any}},
       [](const Ts& x) { return x[0] * x[1] + x[2]; }, tol(Prec::exact, f));
  const double a = 1 + 0x1p-12, b = 1 - 0x1p-12;
  std::vector<HostValues> cancel = {{f, {4}, {a, a, 3, -0x1p-12}, {}, {}},
                                    {f, {4}, {b, b, 0.5, 0x1p-12}, {}, {}},
                                    {f, {4}, {-1, -0.5, 1, 0x1p-24}, {}, {}}};
  check_program("mulacc/float32/cancel", "mulacc/float32/cancel", cancel,
                [](const Ts& x) { return x[0] * x[1] + x[2]; }, tol(Prec::exact, f));
}

BOOST_AUTO_TEST_CASE(cast) {
  for (DType from : kAll)
    for (DType to : kAll) {
      if (from == to) continue;
      Kind k = from.is_float() && !to.is_float() ? Kind::cast_to : Kind::any;
      std::vector<HostValues> in = {make_values(from, kShape, k, seed_of(name(from) + name(to)), to)};
      std::string id = "cast/" + name(from) + "/" + name(to);
      check_program(
          id, id, in, [to](const Ts& x) { return x[0].cast(to); }, tol(Prec::exact, to));
    }
}

BOOST_AUTO_TEST_CASE(bitcast) {
  for (DType from : kAll)
    for (DType to : kAll)
      if (from != to && !from.is_bool() && !to.is_bool() && from.scalar_itemsize() == to.scalar_itemsize())
        item(
            "bitcast/" + name(from) + "/" + name(to), {{from, Kind::any}},
            [to](const Ts& x) { return x[0].bitcast(to); }, tol(Prec::exact, to));
}

BOOST_AUTO_TEST_CASE(reduce) {
  for (DType d : kAll) {
    Kind k = d.is_float() ? Kind::math : Kind::any;
    item(
        "sum/" + name(d), {{d, k}}, [](const Ts& x) { return x[0].sum(1); }, tol(Prec::sum, d));
    item(
        "max/" + name(d), {{d, Kind::any}}, [](const Ts& x) { return x[0].max(0, true); },
        tol(Prec::exact, d));
    item(
        "min/" + name(d), {{d, Kind::any}}, [](const Ts& x) { return x[0].min(0, true); },
        tol(Prec::exact, d));
    if (d.is_bool()) continue;
    item(
        "prod/" + name(d), {{d, Kind::near_one}}, [](const Ts& x) { return x[0].prod(1); },
        tol(Prec::sum, d));
    item(
        "mean/" + name(d), {{d, k}}, [](const Ts& x) { return x[0].mean(1, true); },
        tol(Prec::sum, d.is_float() ? d : dtypes::float32));
    item(
        "argmax/" + name(d), {{d, Kind::any}}, [](const Ts& x) { return x[0].argmax(1); },
        tol(Prec::exact, d));
  }
  for (DType d : {dtypes::int8, dtypes::uint16, dtypes::int32, dtypes::int64, dtypes::float16,
                  dtypes::float32, dtypes::float64, dtypes::bfloat16}) {
    Kind k = d.is_float() ? Kind::math : Kind::any;
    item(
        "cumsum/" + name(d), {{d, k}}, [](const Ts& x) { return x[0].cumsum(1); }, tol(Prec::sum, d));
  }
  // Other axes and views for the common dtypes.
  for (DType d : {dtypes::float32, dtypes::int32}) {
    Kind k = d.is_float() ? Kind::math : Kind::any;
    Tol t = tol(Prec::sum, d);
    item(
        "sum/" + name(d) + "/axis0", {{d, k}}, [](const Ts& x) { return x[0].sum(0); }, t);
    item(
        "sum/" + name(d) + "/all", {{d, k}}, [](const Ts& x) { return x[0].sum(); }, t);
    item(
        "sum/" + name(d) + "/keepdim", {{d, k}}, [](const Ts& x) { return x[0].sum(1, true); }, t);
    item("sum/" + name(d) + "/1023", {{d, k}}, [](const Ts& x) { return x[0].sum(0); }, t, {{1023}});
    item("sum/" + name(d) + "/3d_axes02", {{d, k}},
         [](const Ts& x) {
           return x[0].sum({0, 2}, true);
         },
         t, {{3, 5, 7}});
    item(
        "sum/" + name(d) + "/permuted", {{d, k}},
        [](const Ts& x) {
          return x[0].permute({1, 0}).sum(1);
        },
        t);
    item(
        "sum/" + name(d) + "/padded", {{d, k}},
        [](const Ts& x) {
          return x[0].pad({{2, 1}, {0, 3}}).sum(0);
        },
        t);
    item(
        "max/" + name(d) + "/flipped", {{d, Kind::any}}, [](const Ts& x) { return x[0].flip({1}).max(1); },
        t);
    item(
        "argmax/" + name(d) + "/axis0", {{d, Kind::math}}, [](const Ts& x) { return x[0].argmax(0, true); },
        t);
  }
}

// Realized on purpose from non-contiguous views: each result is a copy kernel reading through the view.
BOOST_AUTO_TEST_CASE(movement) {
  for (DType d : kAll)
    item(
        "chain/" + name(d), {{d, Kind::any}},
        [](const Ts& x) {
          return x[0]
              .permute({1, 0})
              .flip({0})
              .shrink({{2, 31}, {1, 6}})
              .pad({{1, 2}, {0, 3}})
              .reshape({-1, 4})
              .expand({2, -1, 4});
        },
        tol(Prec::exact, d));
  for (DType d : {dtypes::float32, dtypes::int8}) {
    Tol t = tol(Prec::exact, d);
    item(
        "reshape/" + name(d), {{d, Kind::any}},
        [](const Ts& x) {
          return x[0].reshape({11, 21});
        },
        t);
    item("permute/" + name(d), {{d, Kind::any}},
         [](const Ts& x) {
           return x[0].permute({2, 0, 1});
         },
         t, {{3, 5, 7}});
    item("expand/" + name(d), {{d, Kind::any}},
         [](const Ts& x) {
           return x[0].expand({5, 7, 33});
         },
         t, {{7, 1}});
    item(
        "pad/" + name(d), {{d, Kind::any}},
        [](const Ts& x) {
          return x[0].pad({{3, 0}, {1, 2}}, PadMode::CONSTANT, 7);
        },
        t);
    item(
        "shrink/" + name(d), {{d, Kind::any}},
        [](const Ts& x) {
          return x[0].shrink({{1, 6}, {4, 31}});
        },
        t);
    item(
        "flip/" + name(d), {{d, Kind::any}},
        [](const Ts& x) {
          return x[0].flip({0, 1});
        },
        t);
  }
}

// add and where over odd sizes, broadcasts and views: the index arithmetic, not the op, is under test.
BOOST_AUTO_TEST_CASE(shapes) {
  struct Tag {
    const char* tag;
    std::vector<Shape> shapes;
    Tensor (*a)(const Tensor&);
  };
  const Tag tags[] = {
      {"1", {{1}, {1}}, [](const Tensor& x) { return x; }},
      {"1023", {{1023}, {1023}}, [](const Tensor& x) { return x; }},
      {"broadcast", {{7, 1}, {1, 33}}, [](const Tensor& x) { return x; }},
      {"scalar", {{}, {7, 33}}, [](const Tensor& x) { return x; }},
      {"permuted",
       {{33, 7}, {7, 33}},
       [](const Tensor& x) {
         return x.permute({1, 0});
       }},
      {"flipped", {{7, 33}, {7, 33}}, [](const Tensor& x) { return x.flip({1}); }},
      {"shrunk",
       {{9, 36}, {7, 33}},
       [](const Tensor& x) {
         return x.shrink({{1, 8}, {2, 35}});
       }},
      {"padded",
       {{5, 30}, {7, 33}},
       [](const Tensor& x) {
         return x.pad({{1, 1}, {2, 1}});
       }},
  };
  for (DType d : {dtypes::float32, dtypes::float16, dtypes::int8, dtypes::uint32})
    for (const Tag& t : tags) {
      auto view = t.a;
      item(
          "add/" + name(d) + "/" + t.tag, {{d, Kind::any}, {d, Kind::any}},
          [view](const Ts& x) { return view(x[0]) + x[1]; }, tol(Prec::exact, d), t.shapes);
    }
  for (const Tag& t : tags) {
    auto view = t.a;
    item(
        std::string("where/float32/") + t.tag, {{dtypes::bool_, Kind::any}, {dtypes::float32, Kind::any}},
        [view](const Ts& x) { return view(x[0]).where(x[1], -1.5); }, tol(Prec::exact, dtypes::float32),
        t.shapes);
  }
}

BOOST_AUTO_TEST_CASE(indexing) {
  // Index values in [0, 33) for gather along axis 1, made on the host.
  auto index_values = [](DType d) {
    HostValues h = make_values(d, {7, 5}, Kind::positive, 17);
    for (size_t k = 0; k < h.i.size(); k++) h.i[k] = static_cast<int64_t>((k * 7 + 3) % 33);
    return h;
  };
  for (DType d : kAll) {
    std::string id = "gather/" + name(d);
    check_program(
        id, id, {make_values(d, kShape, Kind::any, seed_of(id)), index_values(dtypes::int32)},
        [](const Ts& x) { return x[0].gather(1, x[1]); }, tol(Prec::exact, d));
  }
  check_program(
      "gather/float32/int64_index", "gather float32 by int64",
      {make_values(dtypes::float32, kShape, Kind::any, 5), index_values(dtypes::int64)},
      [](const Ts& x) { return x[0].gather(1, x[1]); }, tol(Prec::exact, dtypes::float32));
}

BOOST_AUTO_TEST_CASE(matmul) {
  for (DType d : kNum)
    item("matmul/" + name(d), {{d, Kind::math}, {d, Kind::math}},
         [](const Ts& x) { return x[0].matmul(x[1]); }, tol(Prec::sum, d), {{7, 33}, {33, 5}});
  Tol t = tol(Prec::sum, dtypes::float32);
  std::pair<DType, Kind> f{dtypes::float32, Kind::math};
  item("matmul/float32/1x1023x1", {f, f}, [](const Ts& x) { return x[0].matmul(x[1]); }, t,
       {{1, 1023}, {1023, 1}});
  item("matmul/float32/batched", {f, f}, [](const Ts& x) { return x[0].matmul(x[1]); }, t,
       {{2, 7, 9}, {9, 3}});
  item("matmul/float32/transposed", {f, f},
       [](const Ts& x) {
         return x[0].permute({1, 0}).matmul(x[1]);
       },
       t, {{33, 7}, {33, 5}});
}

BOOST_AUTO_TEST_SUITE_END()
