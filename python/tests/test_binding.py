"""The binding against numpy and PyTorch: values, dtypes, indexing, autograd, errors, nn, state, JIT."""
import os, tempfile, threading, time, unittest
import numpy as np
import torch
from tinygrad_cpp import Tensor, dtypes, Device, TinyJit, Context, Variable, nn

rng = np.random.default_rng(0)
HOST_IN_PLACE = ("CLANG", "INTERP")  # devices that use host memory in place: arrays and numpy() share it


def randn(*shape): return rng.standard_normal(shape).astype(np.float32)


class TestCreation(unittest.TestCase):
  def test_dtypes_follow_tinygrad(self):
    self.assertEqual(Tensor([1.0, 2]).dtype, dtypes.float32)
    self.assertEqual(Tensor([1, 2]).dtype, dtypes.int32)
    self.assertEqual(Tensor([True, False]).dtype, dtypes.bool)
    self.assertEqual(Tensor(np.zeros(3, np.float64)).dtype, dtypes.float64)
    self.assertEqual(Tensor(np.zeros(3, np.uint8)).dtype, dtypes.uint8)
    self.assertEqual(Tensor(3).dtype, dtypes.int32)
    self.assertEqual(Tensor(2.5).item(), 2.5)
    self.assertEqual(Tensor([1, 2], dtype=dtypes.float16).numpy().dtype, np.float16)

  def test_values(self):
    a = randn(3, 4)
    np.testing.assert_array_equal(Tensor(a).numpy(), a)
    np.testing.assert_array_equal(Tensor(a[:, ::2]).numpy(), a[:, ::2])  # a strided view
    self.assertEqual(Tensor([[1, 2], [3, 4]]).tolist(), [[1, 2], [3, 4]])
    np.testing.assert_array_equal(Tensor.arange(2, 11, 3).numpy(), np.arange(2, 11, 3))
    np.testing.assert_array_equal(Tensor.eye(3).numpy(), np.eye(3, dtype=np.float32))
    np.testing.assert_array_equal(Tensor.ones(2, 3).numpy(), np.ones((2, 3), np.float32))
    np.testing.assert_array_equal(Tensor.zeros((2, 3)).numpy(), np.zeros((2, 3), np.float32))
    np.testing.assert_array_equal(Tensor.full((2,), 7).numpy(), [7, 7])
    r = Tensor.rand(1000).numpy()
    self.assertTrue(((r >= 0) & (r < 1)).all() and 0.4 < r.mean() < 0.6)
    self.assertEqual(Device.DEFAULT, Tensor([1]).device)

  def test_large_round_trip_makes_no_copy(self):
    a = rng.random(25_000_000, dtype=np.float32)  # 100 MB
    t0 = time.perf_counter()
    b = Tensor(a).numpy()
    round_trip = time.perf_counter() - t0
    t0 = time.perf_counter()
    c = a.copy()
    one_copy = time.perf_counter() - t0
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(c, b)
    print(f"\n100 MB numpy -> Tensor -> numpy: {round_trip * 1e3:.3f} ms; one numpy copy of it: "
          f"{one_copy * 1e3:.3f} ms ({Device.DEFAULT})")
    if Device.DEFAULT in HOST_IN_PLACE:  # the array's own memory, both ways
      self.assertEqual(b.__array_interface__["data"][0], a.__array_interface__["data"][0])
      self.assertEqual(b.ctypes.data, a.ctypes.data)
      self.assertFalse(b.flags.writeable)

  def test_array_in_place(self):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = Tensor(a)
    del a  # the tensor keeps the array alive
    np.testing.assert_array_equal((t * 2).numpy(), np.arange(6).reshape(2, 3) * 2)
    if Device.DEFAULT in HOST_IN_PLACE:
      a = np.arange(4, dtype=np.int32)
      t = Tensor(a)
      a[0] = 10  # kernels read the array itself
      self.assertEqual((t * 2).tolist(), [20, 2, 4, 6])
    # the tensor never writes the array: an assign moves it to its own memory first
    a = np.arange(4, dtype=np.int32)
    t = Tensor(a)
    t.assign(t * 3).realize()
    self.assertEqual(t.tolist(), [0, 3, 6, 9])
    self.assertEqual(a.tolist(), [0, 1, 2, 3])
    # non-contiguous, misaligned and byte-swapped arrays are copied once
    w = np.random.default_rng(1).standard_normal((4, 6)).astype(np.float32)
    for x in (w[:, ::2], w.T, np.asfortranarray(w)):
      got = Tensor(x).numpy()
      np.testing.assert_array_equal(got, x)
      self.assertNotEqual(got.ctypes.data, x.ctypes.data)
    odd = np.frombuffer(np.arange(5, dtype=np.int32).tobytes()[:-1], dtype=np.uint8)[1:].view(np.int16)
    np.testing.assert_array_equal(Tensor(odd).numpy(), odd)
    big = np.arange(5, dtype=">i4")
    np.testing.assert_array_equal(Tensor(big).numpy(), [0, 1, 2, 3, 4])
    ro = np.arange(3, dtype=np.float32)
    ro.flags.writeable = False
    np.testing.assert_array_equal((Tensor(ro) + 1).numpy(), [1, 2, 3])

  def test_numpy_view_keeps_its_values(self):
    x = Tensor([1.0, 2.0, 3.0]).contiguous().realize()
    v = x.numpy()
    with self.assertRaises(ValueError):
      v[0] = 5  # a view of the tensor's buffer is read-only
    x.assign(x * 2).realize()  # moves x to new memory: v keeps the values it showed
    self.assertEqual(v.tolist(), [1, 2, 3])
    self.assertEqual(x.numpy().tolist(), [2, 4, 6])
    y = (Tensor([4.0]) + 1).numpy()  # the view holds the buffer after its tensor is gone
    self.assertEqual(y.tolist(), [5])
    w = np.array(Tensor([1, 2]))  # np.array copies: writable
    w[0] = 7
    self.assertEqual(w.tolist(), [7, 2])

  def test_replace(self):
    a = Tensor([1, 2, 3])
    b = a
    self.assertIs(type(a.replace(Tensor([4, 5, 6]) * 2)), Tensor)
    self.assertEqual(b.tolist(), [8, 10, 12])
    with self.assertRaisesRegex(ValueError, r"\[replace\] the new value has shape \(2,\)"):
      a.replace(Tensor([1, 2]))
    with self.assertRaisesRegex(TypeError, r"\[replace\] the new value is float but the tensor is int"):
      a.replace(Tensor([1.0, 2.0, 3.0]))
    # as tinygrad's test_mnist: every state tensor replaced by an equal lazy graph gets a buffer of its own,
    # so BatchNorm's running statistics (assigned in training) do not collide
    bn = nn.BatchNorm(4)
    Tensor.realize(*[p.replace(Tensor.ones_like(p).contiguous()) for p in nn.state.get_parameters(bn)])
    x = np.random.default_rng(1).random((2, 4, 3, 3)).astype(np.float32)  # the shared rng feeds later tests
    bn(Tensor(x)).realize()
    want_mean = 0.9 + 0.1 * x.mean((0, 2, 3))
    want_var = 0.9 + 0.1 * x.var((0, 2, 3), ddof=1)
    np.testing.assert_allclose(bn.running_mean.numpy(), want_mean, rtol=1e-5)
    np.testing.assert_allclose(bn.running_var.numpy(), want_var, rtol=1e-5)


