// A tensor over two devices (Tensor::shard): ops run per part, a reduction over the split axis combines the
// parts by the ring all-reduce, autograd and optimizer steps keep full copies equal on every device. The
// devices come from the command line ("CLANG:0,CLANG:1" or "CLANG,VULKAN"); expected values are worked
// out on the host with plain loops.
#define BOOST_TEST_MODULE sharded
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "engine/jit.hpp"
#include "nn/layers.hpp"
#include "nn/module.hpp"
#include "nn/optim.hpp"
#include "tensor/multi.hpp"
#include "tensor/tensor.hpp"

using namespace tg;
namespace tt = boost::test_tools;

namespace {
std::vector<std::string> devs() {
  auto& s = boost::unit_test::framework::master_test_suite();
  return split_devices(s.argc > 1 ? s.argv[1] : "CLANG:0,CLANG:1");
}
std::vector<float> iota(int n, float scale, float shift = 0.0f) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int i = 0; i < n; i++) v[static_cast<size_t>(i)] = scale * static_cast<float>(i + 1) + shift;
  return v;
}
// Row-major (m, k) x (k, n) on the host.
std::vector<float> host_matmul(const std::vector<float>& a, const std::vector<float>& b, int m, int k,
                               int n) {
  std::vector<float> c(static_cast<size_t>(m * n), 0.0f);
  for (int i = 0; i < m; i++)
    for (int j = 0; j < n; j++)
      for (int l = 0; l < k; l++)
        c[static_cast<size_t>(i * n + j)] +=
            a[static_cast<size_t>(i * k + l)] * b[static_cast<size_t>(l * n + j)];
  return c;
}
int axis_of(const Tensor& x) { return shard_axis(x).value_or(-1); }
// Every part of x holds the same values: want (a full copy on each device).
void check_copies(const Tensor& x, const std::vector<float>& want, float tol = 1e-5f) {
  std::vector<Tensor> parts = shards(x);
  BOOST_TEST(parts.size() == devs().size());
  for (const Tensor& p : parts)
    BOOST_TEST(p.to_vector<float>() == want, tt::tolerance(tol) << tt::per_element());
}
}  // namespace

BOOST_AUTO_TEST_CASE(shard_places_one_part_per_device) {
  std::vector<std::string> d = devs();
  Tensor x = Tensor(iota(8, 1.0f), {4, 2}).shard(d, 0);
  BOOST_TEST(x.shape() == Shape({4, 2}));
  BOOST_TEST(x.device() == engine::canonical_device(d[0]) + "," + engine::canonical_device(d[1]));
  BOOST_TEST(axis_of(x) == 0);
  std::vector<Tensor> parts = shards(x);
  BOOST_REQUIRE(parts.size() == 2u);
  BOOST_TEST(parts[0].device() == engine::canonical_device(d[0]));
  BOOST_TEST(parts[1].to_vector<float>() == std::vector<float>({5, 6, 7, 8}), tt::per_element());
  BOOST_TEST(x.to_vector<float>() == iota(8, 1.0f), tt::per_element());  // gathered on the first device
  Tensor c = Tensor(iota(3, 1.0f), {3}).to(x.device());                  // a full copy on each
  BOOST_TEST(axis_of(c) == -1);
  check_copies(c, {1, 2, 3});
  BOOST_CHECK_THROW(Tensor(iota(3, 1.0f), {3}).shard(d, 0), ValueError);  // 3 rows over 2 devices
  BOOST_CHECK_THROW(x.shard(d, 1), ValueError);                           // on two devices already
}

