"""The methods bound for tinygrad's API (issue 48), called with tinygrad's keyword forms, against PyTorch: forward
values and, where differentiable, the gradient of a random upstream gradient."""
import inspect, unittest
import numpy as np
import torch
import torch.nn.functional as F
from tinygrad_cpp import Tensor, dtypes

rng = np.random.default_rng(48)


def randn(*shape): return rng.standard_normal(shape).astype(np.float32)


class Case(unittest.TestCase):
  def check(self, ours, theirs, *arrays, grad=True, atol=1e-5, rtol=1e-5):
    """ours(*Tensors) against theirs(*torch tensors); then d(sum(out * g))/d(inputs) on both."""
    xs = [Tensor(a, requires_grad=grad) for a in arrays]
    ts = [torch.tensor(a, requires_grad=grad) for a in arrays]
    o, t = ours(*xs), theirs(*ts)
    np.testing.assert_allclose(o.numpy(), t.detach().numpy(), atol=atol, rtol=rtol)
    if not grad: return
    g = randn(*t.shape)
    (o * Tensor(g)).sum().backward()
    (t * torch.tensor(g)).sum().backward()
    for x, tt in zip(xs, ts):
      np.testing.assert_allclose(x.grad.numpy(), tt.grad.numpy(), atol=atol * 10, rtol=rtol * 10)


class TestScans(Case):
  def test_cumprod(self): self.check(lambda x: x.cumprod(axis=1), lambda x: x.cumprod(dim=1), randn(3, 5))
  def test_logcumsumexp(self): self.check(lambda x: x.logcumsumexp(axis=1), lambda x: x.logcumsumexp(1), randn(3, 5))

  def test_cummax_cummin(self):
    a = randn(4, 6)
    for name in ("cummax", "cummin"):
      v, i = getattr(Tensor(a), name)(axis=1)
      tv, ti = getattr(torch.tensor(a), name)(1)
      np.testing.assert_allclose(v.numpy(), tv.numpy())
      np.testing.assert_array_equal(i.numpy(), ti.numpy())
    self.check(lambda x: x.cummax(axis=0)[0], lambda x: x.cummax(0)[0], a)


class TestSorting(Case):
  def test_sort_argsort_topk(self):
    a = randn(3, 7)
    v, i = Tensor(a).sort(dim=1, descending=True)
    tv, ti = torch.tensor(a).sort(dim=1, descending=True)
    np.testing.assert_allclose(v.numpy(), tv.numpy())
    np.testing.assert_array_equal(i.numpy(), ti.numpy())
    np.testing.assert_array_equal(Tensor(a).argsort(dim=0).numpy(), torch.tensor(a).argsort(dim=0).numpy())
    v, i = Tensor(a).topk(3, dim=-1, largest=False)
    tv, ti = torch.tensor(a).topk(3, dim=-1, largest=False)
    np.testing.assert_allclose(v.numpy(), tv.numpy())
    np.testing.assert_array_equal(i.numpy(), ti.numpy())
    self.check(lambda x: x.sort(dim=1)[0], lambda x: x.sort(dim=1)[0], a)