class TestOps(unittest.TestCase):
  def test_elementwise_and_operators(self):
    a, b = randn(4, 5), randn(4, 5)
    ta, tb = Tensor(a), Tensor(b)
    for got, ref in [(ta + tb, a + b), (ta - 2, a - 2), (3 * ta, 3 * a), (ta / tb, a / b), (1 / ta, 1 / a),
                     (-ta, -a), (ta ** 2, a ** 2), (ta.exp(), np.exp(a)), (ta.relu(), np.maximum(a, 0)),
                     (ta.sigmoid(), 1 / (1 + np.exp(-a))), (ta.maximum(tb), np.maximum(a, b)),
                     (ta.abs().sqrt(), np.sqrt(np.abs(a))), ((ta > 0).where(ta, 0.5), np.where(a > 0, a, 0.5))]:
      np.testing.assert_allclose(got.numpy(), ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal((ta < tb).numpy(), a < b)
    np.testing.assert_array_equal((ta == ta).numpy(), np.ones((4, 5), bool))
    i = Tensor([7, -7, 5])
    np.testing.assert_array_equal((i // 2).numpy(), np.array([7, -7, 5]) // 2)
    np.testing.assert_array_equal((i % 3).numpy(), np.array([7, -7, 5]) % 3)
    np.testing.assert_array_equal((i & 3).numpy(), np.array([7, -7, 5]) & 3)
    self.assertEqual((i * 2).dtype, dtypes.int32)

  def test_activations_and_math_against_torch(self):
    a = randn(3, 5)
    ta = torch.from_numpy(a)
    F = torch.nn.functional
    cases = {
      "gelu": (Tensor(a).gelu(approximate="none"), F.gelu(ta)),
      "gelu_tanh": (Tensor(a).gelu(), F.gelu(ta, approximate="tanh")),
      "elu": (Tensor(a).elu(alpha=0.5), F.elu(ta, alpha=0.5)),
      "celu": (Tensor(a).celu(), F.celu(ta)),
      "selu": (Tensor(a).selu(), F.selu(ta)),
      "mish": (Tensor(a).mish(), F.mish(ta)),
      "hardswish": (Tensor(a).hardswish(), F.hardswish(ta)),
      "hardtanh": (Tensor(a).hardtanh(-0.5, 0.5), F.hardtanh(ta, -0.5, 0.5)),
      "softmin": (Tensor(a).softmin(), F.softmin(ta, dim=-1)),
      "atan": (Tensor(a).atan(), torch.atan(ta)),
      "erf": (Tensor(a).erf(), torch.erf(ta)),
      "sinh": (Tensor(a).sinh(), torch.sinh(ta)),
    }
    for name, (ours, ref) in cases.items():
      np.testing.assert_allclose(ours.numpy(), ref.numpy(), rtol=1e-5, atol=1e-6, err_msg=name)

  def test_reduce_movement_matmul(self):
    a, b = randn(3, 4, 5), randn(5, 2)
    t = Tensor(a)
    np.testing.assert_allclose(t.sum().item(), a.sum(), rtol=1e-5)
    np.testing.assert_allclose(t.sum(axis=1).numpy(), a.sum(axis=1), rtol=1e-5)
    np.testing.assert_allclose(t.max(axis=(0, 2), keepdim=True).numpy(), a.max(axis=(0, 2), keepdims=True))
    np.testing.assert_allclose(t.mean(axis=-1).numpy(), a.mean(axis=-1), rtol=1e-5)
    np.testing.assert_array_equal(t.argmax(axis=2).numpy(), a.argmax(axis=2))
    np.testing.assert_array_equal(t.permute(2, 0, 1).numpy(), a.transpose(2, 0, 1))
    np.testing.assert_array_equal(t.reshape(12, 5).numpy(), a.reshape(12, 5))
    np.testing.assert_array_equal(t.flip(1).numpy(), a[:, ::-1])
    np.testing.assert_array_equal(t.pad(((0, 0), (1, 2), (0, 0))).numpy(), np.pad(a, ((0, 0), (1, 2), (0, 0))))
    np.testing.assert_allclose((t @ Tensor(b)).numpy(), a @ b, rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(Tensor.cat(Tensor(a), Tensor(a), dim=1).numpy(), np.concatenate([a, a], 1))
    np.testing.assert_array_equal(Tensor(a).stack(Tensor(a)).numpy(), np.stack([a, a]))
    np.testing.assert_allclose(t.softmax().numpy(), torch.from_numpy(a).softmax(-1).numpy(), rtol=1e-5, atol=1e-7)

  def test_indexing(self):
    a = randn(4, 5, 6)
    t = Tensor(a)
    for idx in [1, -1, slice(1, 3), (slice(None), 2), (Ellipsis, 1), (None, 0), (1, slice(None, None, -2), 3),
                (slice(None), None, slice(1, 4)), (0, Ellipsis, None)]:
      np.testing.assert_array_equal(t[idx].numpy(), a[idx], err_msg=str(idx))
    np.testing.assert_array_equal(t[Tensor([0, 3, 1])].numpy(), a[[0, 3, 1]])
    np.testing.assert_array_equal(t[[2, 0]].numpy(), a[[2, 0]])

  def test_symbolic_axis(self):
    # the first 3 of 6 values on a size-i axis: the shape keeps i, reads give the values at i = 3 (numpy's
    # a[:3]); numbers index up to i's largest size, 6, with zeros past 3
    a = randn(6)
    t = Tensor(a)[:Variable("i", 1, 6).bind(3)]
    self.assertEqual(repr(t.shape[0]), "i")
    np.testing.assert_array_equal(t.numpy(), a[:3])
    self.assertEqual(t.tolist(), a[:3].tolist())
    np.testing.assert_array_equal(t[1:5].numpy(), np.concatenate([a[1:3], np.zeros(2, np.float32)]))

  def test_conv_pool(self):
    x, w, b = randn(2, 3, 9, 9), randn(4, 3, 3, 3), randn(4)
    ref = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(b), padding=1)
    got = Tensor(x).conv2d(Tensor(w), Tensor(b), padding=1)
    np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=1e-4, atol=1e-5)
    ref = torch.nn.functional.max_pool2d(torch.from_numpy(x), 2)
    np.testing.assert_array_equal(Tensor(x).max_pool2d().numpy(), ref.numpy())

  def test_conv_bad_shapes(self):
    # a dilated kernel larger than the input divided by a window count of 0 (SIGFPE); PyTorch raises too
    x, w = Tensor(randn(1, 1, 6, 7)), Tensor(randn(6, 1, 3, 3))
    with self.assertRaises(RuntimeError):
      torch.nn.functional.conv2d(torch.zeros(1, 1, 6, 7), torch.zeros(6, 1, 3, 3), dilation=3)
    with self.assertRaisesRegex(ValueError, r"^\[conv2d\] input \(1,1,6,7\) padded to 6 on axis 2 is smaller than "
                                r"kernel \(6,1,3,3\) with dilation 3 \(spans 7\)$"):
      Tensor.conv2d(x, w, dilation=3)
    with self.assertRaisesRegex(ValueError, r"^\[conv2d\] stride 0,1 and dilation 1,1 must be positive$"):
      x.conv2d(w, stride=(0, 1))
    # the same kernel fits once padded: PyTorch's values
    ref = torch.nn.functional.conv2d(torch.from_numpy(x.numpy()), torch.from_numpy(w.numpy()), dilation=3, padding=1)
    np.testing.assert_allclose(x.conv2d(w, dilation=3, padding=1).numpy(), ref.numpy(), rtol=1e-4, atol=1e-5)
    # an empty batch gives an empty output, and a zero weight gradient
    e, we = Tensor(np.zeros((0, 1, 6, 7), np.float32)), Tensor(randn(6, 1, 3, 3), requires_grad=True)
    y = e.conv2d(we)
    self.assertEqual(tuple(y.shape), (0, 6, 4, 5))
    y.sum().backward()
    np.testing.assert_array_equal(we.grad.numpy(), np.zeros((6, 1, 3, 3), np.float32))


class TestAutograd(unittest.TestCase):
  def test_against_torch(self):
    a, w = randn(4, 3), randn(3, 2)
    ta, tw = Tensor(a, requires_grad=True), Tensor(w, requires_grad=True)
    loss = (ta @ tw).relu().log_softmax().mean()
    loss.backward()
    pa, pw = torch.tensor(a, requires_grad=True), torch.tensor(w, requires_grad=True)
    ploss = (pa @ pw).relu().log_softmax(-1).mean()
    ploss.backward()
    np.testing.assert_allclose(loss.item(), ploss.item(), rtol=1e-5)
    np.testing.assert_allclose(ta.grad.numpy(), pa.grad.numpy(), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(tw.grad.numpy(), pw.grad.numpy(), rtol=1e-4, atol=1e-6)
    self.assertIsNone(Tensor([1.0]).grad)


class TestErrors(unittest.TestCase):
  def test_exceptions_carry_cpp_messages(self):
    with self.assertRaisesRegex(ValueError, r"^\[reshape\] cannot reshape \(2,2\) to \(5,\)$"):
      Tensor([[1, 2], [3, 4]]).reshape(5)
    with self.assertRaises(IndexError):
      Tensor([1, 2])[5]
    with self.assertRaises(ValueError):
      Tensor([1.0, 2.0]).item()
    with self.assertRaises(TypeError):
      Tensor(np.zeros(2, np.complex64))
    with self.assertRaises(ValueError):
      Context(NOT_A_VAR=1)


class TestNN(unittest.TestCase):
  def test_linear_matches_numpy(self):
    l = nn.Linear(3, 2)
    x = randn(5, 3)
    ref = x @ l.weight.numpy().T + l.bias.numpy()
    np.testing.assert_allclose(l(Tensor(x)).numpy(), ref, rtol=1e-5, atol=1e-6)

  def test_sgd_step(self):
    w0 = randn(3)
    w = Tensor(w0, requires_grad=True)
    opt = nn.optim.SGD([w], lr=0.1)
    (w * w).sum().backward()
    opt.step()
    np.testing.assert_allclose(w.numpy(), w0 - 0.1 * 2 * w0, rtol=1e-6)

  def test_assigned_weight_is_trained(self):
    # ln.weight = w reaches parameters(), the state dict and forward; reference is PyTorch's same step
    ln = nn.LayerNorm(4)
    w0, x, c = np.array([2, 3, 4, 5], np.float32), randn(2, 4), randn(2, 4)
    ln.weight = Tensor(w0)
    opt = nn.optim.SGD(ln.parameters(), lr=0.5)
    (ln(Tensor(x)) * Tensor(c)).sum().backward()
    opt.step()
    tl = torch.nn.LayerNorm(4)
    with torch.no_grad(): tl.weight.copy_(torch.from_numpy(w0))
    topt = torch.optim.SGD(tl.parameters(), lr=0.5)
    (tl(torch.from_numpy(x)) * torch.from_numpy(c)).sum().backward()
    topt.step()
    np.testing.assert_allclose(ln.weight.numpy(), tl.weight.detach().numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(nn.state.get_state_dict(ln)["weight"].numpy(), tl.weight.detach().numpy(),
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ln(Tensor(x)).numpy(), tl(torch.from_numpy(x)).detach().numpy(), rtol=1e-4,
                               atol=1e-5)

  def test_new_layers_and_optimizer_group_against_torch(self):
    T = torch.from_numpy
    ct = nn.ConvTranspose1d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2)
    tct = torch.nn.ConvTranspose1d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2)
    with torch.no_grad(): tct.weight.copy_(T(ct.weight.numpy())), tct.bias.copy_(T(ct.bias.numpy()))
    x = randn(2, 4, 5)
    np.testing.assert_allclose(ct(Tensor(x)).numpy(), tct(T(x)).detach().numpy(), rtol=1e-5, atol=1e-5)
    cell, tcell = nn.LSTMCell(3, 2), torch.nn.LSTMCell(3, 2)
    with torch.no_grad():
      for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"): getattr(tcell, name).copy_(T(getattr(cell, name).numpy()))
    x, h, c = randn(4, 3), randn(4, 2), randn(4, 2)
    for got, want in zip(cell(Tensor(x), (Tensor(h), Tensor(c))), tcell(T(x), (T(h), T(c)))):
      np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(cell(Tensor(x))[1].numpy(), tcell(T(x))[1].detach().numpy(), rtol=1e-5, atol=1e-6)
    inorm = nn.InstanceNorm(2)
    x = randn(2, 2, 3, 4)
    np.testing.assert_allclose(inorm(Tensor(x)).numpy(), torch.nn.InstanceNorm2d(2, affine=True)(T(x)).detach().numpy(),
                               rtol=1e-4, atol=1e-5)
    # SGD and Adam stepped as one group follow torch's optimizers
    w0, v0, gw, gv = randn(3), randn(2, 2), randn(3), randn(2, 2)
    w, v = Tensor(w0, requires_grad=True), Tensor(v0, requires_grad=True)
    group = nn.optim.OptimizerGroup(nn.optim.SGD([w], lr=0.1, momentum=0.9), nn.optim.Adam([v], lr=0.01))
    self.assertEqual(len(group), 2)
    tw, tv = T(w0.copy()).requires_grad_(), T(v0.copy()).requires_grad_()
    topts = [torch.optim.SGD([tw], lr=0.1, momentum=0.9), torch.optim.Adam([tv], lr=0.01)]
    for _ in range(3):
      ((w * Tensor(gw)).sum() + (v * v * Tensor(gv)).sum()).backward()
      group.step()
      group.zero_grad()
      ((tw * T(gw)).sum() + (tv * tv * T(gv)).sum()).backward()
      for o in topts: o.step(), o.zero_grad()
    np.testing.assert_allclose(w.numpy(), tw.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(v.numpy(), tv.detach().numpy(), rtol=1e-5, atol=1e-6)
    self.assertIsNone(w.grad)
    muon = nn.optim.Muon([Tensor(randn(3, 4), requires_grad=True)], lr=0.02)
    self.assertIsInstance(muon, nn.optim.LARS)

  def test_state_round_trip(self):
    from safetensors.numpy import load_file
    model = [nn.Linear(3, 4), nn.BatchNorm(4)]
    sd = nn.state.get_state_dict(model)
    self.assertIn("0.weight", sd)
    self.assertIn("1.running_mean", sd)
    with tempfile.TemporaryDirectory() as d:
      path = os.path.join(d, "m.safetensors")
      nn.state.safe_save(sd, path)
      ref = load_file(path)  # the safetensors package reads what we wrote
      np.testing.assert_array_equal(ref["0.weight"], sd["0.weight"].numpy())
      other = [nn.Linear(3, 4), nn.BatchNorm(4)]
      nn.state.load_state_dict(other, nn.state.safe_load(path))
      np.testing.assert_array_equal(other[0].weight.numpy(), ref["0.weight"])
      single = nn.Linear(3, 4)
      nn.state.load_state_dict(single, {"weight": Tensor(ref["0.weight"]), "bias": Tensor(ref["0.bias"])})
      np.testing.assert_array_equal(single.bias.numpy(), ref["0.bias"])


class TestRuntime(unittest.TestCase):
  def test_jit_replays(self):
    calls = 0

    @TinyJit
    def f(a, b):
      nonlocal calls
      calls += 1
      return (a * b + 1).realize()

    for _ in range(4):
      x, y = randn(8), randn(8)
      np.testing.assert_allclose(f(Tensor(x), Tensor(y)).numpy(), x * y + 1, rtol=1e-6)
    self.assertEqual(calls, 2)

  def test_jit_outputs_read_as_numpy_keep_their_values(self):
    @TinyJit
    def f(a): return (a * 2).realize()

    outs = [f(Tensor(np.full(3, i, np.float32))).numpy() for i in range(5)]
    self.assertEqual([o[0] for o in outs], [0, 2, 4, 6, 8])

  def test_schedule_and_uop(self):
    t = Tensor([1.0, 2.0]) * 3 + 1
    items = t.schedule()
    self.assertEqual(len(items), 1)
    self.assertIn("STORE", repr(items[0].ast))
    self.assertEqual(t.uop.op, "ADD")

  def test_gil_released_while_realizing(self):
    ticks = []
    done = threading.Event()

    def tick():
      while not done.is_set():
        ticks.append(1)
        time.sleep(0.001)

    x = Tensor(randn(256, 256))
    for _ in range(8): x = (x @ x).tanh() + 0.5  # built first: only compile and run remain
    th = threading.Thread(target=tick)
    th.start()
    time.sleep(0.01)
    n0, t0 = len(ticks), time.perf_counter()
    x.realize()
    n1, ms = len(ticks), (time.perf_counter() - t0) * 1000
    done.set()
    th.join()
    print(f"\n{n1 - n0} ticks of another Python thread during a {ms:.0f} ms realize")
    self.assertGreaterEqual(n1 - n0, 3, "the Python thread runs while kernels compile and run")


if __name__ == "__main__":
  unittest.main()
