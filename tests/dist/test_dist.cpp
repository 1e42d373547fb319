// tg::dist under `mpirun -np N` (any N >= 1; CI runs 2): collectives with values derived from the ranks by
// hand, bucketed averaging, agreement checks that can fail, and a data-parallel training whose weights
// hash the same on every rank after every step and equal those of one process training on the whole batch.
#define BOOST_TEST_MODULE dist
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "dist/data_parallel.hpp"
#include "dist/staged_realize.hpp"
#include "engine/jit.hpp"
#include "nn/layers.hpp"
#include "nn/optim.hpp"
#include "tensor/tensor.hpp"

using namespace tg;

namespace {
dist::Communicator& comm() {
  static std::shared_ptr<dist::Communicator> c = dist::init("mpi");
  return *c;
}
int R() { return comm().rank(); }
int N() { return comm().size(); }
}  // namespace

BOOST_AUTO_TEST_CASE(timeout_comes_from_the_environment) {
  BOOST_TEST(comm().timeout() == 120.0);  // TG_DIST_TIMEOUT=120 (meson.build)
  BOOST_CHECK_THROW(comm().set_timeout(0), ValueError);
}

BOOST_AUTO_TEST_CASE(all_reduce_sum_max_min) {
  std::vector<float> f{1.0f * R(), 2.0f};
  comm().all_reduce(std::span(f));
  BOOST_TEST(f[0] == N() * (N() - 1) / 2.0f);  // 0 + 1 + ... + (N-1)
  BOOST_TEST(f[1] == 2.0f * N());
  std::vector<double> d{-1.0 * R()};
  comm().all_reduce(std::span(d), dist::ReduceOp::MIN);
  BOOST_TEST(d[0] == -(N() - 1.0));
  std::vector<int64_t> i{(int64_t{1} << 40) + R()};
  comm().all_reduce(std::span(i), dist::ReduceOp::MAX);
  BOOST_TEST(i[0] == (int64_t{1} << 40) + N() - 1);
}

BOOST_AUTO_TEST_CASE(overlapping_requests_and_broadcast_and_barrier) {
  std::vector<float> a{1.0f}, b{10.0f * (R() + 1)};
  int ra = comm().start_all_reduce(a.data(), 1, dist::Elem::FLOAT32, dist::ReduceOp::SUM);
  int rb = comm().start_all_reduce(b.data(), 1, dist::Elem::FLOAT32, dist::ReduceOp::SUM);
  comm().wait(rb);
  comm().wait(ra);
  BOOST_TEST(a[0] == 1.0f * N());
  BOOST_TEST(b[0] == 10.0f * N() * (N() + 1) / 2);
  int root = N() - 1;
  std::vector<int64_t> v{R() == root ? 77 : -1, R() == root ? 78 : -1};
  comm().broadcast(std::as_writable_bytes(std::span(v)), root);
  BOOST_TEST(v[0] == 77);
  BOOST_TEST(v[1] == 78);
  comm().barrier();
  BOOST_CHECK_THROW(comm().broadcast(std::as_writable_bytes(std::span(v)), N()), ValueError);
  BOOST_CHECK_THROW(comm().wait(12345), ValueError);
}

BOOST_AUTO_TEST_CASE(all_reduce_mean_in_small_buckets) {
  // rank r holds (r+1) * x; the mean is x * (N+1)/2. 8-byte buckets: each tensor goes on its own.
  std::vector<Tensor> ts{Tensor({1.0f, 2.0f, 3.0f}) * (R() + 1), Tensor(4.0f) * (R() + 1),
                         Tensor(std::vector<double>{2.0, 4.0}, {1, 2}) * (R() + 1)};
  for (size_t bucket : {size_t{8}, dist::kDefaultBucketBytes}) {
    std::vector<Tensor> m = dist::all_reduce_mean(comm(), ts, bucket);
    float k = (N() + 1) / 2.0f;
    BOOST_TEST(m[0].to_vector<float>() == std::vector<float>({k, 2 * k, 3 * k}), boost::test_tools::per_element());
    BOOST_TEST(m[1].ndim() == 0);
    BOOST_TEST(m[1].item<float>() == 4 * k);
    BOOST_TEST(m[2].dtype() == dtypes::float64);
    BOOST_TEST(m[2].shape() == Shape({1, 2}));
    BOOST_TEST(m[2].to_vector<double>() == std::vector<double>({2.0 * k, 4.0 * k}), boost::test_tools::per_element());
  }
}

