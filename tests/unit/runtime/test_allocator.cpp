// The LRU allocator against an in-test allocator that counts calls and has a fixed pool, Status to
// error conversion, and DeviceSpec parsing.
#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "runtime/allocator.hpp"
#include "runtime/check.hpp"
#include "runtime/device.hpp"

namespace {
using namespace tg::sdk;

// Pool of `capacity` bytes; fail_next makes the next alloc report out_of_memory regardless.
struct CountingAllocator final : Allocator {
  explicit CountingAllocator(size_t capacity) : capacity(capacity) {}
  Status alloc(size_t n, const AllocOptions&, Handle* out) noexcept override {
    ++allocs;
    if (fail_next || used + n > capacity) {
      fail_next = false;
      return {Code::out_of_memory, "pool full"};
    }
    used += n;
    *out = std::malloc(n + 1);
    return {};
  }
  void free(Handle h, size_t n, const AllocOptions&) noexcept override {
    freed.push_back(h);
    used -= n;
    std::free(h);
  }
  Status copyin(Handle, std::span<const std::byte>) noexcept override {
    return {Code::runtime_error, "bus error"};
  }
  Status copyout(std::span<std::byte>, Handle) noexcept override { return {}; }
  size_t alignment() const noexcept override { return 16; }

  size_t capacity, used = 0;
  int allocs = 0;
  bool fail_next = false;
  std::vector<Handle> freed;
};
}  // namespace

BOOST_AUTO_TEST_CASE(lru_reuses_buffers_of_the_same_size_and_options) {
  CountingAllocator raw(1 << 20);
  tg::runtime::LruAllocator lru(raw, "FAKE:0");
  Handle a = lru.alloc(100);
  lru.free(a, 100);
  BOOST_TEST(lru.cached_bytes() == 100u);
  BOOST_TEST(lru.in_use_bytes() == 0u);
  BOOST_TEST(lru.alloc(100) == a);  // from the cache, no plugin call
  BOOST_TEST(raw.allocs == 1);
  BOOST_TEST(lru.cached_bytes() == 0u);
  BOOST_TEST(lru.in_use_bytes() == 100u);
  Handle b = lru.alloc(100, {.host_visible = true});  // other options: not interchangeable
  Handle c = lru.alloc(200);
  BOOST_TEST(raw.allocs == 3);
  BOOST_TEST(b != a);
  BOOST_TEST(c != a);
  BOOST_TEST(lru.in_use_bytes() == 400u);
  // the peak counts buffers handed out, not cached ones: 400 now; after a reset, the current use
  BOOST_TEST(lru.peak_in_use_bytes() == 400u);
  lru.free(c, 200);
  lru.reset_peak();
  BOOST_TEST(lru.peak_in_use_bytes() == 200u);
  BOOST_TEST(lru.alloc(200) == c);
  BOOST_TEST(lru.peak_in_use_bytes() == 400u);
  lru.free(a, 100), lru.free(b, 100, {.host_visible = true}), lru.free(c, 200);  // the destructor flushes them
}

BOOST_AUTO_TEST_CASE(lru_cache_is_bounded_and_evicts_the_oldest) {
  CountingAllocator raw(1 << 20);
  tg::runtime::LruAllocator lru(raw, "FAKE:0", 250);
  Handle h[3] = {lru.alloc(100), lru.alloc(100), lru.alloc(100)};
  for (Handle x : h) lru.free(x, 100);
  BOOST_TEST(lru.cached_bytes() == 200u);  // 300 > 250: the first freed went back to the plugin
  BOOST_REQUIRE(raw.freed.size() == 1u);
  BOOST_TEST(raw.freed[0] == h[0]);
  Handle big = lru.alloc(300);  // larger than the whole cache: never cached
  lru.free(big, 300);
  BOOST_TEST(raw.freed.size() == 2u);
  BOOST_TEST(raw.freed[1] == big);
  lru.flush();
  BOOST_TEST(raw.freed.size() == 4u);
  BOOST_TEST(lru.cached_bytes() == 0u);
  BOOST_TEST(raw.used == 0u);
}

