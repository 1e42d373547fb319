#!/usr/bin/env python3
"""Training-step benchmark: the Fashion-MNIST CNN with Adam, batch 512, on our default device against
the same model in PyTorch (2 threads) in the same run. Prints ms per step, the ratio, and our time to
the first step with a cold and a warm compile cache. Usage: train_bench.py <train_bench binary> [steps]"""
import os, subprocess, sys, tempfile, time

BATCH = 512


def torch_ms_per_step(steps):
    import torch, torch.nn as nn
    torch.set_num_threads(2)
    torch.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(1, 32, 5), nn.ReLU(), nn.Conv2d(32, 32, 5), nn.ReLU(), nn.BatchNorm2d(32),
                      nn.MaxPool2d(2), nn.Conv2d(32, 64, 3), nn.ReLU(), nn.Conv2d(64, 64, 3), nn.ReLU(),
                      nn.BatchNorm2d(64), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(576, 10))
    opt = torch.optim.Adam(m.parameters(), 1e-3)
    x, y = torch.rand(BATCH, 1, 28, 28), torch.randint(0, 10, (BATCH,))
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        loss = nn.functional.cross_entropy(m(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        loss.item()
        times.append(time.perf_counter() - t0)
    return 1e3 * sum(times[1:]) / (len(times) - 1)


def ours(binary, steps, cache_dir):
    env = dict(os.environ, TG_CACHE_DIR=cache_dir)
    out = subprocess.run([binary, str(BATCH), str(steps)], env=env, check=True, capture_output=True, text=True).stdout
    vals = dict(line.split() for line in out.splitlines() if line.strip())
    return float(vals["first_step_s"]), float(vals["ms_per_step"])


def main():
    binary, steps = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 4
    with tempfile.TemporaryDirectory() as cache:
        cold_first, ms = ours(binary, steps, cache)
        warm_first, ms_warm = ours(binary, steps, cache)
    peer = torch_ms_per_step(steps)
    print(f"training step, Fashion-MNIST CNN, Adam, batch {BATCH}")
    print(f"  ours    {min(ms, ms_warm):10.1f} ms/step")
    print(f"  pytorch {peer:10.1f} ms/step (2 threads)")
    print(f"  ratio   {min(ms, ms_warm) / peer:10.2f} x pytorch's time")
    print(f"  first step: {cold_first:.2f} s with a cold compile cache, {warm_first:.2f} s warm")


if __name__ == "__main__":
    main()