BOOST_AUTO_TEST_CASE(all_reduce_mean_in_parts_started_early_or_late) {
  // rank r holds (r+1) * x in two parts; the means are x * (N+1)/2 whether each part's buckets start when
  // it is added (progress() between) or all at finish()
  std::vector<Tensor> a{Tensor({1.0f, 2.0f}) * (R() + 1), Tensor(3.0f) * (R() + 1)},
      b{Tensor({5.0f}) * (R() + 1)};
  std::vector<Tensor> all{a[0], a[1], b[0]};
  float k = (N() + 1) / 2.0f;
  for (bool early : {true, false}) {
    dist::AllReduceMean r(comm(), all, 8);
    r.add(a, early);
    r.progress();
    r.add(b, early);
    std::vector<Tensor> m = r.finish();
    BOOST_REQUIRE(m.size() == 3u);
    BOOST_TEST(m[0].to_vector<float>() == std::vector<float>({k, 2 * k}), boost::test_tools::per_element());
    BOOST_TEST(m[1].item<float>() == 3 * k);
    BOOST_TEST(m[2].to_vector<float>() == std::vector<float>({5 * k}), boost::test_tools::per_element());
  }
  dist::AllReduceMean r(comm(), all);
  BOOST_CHECK_THROW(r.add(b), ValueError);  // not the tensor announced first
  r.add(a);
  BOOST_CHECK_THROW(r.finish(), ValueError);  // one announced tensor never added
  // test() finishes a request as wait() does
  std::vector<float> v{1.0f};
  int req = comm().start_all_reduce(v.data(), 1, dist::Elem::FLOAT32, dist::ReduceOp::SUM);
  while (!comm().test(req)) {
  }
  BOOST_TEST(v[0] == 1.0f * N());
  BOOST_CHECK_THROW(comm().wait(req), ValueError);
}

// A two-layer net's gradients realized in two stages (the last layer's first), under a JIT as train-mnist
// runs them: the values of plain loops on the host, for new inputs at every call (replays included).
BOOST_AUTO_TEST_CASE(staged_realize_under_a_jit_matches_the_host) {
  std::vector<float> w1v{0.5f, -0.25f, 0.75f, 0.1f, -0.6f, 0.3f}, w2v{0.2f, -0.4f, 0.9f};  // (2,3), (3,1)
  Tensor w1 = Tensor(w1v, {2, 3}).requires_grad_(), w2 = Tensor(w2v, {3, 1}).requires_grad_();
  std::optional<dist::StagedRealize> staged;
  auto stage = [&](size_t k) {
    return jit([&, k](std::span<const Tensor> in) -> std::vector<Tensor> {
      if (k == 0) {
        Tensor loss = (in[0].matmul(w1).relu().matmul(w2)).sum();
        w1.set_grad(Tensor()), w2.set_grad(Tensor());
        loss.backward();
        staged.emplace(
            std::vector<std::vector<Tensor>>{{w2.grad().contiguous(), loss}, {w1.grad().contiguous()}});
      }
      std::vector<Tensor> out = staged->realize(k);
      out.insert(out.end(), staged->shared(k).begin(), staged->shared(k).end());
      if (k == 1) staged.reset();
      return out;
    });
  };
  Jit s0 = stage(0), s1 = stage(1);
  for (int call = 0; call < 4; call++) {
    std::vector<float> xv{0.3f * call - 0.5f, 1.0f, -0.2f, 0.1f * call + 0.4f};  // (2,2)
    std::vector<Tensor> in{Tensor(xv, {2, 2})};
    std::vector<Tensor> o0 = s0(in), o1 = s1(in);  // every stage gets the inputs: stage 1 reads x too
    BOOST_TEST(o0.size() > 2u);  // stage 0 also realized what stage 1 reads of it (x w1), not recomputed
    // host: h = relu(x w1), loss = sum(h w2), dw2 = sum_rows h, dw1 = x^T (relu'(x w1) * w2^T)
    std::vector<double> dw1(6, 0.0), dw2(3, 0.0);
    double loss = 0;
    for (int i = 0; i < 2; i++)
      for (int j = 0; j < 3; j++) {
        double z = xv[i * 2] * w1v[j] + xv[i * 2 + 1] * w1v[3 + j];
        double h = z > 0 ? z : 0;
        loss += h * w2v[j];
        dw2[j] += h;
        for (int a = 0; a < 2; a++) dw1[a * 3 + j] += z > 0 ? xv[i * 2 + a] * w2v[j] : 0.0;
      }
    BOOST_TEST_CONTEXT("call " << call) {
      std::vector<float> g2 = o0[0].to_vector<float>(), g1 = o1[0].to_vector<float>();
      for (int j = 0; j < 3; j++) BOOST_TEST(g2[j] == dw2[j], boost::test_tools::tolerance(1e-5));
      for (int j = 0; j < 6; j++) BOOST_TEST(g1[j] == dw1[j], boost::test_tools::tolerance(1e-5));
      BOOST_TEST(o0[1].item<float>() == loss, boost::test_tools::tolerance(1e-5));
    }
  }
  BOOST_TEST(s1.calls() == 4u);
  dist::StagedRealize s({{Tensor(1.0f)}, {Tensor(2.0f)}});
  BOOST_CHECK_THROW(s.realize(1), ValueError);  // stage 0 first
}

