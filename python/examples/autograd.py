"""Autograd: backward() against a numerical gradient (central differences in float64), then an MLP
learns XOR."""
import numpy as np
from tinygrad_cpp import Tensor, nn, dtypes

rng = np.random.default_rng(2)
x_np, w_np = rng.standard_normal((4, 3)), rng.standard_normal((3, 2))


def f_np(w): return np.log(np.exp(np.tanh(x_np @ w)).sum())   # the same function in numpy


x, w = Tensor(x_np), Tensor(w_np, requires_grad=True)
assert w.dtype == dtypes.float64
loss = (x @ w).tanh().exp().sum().log()
loss.backward()
num, eps = np.zeros_like(w_np), 1e-6
for i in np.ndindex(*w_np.shape):
  d = np.zeros_like(w_np)
  d[i] = eps
  num[i] = (f_np(w_np + d) - f_np(w_np - d)) / (2 * eps)
np.testing.assert_allclose(loss.item(), f_np(w_np), rtol=1e-12)
np.testing.assert_allclose(w.grad.numpy(), num, rtol=1e-6, atol=1e-8)
print("gradient check ok, max |autograd - numerical| =", np.abs(w.grad.numpy() - num).max())

Tensor.manual_seed(0)
X = Tensor([[0., 0], [0, 1], [1, 0], [1, 1]])
Y = Tensor([0, 1, 1, 0])
l1, l2 = nn.Linear(2, 8), nn.Linear(8, 2)
opt = nn.optim.Adam(l1.parameters() + l2.parameters(), lr=0.05)
for step in range(300):
  loss = l2(l1(X).tanh()).sparse_categorical_crossentropy(Y)
  opt.zero_grad()
  loss.backward()
  opt.step()
pred = l2(l1(X).tanh()).argmax(axis=1).tolist()
print("XOR predictions", pred, "loss", loss.item())
assert pred == [0, 1, 1, 0]
