#pragma once
// Optimizers: step() builds every update lazily with assign() and realizes them in one realize_all, so
// a step is a few fused kernels. The learning rate is a 0-d tensor: schedules change its value, not
// the kernels. Updates and state are float32 for float16/bfloat16/float32 parameters (mixed precision),
// float64 for float64 ones; the lr and Adam's bias corrections are float32 scalars.
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

  virtual void zero_grad();  // forgets every gradient (they are lazy: the next backward builds new ones)
  void step();               // realize_all(schedule_step())
  // Assigns the new parameter and state values without realizing them; returns what to realize.
  virtual std::vector<Tensor> schedule_step();

  Tensor& lr() { return lr_; }
  // The lr given or last set_lr(), exact (a caller writing a shared lr tensor directly is not seen here).
  double lr_value() const { return lr_value_; }
  void set_lr(double lr);  // writes the lr tensor
  const std::vector<Tensor>& params() const { return params_; }

 protected:
  struct NoLR {};
  Optimizer(std::vector<Tensor> params, NoLR);  // a group: its members own the lr tensors
  // New values of params_ (from detached params and grads); assigns its own state tensors and adds
  // them to state_out.
  virtual std::vector<Tensor> update(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                                     std::vector<Tensor>& state_out) = 0;
  Tensor zeros_like_param(const Tensor& p) const;  // a realized state buffer in p's update dtype

  std::vector<Tensor> params_;
  Tensor lr_;
  double lr_value_ = 0;
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

// adam: no trust ratio, so AdamW (tinygrad's LAMB(adam=True), which its AdamW is).
class LAMB : public Adam {
 public:
  LAMB(std::vector<Tensor> params, LR lr = 1e-3, double beta1 = 0.9, double beta2 = 0.999, double eps = 1e-6,
       double weight_decay = 0.0, bool adam = false)
      : Adam(adam ? Kind::ADAMW : Kind::LAMB, std::move(params), lr, beta1, beta2, eps, weight_decay) {}
};

// tinygrad's LARS (You et al.): SGD whose step is scaled per tensor by the trust ratio
// r = tcoef |p| / (|g| + wd |p|) (1 when either norm is 0), with g the raw gradient. g += wd p; classic
// (the default) applies lr and r before the momentum (b = m b + lr r g, p -= b), otherwise after it
// (b = m b + g, p -= lr r b); nesterov uses g + m b in place of b. tcoef 0 means r = 1: plain SGD.
class LARS : public Optimizer {
 public:
  LARS(std::vector<Tensor> params, LR lr = 1e-3, double momentum = 0.9, double weight_decay = 1e-4,
       bool nesterov = false, bool classic = true, double tcoef = 0.001);
  // Every option, in tinygrad's order: ns_steps > 0 with ns_coefficients orthogonalizes the update after the
  // momentum (Muon's newton_schulz), pre_wd false decays the weights after it (p *= 1 - lr wd).
  LARS(std::vector<Tensor> params, LR lr, double momentum, double weight_decay, int ns_steps,
       std::vector<double> ns_coefficients, bool nesterov, bool classic, bool pre_wd, double tcoef);

 protected:
  // Muon: no trust ratio, weight decay after the momentum (p *= 1 - lr wd), the update orthogonalized.
  LARS(std::vector<Tensor> params, LR lr, double momentum, double weight_decay, bool nesterov, int ns_steps,
       std::vector<double> ns_coefficients);
  std::vector<Tensor> update(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                             std::vector<Tensor>& state_out) override;

 private:
  double momentum_, wd_, tcoef_;
  bool nesterov_, classic_, pre_wd_ = true;
  int ns_steps_ = 0;
  std::vector<double> ns_coefficients_;
  std::vector<Tensor> b_;
};

// tinygrad's Muon: b = m b + g, u = nesterov ? g + m b : b, u = newton_schulz(u as (rows, -1)), then
// p = p (1 - lr wd) - lr u. Every parameter needs at least one axis.
class Muon : public LARS {
 public:
  Muon(std::vector<Tensor> params, LR lr = 1e-3, double momentum = 0.95, double weight_decay = 0.1,
       int ns_steps = 5, std::vector<double> ns_coefficients = {3.4445, -4.775, 2.0315}, bool nesterov = true)
      : LARS(std::move(params), lr, momentum, weight_decay, nesterov, ns_steps, std::move(ns_coefficients)) {}
};

// tinygrad's Tensor.newton_schulz over the last two axes (m, n): X = G / (|G|_F + eps), then `steps` times
// X = sum_i c_i (X X^T)^i X, an odd polynomial that pushes every singular value towards 1 (Muon's
// coefficients stop near it, not at it). Runs on the transpose when m > n.
Tensor newton_schulz(const Tensor& g, int steps, const std::vector<double>& coefficients, double eps = 1e-7);

// Several optimizers stepped as one (tinygrad's OptimizerGroup): schedule_step() is every member's assigns,
// so step() is one realize; zero_grad() clears them all. The members are not owned and must outlive the
// group; each keeps its own lr (set_lr on the group is an error: schedule a member).
class OptimizerGroup : public Optimizer {
 public:
  explicit OptimizerGroup(std::vector<Optimizer*> optimizers);
  void zero_grad() override;
  std::vector<Tensor> schedule_step() override;
  Optimizer& operator[](size_t i) const { return *optimizers_.at(i); }
  size_t size() const { return optimizers_.size(); }

 protected:
  std::vector<Tensor> update(const std::vector<Tensor>&, const std::vector<Tensor>&,
                             std::vector<Tensor>&) override;

 private:
  std::vector<Optimizer*> optimizers_;
};

}  // namespace tg::nn::optim