class TestSelection(Case):
  def test_scatter(self):
    a, src = randn(3, 5), randn(3, 2)
    idx = np.array([[0, 4], [1, 2], [3, 0]], np.int64)
    self.check(lambda x, s: x.scatter(dim=1, index=Tensor(idx), src=s),
               lambda x, s: x.scatter(1, torch.tensor(idx), s), a, src, grad=False)
    self.check(lambda x, s: x.scatter(1, Tensor(idx), s, reduce="add"),
               lambda x, s: x.scatter(1, torch.tensor(idx), s, reduce="add"), a, src, grad=False)
    self.check(lambda x: x.scatter(1, Tensor(idx), 2.0), lambda x: x.scatter(1, torch.tensor(idx), 2.0), a, grad=False)

  def test_scatter_reduce(self):
    a, src = randn(2, 4), randn(2, 6)
    idx = np.array([[0, 1, 1, 3, 0, 0], [2, 2, 2, 1, 0, 3]], np.int64)
    for reduce in ("sum", "prod", "mean", "amax", "amin"):
      for include_self in (True, False):
        self.check(lambda x, s: x.scatter_reduce(dim=1, index=Tensor(idx), src=s, reduce=reduce, include_self=include_self),
                   lambda x, s: x.scatter_reduce(1, torch.tensor(idx), s, reduce=reduce, include_self=include_self),
                   a, src, grad=reduce == "sum", atol=1e-5)

  def test_masked_select_nonzero(self):
    a = randn(3, 4)
    np.testing.assert_allclose(Tensor(a).masked_select(Tensor(a > 0)).numpy(), a[a > 0])
    np.testing.assert_array_equal(Tensor(a > 0).nonzero().numpy(), torch.tensor(a > 0).nonzero().numpy())

  def test_diag_diagonal_masks(self):
    a = randn(3, 4, 4)
    self.check(lambda x: x.diagonal(offset=1, dim1=1, dim2=2), lambda x: x.diagonal(offset=1, dim1=1, dim2=2), a)
    self.check(lambda x: x.diag(), lambda x: x.diag(), randn(4))
    self.check(lambda x: x.diag(), lambda x: x.diag(), randn(4, 4))
    self.check(lambda x: x.tril(diagonal=-1), lambda x: x.tril(diagonal=-1), a)
    self.check(lambda x: x.masked_fill(Tensor(a > 0), 0.5), lambda x: x.masked_fill(torch.tensor(a > 0), 0.5), a)

  def test_indexing_with_lists(self):
    a = randn(4, 5)
    self.check(lambda x: x[[0, 2]], lambda x: x[[0, 2]], a)
    self.check(lambda x: x[[0, 1], [1, 3]], lambda x: x[[0, 1], [1, 3]], a)
    self.check(lambda x: x[([0, 3], [2, 2])], lambda x: x[([0, 3], [2, 2])], a)


class TestMath(Case):
  def test_isclose_copysign_lerp(self):
    a, b = randn(5), randn(5)
    b[0] = a[0] + 1e-7
    np.testing.assert_array_equal(Tensor(a).isclose(Tensor(b), rtol=1e-5, atol=1e-6).numpy(),
                                  torch.isclose(torch.tensor(a), torch.tensor(b), rtol=1e-5, atol=1e-6).numpy())
    self.assertEqual(Tensor(a).allclose(Tensor(a)), True)
    self.check(lambda x, y: x.copysign(y), lambda x, y: x.copysign(y), a, b, grad=False)
    self.check(lambda x, y: x.lerp(y, 0.3), lambda x, y: x.lerp(y, 0.3), a, b)

  def test_std_mean_var_mean(self):
    a = randn(4, 6)
    for name in ("std_mean", "var_mean"):
      s, m = getattr(Tensor(a), name)(axis=1, keepdim=True, correction=1)
      ts, tm = getattr(torch, name)(torch.tensor(a), dim=1, keepdim=True, unbiased=True)
      np.testing.assert_allclose(s.numpy(), ts.numpy(), rtol=1e-5)
      np.testing.assert_allclose(m.numpy(), tm.numpy(), rtol=1e-5, atol=1e-6)
    self.check(lambda x: x.std_mean(axis=0)[0], lambda x: torch.std_mean(x, dim=0)[0], a)

  def test_activation_parameters(self):
    a = randn(10)
    self.check(lambda x: x.hardsigmoid(), F.hardsigmoid, a)
    self.check(lambda x: x.selu(), F.selu, a, atol=1e-4)
    self.check(lambda x: x.softmax(axis=0, dtype=dtypes.float64), lambda x: F.softmax(x.double(), 0), a)
    self.check(lambda x: x.normalize(dim=0), lambda x: F.normalize(x, dim=0), a)

  def test_dtype_forms_and_python_scalars(self):
    a = np.array([[5, -3, 2], [0, 7, -8]], np.int32)
    self.assertEqual(Tensor(a).cast("float16").dtype, dtypes.float16)
    self.assertEqual(Tensor(a).cast(dtype="int64").dtype, dtypes.int64)
    np.testing.assert_array_equal((Tensor(a) & 1).numpy(), a & 1)
    np.testing.assert_array_equal((Tensor(a) | 2).numpy(), a | 2)
    np.testing.assert_array_equal(Tensor(a).any(axis=1).numpy(), a.any(axis=1))
    np.testing.assert_array_equal(Tensor(a).all(axis=0, keepdim=True).numpy(), a.all(axis=0, keepdims=True))
    np.testing.assert_array_equal(Tensor(a).div(3, rounding_mode="floor").numpy(),
                                  torch.div(torch.tensor(a), 3, rounding_mode="floor").numpy())
    np.testing.assert_array_equal(Tensor(a).div(3, rounding_mode="trunc").numpy(),
                                  torch.div(torch.tensor(a), 3, rounding_mode="trunc").numpy())
    self.check(lambda x: x.clip(min_=0), lambda x: x.clip(min=0), randn(6))
    self.check(lambda x: x.clip(max_=0.2), lambda x: x.clip(max=0.2), randn(6))
    self.assertIsInstance(Tensor([1]).device, str)


