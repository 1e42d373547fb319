// Optimizer steps as lazy assigns realized together.
#include "nn/optim.hpp"

#include <cmath>

#include <fmt/format.h>

#include "base/error.hpp"

namespace tg::nn::optim {

namespace {

// The dtype a parameter's update and optimizer state are computed in.
DType update_dtype(const Tensor& p) {
  return p.dtype() == dtypes::float64 ? dtypes::float64 : dtypes::float32;
}

Tensor lr_tensor(double lr, std::string_view device) {
  if (!(lr >= 0)) throw ValueError("optimizer", fmt::format("lr must be >= 0, got {}", lr));
  return Tensor(lr, dtypes::float32, device).contiguous().realize();
}

std::string first_device(const std::vector<Tensor>& params) {
  if (params.empty()) throw ValueError("optimizer", "needs at least one parameter");
  for (const Tensor& p : params)
    if (!p.defined()) throw ValueError("optimizer", "a parameter is undefined");
  return params[0].device();
}

void check_beta(double b, std::string_view name) {
  if (!(b >= 0 && b < 1)) throw ValueError("optimizer", fmt::format("{} must be in [0, 1), got {}", name, b));
}

}  // namespace

Optimizer::Optimizer(std::vector<Tensor> params, LR lr) : params_(std::move(params)) {
  std::string device = first_device(params_);
  if (!lr.tensor().defined()) {
    lr_ = lr_tensor(lr.value(), device);
    lr_value_ = lr.value();
    return;
  }
  lr_ = lr.tensor();
  if (lr_.ndim() != 0 || !lr_.dtype().is_float())
    throw ValueError("optimizer", "lr must be a 0-d float tensor");
  lr_value_ = lr_.item<double>();
}

Optimizer::Optimizer(std::vector<Tensor> params, NoLR) : params_(std::move(params)) { first_device(params_); }

void Optimizer::set_lr(double lr) {
  if (!lr_.defined())
    throw ValueError("set_lr", "an OptimizerGroup has no lr of its own: set each member's (group[i])");
  if (!(lr >= 0)) throw ValueError("set_lr", fmt::format("lr must be >= 0, got {}", lr));
  lr_.assign(Tensor(lr, lr_.dtype(), lr_.device())).realize();
  lr_value_ = lr;
}

Tensor Optimizer::zeros_like_param(const Tensor& p) const {
  return Tensor::zeros(p.shape(), update_dtype(p), p.device()).contiguous().realize();
}

void Optimizer::zero_grad() {
  for (Tensor& p : params_) p.set_grad(Tensor());
}

std::vector<Tensor> Optimizer::schedule_step() {
  std::vector<Tensor> ps, grads, state;
  for (size_t i = 0; i < params_.size(); i++) {
    Tensor g = params_[i].grad();
    if (!g.defined())
      throw ValueError("step",
                       fmt::format("parameter {} of shape ({}) has no gradient: call backward() first", i,
                                   fmt::join(params_[i].shape(), ",")));
    ps.push_back(params_[i].detach().cast(update_dtype(params_[i])));
    grads.push_back(g.detach().cast(update_dtype(params_[i])));
  }
  std::vector<Tensor> updated = update(ps, grads, state);
  std::vector<Tensor> out;
  for (size_t i = 0; i < params_.size(); i++)
    out.push_back(params_[i].assign(updated[i].cast(params_[i].dtype())));
  out.insert(out.end(), state.begin(), state.end());
  return out;
}

void Optimizer::step() { Tensor::realize_all(schedule_step()); }

// ---- SGD ----

SGD::SGD(std::vector<Tensor> params, LR lr, double momentum, double weight_decay, bool nesterov)
    : Optimizer(std::move(params), lr), momentum_(momentum), wd_(weight_decay), nesterov_(nesterov) {
  if (momentum < 0) throw ValueError("SGD", fmt::format("momentum must be >= 0, got {}", momentum));
  if (nesterov && momentum == 0) throw ValueError("SGD", "nesterov needs a momentum > 0");
  if (momentum > 0)
    for (const Tensor& p : params_) b_.push_back(zeros_like_param(p));
}

std::vector<Tensor> SGD::update(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                                std::vector<Tensor>& state_out) {
  std::vector<Tensor> out;
  for (size_t i = 0; i < params.size(); i++) {
    Tensor g = wd_ != 0 ? grads[i] + wd_ * params[i] : grads[i];
    if (momentum_ > 0) {
      // b starts at zero, so the first step gives b = g as in PyTorch
      Tensor b = b_[i].assign(momentum_ * b_[i] + g);
      state_out.push_back(b);
      g = nesterov_ ? g + momentum_ * b : b;
    }
    out.push_back(params[i] - lr_ * g);
  }
  return out;
}

// ---- Adam, AdamW, LAMB ----

Adam::Adam(std::vector<Tensor> params, LR lr, double beta1, double beta2, double eps, double weight_decay)
    : Adam(Kind::ADAM, std::move(params), lr, beta1, beta2, eps, weight_decay) {}

Adam::Adam(Kind kind, std::vector<Tensor> params, LR lr, double beta1, double beta2, double eps,
           double weight_decay)
    : Optimizer(std::move(params), lr), kind_(kind), b1_(beta1), b2_(beta2), eps_(eps), wd_(weight_decay) {
  check_beta(beta1, "beta1");
  check_beta(beta2, "beta2");
  if (!(eps >= 0)) throw ValueError("optimizer", fmt::format("eps must be >= 0, got {}", eps));
  b1_t_ = Tensor(1.0, dtypes::float32, params_[0].device()).contiguous().realize();
  b2_t_ = Tensor(1.0, dtypes::float32, params_[0].device()).contiguous().realize();
  for (const Tensor& p : params_) {
    m_.push_back(zeros_like_param(p));
    v_.push_back(zeros_like_param(p));
  }
}

std::vector<Tensor> Adam::update(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                                 std::vector<Tensor>& state_out) {
  Tensor b1_t = b1_t_.assign(b1_t_ * b1_), b2_t = b2_t_.assign(b2_t_ * b2_);
  state_out.insert(state_out.end(), {b1_t, b2_t});
  std::vector<Tensor> out;
  for (size_t i = 0; i < params.size(); i++) {
    Tensor g = kind_ == Kind::ADAM && wd_ != 0 ? grads[i] + wd_ * params[i] : grads[i];
    Tensor m = m_[i].assign(b1_ * m_[i] + (1 - b1_) * g);
    Tensor v = v_[i].assign(b2_ * v_[i] + (1 - b2_) * g.square());
    state_out.insert(state_out.end(), {m, v});
    Tensor up = (m / (1 - b1_t)) / ((v / (1 - b2_t)).sqrt() + eps_);
    if (kind_ != Kind::ADAM && wd_ != 0) up = up + wd_ * params[i];
    if (kind_ == Kind::LAMB) {
      Tensor r1 = params[i].square().sum().sqrt(), r2 = up.square().sum().sqrt();
      Tensor trust = (r1 > 0).where((r2 > 0).where(r1 / r2, 1.0), 1.0);
      up = trust * up;
    }
    out.push_back(params[i] - lr_ * up);
  }
  return out;
}

// ---- LARS and Muon ----

LARS::LARS(std::vector<Tensor> params, LR lr, double momentum, double weight_decay, bool nesterov,
           bool classic, double tcoef)
    : LARS(std::move(params), lr, momentum, weight_decay, 0, {}, nesterov, classic, true, tcoef) {}

LARS::LARS(std::vector<Tensor> params, LR lr, double momentum, double weight_decay, bool nesterov,
           int ns_steps, std::vector<double> ns_coefficients)
    : LARS(std::move(params), lr, momentum, weight_decay, ns_steps, std::move(ns_coefficients), nesterov, false,
           false, 0) {
  if (ns_coefficients_.empty()) throw ValueError("Muon", "ns_coefficients must not be empty");
}

LARS::LARS(std::vector<Tensor> params, LR lr, double momentum, double weight_decay, int ns_steps,
           std::vector<double> ns_coefficients, bool nesterov, bool classic, bool pre_wd, double tcoef)
    : Optimizer(std::move(params), lr),
      momentum_(momentum),
      wd_(weight_decay),
      tcoef_(tcoef),
      nesterov_(nesterov),
      classic_(classic),
      pre_wd_(pre_wd),
      ns_steps_(ns_steps),
      ns_coefficients_(std::move(ns_coefficients)) {
  std::string_view op = ns_coefficients_.empty() ? "LARS" : "Muon";
  if (momentum < 0) throw ValueError(op, fmt::format("momentum must be >= 0, got {}", momentum));
  if (weight_decay < 0) throw ValueError(op, fmt::format("weight_decay must be >= 0, got {}", weight_decay));
  if (tcoef < 0) throw ValueError(op, fmt::format("tcoef must be >= 0, got {}", tcoef));
  if (nesterov && momentum == 0) throw ValueError(op, "nesterov needs a momentum > 0");
  if (ns_steps < 0) throw ValueError(op, fmt::format("ns_steps must be >= 0, got {}", ns_steps));
  if (!ns_coefficients_.empty())
    for (size_t i = 0; i < params_.size(); i++)
      if (params_[i].ndim() == 0)
        throw ShapeError(op, fmt::format("parameter {} is 0-d: the update is orthogonalized as (rows, -1)", i));
  if (momentum > 0)
    for (const Tensor& p : params_) b_.push_back(zeros_like_param(p));
}

std::vector<Tensor> LARS::update(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                                 std::vector<Tensor>& state_out) {
  std::vector<Tensor> out;
  for (size_t i = 0; i < params.size(); i++) {
    const Tensor& p = params[i];
    Tensor g = grads[i], r;
    if (tcoef_ != 0) {
      Tensor r1 = p.square().sum().sqrt(), r2 = g.square().sum().sqrt();
      r = (r1 > 0).where((r2 > 0).where(tcoef_ * r1 / (r2 + wd_ * r1), 1.0), 1.0);
    }
    auto scale = [&](const Tensor& u) { return r.defined() ? u * r * lr_ : u * lr_; };
    if (pre_wd_ && wd_ > 0) g = g + wd_ * p;
    if (classic_) g = scale(g);
    if (momentum_ > 0) {
      // b starts at zero, so the first step gives b = g
      Tensor b = b_[i].assign(momentum_ * b_[i] + g);
      state_out.push_back(b);
      g = nesterov_ ? g + momentum_ * b : b;
    }
    if (!ns_coefficients_.empty())
      g = newton_schulz(g.reshape({g.shape()[0], -1}), ns_steps_, ns_coefficients_).reshape(g.shape());
    Tensor base = !pre_wd_ && wd_ > 0 ? p * (1 - wd_ * lr_) : p;
    out.push_back(base - (classic_ ? g : scale(g)));
  }
  return out;
}

Tensor newton_schulz(const Tensor& g, int steps, const std::vector<double>& coefficients, double eps) {
  if (g.ndim() < 2)
    throw ShapeError("newton_schulz", fmt::format("needs at least 2 axes, got {}", shape_str(g.shape())));
  if (coefficients.empty()) throw ValueError("newton_schulz", "needs at least one coefficient");
  int m = g.ndim() - 2, n = g.ndim() - 1;
  if (g.shape()[m] > g.shape()[n])
    return newton_schulz(g.transpose(m, n), steps, coefficients, eps).transpose(m, n);
  Tensor x = g / (g.square().sum({m, n}, true).sqrt() + eps);
  for (int s = 0; s < steps; s++) {
    Tensor gram = x.matmul(x.transpose(m, n)), term = x, next = coefficients[0] * x;
    for (size_t i = 1; i < coefficients.size(); i++) {
      term = gram.matmul(term);  // (X X^T)^i X
      next = next + coefficients[i] * term;
    }
    x = next;
  }
  return x;
}

// ---- OptimizerGroup ----

namespace {

std::vector<Tensor> member_params(const std::vector<Optimizer*>& optimizers) {
  if (optimizers.empty()) throw ValueError("OptimizerGroup", "needs at least one optimizer");
  std::vector<Tensor> out;
  for (size_t i = 0; i < optimizers.size(); i++) {
    if (!optimizers[i]) throw ValueError("OptimizerGroup", fmt::format("optimizer {} is null", i));
    out.insert(out.end(), optimizers[i]->params().begin(), optimizers[i]->params().end());
  }
  return out;
}

}  // namespace

OptimizerGroup::OptimizerGroup(std::vector<Optimizer*> optimizers)
    : Optimizer(member_params(optimizers), NoLR{}), optimizers_(std::move(optimizers)) {}

void OptimizerGroup::zero_grad() {
  for (Optimizer* o : optimizers_) o->zero_grad();
}

std::vector<Tensor> OptimizerGroup::schedule_step() {
  std::vector<Tensor> out;
  for (Optimizer* o : optimizers_) {
    std::vector<Tensor> part = o->schedule_step();
    out.insert(out.end(), part.begin(), part.end());
  }
  return out;
}

std::vector<Tensor> OptimizerGroup::update(const std::vector<Tensor>&, const std::vector<Tensor>&,
                                           std::vector<Tensor>&) {
  throw ValueError("OptimizerGroup", "steps through its members' schedule_step, never update");
}

}  // namespace tg::nn::optim
