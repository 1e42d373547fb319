#define BOOST_TEST_MODULE tensor_blob
// Tensor::from_blob over caller memory, host views of realized buffers, and replace(). Devices that use
// host memory in place (CLANG, INTERP) and devices that copy it at the first realize (VULKAN) are both run.
#include <memory>

#include "helpers.hpp"
#include "runtime/registry.hpp"
#include "tg/sdk/foreign_memory.hpp"

using namespace tg;
using tg::test::expect_error;
using tg::test::expect_exact;

namespace {
bool in_place(const Tensor& t) {
  return tg::runtime::device(t.device()).plugin().extension(sdk::kForeignMemoryExtension) != nullptr;
}
}  // namespace

BOOST_AUTO_TEST_CASE(reads_the_callers_memory) {
  alignas(64) float data[6] = {1, 2, 3, 4, 5, 6};
  Tensor t = Tensor::from_blob(data, {2, 3}, dtypes::float32);
  BOOST_TEST((t.shape() == Shape{2, 3}));
  BOOST_TEST(t.dtype() == dtypes::float32);
  expect_exact<float>(t * 2, {2, 4, 6, 8, 10, 12});
  data[0] = 100;  // in place: the next realize reads it; elsewhere the first realize made the copy
  expect_exact<float>(t * 2, {in_place(t) ? 200.0f : 2.0f, 4, 6, 8, 10, 12});
  expect_exact<float>(t.permute({1, 0}), {in_place(t) ? 100.0f : 1.0f, 4, 2, 5, 3, 6});
  engine::HostView v = t.host_view();
  if (in_place(t) && v.bytes.data() != nullptr)  // the tensor's bytes are the caller's, not a copy
    BOOST_TEST(static_cast<const void*>(v.bytes.data()) == static_cast<const void*>(data));
  int16_t empty[1] = {0};
  Tensor e = Tensor::from_blob(empty, {0, 3}, dtypes::int16);
  BOOST_TEST(e.numel() == 0);
  BOOST_TEST(e.to_vector<int16_t>().empty());
}

BOOST_AUTO_TEST_CASE(owner_lives_as_long_as_needed) {
  auto owner = std::make_shared<std::vector<int32_t>>(std::vector<int32_t>{7, 8, 9});
  std::weak_ptr<std::vector<int32_t>> alive = owner;
  {
    Tensor t = Tensor::from_blob(owner->data(), {3}, dtypes::int32, {.owner = owner});
    owner.reset();
    BOOST_TEST(!alive.expired());
    Tensor sum = t.sum();
    BOOST_TEST(sum.item<int32_t>() == 24);
    // in place the buffer keeps the memory for the tensor's life; a copy needed it only until the first use
    BOOST_TEST(alive.expired() == !in_place(t));
    expect_exact<int32_t>(t + 1, {8, 9, 10});
  }
  BOOST_TEST(alive.expired());
}

BOOST_AUTO_TEST_CASE(assign_writes_the_memory_unless_read_only) {
  alignas(64) int32_t data[3] = {1, 2, 3};
  Tensor t = Tensor::from_blob(data, {3}, dtypes::int32);
  t.assign(t * 10).realize();
  expect_exact<int32_t>(t, {10, 20, 30});
  BOOST_TEST(data[0] == (in_place(t) ? 10 : 1));
  alignas(64) int32_t kept[3] = {1, 2, 3};
  Tensor r = Tensor::from_blob(kept, {3}, dtypes::int32, {.read_only = true});
  r.assign(r * 10).realize();
  expect_exact<int32_t>(r, {10, 20, 30});
  BOOST_TEST(kept[0] == 1);  // the write went to a private copy
  BOOST_TEST(kept[2] == 3);
}

