#define BOOST_TEST_MODULE engine_jit
// tg::jit: replayed results against hand-computed and PyTorch values, no scheduling or compiling on
// replay, input checks, and the memory planner of captured intermediates.
#include <boost/test/unit_test.hpp>
#include "common/test_support.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/env.hpp"
#include "base/error.hpp"
#include "engine/jit.hpp"
#include "nn/optim.hpp"
#include "runtime/registry.hpp"
#include "runtime/stats.hpp"
#include "tensor/tensor.hpp"
#include "tg/sdk/graph.hpp"

using namespace tg;
using tg::test::expect_error;
using json = nlohmann::json;

namespace {

const json& reference() {
  static const json j = [] {
    std::ifstream f(TG_JIT_REFERENCE);
    if (!f) throw std::runtime_error("cannot open the reference vectors " TG_JIT_REFERENCE);
    return json::parse(f);
  }();
  return j;
}

Tensor tensor_of(const json& t) {
  return Tensor(t.at("data").get<std::vector<float>>(), t.at("shape").get<Shape>());
}

void check_close(const std::vector<float>& got, const std::vector<double>& want, double tol) {
  BOOST_REQUIRE_EQUAL(got.size(), want.size());
  for (size_t i = 0; i < got.size(); i++)
    BOOST_CHECK_MESSAGE(std::abs(got[i] - want[i]) <= tol * std::max(1.0, std::abs(want[i])),
                        "element " << i << ": got " << got[i] << ", want " << want[i]);
}

// Deterministic inputs that differ per call: v[i] = sin(seed * 7 + i) * 2.
std::vector<float> data(int seed, size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; i++) v[i] = static_cast<float>(std::sin(seed * 7.0 + static_cast<double>(i)) * 2);
  return v;
}

// f(x, y) = ((x*2+1).relu()*y).sum(1), by hand.
std::vector<double> f_by_hand(const std::vector<float>& x, const std::vector<float>& y, size_t rows,
                              size_t cols) {
  std::vector<double> out(rows, 0.0);
  for (size_t r = 0; r < rows; r++)
    for (size_t c = 0; c < cols; c++) out[r] += std::max(0.0f, x[r * cols + c] * 2 + 1) * y[r * cols + c];
  return out;
}

Jit::Fn f_xy(int* calls = nullptr) {
  return [calls](std::span<const Tensor> in) -> std::vector<Tensor> {
    if (calls) ++*calls;
    return {((in[0] * 2 + 1).relu() * in[1]).sum(1)};
  };
}

}  // namespace

BOOST_AUTO_TEST_CASE(replay_gives_new_results_without_calling_fn) {
  int calls = 0;
  Jit f = jit(f_xy(&calls));
  for (int step = 0; step < 5; step++) {
    std::vector<float> x = data(step, 12), y = data(step + 100, 12);
    std::vector<Tensor> out = f({Tensor(x, {4, 3}), Tensor(y, {4, 3})});
    BOOST_REQUIRE_EQUAL(out.size(), 1u);
    BOOST_TEST_CONTEXT("call " << step + 1) {
      check_close(out[0].to_vector<float>(), f_by_hand(x, y, 4, 3), 1e-5);
    }
  }
  BOOST_CHECK_EQUAL(calls, 2);  // warm-up and capture; the rest were replays
  BOOST_CHECK_EQUAL(f.calls(), 5u);
  BOOST_CHECK_EQUAL(f.captures(), 1u);
  BOOST_CHECK_EQUAL(f.info().launches, 1u);  // one fused kernel
}

BOOST_AUTO_TEST_CASE(without_warmup_the_first_call_captures) {
  int calls = 0;
  Jit f = jit(f_xy(&calls), {.warmup = false});
  for (int step = 0; step < 4; step++) {
    std::vector<float> x = data(step, 12), y = data(step + 100, 12);
    check_close(f({Tensor(x, {4, 3}), Tensor(y, {4, 3})})[0].to_vector<float>(), f_by_hand(x, y, 4, 3), 1e-5);
    BOOST_CHECK_EQUAL(f.captures(), 1u);
  }
  BOOST_CHECK_EQUAL(calls, 1);  // the capture; the rest were replays
}

