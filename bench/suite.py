#!/usr/bin/env python3
"""The peer benchmark suite: runs the hardware probe, our workloads (the `suite` binary, on the default
device or DEV) and the same workloads in PyTorch (2 threads) in one run, checks our results against
PyTorch's, and prints one table: ours, peer, ratio, hardware limit, target.
Usage: suite.py --suite BIN --probe BIN [--only W1,W3] [--quick] [--rounds N]. Exits non-zero when a result is
wrong. The peer always gets its best BLAS kernels: when OpenBLAS falls back to a generic core on a CPU with
AVX-512 or AVX2 (0.3.21 does not know some new CPUs), the suite sets the matching OPENBLAS_CORETYPE."""
import argparse, os, re, subprocess, sys, tempfile, time

import numpy as np

WORKLOADS = ["W1", "W2", "W3", "W4", "W5", "W6", "W7", "W8"]
TOL = 1e-3  # max |ours - PyTorch| relative to max |PyTorch|; a wrong kernel is off by far more


def pattern(n, seed, lo, hi):
    """bench/suite.cpp's pattern(), bit for bit."""
    i = np.arange(n, dtype=np.uint64) + np.uint64(seed * 1000003)
    h = (i * np.uint64(2654435761)) & np.uint64(0xFFFFFFFF)
    return (lo + (hi - lo) * (h.astype(np.float64) / 4294967296.0)).astype(np.float32)


def best_of(n, f, cpu=None):
    """Best wall seconds of n runs after a warm-up; cpu (a list) gets the least CPU time of the process."""
    f()
    best = best_cpu = 1e30
    for _ in range(n):
        t0, c0 = time.perf_counter(), time.process_time()
        f()
        best, best_cpu = min(best, time.perf_counter() - t0), min(best_cpu, time.process_time() - c0)
    if cpu is not None:
        cpu.append(best_cpu)
    return best


def merge_best(a, b):
    """Per figure, the better of two rounds: the higher rate (GB/s, GFLOPS), the lower time; other values
    (counts, results) from the later round."""
    out = dict(a)
    for k, v in b.items():
        if k in out and isinstance(v, float) and k.endswith(("gbps", "gflops")):
            out[k] = max(out[k], v)
        elif k in out and isinstance(v, float) and k.endswith(("ms", "_us", "_s")):
            out[k] = min(out[k], v)
        else:
            out[k] = v
    return out


