#!/usr/bin/env python3
"""`tg llm` against llama.cpp on the same gguf files, in one run: usage llm.py TG PROBE [--quick].

Writes a llama-shaped model of random weights (about 245M parameters: dim 1024, 16 layers, GQA 16/4, ffn
2816, llama's 32000-token vocabulary) as Q8_0 and as Q4_0, then for each prints prompt processing (a
512-token prompt) and decode (128 greedy tokens) in tokens/s for llama.cpp (llama-cpp-python's CPU build)
and for tg llm, both on 2 threads, and their ratios; targets: decode >= 0.9x, prefill >= 0.8x. Decode's
limit: the weight bytes a token reads (every matrix but the embedding, which is gathered by row) against
the STREAM read bandwidth that bench/probe measures in the same run; target >= 70% of it.
Each side runs twice and keeps its best; ours after one warm-up run that fills the kernel cache.
Run it with the test venv's python (tools/setup-testenv), which has llama-cpp-python and gguf.
"""
import json, os, subprocess, sys, tempfile, time

import numpy as np
import llama_cpp
import gguf

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "integration", "llm"))
import models  # noqa: E402

TG, PROBE = sys.argv[1], sys.argv[2]
QUICK = "--quick" in sys.argv
PROMPT, GEN = (128, 32) if QUICK else (512, 128)
VOCAB = os.path.join(os.environ.get("TG_TESTENV", os.path.expanduser("~/.cache/tinygrad.cpp/testenv")),
                     "llama.cpp", "models", "ggml-vocab-llama-spm.gguf")


def probe_read_gbps():
    out = subprocess.run([PROBE], capture_output=True, text=True, timeout=600).stdout
    for line in out.splitlines():
        if line.startswith("read_gbps"):
            return float(line.split()[1])
    raise SystemExit("bench/probe printed no read_gbps")


def weight_bytes_per_token(path):
    r = gguf.GGUFReader(path)
    return sum(int(t.n_bytes) for t in r.tensors if t.name != "token_embd.weight")


def prompt_ids(n):
    return [1] + [1000 + (i * 7919) % 30000 for i in range(n - 1)]


def llama_cpp_run(path):
    m = llama_cpp.Llama(model_path=path, n_ctx=PROMPT + GEN + 8, n_batch=512, n_ubatch=512, n_threads=2,
                        n_threads_batch=2, verbose=False)
    ids = prompt_ids(PROMPT)
    best_p = best_d = 0.0
    for _ in range(2):
        m.reset()
        t0 = time.perf_counter()
        m.eval(ids)
        t1 = time.perf_counter()
        for _ in range(GEN):  # the last row's logits from llama.cpp itself (scores holds n_batch rows only)
            row = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(m._ctx.ctx, -1), shape=(m.n_vocab(),))
            m.eval([int(np.argmax(row))])
        t2 = time.perf_counter()
        best_p, best_d = max(best_p, PROMPT / (t1 - t0)), max(best_d, GEN / (t2 - t1))
    return best_p, best_d


def tg_run(path, cache):
    env = dict(os.environ, DEV=os.environ.get("DEV", "CLANG"), TG_CACHE_DIR=cache)
    ids = ",".join(map(str, prompt_ids(PROMPT)))
    out = os.path.join(cache, "run.json")
    best_p = best_d = best_r = 0.0
    for i in range(3):  # the first fills the kernel cache
        r = subprocess.run([TG, "llm", "--model", path, "--tokens", ids, "--max-tokens", str(GEN),
                            "--context", str(PROMPT + GEN + 8), "--json", out], env=env, capture_output=True,
                           text=True, errors="replace", timeout=1800)
        if r.returncode != 0:
            raise SystemExit(f"tg llm failed: {r.stderr[-3000:]}")
        j = json.load(open(out))
        if i > 0:
            best_p, best_d = max(best_p, j["prompt_tokens_per_s"]), max(best_d, j["tokens_per_s"])
            best_r = max(best_r, j["replayed_tokens_per_s"])
    return best_p, best_d, best_r


def main():
    tmp = tempfile.mkdtemp(prefix="tg-bench-llm-")
    gbps = probe_read_gbps()
    print(f"STREAM read: {gbps:.1f} GB/s; prompt {PROMPT} tokens, decode {GEN} tokens, 2 threads each\n")
    print(f"{'model':<8} {'':<9} {'llama.cpp':>10} {'tg llm':>10} {'ratio':>7} {'target':>8}")
    for wtype in ["Q8_0", "Q4_0"]:
        path = os.path.join(tmp, f"bench-{wtype}.gguf")
        models.make(path, "llama", wtype, VOCAB, dim=1024, layers=16, heads=16, kv_heads=4, ffn=2816,
                    context=2048, seed=1)
        lp, ld = llama_cpp_run(path)
        op, od, orr = tg_run(path, os.path.join(tmp, "cache"))
        wb = weight_bytes_per_token(path)
        limit = gbps * 1e9 / wb
        print(f"{wtype:<8} {'prefill':<9} {lp:>10.1f} {op:>10.1f} {op / lp:>6.2f}x {'>= 0.8x':>8}")
        print(f"{wtype:<8} {'decode':<9} {ld:>10.1f} {od:>10.1f} {od / ld:>6.2f}x {'>= 0.9x':>8}")
        # the same decode after its first two steps (run, then captured by the JIT): the replayed rate
        print(f"{wtype:<8} {'replayed':<9} {ld:>10.1f} {orr:>10.1f} {orr / ld:>6.2f}x")
        print(f"{wtype:<8} {'limit':<9} {wb / 1e6:>8.1f}MB/token -> {limit:.1f} tokens/s: llama.cpp "
              f"{ld / limit:.0%}, tg llm {od / limit:.0%} (replayed {orr / limit:.0%}; target >= 70%)")
        os.remove(path)


main()
