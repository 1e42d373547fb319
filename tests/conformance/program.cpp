// Conformance area "program": launching loaded kernels: an empty kernel, buffers plus int values, many
// workgroups, one program launched thousands of times, and the run time a waited launch reports.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "conformance.hpp"
#include "kernels.hpp"

namespace {

using namespace tg::conformance;
using tg::sdk::Handle;

// Launches with vals (in the kernel's DEFINE_VAR order) and waits; the status message, empty when ok.
std::string launch(Loaded& l, std::vector<Handle> bufs, std::vector<int64_t> vals = {}, double* seconds = nullptr) {
  tg::sdk::Status s = l.program->launch(bufs, vals, l.k.prog.launch_dims(vals), true, seconds);
  return s.ok() ? "" : fmt::format("launch of {}: {}", l.k.prog.name, s.message());
}

// Index of the first value differing from expect(i), or -1.
template <typename T, typename F>
int64_t first_wrong(const std::vector<T>& v, F expect) {
  for (size_t i = 0; i < v.size(); i++)
    if (v[i] != expect(i)) return static_cast<int64_t>(i);
  return -1;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(program)

BOOST_AUTO_TEST_CASE(empty_kernel) {
  Loaded l = compile_and_load(tg::UOp::sink({}), "conf_empty");
  std::string err = launch(l, {});
  record("launch", err.empty(), err);
  tg::sdk::Status s = device().plugin().synchronize();
  record("synchronize", s.ok(), s.message());
}

BOOST_AUTO_TEST_CASE(buffers_and_int_values) {
  constexpr int64_t n = 1000;
  Loaded l = compile_and_load(scale_add_var_ast(n), "conf_scale_add");
  BOOST_REQUIRE_EQUAL(l.k.prog.vars.size(), 1u);
  RawBuffer out(n * 4), in(n * 4);
  std::vector<float> x(n);
  for (int64_t i = 0; i < n; i++) x[i] = static_cast<float>(i) * 0.5f;
  in.write(bytes_of(x));
  for (int64_t v : {7, 11}) {
    std::string err = launch(l, {out.handle(), in.handle()}, {v});
    if (!err.empty()) {
      record(fmt::format("v_{}", v), false, err);
      continue;
    }
    std::vector<float> got = values_of<float>(out.read());
    int64_t bad = first_wrong(got, [&](size_t i) { return static_cast<float>(i) + static_cast<float>(v); });
    record(fmt::format("v_{}", v), bad < 0,
           fmt::format("out[i] = in[i]*2 + v with v={}: out[{}] = {}, expected {}", v, bad,
                       bad < 0 ? 0.0f : got[bad], static_cast<float>(bad) + static_cast<float>(v)));
  }
}

BOOST_AUTO_TEST_CASE(many_workgroups) {
  constexpr int64_t n = int64_t{1} << 20;
  Loaded l = compile_and_load(add_one_ast(n), "conf_many");
  tg::sdk::LaunchDims d = l.k.prog.launch_dims({});
  BOOST_TEST_MESSAGE(fmt::format("{} elements as global ({},{},{}) local ({},{},{})", n, d.global[0], d.global[1],
                                 d.global[2], d.local[0], d.local[1], d.local[2]));
  RawBuffer out(n * 4), in(n * 4);
  std::vector<float> x(n);
  for (int64_t i = 0; i < n; i++) x[i] = static_cast<float>(i % 4096);
  in.write(bytes_of(x));
  std::string err = launch(l, {out.handle(), in.handle()});
  if (!err.empty()) {
    record("values", false, err);
    return;
  }
  std::vector<float> got = values_of<float>(out.read());
  int64_t bad = first_wrong(got, [&](size_t i) { return static_cast<float>(i % 4096) + 1.0f; });
  record("values", bad < 0, fmt::format("out = in + 1 over {} elements: element {} is wrong", n, bad));
}

BOOST_AUTO_TEST_CASE(reuse_thousands_of_times) {
  constexpr int64_t n = 64;
  constexpr int launches = 2000;
  Loaded l = compile_and_load(increment_ast(n), "conf_increment");
  RawBuffer buf(n * 4);
  buf.write(bytes_of(std::vector<int32_t>(n, 0)));
  for (int i = 0; i < launches; i++) {
    std::string err = launch(l, {buf.handle()});
    if (!err.empty()) {
      record("launches", false, fmt::format("launch {}: {}", i, err));
      return;
    }
  }
  record("launches", true);
  std::vector<int32_t> got = values_of<int32_t>(buf.read());
  int64_t bad = first_wrong(got, [](size_t) { return launches; });
  record("values", bad < 0, fmt::format("after {} launches of buf += 1, buf[{}] = {}", launches, bad,
                                        bad < 0 ? 0 : got[bad]));
}

BOOST_AUTO_TEST_CASE(timing) {
  constexpr int64_t n = int64_t{1} << 16;
  Loaded l = compile_and_load(add_one_ast(n), "conf_timed");
  RawBuffer out(n * 4), in(n * 4);
  in.write(bytes_of(std::vector<float>(n, 2.0f)));
  double seconds = -1;
  std::string err = launch(l, {out.handle(), in.handle()}, {}, &seconds);
  record("launch", err.empty(), err);
  record("positive_seconds", err.empty() && std::isfinite(seconds) && seconds > 0 && seconds < 60,
         fmt::format("launch(wait=true) reported {} s", seconds));
}

BOOST_AUTO_TEST_SUITE_END()
