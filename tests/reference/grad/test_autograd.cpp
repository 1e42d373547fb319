// The autograd API: accumulation, detach, requires-grad propagation, leaf identity across realize() and
// assign(), gradients through realized intermediates, gradient(), memory, and the error messages.
// Expected values are derived by hand in the comments.
#define BOOST_TEST_MODULE autograd
#include <boost/test/unit_test.hpp>
#include "common/test_support.hpp"

#include <cmath>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "tensor/gradient.hpp"
#include "tensor/tensor.hpp"

using namespace tg;
using tg::test::expect_error;

namespace {

void expect_values(const Tensor& t, const std::vector<double>& want) {
  std::vector<double> got = t.to_vector<double>();
  BOOST_REQUIRE_EQUAL(got.size(), want.size());
  for (size_t i = 0; i < got.size(); i++)
    BOOST_CHECK_MESSAGE(std::abs(got[i] - want[i]) <= 1e-5 * std::max(1.0, std::abs(want[i])),
                        "element " << i << ": got " << got[i] << ", want " << want[i]);
}

Tensor leaf(std::vector<float> v, Shape s = {}) {
  Tensor t(std::move(v), std::move(s));
  t.requires_grad_();
  return t;
}

}  // namespace

BOOST_AUTO_TEST_CASE(backward_accumulates_across_calls) {
  Tensor x = leaf({1, 2, 3});
  (x * x).sum().backward();  // d/dx sum x^2 = 2x
  expect_values(x.grad(), {2, 4, 6});
  (x * 3).sum().backward();  // + 3
  expect_values(x.grad(), {5, 7, 9});
  x.set_grad(Tensor());  // zero_grad
  (x * 3).sum().backward();
  expect_values(x.grad(), {3, 3, 3});
}

BOOST_AUTO_TEST_CASE(gradients_are_lazy) {
  Tensor x = leaf({1, 2});
  (x * x).sum().backward();
  BOOST_TEST((x.grad().uop()->op() != Ops::RESHAPE || x.grad().uop()->src(0)->op() != Ops::BUFFER));
  BOOST_TEST(!x.grad().requires_grad());
  expect_values(x.grad(), {2, 4});
}

BOOST_AUTO_TEST_CASE(requires_grad_propagates_and_detach_cuts) {
  Tensor x = leaf({1, 2}), c = Tensor(std::vector<float>{5, 7});
  BOOST_TEST(x.is_leaf());
  Tensor y = x * c;
  BOOST_TEST(y.requires_grad());
  BOOST_TEST(!y.is_leaf());
  BOOST_TEST(!(c * 2).requires_grad());
  BOOST_TEST(!x.gt(0).requires_grad());  // bool results never require grad
  Tensor d = y.detach();
  BOOST_TEST(!d.requires_grad());
  BOOST_TEST(d.is_leaf());
  // x * detach(x): the detached factor is a constant, so d/dx = detach(x) = x
  (x * x.detach()).sum().backward();
  expect_values(x.grad(), {1, 2});
  // only through detach: x gets nothing, and the result does not require grad
  BOOST_TEST(!(x.detach() * 2).requires_grad());
  expect_values(c, {5, 7});
  BOOST_TEST(!c.grad().defined());
}

BOOST_AUTO_TEST_CASE(non_scalar_backward_with_gradient) {
  Tensor x = leaf({1, 2, 3});
  Tensor y = x * x;  // dy/dx = 2x
  y.backward(Tensor(std::vector<float>{1, 10, 100}));
  expect_values(x.grad(), {2, 40, 600});
}

BOOST_AUTO_TEST_CASE(leaf_identity_survives_realize_and_assign) {
  Tensor w = leaf({1, 2});
  Tensor loss = (w * w).sum();  // built before w changes
  w.assign(Tensor(std::vector<float>{10, 20})).realize();
  loss.backward();  // w still gets its gradient 2w; lazy, it reads w's buffer as the loss would: (20, 40)
  BOOST_REQUIRE(w.grad().defined());
  expect_values(w.grad(), {20, 40});
  BOOST_TEST(loss.item<float>() == 500.0f);
  // a loss realized (printed) before backward still backpropagates
  Tensor v = leaf({3, 4});
  Tensor l2 = (v * v * v).sum();  // d/dv = 3v^2
  BOOST_TEST(l2.item<float>() == 91.0f);
  l2.backward();
  expect_values(v.grad(), {27, 48});
  // a lazy tensor marked as a leaf is its own node, not the shared constant graph
  Tensor ones = Tensor::ones({2});
  ones.requires_grad_();
  (ones + Tensor::ones({2}) * 3).sum().backward();  // the other ones() carry no gradient
  expect_values(ones.grad(), {1, 1});
}

