# Reference values for the JIT tests, computed with PyTorch: a Linear-ReLU-Linear net trained for five
# steps on a new batch each step (SGD with momentum, Adam). Usage: gen_jit_reference.py OUT.json
import json
import sys

import torch
import torch.nn.functional as F

torch.manual_seed(7)


def t(x):
    x = x.detach()
    return {"shape": list(x.shape), "data": x.reshape(-1).double().tolist()}


net = torch.nn.Sequential(torch.nn.Linear(5, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
state0 = {n: p.detach().clone() for n, p in net.state_dict().items()}
steps = 5
xs = [torch.randn(8, 5) for _ in range(steps)]
ys = [torch.randint(0, 4, (8,)) for _ in range(steps)]
out = dict(state={n: t(p) for n, p in state0.items()}, x=[t(x) for x in xs], y=[y.tolist() for y in ys],
           cases={})
cases = {
    "sgd_momentum": (torch.optim.SGD, dict(lr=0.1, momentum=0.9)),
    "adam": (torch.optim.Adam, dict(lr=0.01)),
}


def train(cls, kw, xs, ys):
    """Losses and final state of the net from state0, one optimizer step per batch."""
    net.load_state_dict(state0)
    o = cls(net.parameters(), **kw)
    losses = []
    for x, y in zip(xs, ys):
        o.zero_grad()
        loss = F.cross_entropy(net(x), y)
        loss.backward()
        losses.append(loss.item())
        o.step()
    return dict(losses=losses, final={n: t(p) for n, p in net.state_dict().items()})


for name, (cls, kw) in cases.items():
    out["cases"][name] = train(cls, kw, xs, ys)

# The same net and SGD with momentum on batches of changing size (a variable batch under one capture).
sizes = [8, 5, 8, 3, 7, 1]
vxs = [torch.randn(b, 5) for b in sizes]
vys = [torch.randint(0, 4, (b,)) for b in sizes]
out["varying_batch"] = dict(x=[t(x) for x in vxs], y=[y.tolist() for y in vys],
                            **train(*cases["sgd_momentum"], vxs, vys))

with open(sys.argv[1], "w") as f:
    json.dump(out, f)