class TestMovement(Case):
  def test_pad_forms(self):
    a = randn(2, 3, 4)
    self.check(lambda x: x.pad(((0, 0), None, (1, 2))), lambda x: F.pad(x, (1, 2)), a)
    self.check(lambda x: x.pad((1, 2, 0, 1)), lambda x: F.pad(x, (1, 2, 0, 1)), a)
    self.check(lambda x: x.pad((1, 1), value=-1.0), lambda x: F.pad(x, (1, 1), value=-1.0), a)
    for mode in ("reflect", "replicate", "circular"):
      self.check(lambda x: x.pad((2, 1), mode=mode), lambda x: F.pad(x, (2, 1), mode=mode), a)

  def test_shape_forms(self):
    a = randn(2, 3, 4)
    self.check(lambda x: x.reshape(6, -1), lambda x: x.reshape(6, -1), a)
    self.check(lambda x: x.reshape(shape=(4, 6)), lambda x: x.reshape(4, 6), a)
    self.check(lambda x: x.permute(order=(2, 0, 1)), lambda x: x.permute(2, 0, 1), a)
    self.check(lambda x: x.flip(0, 2), lambda x: x.flip(0, 2), a)
    self.check(lambda x: x.expand(3, 2, 3, 4), lambda x: x.expand(3, 2, 3, 4), a)
    self.check(lambda x: x.repeat(1, 2, 1), lambda x: x.repeat(1, 2, 1), a)
    self.check(lambda x: x.roll(shifts=1, dims=2), lambda x: x.roll(1, 2), a)
    self.check(lambda x: x.repeat_interleave(2, dim=1), lambda x: x.repeat_interleave(2, dim=1), a)
    self.check(lambda x: x.unfold(dim=2, size=2, step=1), lambda x: x.unfold(2, 2, 1), a)
    self.check(lambda x: x.rearrange("a b c -> c (a b)"), lambda x: x.permute(2, 0, 1).reshape(4, 6), a)