// Realizing, printing or reading an intermediate does not cut it out of autograd (as in PyTorch).
// f = sum((a + 1) * a^2): df/da = 3a^2 + 2a = (5, 16, 33, 56) at a = (1, 2, 3, 4).
BOOST_AUTO_TEST_CASE(reading_an_intermediate_keeps_its_gradient) {
  std::vector<std::function<void(Tensor&)>> reads = {
      [](Tensor& y) { y.realize(); },
      [](Tensor& y) {
        std::ostringstream os;
        os << y;
      },
      [](Tensor& y) { y.to_vector<float>(); },
      [](Tensor& y) { y.sum().item<float>(); },  // a result computed from it, read
  };
  for (size_t i = 0; i < reads.size(); i++) {
    BOOST_TEST_CONTEXT("read " << i) {
      Tensor a = leaf({1, 2, 3, 4}, {2, 2});
      Tensor y = a * a;
      reads[i](y);
      ((a + 1) * y).sum().backward();
      expect_values(a.grad(), {5, 16, 33, 56});
    }
  }
  // reading the output itself before backward: d/da sum a^2 = 2a
  Tensor a = leaf({1, 2, 3, 4}, {2, 2});
  Tensor y = a * a;
  BOOST_TEST(y.to_vector<float>()[3] == 16.0f);
  y.sum().backward();
  expect_values(a.grad(), {2, 4, 6, 8});
}

// where(a > b, t, a - b) with t = a*b realized: d/da = b where a > b else 1, d/db = a where a > b else -1.
BOOST_AUTO_TEST_CASE(gradient_flows_through_a_realized_branch) {
  Tensor a = leaf({1, 5, 3, 0}), b = leaf({2, 2, 4, -1});
  Tensor t = a * b;
  t.realize();
  (a > b).where(t, a - b).sum().backward();
  expect_values(a.grad(), {1, 2, 1, -1});
  expect_values(b.grad(), {-1, 5, -1, 0});
}

BOOST_AUTO_TEST_CASE(realized_chains_and_dropped_handles) {
  Tensor a = leaf({1, 2, 3});
  Tensor z;
  {
    Tensor y = a * a;  // its handle goes, its view stays in z's graph
    y.realize();
    z = y * 3;
  }
  z.sum().backward();  // 6a
  expect_values(a.grad(), {6, 12, 18});
  // y = a^2 and z = y^2 both realized: d/da sum(z + y) = 4a^3 + 2a
  Tensor b = leaf({1, 2, 3});
  Tensor y = (b * b).realize();
  Tensor w = (y * y).realize();
  (w + y).sum().backward();
  expect_values(b.grad(), {6, 36, 114});
  // a realized reshape of a leaf is a view of the leaf's own buffer
  Tensor c = leaf({1, 2, 3, 4}, {2, 2});
  Tensor flat = c.reshape({4}).realize();
  Tensor back = flat.reshape({2, 2}).realize();
  (flat * Tensor(std::vector<float>{1, 2, 3, 4}) + back.reshape({4})).sum().backward();
  expect_values(c.grad(), {2, 3, 4, 5});
}

// gradient() toward a realized intermediate counts its uses before and after realize() once each.
BOOST_AUTO_TEST_CASE(gradient_toward_a_realized_intermediate) {
  Tensor a = leaf({1, 2}), b = leaf({3, 4});
  Tensor h = a * b;
  Tensor u = h * 2;  // built while h is lazy
  h.realize();
  Tensor y = (u + h * 3).sum();  // dy/dh = 5, dy/da = 5b, dy/db = 5a
  std::vector<Tensor> g = y.gradient({h, a, b});
  expect_values(g[0], {5, 5});
  expect_values(g[1], {15, 20});
  expect_values(g[2], {5, 10});
}

