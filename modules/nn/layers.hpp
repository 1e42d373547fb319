#pragma once
// Layers with PyTorch's parameter names, shapes and default initializers, and tiny activation modules.
#include <optional>

#include "nn/module.hpp"

namespace tg::nn {

// y = x W^T + b; weight (out, in) kaiming_uniform(a=sqrt(5)), bias uniform(+-1/sqrt(in)).
class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true);
  Tensor forward(const Tensor& x) override;
  Tensor weight, bias;
};

// Conv1d/Conv2d: weight (out, in/groups, *kernel), bias (out,).
class ConvNd : public Module {
 public:
  Tensor forward(const Tensor& x) override;
  Tensor weight, bias;

 protected:
  ConvNd(int n, int64_t in_channels, int64_t out_channels, Sizes kernel_size, Sizes stride, Padding padding,
         Sizes dilation, int64_t groups, bool bias);
  Sizes stride_, dilation_;
  Padding padding_;
  int64_t groups_;
  int n_;
};

class Conv1d : public ConvNd {
 public:
  Conv1d(int64_t in_channels, int64_t out_channels, Sizes kernel_size, Sizes stride = 1, Padding padding = 0,
         Sizes dilation = 1, int64_t groups = 1, bool bias = true)
      : ConvNd(1, in_channels, out_channels, std::move(kernel_size), std::move(stride), std::move(padding),
               std::move(dilation), groups, bias) {}
};

class Conv2d : public ConvNd {
 public:
  Conv2d(int64_t in_channels, int64_t out_channels, Sizes kernel_size, Sizes stride = 1, Padding padding = 0,
         Sizes dilation = 1, int64_t groups = 1, bool bias = true)
      : ConvNd(2, in_channels, out_channels, std::move(kernel_size), std::move(stride), std::move(padding),
               std::move(dilation), groups, bias) {}
};

// ConvTranspose1d/ConvTranspose2d (PyTorch's argument order): weight (in, out/groups, *kernel), bias (out,).
// Output length per axis: (in - 1) * stride - 2 * padding + dilation * (kernel - 1) + output_padding + 1.
class ConvTransposeNd : public Module {
 public:
  Tensor forward(const Tensor& x) override;
  Tensor weight, bias;

 protected:
  ConvTransposeNd(int n, int64_t in_channels, int64_t out_channels, Sizes kernel_size, Sizes stride,
                  Sizes padding, Sizes output_padding, int64_t groups, bool bias, Sizes dilation);
  Sizes stride_, padding_, output_padding_, dilation_;
  int64_t groups_;
  int n_;
};

class ConvTranspose1d : public ConvTransposeNd {  // (N, C, L) or (C, L)
 public:
  ConvTranspose1d(int64_t in_channels, int64_t out_channels, Sizes kernel_size, Sizes stride = 1,
                  Sizes padding = 0, Sizes output_padding = 0, int64_t groups = 1, bool bias = true,
                  Sizes dilation = 1)
      : ConvTransposeNd(1, in_channels, out_channels, std::move(kernel_size), std::move(stride),
                        std::move(padding), std::move(output_padding), groups, bias, std::move(dilation)) {}
};

class ConvTranspose2d : public ConvTransposeNd {  // (N, C, H, W) or (C, H, W)
 public:
  ConvTranspose2d(int64_t in_channels, int64_t out_channels, Sizes kernel_size, Sizes stride = 1,
                  Sizes padding = 0, Sizes output_padding = 0, int64_t groups = 1, bool bias = true,
                  Sizes dilation = 1)
      : ConvTransposeNd(2, in_channels, out_channels, std::move(kernel_size), std::move(stride),
                        std::move(padding), std::move(output_padding), groups, bias, std::move(dilation)) {}
};