BOOST_AUTO_TEST_CASE(ranks_that_disagree_fail_on_every_rank) {
  // another shape on the last rank: every rank gets the error, none mixes the data
  Tensor t = R() == N() - 1 && N() > 1 ? Tensor::ones({3, 2}) : Tensor::ones({2, 3});
  std::vector<Tensor> ts{t};
  if (N() > 1) {
    BOOST_CHECK_EXCEPTION(dist::all_reduce_mean(comm(), ts), dist::DistError, [](const dist::DistError& e) {
      return std::string(e.what()).find("[all_reduce_mean] ranks disagree on the tensors") != std::string::npos;
    });
    BOOST_CHECK_THROW(dist::check_same(comm(), static_cast<uint64_t>(R()) << 8, "rank numbers"), dist::DistError);
  }
  BOOST_CHECK_NO_THROW(dist::check_same(comm(), 0xfeedull, "a constant"));
  BOOST_TEST(!comm().failed());  // a disagreement is reported, the job itself is fine
}

BOOST_AUTO_TEST_CASE(data_parallel_training_keeps_weights_identical) {
  // 4 rows per rank; every rank starts from different random weights, then takes rank 0's
  Tensor::manual_seed(100 + static_cast<uint64_t>(R()));
  auto model = std::make_shared<nn::Linear>(3, 2);
  std::vector<Tensor> params = model->parameters();
  dist::broadcast(comm(), params, 0);
  dist::check_same(comm(), dist::hash_values(params), "the initial weights");
  std::vector<float> xs, ys;
  for (int i = 0; i < 4 * N(); i++) {
    xs.insert(xs.end(), {0.1f * i, 1.0f - 0.05f * i, (i % 3) * 0.5f});
    ys.insert(ys.end(), {static_cast<float>(i % 2), 0.2f * i});
  }
  Tensor X(xs, {4 * N(), 3}), Y(ys, {4 * N(), 2});
  // one process with the whole batch: the reference
  auto whole = std::make_shared<nn::Linear>(3, 2);
  nn::load_state_dict(*whole, nn::state_dict(*model));
  nn::optim::SGD opt(params, 0.1, 0.9), opt_whole(whole->parameters(), 0.1, 0.9);
  for (int step = 0; step < 5; step++) {
    Tensor part_x = X.shrink({{4 * R(), 4 * R() + 4}, {0, 3}}), part_y = Y.shrink({{4 * R(), 4 * R() + 4}, {0, 2}});
    opt.zero_grad();
    ((*model)(part_x) - part_y).square().mean().backward();
    std::vector<Tensor> g;
    for (const Tensor& p : params) g.push_back(p.grad().contiguous().realize());
    std::vector<Tensor> avg = dist::all_reduce_mean(comm(), g, 16);  // several buckets
    for (size_t i = 0; i < params.size(); i++) params[i].set_grad(avg[i]);
    opt.step();
    dist::check_same(comm(), dist::hash_values(params), "the weights");
    opt_whole.zero_grad();
    ((*whole)(X) - Y).square().mean().backward();
    opt_whole.step();
  }
  std::vector<Tensor> ref = whole->parameters();
  for (size_t i = 0; i < params.size(); i++) {
    std::vector<float> got = params[i].to_vector<float>(), want = ref[i].to_vector<float>();
    BOOST_TEST_REQUIRE(got.size() == want.size());
    for (size_t j = 0; j < got.size(); j++) BOOST_TEST(got[j] == want[j], boost::test_tools::tolerance(1e-5f));
  }
  // a rank whose weights drift is caught by the same check
  if (N() > 1) {
    if (R() == 1) params[1].assign(params[1] + 1e-3f).realize();
    BOOST_CHECK_THROW(dist::check_same(comm(), dist::hash_values(params), "the weights"), dist::DistError);
  }
}

BOOST_AUTO_TEST_CASE(local_backend_is_one_rank) {
  auto local = dist::init("local");
  BOOST_TEST(local->size() == 1);
  BOOST_TEST(local->rank() == 0);
  BOOST_TEST(dist::init("local").get() == local.get());
  std::vector<Tensor> ts{Tensor({1.0f, 2.0f})};
  BOOST_TEST(dist::all_reduce_mean(*local, ts)[0].to_vector<float>() == std::vector<float>({1.0f, 2.0f}),
             boost::test_tools::per_element());
  BOOST_CHECK_THROW(dist::init("nccl"), ValueError);
}
