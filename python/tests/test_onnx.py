"""tinygrad_cpp.onnx.OnnxRunner (tinygrad.nn.onnx's name and call form) against onnxruntime on the same small
model, and its errors. Runs with the test venv's Python (onnx, onnxruntime); exit 77 without them."""
import sys, tempfile, unittest
import numpy as np

try:
  import onnx, onnxruntime as ort
  from onnx import TensorProto as TP, helper as h, numpy_helper
except ImportError:
  print("skipped: onnx or onnxruntime is not in the test venv (tools/setup-testenv)")
  sys.exit(77)
from tinygrad_cpp import Tensor
from tinygrad_cpp.onnx import OnnxRunner


def conv_model(path):
  rng = np.random.default_rng(1)
  w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
  nodes = [h.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
           h.make_node("Relu", ["c"], ["r"], name="relu"),
           h.make_node("ReduceMean", ["r"], ["y"], name="mean", axes=[2, 3], keepdims=0)]
  g = h.make_graph(nodes, "convnet", [h.make_tensor_value_info("x", TP.FLOAT, ["n", 3, 8, 8])],
                   [h.make_tensor_value_info("y", TP.FLOAT, ["n", 4])], [numpy_helper.from_array(w, "w")])
  onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 13)]), path)


class TestOnnxRunner(unittest.TestCase):
  @classmethod
  def setUpClass(cls):
    cls.dir = tempfile.TemporaryDirectory()
    cls.path = f"{cls.dir.name}/conv.onnx"
    conv_model(cls.path)

  def test_matches_onnxruntime(self):
    x = np.random.default_rng(2).standard_normal((2, 3, 8, 8)).astype(np.float32)
    want = ort.InferenceSession(self.path, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    runner = OnnxRunner(self.path)
    self.assertEqual(runner.outputs, ["y"])
    self.assertIn("'n'", runner.inputs["x"])
    for feed in (x, Tensor(x)):  # a numpy array or a Tensor
      got = runner({"x": feed})["y"].numpy()
      np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)

  def test_errors(self):
    runner = OnnxRunner(self.path)
    with self.assertRaisesRegex(ValueError, r"input 'x'.*\(2,3,4,4\)"):
      runner({"x": np.zeros((2, 3, 4, 4), np.float32)})
    with self.assertRaisesRegex(ValueError, "is not given"):
      runner({})
    with self.assertRaisesRegex(Exception, "onnx_load"):
      OnnxRunner(__file__)


if __name__ == "__main__":
  unittest.main()