class TestNN(Case):
  def test_interpolate(self):
    a = randn(1, 2, 4, 5)
    for mode, ac in (("bilinear", True), ("bilinear", False), ("nearest", False)):
      kw = {} if mode == "nearest" else {"align_corners": ac}
      self.check(lambda x: x.interpolate(size=(7, 3), mode=mode, align_corners=ac),
                 lambda x: F.interpolate(x, size=(7, 3), mode=mode, **kw), a, atol=1e-5)

  def test_conv_transpose2d(self):
    x, w, b = randn(1, 4, 5, 5), randn(4, 3, 3, 3), randn(3)
    self.check(lambda x, w, b: x.conv_transpose2d(w, bias=b, stride=2, padding=1, output_padding=1),
               lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1), x, w, b, atol=1e-4)

  def test_conv2d_any_rank_and_asymmetric_padding(self):
    self.check(lambda x, w: x.conv2d(w, padding=(1, 2)), lambda x, w: F.conv1d(F.pad(x, (1, 2)), w),
               randn(2, 3, 10), randn(4, 3, 3), atol=1e-4)
    self.check(lambda x, w: x.conv2d(w, padding=1), lambda x, w: F.conv3d(x, w, padding=1),
               randn(1, 2, 4, 4, 4), randn(3, 2, 3, 3, 3), atol=1e-4)
    self.check(lambda x, w: x.conv2d(w, padding=(1, 2, 0, 1)), lambda x, w: F.conv2d(F.pad(x, (1, 2, 0, 1)), w),
               randn(1, 2, 6, 6), randn(3, 2, 3, 3), atol=1e-4)

  def test_pools_and_unpool(self):
    a = randn(1, 2, 6, 6)
    self.check(lambda x: x.max_pool2d(), lambda x: F.max_pool2d(x, 2), a)
    self.check(lambda x: x.avg_pool2d(kernel_size=(3, 3), stride=1, padding=1),
               lambda x: F.avg_pool2d(x, 3, 1, 1), a)
    tv, ti = F.max_pool2d(torch.tensor(a), 2, return_indices=True)
    got = Tensor(tv.numpy()).max_unpool2d(Tensor(ti.numpy()), kernel_size=(2, 2))
    np.testing.assert_allclose(got.numpy(), F.max_unpool2d(tv, ti, 2).numpy())

  def test_losses(self):
    logits, y = randn(5, 4), rng.integers(0, 4, 5)
    self.check(lambda x: x.log_softmax().nll_loss(Tensor(y)), lambda x: F.nll_loss(F.log_softmax(x, 1), torch.tensor(y)),
               logits)
    self.check(lambda x: x.log_softmax().nll_loss(Tensor(y), reduction="sum"),
               lambda x: F.nll_loss(F.log_softmax(x, 1), torch.tensor(y), reduction="sum"), logits)
    x3, y3 = randn(2, 4, 3), rng.integers(0, 4, (2, 3))
    self.check(lambda x: x.cross_entropy(Tensor(y3)), lambda x: F.cross_entropy(x, torch.tensor(y3)), x3)
    t, pw = (randn(5, 4) > 0).astype(np.float32), np.abs(randn(4)) + 0.5
    self.check(lambda x: x.binary_crossentropy_logits(Tensor(t), pos_weight=Tensor(pw)),
               lambda x: F.binary_cross_entropy_with_logits(x, torch.tensor(t), pos_weight=torch.tensor(pw)), logits)

  def test_attention_gqa(self):
    q, k, v = randn(1, 4, 3, 8), randn(1, 2, 3, 8), randn(1, 2, 3, 8)

    def ref(q, k, v):
      k, v = k.repeat_interleave(2, dim=1), v.repeat_interleave(2, dim=1)
      return torch.softmax(q @ k.transpose(-1, -2) / np.sqrt(8), -1) @ v
    self.check(lambda q, k, v: q.scaled_dot_product_attention(k, v, enable_gqa=True), ref, q, k, v, atol=1e-5)

  def test_einsum_ellipsis_and_dot(self):
    self.check(lambda a, b: Tensor.einsum("...ij,...jk->...ik", a, b), lambda a, b: torch.einsum("...ij,...jk->...ik", a, b),
               randn(2, 3, 4), randn(2, 4, 5), atol=1e-5)
    self.check(lambda v, m: v.dot(m), lambda v, m: torch.matmul(v, m), randn(4), randn(2, 4, 3), atol=1e-5)


class TestLayers(Case):
  def test_rmsnorm(self):
    from tinygrad_cpp import nn
    x = randn(2, 3, 8)
    norm = nn.RMSNorm(8, eps=1e-6)
    norm.weight = Tensor(randn(8))
    w = torch.tensor(norm.weight.numpy())
    self.check(norm, lambda t: t * torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + 1e-6) * w, x, atol=1e-5)

  def test_batchnorm3d(self):
    from tinygrad_cpp import nn
    x = randn(2, 3, 4, 4, 4)
    ref = torch.nn.BatchNorm3d(3)
    ref.train()
    self.check(nn.BatchNorm3d(3), ref, x, atol=1e-4)

  def test_const_like_and_dtype_groups(self):
    c = Tensor([1, 2]).const_like(3.5, dtype=dtypes.float16)
    self.assertEqual(c.dtype, dtypes.float16)
    self.assertEqual(c.tolist(), [3.5, 3.5])
    self.assertIn(dtypes.uint8, dtypes.ints)
    self.assertEqual(dtypes.int32s, (dtypes.uint32, dtypes.int32))
    self.assertTrue(all(dtypes.is_float(d) for d in dtypes.floats))
    self.assertTrue(dtypes.is_unsigned(dtypes.uint16) and not dtypes.is_unsigned(dtypes.int16))


