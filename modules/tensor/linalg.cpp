// QR decomposition by Householder reflections with LAPACK's sign convention (geqrf/orgqr), so Q and R
// match PyTorch's, not only up to signs. Each reflection is a rank-one update of the whole matrix with a
// vector that is zero above the current row; R and Q are stored after every step, so the graph of step j
// reads two buffers instead of recomputing every step before it.
#include <fmt/format.h>

#include "base/error.hpp"
#include "tensor/internal.hpp"

namespace tg {

std::pair<Tensor, Tensor> Tensor::qr() const {
  if (ndim() < 2)
    throw ShapeError("qr", fmt::format("needs at least 2 dimensions, got {}", detail::shape_str(shape())));
  auto m = static_cast<int64_t>(shape(-2)), n = static_cast<int64_t>(shape(-1)), k = std::min(m, n);
  Tensor r = detail::to_float(*this).contiguous();
  Shape batch(shape().begin(), shape().end() - 2), square = batch;
  square.insert(square.end(), {m, m});
  Tensor q = eye(m, {}, r.dtype(), device()).expand(square).contiguous();
  Tensor row = arange(m, {}, device()).unsqueeze(-1);  // (m, 1)
  for (int64_t j = 0; j + 1 < m && j < n; j++) {
    Tensor col = detail::shrink_axis(r, r.ndim() - 1, j, j + 1);        // (..., m, 1)
    Tensor alpha = detail::shrink_axis(col, col.ndim() - 2, j, j + 1);  // (..., 1, 1)
    Tensor below = row.gt(j).where(col, 0.0);
    Tensor tail = below.square().sum(-2, true);  // |x[j+1:]|^2
    Tensor beta = alpha.ge(0).where(-(alpha.square() + tail).sqrt(), (alpha.square() + tail).sqrt());
    Tensor flat = tail.eq(0);  // nothing below the diagonal: no reflection (tau = 0), as dlarfg
    Tensor v = row.eq(j).where(1.0, below / flat.where(1.0, alpha - beta));  // (..., m, 1)
    Tensor tau = flat.where(0.0, (beta - alpha) / flat.where(1.0, beta));
    r = (r - tau * v * v.transpose(-1, -2).matmul(r)).contiguous();
    q = (q - tau * q.matmul(v) * v.transpose(-1, -2)).contiguous();
  }
  Tensor rk = detail::shrink_axis(r, r.ndim() - 2, 0, k).triu();
  return {detail::shrink_axis(q, q.ndim() - 1, 0, k), rk};
}

}  // namespace tg