// Training: normalizes with the batch statistics and updates running_mean/running_var (unbiased) and
// num_batches_tracked through assign(), realized during forward; eval: uses the running statistics.
// momentum nullopt means a cumulative average. Channels are axis 1.
class BatchNorm : public Module {
 public:
  BatchNorm(int64_t num_features, double eps = 1e-5, std::optional<double> momentum = 0.1, bool affine = true,
            bool track_running_stats = true);
  Tensor forward(const Tensor& x) override;
  // The mean and (biased) variance forward normalizes x with: the batch's, over every axis but 1, or in
  // evaluation with running statistics those, the variance shaped (1, C, 1, ...) (tinygrad's calc_stats).
  std::pair<Tensor, Tensor> calc_stats(const Tensor& x) const;
  Tensor weight, bias, running_mean, running_var, num_batches_tracked;

 protected:
  virtual void check_input(const Tensor& x) const;
  int64_t num_features_;
  double eps_;
  std::optional<double> momentum_;
};

class BatchNorm1d : public BatchNorm {  // (N, C) or (N, C, L)
 public:
  using BatchNorm::BatchNorm;

 protected:
  void check_input(const Tensor& x) const override;
};

class BatchNorm2d : public BatchNorm {  // (N, C, H, W)
 public:
  using BatchNorm::BatchNorm;

 protected:
  void check_input(const Tensor& x) const override;
};

// Normalizes over the last normalized_shape.size() axes.
class LayerNorm : public Module {
 public:
  LayerNorm(Shape normalized_shape, double eps = 1e-5, bool elementwise_affine = true, bool bias = true);
  Tensor forward(const Tensor& x) override;
  Tensor weight, bias;

 private:
  Shape shape_;
  double eps_;
};

class GroupNorm : public Module {
 public:
  GroupNorm(int64_t num_groups, int64_t num_channels, double eps = 1e-5, bool affine = true);
  Tensor forward(const Tensor& x) override;
  Tensor weight, bias;

 private:
  int64_t groups_, channels_;
  double eps_;
};

// x / sqrt(mean(x^2) + eps) * weight over the last axes; eps defaults to the dtype's machine epsilon.
class RMSNorm : public Module {
 public:
  RMSNorm(Shape normalized_shape, std::optional<double> eps = {}, bool elementwise_affine = true);
  Tensor forward(const Tensor& x) override;
  Tensor weight;

 private:
  Shape shape_;
  std::optional<double> eps_;
};

// InstanceNorm (tinygrad's, = torch.nn.InstanceNorm1d/2d/3d(affine=True)): each (sample, channel) plane
// of x (N, C, *spatial) is normalized over its spatial axes with the biased variance, then scaled by
// weight (C,) and shifted by bias (C,) (ones and zeros). No running statistics: train and eval agree.
class InstanceNorm : public Module {
 public:
  InstanceNorm(int64_t num_features, double eps = 1e-5, bool affine = true);
  Tensor forward(const Tensor& x) override;
  Tensor weight, bias;

 private:
  int64_t features_;
  double eps_;
};

// tinygrad's LayerNorm2d: LayerNorm over the channel axis of (N, C, H, W) at every pixel; weight and bias
// (C,).
class LayerNorm2d : public LayerNorm {
 public:
  explicit LayerNorm2d(int64_t channels, double eps = 1e-5, bool elementwise_affine = true, bool bias = true)
      : LayerNorm({channels}, eps, elementwise_affine, bias), channels_(channels) {}
  Tensor forward(const Tensor& x) override;

 private:
  int64_t channels_;
};