// A device that records launch lists (INTERP does, as the reference for CUDA graphs) replays through one
// graph, updated with each call's inputs; JIT=2 and devices without graphs launch one by one. The results
// are the hand-computed ones either way.
BOOST_AUTO_TEST_CASE(replays_through_a_graph_where_the_device_records_one) {
  Jit f = jit([](std::span<const Tensor> in) -> std::vector<Tensor> {
    Tensor h = (in[0] * 2 + 1).relu();
    return {(h * in[1]).sum(1), h.sum()};  // two kernels, both reading an input
  });
  for (int step = 0; step < 4; step++) {
    std::vector<float> x = data(step, 12), y = data(step + 50, 12);
    std::vector<Tensor> out = f({Tensor(x, {4, 3}), Tensor(y, {4, 3})});
    check_close(out[0].to_vector<float>(), f_by_hand(x, y, 4, 3), 1e-5);
  }
  const sdk::Device& dev = tg::runtime::default_device().plugin();
  bool offers = const_cast<sdk::Device&>(dev).extension(sdk::kLaunchGraphExtension) != nullptr;
  BOOST_TEST(f.info().graph == (offers && env::JIT.value() < 2));
  if (tg::runtime::default_device().name() == "INTERP") BOOST_TEST(f.info().graph == (env::JIT.value() < 2));
}

BOOST_AUTO_TEST_CASE(replay_does_not_schedule_or_compile) {
  Jit f = jit(f_xy());
  for (int step = 0; step < 2; step++)
    f({Tensor(data(step, 12), {4, 3}), Tensor(data(step + 1, 12), {4, 3})});
  // inputs are realized before the stats are read: creating them is not the JIT's work
  Tensor x = Tensor(data(5, 12), {4, 3}).realize(), y = Tensor(data(6, 12), {4, 3}).realize();
  runtime::RuntimeStats before = runtime::runtime_stats();
  std::vector<Tensor> out = f({x, y});
  runtime::RuntimeStats after = runtime::runtime_stats();
  BOOST_CHECK_EQUAL(after.scheduled, before.scheduled);
  BOOST_CHECK_EQUAL(after.compiled, before.compiled);
  BOOST_CHECK_EQUAL(after.disk_hits, before.disk_hits);
  BOOST_CHECK_EQUAL(after.memory_hits, before.memory_hits);
  BOOST_CHECK_EQUAL(after.launched, before.launched + 1);
  check_close(out[0].to_vector<float>(), f_by_hand(data(5, 12), data(6, 12), 4, 3), 1e-5);
}

// The reference's Linear-ReLU-Linear net at its initial state, trained with cross-entropy under the JIT.
constexpr const char* kParamNames[] = {"0.weight", "0.bias", "2.weight", "2.bias"};
struct Mlp {
  std::vector<Tensor> params;
  Mlp() {
    for (const char* n : kParamNames)
      params.push_back(tensor_of(reference()["state"][n]).contiguous().realize().requires_grad_());
  }
  // One optimizer step per call; *calls counts the calls that ran the function.
  Jit step(nn::optim::Optimizer& opt, int* calls = nullptr) const {
    return jit([p = params, &opt, calls](std::span<const Tensor> in) -> std::vector<Tensor> {
      if (calls) ++*calls;
      Tensor loss =
          in[0].linear(p[0].transpose(), p[1]).relu().linear(p[2].transpose(), p[3]).cross_entropy(in[1]);
      opt.zero_grad();
      loss.backward();
      std::vector<Tensor> todo = opt.schedule_step();
      todo.push_back(loss);
      Tensor::realize_all(todo);
      opt.zero_grad();
      return {loss};
    });
  }
  void check_final(const json& final, const std::string& context) const {
    for (size_t i = 0; i < params.size(); i++) {
      BOOST_TEST_CONTEXT(context << " final " << kParamNames[i]) {
        check_close(params[i].to_vector<float>(), final[kParamNames[i]]["data"].get<std::vector<double>>(),
                    1e-4);
      }
    }
  }
};