def run_ours(binary, args, cache_dir, extra_env=None, timeout=None):
    """The binary's `key value` lines as a dict; None when it ran longer than timeout seconds."""
    env = dict(os.environ, TG_CACHE_DIR=cache_dir, **(extra_env or {}))
    t0 = time.time()
    try:
        p = subprocess.run([binary] + args, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    if p.returncode != 0:
        sys.exit(f"suite: {binary} {' '.join(args)} failed ({p.returncode}):\n{p.stderr[-4000:]}")
    vals = {}
    for line in p.stdout.splitlines():
        k, _, v = line.partition(" ")
        vals[k] = v if k == "device" else float(v)
    vals["wall_s"] = time.time() - t0
    return vals


class Peer:
    """The same workloads in PyTorch; results are kept for the checks."""

    def __init__(self, quick):
        import torch
        torch.set_num_threads(2)
        self.torch, self.quick, self.res, self.ref = torch, quick, {}, {}

    def reps(self, full):
        return max(2, full // 3) if self.quick else full

    def t(self, shape, seed, lo=-1.0, hi=1.0):
        return self.torch.from_numpy(pattern(int(np.prod(shape)), seed, lo, hi).reshape(shape))

    def set_params(self, module, seed):
        with self.torch.no_grad():
            for _, p in module.named_parameters():
                b, c = (1 / np.sqrt(p.numel() // p.shape[0]), 0.0) if p.dim() > 1 else (0.1, 1.0)
                p.copy_(self.t(tuple(p.shape), seed, c - b, c + b))
                seed += 1

    def W1(self, dram=None):
        """At 16M elements, or at dram elements (the check then takes every 4099th value, as ours dumps)."""
        x = self.t((dram or 16 << 20,), 1)
        pre = "W1.dram" if dram else "W1"
        for name, exp in (("noexp", False), ("exp", True)):
            f = lambda: (((x * 2 + 1).relu() * x) - 0.5).exp() if exp else (((x * 2 + 1).relu() * x) - 0.5)
            self.res[f"{pre}.{name}.gbps"] = 8 * x.numel() / best_of(self.reps(6), f) / 1e9
            self.ref[f"{pre}.{name}"] = f()[::4099].clone() if dram else f()

    def W2(self):
        for n in (1024, 2048):
            a, b = self.t((n, n), 2), self.t((n, n), 3)
            self.res[f"W2.mm{n}.gflops"] = 2 * n**3 / best_of(self.reps(6 if n == 1024 else 3), lambda: a @ b) / 1e9
            self.ref[f"W2.mm{n}"] = a @ b

    def W3(self, dram=None):
        n = dram // 4096 * 4096 if dram else 16 << 20
        pre = "W3.dram" if dram else "W3"
        x, m = self.t((n,), 4, 0, 1), self.t((n // 4096, 4096), 5, 0, 1)
        self.res[f"{pre}.sum.gbps"] = 4 * x.numel() / best_of(self.reps(6), lambda: x.sum()) / 1e9
        self.res[f"{pre}.sum1.gbps"] = 4 * m.numel() / best_of(self.reps(6), lambda: m.sum(1)) / 1e9
        self.ref[f"{pre}.sum"], self.ref[f"{pre}.sum1"] = x.double().sum(), m.double().sum(1)  # float64 reference

    def W4(self):
        F = self.torch.nn.functional
        x, w, g = self.t((32, 32, 28, 28), 6), self.t((64, 32, 3, 3), 7, -0.2, 0.2), self.t((32, 64, 28, 28), 8)
        x.requires_grad_(), w.requires_grad_()
        out = []

        def step():
            y = F.conv2d(x, w, padding=1)
            out[:] = [y.detach()] + list(self.torch.autograd.grad(y, (x, w), g))
        cpu = []
        s = best_of(self.reps(6), step, cpu)
        self.res["W4.ms"], self.res["W4.gflops"] = s * 1e3, 3 * 2.0 * 32 * 64 * 28 * 28 * 32 * 9 / s / 1e9
        self.res["W4.cpu_ms"] = cpu[0] * 1e3
        self.ref["W4.y"], self.ref["W4.gx"], self.ref["W4.gw"] = out

    def W5(self):
        torch, nn = self.torch, self.torch.nn
        m = nn.Sequential(nn.Conv2d(1, 32, 5), nn.ReLU(), nn.Conv2d(32, 32, 5), nn.ReLU(), nn.BatchNorm2d(32),
                          nn.MaxPool2d(2), nn.Conv2d(32, 64, 3), nn.ReLU(), nn.Conv2d(64, 64, 3), nn.ReLU(),
                          nn.BatchNorm2d(64), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(576, 10))
        self.set_params(m, 100)
        opt = torch.optim.Adam(m.parameters(), 1e-3)
        x, y = self.t((512, 1, 28, 28), 9, 0, 1), torch.tensor([(i * 7) % 10 for i in range(512)])
        times, losses = [], []
        for _ in range(2 if self.quick else 3):
            t0 = time.perf_counter()
            m.train()
            loss = nn.functional.cross_entropy(m(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
            times.append(time.perf_counter() - t0)
        self.res["W5.ms"], self.res["W5.first_step_s"] = 1e3 * min(times[1:]), times[0]
        self.ref["W5.loss1"], self.ref["W5.loss2"] = losses[0], losses[1]

    def block(self, dim=256, heads=4, seed=200):
        torch, F = self.torch, self.torch.nn.functional
        lin = [torch.nn.Linear(i, o) for i, o in ((dim, dim),) * 4 + ((dim, 4 * dim), (4 * dim, dim))]
        for k, l in enumerate(lin):
            self.set_params(l, seed + 2 * k)
        q, k, v, o, up, down = lin

        def forward(x):
            b, t, d = x.shape
            a = F.layer_norm(x, (d,))
            split = lambda z: z.reshape(b, t, heads, d // heads).transpose(1, 2)
            qq, kk, vv = split(q(a)), split(k(a)), split(v(a))
            att = torch.softmax(qq @ kk.transpose(-2, -1) / np.sqrt(d // heads), -1) @ vv
            h = x + o(att.transpose(1, 2).reshape(b, t, d))
            return h + down(F.gelu(up(F.layer_norm(h, (d,))), approximate="tanh"))
        return forward, [p for l in lin for p in l.parameters()]

    def W6(self):
        torch = self.torch
        forward, params = self.block()
        x = self.t((4, 64, 256), 10)

        def step():
            y = forward(x)
            return y, torch.autograd.grad((y * y).mean(), params)
        self.res["W6.build_schedule_ms"] = 1e3 * best_of(self.reps(6), step)
        y, gs = step()
        self.ref["W6.y"], self.ref["W6.gq"] = y.detach(), gs[0]
        t, n = torch.zeros(1), 1000
        s = best_of(self.reps(3), lambda: [t.add_(1) for _ in range(n)])
        self.res["W6.tiny_us"] = s / n * 1e6


    def W7(self):
        """A GPT-2-small layer: inference tokens/s, then training steps with AdamW, as bench/suite.cpp's w7."""
        torch = self.torch
        forward, params = self.block(768, 12, 300)
        x = self.t((4, 256, 768), 11)
        with torch.no_grad():
            s = best_of(self.reps(6), lambda: forward(x))
            self.res["W7.infer_tokens_per_s"] = 4 * 256 / s
            self.ref["W7.y"] = forward(x).reshape(-1)[::4099].clone()
        opt = torch.optim.AdamW(params, 1e-4)
        times, cpus, losses = [], [], []
        for _ in range(4 if self.quick else 6):
            t0, c0 = time.perf_counter(), time.process_time()
            loss = (forward(x) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
            times.append(time.perf_counter() - t0)
            cpus.append(time.process_time() - c0)
        self.res["W7.train_ms"], self.res["W7.train_cpu_ms"] = 1e3 * min(times[2:]), 1e3 * min(cpus[2:])
        self.ref["W7.loss1"], self.ref["W7.loss2"] = losses[0], losses[1]

    def W8(self):
        """Time to 90% test accuracy, as bench/suite.cpp's w8: same weights, batch order, lr schedule, evals."""
        import gzip
        torch, nn = self.torch, self.torch.nn
        root = os.environ.get("TG_FASHION_MNIST", "/usr/share/datasets/fashion-mnist")
        idx = lambda f, off: np.frombuffer(gzip.open(os.path.join(root, f)).read(), np.uint8, offset=off)
        xtr = torch.from_numpy(idx("train-images-idx3-ubyte.gz", 16).reshape(-1, 1, 28, 28).astype(np.float32) / 255)
        ytr = torch.from_numpy(idx("train-labels-idx1-ubyte.gz", 8).astype(np.int64))
        xte = torch.from_numpy(idx("t10k-images-idx3-ubyte.gz", 16).reshape(-1, 1, 28, 28).astype(np.float32) / 255)
        yte = torch.from_numpy(idx("t10k-labels-idx1-ubyte.gz", 8).astype(np.int64))
        m = nn.Sequential(nn.Conv2d(1, 32, 5), nn.ReLU(), nn.Conv2d(32, 32, 5), nn.ReLU(), nn.BatchNorm2d(32),
                          nn.MaxPool2d(2), nn.Conv2d(32, 64, 3), nn.ReLU(), nn.Conv2d(64, 64, 3), nn.ReLU(),
                          nn.BatchNorm2d(64), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(576, 10))
        with torch.no_grad():
            for seed, (name, p) in enumerate(m.named_parameters(), 400):
                b = 1 / np.sqrt(p.numel() // p.shape[0]) if p.dim() > 1 else 0.0
                c = 0.0 if p.dim() > 1 or name.endswith("bias") else 1.0
                p.copy_(self.t(tuple(p.shape), seed, c - b, c + b))
        opt = torch.optim.Adam(m.parameters(), 3e-3)
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, 3e-3, total_steps=1500, cycle_momentum=False)
        rows = (np.arange(1500 * 128, dtype=np.int64) * 7919 + 13) % 60000
        t0, reached, acc = time.perf_counter(), -1, 0.0
        for s in range(1, 1501):
            r = torch.from_numpy(rows[(s - 1) * 128:s * 128])
            m.train()
            loss = nn.functional.cross_entropy(m(xtr[r]), ytr[r])
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            loss.item()
            if s < 800 or s % 100:
                continue
            m.eval()
            with torch.no_grad():
                acc = sum((m(xte[b:b + 1000]).argmax(-1) == yte[b:b + 1000]).sum().item() for b in range(0, 10000, 1000)) / 1e4
            if acc >= 0.9:
                reached = s
                break
        self.res["W8.steps"], self.res["W8.seconds"] = reached, time.perf_counter() - t0 if reached > 0 else -1
        self.res["W8.accuracy"] = acc


def check(name, ours, ref):
    """Prints the check line and returns whether it passed."""
    ref = np.asarray(ref, dtype=np.float64).ravel()
    ours = np.asarray(ours, dtype=np.float64).ravel()
    if ours.shape != ref.shape:
        print(f"  check {name:<10} WRONG: {ours.size} values, PyTorch has {ref.size}")
        return False
    diff = float(np.max(np.abs(ours - ref))) if ref.size else 0.0
    rel = diff / max(float(np.max(np.abs(ref))), 1e-30)
    ok = rel <= TOL and np.isfinite(ours).all()
    print(f"  check {name:<10} max abs diff {diff:.3g} (relative {rel:.2g}) {'ok' if ok else 'WRONG'}")
    return ok


def openblas_core(env):
    """The core OpenBLAS picks under env for PyTorch (OPENBLAS_VERBOSE=2 prints it when it loads), or None."""
    code = "import torch; a = torch.ones(256, 256); (a @ a).sum().item()"
    p = subprocess.run([sys.executable, "-c", code], env=dict(env, OPENBLAS_VERBOSE="2"), capture_output=True,
                       text=True, timeout=300)
    m = re.search(r"Core: (\S+)", p.stdout + p.stderr)
    return m.group(1) if m else None


def choose_blas_core():
    """Sets OPENBLAS_CORETYPE for the peer when OpenBLAS would run a generic core on this CPU; returns a line
    saying which core the peer uses and why. Call before torch is imported here."""
    if "OPENBLAS_CORETYPE" in os.environ:
        return f"{openblas_core(os.environ)} (OPENBLAS_CORETYPE={os.environ['OPENBLAS_CORETYPE']} from the environment)"
    core = openblas_core(os.environ)
    flags = set(next((l.split(":", 1)[1].split() for l in open("/proc/cpuinfo") if l.startswith("flags")), []))
    avx512 = {"SkylakeX", "Cooperlake", "SapphireRapids"}
    want = "SkylakeX" if "avx512f" in flags and core not in avx512 else \
        "Haswell" if "avx2" in flags and core not in avx512 | {"Haswell", "Zen", "Skylake"} else None
    if core is None or want is None:
        return f"{core or 'not OpenBLAS'} (as detected)"
    os.environ["OPENBLAS_CORETYPE"] = want
    return f"{openblas_core(os.environ)} (OPENBLAS_CORETYPE={want}: OpenBLAS picked {core} on a CPU with " \
           f"{'AVX-512' if want == 'SkylakeX' else 'AVX2'})"


PEER_RSS_CODE = """
import sys, torch
sys.path.insert(0, {here!r})
import suite
torch.set_num_threads(2)
p = suite.Peer(True)
p.W5()
print(next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM")) / 1024)
"""


def peer_rss_mb(workload):
    """The peak RSS (MB, VmHWM: ru_maxrss would keep the parent's across fork and exec) of a fresh PyTorch
    process running one workload, as ours runs it alone."""
    code = PEER_RSS_CODE.format(here=os.path.dirname(os.path.abspath(__file__))).replace("W5", workload)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    return float(p.stdout.split()[-1]) if p.returncode == 0 and p.stdout.split() else None


def blas_in_use():
    libs = {l.split()[-1] for l in open("/proc/self/maps") if "blas" in l.lower() and "/" in l}
    return ", ".join(sorted(os.path.basename(p) for p in libs)) or "none found"


def fmt(v):
    if v is None:
        return "-"
    return f"{v:.3g}" if abs(v) < 100 else f"{v:.0f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--suite", required=True)
    ap.add_argument("--probe", required=True)
    ap.add_argument("--only", default=",".join(WORKLOADS))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--beam-timeout", type=float, help="seconds for the BEAM=2 run, search included (180, quick 90)")
    ap.add_argument("--rounds", type=int, help="rounds of ours then the peer, best of each kept (2, quick 1)")
    a = ap.parse_args()
    only = [w.strip().upper() for w in a.only.split(",") if w.strip()]
    bad = [w for w in only if w not in WORKLOADS]
    if bad:
        sys.exit(f"suite: unknown workload {bad}; known: {','.join(WORKLOADS)}")
    q = ["--quick"] if a.quick else []
    if a.beam_timeout is None:
        a.beam_timeout = 90 if a.quick else 180
    if a.rounds is None:
        a.rounds = 1 if a.quick else 2
    t_start = time.time()

    # numpy, imported above, already loaded OpenBLAS (the same library PyTorch uses): a core chosen now takes
    # effect in a fresh process, so the suite starts again with it in the environment.
    blas_line = os.environ.pop("TG_BENCH_BLAS_CORE", None)
    if blas_line is None:
        before = os.environ.get("OPENBLAS_CORETYPE")
        blas_line = choose_blas_core()
        if os.environ.get("OPENBLAS_CORETYPE") != before:
            os.environ["TG_BENCH_BLAS_CORE"] = blas_line
            os.execv(sys.executable, [sys.executable] + sys.argv)
    hw = run_ours(a.probe, q, tempfile.gettempdir())
    # The DRAM variants of W1 and W3: arrays as big as the probe's DRAM arrays (several times the last level cache).
    dram_elems = int(hw["dram_array_bytes"]) // 4
    with tempfile.TemporaryDirectory() as tmp:
        dirs = {k: os.path.join(tmp, k) for k in ("main", "beam", "w5", "dump", "dump_beam")}
        for d in dirs.values():
            os.mkdir(d)
        ours, beam, cold, warm = {}, {}, {}, {}
        main_set = [w for w in only if w not in ("W5", "W7", "W8")]  # W5 and W7 run alone: their peak memory
        if "W8" in only:  # minutes of training: one run on each side
            ours = merge_best(ours, run_ours(a.suite, q + ["--only", "W8"], dirs["main"]))
        if "W2" in only:  # a fresh cache, so the search runs
            beam = run_ours(a.suite, q + ["--only", "W2", "--dump", dirs["dump_beam"]], dirs["beam"], {"BEAM": "2"},
                            a.beam_timeout)
        if "W5" in only:  # a fresh compile cache; the rounds below run W5 again on it (warm)
            cold = run_ours(a.suite, q + ["--only", "W5"], dirs["w5"])

        # This machine's speed drifts (other tenants): ours and the peer take turns, so a slow spell lands on
        # both sides rather than on one, and each side keeps its best figure.
        import torch
        peer, P = Peer(a.quick), {}
        for _ in range(a.rounds):
            if main_set:
                args = q + ["--only", ",".join(main_set), "--dump", dirs["dump"], "--dram", str(dram_elems)]
                ours = merge_best(ours, run_ours(a.suite, args, dirs["main"]))
            if beam is not None:  # the searched opts from the cache, measured like the other rows
                again = run_ours(a.suite, q + ["--only", "W2"], dirs["beam"], {"BEAM": "2"}, a.beam_timeout)
                if again is not None:
                    beam = merge_best(beam, {k: v for k, v in again.items() if k.startswith("W2.")})
            if "W7" in only:
                args = q + ["--only", "W7", "--dump", dirs["dump"]]
                ours = merge_best(ours, run_ours(a.suite, args, dirs["main"]))
            if "W5" in only:  # a new process each round, its first step on the compile cache cold filled
                warm = merge_best(warm, run_ours(a.suite, q + ["--only", "W5"], dirs["w5"]))
            for w in only:
                if w == "W8" and "W8.steps" in P:
                    continue
                getattr(peer, w)()
                if w in ("W1", "W3"):
                    getattr(peer, w)(dram_elems)
            P = merge_best(P, peer.res)
        if "W5" in only:
            ours["W5.ms"] = min(cold["W5.ms"], warm["W5.ms"])
            ours["W5.loss1"], ours["W5.loss2"] = cold["W5.loss1"], cold["W5.loss2"]
        device = (ours or cold).get("device", "?")

        print(f"\nours: {device} (DEV picks another)   peer: PyTorch {torch.__version__}, "
              f"{torch.get_num_threads()} threads, BLAS {blas_in_use()}, core {blas_line}")
        if "openblas" not in blas_in_use():
            print("  (PyTorch is not on OpenBLAS: its matmul/conv figures are far below its usual ones; on Debian "
                  "install libopenblas0-pthread)")
        print(f"hardware: {int(hw['threads'])} threads pinned, fp32 FMA peak {hw['fma_peak_gflops']:.0f} GFLOPS "
              f"({int(hw['fma_vector_bits'])}-bit vectors, {int(hw['fma_chains'])} chains); last-level cache "
              f"{hw['llc_bytes'] / 2**20:.0f} MiB; DRAM ({hw['dram_array_bytes'] / 2**20:.0f} MiB arrays) copy "
              f"{hw['copy_gbps']:.1f}, read {hw['read_gbps']:.1f}, triad {hw['triad_gbps']:.1f} GB/s; cache copy "
              f"{hw['cache_copy_gbps']:.1f}, read {hw['cache_read_gbps']:.1f}, triad {hw['cache_triad_gbps']:.1f} GB/s; "
              f"load average {os.getloadavg()[0]:.1f}")
        print("\nresult checks against PyTorch:")
        ok = True
        load = lambda d, k: np.fromfile(os.path.join(d, k + ".f32"), dtype=np.float32)
        for k, ref in peer.ref.items():
            if k.startswith("W5.") or k.startswith("W7.loss"):
                ok &= check(k, ours[k], ref)
            else:
                ok &= check(k, load(dirs["dump"], k), ref.numpy() if hasattr(ref, "numpy") else ref)
                if k.startswith("W2.") and beam is not None:
                    ok &= check(k + "+B", load(dirs["dump_beam"], k), ref.numpy())
        if "W6" in only:
            want = float(torch.zeros(1).add_(ours["W6.tiny_updates"]).item())
            ok &= check("W6.tiny", ours["W6.tiny_value"], want)

    peak = hw["fma_peak_gflops"]
    # A workload's bandwidth limit: the cache's when its arrays fit the last-level cache, else DRAM's.
    fits = lambda nbytes: nbytes <= hw["llc_bytes"]
    copy = lambda nbytes: hw["cache_copy_gbps"] if fits(nbytes) else hw["copy_gbps"]
    read = lambda nbytes: hw["cache_read_gbps"] if fits(nbytes) else hw["read_gbps"]
    small, big = 2 * 4 * (16 << 20), 2 * 4 * dram_elems
    H, L = "higher", "lower"
    rows = []  # (workload, unit, better, ours, peer, limit, target text, met)
    at_least = lambda v, t: (f">= {t}", v is not None and v >= t)
    below = lambda v, t: (f"< {t}", v is not None and v < t)

    def row(w, label, unit, better, o, p, limit, target):
        rows.append((w, label, unit, better, o, p, limit) + target)
    if "W1" in only:
        row("W1", "x*2+1 relu *x -0.5, 16M", "GB/s", H, ours["W1.noexp.gbps"], P["W1.noexp.gbps"], copy(small),
            at_least(ours["W1.noexp.gbps"], 25))
        row("W1", "same, then exp", "GB/s", H, ours["W1.exp.gbps"], P["W1.exp.gbps"], copy(small),
            at_least(ours["W1.exp.gbps"], 15))
        row("W1", f"same ops, {dram_elems / 1e6:.0f}M (DRAM)", "GB/s", H, ours["W1.dram.noexp.gbps"],
            P["W1.dram.noexp.gbps"], copy(big), ("-", None))
        row("W1", "  then exp (DRAM)", "GB/s", H, ours["W1.dram.exp.gbps"], P["W1.dram.exp.gbps"], copy(big),
            ("-", None))
    if "W2" in only:
        for n in (1024, 2048):
            k = f"W2.mm{n}.gflops"
            row("W2", f"matmul {n}", "GFLOPS", H, ours[k], P[k], peak, at_least(ours[k], 150))
            b = beam[k] if beam is not None else None
            row("W2", f"matmul {n} BEAM=2", "GFLOPS", H, b, P[k], peak, at_least(b, 190))
    if "W3" in only:
        row("W3", "sum 16M", "GB/s", H, ours["W3.sum.gbps"], P["W3.sum.gbps"], read(small // 2),
            at_least(ours["W3.sum.gbps"], 28))
        row("W3", "sum(axis=1) 4096x4096", "GB/s", H, ours["W3.sum1.gbps"], P["W3.sum1.gbps"], read(small // 2),
            at_least(ours["W3.sum1.gbps"], 28))
        row("W3", f"sum {dram_elems / 1e6:.0f}M (DRAM)", "GB/s", H, ours["W3.dram.sum.gbps"], P["W3.dram.sum.gbps"],
            read(big // 2), ("-", None))
        row("W3", f"sum(axis=1) {dram_elems // 4096}x4096 (DRAM)", "GB/s", H, ours["W3.dram.sum1.gbps"],
            P["W3.dram.sum1.gbps"], read(big // 2), ("-", None))
    if "W4" in only:
        row("W4", "conv2d fwd+bwd", "ms", L, ours["W4.ms"], P["W4.ms"], 3 * 2.0 * 32 * 64 * 784 * 288 / peak / 1e6,
            (f"<= {P['W4.ms']:.0f} (peer)", ours["W4.ms"] <= P["W4.ms"]))
        row("W4", "conv2d fwd+bwd", "GFLOPS", H, ours["W4.gflops"], P["W4.gflops"], peak, ("-", None))
        row("W4", "  CPU time (both threads)", "ms", L, ours["W4.cpu_ms"], P["W4.cpu_ms"], None, ("-", None))
    if "W5" in only:
        row("W5", "CNN train step b512 (JIT)", "ms", L, ours["W5.ms"], P["W5.ms"], None,
            (f"< {P['W5.ms']:.0f} (peer)", ours["W5.ms"] < P["W5.ms"]))
        row("W5", "first step, cold cache", "s", L, cold["W5.first_step_s"], P["W5.first_step_s"], None,
            below(cold["W5.first_step_s"], 1))
        row("W5", "  same, CPU time (all threads)", "s", L, cold.get("W5.first_step_cpu_s"), None, None, ("-", None))
        row("W5", "  kernels compiled in it", "count", L, cold.get("W5.first_step_compiled"), None, None, ("-", None))
        row("W5", "first step, warm cache", "s", L, warm["W5.first_step_s"], P["W5.first_step_s"], None,
            below(warm["W5.first_step_s"], 0.5))
        rss = peer_rss_mb("W5")
        row("W5", "peak memory (RSS) of the process", "MB", L, cold.get("W5.maxrss_mb"), rss, None,
            (f"<= {rss:.0f} (peer)" if rss else "-", cold.get("W5.maxrss_mb", 1e30) <= rss if rss else None))
    if "W6" in only:
        row("W6", "block: build+schedule (peer: eager fwd+bwd)", "ms", L, ours["W6.build_schedule_ms"],
            P["W6.build_schedule_ms"], None, below(ours["W6.build_schedule_ms"], 10))
        row("W6", f"  kernels in that schedule", "count", L, ours["W6.kernels"], None, None, ("-", None))
        row("W6", "  same, schedule cache off (cold)", "ms", L, ours["W6.build_schedule_cold_ms"], None, None,
            below(ours["W6.build_schedule_cold_ms"], 5))
        row("W6", "  same, CPU time", "ms", L, ours.get("W6.build_schedule_cold_cpu_ms"), None, None, ("-", None))
        row("W6", "realize per tiny op", "us", L, ours["W6.tiny_us"], P["W6.tiny_us"], None, below(ours["W6.tiny_us"], 20))

    if "W7" in only:
        row("W7", "GPT-2 layer train step (AdamW, JIT)", "ms", L, ours["W7.train_ms"], P["W7.train_ms"], None,
            (f"<= {P['W7.train_ms']:.0f} (peer)", ours["W7.train_ms"] <= P["W7.train_ms"]))
        row("W7", "  CPU time of the step (both threads)", "ms", L, ours["W7.train_cpu_ms"], P["W7.train_cpu_ms"],
            None, ("-", None))
        row("W7", "  inference", "tok/s", H, ours["W7.infer_tokens_per_s"], P["W7.infer_tokens_per_s"], None,
            ("-", None))
        rss7 = peer_rss_mb("W7")
        row("W7", "  peak memory (RSS) of the process", "MB", L, ours.get("W7.maxrss_mb"), rss7, None,
            (f"<= {rss7:.0f} (peer)" if rss7 else "-", ours.get("W7.maxrss_mb", 1e30) <= rss7 if rss7 else None))

    if "W8" in only:
        o8, p8 = ours["W8.seconds"], P["W8.seconds"]
        row("W8", f"time to 90% test acc (ours {ours['W8.steps']:.0f} steps, peer {P['W8.steps']:.0f})", "s", L,
            o8 if o8 > 0 else None, p8 if p8 > 0 else None, None,
            (f"< {p8:.0f} (peer)" if p8 > 0 else "-", o8 > 0 and (p8 <= 0 or o8 < p8)))

    if "W2" in only:
        print("\nBEAM=2 first run (fresh cache, search included; its rows take the best of it and of one run per "
              "round from the cache): " + (f"{beam['wall_s']:.0f} s" if beam is not None else
              f"stopped after {a.beam_timeout:.0f} s (--beam-timeout); its rows show '-'"))
    if "W5" in only:
        print(f"W5 processes: cold {cold['wall_s']:.0f} s, then one warm per round {warm['wall_s']:.0f} s (its first "
              "step the best of them, as the peer's is the best of its rounds)")
    print(f"\nratio = ours / peer; 'better' says which direction wins. Best of several runs after a warm-up, "
          f"over {a.rounds} round{'s' if a.rounds != 1 else ''} of ours then the peer.")
    hdr = ("wl", "what", "unit", "better", "ours", "peer", "ratio", "hw limit", "target", "met")
    fmt_row = "{:<3} {:<44} {:<6} {:<6} {:>8} {:>8} {:>6} {:>8}  {:<22} {}"
    print(fmt_row.format(*hdr))
    for w, label, unit, better, o, p, limit, target, met in rows:
        ratio = f"{o / p:.2f}" if o is not None and p else "-"
        met_s = "-" if met is None else ("met" if met else "not met")
        print(fmt_row.format(w, label, unit, better, fmt(o), fmt(p), ratio, fmt(limit), target, met_s))
    print(f"\nsuite took {time.time() - t_start:.0f} s; results {'ok' if ok else 'WRONG (see the checks above)'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
