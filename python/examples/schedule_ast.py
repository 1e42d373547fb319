"""Inspecting the schedule: every kernel's AST (a SINK of STOREs) and the buffers it reads and writes."""
import numpy as np
from tinygrad_cpp import Tensor

x_np = np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32)
x = Tensor(x_np)
y = x.softmax(axis=-1)
items = y.schedule()
for i, si in enumerate(items):
  print(f"--- kernel {i}: {len(si.bufs)} buffers, AST root {si.ast.op}")
  print(si.ast)
assert all(si.ast.op == "SINK" for si in items)
assert 1 <= len(items) <= 3, f"softmax should fuse into at most 3 kernels (max, sum, normalize), got {len(items)}"
e = np.exp(x_np - x_np.max(axis=-1, keepdims=True))
np.testing.assert_allclose(y.numpy(), e / e.sum(axis=-1, keepdims=True), rtol=1e-5, atol=1e-7)
print(f"ok: softmax in {len(items)} kernel(s)")
