// Optimizer steps as lazy assigns realized together.
#include "nn/optim.hpp"

#include <cmath>

#include <fmt/format.h>

#include "base/error.hpp"

namespace tg::nn::optim {

namespace {

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

void Optimizer::set_lr(double lr) {
  if (!(lr >= 0)) throw ValueError("set_lr", fmt::format("lr must be >= 0, got {}", lr));
  lr_.assign(Tensor(lr, lr_.dtype(), lr_.device())).realize();
  lr_value_ = lr;
}

Tensor Optimizer::zeros_like_param(const Tensor& p) const {
  return Tensor::zeros(p.shape(), dtypes::float32, p.device()).contiguous().realize();
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
    ps.push_back(params_[i].detach().cast(dtypes::float32));
    grads.push_back(g.detach().cast(dtypes::float32));
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

}  // namespace tg::nn::optim
