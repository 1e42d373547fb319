// Gradients of every differentiable op against PyTorch autograd: gen_grads.py writes the cases, each one
// is rebuilt here with tg::Tensor, backpropagated on the current device and compared input by input, once
// lazily and once with every intermediate realized before backward().
#define BOOST_TEST_MODULE grad_reference
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tensor/gradient.hpp"
#include "tensor/tensor.hpp"

using namespace tg;
using V = std::vector<Tensor>;
using Fn = std::function<Tensor(const V&)>;

namespace {

Tensor f32(std::vector<float> v) { return Tensor(std::move(v)); }

Tensor split_loss(const Tensor& x) {
  Tensor total = Tensor(0.0f);
  std::vector<Tensor> parts = x.split(3, 1);
  for (size_t i = 0; i < parts.size(); i++) total = total + (parts[i] * double(i + 1)).sum() * double(i + 1);
  return total;
}

// One entry per case of gen_grads.py, with the same name and the same computation.
const std::map<std::string, Fn>& cases() {
  static const std::map<std::string, Fn> m = {
      // unary
      {"neg", [](const V& t) { return -t[0]; }},
      {"reciprocal", [](const V& t) { return t[0].reciprocal(); }},
      {"sqrt", [](const V& t) { return t[0].sqrt(); }},
      {"rsqrt", [](const V& t) { return t[0].rsqrt(); }},
      {"exp", [](const V& t) { return t[0].exp(); }},
      {"exp2", [](const V& t) { return t[0].exp2(); }},
      {"log", [](const V& t) { return t[0].log(); }},
      {"log2", [](const V& t) { return t[0].log2(); }},
      {"sin", [](const V& t) { return t[0].sin(); }},
      {"cos", [](const V& t) { return t[0].cos(); }},
      {"tan", [](const V& t) { return t[0].tan(); }},
      {"tanh", [](const V& t) { return t[0].tanh(); }},
      {"sigmoid", [](const V& t) { return t[0].sigmoid(); }},
      {"relu", [](const V& t) { return t[0].relu(); }},
      {"leaky_relu", [](const V& t) { return t[0].leaky_relu(0.1); }},
      {"gelu", [](const V& t) { return t[0].gelu(); }},
      {"silu", [](const V& t) { return t[0].silu(); }},
      {"softplus", [](const V& t) { return t[0].softplus(); }},
      {"logsigmoid", [](const V& t) { return t[0].logsigmoid(); }},
      {"abs", [](const V& t) { return t[0].abs(); }},
      {"sign", [](const V& t) { return t[0].sign() * 2 + t[0]; }},
      {"square", [](const V& t) { return t[0].square(); }},
      {"trunc_floor_ceil_round",
       [](const V& t) {
         const Tensor& x = t[0];
         return (x * 3).trunc() + (x * 3).floor() + x.ceil() * x + x.round();
       }},
      {"sum_scalar_loss", [](const V& t) { return (t[0] * t[0]).sum(); }},
      // binary and ternary
      {"add_broadcast", [](const V& t) { return t[0] + t[1]; }},
      {"sub_broadcast", [](const V& t) { return t[0] - t[1]; }},
      {"mul_broadcast", [](const V& t) { return t[0] * t[1]; }},
      {"div_broadcast", [](const V& t) { return t[0] / t[1]; }},
      {"rdiv_scalar", [](const V& t) { return 3.0 / t[0]; }},
      {"pow_tensor", [](const V& t) { return t[0].pow(t[1]); }},
      {"pow_scalar", [](const V& t) { return t[0].pow(2.5) + t[0].pow(2.0); }},
      {"rpow_scalar", [](const V& t) { return t[0].pow(2.0, true); }},
      {"pow_zero_base", [](const V& t) { return t[0].pow(t[1]); }},
      {"maximum", [](const V& t) { return t[0].maximum(t[1]); }},
      {"minimum", [](const V& t) { return t[0].minimum(t[1]); }},
      {"maximum_ties", [](const V& t) { return t[0].maximum(t[1]) * f32({1, 2, 3, 4}); }},
      {"minimum_ties", [](const V& t) { return t[0].minimum(t[1]) * f32({1, 2, 3, 4}); }},
      {"where", [](const V& t) { return t[0].reshape({3, 1, 1}).ne(0).where(t[1], t[2]); }},
      {"clamp_scalar", [](const V& t) { return t[0].clamp(-0.5, 0.7); }},
      {"clamp_tensor", [](const V& t) { return t[0].clamp(t[1], t[1] + t[2].abs()); }},
      {"logaddexp", [](const V& t) { return t[0].logaddexp(t[1]); }},
      {"mod_float", [](const V& t) { return (t[0] * 3).mod(t[1]); }},
      {"fmod_float", [](const V& t) { return (t[0] * 3).fmod(t[1]); }},
      {"cast_roundtrip",
       [](const V& t) {
         const Tensor& x = t[0];
         return x.cast(dtypes::float64).cast(dtypes::float32) * 2 +
                x.cast(dtypes::float16).cast(dtypes::float32).detach();
       }},
      // reductions
      {"sum_all", [](const V& t) { return t[0].sum(); }},
      {"sum_axis", [](const V& t) { return t[0].sum(1); }},
      {"sum_axes_keepdim", [](const V& t) { return t[0].sum({0, 2}, true); }},
      {"mean_axis", [](const V& t) { return t[0].mean(-1); }},
      {"mean_all", [](const V& t) { return t[0].mean(); }},
      {"max_all", [](const V& t) { return t[0].max(); }},
      {"max_axis", [](const V& t) { return t[0].max(1); }},
      {"min_axis_keepdim", [](const V& t) { return t[0].min(0, true); }},
      {"max_ties", [](const V& t) { return t[0].max(1); }},
      {"max_ties_all", [](const V& t) { return t[0].max() * 3; }},
      {"min_ties", [](const V& t) { return t[0].min(1); }},
      {"prod_axis", [](const V& t) { return t[0].prod(1); }},
      {"prod_zeros", [](const V& t) { return t[0].prod(1); }},
      {"var_axis", [](const V& t) { return t[0].var(1); }},
      {"var_keepdim", [](const V& t) { return t[0].var({0, 2}, true); }},
      {"std_all", [](const V& t) { return t[0].std(); }},
      {"std_correction0", [](const V& t) { return t[0].std(-1, false, 0); }},
      {"logsumexp", [](const V& t) { return t[0].logsumexp(-1); }},
      {"cumsum", [](const V& t) { return t[0].cumsum(1); }},
      {"cumsum_last", [](const V& t) { return t[0].cumsum(0); }},
      // movement
      {"reshape", [](const V& t) { return t[0].reshape({6, 10}) * Tensor::arange(10.0); }},
      {"permute", [](const V& t) { return t[0].permute({2, 0, 1}); }},
      {"expand", [](const V& t) { return t[0].expand({2, 3, 4, 5}); }},
      {"transpose_flatten", [](const V& t) { return t[0].transpose(0, 2).flatten(1); }},
      {"squeeze_unsqueeze", [](const V& t) { return t[0].squeeze(1).unsqueeze(0); }},
      {"pad_constant", [](const V& t) { return t[0].pad({{0, 0}, {0, 0}, {1, 2}, {2, 1}}, PadMode::CONSTANT, 0.5); }},
      {"pad_reflect", [](const V& t) { return t[0].pad({{0, 0}, {0, 0}, {1, 2}, {2, 1}}, PadMode::REFLECT); }},
      {"pad_replicate", [](const V& t) { return t[0].pad({{0, 0}, {0, 0}, {1, 2}, {2, 1}}, PadMode::REPLICATE); }},
      {"pad_circular", [](const V& t) { return t[0].pad({{0, 0}, {0, 0}, {1, 2}, {2, 1}}, PadMode::CIRCULAR); }},
      {"shrink", [](const V& t) { return t[0].shrink({{1, 3}, {0, 4}, {2, 4}}); }},
      {"flip", [](const V& t) { return t[0].flip({0, 2}); }},
      {"cat", [](const V& t) { return Tensor::cat({t[0], t[1], t[2]}, 0); }},
      {"stack", [](const V& t) { return Tensor::stack({t[0], t[1]}, 1); }},
      {"split", [](const V& t) { return split_loss(t[0]); }},
      {"chunk", [](const V& t) { return t[0].chunk(3, 0)[1] * 2 + t[0].chunk(3, 0)[2]; }},
      {"repeat", [](const V& t) { return t[0].repeat({2, 1, 3}); }},
      // indexing
      {"slice_step", [](const V& t) { return t[0][{Slice{{}, {}, 2}, Slice{1, {}, 3}}]; }},
      {"index_int_newaxis", [](const V& t) { return t[0][{1, newaxis, Slice{}, Slice{2, 4}}]; }},
      {"index_tensor", [](const V& t) { return t[0][t[1]]; }},
      {"index_two_tensors", [](const V& t) { return t[0][{t[1], t[2]}]; }},
      {"gather", [](const V& t) { return t[0].gather(1, t[1]); }},
      // linear algebra
      {"matmul", [](const V& t) { return t[0].matmul(t[1]); }},
      {"matmul_batched", [](const V& t) { return t[0].matmul(t[1]); }},
      {"matmul_packed", [](const V& t) { return t[0].matmul(t[1]); }},
      {"matmul_computed", [](const V& t) { return (t[0].tanh().matmul(t[1] * 2.0f + 1.0f)).sin(); }},
      {"matmul_batched_computed",
       [](const V& t) { return t[0].exp().matmul(t[1].transpose(1, 2).relu().transpose(1, 2)) * 0.5f; }},
      {"dot_vectors", [](const V& t) { return t[0].dot(t[1]); }},
      {"einsum_ij_jk", [](const V& t) { return Tensor::einsum("ij,jk->ik", {t[0], t[1]}); }},
      {"einsum_batched", [](const V& t) { return Tensor::einsum("bij,bjk->bik", {t[0], t[1]}); }},
      {"einsum_trace", [](const V& t) { return Tensor::einsum("ii->", {t[0]}); }},
      {"linear", [](const V& t) { return t[0].linear(t[1], t[2]); }},
      // convolution and pooling
      {"conv2d", [](const V& t) { return t[0].conv2d(t[1], t[2], 1, 1); }},
      {"conv2d_strided_grouped", [](const V& t) { return t[0].conv2d(t[1], Tensor(), 2, 0, 2, 2); }},
      {"max_pool2d", [](const V& t) { return t[0].max_pool2d(2); }},
      {"avg_pool2d", [](const V& t) { return t[0].avg_pool2d(3, 2, 1); }},
      // nn functional
      {"softmax", [](const V& t) { return t[0].softmax(-1); }},
      {"softmax_axis1", [](const V& t) { return t[0].softmax(1); }},
      {"log_softmax", [](const V& t) { return t[0].log_softmax(-1); }},
      {"layernorm", [](const V& t) { return t[0].layernorm(-1, 1e-5); }},
      {"cross_entropy_indices", [](const V& t) { return t[0].cross_entropy(t[1]); }},
      {"cross_entropy_probs", [](const V& t) { return t[0].cross_entropy(t[1].softmax(-1)); }},
      {"cross_entropy_smoothing", [](const V& t) { return t[0].cross_entropy(t[1], Reduction::MEAN, 0.1); }},
      {"cross_entropy_sum", [](const V& t) { return t[0].cross_entropy(t[1], Reduction::SUM); }},
      {"sparse_ce_ignore",
       [](const V& t) { return t[0].sparse_categorical_crossentropy(t[1].cast(dtypes::int32), 2); }},
      {"binary_crossentropy", [](const V& t) { return t[0].binary_crossentropy(t[1]); }},
      {"binary_crossentropy_logits", [](const V& t) { return t[0].binary_crossentropy_logits(t[1]); }},
      // composed math and activations
      {"asin", [](const V& t) { return (t[0] * 0.9).asin(); }},
      {"acos", [](const V& t) { return (t[0] * 0.9).acos(); }},
      {"atan", [](const V& t) { return (t[0] * 2).atan(); }},
      {"sinh_cosh", [](const V& t) { return t[0].sinh() + t[0].cosh() * 2; }},
      {"asinh", [](const V& t) { return (t[0] * 3).asinh(); }},
      {"acosh", [](const V& t) { return (t[0] + 1).acosh(); }},
      {"atanh", [](const V& t) { return (t[0] * 0.9).atanh(); }},
      {"erf", [](const V& t) { return t[0].erf(); }},
      {"log10", [](const V& t) { return t[0].log10(); }},
      {"copysign", [](const V& t) { return t[0].copysign(t[1]); }},
      {"lerp", [](const V& t) { return t[0].lerp(t[1], t[2] * 1.5); }},
      {"gelu_exact", [](const V& t) { return t[0].gelu("none"); }},
      {"elu", [](const V& t) { return t[0].elu(0.7); }},
      {"celu", [](const V& t) { return t[0].celu(1.5); }},
      {"selu", [](const V& t) { return t[0].selu(); }},
      {"mish", [](const V& t) { return t[0].mish(); }},
      {"hardsigmoid_hardswish", [](const V& t) { return (t[0] * 3).hardsigmoid() + (t[0] * 3).hardswish(); }},
      {"hardtanh_relu6", [](const V& t) { return t[0].hardtanh() + (t[0] * 5).relu6(); }},
      {"softsign", [](const V& t) { return t[0].softsign(); }},
      {"quick_gelu", [](const V& t) { return t[0].quick_gelu(); }},
      {"softmin", [](const V& t) { return t[0].softmin(1); }},
      // masks, statistics, scans
      {"masked_fill", [](const V& t) { return t[0].masked_fill(t[1].ne(0), 0.5); }},
      {"tril_triu", [](const V& t) { return t[0].tril(1) + t[0].triu(-1) * 2; }},
      {"std_mean",
       [](const V& t) {
         auto [s, m] = t[0].std_mean(1);
         return s * 2 + m;
       }},
      {"var_mean",
       [](const V& t) {
         auto [v, m] = t[0].var_mean({0, 2}, true);
         return v + m * 3;
       }},
      {"normalize", [](const V& t) { return t[0].normalize(2.0, 1); }},
      {"normalize_p3", [](const V& t) { return t[0].normalize(3.0, -1); }},
      {"cumprod", [](const V& t) { return (t[0] + 0.2).cumprod(1); }},
      {"cummax", [](const V& t) { return t[0].cummax(1).first; }},
      {"cummin", [](const V& t) { return t[0].cummin(-1).first; }},
      {"logcumsumexp", [](const V& t) { return t[0].logcumsumexp(2); }},
      // shape helpers, scatter, sorting, selection
      {"roll", [](const V& t) { return t[0].roll({1, -2}, {0, 2}) * Tensor::arange(5.0); }},
      {"diag", [](const V& t) { return t[0].diag(1) * Tensor::arange(5.0); }},
      {"diag_2d", [](const V& t) { return t[0].diag(-1); }},
      {"diagonal", [](const V& t) { return t[0].diagonal(1, 0, 2); }},
      {"meshgrid",
       [](const V& t) {
         std::vector<Tensor> g = Tensor::meshgrid({t[0], t[1]}, "xy");
         return g[0] * g[1] + g[0];
       }},
      {"repeat_interleave", [](const V& t) { return t[0].repeat_interleave(2, 1) * Tensor::arange(5.0); }},
      {"unfold", [](const V& t) { return t[0].unfold(1, 4, 3) * Tensor::arange(4.0); }},
      {"pad_to_shrink_to",
       [](const V& t) { return t[0].pad_to({3, 5, 7}) * 2 + t[0].shrink_to({2, 3, 4}).pad_to({3, 5, 7}); }},
      {"scatter",
       [](const V& t) {
         return t[0].scatter(0, Tensor(std::vector<int32_t>{1, 0, 3, 2, 0, 3, 2, 0, 1, 1}, {2, 5}), t[1]);
       }},
      {"scatter_reduce_sum",
       [](const V& t) {
         Tensor i(std::vector<int32_t>{1, 0, 3, 2, 0, 1, 2, 0, 1, 1, 3, 3, 3, 0, 0}, {3, 5});
         return t[0].scatter_reduce(0, i, t[1], "sum");
       }},
      {"scatter_reduce_amax",
       [](const V& t) {
         Tensor i(std::vector<int32_t>{1, 0, 3, 2, 0, 1, 2, 0, 1, 1, 3, 3, 3, 0, 0}, {3, 5});
         return t[0].scatter_reduce(0, i, t[1], "amax", false);
       }},
      {"sort", [](const V& t) { return t[0].sort(1, true).first * Tensor::arange(5.0); }},
      {"topk", [](const V& t) { return t[0].topk(2, -1).first; }},
      {"masked_select", [](const V& t) { return t[0].masked_select(t[1].ne(0)); }},
      // resampling, rearrange, QR
      {"interpolate_bilinear", [](const V& t) { return t[0].interpolate({7, 3}, "bilinear"); }},
      {"interpolate_bicubic", [](const V& t) { return t[0].interpolate({6, 8}, "bicubic", true); }},
      {"interpolate_nearest", [](const V& t) { return t[0].interpolate({8}, "nearest"); }},
      {"rearrange", [](const V& t) { return t[0].rearrange("a (b c) d -> a d (c b)", {{"b", 2}}); }},
      {"max_unpool2d",
       [](const V& t) {
         Tensor i = Tensor(std::vector<int32_t>{0, 3, 10, 19, 14, 17, 30, 33, 28}, {1, 1, 3, 3}).expand({1, 2, 3, 3});
         return t[0].max_unpool2d(i, 2) * Tensor::arange(6.0);
       }},
      {"svd_values", [](const V& t) { return std::get<1>(t[0].svd()) * f32({1, 2, 3}); }},
      {"svd_values_8x6", [](const V& t) { return std::get<1>(t[0].svd()) * f32({1, 2, 3, 4, 5, 6}); }},
      {"qr",
       [](const V& t) {
         auto [q, r] = t[0].qr();
         return q.sum(0) * 2 + r.sum(1).sum() + (q * q).sum();
       }},
      {"mlp_loss",
       [](const V& t) {
         Tensor h = (t[0].matmul(t[1]) + t[2]).relu();
         return (h.matmul(t[3]) + t[4]).cross_entropy(t[5]);
       }},
  };
  return m;
}

Shape shape_of(const nlohmann::json& j) { return j["shape"].get<Shape>(); }

Tensor tensor_of(const nlohmann::json& j) {
  if (j.contains("dtype") && j["dtype"] == "int32")
    return Tensor(j["data"].get<std::vector<int32_t>>(), shape_of(j)).reshape(shape_of(j));
  return Tensor(j["data"].get<std::vector<float>>(), shape_of(j)).reshape(shape_of(j));
}

// Float32 values computed in a different order than PyTorch: relative tolerance with an absolute floor.
void check_values(const std::string& what, const Tensor& got, const nlohmann::json& want) {
  BOOST_CHECK_MESSAGE(got.shape() == shape_of(want), what << ": shape differs");
  if (got.shape() != shape_of(want)) return;
  std::vector<double> g = got.to_vector<double>();
  std::vector<double> w = want["data"].get<std::vector<double>>();
  int bad = 0;
  for (size_t i = 0; i < g.size(); i++) {
    bool ok = std::abs(g[i] - w[i]) <= 2e-4 * std::max(1.0, std::abs(w[i])) ||
              (std::isnan(g[i]) && std::isnan(w[i]));
    if (!ok && bad++ < 3) BOOST_ERROR(what << " element " << i << ": got " << g[i] << ", want " << w[i]);
  }
  if (bad == 0) BOOST_TEST_MESSAGE(what << ": ok");
}

// The cases the build generated, or TG_GRAD_CASES' file (the binary run on a machine without the build tree).
nlohmann::json load_cases() {
  const char* env = std::getenv("TG_GRAD_CASES");
  std::string path = env && *env ? env : TG_GRAD_CASES_FILE;
  std::ifstream in(path);
  BOOST_REQUIRE_MESSAGE(in.good(), "cannot open the generated cases " << path);
  return nlohmann::json::parse(in);
}

// Builds every case (with every intermediate that requires grad realized as it is made, when
// realize_each), backpropagates and compares the output and each input's gradient with PyTorch's.
// TG_GRAD_ONLY=name runs that case alone (DEBUG output of one case).
void check_every_case(bool realize_each) {
  nlohmann::json all = load_cases();
  BOOST_REQUIRE(all.size() > 90);
  const char* only = std::getenv("TG_GRAD_ONLY");
  std::set<std::string> seen;
  for (const nlohmann::json& c : all) {
    std::string name = c["name"];
    seen.insert(name);
    if (only && *only && name != only) continue;
    auto fn = cases().find(name);
    if (fn == cases().end()) {
      BOOST_ERROR("case " << name << " has no C++ computation");
      continue;
    }
    try {
      V inputs;
      for (const nlohmann::json& in : c["inputs"]) {
        Tensor t = tensor_of(in);
        if (in["grad"]) t.requires_grad_();
        inputs.push_back(t);
      }
      Tensor out;
      {
        std::optional<RealizeEachOp> eager;
        if (realize_each) eager.emplace();
        out = fn->second(inputs);
      }
      BOOST_CHECK_MESSAGE(out.requires_grad(), name << ": the output does not require grad");
      if (c["upstream"].is_null())
        out.backward();
      else
        out.backward(tensor_of(c["upstream"]));
      check_values(name + " output", out, c["output"]);
      for (size_t i = 0; i < inputs.size(); i++) {
        const nlohmann::json& in = c["inputs"][i];
        if (!in["grad"]) {
          BOOST_CHECK_MESSAGE(!inputs[i].grad().defined(),
                              name << " input " << i << " got an unexpected grad");
          continue;
        }
        BOOST_CHECK_MESSAGE(inputs[i].grad().defined(), name << " input " << i << " has no grad");
        if (inputs[i].grad().defined())
          check_values(name + " grad " + std::to_string(i), inputs[i].grad(), in["expected"]);
      }
    } catch (const std::exception& e) {
      BOOST_ERROR("case " << name << " threw: " << e.what());
    }
  }
  for (const auto& [name, fn] : cases())
    BOOST_CHECK_MESSAGE(seen.count(name), "the C++ case " << name << " has no PyTorch reference");
}

}  // namespace

BOOST_AUTO_TEST_CASE(every_case_matches_pytorch) { check_every_case(false); }

// Realizing a tensor must not change a gradient: the same cases with every intermediate realized.
BOOST_AUTO_TEST_CASE(every_case_matches_pytorch_with_intermediates_realized) { check_every_case(true); }