BOOST_AUTO_TEST_CASE(elementwise_runs_per_part_and_cuts_full_copies) {
  std::vector<std::string> d = devs();
  std::vector<float> xv = iota(12, 1.0f, -6.5f), yv = iota(12, 0.5f), bv = {10, 20, 30};
  Tensor x = Tensor(xv, {4, 3}).shard(d, 0), y = Tensor(yv, {4, 3}).shard(d, 0);
  Tensor b = Tensor(bv, {3}).to(x.device());
  Tensor z = (x * 2 + y).relu() + b - 1;  // sharded with sharded, a row broadcast from a full copy
  std::vector<float> want;
  for (size_t i = 0; i < 12; i++) want.push_back(std::max(2 * xv[i] + yv[i], 0.0f) + bv[i % 3] - 1);
  BOOST_TEST(axis_of(z) == 0);
  BOOST_TEST(z.to_vector<float>() == want, tt::tolerance(1e-6f) << tt::per_element());
  // movement keeps track of the split axis: transpose then reshape
  Tensor t = x.permute({1, 0});
  BOOST_TEST(axis_of(t) == 1);
  std::vector<float> tw;
  for (size_t j = 0; j < 3; j++)
    for (size_t i = 0; i < 4; i++) tw.push_back(xv[i * 3 + j]);
  BOOST_TEST(t.contiguous().to_vector<float>() == tw, tt::per_element());
  BOOST_TEST(x.reshape({2, 6}).to_vector<float>() == xv, tt::per_element());
}

BOOST_AUTO_TEST_CASE(reduce_over_the_split_axis_all_reduces) {
  std::vector<std::string> d = devs();
  std::vector<float> xv = iota(12, 1.0f, -6.5f);
  Tensor x = Tensor(xv, {4, 3}).shard(d, 0);
  std::vector<float> rows(4, 0.0f), cols(3, 0.0f), colmax(3, -1e9f);
  float all = 0;
  for (size_t i = 0; i < 4; i++)
    for (size_t j = 0; j < 3; j++) {
      rows[i] += xv[i * 3 + j], cols[j] += xv[i * 3 + j], all += xv[i * 3 + j];
      colmax[j] = std::max(colmax[j], xv[i * 3 + j]);
    }
  Tensor r = x.sum(1);  // along the parts: stays split
  BOOST_TEST(axis_of(r) == 0);
  BOOST_TEST(r.to_vector<float>() == rows, tt::per_element());
  check_copies(x.sum(0), cols);  // across the parts: a full copy of the sum on each device
  check_copies(x.max(0), colmax);
  check_copies(x.sum(), {all});
  check_copies(x.mean(0, true), {cols[0] / 4, cols[1] / 4, cols[2] / 4});
  // 3 sums: the ring's chunks are uneven (x.sum() above had fewer elements than devices)
  for (int n : {2, 6, 1000}) {
    std::vector<float> v = iota(3 * n, 0.25f);
    Tensor s = Tensor(v, {3, n}).shard(d, 1).sum(1);
    std::vector<float> want(3, 0.0f);
    for (int i = 0; i < 3 * n; i++) want[static_cast<size_t>(i / n)] += v[static_cast<size_t>(i)];
    check_copies(s, want, 1e-5f);
  }
}