// conv's own backward rule takes its inputs' gradients; a realized input passes them on to its graph.
BOOST_AUTO_TEST_CASE(conv_of_a_realized_input) {
  auto grads = [](bool realize) {
    Tensor::manual_seed(3);
    Tensor x = Tensor::randn({1, 2, 5, 5}).realize(), w = Tensor::randn({3, 2, 3, 3}).realize();
    x.requires_grad_(), w.requires_grad_();
    Tensor h = (x * 2).relu();
    if (realize) h.realize();
    Tensor y = h.conv2d(w, Tensor(), 1, 1);
    if (realize) y.realize();
    (y * y).sum().backward();
    return std::pair(x.grad().to_vector<double>(), w.grad().to_vector<double>());
  };
  auto [gx, gw] = grads(false);
  auto [rx, rw] = grads(true);
  BOOST_REQUIRE_EQUAL(gx.size(), rx.size());
  for (size_t i = 0; i < gx.size(); i++) BOOST_CHECK_CLOSE(gx[i] + 1, rx[i] + 1, 1e-3);
  for (size_t i = 0; i < gw.size(); i++) BOOST_CHECK_CLOSE(gw[i] + 1, rw[i] + 1, 1e-3);
}

// backward() frees the graphs of the realized tensors it went through, as PyTorch without retain_graph.
BOOST_AUTO_TEST_CASE(a_freed_graph_is_not_walked_again) {
  std::string freed =
      "[backward] a tensor in this graph was realized from a graph that an earlier backward() freed (as "
      "PyTorch does without retain_graph); compute it again";
  Tensor a = leaf({1, 2});
  Tensor y = (a * a).realize();
  y.sum().backward();
  expect_error<ValueError>([&] { y.sum().backward(); }, freed);
  Tensor loss = (a * 3).sum();
  loss.backward();
  BOOST_TEST(loss.item<float>() == 9.0f);  // realized after its backward: keeps no graph
  expect_error<ValueError>([&] { loss.backward(); }, freed);
  // gradient() keeps what it walks
  Tensor h = (a * a).realize();
  expect_values(h.sum().gradient({a})[0], {2, 4});
  expect_values(h.sum().gradient({a})[0], {2, 4});
}

// A second backward() through a graph that was never realized is an error too (PyTorch: "Trying to
// backward through the graph a second time"), not a second accumulation; a leaf has no graph to free.
BOOST_AUTO_TEST_CASE(a_second_backward_through_a_lazy_graph_is_an_error) {
  std::string again =
      "[backward] backward() already went through this tensor's graph and freed it (as PyTorch does without "
      "retain_graph); compute the tensor again to backpropagate again";
  Tensor a = leaf({1, 2});
  Tensor loss = (a * a).sum();
  loss.backward();
  expect_error<ValueError>([&] { loss.backward(); }, again);
  Tensor same = loss;  // another handle of the same tensor
  expect_error<ValueError>([&] { same.backward(); }, again);
  expect_values(a.grad(), {2, 4});  // d/da sum a^2 = 2a, once
  (a * a).sum().backward();         // the loss computed again accumulates
  expect_values(a.grad(), {4, 8});
  Tensor s = leaf({3});
  s.backward();
  s.backward();  // ds/ds = 1, twice
  expect_values(s.grad(), {2});
}

// assign() writes new values into a realized intermediate: its graph no longer describes it.
BOOST_AUTO_TEST_CASE(assign_to_a_realized_intermediate_drops_its_graph) {
  Tensor a = leaf({1, 2});
  Tensor y = (a * a).realize();
  y.assign(Tensor(std::vector<float>{7, 9})).realize();
  (y * a).sum().backward();  // y is data now: d/da = y
  expect_values(a.grad(), {7, 9});
}

// A training loop that realizes and reads its intermediates keeps no graph past each backward(), and
// its live nodes stay flat, also when every loss is kept.
BOOST_AUTO_TEST_CASE(training_loop_memory_stays_flat) {
  Tensor::manual_seed(5);
  Tensor w = Tensor::randn({8, 4}).realize(), x = Tensor::randn({16, 8}).realize();
  w.requires_grad_();
  std::vector<Tensor> losses;
  std::vector<size_t> live;
  for (int step = 0; step < 24; step++) {
    Tensor h = x.matmul(w).relu().realize();
    Tensor loss = (h * h).mean();
    loss.item<float>();
    w.set_grad(Tensor());
    loss.backward();
    w.assign(w.detach() - w.grad() * 0.01).realize();
    w.set_grad(Tensor());
    BOOST_TEST(kept_graph_count() == 0u);
    live.push_back(live_uop_count());
  }
  // the first steps fill caches (kernels, schedules); then every step ends with the same nodes alive
  for (size_t i = 9; i < live.size(); i++)
    BOOST_TEST(live[i] == live[8], "step " << i << ": " << live[i] << " vs " << live[8]);
  // kept losses hold their values only
  for (int step = 0; step < 4; step++) {
    Tensor loss = (x.matmul(w).relu().realize() * 2).sum().realize();
    loss.backward();
    losses.push_back(loss);
  }
  BOOST_TEST(kept_graph_count() == 0u);
  w.set_grad(Tensor());
}

