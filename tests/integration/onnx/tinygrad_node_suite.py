"""tinygrad's own ONNX runner (tinygrad.nn.onnx, from the test venv) on ONNX's backend node tests, with the
same checks as `tg onnx test` (dtype, shape, rtol 1e-3 / atol 1e-7, NaN equal): the coverage to compare with.
Usage: python tinygrad_node_suite.py [REPORT] (one 'test STATUS reason' line per test). Each test runs in a
child process with a time limit, so one that hangs or crashes counts as failed and the run goes on."""
import multiprocessing as mp, os, pathlib, sys

os.environ.setdefault("DEV", "CPU")
import numpy as np, onnx  # imported once here; each forked child inherits them
from onnx import numpy_helper
from tinygrad import Tensor
from tinygrad.nn.onnx import OnnxRunner

def run_one(d, q):
  try:
    model = onnx.load(str(d / "model.onnx"))
    inits = {i.name for i in model.graph.initializer}
    ins = [i for i in model.graph.input if i.name not in inits]
    r = OnnxRunner(str(d / "model.onnx"))
    def load(p, vi):
      if vi.type.HasField("sequence_type"):
        s = onnx.SequenceProto(); s.ParseFromString(p.read_bytes()); return [numpy_helper.to_array(t) for t in s.tensor_values]
      if vi.type.HasField("optional_type"):
        o = onnx.OptionalProto(); o.ParseFromString(p.read_bytes()); return numpy_helper.to_optional(o)
      t = onnx.TensorProto(); t.ParseFromString(p.read_bytes()); return numpy_helper.to_array(t)
    for ds in sorted(d.glob("test_data_set_*")):
      feeds = {vi.name: load(ds / f"input_{i}.pb", vi) for i, vi in enumerate(ins) if (ds / f"input_{i}.pb").exists()}
      feeds = {k: (Tensor(v) if isinstance(v, np.ndarray) else v) for k, v in feeds.items()}
      outs = r(feeds)
      for i, vo in enumerate(model.graph.output):
        p = ds / f"output_{i}.pb"
        if not p.exists(): continue
        want = load(p, vo)
        got = outs[vo.name]
        wl = want if isinstance(want, list) else [want]
        gl = got if isinstance(got, list) else [got]
        if len(wl) != len(gl): q.put(("FAIL", f"output {i}: sequence length")); return
        for w, g in zip(wl, gl):
          g = g.numpy() if isinstance(g, Tensor) else np.asarray(g)
          if g.dtype != w.dtype or g.shape != w.shape: q.put(("FAIL", f"output {i}: {g.dtype}{g.shape} vs {w.dtype}{w.shape}")); return
          if not np.allclose(g.astype(np.float64), w.astype(np.float64), rtol=1e-3, atol=1e-7, equal_nan=True):
            q.put(("FAIL", f"output {i}: values")); return
    q.put(("PASS", ""))
  except NotImplementedError as e:
    q.put(("UNSUPPORTED", str(e).splitlines()[0] if str(e) else "NotImplementedError"))
  except Exception as e:
    q.put(("FAIL", f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"))

def main():
  suite = pathlib.Path(onnx.__file__).parent / "backend/test/data/node"
  dirs = sorted(p for p in suite.iterdir() if (p / "model.onnx").exists())
  report = open(sys.argv[1], "w") if len(sys.argv) > 1 else None
  totals = {"PASS": 0, "FAIL": 0, "UNSUPPORTED": 0}
  ctx = mp.get_context("fork")
  for d in dirs:
    q = ctx.Queue()
    p = ctx.Process(target=run_one, args=(d, q)); p.start(); p.join(60)
    if p.is_alive(): p.kill(); status, why = "FAIL", "timeout"
    else: status, why = q.get() if not q.empty() else ("FAIL", f"exit code {p.exitcode}")
    totals[status] += 1
    if report: report.write(f"{d.name} {status} {why}\n"); report.flush()
  print(f"tinygrad {__import__('tinygrad').__version__ if hasattr(__import__('tinygrad'), '__version__') else '0.14.0'} "
        f"onnx node tests: {totals['PASS']} passed, {totals['FAIL']} failed, {totals['UNSUPPORTED']} unsupported of {len(dirs)}")

if __name__ == "__main__":
  main()