BOOST_AUTO_TEST_CASE(matmul_and_conv_per_part) {
  std::vector<std::string> d = devs();
  std::vector<float> xv = iota(24, 0.1f, -1.0f), wv = iota(18, -0.2f, 1.5f);
  // data parallel: the batch split, the weight a full copy on each device
  Tensor x = Tensor(xv, {4, 6}).shard(d, 0), w = Tensor(wv, {6, 3}).to(x.device());
  Tensor y = x.matmul(w);
  BOOST_TEST(axis_of(y) == 0);
  BOOST_TEST(y.to_vector<float>() == host_matmul(xv, wv, 4, 6, 3), tt::tolerance(1e-5f) << tt::per_element());
  // the inner axis split on both sides: each device sums its half, the all-reduce adds the halves
  Tensor xk = Tensor(xv, {4, 6}).shard(d, 1), wk = Tensor(wv, {6, 3}).shard(d, 0);
  check_copies(xk.matmul(wk), host_matmul(xv, wv, 4, 6, 3));
  // conv2d over a split batch: (4, 1, 4, 4) * (2, 1, 3, 3) -> (4, 2, 2, 2)
  std::vector<float> iv = iota(64, 0.05f, -1.0f), kv = iota(18, 0.1f, -0.9f), want;
  for (int n = 0; n < 4; n++)
    for (int o = 0; o < 2; o++)
      for (int p = 0; p < 2; p++)
        for (int q = 0; q < 2; q++) {
          float s = 0;
          for (int a = 0; a < 3; a++)
            for (int b = 0; b < 3; b++)
              s += iv[static_cast<size_t>(n * 16 + (p + a) * 4 + q + b)] *
                   kv[static_cast<size_t>(o * 9 + a * 3 + b)];
          want.push_back(s);
        }
  Tensor img = Tensor(iv, {4, 1, 4, 4}).shard(d, 0);
  Tensor out = img.conv2d(Tensor(kv, {2, 1, 3, 3}).to(img.device()));
  BOOST_TEST(out.to_vector<float>() == want, tt::tolerance(1e-5f) << tt::per_element());
}

// loss = sum((x w)^2) over a split batch -> dloss/dw = 2 x^T (x w), summed over every row of x.
BOOST_AUTO_TEST_CASE(gradient_and_sgd_on_full_copies_over_a_split_batch) {
  std::vector<std::string> d = devs();
  std::vector<float> xv = iota(12, 0.1f, -0.5f), wv = {0.5f, -1.0f, 2.0f, 0.25f, -0.75f, 1.5f};
  Tensor w = Tensor(wv, {3, 2}).requires_grad_();
  w.shard_(d);
  BOOST_TEST(w.requires_grad());
  Tensor x = Tensor(xv, {4, 3}).shard(d, 0);
  x.matmul(w).square().sum().backward();
  std::vector<float> xw = host_matmul(xv, wv, 4, 3, 2), g(6, 0.0f);
  for (size_t i = 0; i < 4; i++)
    for (size_t k = 0; k < 3; k++)
      for (size_t j = 0; j < 2; j++) g[k * 2 + j] += 2 * xv[i * 3 + k] * xw[i * 2 + j];
  BOOST_TEST(w.grad().device() == w.device());
  check_copies(w.grad(), g, 1e-4f);
  nn::optim::SGD opt({w}, 0.1);
  opt.step();
  std::vector<float> want;
  for (size_t i = 0; i < 6; i++) want.push_back(wv[i] - 0.1f * g[i]);
  check_copies(w, want, 1e-4f);
}