BOOST_AUTO_TEST_CASE(lru_retries_once_after_out_of_memory) {
  CountingAllocator raw(300);
  tg::runtime::LruAllocator lru(raw, "FAKE:0");
  raw.fail_next = true;  // the first alloc fails; the retry succeeds
  Handle first = lru.alloc(10);
  BOOST_TEST(first != nullptr);
  BOOST_TEST(raw.allocs == 2);
  lru.free(first, 10);
  Handle a = lru.alloc(200);
  lru.free(a, 200);           // the pool now holds 210 cached bytes
  Handle b = lru.alloc(150);  // 210 + 150 > 300: fails, flushes the cache, retries
  BOOST_TEST(b != nullptr);
  BOOST_TEST(raw.allocs == 5);
  BOOST_TEST(raw.freed.size() == 2u);
  BOOST_TEST(lru.cached_bytes() == 0u);
  BOOST_TEST(lru.in_use_bytes() == 150u);
  try {
    lru.alloc(400);
    BOOST_FAIL("expected OutOfMemoryError");
  } catch (const tg::OutOfMemoryError& e) {
    BOOST_TEST(
        std::string(e.what()) ==
        "[alloc] FAKE:0 is out of memory allocating 400 bytes (150 bytes in use, 0 cached bytes flushed "
        "before the retry): pool full");
  }
  BOOST_TEST(raw.allocs == 7);  // one try and one retry
  lru.free(b, 150);
}

BOOST_AUTO_TEST_CASE(plugin_status_becomes_the_matching_error) {
  CountingAllocator raw(100);
  tg::runtime::LruAllocator lru(raw, "FAKE:0");
  Handle h = lru.alloc(4);
  std::byte src[4] = {};
  try {
    lru.copyin(h, src);
    BOOST_FAIL("expected DeviceError");
  } catch (const tg::DeviceError& e) {
    BOOST_TEST(std::string(e.what()) == "[copyin] FAKE:0 copying 4 bytes in: bus error");
  }
  lru.free(h, 4);
  BOOST_CHECK_THROW(tg::runtime::check(Status(Code::out_of_memory, "m"), "op", "c"), tg::OutOfMemoryError);
  BOOST_CHECK_THROW(tg::runtime::check(Status(Code::compile_error, "m"), "op", "c"), tg::CompileError);
  BOOST_CHECK_THROW(tg::runtime::check(Status(Code::invalid_argument, "m"), "op", "c"), tg::ValueError);
  BOOST_CHECK_THROW(tg::runtime::check(Status(Code::unsupported, "m"), "op", "c"), tg::NotSupportedError);
  BOOST_CHECK_THROW(tg::runtime::check(Status(Code::unavailable, "m"), "op", "c"), tg::DeviceError);
  BOOST_CHECK_NO_THROW(tg::runtime::check(Status(), "op", "c"));
  try {
    tg::runtime::check(Status(Code::unsupported, "no views"), "view", "CL:0");
  } catch (const tg::Error& e) {
    BOOST_TEST(std::string(e.what()) == "[view] CL:0: no views");
  }
}

BOOST_AUTO_TEST_CASE(device_spec_parses_every_form) {
  auto s = tg::runtime::DeviceSpec::parse("clang");
  BOOST_TEST(s.name == "CLANG");
  BOOST_TEST(s.index == 0);
  BOOST_TEST(s.renderer.empty());
  BOOST_TEST(s.str() == "CLANG:0");
  s = tg::runtime::DeviceSpec::parse("CUDA:1");
  BOOST_TEST(s.index == 1);
  s = tg::runtime::DeviceSpec::parse("CUDA:1:ptx:sm_80");
  BOOST_TEST(s.name == "CUDA");
  BOOST_TEST(s.index == 1);
  BOOST_TEST(s.renderer == "ptx");
  BOOST_TEST(s.arch == "sm_80");
  BOOST_TEST(s.str() == "CUDA:1:ptx:sm_80");
  s = tg::runtime::DeviceSpec::parse("CUDA:nv");  // the index is optional
  BOOST_TEST(s.index == 0);
  BOOST_TEST(s.renderer == "nv");
  for (const char* bad : {"", ":1", "CUDA:", "CUDA::ptx", "CUDA:1x", "CUDA:1:a:b:c", "CUDA:-1", "CU DA", "CUDA=1"})
    BOOST_CHECK_THROW(tg::runtime::DeviceSpec::parse(bad), tg::DeviceError);
  try {
    tg::runtime::DeviceSpec::parse("CUDA:1:a:b:c");
  } catch (const tg::DeviceError& e) {
    BOOST_TEST(
        std::string(e.what()) ==
        "[device] bad device 'CUDA:1:a:b:c': too many fields; expected NAME[:index][:renderer[:arch]]");
  }
  try {
    tg::runtime::DeviceSpec::parse("CLANG:-1");
  } catch (const tg::DeviceError& e) {
    BOOST_TEST(std::string(e.what()) ==
               "[device] bad device 'CLANG:-1': the index is a number from 0; expected "
               "NAME[:index][:renderer[:arch]]");
  }
}