class TestMoreBindings(Case):
  """The bindings of the second pass (allow-list 59 -> 29)."""
  def test_linear_and_conv2d_dtype(self):
    w, b = randn(6, 4), randn(6)
    self.check(lambda x, w, b: x.linear(w.T, b, dtype=dtypes.float32), lambda x, w, b: F.linear(x, w, b),
               randn(3, 4), w, b)
    h = Tensor(randn(2, 3)).cast(dtypes.float16).linear(Tensor(randn(3, 5)).cast(dtypes.float16), dtype=dtypes.float32)
    self.assertEqual(h.dtype, dtypes.float32)
    self.check(lambda x, w: x.conv2d(w, padding=1, dtype=dtypes.float32), lambda x, w: F.conv2d(x, w, padding=1),
               randn(1, 2, 5, 5), randn(3, 2, 3, 3), atol=1e-4)
    c = Tensor(randn(1, 2, 5, 5)).cast(dtypes.float16).conv2d(Tensor(randn(3, 2, 3, 3)).cast(dtypes.float16),
                                                             dtype=dtypes.float32)
    self.assertEqual(c.dtype, dtypes.float32)

  def test_newton_schulz(self):
    # X = G/|G|; X = aX + b(XX^T)X + c(XX^T)^2 X, the same polynomial written out in PyTorch
    coef = (3.4445, -4.775, 2.0315)
    def torch_ns(g, steps=3):
      x = g / (g.norm() + 1e-7)
      for _ in range(steps):
        a = x @ x.T
        x = coef[0] * x + coef[1] * a @ x + coef[2] * a @ a @ x
      return x
    self.check(lambda g: g.newton_schulz(3, coef), torch_ns, randn(4, 6), atol=1e-4)

  def test_contiguous_backward(self):
    self.check(lambda x: (x.contiguous_backward() * 3).exp(), lambda x: (x * 3).exp(), randn(3, 4))

  def test_shard_like_max_shape_const_from_blob(self):
    x = Tensor(randn(4, 2))
    self.assertEqual(x.shard_like(Tensor([1.0])).device, Tensor([1.0]).device)
    self.assertEqual(x.max_shape, (4, 2))
    self.assertEqual(x.max_numel(), 8)
    c = Tensor.const(2.5, dtypes.float16)
    self.assertEqual((c.dtype, c.item()), (dtypes.float16, 2.5))
    a = np.arange(6, dtype=np.float32)
    t = Tensor.from_blob(a.ctypes.data, (2, 3), dtype=dtypes.float32)
    self.assertEqual(t.tolist(), [[0, 1, 2], [3, 4, 5]])

  def test_random_bits(self):
    # tinygrad 0.14.0's own output for these keys and counters (DEV=CPU), recorded: threefry2x32 bit for bit
    k = Tensor([1, 2], dtype=dtypes.uint32)
    self.assertEqual(Tensor.random_bits(k, Tensor([7, 0], dtype=dtypes.uint32), 5).tolist(),
                     [3056123755, 3895771153, 1906669961, 820867342, 1424068980])
    self.assertEqual(Tensor.random_bits(k, Tensor([0xffffffff, 3], dtype=dtypes.uint32), 4).tolist(),  # carry
                     [4036466164, 227113199, 1612606890, 3312124064])
    with self.assertRaisesRegex(ValueError, "random_bits"): Tensor.random_bits(Tensor([1.0, 2.0]), k, 3)

  def test_dtypes_finfo_from_py_fp8(self):
    # (exponent, mantissa) bits: PyTorch's finfo gives the width and eps = 2^-mantissa; fp8 from the OCP spec
    import math
    for d, td in ((dtypes.float16, torch.float16), (dtypes.bfloat16, torch.bfloat16), (dtypes.float32, torch.float32),
                  (dtypes.float64, torch.float64)):
      mant = round(-math.log2(torch.finfo(td).eps))
      self.assertEqual(dtypes.finfo(d), (torch.finfo(td).bits - 1 - mant, mant))
    self.assertEqual((dtypes.finfo(dtypes.fp8e4m3), dtypes.finfo(dtypes.fp8e5m2)), ((4, 3), (5, 2)))
    with self.assertRaises(ValueError): dtypes.finfo(dtypes.int32)
    self.assertEqual([dtypes.from_py(v) for v in (True, 3, 2.0, [1, 2.0], [True, 1], [])],
                     [dtypes.bool, dtypes.int32, dtypes.float32, dtypes.float32, dtypes.int32, dtypes.float32])
    with self.assertRaises(RuntimeError): dtypes.from_py("x")
    self.assertEqual(dtypes.fp8_ocp, (dtypes.fp8e4m3, dtypes.fp8e5m2))

  def test_calc_stats(self):
    from tinygrad_cpp import nn
    a = randn(4, 3, 5, 5)
    bn = nn.BatchNorm(3)
    bn.train()
    mean, var = bn.calc_stats(Tensor(a))
    ta = torch.tensor(a)
    np.testing.assert_allclose(mean.numpy(), ta.mean((0, 2, 3)).numpy(), atol=1e-6)
    np.testing.assert_allclose(var.numpy(), ta.var((0, 2, 3), unbiased=False).numpy(), atol=1e-5)
    bn.train(False)
    mean, var = bn.calc_stats(Tensor(a))  # evaluation: the running statistics
    self.assertEqual((mean.tolist(), var.shape), ([0.0] * 3, (1, 3, 1, 1)))


