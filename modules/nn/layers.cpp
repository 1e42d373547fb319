// Layer construction (PyTorch's default initializers) and forward passes.
#include "nn/layers.hpp"

#include <cmath>
#include <limits>
#include <numeric>

#include <fmt/format.h>

#include "base/error.hpp"

namespace tg::nn {

namespace {

// PyTorch's default: kaiming_uniform with a = sqrt(5), i.e. uniform(+-1/sqrt(fan_in)), fan_in =
// prod(shape[1:]).
Tensor default_weight(const Shape& shape) { return Tensor::kaiming_uniform(shape, std::sqrt(5.0)); }

Tensor default_bias(int64_t n, int64_t fan_in) {
  double bound = fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.0;
  return bound > 0 ? Tensor::uniform({n}, -bound, bound) : Tensor::zeros({n});
}

void check_positive(std::string_view layer, std::initializer_list<int64_t> sizes) {
  for (int64_t s : sizes)
    if (s <= 0) throw ValueError(layer, fmt::format("sizes must be positive, got {}", s));
}

// Axes 0 and 2.. (everything but the channels).
std::vector<int> all_but_channels(int ndim) {
  std::vector<int> ax{0};
  for (int i = 2; i < ndim; i++) ax.push_back(i);
  return ax;
}

std::vector<int> last_axes(size_t n) {
  std::vector<int> ax(n);
  std::iota(ax.begin(), ax.end(), -static_cast<int>(n));
  return ax;
}

void check_trailing(const Tensor& x, const Shape& shape, std::string_view layer) {
  bool ok = x.ndim() >= static_cast<int>(shape.size()) &&
            std::equal(shape.begin(), shape.end(), x.shape().end() - static_cast<long>(shape.size()));
  if (!ok)
    throw ShapeError(layer, fmt::format("input {} does not end with the normalized shape {}",
                                        shape_str(x.shape()), shape_str(shape)));
}

// The mean over axes summed one axis at a time, the last first. As one float sum over all N*H*W values,
// a channel of nearly equal values (a ReLU's zeros and its bias) lost 1e-3 of its normalized values, and
// the CNN's gradients on one device and over a split batch (the same sums in another order) were 6e-2
// apart; per axis the sums are short, and each sample's sums are the same however the batch is split.
Tensor batch_mean(const Tensor& x, const std::vector<int>& axes, int64_t per_channel) {
  Tensor sum = x;
  for (auto a = axes.rbegin(); a != axes.rend(); ++a) sum = sum.sum(*a, true);
  return sum.reshape({x.shape()[1]}) * (1.0 / static_cast<double>(per_channel));
}

}  // namespace

// ---- Linear and convolutions ----

Linear::Linear(int64_t in_features, int64_t out_features, bool with_bias) {
  check_positive("Linear", {in_features, out_features});
  register_parameter("weight", weight, default_weight({out_features, in_features}));
  if (with_bias) register_parameter("bias", bias, default_bias(out_features, in_features));
  realize_state();
}

Tensor Linear::forward(const Tensor& x) {
  if (x.ndim() < 1 || x.shape().back() != weight.shape()[1])
    throw ShapeError("Linear", fmt::format("input {} must end with in_features {}", shape_str(x.shape()),
                                           weight.shape()[1]));
  return x.linear(weight.transpose(), bias);
}

ConvNd::ConvNd(int n, int64_t in_channels, int64_t out_channels, Sizes kernel_size, Sizes stride,
               Padding padding, Sizes dilation, int64_t groups, bool with_bias)
    : stride_(std::move(stride)),
      dilation_(std::move(dilation)),
      padding_(std::move(padding)),
      groups_(groups),
      n_(n) {
  std::string name = fmt::format("Conv{}d", n);
  check_positive(name, {in_channels, out_channels, groups});
  if (in_channels % groups || out_channels % groups)
    throw ValueError(name, fmt::format("in_channels {} and out_channels {} must be divisible by groups {}",
                                       in_channels, out_channels, groups));
  Shape shape{out_channels, in_channels / groups};
  for (int64_t k : kernel_size.resolve(n, name, "kernel_size")) {
    check_positive(name, {k});
    shape.push_back(k);
  }
  int64_t fan_in = std::accumulate(shape.begin() + 1, shape.end(), int64_t{1}, std::multiplies<>());
  register_parameter("weight", weight, default_weight(shape));
  if (with_bias) register_parameter("bias", bias, default_bias(out_channels, fan_in));
  realize_state();
}

Tensor ConvNd::forward(const Tensor& x) {
  return x.conv(weight, bias, stride_, padding_, dilation_, groups_, fmt::format("Conv{}d", n_));
}

ConvTransposeNd::ConvTransposeNd(int n, int64_t in_channels, int64_t out_channels, Sizes kernel_size,
                                 Sizes stride, Sizes padding, Sizes output_padding, int64_t groups,
                                 bool with_bias, Sizes dilation)
    : stride_(std::move(stride)),
      padding_(std::move(padding)),
      output_padding_(std::move(output_padding)),
      dilation_(std::move(dilation)),
      groups_(groups),
      n_(n) {
  std::string name = fmt::format("ConvTranspose{}d", n);
  check_positive(name, {in_channels, out_channels, groups});
  if (in_channels % groups || out_channels % groups)
    throw ValueError(name, fmt::format("in_channels {} and out_channels {} must be divisible by groups {}",
                                       in_channels, out_channels, groups));
  Shape shape{in_channels, out_channels / groups};
  for (int64_t k : kernel_size.resolve(n, name, "kernel_size")) {
    check_positive(name, {k});
    shape.push_back(k);
  }
  // PyTorch computes fan_in from weight.shape[1:] here too
  int64_t fan_in = std::accumulate(shape.begin() + 1, shape.end(), int64_t{1}, std::multiplies<>());
  register_parameter("weight", weight, default_weight(shape));
  if (with_bias) register_parameter("bias", bias, default_bias(out_channels, fan_in));
  realize_state();
}

Tensor ConvTransposeNd::forward(const Tensor& x) {
  std::string name = fmt::format("ConvTranspose{}d", n_);
  if (x.ndim() != n_ + 1 && x.ndim() != n_ + 2)
    throw ShapeError(name, fmt::format("expects {} or {} dimensions (channels first), got {}", n_ + 1, n_ + 2,
                                       shape_str(x.shape())));
  return x.conv_transpose(weight, bias, stride_, padding_, output_padding_, groups_, dilation_, name);
}

// ---- normalization ----

BatchNorm::BatchNorm(int64_t num_features, double eps, std::optional<double> momentum, bool affine,
                     bool track_running_stats)
    : num_features_(num_features), eps_(eps), momentum_(momentum) {
  check_positive("BatchNorm", {num_features});
  if (affine) {
    register_parameter("weight", weight, Tensor::ones({num_features}).contiguous());
    register_parameter("bias", bias, Tensor::zeros({num_features}).contiguous());
  }
  if (track_running_stats) {
    register_buffer("running_mean", running_mean, Tensor::zeros({num_features}).contiguous());
    register_buffer("running_var", running_var, Tensor::ones({num_features}).contiguous());
    register_buffer("num_batches_tracked", num_batches_tracked,
                    Tensor::zeros({}, dtypes::int64).contiguous());
  }
  realize_state();
}

void BatchNorm::check_input(const Tensor& x) const {
  if (x.ndim() < 2 || x.shape()[1] != num_features_)
    throw ShapeError("BatchNorm", fmt::format("input {} needs {} channels on axis 1", shape_str(x.shape()),
                                              num_features_));
}

void BatchNorm1d::check_input(const Tensor& x) const {
  if (x.ndim() != 2 && x.ndim() != 3)
    throw ShapeError("BatchNorm1d", fmt::format("expects (N, C) or (N, C, L), got {}", shape_str(x.shape())));
  BatchNorm::check_input(x);
}

void BatchNorm2d::check_input(const Tensor& x) const {
  if (x.ndim() != 4)
    throw ShapeError("BatchNorm2d", fmt::format("expects (N, C, H, W), got {}", shape_str(x.shape())));
  BatchNorm::check_input(x);
}

Tensor BatchNorm::forward(const Tensor& x) {
  check_input(x);
  bool track = running_mean.defined();
  if (!is_training() && track) return x.batchnorm(weight, bias, running_mean, (running_var + eps_).rsqrt());
  std::vector<int> axes = all_but_channels(x.ndim());
  int64_t n = x.numel() / num_features_;
  if (is_training() && n <= 1)
    throw ValueError(
        "BatchNorm",
        fmt::format("needs more than one value per channel in training, got input {}", shape_str(x.shape())));
  Shape s(x.ndim(), 1);
  s[1] = num_features_;
  Tensor mean = batch_mean(x, axes, n);
  Tensor var = batch_mean((x - mean.reshape(s)).square(), axes, n);  // biased, for normalizing
  if (is_training() && track) {
    // Realized with the next realize (the loss, or the optimizer step, whose schedule orders it before the
    // weights it reads are overwritten) rather than now: now would compute x's whole graph a second time.
    // Left lazy past that, it would read weights an optimizer step may have overwritten.
    Tensor factor = momentum_ ? Tensor(*momentum_, running_mean.dtype(), x.device())
                              : (1 / (num_batches_tracked + 1)).cast(running_mean.dtype());
    Tensor m = mean.detach().cast(running_mean.dtype()), v = var.detach().cast(running_var.dtype());
    double unbias = static_cast<double>(n) / static_cast<double>(n - 1);
    Tensor new_mean = (1 - factor) * running_mean + factor * m;
    Tensor new_var = (1 - factor) * running_var + factor * (v * unbias);
    Tensor::realize_later({running_mean.assign(new_mean), running_var.assign(new_var),
                           num_batches_tracked.assign(num_batches_tracked + 1)});
  }
  return x.batchnorm(weight, bias, mean, (var + eps_).rsqrt());
}

std::pair<Tensor, Tensor> BatchNorm::calc_stats(const Tensor& x) const {
  check_input(x);
  Shape s(x.ndim(), 1);
  s[1] = num_features_;
  if (!is_training() && running_mean.defined()) return {running_mean, running_var.reshape(s)};
  std::vector<int> axes = all_but_channels(x.ndim());
  int64_t n = x.numel() / num_features_;
  Tensor mean = batch_mean(x, axes, n);
  return {mean, batch_mean((x - mean.reshape(s)).square(), axes, n)};
}

LayerNorm::LayerNorm(Shape normalized_shape, double eps, bool elementwise_affine, bool with_bias)
    : shape_(std::move(normalized_shape)), eps_(eps) {
  if (shape_.empty()) throw ValueError("LayerNorm", "normalized_shape must not be empty");
  if (elementwise_affine) {
    register_parameter("weight", weight, Tensor::ones(shape_).contiguous());
    if (with_bias) register_parameter("bias", bias, Tensor::zeros(shape_).contiguous());
  }
  realize_state();
}

Tensor LayerNorm::forward(const Tensor& x) {
  check_trailing(x, shape_, "LayerNorm");
  Tensor y = x.layernorm(last_axes(shape_.size()), eps_);
  if (weight.defined()) y = y * weight;
  return bias.defined() ? y + bias : y;
}

GroupNorm::GroupNorm(int64_t num_groups, int64_t num_channels, double eps, bool affine)
    : groups_(num_groups), channels_(num_channels), eps_(eps) {
  check_positive("GroupNorm", {num_groups, num_channels});
  if (num_channels % num_groups)
    throw ValueError("GroupNorm", fmt::format("num_channels {} must be divisible by num_groups {}",
                                              num_channels, num_groups));
  if (affine) {
    register_parameter("weight", weight, Tensor::ones({num_channels}).contiguous());
    register_parameter("bias", bias, Tensor::zeros({num_channels}).contiguous());
  }
  realize_state();
}

Tensor GroupNorm::forward(const Tensor& x) {
  if (x.ndim() < 2 || x.shape()[1] != channels_)
    throw ShapeError("GroupNorm",
                     fmt::format("input {} needs {} channels on axis 1", shape_str(x.shape()), channels_));
  Tensor y = x.reshape({x.shape()[0], groups_, -1}).layernorm(-1, eps_).reshape(x.shape());
  Shape s(x.ndim(), 1);
  s[1] = channels_;
  if (weight.defined()) y = y * weight.reshape(s);
  return bias.defined() ? y + bias.reshape(s) : y;
}

RMSNorm::RMSNorm(Shape normalized_shape, std::optional<double> eps, bool elementwise_affine)
    : shape_(std::move(normalized_shape)), eps_(eps) {
  if (shape_.empty()) throw ValueError("RMSNorm", "normalized_shape must not be empty");
  if (elementwise_affine) register_parameter("weight", weight, Tensor::ones(shape_).contiguous());
  realize_state();
}

Tensor RMSNorm::forward(const Tensor& x) {
  check_trailing(x, shape_, "RMSNorm");
  double eps = eps_.value_or(x.dtype() == dtypes::float64   ? std::numeric_limits<double>::epsilon()
                             : x.dtype() == dtypes::float16 ? 0.0009765625
                                                            : std::numeric_limits<float>::epsilon());
  Tensor y = x * (x.square().mean(last_axes(shape_.size()), true) + eps).rsqrt();
  return weight.defined() ? y * weight : y;
}

InstanceNorm::InstanceNorm(int64_t num_features, double eps, bool affine)
    : features_(num_features), eps_(eps) {
  check_positive("InstanceNorm", {num_features});
  if (affine) {
    register_parameter("weight", weight, Tensor::ones({num_features}).contiguous());
    register_parameter("bias", bias, Tensor::zeros({num_features}).contiguous());
  }
  realize_state();
}

Tensor InstanceNorm::forward(const Tensor& x) {
  if (x.ndim() < 3 || x.shape()[1] != features_)
    throw ShapeError("InstanceNorm", fmt::format("input {} must be (N, C, *spatial) with C = {}",
                                                 shape_str(x.shape()), features_));
  Tensor y = x.reshape({x.shape()[0], features_, -1}).layernorm(-1, eps_).reshape(x.shape());
  Shape s(x.ndim(), 1);
  s[1] = features_;
  if (weight.defined()) y = y * weight.reshape(s);
  return bias.defined() ? y + bias.reshape(s) : y;
}

Tensor LayerNorm2d::forward(const Tensor& x) {
  if (x.ndim() != 4 || x.shape()[1] != channels_)
    throw ShapeError("LayerNorm2d", fmt::format("input {} must be (N, C, H, W) with C = {}",
                                                shape_str(x.shape()), channels_));
  return LayerNorm::forward(x.permute({0, 2, 3, 1})).permute({0, 3, 1, 2});
}

// ---- recurrent ----

LSTMCell::LSTMCell(int64_t input_size, int64_t hidden_size, bool with_bias)
    : input_(input_size), hidden_(hidden_size) {
  check_positive("LSTMCell", {input_size, hidden_size});
  double bound = 1.0 / std::sqrt(static_cast<double>(hidden_size));
  register_parameter("weight_ih", weight_ih, Tensor::uniform({4 * hidden_size, input_size}, -bound, bound));
  register_parameter("weight_hh", weight_hh, Tensor::uniform({4 * hidden_size, hidden_size}, -bound, bound));
  if (with_bias) {
    register_parameter("bias_ih", bias_ih, Tensor::uniform({4 * hidden_size}, -bound, bound));
    register_parameter("bias_hh", bias_hh, Tensor::uniform({4 * hidden_size}, -bound, bound));
  }
  realize_state();
}

LSTMCell::State LSTMCell::forward(const Tensor& x, const std::optional<State>& hc) {
  if (x.ndim() == 1) {  // unbatched: a batch of one
    std::optional<State> hc1;
    if (hc) {
      if (hc->first.ndim() != 1 || hc->second.ndim() != 1)
        throw ShapeError("LSTMCell", fmt::format("unbatched input {} needs 1-d h and c, got {} and {}",
                                                 shape_str(x.shape()), shape_str(hc->first.shape()),
                                                 shape_str(hc->second.shape())));
      hc1 = State{hc->first.unsqueeze(0), hc->second.unsqueeze(0)};
    }
    State out = forward(x.unsqueeze(0), hc1);
    return {out.first.squeeze(0), out.second.squeeze(0)};
  }
  if (x.ndim() != 2 || x.shape()[1] != input_)
    throw ShapeError("LSTMCell",
                     fmt::format("input {} must be (N, {}) or ({},)", shape_str(x.shape()), input_, input_));
  Shape state_shape{x.shape()[0], hidden_};
  if (hc && (hc->first.shape() != state_shape || hc->second.shape() != state_shape))
    throw ShapeError(
        "LSTMCell", fmt::format("h {} and c {} must both be {} for input {}", shape_str(hc->first.shape()),
                                shape_str(hc->second.shape()), shape_str(state_shape), shape_str(x.shape())));
  // No state is h = c = 0, still multiplied by weight_hh: it gets its (zero) gradient, as in PyTorch, so an
  // optimizer stepping all parameters finds one.
  Tensor h0 = hc ? hc->first : Tensor::zeros(state_shape, x.dtype(), x.device());
  Tensor c0 = hc ? hc->second : Tensor::zeros(state_shape, x.dtype(), x.device());
  Tensor gates = x.linear(weight_ih.transpose(), bias_ih) + h0.linear(weight_hh.transpose(), bias_hh);
  std::vector<Tensor> ifgo = gates.chunk(4, 1);
  Tensor i = ifgo[0].sigmoid(), f = ifgo[1].sigmoid(), g = ifgo[2].tanh(), o = ifgo[3].sigmoid();
  Tensor c = f * c0 + i * g;
  return {o * c.tanh(), c};
}

// ---- Embedding and Dropout ----

Embedding::Embedding(int64_t num_embeddings, int64_t embedding_dim) : num_(num_embeddings) {
  check_positive("Embedding", {num_embeddings, embedding_dim});
  register_parameter("weight", weight, Tensor::randn({num_embeddings, embedding_dim}));
  realize_state();
}

Tensor Embedding::forward(const Tensor& x) {
  if (!x.dtype().is_int())
    throw DTypeError("Embedding", fmt::format("indices must be integers, got {}", x.dtype().name()));
  // one-hot rows times the table: a multiply-reduce, so the gradient is a plain matmul
  Shape s = x.shape();
  Tensor hot = x.reshape({-1}).one_hot(num_).cast(weight.dtype());
  s.push_back(weight.shape()[1]);
  return hot.matmul(weight).reshape(s);
}

Dropout::Dropout(double p) : p_(p) {
  if (p < 0.0 || p > 1.0) throw ValueError("Dropout", fmt::format("p must be in [0, 1], got {}", p));
}

}  // namespace tg::nn
