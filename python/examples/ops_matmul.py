"""The three op types (elementwise, reduce, movement) and a matmul built from them by hand."""
import numpy as np
from tinygrad_cpp import Tensor

rng = np.random.default_rng(1)
a_np, b_np = rng.standard_normal((5, 3)).astype(np.float32), rng.standard_normal((3, 4)).astype(np.float32)
a, b = Tensor(a_np), Tensor(b_np)

np.testing.assert_allclose((a * 2 - 1).numpy(), a_np * 2 - 1, rtol=1e-6)                 # elementwise
np.testing.assert_allclose(a.max(axis=0).numpy(), a_np.max(axis=0))                       # reduce
np.testing.assert_array_equal(a.permute(1, 0).reshape(15).numpy(), a_np.T.reshape(15))   # movement
np.testing.assert_array_equal(a[1:4, ::-1].numpy(), a_np[1:4, ::-1])                       # movement (shrink, flip)

# matmul = movement (reshape + expand) + elementwise (mul) + reduce (sum): (5,3,1) * (1,3,4) summed over axis 1
manual = (a.reshape(5, 3, 1).expand(5, 3, 4) * b.reshape(1, 3, 4).expand(5, 3, 4)).sum(axis=1)
np.testing.assert_allclose(manual.numpy(), a_np @ b_np, rtol=1e-5, atol=1e-6)
np.testing.assert_allclose((a @ b).numpy(), a_np @ b_np, rtol=1e-5, atol=1e-6)
print(f"ok: manual matmul in {len(manual.schedule())} kernel(s)\n{manual.numpy()}")
