#pragma once
// Learning-rate schedules with PyTorch's semantics: step() advances one epoch (or batch, for
// OneCycleLR) and writes the new value into the optimizer's lr tensor.
#include <cstdint>

#include "nn/optim.hpp"

namespace tg::nn::optim {

class LRScheduler {
 public:
  explicit LRScheduler(Optimizer& opt);
  LRScheduler(const LRScheduler&) = delete;
  LRScheduler& operator=(const LRScheduler&) = delete;
  virtual ~LRScheduler() = default;

  void step();
  double get_lr() const { return lr_; }  // the value last written
  int64_t last_epoch() const { return epoch_; }

 protected:
  virtual double lr_at(int64_t epoch) const = 0;
  void start();  // writes lr_at(0); called by each subclass constructor
  Optimizer& opt_;
  double base_lr_;

 private:
  int64_t epoch_ = 0;
  double lr_ = 0;
};

// base_lr * gamma^(epoch / step_size)
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& opt, int64_t step_size, double gamma = 0.1);

 protected:
  double lr_at(int64_t epoch) const override;

 private:
  int64_t step_size_;
  double gamma_;
};

// eta_min + (base_lr - eta_min) * (1 + cos(pi * epoch / T_max)) / 2
class CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& opt, int64_t t_max, double eta_min = 0.0);

 protected:
  double lr_at(int64_t epoch) const override;

 private:
  int64_t t_max_;
  double eta_min_;
};

// max_lr/div_factor up to max_lr over pct_start of total_steps, then down to initial/final_div_factor
// (cosine or linear); three_phase adds a symmetric way down before the final annealing. The
// learning rate only: momentum is not cycled.
class OneCycleLR : public LRScheduler {
 public:
  enum class Anneal { COS, LINEAR };
  OneCycleLR(Optimizer& opt, double max_lr, int64_t total_steps, double pct_start = 0.3,
             Anneal anneal = Anneal::COS, double div_factor = 25.0, double final_div_factor = 1e4,
             bool three_phase = false);

 protected:
  double lr_at(int64_t step) const override;

 private:
  struct Phase {
    double end_step, start_lr, end_lr;
  };
  std::vector<Phase> phases_;
  int64_t total_;
  Anneal anneal_;
};

}  // namespace tg::nn::optim
