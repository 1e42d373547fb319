// Conformance area "allocator": the plugin's raw allocator (no LRU cache in between): sizes, zero size,
// alignment, round trips, offset views, guard bytes, out-of-memory, leaks and transfers.
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "base/error.hpp"
#include "conformance.hpp"
#include "kernels.hpp"
#include "tensor/tensor.hpp"

namespace {

using namespace tg::conformance;
using tg::sdk::Code;
using tg::sdk::Handle;

std::vector<std::byte> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::byte> out(n);
  for (auto& b : out) b = static_cast<std::byte>(rng() & 0xff);
  return out;
}

// Index of the first byte that differs, or -1.
int64_t first_difference(const std::vector<std::byte>& a, const std::vector<std::byte>& b) {
  for (size_t i = 0; i < std::min(a.size(), b.size()); i++)
    if (a[i] != b[i]) return static_cast<int64_t>(i);
  return a.size() == b.size() ? -1 : static_cast<int64_t>(std::min(a.size(), b.size()));
}

bool host_memory() {
  RawBuffer b(64);
  return RawBuffer::alloc().as_host(b.handle()) != nullptr;
}

// Resident set size of this process in bytes (VmRSS).
int64_t rss_bytes() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.starts_with("VmRSS:")) return std::stoll(line.substr(6)) * 1024;
  return -1;
}

