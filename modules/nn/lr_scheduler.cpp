// Learning-rate schedules: closed forms of PyTorch's schedules, written into the lr tensor.
#include "nn/lr_scheduler.hpp"

#include <cmath>
#include <numbers>

#include <fmt/format.h>

#include "base/error.hpp"

namespace tg::nn::optim {

LRScheduler::LRScheduler(Optimizer& opt) : opt_(opt), base_lr_(opt.lr_value()) {}

void LRScheduler::start() {
  lr_ = lr_at(0);
  opt_.set_lr(lr_);
}

void LRScheduler::step() {
  lr_ = lr_at(++epoch_);
  opt_.set_lr(lr_);
}

StepLR::StepLR(Optimizer& opt, int64_t step_size, double gamma)
    : LRScheduler(opt), step_size_(step_size), gamma_(gamma) {
  if (step_size < 1) throw ValueError("StepLR", fmt::format("step_size must be positive, got {}", step_size));
  start();
}

double StepLR::lr_at(int64_t epoch) const {
  return base_lr_ * std::pow(gamma_, static_cast<double>(epoch / step_size_));
}

CosineAnnealingLR::CosineAnnealingLR(Optimizer& opt, int64_t t_max, double eta_min)
    : LRScheduler(opt), t_max_(t_max), eta_min_(eta_min) {
  if (t_max < 1) throw ValueError("CosineAnnealingLR", fmt::format("T_max must be positive, got {}", t_max));
  start();
}

double CosineAnnealingLR::lr_at(int64_t epoch) const {
  double c = std::cos(std::numbers::pi * static_cast<double>(epoch) / static_cast<double>(t_max_));
  return eta_min_ + (base_lr_ - eta_min_) * (1 + c) / 2;
}

OneCycleLR::OneCycleLR(Optimizer& opt, double max_lr, int64_t total_steps, double pct_start, Anneal anneal,
                       double div_factor, double final_div_factor, bool three_phase)
    : LRScheduler(opt), total_(total_steps), anneal_(anneal) {
  if (total_steps < 1)
    throw ValueError("OneCycleLR", fmt::format("total_steps must be positive, got {}", total_steps));
  if (!(pct_start >= 0 && pct_start <= 1))
    throw ValueError("OneCycleLR", fmt::format("pct_start must be in [0, 1], got {}", pct_start));
  double initial = max_lr / div_factor, min_lr = initial / final_div_factor;
  double up = pct_start * static_cast<double>(total_steps) - 1, last = static_cast<double>(total_steps) - 1;
  if (three_phase)
    phases_ = {{up, initial, max_lr}, {2 * up, max_lr, initial}, {last, initial, min_lr}};
  else
    phases_ = {{up, initial, max_lr}, {last, max_lr, min_lr}};
  start();
}

double OneCycleLR::lr_at(int64_t step) const {
  if (step > total_)
    throw ValueError("OneCycleLR", fmt::format("stepped {} times, more than total_steps {}", step, total_));
  double start = 0, s = static_cast<double>(step);
  for (size_t i = 0; i < phases_.size(); i++) {
    const Phase& p = phases_[i];
    if (s <= p.end_step || i + 1 == phases_.size()) {
      double pct = (s - start) / (p.end_step - start);
      if (anneal_ == Anneal::LINEAR) return (p.end_lr - p.start_lr) * pct + p.start_lr;
      return p.end_lr + (p.start_lr - p.end_lr) / 2 * (std::cos(std::numbers::pi * pct) + 1);
    }
    start = p.end_step;
  }
  return phases_.back().end_lr;
}

}  // namespace tg::nn::optim
