#!/usr/bin/env python3
"""Before/after of two builds next to PyTorch: rounds of build A, build B and the peer in turns (A and B swap
places every round), so a slow spell of a shared machine lands on all three; prints each round's figures,
the best of each side and the ratios (B / A, and each / peer). No result checks: bench/suite.py does those.
Usage: ab.py --a SUITE_BIN [--a-env K=V,..] --b SUITE_BIN [--b-env K=V,..] [--only W2,W4,W5,W7] [--rounds 3]
(a build's env can point TG_PLUGIN_PATH at its own CLANG plugin)."""
import argparse, os, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import suite  # noqa: E402

# figure -> (workload, True when higher is better)
# (CPU time, both threads: steadier than wall time when other work shares the cores)
FIGURES = {"W2.mm1024.gflops": ("W2", True), "W2.mm2048.gflops": ("W2", True), "W4.ms": ("W4", False),
           "W4.cpu_ms": ("W4", False), "W5.ms": ("W5", False), "W7.train_ms": ("W7", False),
           "W7.train_cpu_ms": ("W7", False), "W7.infer_tokens_per_s": ("W7", True)}


def env_of(text):
    return dict(kv.split("=", 1) for kv in text.split(",") if kv) if text else {}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--a", required=True)
    ap.add_argument("--b", required=True)
    ap.add_argument("--a-env", default="")
    ap.add_argument("--b-env", default="")
    ap.add_argument("--only", default="W2,W4,W5,W7")
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    if os.environ.pop("TG_BENCH_BLAS_CORE", None) is None:  # as suite.py: the BLAS core set before torch loads
        before = os.environ.get("OPENBLAS_CORETYPE")
        line = suite.choose_blas_core()
        if os.environ.get("OPENBLAS_CORETYPE") != before:
            os.environ["TG_BENCH_BLAS_CORE"] = line
            os.execv(sys.executable, [sys.executable] + sys.argv)
    only = [w.strip().upper() for w in a.only.split(",") if w.strip()]
    figs = [f for f, (w, _) in FIGURES.items() if w in only]
    sides = {"A": (a.a, env_of(a.a_env)), "B": (a.b, env_of(a.b_env))}
    best = {s: {} for s in ("A", "B", "peer")}
    peer = suite.Peer(False)
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(a.rounds):
            load = os.getloadavg()[0]
            got = {}
            for s in (("A", "B") if r % 2 == 0 else ("B", "A")):
                binary, env = sides[s]
                cache = os.path.join(tmp, s)
                os.makedirs(cache, exist_ok=True)
                got[s] = {}
                for w in only:  # one process per workload, as suite.py runs W5 and W7
                    got[s].update(suite.run_ours(binary, ["--only", w], cache, env) or {})
            for w in only:
                getattr(peer, w)()
            got["peer"] = dict(peer.res)
            print(f"round {r + 1} (load {load:.1f} -> {os.getloadavg()[0]:.1f}): " + "  ".join(
                f"{f} A {suite.fmt(got['A'].get(f))} B {suite.fmt(got['B'].get(f))} "
                f"peer {suite.fmt(got['peer'].get(f))}" for f in figs), flush=True)
            for s in best:
                for f in figs:
                    v = got[s].get(f)
                    if v is not None:
                        higher = FIGURES[f][1]
                        old = best[s].get(f)
                        best[s][f] = v if old is None else (max(old, v) if higher else min(old, v))
    print(f"\nbest of {a.rounds} rounds; ratio = time ratio (<1 faster) for ms, rate ratio (>1 faster) otherwise")
    print(f"{'figure':<24} {'A':>9} {'B':>9} {'peer':>9} {'B/A':>6} {'A/peer':>7} {'B/peer':>7}")
    for f in figs:
        A, B, P = (best[s].get(f) for s in ("A", "B", "peer"))
        ratio = lambda x, y: f"{x / y:.2f}" if x and y else "-"
        print(f"{f:<24} {suite.fmt(A):>9} {suite.fmt(B):>9} {suite.fmt(P):>9} {ratio(B, A):>6} "
              f"{ratio(A, P):>7} {ratio(B, P):>7}")


if __name__ == "__main__":
    main()
