// Conformance area "smoke": whole tensor programs on the device under test against INTERP: a gemm, a small
// conv net forward and backward, softmax, and one computation realized many times with new inputs
// (JIT-style).
#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

#include "op_check.hpp"

namespace {

using namespace tg;
using namespace tg::conformance::ops;
using tg::conformance::record;
using tg::conformance::record_unsupported;
using tg::conformance::target;
using Ts = std::vector<Tensor>;

const Tol kF32{1e-4, 1e-5, false};  // sums over tens of terms in any order

HostValues plain(DType d, Shape s, uint64_t seed) { return make_values(d, std::move(s), Kind::plain, seed); }

// (2,3,9,9) -> conv 3x3 (4 channels) -> relu -> max_pool 2 -> linear (36 -> 10, weight (in, out)) ->
// cross-entropy.
Tensor convnet_loss(const Ts& x) {
  Tensor h = x[0].conv2d(x[1], x[2]).relu().max_pool2d(2).flatten(1);
  return h.linear(x[3], x[4]).cross_entropy(x[5]);
}

std::vector<HostValues> convnet_inputs() {
  HostValues labels = make_values(dtypes::int32, {2}, Kind::positive, 0);
  labels.i = {3, 7};
  return {plain(dtypes::float32, {2, 3, 9, 9}, 1), plain(dtypes::float32, {4, 3, 3, 3}, 2),
          plain(dtypes::float32, {4}, 3),          plain(dtypes::float32, {36, 10}, 4),
          plain(dtypes::float32, {10}, 5),         labels};
}

}  // namespace

BOOST_AUTO_TEST_SUITE(smoke)

BOOST_AUTO_TEST_CASE(gemm) {
  for (DType d : {dtypes::float32, dtypes::float64})
    check_program(
        std::string("65x33x17/") + std::string(d.name()), "gemm 65x33 @ 33x17",
        {plain(d, {65, 33}, 11), plain(d, {33, 17}, 12)}, [](const Ts& x) { return x[0].matmul(x[1]); },
        d == dtypes::float64 ? Tol{1e-12, 1e-12, false} : kF32);
}

BOOST_AUTO_TEST_CASE(convnet) {
  check_program("forward", "conv net forward (loss)", convnet_inputs(), convnet_loss, kF32);
  check_outputs("backward", "conv net backward", convnet_inputs(),
                [](const Ts& x) {
                  Ts grads = convnet_loss(x).gradient({x[1], x[2], x[3], x[4]});
                  return Ts{grads[0], grads[1], grads[2], grads[3]};
                },
                kF32, {"conv weight grad", "conv bias grad", "linear weight grad", "linear bias grad"});
}

BOOST_AUTO_TEST_CASE(softmax) {
  for (int axis : {-1, 0}) {
    std::string tag = "axis" + std::to_string(axis);
    // Large logits check the max subtraction: exp(90) alone would overflow float32.
    HostValues x = plain(dtypes::float32, {7, 33}, 21);
    for (size_t k = 0; k < x.f.size(); k += 5) x.f[k] *= 45;
    check_program(
        "softmax/" + tag, "softmax", {x}, [axis](const Ts& t) { return t[0].softmax(axis); }, kF32);
    check_program(
        "log_softmax/" + tag, "log_softmax", {x}, [axis](const Ts& t) { return t[0].log_softmax(axis); },
        kF32);
  }
}

// The same graph with new host data 50 times: the device's cached program runs with new buffers each time.
BOOST_AUTO_TEST_CASE(reuse) {
  const int kRuns = 50;
  if (!declared(dtypes::float32)) return record_unsupported("50_runs", "the caps do not declare float");
  if (const std::string* why = tg::conformance::manifest_unsupported("50_runs"))
    return record_unsupported("50_runs", *why);
  int ok = 0;
  std::string first_error;
  for (int run = 0; run < kRuns; run++) {
    std::vector<HostValues> in = {plain(dtypes::float32, {16, 24}, 100 + run),
                                  plain(dtypes::float32, {24, 8}, 7), plain(dtypes::float32, {8}, 200 + run)};
    std::string err;
    try {
      auto fn = [](const Ts& x) { return (x[0].matmul(x[1]) + x[2]).relu().sum(1); };
      Ts ref_in, dut_in;
      for (const HostValues& h : in) {
        ref_in.push_back(upload(h, "INTERP"));
        dut_in.push_back(upload(h, target().name));
      }
      err = compare(fn(dut_in).realize(), fn(ref_in).realize(), kF32);
    } catch (const std::exception& e) {
      err = std::string("threw: ") + e.what();
    }
    if (err.empty()) ok++;
    if (!err.empty() && first_error.empty()) first_error = "run " + std::to_string(run) + ": " + err;
  }
  record("50_runs", ok == kRuns,
         std::to_string(kRuns - ok) + " of " + std::to_string(kRuns) +
             " runs of relu(x @ w + b).sum(1) differ from INTERP; first " + first_error);
}

BOOST_AUTO_TEST_SUITE_END()
