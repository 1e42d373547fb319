#define BOOST_TEST_MODULE nn_optim
// Optimizer steps and learning-rate schedules against PyTorch (fixed gradients per step, so only the
// update rules are compared).
#include <functional>
#include <memory>

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

namespace {

const json& lm_ref() { return reference()["lars_muon"]; }

// The LARS/Muon reference: its own parameters (one all zeros, one 3-d) and gradients, numpy's trajectories.
void run_lm(const char* name, const std::function<std::unique_ptr<Optimizer>(std::vector<Tensor>&)>& make) {
  std::vector<Tensor> ps;
  for (const json& p : lm_ref()["params"]) ps.push_back(tensor_of(p).contiguous().realize().requires_grad_());
  std::unique_ptr<Optimizer> opt = make(ps);
  const json& traj = lm_ref()["cases"][name]["traj"];
  BOOST_TEST_CONTEXT(name) {
    for (size_t s = 0; s < traj.size(); s++) {
      for (size_t i = 0; i < ps.size(); i++) ps[i].set_grad(tensor_of(lm_ref()["grads"][s][i]));
      opt->step();
      opt->zero_grad();
      BOOST_TEST_CONTEXT("step " << s + 1) {
        for (size_t i = 0; i < ps.size(); i++) {
          BOOST_TEST_CONTEXT("parameter " << i) { expect_matches(ps[i], traj[s][i], 2e-5); }
        }
      }
    }
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(lars_matches_its_equations) {
  for (const char* name : {"lars_classic", "lars_popular_nesterov", "lars_no_momentum", "lars_tcoef0"}) {
    const json& c = lm_ref()["cases"][name];
    run_lm(name, [&c](std::vector<Tensor>& ps) {
      return std::make_unique<LARS>(ps, c["lr"].get<double>(), c["momentum"].get<double>(),
                                    c["weight_decay"].get<double>(), c["nesterov"].get<bool>(),
                                    c["classic"].get<bool>(), c["tcoef"].get<double>());
    });
  }
  auto ps = fresh_params();
  expect_error<ValueError>([&] { LARS bad(ps, 0.1, 0.0, 0.0, true); },
                           "[LARS] nesterov needs a momentum > 0");
  expect_error<ValueError>([&] { LARS bad(ps, 0.1, 0.9, -1.0); }, "[LARS] weight_decay must be >= 0, got -1");
}

BOOST_AUTO_TEST_CASE(muon_matches_its_equations) {
  const json& d = lm_ref()["cases"]["muon_default"];
  run_lm("muon_default", [&d](std::vector<Tensor>& ps) {
    auto m = std::make_unique<Muon>(ps, d["lr"].get<double>());  // tinygrad's defaults for the rest
    BOOST_TEST(d["momentum"].get<double>() == 0.95);
    BOOST_TEST(d["weight_decay"].get<double>() == 0.1);
    BOOST_TEST(d["ns_steps"].get<int>() == 5);
    return m;
  });
  const json& c = lm_ref()["cases"]["muon_plain"];
  run_lm("muon_plain", [&c](std::vector<Tensor>& ps) {
    return std::make_unique<Muon>(ps, c["lr"].get<double>(), c["momentum"].get<double>(),
                                  c["weight_decay"].get<double>(), c["ns_steps"].get<int>(),
                                  c["ns_coefficients"].get<std::vector<double>>(), c["nesterov"].get<bool>());
  });
  const json& ns = lm_ref()["newton_schulz"];
  Tensor x = tensor_of(ns["x"]);
  expect_matches(newton_schulz(x, 5, {3.4445, -4.775, 2.0315}), ns["y"], 1e-5);
  expect_matches(newton_schulz(x.transpose(), 2, {1.5, -0.5}), ns["y_t"],
                 1e-5);  // (5, 3): the transposed path
  std::vector<Tensor> scalar{Tensor(1.0f).contiguous().realize().requires_grad_()};
  expect_error<ShapeError>([&] { Muon bad(scalar); },
                           "[Muon] parameter 0 is 0-d: the update is orthogonalized as (rows, -1)");
  expect_error<ShapeError>([&] { newton_schulz(Tensor::ones({3}), 1, {1.0}); },
                           "[newton_schulz] needs at least 2 axes, got (3,)");
}

BOOST_AUTO_TEST_CASE(optimizer_group_steps_its_members_as_one) {
  // SGD on one copy of the parameters and Adam on another, in one group: each follows PyTorch's trajectory,
  // and equals the same optimizer stepped on its own.
  auto a = fresh_params(), b = fresh_params(), a_alone = fresh_params(), b_alone = fresh_params();
  SGD sgd(a, 0.05, 0.9, 0.01), sgd_alone(a_alone, 0.05, 0.9, 0.01);
  Adam adam(b, 0.01, 0.9, 0.99, 1e-8, 0.1), adam_alone(b_alone, 0.01, 0.9, 0.99, 1e-8, 0.1);
  OptimizerGroup group({&sgd, &adam});
  BOOST_TEST(group.size() == 2u);
  BOOST_TEST(&group[1] == static_cast<Optimizer*>(&adam));
  BOOST_TEST(group.params().size() == a.size() + b.size());
  const json& grads = optim_ref()["grads"];
  const json &sgd_traj = opt_case("sgd_momentum_wd")["traj"], &adam_traj = opt_case("adam")["traj"];
  for (size_t s = 0; s < sgd_traj.size(); s++) {
    for (auto* ps : {&a, &b, &a_alone, &b_alone})
      for (size_t i = 0; i < ps->size(); i++) (*ps)[i].set_grad(tensor_of(grads[s][i]));
    Optimizer& as_base = group;  // stepped through the base class, as a training loop would
    std::vector<Tensor> todo = as_base.schedule_step();
    BOOST_TEST(todo.size() == (2u + 2u) + (2u + 2u + 4u));  // SGD: params, momenta; Adam: params, betas, m, v
    Tensor::realize_all(todo);
    sgd_alone.step();
    adam_alone.step();
    as_base.zero_grad();
    for (const Tensor& p : group.params()) BOOST_TEST(!p.grad().defined());
    BOOST_TEST_CONTEXT("step " << s + 1) {
      for (size_t i = 0; i < a.size(); i++) {
        expect_matches(a[i], sgd_traj[s][i], 2e-5);
        expect_matches(b[i], adam_traj[s][i], 2e-5);
        BOOST_TEST(a[i].to_vector<float>() == a_alone[i].to_vector<float>(),
                   boost::test_tools::per_element());
        BOOST_TEST(b[i].to_vector<float>() == b_alone[i].to_vector<float>(),
                   boost::test_tools::per_element());
      }
    }
  }
  expect_error<ValueError>([&] { group.set_lr(0.1); },
                           "[set_lr] an OptimizerGroup has no lr of its own: set each member's (group[i])");
  expect_error<ValueError>([] { OptimizerGroup empty({}); }, "[OptimizerGroup] needs at least one optimizer");
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
  BOOST_TEST(engine::schedule_uops(roots).size() <= todo.size());
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
