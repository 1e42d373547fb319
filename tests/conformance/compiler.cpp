// Conformance area "compiler": a trivial kernel compiles and loads, invalid source is a compile error with
// the log, the cache key is stable and specific, the core's program caches hit, and output is deterministic.
#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

#include <fmt/format.h>

#include "base/error.hpp"
#include "conformance.hpp"
#include "kernels.hpp"
#include "runtime/disk_cache.hpp"
#include "runtime/stats.hpp"
#include "tensor/tensor.hpp"

namespace {

using namespace tg::conformance;
using tg::sdk::Code;

// No dialect has a program that starts like this.
constexpr std::string_view kInvalidSource = "@@ tg-conformance: this is not a program }}} ((( #! \x01\n";

}  // namespace

BOOST_AUTO_TEST_SUITE(compiler)

BOOST_AUTO_TEST_CASE(trivial_kernel) {
  Rendered k = render(add_one_ast(16), "conf_trivial");
  record("rendered", !k.source.empty(), "the renderer produced no source");
  tg::sdk::Blob bin;
  tg::sdk::Status s = device().compiler().compile(k.source, bin);
  record("compiles", s.ok() && !bin.empty(),
         s.ok() ? "compile succeeded with an empty binary" : fmt::format("{}\n{}", s.message(), k.source));
  if (!s.ok()) return;
  if (compile_only()) return record_unsupported("loads", "compile-only: nothing is loaded");
  try {
    auto program = device().load(k.prog.name, bin.bytes());
    record("loads", program != nullptr, "load returned no program");
  } catch (const std::exception& e) {
    record("loads", false, e.what());
  }
}

BOOST_AUTO_TEST_CASE(invalid_source) {
  tg::sdk::Blob bin;
  tg::sdk::Status s = device().compiler().compile(kInvalidSource, bin);
  record("compile_error", s.code() == Code::compile_error,
         s.ok() ? "invalid source was accepted: expected a compile error with the compiler's log"
                : fmt::format("expected a compile error, got {}: {}", tg::sdk::code_name(s.code()), s.message()));
  record("log", s.ok() || !s.message().empty(), "the compile error has an empty log");
  bool thrown = false;
  std::string what = "invalid source was accepted: expected a compile error from the core";
  try {
    (void)device().compile(kInvalidSource);
  } catch (const tg::CompileError& e) {
    thrown = true, what = e.what();
  } catch (const std::exception& e) {
    what = fmt::format("expected a compile error, got: {}", e.what());
  }
  record("core_compile_error", thrown, what);
}

BOOST_AUTO_TEST_CASE(cache_key) {
  std::string a(device().compiler().cache_key()), b(device().compiler().cache_key());
  record("non_empty", !a.empty(), "cache_key() is empty");
  record("stable", a == b, fmt::format("cache_key() changed between calls: '{}' then '{}'", a, b));
  if (target().name == "INTERP") {
    record_unsupported("specific", "the reference device itself");
    return;
  }
  std::string ref(tg::runtime::device("INTERP").compiler().cache_key());
  record("specific", a != ref, fmt::format("cache_key() '{}' equals the reference device's", a));
}

BOOST_AUTO_TEST_CASE(deterministic) {
  Rendered k1 = render(add_one_ast(64), "conf_deterministic"), k2 = render(add_one_ast(64), "conf_deterministic");
  record("render", k1.source == k2.source, "rendering the same kernel twice gave different source");
  tg::sdk::Blob b1, b2;
  tg::sdk::Status s1 = device().compiler().compile(k1.source, b1), s2 = device().compiler().compile(k1.source, b2);
  BOOST_REQUIRE_MESSAGE(s1.ok() && s2.ok(), s1.message() << s2.message());
  bool same = b1.size() == b2.size() && std::equal(b1.bytes().begin(), b1.bytes().end(), b2.bytes().begin());
  record("compile", same, fmt::format("compiling the same source twice gave different binaries ({} and {} bytes)",
                                      b1.size(), b2.size()));
}

BOOST_AUTO_TEST_CASE(cached_compile) {
  // Disk cache: the second compile of a source is read back, the device compiler is not called.
  if (tg::runtime::program_disk_cache() == nullptr) {
    record_unsupported("disk", "the program disk cache is off (CACHELEVEL=0 or an unusable TG_CACHE_DIR)");
  } else {
    Rendered k = render(add_one_ast(48), "conf_cached");
    (void)tg::runtime::compile_cached(device(), k.source);  // compiled, or already cached by an earlier run
    tg::runtime::RuntimeStats before = tg::runtime::runtime_stats();
    bool from_disk = false;
    tg::sdk::Blob bin = tg::runtime::compile_cached(device(), k.source, &from_disk);
    tg::runtime::RuntimeStats after = tg::runtime::runtime_stats();
    record("disk", from_disk && after.compiled == before.compiled && after.disk_hits == before.disk_hits + 1,
           fmt::format("second compile: from disk {}, compiles +{}, disk hits +{}", from_disk,
                       after.compiled - before.compiled, after.disk_hits - before.disk_hits));
    try {
      record("disk_binary_loads", device().load(k.prog.name, bin.bytes()) != nullptr, "no program");
    } catch (const std::exception& e) {
      record("disk_binary_loads", false, e.what());
    }
  }
  // Memory cache: realizing the same graph on other data reuses the loaded kernel.
  auto run = [](float first) {
    std::vector<float> x{first, first + 1, first + 2, first + 3, first + 4};
    return (tg::Tensor(x, {5}, tg::dtypes::float32, target().name) * 3.0f + 1.0f).to_vector<float>();
  };
  std::vector<float> r1 = run(1);
  tg::runtime::RuntimeStats before = tg::runtime::runtime_stats();
  std::vector<float> r2 = run(10);
  tg::runtime::RuntimeStats after = tg::runtime::runtime_stats();
  record("memory", after.compiled == before.compiled && after.memory_hits > before.memory_hits,
         fmt::format("second realize of x*3+1: compiles +{}, memory hits +{}", after.compiled - before.compiled,
                     after.memory_hits - before.memory_hits));
  record("values", r1 == std::vector<float>{4, 7, 10, 13, 16} && r2 == std::vector<float>{31, 34, 37, 40, 43},
         "x*3+1 gave wrong values");
}

BOOST_AUTO_TEST_SUITE_END()
