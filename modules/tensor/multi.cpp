#include "tensor/multi.hpp"

#include <fmt/format.h>

#include "base/error.hpp"

namespace tg {

std::vector<Tensor> shard(const Tensor& x, std::span<const std::string> devices, std::optional<int> axis) {
  if (devices.empty()) throw ValueError("shard", "needs at least one device");
  std::vector<Tensor> out;
  if (!axis) {
    for (const std::string& d : devices) out.push_back(x.to(d));
    return out;
  }
  int64_t n = static_cast<int64_t>(devices.size());
  int64_t rank = static_cast<int64_t>(x.shape().size());
  int a = *axis < 0 ? static_cast<int>(*axis + rank) : *axis;
  if (a < 0 || a >= rank)
    throw ValueError("shard", fmt::format("axis {} is out of range for a tensor of {} dims", *axis, rank));
  int64_t size = x.shape()[static_cast<size_t>(a)];
  if (size % n != 0)
    throw ValueError("shard",
                     fmt::format("axis {} of size {} does not split evenly over {} devices", a, size, n));
  std::vector<Tensor> parts = x.chunk(n, a);
  for (size_t i = 0; i < devices.size(); i++) out.push_back(parts[i].to(devices[i]));
  return out;
}

namespace {
// Each ring step is realized before the next reads it, as the steps of a ring wait on their neighbours.
void realize_step(const std::vector<std::vector<Tensor>>& chunk) {
  std::vector<Tensor> all;
  for (const auto& c : chunk) all.insert(all.end(), c.begin(), c.end());
  Tensor::realize_all(all);
}
}  // namespace

std::vector<Tensor> all_reduce_sum(std::span<const Tensor> xs) {
  if (xs.empty()) throw ValueError("all_reduce", "needs at least one tensor");
  for (size_t i = 1; i < xs.size(); i++) {
    if (xs[i].shape() != xs[0].shape())
      throw ShapeError("all_reduce", fmt::format("tensor {} has shape {} but tensor 0 has {}", i,
                                                 shape_str(xs[i].shape()), shape_str(xs[0].shape())));
    if (xs[i].dtype() != xs[0].dtype())
      throw DTypeError("all_reduce", fmt::format("tensor {} is {} but tensor 0 is {}", i,
                                                 xs[i].dtype().name(), xs[0].dtype().name()));
  }
  size_t n = xs.size();
  int64_t numel = xs[0].numel();
  if (n == 1) return {xs[0]};
  if (numel < static_cast<int64_t>(n)) {  // too small to split into n chunks: gather on one, copy back
    Tensor sum = xs[0];
    for (size_t i = 1; i < n; i++) sum = sum + xs[i].to(xs[0].device());
    std::vector<Tensor> out;
    for (const Tensor& x : xs) out.push_back(sum.to(x.device()));
    return out;
  }
  Shape sizes;
  for (size_t k = 0; k < n; k++)
    sizes.push_back(numel / static_cast<int64_t>(n) +
                    (static_cast<int64_t>(k) < numel % static_cast<int64_t>(n)));
  std::vector<Tensor> flat;  // realized first: the chunks are views of buffers that already exist
  for (const Tensor& x : xs) flat.push_back(x.flatten().contiguous());
  Tensor::realize_all(flat);
  std::vector<std::vector<Tensor>> chunk(n);  // chunk[device][k]
  for (size_t i = 0; i < n; i++)
    for (const Tensor& c : flat[i].split(sizes)) chunk[i].push_back(c.contiguous());
  realize_step(chunk);  // each chunk its own buffer: a copy moves whole buffers
  // reduce-scatter: at step s device i passes its partial sum of chunk (i - s) mod n on to device i+1;
  // after n-1 steps device i holds the whole sum of chunk (i + 1) mod n
  for (size_t s = 0; s + 1 < n; s++) {
    std::vector<std::vector<Tensor>> next = chunk;
    for (size_t i = 0; i < n; i++) {
      size_t to = (i + 1) % n, k = (i + n - s) % n;
      next[to][k] = chunk[to][k] + chunk[i][k].to(xs[to].device());
    }
    chunk = std::move(next);
    realize_step(chunk);
  }
  // all-gather: at step s device i passes the finished chunk (i + 1 - s) mod n on to device i+1
  for (size_t s = 0; s + 1 < n; s++) {
    std::vector<std::vector<Tensor>> next = chunk;
    for (size_t i = 0; i < n; i++) {
      size_t to = (i + 1) % n, k = (i + 1 + n - s) % n;
      next[to][k] = chunk[i][k].to(xs[to].device());
    }
    chunk = std::move(next);
    realize_step(chunk);
  }
  std::vector<Tensor> out;
  for (size_t i = 0; i < n; i++) out.push_back(Tensor::cat(chunk[i]).reshape(xs[0].shape()));
  return out;
}

}  // namespace tg