// Five optimizer steps on a new batch each, all inside the JIT.
void train_case(const char* name) {
  const json& ref = reference();
  Mlp net;
  std::unique_ptr<nn::optim::Optimizer> opt;
  if (std::string(name) == "adam")
    opt = std::make_unique<nn::optim::Adam>(net.params, 0.01);
  else
    opt = std::make_unique<nn::optim::SGD>(net.params, 0.1, 0.9);
  Jit step = net.step(*opt);
  const json& c = ref["cases"][name];
  runtime::RuntimeStats after_capture;
  for (size_t s = 0; s < 5; s++) {
    Tensor x = tensor_of(ref["x"][s]), y(ref["y"][s].get<std::vector<int32_t>>());
    float loss = step({x, y})[0].item<float>();
    BOOST_TEST_CONTEXT(name << " step " << s + 1) {
      BOOST_CHECK_CLOSE(loss, c["losses"][s].get<double>(), 1e-2);  // percent
    }
    if (s == 1) after_capture = runtime::runtime_stats();
  }
  BOOST_CHECK_EQUAL(step.captures(), 1u);
  BOOST_CHECK_EQUAL(runtime::runtime_stats().compiled, after_capture.compiled);
  net.check_final(c["final"], name);
}

BOOST_AUTO_TEST_CASE(mlp_training_sgd_matches_torch) { train_case("sgd_momentum"); }
BOOST_AUTO_TEST_CASE(mlp_training_adam_matches_torch) { train_case("adam"); }

BOOST_AUTO_TEST_CASE(lr_tensor_stays_bound) {
  // a parameter and the lr tensor are not inputs: writes to them between calls are seen by replays
  Tensor p = Tensor(std::vector<float>{1, 2, 3}).contiguous().realize();
  Tensor lr = Tensor(std::vector<float>{0.5f}, {1}).contiguous().realize();
  Jit step = jit([&](std::span<const Tensor> in) -> std::vector<Tensor> {
    p.assign(p - lr * in[0]).realize();
    return {p * 1};
  });
  std::vector<float> want{1, 2, 3};
  for (int s = 0; s < 5; s++) {
    if (s == 3) lr.assign(Tensor(std::vector<float>{2.0f}, {1})).realize();
    float r = s == 3 || s == 4 ? 2.0f : 0.5f;
    std::vector<float> g = data(s, 3);
    for (size_t i = 0; i < 3; i++) want[i] -= r * g[i];
    std::vector<Tensor> out = step({Tensor(g)});
    check_close(p.to_vector<float>(), {want.begin(), want.end()}, 1e-5);
    check_close(out[0].to_vector<float>(), {want.begin(), want.end()}, 1e-5);
  }
}

BOOST_AUTO_TEST_CASE(host_views_keep_their_values_over_replays) {
  // a replay writes the output and the parameter in place: memory a host view shows moves away first
  Tensor p = Tensor(std::vector<float>{0, 0}).contiguous().realize();
  Jit step = jit([&](std::span<const Tensor> in) -> std::vector<Tensor> {
    p.assign(p + in[0]).realize();
    return {(p * 10).contiguous()};
  });
  std::vector<engine::HostView> outs, params;
  for (int s = 1; s <= 5; s++) {
    std::vector<Tensor> out = step({Tensor(std::vector<float>{1, 2})});
    outs.push_back(out[0].host_view()), params.push_back(p.host_view());
    check_close(p.to_vector<float>(), {1.0 * s, 2.0 * s}, 0);
  }
  if (outs[0].bytes.data() == nullptr) return;  // this device does not map its buffers to host memory
  auto first = [](const engine::HostView& v) {
    float f;
    std::memcpy(&f, v.bytes.data(), sizeof f);
    return f;
  };
  for (int s = 1; s <= 5; s++) {
    BOOST_TEST(first(outs[static_cast<size_t>(s - 1)]) == 10.0f * static_cast<float>(s));
    BOOST_TEST(first(params[static_cast<size_t>(s - 1)]) == static_cast<float>(s));
  }
  // with the views gone, replays go on in the memory they moved to
  outs.clear(), params.clear();
  step({Tensor(std::vector<float>{1, 2})});
  check_close(p.to_vector<float>(), {6, 12}, 0);
}

