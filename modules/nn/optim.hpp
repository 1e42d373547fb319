#pragma once
// Optimizers: step() builds every update lazily with assign() and realizes them in one realize_all, so
// a step is a few fused kernels. The learning rate is a 0-d tensor: schedules change its value, not
// the kernels.
#include <vector>

#include "tensor/tensor.hpp"

namespace tg::nn::optim {

// A learning rate: a number, or a 0-d float tensor shared with the caller (who may change it).
class LR {
 public:
  LR(double v) : value_(v) {}
  LR(Tensor t) : tensor_(std::move(t)) {}
  const Tensor& tensor() const { return tensor_; }
  double value() const { return value_; }

 private:
  double value_ = 0;
  Tensor tensor_;
};

class Optimizer {
 public:
  Optimizer(std::vector<Tensor> params, LR lr);
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;
  virtual ~Optimizer() = default;

  void zero_grad();  // forgets every gradient (they are lazy: the next backward builds new ones)
  void step();       // realize_all(schedule_step())
  // Assigns the new parameter and state values without realizing them; returns what to realize.
  std::vector<Tensor> schedule_step();

  Tensor& lr() { return lr_; }
  // The lr given or last set_lr(), exact (a caller writing a shared lr tensor directly is not seen here).
  double lr_value() const { return lr_value_; }
  void set_lr(double lr);  // writes the lr tensor
  const std::vector<Tensor>& params() const { return params_; }

 protected:
  // New values of params_ (from detached params and grads); assigns its own state tensors and adds
  // them to state_out.
  virtual std::vector<Tensor> update(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                                     std::vector<Tensor>& state_out) = 0;
  Tensor zeros_like_param(const Tensor& p) const;  // a realized float32 state buffer

  std::vector<Tensor> params_;
  Tensor lr_;
  double lr_value_;
};

// PyTorch's SGD without dampening: b = momentum*b + g; g = nesterov ? g + momentum*b : b.
class SGD : public Optimizer {
 public:
  SGD(std::vector<Tensor> params, LR lr = 1e-3, double momentum = 0.0, double weight_decay = 0.0,
      bool nesterov = false);

 protected:
  std::vector<Tensor> update(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                             std::vector<Tensor>& state_out) override;

 private:
  double momentum_, wd_;
  bool nesterov_;
  std::vector<Tensor> b_;
};

// Adam (weight decay added to the gradient), AdamW (decoupled weight decay) and LAMB (AdamW's update
// scaled per tensor by the trust ratio |p| / |update|) share the moment estimates.
class Adam : public Optimizer {
 public:
  Adam(std::vector<Tensor> params, LR lr = 1e-3, double beta1 = 0.9, double beta2 = 0.999, double eps = 1e-8,
       double weight_decay = 0.0);

 protected:
  enum class Kind { ADAM, ADAMW, LAMB };
  Adam(Kind kind, std::vector<Tensor> params, LR lr, double beta1, double beta2, double eps,
       double weight_decay);
  std::vector<Tensor> update(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                             std::vector<Tensor>& state_out) override;

 private:
  Kind kind_;
  double b1_, b2_, eps_, wd_;
  Tensor b1_t_, b2_t_;  // beta^t, for the bias corrections
  std::vector<Tensor> m_, v_;
};

class AdamW : public Adam {
 public:
  AdamW(std::vector<Tensor> params, LR lr = 1e-3, double beta1 = 0.9, double beta2 = 0.999, double eps = 1e-8,
        double weight_decay = 0.01)
      : Adam(Kind::ADAMW, std::move(params), lr, beta1, beta2, eps, weight_decay) {}
};

class LAMB : public Adam {
 public:
  LAMB(std::vector<Tensor> params, LR lr = 1e-3, double beta1 = 0.9, double beta2 = 0.999, double eps = 1e-6,
       double weight_decay = 0.0)
      : Adam(Kind::LAMB, std::move(params), lr, beta1, beta2, eps, weight_decay) {}
};

}  // namespace tg::nn::optim