// PyTorch's LSTMCell: gates = x W_ih^T + b_ih + h W_hh^T + b_hh, split in the order i, f, g, o;
// c' = sigmoid(f) c + sigmoid(i) tanh(g), h' = sigmoid(o) tanh(c'). weight_ih (4H, in), weight_hh (4H, H),
// bias_ih, bias_hh (4H,), all uniform(+-1/sqrt(H)). x (N, in) with h, c (N, H), or unbatched (in,) with (H,).
class LSTMCell : public Module {
 public:
  using State = std::pair<Tensor, Tensor>;  // (h, c)
  LSTMCell(int64_t input_size, int64_t hidden_size, bool bias = true);
  // One step; no state means h = c = 0. Returns (h', c').
  State forward(const Tensor& x, const std::optional<State>& hc);
  State operator()(const Tensor& x, const std::optional<State>& hc = std::nullopt) { return forward(x, hc); }
  Tensor forward(const Tensor& x) override { return forward(x, std::nullopt).first; }  // h' from zero state
  Tensor weight_ih, weight_hh, bias_ih, bias_hh;

 private:
  int64_t input_, hidden_;
};

// Integer indices -> rows of weight (num_embeddings, embedding_dim), initialized N(0, 1).
class Embedding : public Module {
 public:
  Embedding(int64_t num_embeddings, int64_t embedding_dim);
  Tensor forward(const Tensor& x) override;
  Tensor weight;

 private:
  int64_t num_;
};

class Dropout : public Module {
 public:
  explicit Dropout(double p = 0.5);
  Tensor forward(const Tensor& x) override { return x.dropout(p_, is_training()); }

 private:
  double p_;
};

class MaxPool2d : public Module {
 public:
  MaxPool2d(Sizes kernel_size, Sizes stride = {}, Padding padding = 0, Sizes dilation = 1,
            bool ceil_mode = false)
      : k_(std::move(kernel_size)),
        s_(std::move(stride)),
        d_(std::move(dilation)),
        p_(std::move(padding)),
        ceil_(ceil_mode) {}
  Tensor forward(const Tensor& x) override { return x.max_pool2d(k_, s_, p_, d_, ceil_); }

 private:
  Sizes k_, s_, d_;
  Padding p_;
  bool ceil_;
};

class AvgPool2d : public Module {
 public:
  AvgPool2d(Sizes kernel_size, Sizes stride = {}, Padding padding = 0, bool ceil_mode = false,
            bool count_include_pad = true)
      : k_(std::move(kernel_size)),
        s_(std::move(stride)),
        p_(std::move(padding)),
        ceil_(ceil_mode),
        include_(count_include_pad) {}
  Tensor forward(const Tensor& x) override { return x.avg_pool2d(k_, s_, p_, ceil_, include_); }

 private:
  Sizes k_, s_;
  Padding p_;
  bool ceil_, include_;
};

// ---- activations and shape helpers ----
#define TG_NN_ACTIVATION(Name, expr)                          \
  class Name : public Module {                                \
   public:                                                    \
    Tensor forward(const Tensor& x) override { return expr; } \
  };
TG_NN_ACTIVATION(Identity, x)
TG_NN_ACTIVATION(ReLU, x.relu())
TG_NN_ACTIVATION(GELU, x.gelu())  // the tanh approximation (PyTorch's approximate="tanh")
TG_NN_ACTIVATION(SiLU, x.silu())
TG_NN_ACTIVATION(Sigmoid, x.sigmoid())
TG_NN_ACTIVATION(Tanh, x.tanh())
#undef TG_NN_ACTIVATION

class LeakyReLU : public Module {
 public:
  explicit LeakyReLU(double negative_slope = 0.01) : slope_(negative_slope) {}
  Tensor forward(const Tensor& x) override { return x.leaky_relu(slope_); }

 private:
  double slope_;
};

class Softmax : public Module {
 public:
  explicit Softmax(int dim = -1) : dim_(dim) {}
  Tensor forward(const Tensor& x) override { return x.softmax(dim_); }

 private:
  int dim_;
};

class Flatten : public Module {
 public:
  explicit Flatten(int start_dim = 1, int end_dim = -1) : start_(start_dim), end_(end_dim) {}
  Tensor forward(const Tensor& x) override { return x.flatten(start_, end_); }

 private:
  int start_, end_;
};

}  // namespace tg::nn
