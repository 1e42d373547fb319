#define BOOST_TEST_MODULE nn_conv
// Convolution, pooling, attention and dropout against PyTorch.
#include "base/env.hpp"
#include "reference.hpp"
#include "runtime/registry.hpp"

using namespace tg;
using tg::test::expect_error;
using tg::test::expect_matches;
using tg::test::json;
using tg::test::reference;
using tg::test::tensor_of;

namespace {

Sizes sizes_of(const json& j) {
  if (j.is_null()) return {};
  if (j.is_number()) return j.get<int64_t>();
  return j.get<std::vector<int64_t>>();
}

Padding padding_of(const json& j) {
  if (j.is_string()) return j.get<std::string>();
  if (j.is_number()) return j.get<int64_t>();
  std::vector<int64_t> v = j.get<std::vector<int64_t>>();
  std::vector<std::pair<int64_t, int64_t>> pairs;
  for (int64_t p : v) pairs.emplace_back(p, p);
  return pairs;
}

}  // namespace

BOOST_AUTO_TEST_CASE(conv2d_matches_torch) {
  // as one matmul; as matmuls over batch chunks (1300: two samples of the (3, 2, 6, 6) case's 648 window
  // values, 20: one sample of (2, 2, 7, 7)'s 18); as a multiply-reduce over windows
  for (int im2col : {env::CONV_IM2COL.value(), 1300, 20, 0}) {
    env::Scoped mode(env::CONV_IM2COL, im2col);
    for (const json& c : reference()["conv2d"]) {
      BOOST_TEST_CONTEXT("conv2d case " << c.dump().substr(0, 120) << " im2col " << im2col) {
        Tensor b = c.contains("b") ? tensor_of(c["b"]) : Tensor();
        Tensor y =
            tensor_of(c["x"]).conv2d(tensor_of(c["w"]), b, sizes_of(c["stride"]), padding_of(c["padding"]),
                                     sizes_of(c["dilation"]), c["groups"].get<int64_t>());
        expect_matches(y, c["y"]);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(conv1d_matches_torch) {
  for (const json& c : reference()["conv1d"]) {
    Tensor y = tensor_of(c["x"]).conv1d(tensor_of(c["w"]), tensor_of(c["b"]), sizes_of(c["stride"]),
                                        padding_of(c["padding"]), sizes_of(c["dilation"]),
                                        c["groups"].get<int64_t>());
    expect_matches(y, c["y"]);
  }
}

BOOST_AUTO_TEST_CASE(conv_transpose2d_matches_torch) {
  for (const json& c : reference()["conv_transpose2d"]) {
    Tensor y = tensor_of(c["x"]).conv_transpose2d(tensor_of(c["w"]), tensor_of(c["b"]), sizes_of(c["stride"]),
                                                  sizes_of(c["padding"]), sizes_of(c["output_padding"]),
                                                  c["groups"].get<int64_t>(), sizes_of(c["dilation"]));
    expect_matches(y, c["y"]);
  }
}

BOOST_AUTO_TEST_CASE(pools_match_torch) {
  for (const json& c : reference()["max_pool2d"]) {
    BOOST_TEST_CONTEXT("max_pool2d " << c["kernel"] << " " << c["stride"] << " " << c["padding"]) {
      Tensor y =
          tensor_of(c["x"]).max_pool2d(sizes_of(c["kernel"]), sizes_of(c["stride"]), padding_of(c["padding"]),
                                       sizes_of(c["dilation"]), c["ceil_mode"].get<bool>());
      expect_matches(y, c["y"]);
    }
  }
  for (const json& c : reference()["avg_pool2d"]) {
    BOOST_TEST_CONTEXT("avg_pool2d " << c["kernel"] << " " << c["stride"] << " " << c["padding"]) {
      Tensor y =
          tensor_of(c["x"]).avg_pool2d(sizes_of(c["kernel"]), sizes_of(c["stride"]), padding_of(c["padding"]),
                                       c["ceil_mode"].get<bool>(), c["count_include_pad"].get<bool>());
      expect_matches(y, c["y"]);
    }
  }
}

BOOST_AUTO_TEST_CASE(pools_by_hand) {
  // 1-d: [1, 5, 2, 4, 3] -> max over windows of 2 with stride 2 and ceil mode: [5, 4, 3]
  Tensor x = Tensor({1.0f, 5.0f, 2.0f, 4.0f, 3.0f}, {1, 1, 5});
  BOOST_TEST(x.max_pool1d(2, {}, 0, 1, true).to_vector<float>() == (std::vector<float>{5, 4, 3}),
             boost::test_tools::per_element());
  BOOST_TEST(x.avg_pool1d(2).to_vector<float>() == (std::vector<float>{3, 3}),
             boost::test_tools::per_element());
  // integer max pool pads with the dtype's minimum, not with zero
  Tensor xi = Tensor({-3, -1, -2, -5}, {1, 1, 4});
  BOOST_TEST(xi.max_pool1d(3, 1, 1).to_vector<int>() == (std::vector<int>{-1, -1, -1, -2}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(sdpa_matches_torch) {
  for (const json& c : reference()["sdpa"]) {
    std::string kind = c["kind"];
    BOOST_TEST_CONTEXT("sdpa " << kind) {
      Tensor mask;
      if (kind == "bool") mask = tensor_of(c["mask"]).cast(dtypes::bool_);
      if (kind == "float") mask = tensor_of(c["mask"]);
      Tensor y = tensor_of(c["q"]).scaled_dot_product_attention(tensor_of(c["k"]), tensor_of(c["v"]), mask,
                                                                kind == "causal");
      expect_matches(y, c["y"]);
    }
  }
}

BOOST_AUTO_TEST_CASE(dropout_keeps_or_zeroes_and_scales) {
  Tensor::manual_seed(7);
  Tensor x = Tensor::ones({64, 64});
  std::vector<float> y = x.dropout(0.25).to_vector<float>();
  size_t zeros = 0;
  for (float v : y) {
    BOOST_CHECK(v == 0.0f || std::abs(v - 1.0f / 0.75f) < 1e-6f);
    zeros += v == 0.0f;
  }
  // 4096 draws with p = 0.25: 1024 expected, 6 standard deviations is about +-166
  BOOST_TEST(zeros > 858u);
  BOOST_TEST(zeros < 1190u);
  BOOST_TEST(x.dropout(0.5, false).uop() == x.uop());  // eval: the identity
  BOOST_TEST(x.dropout(1.0).sum().item<float>() == 0.0f);
  expect_error<ValueError>([&] { x.dropout(1.5); }, "[dropout] p must be in [0, 1], got 1.5");
}

BOOST_AUTO_TEST_CASE(batchnorm_helper_by_hand) {
  // channel 0: (x - 1) * 2 * 0.5 + 10, channel 1: (x - 0) * 1 * 1 + 0
  Tensor x = Tensor({1.0f, 3.0f, 2.0f, 4.0f}, {2, 2});
  Tensor y =
      x.batchnorm(Tensor({2.0f, 1.0f}), Tensor({10.0f, 0.0f}), Tensor({1.0f, 0.0f}), Tensor({0.5f, 1.0f}));
  BOOST_TEST(y.to_vector<float>() == (std::vector<float>{10, 3, 11, 4}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(argument_forms_agree) {
  Tensor x = Tensor::randn({1, 2, 5, 6}).realize(), w = Tensor::randn({3, 2, 3, 2}).realize();
  std::vector<float> pairs =
      x.conv2d(w, Tensor(), {2, 1}, std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {2, 2}})
          .to_vector<float>();
  BOOST_TEST(x.conv2d(w, Tensor(), {2, 1}, {1, 2}).to_vector<float>() == pairs,
             boost::test_tools::per_element());
  BOOST_TEST(x.conv2d(w, Tensor(), 1, "valid").to_vector<float>() == x.conv2d(w).to_vector<float>(),
             boost::test_tools::per_element());
  // no batch axis: the same as with a batch of one
  BOOST_TEST(
      x[0].conv2d(w, Tensor(), 1, 1).to_vector<float>() == x.conv2d(w, Tensor(), 1, 1).to_vector<float>(),
      boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(windows_are_one_view_fused_into_one_kernel) {
  env::Scoped direct(env::CONV_IM2COL, 0);  // a window matrix in memory would add its own kernels
  Tensor x = Tensor::randn({2, 3, 8, 8}).realize(), w = Tensor::randn({4, 3, 3, 3}).realize();
  Tensor b = Tensor::randn({4}).realize();
  BOOST_TEST(x.conv2d(w, b, 1, 1).relu().schedule().size() == 1u);
  BOOST_TEST(x.conv2d(w, b, 2, 2, 2).schedule().size() == 1u);
  BOOST_TEST(x.max_pool2d(3, 2, 1).schedule().size() == 1u);
  BOOST_TEST(x.avg_pool2d(3, 2, 1, true, false).schedule().size() == 1u);
  BOOST_TEST(x.conv_transpose2d(Tensor::randn({3, 2, 3, 3}).realize(), Tensor(), 2, 1, 1).schedule().size() ==
             1u);
  // A big one (52M multiplies) stores its padded input first: two kernels, and the values of the loops. On
  // a CPU device whose vectors 16 output channels fill, it runs channels last: the weights are copied so
  // first and the output copied back after.
  Tensor bx = Tensor::randn({8, 16, 32, 32}).realize(), bw = Tensor::randn({16, 16, 5, 5}).realize();
  Tensor by = bx.conv2d(bw, Tensor(), 1, 2);
  const sdk::RendererCaps& caps = runtime::device(bx.device()).caps();
  bool last =
      !caps.has_local && caps.has_threads && caps.max_vector_width >= 4 && 16 % caps.max_vector_width == 0;
  BOOST_TEST(by.schedule().size() == (last ? 4u : 2u));
  std::vector<float> xv = bx.to_vector<float>(), wv = bw.to_vector<float>(), yv = by.to_vector<float>();
  double worst = 0;
  for (int n = 0; n < 8; n++)
    for (int o = 0; o < 16; o++)
      for (int i = 0; i < 32; i++)
        for (int j = 0; j < 32; j++) {
          double acc = 0;
          for (int c = 0; c < 16; c++)
            for (int a = 0; a < 5; a++)
              for (int e = 0; e < 5; e++) {
                int yy = i + a - 2, xx = j + e - 2;
                if (yy < 0 || yy >= 32 || xx < 0 || xx >= 32) continue;
                acc += double(xv[size_t(((n * 16 + c) * 32 + yy) * 32 + xx)]) *
                       wv[size_t(((o * 16 + c) * 5 + a) * 5 + e)];
              }
          worst = std::max(worst, std::abs(acc - yv[size_t(((n * 16 + o) * 32 + i) * 32 + j)]));
        }
  BOOST_TEST(worst < 1e-3);
}

BOOST_AUTO_TEST_CASE(big_padded_conv_weight_gradient_reads_the_stored_input) {
  // A big padded conv run direct (26M multiplies) stores its padded input once; the weight gradient reads
  // that copy too instead of testing every read against the border. dw[o, c, a, e] = sum over n, i, j of
  // x_padded[n, c, i + a, j + e] * g[n, o, i, j] for the loss sum(y * g), in double precision.
  env::Scoped direct(env::CONV_IM2COL, 0);
  Tensor x = Tensor::randn({4, 16, 32, 32}).realize(), w = Tensor::randn({16, 16, 5, 5}).realize();
  Tensor g = Tensor::randn({4, 16, 32, 32}).realize();
  w.requires_grad_();
  (x.conv2d(w, Tensor(), 1, 2) * g).sum().backward();
  std::vector<float> xv = x.to_vector<float>(), gv = g.to_vector<float>(), dw = w.grad().to_vector<float>();
  BOOST_REQUIRE_EQUAL(dw.size(), size_t{16 * 16 * 25});
  double worst = 0;
  for (int o = 0; o < 16; o++)
    for (int c = 0; c < 16; c++)
      for (int a = 0; a < 5; a++)
        for (int e = 0; e < 5; e++) {
          double acc = 0;
          for (int n = 0; n < 4; n++)
            for (int i = 0; i < 32; i++)
              for (int j = 0; j < 32; j++) {
                int yy = i + a - 2, xx = j + e - 2;
                if (yy < 0 || yy >= 32 || xx < 0 || xx >= 32) continue;
                acc += double(xv[size_t(((n * 16 + c) * 32 + yy) * 32 + xx)]) *
                       gv[size_t(((n * 16 + o) * 32 + i) * 32 + j)];
              }
          worst = std::max(worst, std::abs(acc - dw[size_t(((o * 16 + c) * 5 + a) * 5 + e)]));
        }
  BOOST_TEST(worst < 5e-3);  // sums of 4096 products of normal values (about 64 in size)
}

BOOST_AUTO_TEST_CASE(conv_errors_name_the_op) {
  Tensor x = Tensor::ones({1, 3, 5, 5}), w = Tensor::ones({4, 2, 3, 3});
  expect_error<ShapeError>([&] { x.conv2d(w); },
                           "[conv2d] input (1,3,5,5) with 1 groups does not fit weight (4,2,3,3)");
  expect_error<ShapeError>(
      [&] {
        x.conv2d(Tensor::ones({4, 3, 7, 7}));
      },
      "[conv2d] input (1,3,5,5) padded to 5 on axis 2 is smaller than kernel (4,3,7,7) with dilation 1 (spans 7)");
  expect_error<ValueError>(
      [&] {
        x.conv2d(Tensor::ones({4, 3, 3, 3}), Tensor(), 2, "same");
      },
      "[conv2d] padding=\"same\" needs stride 1");
  expect_error<ValueError>(
      [&] {
        x.conv2d(Tensor::ones({4, 3, 3, 3}), Tensor(), {1, 1, 1});
      },
      "[conv2d] stride needs 1 or 2 values, got 3");
  expect_error<ValueError>([&] { x.max_pool2d(2, 2, 2); },
                           "[max_pool2d] padding (2,2) must be between 0 and half the kernel size 2");
  expect_error<ValueError>(
      [&] {
        x.conv_transpose2d(Tensor::ones({3, 2, 3, 3}), Tensor(), 1, 0, 1);
      },
      "[conv_transpose2d] output_padding 1 must be smaller than stride 1 or dilation 1");
}
