"""Lazy evaluation and fusion: ops only build a graph; realize() runs it as one fused kernel.
Run with DEBUG=2 to see one line per kernel (the meson test does)."""
import numpy as np
from tinygrad_cpp import Tensor

a_np = np.arange(12, dtype=np.float32).reshape(3, 4)
a = Tensor(a_np)
b = ((a * 2 + 1).relu() - 3).exp2()  # four elementwise ops: nothing has run yet
print("lazy graph root:", b.uop.op)
kernels = b.schedule()
print(f"{len(kernels)} kernel(s) for 4 elementwise ops")
assert len(kernels) == 1, "elementwise chains fuse into one kernel"
b.realize()  # schedule, codegen, compile, run
ref = np.exp2(np.maximum(a_np * 2 + 1, 0) - 3)
np.testing.assert_allclose(b.numpy(), ref, rtol=1e-6)
# a reduce fuses its elementwise input too
s = (a * a).sum(axis=1)
assert len(s.schedule()) == 1
np.testing.assert_allclose(s.numpy(), (a_np * a_np).sum(axis=1), rtol=1e-6)
print("ok:", b.numpy()[0].tolist(), s.tolist())
