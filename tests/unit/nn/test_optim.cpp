#define BOOST_TEST_MODULE nn_optim
// Optimizer steps and learning-rate schedules against PyTorch (fixed gradients per step, so only the
// update rules are compared).
#include "nn/lr_scheduler.hpp"
#include "nn/optim.hpp"
#include "reference.hpp"

using namespace tg;
using namespace tg::nn::optim;
using tg::test::expect_error;
using tg::test::expect_matches;
using tg::test::json;
using tg::test::reference;
using tg::test::tensor_of;

namespace {

const json& optim_ref() { return reference()["optim"]; }

std::vector<Tensor> fresh_params() {
  std::vector<Tensor> ps;
  for (const json& p : optim_ref()["params"])
    ps.push_back(tensor_of(p).contiguous().realize().requires_grad_());
  return ps;
}

// Feeds the reference gradients step by step and compares every parameter after every step.
void run(Optimizer& opt, std::vector<Tensor>& ps, const json& traj) {
  const json& grads = optim_ref()["grads"];
  for (size_t s = 0; s < traj.size(); s++) {
    for (size_t i = 0; i < ps.size(); i++) ps[i].set_grad(tensor_of(grads[s][i]));
    opt.step();
    opt.zero_grad();
    BOOST_TEST_CONTEXT("step " << s + 1) {
      for (size_t i = 0; i < ps.size(); i++) expect_matches(ps[i], traj[s][i], 2e-5);
    }
  }
}

const json& opt_case(const char* name) { return optim_ref()["cases"][name]; }

}  // namespace

BOOST_AUTO_TEST_CASE(sgd_matches_torch) {
  {
    auto ps = fresh_params();
    SGD opt(ps, 0.1);
    run(opt, ps, opt_case("sgd")["traj"]);
  }
  {
    auto ps = fresh_params();
    SGD opt(ps, 0.05, 0.9, 0.01);
    run(opt, ps, opt_case("sgd_momentum_wd")["traj"]);
  }
  {
    auto ps = fresh_params();
    SGD opt(ps, 0.05, 0.8, 0.0, true);
    run(opt, ps, opt_case("sgd_nesterov")["traj"]);
  }
}

BOOST_AUTO_TEST_CASE(adam_family_matches_torch) {
  {
    auto ps = fresh_params();
    Adam opt(ps, 0.01, 0.9, 0.99, 1e-8, 0.1);
    run(opt, ps, opt_case("adam")["traj"]);
  }
  {
    auto ps = fresh_params();
    AdamW opt(ps, 0.01, 0.8, 0.999, 1e-8, 0.05);
    run(opt, ps, opt_case("adamw")["traj"]);
  }
  {
    auto ps = fresh_params();
    LAMB opt(ps, 0.01, 0.9, 0.999, 1e-6, 0.02);
    run(opt, ps, opt_case("lamb")["traj"]);
  }
}

BOOST_AUTO_TEST_CASE(step_is_one_realize_of_few_kernels) {
  auto ps = fresh_params();
  Adam opt(ps, 0.01);
  for (Tensor& p : ps) p.set_grad(Tensor::ones(p.shape()));
  std::vector<Tensor> todo = opt.schedule_step();
  BOOST_TEST(todo.size() == 2u + 2u + 4u);  // params, beta powers, m and v
  std::vector<UOpRef> roots;
  for (const Tensor& t : todo) roots.push_back(t.uop());
  // at most one kernel per written buffer: every update expression is fused into its store
  BOOST_TEST(schedule_uops(roots).size() <= todo.size());
  Tensor::realize_all(todo);
  for (const Tensor& p : ps)
    BOOST_TEST((p.uop()->op() == Ops::RESHAPE && p.uop()->src(0)->op() == Ops::BUFFER));
}

BOOST_AUTO_TEST_CASE(lr_tensor_is_shared_with_the_caller) {
  auto ps = fresh_params();
  Tensor lr = Tensor(0.5, dtypes::float32).contiguous().realize();
  SGD opt(ps, lr);
  BOOST_TEST(opt.lr_value() == 0.5);
  lr.assign(Tensor(0.25, dtypes::float32)).realize();  // the caller changes it: the next step uses it
  for (Tensor& p : ps) p.set_grad(Tensor::ones(p.shape()));
  std::vector<float> before = ps[1].to_vector<float>();
  opt.step();
  std::vector<float> after = ps[1].to_vector<float>();
  for (size_t i = 0; i < after.size(); i++) BOOST_CHECK_CLOSE(after[i], before[i] - 0.25f, 1e-4);
}

BOOST_AUTO_TEST_CASE(step_without_gradient_is_an_error) {
  auto ps = fresh_params();
  SGD opt(ps, 0.1);
  expect_error<ValueError>([&] { opt.step(); },
                           "[step] parameter 0 of shape (3,4) has no gradient: call backward() first");
  expect_error<ValueError>([&] { SGD bad(ps, 0.1, 0.0, 0.0, true); }, "[SGD] nesterov needs a momentum > 0");
}

BOOST_AUTO_TEST_CASE(lr_schedules_match_torch) {
  const json& r = reference()["lr"];
  auto check = [](LRScheduler& s, Optimizer& opt, const json& want) {
    std::vector<double> w = want.get<std::vector<double>>();
    for (size_t i = 0; i < w.size(); i++) {
      if (i) s.step();
      BOOST_CHECK_CLOSE(s.get_lr() + 1.0, w[i] + 1.0, 1e-9);
      BOOST_CHECK_CLOSE(opt.lr().item<double>() + 1.0, w[i] + 1.0, 1e-5);  // the float32 lr tensor
    }
  };
  auto ps = fresh_params();
  {
    SGD opt(ps, 0.1);
    StepLR s(opt, 3, 0.5);
    check(s, opt, r["step"]);
  }
  {
    SGD opt(ps, 0.1);
    CosineAnnealingLR s(opt, 6, 0.01);
    check(s, opt, r["cosine"]);
  }
  {
    SGD opt(ps, 0.1);
    OneCycleLR s(opt, 0.5, 20);
    check(s, opt, r["onecycle"]);
  }
  {
    SGD opt(ps, 0.1);
    OneCycleLR s(opt, 1.0, 16, 0.25, OneCycleLR::Anneal::LINEAR, 25.0, 1e4, true);
    check(s, opt, r["onecycle_linear3"]);
  }
}