BOOST_AUTO_TEST_CASE(an_input_written_in_place_leaves_read_only_memory_alone) {
  Jit inc = jit([](std::span<const Tensor> in) -> std::vector<Tensor> {
    Tensor x = in[0];
    x.assign(x + 1).realize();
    return {(x * 2).contiguous()};
  });
  for (int s = 0; s < 5; s++) {
    alignas(64) float mem[2] = {static_cast<float>(s), 10};
    Tensor x = Tensor::from_blob(mem, {2}, dtypes::float32, {.read_only = true});
    std::vector<Tensor> out = inc({x});
    check_close(x.to_vector<float>(), {s + 1.0, 11}, 0);
    check_close(out[0].to_vector<float>(), {2 * (s + 1.0), 22}, 0);
    BOOST_TEST(mem[0] == static_cast<float>(s));
    BOOST_TEST(mem[1] == 10.0f);
  }
}

BOOST_AUTO_TEST_CASE(an_input_returned_as_output_is_the_new_input) {
  Jit f = jit([](std::span<const Tensor> in) -> std::vector<Tensor> { return {in[0], in[0] * 3}; });
  for (int s = 0; s < 4; s++) {
    std::vector<float> x = data(s, 5);
    std::vector<Tensor> out = f({Tensor(x)});
    std::vector<double> same(x.begin(), x.end()), tripled;
    for (float v : x) tripled.push_back(v * 3.0);
    check_close(out[0].to_vector<float>(), same, 0);
    check_close(out[1].to_vector<float>(), tripled, 1e-6);
  }
}

BOOST_AUTO_TEST_CASE(a_jit_inside_a_capture_is_recorded_by_it) {
  Jit inner = jit(f_xy());
  Jit outer = jit([&](std::span<const Tensor> in) -> std::vector<Tensor> {
    Tensor s = inner({in[0], in[1]})[0];
    return {(s + 1).contiguous()};
  });
  for (int step = 0; step < 4; step++) {
    std::vector<float> x = data(step, 6), y = data(step + 50, 6);
    std::vector<double> want = f_by_hand(x, y, 2, 3);
    for (double& w : want) w += 1;
    check_close(outer({Tensor(x, {2, 3}), Tensor(y, {2, 3})})[0].to_vector<float>(), want, 1e-5);
  }
  BOOST_CHECK_EQUAL(outer.info().launches, 2u);
}

BOOST_AUTO_TEST_CASE(input_checks) {
  Jit f = jit(f_xy());
  Tensor x = Tensor(data(1, 12), {4, 3}), y = Tensor(data(2, 12), {4, 3});
  f({x, y});
  f({x, y});  // captured with (4, 3) float32
  expect_error<ShapeError>(
      [&] {
        f({Tensor(data(1, 15), {5, 3}), y});
      },
      "[jit] input 0: shape (5, 3) differs from the captured (4, 3)");
  expect_error<DTypeError>(
      [&] {
        f({x, Tensor(std::vector<int32_t>(12, 1), {4, 3})});
      },
      "[jit] input 1: dtype int differs from the captured float");
  expect_error<ValueError>([&] { f({x}); },
                           "[jit] called with 1 input, but the function was called with 2 before");
  expect_error<ValueError>([&] { f({x, Tensor()}); }, "[jit] input 1 is undefined");
  expect_error<ValueError>(
      [&] {
        f({x, x});
      },
      "[jit] inputs 0 and 1 are the same buffer; pass distinct tensors");
  // the capture still works after the rejected calls
  check_close(f({x, y})[0].to_vector<float>(), f_by_hand(data(1, 12), data(2, 12), 4, 3), 1e-5);
}

