#pragma once
// One lazy computation realized in stages, one realize per stage in order, without computing anything twice:
// realizing a stage also realizes the nodes of its graph that later stages read (an activation, the gradient
// at a cut), and the later stages read those buffers instead. `tg train-mnist --dist mpi` realizes the
// gradients a few layers at a time, the last layers first, and all-reduces each stage's gradients while the
// next stage computes.
//
//   loss.backward();
//   StagedRealize s({{loss, head.weight.grad()}, {body.weight.grad()}});
//   auto head = s.realize(0);   // forward, head's gradient, and what stage 1 needs of them
//   start_sending(head);
//   auto body = s.realize(1);   // the rest of the backward only
//
// Under a JIT, capture each stage on its own and return shared(i) from stage i's capture as well: its
// replays then write the buffers the later stages' replays read.
#include <cstddef>
#include <vector>

#include "tensor/tensor.hpp"

namespace tg::dist {

class StagedRealize {
 public:
  explicit StagedRealize(std::vector<std::vector<Tensor>> stages);
  size_t size() const { return stages_.size(); }
  // Stage i's tensors, realized; stages are realized once each, in order.
  std::vector<Tensor> realize(size_t i);
  // The buffers realize(i) made for later stages.
  const std::vector<Tensor>& shared(size_t i) const { return shared_.at(i); }

 private:
  std::vector<std::vector<Tensor>> stages_;
  std::vector<std::vector<Tensor>> shared_;
  size_t next_ = 0;
};

}  // namespace tg::dist
