// Three CLANG devices in one process: each its own pool on its own cores; shard and the ring all-reduce
// move data between them, and the summed per-shard gradients equal the gradient of the whole batch.
#define BOOST_TEST_MODULE multi
#include <boost/test/unit_test.hpp>

#include <string>
#include <thread>
#include <vector>

#include "base/error.hpp"
#include "runtime/registry.hpp"
#include "tensor/multi.hpp"
#include "tensor/tensor.hpp"

using namespace tg;

namespace {
const std::vector<std::string> kDevs = {"CLANG:0", "CLANG:1", "CLANG:2"};
// The name a tensor reports: index 0 is the plain name.
std::string name(size_t i) { return i == 0 ? "CLANG" : kDevs[i]; }

std::vector<float> iota(int n, float scale) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int i = 0; i < n; i++) v[static_cast<size_t>(i)] = scale * static_cast<float>(i + 1);
  return v;
}
}  // namespace

BOOST_AUTO_TEST_CASE(devices_are_distinct_with_their_own_cores) {
  std::string d0(tg::runtime::device("CLANG:0").description()),
      d1(tg::runtime::device("CLANG:1").description());
  BOOST_TEST(d0.find("on cores 0-") != std::string::npos);  // "... on cores a-b": each names its own slice
  if (std::thread::hardware_concurrency() >= 2) BOOST_TEST(d0 != d1);
  BOOST_CHECK_THROW(tg::runtime::device("CLANG:3"), DeviceError);
}

BOOST_AUTO_TEST_CASE(shard_splits_or_copies) {
  Tensor x(iota(12, 1.0f), {6, 2});
  std::vector<Tensor> parts = shard(x, kDevs, 0);
  BOOST_REQUIRE(parts.size() == 3u);
  for (size_t i = 0; i < 3; i++) {
    BOOST_TEST(parts[i].device() == name(i));
    std::vector<float> v = parts[i].to_vector<float>(), want = {1, 2, 3, 4};
    for (float& w : want) w += 4.0f * static_cast<float>(i);
    BOOST_TEST(v == want, boost::test_tools::per_element());
  }
  std::vector<Tensor> copies = shard(x, kDevs, std::nullopt);
  BOOST_TEST(copies[2].to_vector<float>() == iota(12, 1.0f), boost::test_tools::per_element());
  BOOST_CHECK_THROW(shard(Tensor(iota(4, 1.0f), {4}), kDevs, 0), ValueError);  // 4 rows over 3 devices
}

BOOST_AUTO_TEST_CASE(ring_all_reduce_sums_on_every_device) {
  for (int numel : {1, 2, 7, 12, 1000}) {  // fewer elements than devices, uneven and even chunks
    std::vector<Tensor> xs;
    for (size_t i = 0; i < 3; i++)
      xs.push_back(Tensor(iota(numel, static_cast<float>(i + 1)), {numel}, {}, kDevs[i]));
    std::vector<Tensor> out = all_reduce_sum(xs);
    std::vector<float> want = iota(numel, 6.0f);  // (1 + 2 + 3) * (k + 1)
    for (size_t i = 0; i < 3; i++) {
      BOOST_TEST(out[i].device() == name(i));
      BOOST_TEST(out[i].to_vector<float>() == want, boost::test_tools::per_element());
    }
  }
  std::vector<Tensor> bad = {Tensor(iota(4, 1.0f), {4}).to("CLANG:0"),
                             Tensor(iota(4, 1.0f), {2, 2}).to("CLANG:1")};
  BOOST_CHECK_THROW(all_reduce_sum(bad), ShapeError);
}

// loss = sum_b sum_j x[b,j] * w[j]^2 -> dloss/dw[j] = 2 w[j] sum_b x[b,j], derived by hand.
BOOST_AUTO_TEST_CASE(data_parallel_gradients_match_the_whole_batch) {
  std::vector<float> xv = iota(12, 0.5f), wv = {1.0f, -2.0f};
  Tensor x(xv, {6, 2});
  std::vector<Tensor> xs = shard(x, kDevs, 0), grads;
  for (size_t i = 0; i < 3; i++) {
    Tensor w = Tensor(wv, {2}).to(kDevs[i]).detach().requires_grad_();
    (xs[i] * w * w).sum().backward();
    grads.push_back(w.grad());
  }
  std::vector<Tensor> summed = all_reduce_sum(grads);
  std::vector<float> want(2, 0.0f);
  for (size_t b = 0; b < 6; b++)
    for (size_t j = 0; j < 2; j++) want[j] += 2 * wv[j] * xv[b * 2 + j];
  for (const Tensor& g : summed)
    BOOST_TEST(g.to_vector<float>() == want, boost::test_tools::tolerance(1e-5f)
                                                 << boost::test_tools::per_element());
}

// A copy of the contiguous first part of a realized buffer (kept by the scheduler as a view of that buffer)
// moves only that part; it used to copy the whole buffer and fail ("4000 bytes do not fit a 1336-byte
// buffer").
BOOST_AUTO_TEST_CASE(copying_a_prefix_view_moves_only_the_prefix) {
  Tensor a = Tensor(iota(1000, 1.0f), {1000}).to("CLANG:0").realize();
  Tensor b = Tensor(iota(1000, 2.0f), {1000}).to("CLANG:1").realize();
  Tensor s = b.split({334, 333, 333})[0] + a.split({334, 333, 333})[0].contiguous().to("CLANG:1");
  std::vector<float> got = s.to_vector<float>();
  BOOST_REQUIRE(got.size() == 334u);
  for (size_t i = 0; i < got.size(); i++) BOOST_TEST(got[i] == 3.0f * static_cast<float>(i + 1));
}
