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

// Appends t's elements as float32: its bytes as they are when it is float32 (no conversion kernel).
void append_floats(const Tensor& t, std::vector<float>& out) {
  if (t.dtype() != dtypes::float32) {
    std::vector<float> v = t.to_vector<float>();
    out.insert(out.end(), v.begin(), v.end());
    return;
  }
  std::vector<std::byte> b = t.to_bytes();
  size_t at = out.size();
  out.resize(at + b.size() / sizeof(float));
  std::memcpy(out.data() + at, b.data(), b.size());
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

AllReduceMean::AllReduceMean(Communicator& comm, std::span<const Tensor> like_these, size_t bucket_bytes)
    : comm_(comm), per_bucket_(std::max<size_t>(1, bucket_bytes / sizeof(float))) {
  check_signature(comm, "all_reduce_mean", like_these);
  for (const Tensor& t : like_these) expected_.emplace_back(t.shape(), t.dtype());
}

AllReduceMean::~AllReduceMean() {
  if (comm_.failed()) return;  // exit aborts the job
  for (Bucket& b : buckets_) {
    if (b.request < 0) continue;
    try {
      comm_.wait(b.request);
    } catch (const Error&) {  // the communicator is now marked failed
      return;
    }
  }
}

void AllReduceMean::start(Bucket& b) {
  b.request = comm_.start_all_reduce(b.data.data(), b.data.size(), Elem::FLOAT32, ReduceOp::SUM);
}

// Buckets hold whole tensors (one larger than a bucket gets its own), so a tensor is copied out once; one
// add() fills buckets of its own, so that they can start when it returns.
void AllReduceMean::add(std::span<const Tensor> tensors, bool start_now) {
  size_t first_new = buckets_.size();
  for (size_t i = 0; i < tensors.size(); i++) {
    const Tensor& t = tensors[i];
    size_t at = added_.size();
    if (at >= expected_.size() || !t.defined() || t.shape() != expected_[at].first ||
        t.dtype() != expected_[at].second)
      throw ValueError("all_reduce_mean",
                       fmt::format("tensor {} is not the one announced ({} tensors of the signature)", at,
                                   expected_.size()));
    size_t n = static_cast<size_t>(t.numel());
    if (buckets_.size() == first_new || buckets_.back().data.size() + n > per_bucket_)
      buckets_.push_back({at, at, {}, -1});
    Bucket& b = buckets_.back();
    append_floats(t, b.data);
    b.last = at + 1;
    added_.push_back(t);
    bool full =
        i + 1 == tensors.size() || b.data.size() + static_cast<size_t>(tensors[i + 1].numel()) > per_bucket_;
    if (full && start_now) start(b);
  }
}

void AllReduceMean::progress() {
  for (Bucket& b : buckets_)
    if (b.request >= 0 && comm_.test(b.request)) b.request = -2;  // done: -2
}

std::vector<Tensor> AllReduceMean::finish() {
  if (added_.size() != expected_.size())
    throw ValueError("all_reduce_mean",
                     fmt::format("{} tensors added of the {} announced", added_.size(), expected_.size()));
  for (Bucket& b : buckets_)
    if (b.request == -1) start(b);
  std::vector<Tensor> out;
  float scale = 1.0f / static_cast<float>(comm_.size());
  for (Bucket& b : buckets_) {
    if (b.request >= 0) comm_.wait(b.request);
    b.request = -2;
    for (float& x : b.data) x *= scale;
    // the results are views of the bucket, which they keep alive (copied at their first realize on a
    // device that does not read host memory in place)
    auto data = std::make_shared<std::vector<float>>(std::move(b.data));
    size_t at = 0;
    for (size_t i = b.first; i < b.last; i++) {
      const Tensor& t = added_[i];
      Tensor r = Tensor::from_blob(data->data() + at, t.shape(), dtypes::float32,
                                   {.device = t.device(), .owner = data, .read_only = true});
      at += static_cast<size_t>(t.numel());
      out.push_back(t.dtype() == dtypes::float32 ? r : r.cast(t.dtype()));
    }
  }
  buckets_.clear();
  added_.clear();
  return out;
}

std::vector<Tensor> all_reduce_mean(Communicator& comm, std::span<const Tensor> tensors,
                                    size_t bucket_bytes) {
  AllReduceMean r(comm, tensors, bucket_bytes);
  r.add(tensors);
  return r.finish();
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