BOOST_AUTO_TEST_CASE(host_view_keeps_its_bytes) {
  Tensor x = Tensor({1.0f, 2.0f, 3.0f}).realize();
  engine::HostView v = x.host_view();
  if (v.bytes.data() == nullptr) return;  // this device does not map its buffers to host memory
  BOOST_TEST(v.bytes.size() == 3 * sizeof(float));
  auto at = [&](size_t i) {
    float f;
    std::memcpy(&f, v.bytes.data() + i * sizeof(float), sizeof f);
    return f;
  };
  BOOST_TEST(x.host_view().bytes.data() == v.bytes.data());  // no copy while nothing wrote it
  x.assign(x * 2).realize();                                 // moves x to new memory: the view stays
  expect_exact<float>(x, {2, 4, 6});
  BOOST_TEST(at(0) == 1.0f);
  BOOST_TEST(at(2) == 3.0f);
  BOOST_TEST(x.host_view().bytes.data() != v.bytes.data());
  // a view of a non-contiguous tensor realizes its elements in order
  engine::HostView p = Tensor({1, 2, 3, 4}, {2, 2}).permute({1, 0}).host_view();
  std::vector<int32_t> got(4);
  std::memcpy(got.data(), p.bytes.data(), p.bytes.size());
  BOOST_TEST((got == std::vector<int32_t>{1, 3, 2, 4}));
}

BOOST_AUTO_TEST_CASE(from_blob_errors) {
  alignas(64) float data[8] = {};
  expect_error<ValueError>([] { Tensor::from_blob(nullptr, {2}, dtypes::float32); },
                           "[from_blob] data is a null pointer");
  expect_error<ShapeError>(
      [&] {
        Tensor::from_blob(data, {2, -1}, dtypes::float32);
      },
      "[from_blob] negative size -1 in the shape (2,-1)");
  expect_error<DTypeError>([&] { Tensor::from_blob(data, {2}, dtypes::void_); },
                           "[from_blob] dtypes.void is not a tensor element dtype");
  void* odd = reinterpret_cast<std::byte*>(data) + 2;
  try {
    Tensor::from_blob(odd, {2}, dtypes::float32);
    BOOST_ERROR("a misaligned pointer was accepted");
  } catch (const ValueError& e) {
    std::string m = e.what();
    BOOST_TEST(m.starts_with("[from_blob] data at 0x"));
    BOOST_TEST(m.ends_with("is not aligned to float's 4 bytes"));
  }
  Tensor::from_blob(odd, {2}, dtypes::int16);  // its own size is all an element needs
}

BOOST_AUTO_TEST_CASE(replace) {
  Tensor a({1, 2, 3}), b = a;
  Tensor& r = a.replace(Tensor({4, 5, 6}) * 2);
  BOOST_TEST(&r == &a);
  expect_exact<int32_t>(b, {8, 10, 12});  // every handle of the tensor sees it
  expect_error<ShapeError>(
      [&] {
        a.replace(Tensor({1, 2}));
      },
      "[replace] the new value has shape (2,) but the tensor has shape (3,)");
  expect_error<DTypeError>(
      [&] {
        a.replace(Tensor({1.0, 2.0, 3.0}));
      },
      "[replace] the new value is float but the tensor is int; cast it first");
  Tensor g = Tensor({1.0, 2.0, 3.0}).requires_grad_();
  expect_error<ValueError>(
      [&] {
        Tensor({1.0, 2.0, 3.0}).replace(g * 2);
      },
      "[replace] the new value requires grad; replace takes data, detach() it first");
  // tensors replaced by equal lazy graphs get buffers of their own: an assign to one leaves the other
  Tensor m = Tensor::zeros({2}).contiguous().realize(), n = Tensor::zeros({2}).contiguous().realize();
  m.replace(Tensor::ones({2}).contiguous());
  n.replace(Tensor::ones({2}).contiguous());
  m.assign(m * 5).realize();
  expect_exact<float>(m, {5, 5});
  expect_exact<float>(n, {1, 1});
  // two leaves replaced by equal lazy graphs stay two leaves with their own gradients
  Tensor w1 = Tensor::randn({3}).requires_grad_(), w2 = Tensor::randn({3}).requires_grad_();
  w1.replace(Tensor::ones({3}).contiguous());
  w2.replace(Tensor::ones({3}).contiguous());
  Tensor::realize_all({w1, w2});
  (w1 * 2 + w2 * 3).sum().backward();
  expect_exact<float>(w1, {1, 1, 1});
  expect_exact<float>(w1.grad(), {2, 2, 2});
  expect_exact<float>(w2.grad(), {3, 3, 3});
}