BOOST_AUTO_TEST_CASE(function_errors) {
  Jit nothing = jit([](std::span<const Tensor> in) -> std::vector<Tensor> { return {in[0]}; });
  Tensor x = Tensor(data(1, 4)).realize();
  nothing({x});
  expect_error<ValueError>([&] { nothing({x}); },
                           "[jit] the function realized nothing: there are no kernels to capture");
  Jit reads = jit([](std::span<const Tensor> in) -> std::vector<Tensor> {
    float s = (in[0] * 2).sum().item<float>();
    return {in[0] * s};
  });
  reads({x});
  try {
    reads({x});
    BOOST_ERROR("expected an error for a host read");
  } catch (const ValueError& e) {
    BOOST_CHECK(std::string(e.what()).starts_with("[jit] the function read device data on the host"));
  }
}

BOOST_AUTO_TEST_CASE(jit_0_runs_the_function_every_call) {
  env::Scoped off(env::JIT, 0);
  int calls = 0;
  Jit f = jit(f_xy(&calls));
  for (int s = 0; s < 4; s++) {
    std::vector<float> x = data(s, 6), y = data(s + 9, 6);
    check_close(f({Tensor(x, {2, 3}), Tensor(y, {2, 3})})[0].to_vector<float>(), f_by_hand(x, y, 2, 3), 1e-5);
  }
  BOOST_CHECK_EQUAL(calls, 4);
  BOOST_CHECK_EQUAL(f.captures(), 0u);
}

BOOST_AUTO_TEST_CASE(one_capture_per_signature_when_allowed) {
  int calls = 0;
  Jit f = jit(f_xy(&calls), {.max_captures = 2});
  for (int s = 0; s < 6; s++) {
    size_t rows = s % 2 ? 5 : 4;  // shapes alternate: (4, 3) warm-up, (5, 3) captured, (4, 3) captured
    std::vector<float> x = data(s, rows * 3), y = data(s + 3, rows * 3);
    auto r = static_cast<int64_t>(rows);
    check_close(f({Tensor(x, {r, 3}), Tensor(y, {r, 3})})[0].to_vector<float>(), f_by_hand(x, y, rows, 3),
                1e-5);
  }
  BOOST_CHECK_EQUAL(calls, 3);
  BOOST_CHECK_EQUAL(f.captures(), 2u);
  expect_error<ShapeError>(
      [&] {
        f({Tensor(data(0, 18), {6, 3}), Tensor(data(1, 18), {6, 3})});
      },
      "[jit] input 0: shape (6, 3) differs from the captured (5, 3)");
}

// x -> x+1 -> *2 -> -3 -> *x -> +0.5 -> sum: five intermediates of n floats, each live for two kernels.
std::vector<double> chain_by_hand(const std::vector<float>& x) {
  double s = 0;
  for (float v : x) s += static_cast<double>((((v + 1) * 2 - 3) * v) + 0.5f);
  return {s};
}

BOOST_AUTO_TEST_CASE(memory_planner_shares_intermediates) {
  const int64_t n = 1000;
  Tensor kept;  // set only by the second function: a buffer a live tensor holds is never shared
  auto chain = [&](bool keep) {
    return [&kept, keep](std::span<const Tensor> in) -> std::vector<Tensor> {
      Tensor a = (in[0] + 1).contiguous(), b = (a * 2).contiguous(), c = (b - 3).contiguous();
      if (keep) kept = c.realize();  // c gets a buffer of its own, which kept holds after the call
      Tensor d = (c * in[0]).contiguous(), e = (d + 0.5f).contiguous();
      return {e.sum()};
    };
  };
  Jit f = jit(chain(false)), g = jit(chain(true));
  for (int s = 0; s < 4; s++) {
    std::vector<float> x = data(s, n);
    check_close(f({Tensor(x)})[0].to_vector<float>(), chain_by_hand(x), 1e-4);
    check_close(g({Tensor(x)})[0].to_vector<float>(), chain_by_hand(x), 1e-4);
    if (s >= 1) {  // kept is c of the latest call, replays included
      std::vector<double> want;
      for (float v : x) want.push_back((v + 1) * 2 - 3);
      check_close(kept.to_vector<float>(), want, 1e-5);
    }
  }
  engine::JitInfo fi = f.info(), gi = g.info();
  BOOST_CHECK_EQUAL(fi.launches, 6u);
  // f's one realize already put a..e in two buffers by turns (the eager realize plans its intermediates)
  BOOST_CHECK_EQUAL(fi.intermediates, 2u);
  BOOST_CHECK_EQUAL(fi.intermediate_bytes, 2 * n * 4);
  BOOST_CHECK_EQUAL(fi.planned_bytes, 2 * n * 4);
  BOOST_CHECK_EQUAL(fi.planned_buffers, 2u);
  // g realizes twice: a, b in two buffers, c held by `kept`, then d, e in two more. Across the two
  // realizes only the JIT's planner shares: 4 buffers -> 2.
  BOOST_CHECK_EQUAL(gi.intermediates, 4u);
  BOOST_CHECK_EQUAL(gi.intermediate_bytes, 4 * n * 4);
  BOOST_CHECK_EQUAL(gi.planned_bytes, 2 * n * 4);
  BOOST_CHECK_EQUAL(gi.planned_buffers, 2u);
}