class TestOptimizers(unittest.TestCase):
  """tinygrad's optimizer signatures (SGD/Adam/AdamW/Muon are functions returning LARS/LAMB) against torch."""
  def run_both(self, ours, theirs, steps=3):
    from tinygrad_cpp import nn
    w0 = randn(4, 3)
    w, tw = Tensor(w0, requires_grad=True), torch.tensor(w0, requires_grad=True)
    opt, topt = ours([w]), theirs([tw])
    for _ in range(steps):
      opt.zero_grad(); (w * w).sum().backward(); opt.step()
      topt.zero_grad(); (tw * tw).sum().backward(); topt.step()
    np.testing.assert_allclose(w.numpy(), tw.detach().numpy(), atol=1e-5, rtol=1e-5)
    return opt

  def test_sgd_adam_adamw(self):
    from tinygrad_cpp.nn import optim
    sgd = self.run_both(lambda p: optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01, device=None,
                                              fused=False), lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9,
                                                                                       nesterov=True, weight_decay=0.01))
    self.assertIsInstance(sgd, optim.LARS)
    # classic momentum (lr before the momentum) equals PyTorch's while the lr is constant
    self.run_both(lambda p: optim.SGD(p, lr=0.1, momentum=0.9, classic=True),
                  lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9))
    self.run_both(lambda p: optim.Adam(p, lr=0.01), lambda p: torch.optim.Adam(p, lr=0.01))
    adamw = self.run_both(lambda p: optim.AdamW(p, lr=0.01, weight_decay=0.1),
                          lambda p: torch.optim.AdamW(p, lr=0.01, weight_decay=0.1))
    self.assertIsInstance(adamw, optim.LAMB)
    self.assertIsInstance(optim.Muon([Tensor(randn(3, 4), requires_grad=True)]), optim.LARS)
    with self.assertRaisesRegex(ValueError, "device"):
      optim.SGD([Tensor(randn(2), requires_grad=True)], device="NOT_A_DEVICE")

  def test_lamb_trust_ratio(self):
    # LAMB: AdamW's update u scaled by |p| / |u| per tensor; one step from m = v = 0 written out in numpy
    from tinygrad_cpp.nn import optim
    w0, lr, b1, b2, eps = randn(5), 0.1, 0.9, 0.999, 1e-6
    w = Tensor(w0, requires_grad=True)
    opt = optim.LAMB([w], lr=lr, b1=b1, b2=b2, eps=eps)
    opt.zero_grad(); (w * w).sum().backward(); opt.step()
    g = 2 * w0.astype(np.float64)
    m, v = (1 - b1) * g, (1 - b2) * g * g
    u = (m / (1 - b1)) / (np.sqrt(v / (1 - b2)) + eps)
    want = w0 - lr * np.linalg.norm(w0) / np.linalg.norm(u) * u
    np.testing.assert_allclose(w.numpy(), want, rtol=1e-5, atol=1e-6)


