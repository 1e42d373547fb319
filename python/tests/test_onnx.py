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


def embed_model(path):
  # A transformer's front: an embedding Gather of ids, a Reshape whose target comes from Shape arithmetic,
  # a MatMul with a constant weight, LayerNorm's variance as Pow(x, 2).
  rng = np.random.default_rng(3)
  table = rng.standard_normal((5000, 64)).astype(np.float32)
  w = rng.standard_normal((64, 64)).astype(np.float32)
  i64 = lambda name, v: numpy_helper.from_array(np.array(v, np.int64), name)
  nodes = [h.make_node("Gather", ["table", "ids"], ["e"], name="embed"),
           h.make_node("Shape", ["ids"], ["s"], name="shape"),
           h.make_node("Gather", ["s", "zero"], ["b"], name="batch", axis=0),
           h.make_node("Unsqueeze", ["b", "axes0"], ["b1"], name="b1"),
           h.make_node("Concat", ["b1", "minus1"], ["target"], name="target", axis=0),
           h.make_node("MatMul", ["e", "w"], ["m"], name="proj"),
           h.make_node("Pow", ["m", "two"], ["sq"], name="square"),
           h.make_node("Reshape", ["sq", "target"], ["y"], name="flat")]
  inits = [numpy_helper.from_array(table, "table"), numpy_helper.from_array(w, "w"), i64("zero", 0),
           i64("axes0", [0]), i64("minus1", [-1]), numpy_helper.from_array(np.array(2.0, np.float32), "two")]
  g = h.make_graph(nodes, "embed", [h.make_tensor_value_info("ids", TP.INT64, ["n", 48])],
                   [h.make_tensor_value_info("y", TP.FLOAT, ["n", None])], inits)
  onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 14)]), path)


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

  def test_under_tinyjit(self):
    # The runner folds the shape arithmetic on the host and keeps the packed weight, so a second call with the
    # same shapes reads nothing back and TinyJit captures it; replays on new ids equal onnxruntime's.
    from tinygrad_cpp import TinyJit
    path = f"{self.dir.name}/embed.onnx"
    embed_model(path)
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    runner = OnnxRunner(path)
    step = TinyJit(lambda ids: runner({"ids": ids})["y"].realize())
    rng = np.random.default_rng(4)
    for call in range(5):
      ids = rng.integers(0, 5000, (4, 48)).astype(np.int64)
      got = step(Tensor(ids)).numpy()
      np.testing.assert_allclose(got, session.run(None, {"ids": ids})[0], rtol=1e-4, atol=1e-4,
                                 err_msg=f"call {call}")

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