// A kernel writing out[i] = in[i] + 1 for 37 floats into a view at byte 256 of base (filled with fill):
// the view gets the values and no byte around it changes.
void kernel_into_view(RawBuffer& base, const std::vector<std::byte>& fill) {
  constexpr int64_t n = 37;
  constexpr size_t off = 256;
  base.write(fill);
  Handle view = nullptr;
  tg::sdk::Status s = RawBuffer::alloc().offset(base.handle(), off, n * 4, &view);
  if (record("kernel_view", s.ok(), fmt::format("offset(): {}", s.message())) != Outcome::pass) return;
  RawBuffer in(n * 4);
  std::vector<float> x(n);
  for (int64_t i = 0; i < n; i++) x[i] = static_cast<float>(i) * 0.25f;
  in.write(bytes_of(x));
  try {
    Loaded l = compile_and_load(add_one_ast(n), "conf_view_out");
    std::vector<Handle> bufs{view, in.handle()};
    tg::sdk::Status r = l.program->launch(bufs, {}, l.k.prog.launch_dims({}), true, nullptr);
    if (record("kernel_launch", r.ok(), r.message()) == Outcome::pass) {
      std::vector<std::byte> all = base.read(), expect = fill;
      for (int64_t i = 0; i < n; i++) x[i] += 1.0f;
      std::memcpy(expect.data() + off, x.data(), n * 4);
      int64_t d = first_difference(all, expect);
      bool inside = d >= static_cast<int64_t>(off) && d < static_cast<int64_t>(off + n * 4);
      record("kernel_guard_bytes", d < 0,
             inside ? fmt::format("a kernel writing a view at byte {}: byte {} has the wrong value", off, d)
                    : fmt::format("a kernel writing bytes [{}, {}) through a view changed byte {} outside it", off,
                                  off + n * 4, d));
    }
  } catch (const std::exception& e) {
    record("kernel_launch", false, e.what());
  }
  RawBuffer::alloc().free_view(view);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(allocator)

BOOST_AUTO_TEST_CASE(sizes_round_trip) {
  for (size_t n : {size_t{1}, size_t{3}, size_t{4095}, size_t{4096}, size_t{65537}, size_t{16} << 20}) {
    std::string item = fmt::format("size_{}", n);
    try {
      RawBuffer b(n);
      std::vector<std::byte> in = random_bytes(n, static_cast<uint32_t>(n));
      b.write(in);
      int64_t d = first_difference(b.read(), in);
      record(item, d < 0, fmt::format("{} bytes: byte {} read back differs from the one written", n, d));
    } catch (const std::exception& e) {
      record(item, false, e.what());
    }
  }
}

BOOST_AUTO_TEST_CASE(zero_size) {
  Handle a = nullptr, b = nullptr;
  tg::sdk::Status sa = RawBuffer::alloc().alloc(0, {}, &a), sb = RawBuffer::alloc().alloc(0, {}, &b);
  record("alloc", sa.ok() && sb.ok(), fmt::format("alloc(0): {} / {}", sa.message(), sb.message()));
  record("distinct_handles", sa.ok() && sb.ok() && a != nullptr && b != nullptr && a != b,
         "two zero-size buffers must be valid, distinct handles");
  if (sa.ok()) {
    tg::sdk::Status s = RawBuffer::alloc().copyin(a, {});
    record("empty_copyin", s.ok(), s.message());
    RawBuffer::alloc().free(a, 0, {});
  }
  if (sb.ok()) RawBuffer::alloc().free(b, 0, {});
}

BOOST_AUTO_TEST_CASE(alignment) {
  size_t a = RawBuffer::alloc().alignment();
  record("power_of_two", a != 0 && (a & (a - 1)) == 0, fmt::format("alignment() is {}", a));
  if (!host_memory()) {
    record_unsupported("addresses", "device memory is not host-addressable: addresses cannot be checked here");
    return;
  }
  std::string bad;
  for (size_t n : {1, 7, 100, 4097, 1 << 20}) {
    RawBuffer b(n);
    auto addr = reinterpret_cast<uintptr_t>(RawBuffer::alloc().as_host(b.handle()));
    if (a != 0 && addr % a != 0) bad += fmt::format(" {} bytes at {:#x};", n, addr);
  }
  record("addresses", bad.empty(), fmt::format("buffers not aligned to {}:{}", a, bad));
}

BOOST_AUTO_TEST_CASE(offset_views_and_guard_bytes) {
  constexpr size_t n = 4096, off = 1024, len = 512;
  RawBuffer base(n);
  std::vector<std::byte> fill(n, std::byte{0xA5});
  base.write(fill);
  Handle view = nullptr;
  tg::sdk::Status s = RawBuffer::alloc().offset(base.handle(), off, len, &view);
  if (s.code() == Code::unsupported) {
    record_unsupported("view", fmt::format("no offset views: {}", s.message()));
    record_unsupported("guard_bytes", "needs offset views");
  } else if (record("view", s.ok() && view != nullptr, fmt::format("offset(): {}", s.message())) == Outcome::pass) {
    std::vector<std::byte> data = random_bytes(len, 11), back(len);
    tg::sdk::Status w = RawBuffer::alloc().copyin(view, data), r = RawBuffer::alloc().copyout(back, view);
    record("view_round_trip", w.ok() && r.ok() && back == data,
           fmt::format("copy through the view: {} / {}", w.message(), r.message()));
    std::vector<std::byte> all = base.read(), expect = fill;
    std::copy(data.begin(), data.end(), expect.begin() + off);
    int64_t d = first_difference(all, expect);
    record("guard_bytes", d < 0,
           fmt::format("writing bytes [{}, {}) through a view changed byte {} of the base buffer", off, off + len, d));
    RawBuffer::alloc().free_view(view);
    kernel_into_view(base, fill);
  }
  // Neighbours: filling one buffer leaves the buffers allocated around it untouched.
  RawBuffer a(1000), b(1000), c(1000);
  std::vector<std::byte> pa = random_bytes(1000, 1), pc = random_bytes(1000, 3);
  a.write(pa), c.write(pc);
  b.write(random_bytes(1000, 2));
  record("neighbours_untouched", a.read() == pa && c.read() == pc,
         "writing a 1000-byte buffer changed the buffers allocated before or after it");
}

BOOST_AUTO_TEST_CASE(out_of_memory) {
  constexpr size_t absurd = size_t{1} << 50;  // 1 PiB
  Handle h = nullptr;
  tg::sdk::Status s = RawBuffer::alloc().alloc(absurd, {}, &h);
  if (s.ok()) RawBuffer::alloc().free(h, absurd, {});
  record("clean_error", !s.ok() && !s.message().empty(),
         s.ok() ? "allocating 1 PiB succeeded" : fmt::format("{} with an empty message", tg::sdk::code_name(s.code())));
  if (!s.ok() && s.code() != Code::out_of_memory)
    BOOST_TEST_MESSAGE("1 PiB alloc gave " << tg::sdk::code_name(s.code()) << ", not out_of_memory: " << s.message());
  bool core_error = false;
  std::string what = "no error";
  try {
    Handle c = device().allocator().alloc(absurd);
    device().allocator().free(c, absurd);
  } catch (const tg::OutOfMemoryError& e) {
    core_error = true, what = e.what();
  } catch (const std::exception& e) {
    what = fmt::format("not an OutOfMemoryError: {}", e.what());
  }
  record("core_out_of_memory_error", core_error, what);
  try {
    RawBuffer b(1 << 20);
    std::vector<std::byte> in = random_bytes(1 << 20, 5);
    b.write(in);
    record("still_works", b.read() == in, "a 1 MiB round trip after out-of-memory gave other bytes");
  } catch (const std::exception& e) {
    record("still_works", false, fmt::format("after out-of-memory: {}", e.what()));
  }
}

BOOST_AUTO_TEST_CASE(no_leak) {
  constexpr size_t size = size_t{64} << 20;
  constexpr int rounds = 32;  // a leak of whole buffers shows within 3 rounds; more only costs time
  std::vector<std::byte> data(size, std::byte{0x5A});
  {
    RawBuffer warm(size);  // first use may map pools for good
    warm.write(data);
  }
  const int64_t limit = static_cast<int64_t>(2 * size), before = rss_bytes();
  int64_t grown = 0;
  int done = 0;
  while (done < rounds && grown < limit) {  // stops as soon as a leak shows, before it eats the machine
    {
      RawBuffer b(size);
      b.write(data);
    }
    done++;
    grown = rss_bytes() - before;
  }
  std::string note = host_memory() ? "" : " (device memory is not host memory: RSS cannot see leaks on the device)";
  record("rss", grown < limit,
         fmt::format("allocator leak: RSS grew by {} MiB over {} rounds of alloc + copyin + free of {} MiB "
                     "(limit {} MiB){}",
                     grown >> 20, done, size >> 20, limit >> 20, note));
  if (!note.empty()) BOOST_TEST_MESSAGE("allocator/no_leak" << note);
}

BOOST_AUTO_TEST_CASE(transfer) {
  RawBuffer src(4096), dst(4096);
  std::vector<std::byte> in = random_bytes(4096, 9);
  src.write(in);
  tg::sdk::Status s = RawBuffer::alloc().transfer(dst.handle(), src.handle(), 4096);
  if (s.code() == Code::unsupported)
    record_unsupported("same_device", fmt::format("no device-to-device transfer: {}", s.message()));
  else
    record("same_device", s.ok() && dst.read() == in, fmt::format("transfer: {}", s.message()));
  // Through the core: to the reference device and back.
  std::vector<float> v{1.5f, -2.0f, 3.25f, 0.0f, 1e-3f, -7.5f, 42.0f};
  tg::Tensor t(v, {7}, tg::dtypes::float32, target().name);
  std::vector<float> back = t.to("INTERP").to(target().name).to_vector<float>();
  record("to_reference_and_back", back == v, "values changed on the way to INTERP and back");
}

BOOST_AUTO_TEST_SUITE_END()