BOOST_AUTO_TEST_CASE(gradient_of_targets) {
  Tensor a = leaf({1, 2}), b = leaf({3, 4});
  Tensor h = a * b;
  Tensor y = (h * h).sum();  // dy/dh = 2h = (6, 16); dy/da = 2 a b^2 = (18, 64); dy/db = 2 a^2 b = (6, 32)
  std::vector<Tensor> g = y.gradient({a, b, h});
  BOOST_REQUIRE_EQUAL(g.size(), 3u);
  expect_values(g[0], {18, 64});
  expect_values(g[1], {6, 32});
  expect_values(g[2], {6, 16});
  BOOST_TEST(!a.grad().defined());  // gradient() does not touch .grad()
  // with an output gradient, and a target that needs no requires_grad
  Tensor x = Tensor(std::vector<float>{2, 3});
  expect_values((x * x).gradient({x}, Tensor(std::vector<float>{1, -1}))[0], {4, -6});
}

BOOST_AUTO_TEST_CASE(max_reduce_splits_ties) {
  Tensor x = leaf({3, 1, 3, 2});
  x.max().backward();  // two maxima share the gradient
  expect_values(x.grad(), {0.5, 0, 0.5, 0});
}

BOOST_AUTO_TEST_CASE(errors) {
  Tensor x = leaf({1, 2, 3});
  expect_error<ValueError>([&] { (x * 2).backward(); },
                           "[backward] a gradient can only be implied for a one-element output, this one has "
                           "shape (3,): pass the output's gradient");
  expect_error<ValueError>(
      [] {
        Tensor(std::vector<float>{1, 2}).sum().backward();
      },
      "[backward] the tensor does not require grad: no input it is computed from has "
      "requires_grad set, or the path goes through detach()");
  expect_error<ShapeError>([&] { (x * 2).backward(Tensor::ones({2})); },
                           "[backward] the gradient has shape (2,) but the output has shape (3,)");
  Tensor unused = leaf({4});
  expect_error<ValueError>(
      [&] {
        (x * 2).sum().gradient({x, unused});
      },
      "[gradient] the output does not depend on target 1 (it is not in the output's "
      "graph, or only through detach())");
  expect_error<ValueError>([&] { (x.detach() * 2).sum().gradient({x}); },
                           "[gradient] the output does not depend on target 0 (it is not in the output's "
                           "graph, or only through detach())");
  Tensor ints = Tensor({1, 2, 3});
  expect_error<DTypeError>([&] { ints.sum().gradient({x}); },
                           "[gradient] only floating-point outputs have gradients, this one is int");
  expect_error<DTypeError>([&] { (x * 2).sum().gradient({ints}); },
                           "[gradient] only floating-point targets have gradients, got int");
  ints.requires_grad_();
  expect_error<DTypeError>([&] { (ints.cast(dtypes::float32) * x).sum().backward(); },
                           "[backward] requires_grad is set on an int tensor; only floating-point tensors "
                           "can have gradients");
}

BOOST_AUTO_TEST_CASE(rules_are_a_pattern_matcher) {
  // RECIPROCAL's rule: d(1/x) = -g/x^2, read back through the rule table directly
  Tensor x = Tensor(std::vector<float>{2, 4});
  Tensor r = x.reciprocal();
  Tensor g = Tensor(std::vector<float>{1, 1});
  auto grads = compute_gradient(r.uop(), g.uop(), {x.uop()});
  BOOST_REQUIRE(grads.count(x.uop()));
  expect_values(Tensor(grads.at(x.uop()), x.device(), {x.holds()[0], g.holds()[0]}), {-0.25, -0.0625});
}