BOOST_AUTO_TEST_CASE(replays_run_in_the_captured_buffers) {
  // The capture's realize already placed a..d in two buffers by turns; the JIT keeps those for its
  // replays rather than allocating its plan anew, so capturing and replaying take no more device memory
  // than the first call did.
  const int64_t n = int64_t{1} << 16;
  Jit f = jit([](std::span<const Tensor> in) -> std::vector<Tensor> {
    Tensor a = (in[0] + 1).contiguous(), b = (a * 2).contiguous(), c = (b - 3).contiguous();
    Tensor d = (c * in[0]).contiguous();
    return {d.sum()};
  });
  std::vector<Tensor> xs;
  for (int s = 0; s < 4; s++) xs.push_back(Tensor(data(s, n)).realize());
  runtime::LruAllocator& alloc = runtime::device(xs[0].device()).allocator();
  std::vector<size_t> held;
  for (int s = 0; s < 4; s++) {
    std::vector<float> x = xs[static_cast<size_t>(s)].to_vector<float>();
    double want = 0;
    for (float v : x) want += static_cast<double>(((v + 1) * 2 - 3) * v);
    check_close(f({xs[static_cast<size_t>(s)]})[0].to_vector<float>(), {want}, 1e-4);
    held.push_back(alloc.in_use_bytes() + alloc.cached_bytes());
  }
  BOOST_CHECK_EQUAL(f.info().planned_buffers, 2u);
  BOOST_CHECK_EQUAL(held[3], held[0]);
}

// ---- symbolic sizes: one capture serves every value of a variable ----

// x @ w, its column sums and the column means of x, by hand (x rows x 6, w 6 x 4).
struct BatchResults {
  std::vector<double> y, col_sums, x_means;
};
BatchResults batch_by_hand(const std::vector<float>& x, const std::vector<float>& w, size_t rows) {
  BatchResults r{std::vector<double>(rows * 4, 0.0), std::vector<double>(4, 0.0),
                 std::vector<double>(6, 0.0)};
  for (size_t i = 0; i < rows; i++)
    for (size_t j = 0; j < 4; j++) {
      for (size_t k = 0; k < 6; k++) r.y[i * 4 + j] += static_cast<double>(x[i * 6 + k]) * w[k * 4 + j];
      r.col_sums[j] += r.y[i * 4 + j];
    }
  for (size_t i = 0; i < rows; i++)
    for (size_t k = 0; k < 6; k++) r.x_means[k] += x[i * 6 + k] / static_cast<double>(rows);
  return r;
}