class TestState(unittest.TestCase):
  def test_files_as_tensors(self):
    import io, pathlib, tarfile, tempfile, zipfile
    from tinygrad_cpp.nn import state
    with tempfile.TemporaryDirectory() as d:
      d = pathlib.Path(d)
      (d / "a.bin").write_bytes(b"hello tensors")
      t = Tensor(d / "a.bin")
      self.assertEqual((t.dtype, t.shape, bytes(t.numpy())), (dtypes.uint8, (13,), b"hello tensors"))
      f = state.TensorIO(t)
      self.assertEqual((f.read(5), f.seek(6), f.read()), (b"hello", 6, b"tensors"))
      # torch.save's checkpoint, a zip of stored and deflated files, a tar
      torch.save({"w": torch.arange(6.0).reshape(2, 3)}, d / "m.pt")
      self.assertEqual(state.torch_load(str(d / "m.pt"))["w"].tolist(), [[0, 1, 2], [3, 4, 5]])
      self.assertEqual(state.torch_load(Tensor(d / "m.pt"))["w"].shape, (2, 3))
      with zipfile.ZipFile(d / "z.zip", "w") as z:
        z.writestr("s.txt", b"stored", compress_type=zipfile.ZIP_STORED)
        z.writestr("d.txt", b"deflated " * 20, compress_type=zipfile.ZIP_DEFLATED)
      files = state.zip_extract(d / "z.zip")
      self.assertEqual({k: bytes(v.numpy()) for k, v in files.items()}, {"s.txt": b"stored", "d.txt": b"deflated " * 20})
      with tarfile.open(d / "t.tar", "w") as tar:
        info = tarfile.TarInfo("x/y.txt"); info.size = 5
        tar.addfile(info, io.BytesIO(b"abcde"))
      self.assertEqual({k: bytes(v.numpy()) for k, v in state.tar_extract(d / "t.tar").items()}, {"x/y.txt": b"abcde"})
      # safetensors: the header as written by the safetensors package's format (8-byte length + JSON)
      state.safe_save({"x": Tensor([1.0, 2.0])}, str(d / "s.safetensors"))
      src, start, meta = state.safe_load_metadata(d / "s.safetensors")
      self.assertEqual((meta["x"]["dtype"], meta["x"]["shape"], src.shape[0] - start), ("F32", [2], 8))
      with self.assertRaisesRegex(ValueError, "too short"): state.safe_load_metadata(Tensor(np.zeros(3, np.uint8)))

  def test_from_url(self):
    import gzip, pathlib, tempfile
    with tempfile.TemporaryDirectory() as d:
      p = pathlib.Path(d) / "x.gz"
      p.write_bytes(gzip.compress(b"\x01\x02\x03"))
      self.assertEqual(Tensor.from_url(p.as_uri(), gunzip=True).tolist(), [1, 2, 3])


class TestSignatures(unittest.TestCase):
  def test_inspect_reads_our_signatures(self):
    self.assertEqual(str(inspect.signature(Tensor.pad)), "(self, padding, mode='constant', value=0.0)")
    self.assertEqual(list(inspect.signature(Tensor([1.0]).cat).parameters), ["args", "dim"])
    self.assertEqual(str(inspect.signature(Tensor.randint)), "(*args, low=0, high=10, dtype='int', device=None)")


if __name__ == "__main__":
  unittest.main()