// Adam on a model with BatchNorm: the batch statistics cover the whole batch (an all-reduce), so three steps
// over a split batch give the parameters the same run on one device gives.
BOOST_AUTO_TEST_CASE(adam_with_batchnorm_matches_one_device) {
  std::vector<std::string> d = devs();
  auto run = [&](bool split) {
    Tensor::manual_seed(7);
    nn::Linear lin(5, 4, false);  // a bias before BatchNorm has no gradient: Adam would scale noise
    nn::BatchNorm bn(4);
    std::vector<Tensor> params = {lin.weight, bn.weight, bn.bias};
    std::vector<Tensor> state = {bn.running_mean, bn.running_var, bn.num_batches_tracked};
    if (split)
      for (Tensor& p : params) p.shard_(d);
    if (split)
      for (Tensor& s : state) s.shard_(d);
    nn::optim::Adam opt(params, 0.05);
    std::vector<float> losses;
    for (int step = 0; step < 3; step++) {
      Tensor x = Tensor(iota(40, 0.03f * static_cast<float>(step + 1), -0.6f), {8, 5});
      if (split) x = x.shard(d, 0);
      Tensor t = Tensor(iota(32, -0.05f, 0.7f), {8, 4});
      if (split) t = t.shard(d, 0);
      Tensor loss = (bn(lin(x).relu()) - t).square().mean();
      opt.zero_grad();
      loss.backward();
      opt.step();
      losses.push_back(loss.item<float>());
    }
    std::vector<float> out = losses;
    for (const Tensor& p : params)
      for (float v : p.to_vector<float>()) out.push_back(v);
    for (const Tensor& s : state)
      for (float v : s.to_vector<float>()) out.push_back(v);
    // the full copies stay equal: exactly on two devices of one plugin (the same kernels), within 1e-5
    // across plugins (each compiles its own kernels: CLANG and VULKAN round sqrt and fma differently)
    bool one_plugin = d[0].substr(0, d[0].find(':')) == d[1].substr(0, d[1].find(':'));
    if (split)
      for (const Tensor& p : params) {
        std::vector<Tensor> parts = shards(p);
        std::vector<float> a = parts[0].to_vector<float>(), b = parts[1].to_vector<float>();
        for (size_t i = 0; i < a.size(); i++)
          BOOST_TEST(std::abs(a[i] - b[i]) <= (one_plugin ? 0.0f : 1e-5f),
                     i << ": " << a[i] << " vs " << b[i]);
      }
    return out;
  };
  std::vector<float> one = run(false), two = run(true);  // the sums add in another order: 1e-4 apart at most
  BOOST_REQUIRE(one.size() == two.size());
  for (size_t i = 0; i < one.size(); i++)
    BOOST_TEST(std::abs(one[i] - two[i]) <= 1e-4f, i << ": " << one[i] << " vs " << two[i]);
}

// BatchNorm's batch statistics for a channel of nearly equal values (a ReLU's outputs often are: 90% here
// are 0.3) on one device and over a split batch: the normalized values and the gradients match the same
// sums in double on the host to float precision. Summed as one float chain over the 12800 values of a
// channel they were 3e-3 off on one device and 2e-3 on two, and so as far from each other.
BOOST_AUTO_TEST_CASE(batchnorm_statistics_of_a_nearly_constant_channel) {
  const int N = 32, C = 2, HW = 20 * 20;
  std::vector<float> xv(N * C * HW), rv(N * C * HW);
  for (size_t i = 0; i < xv.size(); i++) {
    bool c0 = (i / HW) % C == 0;
    xv[i] = c0 ? 0.3f + (i % 10 == 0 ? 0.05f * static_cast<float>((i * 7919) % 101) / 101.0f : 0.0f)
               : 0.2f * static_cast<float>((i * 31) % 17) / 17.0f;
    rv[i] = static_cast<float>(static_cast<int>((i * 13) % 7) - 3) / 7.0f;
  }
  // the host reference: y = (x - mean) * invstd, loss = sum(y * r)
  std::vector<double> y(xv.size()), dx(xv.size()), dw(C), db(C);
  for (int c = 0; c < C; c++) {
    auto each = [&](auto f) {
      for (int n = 0; n < N; n++)
        for (int k = 0; k < HW; k++) f(static_cast<size_t>((n * C + c) * HW + k));
    };
    double mean = 0, var = 0, mr = 0, mrx = 0, cnt = N * HW;
    each([&](size_t i) { mean += xv[i]; });
    mean /= cnt;
    each([&](size_t i) { var += (xv[i] - mean) * (xv[i] - mean); });
    double invstd = 1 / std::sqrt(var / cnt + 1e-5);
    each([&](size_t i) {
      y[i] = (xv[i] - mean) * invstd;
      mr += rv[i] / cnt;
      mrx += rv[i] * y[i] / cnt;
      dw[c] += rv[i] * y[i];
      db[c] += rv[i];
    });
    each([&](size_t i) { dx[i] = invstd * (rv[i] - mr - y[i] * mrx); });
  }
  auto near = [](const std::vector<float>& got, const std::vector<double>& want, double tol,
                 const char* what) {
    double worst = 0;
    for (size_t i = 0; i < got.size(); i++) worst = std::max(worst, std::abs(got[i] - want[i]));
    BOOST_TEST(worst <= tol, what << " is up to " << worst << " off");
  };
  for (bool split : {false, true}) {
    std::vector<std::string> d = devs();
    nn::BatchNorm2d bn(C);
    Tensor x = Tensor(xv, {N, C, 20, 20}).requires_grad_(), r = Tensor(rv, {N, C, 20, 20});
    if (split) {
      for (auto& [name, t] : nn::state_dict(bn)) t.shard_(d);
      x = Tensor(xv, {N, C, 20, 20}).shard(d, 0).requires_grad_();
      r = r.shard(d, 0);
    }
    Tensor out = bn(x);
    (out * r).sum().backward();
    BOOST_TEST_CONTEXT((split ? "two devices" : "one device")) {
      near(out.to_vector<float>(), y, 2e-5, "y");                           // |y| up to 5
      near(x.grad().to_vector<float>(), dx, 4e-5, "the input's gradient");  // up to 110
      near(bn.weight.grad().to_vector<float>(), dw, 1e-4, "the weight's gradient");
      near(bn.bias.grad().to_vector<float>(), db, 1e-5, "the bias's gradient");
    }
  }
}

