// Decompositions from tensor ops, batched over leading axes. QR: Householder reflections with LAPACK's
// sign convention (geqrf/orgqr), so Q and R match PyTorch's, not only up to signs; each reflection is a
// rank-one update of the whole matrix with a vector that is zero above the current row. SVD: one-sided
// Jacobi rotations. Both store their matrices after every step, so the graph of a step reads buffers
// instead of recomputing every step before it.
#include <tuple>

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

namespace {

// One Jacobi rotation of columns i and j of w (and the same rotation of v's): it makes them orthogonal.
// c and s come from the 2x2 Gram matrix [[a, g], [g, b]] of the two columns (Golub-Van Loan 8.6.2).
void rotate(Tensor& w, Tensor& v, int64_t i, int64_t j) {
  auto col = [](const Tensor& x, int64_t k) { return detail::shrink_axis(x, x.ndim() - 1, k, k + 1); };
  Tensor wi = col(w, i), wj = col(w, j);
  Tensor a = wi.square().sum(-2, true), b = wj.square().sum(-2, true), g = (wi * wj).sum(-2, true);
  Tensor skip = g.eq(0);
  Tensor zeta = (b - a) / skip.where(1.0, 2 * g);
  Tensor t = zeta.ge(0).where(1.0, -1.0) / (zeta.abs() + (1 + zeta.square()).sqrt());
  t = skip.where(0.0, t);
  Tensor c = (1 + t.square()).rsqrt(), s = c * t;
  int64_t q = w.shape(-1);
  Tensor ei = Tensor::arange(q, {}, w.device()).eq(i).cast(w.dtype()),
         ej = Tensor::arange(q, {}, w.device()).eq(j).cast(w.dtype());
  auto apply = [&](const Tensor& x) {
    Tensor xi = col(x, i), xj = col(x, j);
    return (x + (c * xi - s * xj - xi) * ei + (s * xi + c * xj - xj) * ej).contiguous();
  };
  w = apply(w);
  v = apply(v);
}

// Largest |cos| of the angle between two columns of w: 0 once the sweeps have converged.
double off_diagonal(const Tensor& w) {
  Tensor gram = w.transpose(-1, -2).matmul(w);
  Tensor norms = gram.diagonal(0, -2, -1).sqrt();
  Tensor scale = norms.unsqueeze(-1) * norms.unsqueeze(-2);
  Tensor cosines = gram.abs() / scale.eq(0).where(1.0, scale);  // a zero column is orthogonal to all
  int64_t q = w.shape(-1);
  Tensor off = Tensor::eye(q, {}, dtypes::bool_, w.device()).where(0.0, cosines);
  return off.max().item<double>();
}

}  // namespace

// One-sided Jacobi (Hestenes): rotations orthogonalize the columns of A (of A^T when it is wide) until the
// largest cosine between two columns is below the precision; the column norms are the singular values.
// Sweeps run until then (at most 30), so the count is read back from the device after every sweep.
std::tuple<Tensor, Tensor, Tensor> Tensor::svd() const {
  if (ndim() < 2)
    throw ShapeError("svd", fmt::format("needs at least 2 dimensions, got {}", detail::shape_str(shape())));
  auto m = static_cast<int64_t>(shape(-2)), n = static_cast<int64_t>(shape(-1));
  bool wide = m < n;
  Tensor w = detail::to_float(*this);
  w = (wide ? w.transpose(-1, -2) : w).contiguous();
  int64_t q = std::min(m, n);
  Shape square(shape().begin(), shape().end() - 2);
  square.insert(square.end(), {q, q});
  Tensor v = eye(q, {}, w.dtype(), device()).expand(square).contiguous();
  double tol = w.dtype() == dtypes::float64 ? 1e-14 : 1e-6;
  for (int sweep = 0; sweep < 30 && q > 1 && off_diagonal(w) > tol; sweep++) {
    for (int64_t i = 0; i < q; i++)
      for (int64_t j = i + 1; j < q; j++) rotate(w, v, i, j);
    Tensor::realize_later({v});  // stored by the next check with w, which it reads
  }
  Tensor s = w.square().sum(-2).sqrt();  // (..., q)
  Tensor u = w / s.eq(0).where(1.0, s).unsqueeze(-2);
  // descending singular values, as LAPACK
  auto [sorted, order] = s.sort(-1, true);
  Tensor by = order.unsqueeze(-2);
  u = u.gather(-1, by.expand(u.shape()));
  v = v.gather(-1, by.expand(v.shape()));
  if (wide) return {v, sorted, u.transpose(-1, -2)};
  return {u, sorted, v.transpose(-1, -2)};
}

}  // namespace tg
