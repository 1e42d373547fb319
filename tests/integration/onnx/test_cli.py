"""`tg onnx` on small models built with the onnx package: outputs written as .npy equal onnxruntime's on the
same file and inputs (a dynamic batch axis, an initializer, external data beside the model), and every bad
model or input ends in one clear error line naming what is wrong, never a crash.
Usage: test_cli.py TG OUTDIR"""
import pathlib, subprocess, sys
import numpy as np

def main():
  tg, out = sys.argv[1], pathlib.Path(sys.argv[2]) / "onnx_cli"
  try:
    import onnx, onnxruntime as ort
    from onnx import TensorProto as TP, helper as h, numpy_helper
  except ImportError:
    print("skipped: onnx or onnxruntime is not in the test venv (tools/setup-testenv)"); return 77
  out.mkdir(parents=True, exist_ok=True)
  failures = []
  def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond: failures.append(what)
  def tg_run(*args):
    return subprocess.run([tg, "onnx", *map(str, args)], capture_output=True, text=True)

  # A small MLP with a dynamic batch axis, weights as initializers: Gemm, Relu, Softmax.
  rng = np.random.default_rng(0)
  w1, b1 = rng.standard_normal((8, 16)).astype(np.float32), rng.standard_normal(16).astype(np.float32)
  w2 = rng.standard_normal((16, 4)).astype(np.float32)
  nodes = [h.make_node("Gemm", ["x", "w1", "b1"], ["h"], name="fc1"), h.make_node("Relu", ["h"], ["r"], name="act"),
           h.make_node("MatMul", ["r", "w2"], ["l"], name="fc2"), h.make_node("Softmax", ["l"], ["y"], name="sm", axis=-1)]
  g = h.make_graph(nodes, "mlp", [h.make_tensor_value_info("x", TP.FLOAT, ["batch", 8])],
                   [h.make_tensor_value_info("y", TP.FLOAT, ["batch", 4])],
                   [numpy_helper.from_array(a, n) for a, n in ((w1, "w1"), (b1, "b1"), (w2, "w2"))])
  model = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
  onnx.save(model, out / "mlp.onnx")
  x = rng.standard_normal((5, 8)).astype(np.float32)
  np.save(out / "x.npy", x)
  want = ort.InferenceSession(str(out / "mlp.onnx"), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
  r = tg_run("run", out / "mlp.onnx", "--inputs", out / "x.npy", "--out", out / "res")
  check(r.returncode == 0, f"tg onnx run mlp.onnx: exit {r.returncode} {r.stderr.strip()}")
  if r.returncode == 0:
    got = np.load(out / "res" / "y.npy")
    err = float(np.abs(got - want).max())
    check(got.shape == want.shape and err < 1e-5, f"mlp output equals onnxruntime's: max abs diff {err:.2e}")
  # The same model with its weights in a file beside it (external data).
  onnx.save(model, out / "mlp_ext.onnx", save_as_external_data=True, all_tensors_to_one_file=True,
            location="mlp_ext.bin", size_threshold=0)
  r = tg_run("run", out / "mlp_ext.onnx", "--inputs", f"x={out / 'x.npy'}", "--out", out / "res_ext")
  check(r.returncode == 0 and np.abs(np.load(out / "res_ext" / "y.npy") - want).max() < 1e-5,
        f"external data: {r.stderr.strip() or 'equal to onnxruntime'}")
  r = tg_run("info", out / "mlp.onnx")
  check(r.returncode == 0 and "input  x: FLOAT ('batch',8)" in r.stdout and "every operator is supported" in r.stdout,
        "tg onnx info lists inputs and operators")

  def expect_error(name, args, *needles):
    r = tg_run(*args)
    msg = r.stderr.strip()
    ok = r.returncode == 1 and all(n in msg for n in needles) and len(msg.splitlines()) == 1
    check(ok, f"{name}: {msg}")

  raw = (out / "mlp.onnx").read_bytes()
  (out / "truncated.onnx").write_bytes(raw[: len(raw) // 2])
  expect_error("truncated file", ["run", out / "truncated.onnx"], "not a valid protobuf message")
  (out / "garbage.onnx").write_bytes(bytes(range(256)) * 4)
  expect_error("garbled file", ["run", out / "garbage.onnx"], "[onnx_load]")
  def save(name, nodes, inputs, outputs, inits=(), opset=17):
    m = h.make_model(h.make_graph(nodes, name, inputs, outputs, list(inits)), opset_imports=[h.make_opsetid("", opset)])
    onnx.save(m, out / f"{name}.onnx")
    return out / f"{name}.onnx"
  vi = lambda n, s=(2, 2), t=TP.FLOAT: h.make_tensor_value_info(n, t, list(s))
  p = save("cycle", [h.make_node("Add", ["x", "b"], ["a"], name="n1"), h.make_node("Relu", ["a"], ["b"], name="n2")],
           [vi("x")], [vi("b")])
  expect_error("a cycle", ["run", p], "has a cycle through node 'n", "(")
  p = save("missing_init", [h.make_node("Add", ["x", "w"], ["y"], name="add_w")], [vi("x")], [vi("y")])
  expect_error("missing initializer", ["run", p], "node 'add_w' (Add) reads 'w'")
  p = save("unsupported", [h.make_node("FooOp", ["x"], ["a"], name="f"), h.make_node("BarOp", ["a"], ["b"], name="g1"),
                           h.make_node("BarOp", ["b"], ["y"], name="g2")], [vi("x")], [vi("y")])
  expect_error("unsupported operators, all at once", ["run", p], "2 unsupported operators", "BarOp (2 nodes)", "FooOp (1 node)")
  np.save(out / "x34.npy", np.zeros((3, 4), np.float32))
  np.save(out / "xint.npy", np.zeros((5, 8), np.int64))
  expect_error("wrong input shape", ["run", out / "mlp.onnx", "--inputs", out / "x34.npy"], "input 'x'", "('batch',8)", "(3,4)")
  expect_error("wrong input dtype", ["run", out / "mlp.onnx", "--inputs", out / "xint.npy"], "input 'x'", "INT64")
  expect_error("missing input", ["run", out / "mlp.onnx"], "input 'x'", "is not given")
  (out / "bad.npy").write_bytes(b"\x93NUMPY\x01\x00" + b"\x10\x00{'descr': '<f4'}")
  expect_error("bad .npy", ["run", out / "mlp.onnx", "--inputs", out / "bad.npy"], "[npy]")
  t = numpy_helper.from_array(np.zeros((2, 2), np.float32), "w")
  t.raw_data = t.raw_data[:10]
  p = save("short_init", [h.make_node("Add", ["x", "w"], ["y"], name="a")], [vi("x")], [vi("y")], [t])
  expect_error("initializer with too few bytes", ["run", p], "tensor 'w'", "10 bytes")
  t = numpy_helper.from_array(np.zeros((2, 2), np.float32), "w")
  t.data_location = TP.EXTERNAL
  t.ClearField("raw_data")
  t.external_data.add(key="location", value="../../etc/passwd")
  p = save("escape", [h.make_node("Add", ["x", "w"], ["y"], name="a")], [vi("x")], [vi("y")], [t])
  expect_error("external data outside the model's folder", ["run", p], "must be a file beside the model")
  p = save("bad_attr", [h.make_node("Softmax", ["x"], ["y"], name="sm", axis=7)], [vi("x")], [vi("y")])
  np.save(out / "x22.npy", np.zeros((2, 2), np.float32))
  expect_error("an attribute out of range", ["run", p, "--inputs", out / "x22.npy"], "node 'sm' (Softmax)", "axis 7")
  print(f"{'all' if not failures else len(failures)} {'passed' if not failures else 'failed'}")
  return 1 if failures else 0

if __name__ == "__main__":
  sys.exit(main())