// The input given on one device and split inside the step, or given split: either way the replays bind the
// parts and update the full copies of w on both devices.
BOOST_AUTO_TEST_CASE(jit_replays_a_sharded_step) {
  std::vector<std::string> d = devs();
  for (bool given_split : {false, true}) {
    std::vector<float> wv = {0.5f, -1.0f, 2.0f};
    Tensor w = Tensor(wv, {3, 1}).requires_grad_();
    w.shard_(d);
    nn::optim::SGD opt({w}, 0.01);
    Jit step = jit([&](std::span<const Tensor> in) -> std::vector<Tensor> {
      Tensor x = given_split ? in[0] : in[0].shard(d, 0);
      Tensor loss = x.matmul(w).square().mean();
      opt.zero_grad();
      loss.backward();
      std::vector<Tensor> todo = opt.schedule_step();
      Tensor l = loss.to(d[0]);
      todo.push_back(l);
      Tensor::realize_all(todo);
      return {l};
    });
    std::vector<float> host = wv;
    for (int it = 0; it < 4; it++) {
      std::vector<float> xv = iota(6, 0.1f * static_cast<float>(it + 1));
      Tensor x(xv, {2, 3}, {}, d[0]);
      float loss = step({given_split ? x.shard(d, 0) : x})[0].item<float>();
      std::vector<float> r(2, 0.0f), g(3, 0.0f);
      float want = 0;
      for (size_t i = 0; i < 2; i++) {
        for (size_t k = 0; k < 3; k++) r[i] += xv[i * 3 + k] * host[k];
        want += r[i] * r[i] / 2;
        for (size_t k = 0; k < 3; k++) g[k] += xv[i * 3 + k] * r[i];  // d mean(r^2) / dw = 2/2 sum x r
      }
      BOOST_TEST(loss == want, tt::tolerance(1e-4f));
      for (size_t k = 0; k < 3; k++) host[k] -= 0.01f * g[k];
    }
    BOOST_TEST(step.captures() == 1u);
    BOOST_TEST(step.info().launches > 0u);
    check_copies(w, host, 1e-4f);
  }
}

BOOST_AUTO_TEST_CASE(what_cannot_run_per_part_says_so) {
  std::vector<std::string> d = devs();
  Tensor x = Tensor(iota(8, 1.0f), {4, 2}).shard(d, 0);
  BOOST_CHECK_THROW(x.shrink({{0, 1}, {0, 2}}).realize(), NotSupportedError);  // a shrink across the parts
  BOOST_CHECK_THROW(x + Tensor(iota(8, 1.0f), {4, 2}, {}, d[0]), DeviceError);
  BOOST_CHECK_THROW(x.to(x.device() + ",CLANG:5"), Error);
}
