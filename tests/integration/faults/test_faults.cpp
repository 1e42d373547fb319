// Faults in the middle of a realize, on the device DEV names: an allocation the device cannot make fails
// with one clear error naming the device and the size, the buffers that realize had taken are returned,
// and the next realize runs and is right (values worked out by hand).
#define BOOST_TEST_MODULE faults
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "runtime/registry.hpp"
#include "tensor/tensor.hpp"

using tg::Tensor;

BOOST_AUTO_TEST_CASE(allocation_failure_mid_realize_leaves_the_device_usable) {
  tg::runtime::Device& dev = tg::runtime::default_device();
  Tensor x = Tensor({1.f, 2.f, 3.f, 4.f}, {4});
  x.realize();
  size_t before = dev.allocator().in_use_bytes();
  // Two kernels: a small product that is allocated first, then a 4 TiB copy no device has.
  Tensor small = (x * 2).contiguous();
  Tensor huge = (small.reshape({4, 1}).expand({4, int64_t{1} << 38}) + 1).contiguous().sum();
  std::string error = "no error";
  try {
    huge.realize();
  } catch (const tg::Error& e) {
    error = e.what();
  }
  BOOST_TEST(error.find("out of memory allocating 4398046511104 bytes") != std::string::npos, error);
  BOOST_TEST(error.find(dev.str()) != std::string::npos, error);
  BOOST_TEST(dev.allocator().in_use_bytes() <= before + 64, "in use " << dev.allocator().in_use_bytes());
  std::vector<float> next = ((x + 1) * 3).to_vector<float>();
  BOOST_TEST(next == (std::vector<float>{6, 9, 12, 15}), boost::test_tools::per_element());
  BOOST_TEST(small.to_vector<float>() == (std::vector<float>{2, 4, 6, 8}), boost::test_tools::per_element());
}

// Side effects queued with realize_later run in the next realize; when it fails they are dropped with it
// and the error is reported once. Before, the failed work was queued again and every later realize failed.
BOOST_AUTO_TEST_CASE(a_failed_realize_drops_its_queued_side_effects) {
  Tensor x = Tensor({1.f, 2.f, 3.f, 4.f}, {4});
  x.realize();
  Tensor huge = (x.reshape({4, 1}).expand({4, int64_t{1} << 38}) + 1).contiguous().sum();
  Tensor counter = Tensor({0.f}).contiguous().realize();
  Tensor::realize_later({huge, counter.assign(counter + 1)});
  std::string error = "no error";
  try {
    (x * 2).realize();
  } catch (const tg::Error& e) {
    error = e.what();
  }
  BOOST_TEST(error.find("out of memory allocating 4398046511104 bytes") != std::string::npos, error);
  std::vector<float> next = ((x + 1) * 3).to_vector<float>();
  BOOST_TEST(next == (std::vector<float>{6, 9, 12, 15}), boost::test_tools::per_element());
  // The assign is still the counter's pending value: it runs when the counter is read, once.
  BOOST_TEST(counter.to_vector<float>() == (std::vector<float>{1}), boost::test_tools::per_element());
  BOOST_TEST(counter.to_vector<float>() == (std::vector<float>{1}), boost::test_tools::per_element());
}
