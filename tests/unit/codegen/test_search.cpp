// The BEAM search's action space (codegen/search.hpp): which opts it tries on a known kernel, which of
// them apply, the unrolled-size bound, and the opts text the on-disk cache stores.
#define BOOST_TEST_MODULE codegen_search
#include <boost/test/unit_test.hpp>

#include "codegen/search.hpp"
#include "helpers.hpp"
#include "tg/sdk/cstyle.hpp"
#include "uop/symbolic.hpp"

using namespace tgtest;

namespace tg::codegen {  // printing for BOOST_TEST
inline std::ostream& operator<<(std::ostream& o, const Opt& x) { return o << x.str(); }
}  // namespace tg::codegen

namespace {

// A C target with two parallel tasks, like the CLANG device on two cores.
sdk::RendererCaps c_caps() {
  sdk::RendererCaps c = sdk::CDialect::default_caps();
  c.has_threads = true, c.thread_count = 2, c.max_vector_width = 16;
  return c;
}

// c[i, j] = sum_k a[i, k] * b[k, j] for a (12, 20) x (20, 16) product: axes 0 (12), 1 (16), reduce 2 (20).
UOpRef matmul_ast() {
  UOpRef i = range(12, 0), j = range(16, 1), r = range(20, 2, AxisType::REDUCE);
  UOpRef a = glob(1, dtypes::float32, 240), b = glob(2, dtypes::float32, 320);
  UOpRef v = reduce(load(a, i * idx(20) + r) * load(b, r * idx(16) + j), {r}, Ops::ADD);
  UOpRef ast = UOp::sink({end(store(glob(0, dtypes::float32, 192), i * idx(16) + j, v), {i, j})});
  return graph_rewrite(ast, symbolic(), nullptr, {.name = "initial symbolic"});
}

std::vector<codegen::Opt> lasts(const std::vector<std::vector<codegen::Opt>>& lists) {
  std::vector<codegen::Opt> out;
  for (const auto& l : lists) out.push_back(l.back());
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(actions_cover_every_axis) {
  std::vector<codegen::Opt> a = codegen::search_actions(matmul_ast(), c_caps());
  // 2 output axes x (6 UPCAST + THREAD) + SWAP of the two + 6 UNROLL and 3 UPCAST (lanes) of the reduce axis
  BOOST_TEST(a.size() == 24u);
  BOOST_TEST((a.front() == codegen::Opt{codegen::OptOps::UPCAST, 0, 2}));
  BOOST_TEST((a[6] == codegen::Opt{codegen::OptOps::THREAD, 0, 2}));
  BOOST_TEST((a[7] == codegen::Opt{codegen::OptOps::SWAP, 0, 1}));
  BOOST_TEST((a[20] == codegen::Opt{codegen::OptOps::UNROLL, 2, 16}));
  BOOST_TEST((a.back() == codegen::Opt{codegen::OptOps::UPCAST, 2, 32}));
  sdk::RendererCaps serial = sdk::CDialect::default_caps();
  serial.has_threads = serial.has_local = false;
  BOOST_TEST(codegen::search_actions(matmul_ast(), serial).size() ==
             22u);  // no THREAD without parallel tasks
}

BOOST_AUTO_TEST_CASE(expand_keeps_only_opts_that_apply) {
  // 12: UPCAST 2, 3, 4, THREAD 2 and SWAP with 16; 16: UPCAST 2, 4, 8, 16 and THREAD 2; 20: UNROLL 2, 4, 5.
  std::vector<codegen::Opt> want = {
      {codegen::OptOps::UPCAST, 0, 2}, {codegen::OptOps::UPCAST, 0, 3}, {codegen::OptOps::UPCAST, 0, 4},
      {codegen::OptOps::THREAD, 0, 2}, {codegen::OptOps::SWAP, 0, 1},   {codegen::OptOps::UPCAST, 1, 2},
      {codegen::OptOps::UPCAST, 1, 4}, {codegen::OptOps::UPCAST, 1, 8}, {codegen::OptOps::UPCAST, 1, 16},
      {codegen::OptOps::THREAD, 1, 2}, {codegen::OptOps::UNROLL, 2, 2}, {codegen::OptOps::UNROLL, 2, 4},
      {codegen::OptOps::UNROLL, 2, 5}};
  std::vector<std::vector<codegen::Opt>> got = codegen::search_expand(matmul_ast(), {}, c_caps());
  BOOST_TEST(lasts(got) == want, boost::test_tools::per_element());
  for (const auto& l : got) BOOST_TEST(l.size() == 1u);
}

BOOST_AUTO_TEST_CASE(expand_extends_the_base_and_bounds_the_unrolled_size) {
  // After UPCAST 16 and 4 (64 values) axis 0 has 3 left and axis 1 is used up: UPCAST 3 (192 values),
  // UNROLL 2 (128) and 4 (256) fit; UNROLL 5 (320) does not, and THREAD 2 divides nothing left.
  std::vector<codegen::Opt> base = {{codegen::OptOps::UPCAST, 1, 16}, {codegen::OptOps::UPCAST, 0, 4}};
  std::vector<std::vector<codegen::Opt>> got = codegen::search_expand(matmul_ast(), base, c_caps());
  std::vector<codegen::Opt> want = {
      {codegen::OptOps::UPCAST, 0, 3}, {codegen::OptOps::UNROLL, 2, 2}, {codegen::OptOps::UNROLL, 2, 4}};
  BOOST_TEST(lasts(got) == want, boost::test_tools::per_element());
  for (const auto& l : got) {
    BOOST_TEST(l.size() == 3u);
    BOOST_TEST((std::vector<codegen::Opt>(l.begin(), l.begin() + 2) == base));
  }
  BOOST_TEST(codegen::kMaxSearchUpcast == 256);
}

BOOST_AUTO_TEST_CASE(opts_apply_says_whether_apply_opts_throws) {
  BOOST_TEST(codegen::opts_apply(matmul_ast(), std::vector<codegen::Opt>{{codegen::OptOps::UPCAST, 1, 4}},
                                 c_caps()));
  BOOST_TEST(!codegen::opts_apply(matmul_ast(), std::vector<codegen::Opt>{{codegen::OptOps::UPCAST, 1, 5}},
                                  c_caps()));
  BOOST_TEST(!codegen::opts_apply(matmul_ast(), std::vector<codegen::Opt>{{codegen::OptOps::THREAD, 2, 2}},
                                  c_caps()));
  BOOST_TEST(codegen::opts_apply(matmul_ast(), std::vector<codegen::Opt>{{codegen::OptOps::UPCAST, 2, 4}},
                                 c_caps()));  // lanes of k
  sdk::RendererCaps gpu = c_caps();
  gpu.has_local = true;
  BOOST_TEST(
      !codegen::opts_apply(matmul_ast(), std::vector<codegen::Opt>{{codegen::OptOps::UPCAST, 2, 4}}, gpu));
  BOOST_TEST(!codegen::opts_apply(matmul_ast(), std::vector<codegen::Opt>{{codegen::OptOps::UPCAST, 7, 2}},
                                  c_caps()));
}

BOOST_AUTO_TEST_CASE(opts_text_round_trips) {
  std::vector<codegen::Opt> opts = {
      {codegen::OptOps::UPCAST, 1, 16}, {codegen::OptOps::UNROLL, 2, 4}, {codegen::OptOps::THREAD, 0, 12}};
  std::string text = codegen::opts_str(opts);
  BOOST_TEST(text == "[UPCAST(axis=1, arg=16), UNROLL(axis=2, arg=4), THREAD(axis=0, arg=12)]");
  std::optional<std::vector<codegen::Opt>> back = codegen::parse_opts(text);
  BOOST_TEST_REQUIRE(back.has_value());
  BOOST_TEST(*back == opts, boost::test_tools::per_element());
  std::optional<std::vector<codegen::Opt>> none = codegen::parse_opts("[]");
  BOOST_TEST_REQUIRE(none.has_value());
  BOOST_TEST(none->empty());
}

BOOST_AUTO_TEST_CASE(bad_opts_text_is_rejected) {
  for (std::string_view bad :
       {"", "[", "]", "garbage", "[UPCAST(axis=1, arg=4)", "[UPCAST(axis=1, arg=4)]x",
        "[UPCAST(axis=-1, arg=4)]", "[UPCAST(axis=1,arg=4)]", "[FOO(axis=1, arg=4)]",
        "[UPCAST(axis=1, arg=4),]", "[UPCAST(axis=1, arg=)]", "[UPCAST(axis=99999999999999999999, arg=4)]",
        "[UPCAST(axis=1, arg=4) UNROLL(axis=2, arg=4)]"})
    BOOST_TEST(!codegen::parse_opts(bad).has_value(), bad);
}