BOOST_AUTO_TEST_CASE(a_variable_batch_replays_one_capture_at_every_size) {
  Variable n("n", 1, 16);
  std::vector<float> wv = data(42, 24);
  Tensor w = Tensor(wv, {6, 4}).contiguous().realize();
  int calls = 0;
  Jit f = jit([&](std::span<const Tensor> in) -> std::vector<Tensor> {
    calls++;
    Tensor y = in[0].matmul(w);  // (n, 4)
    return {y, y.sum(0), in[0].mean(0)};
  });
  runtime::RuntimeStats after_capture;
  const int64_t sizes[] = {3, 5, 2, 7, 16, 1};
  for (size_t s = 0; s < std::size(sizes); s++) {
    int64_t b = sizes[s];
    std::vector<float> x = data(static_cast<int>(s), static_cast<size_t>(b) * 6);
    std::vector<Tensor> out = f({Tensor(x, {b, 6}).reshape({n.bind(b), 6})});
    BatchResults want = batch_by_hand(x, wv, static_cast<size_t>(b));
    BOOST_TEST_CONTEXT("batch " << b) {
      BOOST_CHECK_EQUAL(out[0].shape()[0].str(), "n");
      BOOST_CHECK_EQUAL(out[0].shape()[0].bound(), b);
      check_close(out[0].to_vector<float>(), want.y, 1e-5);
      check_close(out[1].to_vector<float>(), want.col_sums, 1e-5);
      check_close(out[2].to_vector<float>(), want.x_means, 1e-5);
    }
    if (s == 1) after_capture = runtime::runtime_stats();
  }
  BOOST_CHECK_EQUAL(calls, 2);  // warm-up at 3, capture at 5; 2, 7, 16 and 1 are replays
  BOOST_CHECK_EQUAL(f.captures(), 1u);
  BOOST_CHECK_EQUAL(runtime::runtime_stats().scheduled, after_capture.scheduled);
  BOOST_CHECK_EQUAL(runtime::runtime_stats().compiled, after_capture.compiled);
}

// One attention read of a KV-cache style buffer: q against rows 0..pos of the cache, softmax, weighted sum.
std::vector<double> attend_by_hand(const std::vector<float>& cache, const std::vector<float>& q, size_t pos) {
  std::vector<double> score(pos + 1, 0.0), out(4, 0.0);
  for (size_t j = 0; j <= pos; j++)
    for (size_t k = 0; k < 4; k++) score[j] += static_cast<double>(cache[j * 4 + k]) * q[k];
  double top = *std::max_element(score.begin(), score.end()), total = 0;
  for (double& s : score) total += s = std::exp(s - top);
  for (size_t j = 0; j <= pos; j++)
    for (size_t k = 0; k < 4; k++) out[k] += score[j] / total * cache[j * 4 + k];
  return out;
}

// A KV-cache step: the new key is written at row pos of a fixed cache, then q attends over rows 0..pos.
BOOST_AUTO_TEST_CASE(a_cache_is_written_and_read_at_a_variable_position) {
  Variable pos("pos", 0, 15);
  std::vector<float> host(64, 0.0f);
  Tensor cache = Tensor::zeros({16, 4}).contiguous().realize();
  Jit attend = jit([&](std::span<const Tensor> in) -> std::vector<Tensor> {
    sint p = in[2].as_size();
    cache.shrink({{p, p + 1}, {0, 4}}).assign(in[1].reshape({1, 4})).realize();
    Tensor keys = cache.shrink({{0, p + 1}, {0, 4}});                // (pos+1, 4)
    Tensor weights = keys.matmul(in[0].reshape({4, 1})).softmax(0);  // (pos+1, 1)
    return {(weights * keys).sum(0)};
  });
  runtime::RuntimeStats after_capture;
  for (int64_t p = 0; p < 16; p++) {
    std::vector<float> q = data(static_cast<int>(p) + 20, 4), k = data(static_cast<int>(p) + 40, 4);
    std::copy(k.begin(), k.end(), host.begin() + p * 4);
    Tensor out = attend({Tensor(q), Tensor(k), Tensor::from_size(pos.bind(p))})[0];
    BOOST_TEST_CONTEXT("pos " << p) {
      check_close(out.to_vector<float>(), attend_by_hand(host, q, static_cast<size_t>(p)), 1e-5);
    }
    if (p == 1) after_capture = runtime::runtime_stats();
  }
  std::vector<double> all(host.begin(), host.end());
  check_close(cache.to_vector<float>(), all, 0);
  BOOST_CHECK_EQUAL(attend.captures(), 1u);
  BOOST_CHECK_EQUAL(runtime::runtime_stats().scheduled, after_capture.scheduled);
  BOOST_CHECK_EQUAL(runtime::runtime_stats().compiled, after_capture.compiled);
}

