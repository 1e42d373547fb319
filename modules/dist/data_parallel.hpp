#pragma once
// Data parallelism on tensors over a Communicator: each rank computes the gradients of its share of a
// global batch; all_reduce_mean turns them into the global batch's gradients on every rank.
//
//   auto comm = dist::init("mpi");
//   dist::broadcast(*comm, model.parameters());                 // every rank starts from rank 0's weights
//   loss.backward();  std::vector<Tensor> g = ...each param's .grad(), realized...;
//   std::vector<Tensor> avg = dist::all_reduce_mean(*comm, g);  // then set_grad(avg[i]) and step
//   dist::check_same(*comm, dist::hash_values(model.parameters()), "weights");
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "dist/communicator.hpp"
#include "tensor/tensor.hpp"

namespace tg::dist {

constexpr size_t kDefaultBucketBytes = size_t{1} << 20;

// The mean over the ranks of each tensor, as new tensors (same shape, dtype and device). Values
// travel as float32 in buckets of about bucket_bytes: one bucket is reduced while the next is packed. The
// first message is a signature of the count, shapes and dtypes, so ranks that disagree (another model,
// another shape) fail here with a DistError naming this rank's tensors instead of mixing unrelated data.
std::vector<Tensor> all_reduce_mean(Communicator& comm, std::span<const Tensor> tensors,
                                    size_t bucket_bytes = kDefaultBucketBytes);
// all_reduce_mean in parts, for tensors computed in stages: the constructor checks the signature of all
// of them (like_these: the tensors to come, or tensors of the same shapes and dtypes), add() packs the next
// ones and, with start, starts their buckets, so that they travel while the caller computes the next part;
// progress() lets MPI move data between computations; finish() waits and returns the means of all, in the
// order added. Without start, the buckets start at finish(): the same messages, later.
class AllReduceMean {
 public:
  AllReduceMean(Communicator& comm, std::span<const Tensor> like_these,
                size_t bucket_bytes = kDefaultBucketBytes);
  AllReduceMean(const AllReduceMean&) = delete;
  AllReduceMean& operator=(const AllReduceMean&) = delete;
  ~AllReduceMean();  // waits for buckets started and not finished (their memory goes)
  void add(std::span<const Tensor> tensors, bool start = true);
  void progress();
  std::vector<Tensor> finish();

 private:
  struct Bucket {
    size_t first, last;  // tensors [first, last)
    std::vector<float> data;
    int request = -1;  // -1: not started
  };
  void start(Bucket& b);
  Communicator& comm_;
  size_t per_bucket_;
  std::vector<std::pair<Shape, DType>> expected_;
  std::vector<Tensor> added_;
  std::vector<Bucket> buckets_;
};

// Writes root's values into every rank's tensors (assign + realize), after the same signature check.
void broadcast(Communicator& comm, std::span<const Tensor> tensors, int root = 0);
// A hash of the tensors' shapes, dtypes and bytes.
uint64_t hash_values(std::span<const Tensor> tensors);
// Throws DistError on every rank unless every rank passed the same value; what names it in the message.
void check_same(Communicator& comm, uint64_t value, std::string_view what);

}  // namespace tg::dist
