// Bucketed gradient averaging, broadcast and agreement checks over a Communicator.
#include "dist/data_parallel.hpp"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/hash.hpp"

namespace tg::dist {

namespace {

// Shapes and dtypes, for the signature hash and for the error message when ranks disagree.
std::string describe(std::span<const Tensor> tensors) {
  std::string s = fmt::format("{} tensors:", tensors.size());
  for (const Tensor& t : tensors) s += fmt::format(" {}({})", t.dtype().name(), fmt::join(t.shape(), ","));
  return s;
}

std::string shorten(std::string s) { return s.size() > 300 ? s.substr(0, 300) + " ..." : s; }

void check_signature(Communicator& comm, std::string_view op, std::span<const Tensor> tensors) {
  for (const Tensor& t : tensors)
    if (!t.defined()) throw ValueError(std::string(op), "a tensor is undefined");
  std::string sig = describe(tensors);
  try {
    check_same(comm, hash_str(sig), "");
  } catch (const DistError& e) {
    if (comm.failed()) throw;  // a timeout, not a disagreement
    throw DistError(std::string(op), fmt::format("ranks disagree on the tensors (different models or shapes?); "
                                                 "rank {} of {} has {}",
                                                 comm.rank(), comm.size(), shorten(sig)));
  }
}

}  // namespace

void check_same(Communicator& comm, uint64_t value, std::string_view what) {
  // max of (v, -v) gives max and -min at once; 63 bits so that -v cannot overflow
  int64_t v = static_cast<int64_t>(value >> 1);
  int64_t both[2] = {v, -v};
  comm.all_reduce(std::span<int64_t>(both), ReduceOp::MAX);
  if (both[0] != -both[1])
    throw DistError("check_same", fmt::format("{} differ between ranks (rank {} of {} has {:016x})",
                                              what.empty() ? "values" : what, comm.rank(), comm.size(), value));
}

uint64_t hash_values(std::span<const Tensor> tensors) {
  uint64_t h = hash_str(describe(tensors));
  for (const Tensor& t : tensors) {
    std::vector<std::byte> b = t.to_bytes();
    h = hash_combine(h, hash_bytes(b.data(), b.size()));
  }
  return h;
}

std::vector<Tensor> all_reduce_mean(Communicator& comm, std::span<const Tensor> tensors, size_t bucket_bytes) {
  check_signature(comm, "all_reduce_mean", tensors);
  if (comm.size() == 1) return {tensors.begin(), tensors.end()};
  size_t per_bucket = std::max<size_t>(1, bucket_bytes / sizeof(float));
  // Buckets hold whole tensors (one larger than a bucket gets its own), so a tensor is copied out once.
  struct Bucket {
    size_t first, last;  // tensors [first, last)
    std::vector<float> data;
    int request = 0;
  };
  std::vector<Bucket> buckets;
  for (size_t i = 0; i < tensors.size(); i++) {
    size_t n = static_cast<size_t>(tensors[i].numel());
    if (buckets.empty() || buckets.back().data.size() + n > per_bucket) buckets.push_back({i, i, {}, 0});
    Bucket& b = buckets.back();
    std::vector<float> v = tensors[i].to_vector<float>();
    b.data.insert(b.data.end(), v.begin(), v.end());
    b.last = i + 1;
    if (i + 1 == tensors.size() || b.data.size() + static_cast<size_t>(tensors[i + 1].numel()) > per_bucket)
      b.request = comm.start_all_reduce(b.data.data(), b.data.size(), Elem::FLOAT32, ReduceOp::SUM);
  }
  std::vector<Tensor> out;
  float scale = 1.0f / static_cast<float>(comm.size());
  for (Bucket& b : buckets) {
    comm.wait(b.request);
    size_t at = 0;
    for (size_t i = b.first; i < b.last; i++) {
      const Tensor& t = tensors[i];
      size_t n = static_cast<size_t>(t.numel());
      std::vector<float> v(b.data.begin() + static_cast<std::ptrdiff_t>(at),
                           b.data.begin() + static_cast<std::ptrdiff_t>(at + n));
      for (float& x : v) x *= scale;
      at += n;
      Tensor r = Tensor(std::move(v), {t.numel()}, dtypes::float32, t.device()).reshape(t.shape());
      out.push_back(t.dtype() == dtypes::float32 ? r : r.cast(t.dtype()));
    }
  }
  Tensor::realize_all(out);
  return out;
}

void broadcast(Communicator& comm, std::span<const Tensor> tensors, int root) {
  check_signature(comm, "broadcast", tensors);
  if (comm.size() == 1) return;
  std::vector<Tensor> todo;
  for (Tensor t : tensors) {
    auto b = std::make_shared<std::vector<std::byte>>(t.to_bytes());
    comm.broadcast(*b, root);
    std::string device = t.device();
    if (comm.rank() != root)
      todo.push_back(t.assign(Tensor::from_blob(b->data(), t.shape(), t.dtype(), {.device = device, .owner = b})));
  }
  Tensor::realize_all(todo);
}

}  // namespace tg::dist