BOOST_AUTO_TEST_CASE(variable_errors) {
  expect_error<ValueError>([] { Variable("1x", 0, 3); },
                           "[Variable] name '1x' is not an identifier (letters, digits, _)");
  expect_error<ValueError>([] { Variable("n", 5, 2); },
                           "[Variable] n: range [5, 2] is not a range of sizes (0 <= min <= max)");
  Variable n("n", 1, 16);
  expect_error<ValueError>([&] { n.bind(17); }, "[Variable] n = 17 is outside its range [1, 16]");
  expect_error<ShapeError>(
      [&] {
        Tensor::zeros({n.bind(3), 2}).reshape({3, 3});
      },
      "[reshape] cannot reshape (n,2) to (3,3)");

  Jit f = jit([](std::span<const Tensor> in) -> std::vector<Tensor> { return {in[0] + in[1]}; });
  Tensor a = Tensor(data(1, 6), {3, 2}).reshape({n.bind(3), 2}), b = Tensor(data(2, 8), {4, 2});
  expect_error<ValueError>(
      [&] {
        f({a, b.reshape({n.bind(4), 2})});
      },
      "[jit] variable n is bound to 3 in input 0 and to 4 in input 1");
  f({a, Tensor(data(3, 6), {3, 2}).reshape({n.bind(3), 2})});
  f({a, Tensor(data(3, 6), {3, 2}).reshape({n.bind(3), 2})});  // captured with (n, 2)
  expect_error<ShapeError>(
      [&] {
        f({Tensor(data(1, 6), {3, 2}), Tensor(data(3, 6), {3, 2})});
      },
      "[jit] input 0: shape (3, 2) differs from the captured (n, 2)");

  // a variable bound outside the function changes nothing on a replay: the capture refuses it
  sint outside = Variable("m", 1, 8).bind(2);
  Jit g = jit([&](std::span<const Tensor> in) -> std::vector<Tensor> {
    return {in[0] * Tensor::from_size(outside, dtypes::float32)};
  });
  Tensor x = Tensor(data(4, 3)).realize();
  g({x});
  try {
    g({x});
    BOOST_ERROR("expected an error for a variable no input binds");
  } catch (const ValueError& e) {
    BOOST_CHECK_MESSAGE(
        std::string(e.what()).find("uses variable m, which no input binds") != std::string::npos, e.what());
  }
}

// The Linear-ReLU-Linear net trained with SGD on batches of 8, 5, 8, 3, 7 and 1 rows under one capture
// (the batch is a variable), against PyTorch.
BOOST_AUTO_TEST_CASE(a_training_step_replays_at_every_batch_size) {
  Mlp net;
  nn::optim::SGD opt(net.params, 0.1, 0.9);
  int calls = 0;
  Jit step = net.step(opt, &calls);
  Variable n("n", 1, 8);
  const json& c = reference()["varying_batch"];
  runtime::RuntimeStats after_capture;
  for (size_t s = 0; s < c["x"].size(); s++) {
    Tensor x = tensor_of(c["x"][s]);
    std::vector<int32_t> labels = c["y"][s].get<std::vector<int32_t>>();
    sint b = n.bind(static_cast<int64_t>(labels.size()));
    float loss = step({x.reshape({b, 5}), Tensor(labels).reshape({b})})[0].item<float>();
    BOOST_TEST_CONTEXT("step " << s + 1 << ", batch " << labels.size()) {
      BOOST_CHECK_CLOSE(loss, c["losses"][s].get<double>(), 1e-2);  // percent
    }
    if (s == 1) after_capture = runtime::runtime_stats();
  }
  BOOST_CHECK_EQUAL(calls, 2);
  BOOST_CHECK_EQUAL(step.captures(), 1u);
  BOOST_CHECK_EQUAL(runtime::runtime_stats().compiled, after_capture.compiled);
  net.check_final(c["final"], "varying batch");
}
