# Reference values for the nn tests, computed with PyTorch: convolutions, pools, attention, layers,
# losses, optimizer steps and learning-rate schedules. Usage: gen_nn_reference.py OUT.json
import json
import math
import sys

import torch
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_default_dtype(torch.float32)


def t(x):
    x = x.detach()
    return {"shape": list(x.shape), "data": x.reshape(-1).double().tolist()}


def rnd(*shape):
    return torch.randn(*shape)


out = {}

# ---- convolution ----
conv_cases = [
    dict(x=(2, 3, 7, 6), w=(4, 3, 3, 3), stride=1, padding=1, dilation=1, groups=1, bias=True),
    dict(x=(1, 2, 8, 9), w=(3, 2, 3, 2), stride=[2, 3], padding=[1, 2], dilation=1, groups=1, bias=False),
    dict(x=(2, 4, 9, 9), w=(6, 2, 3, 3), stride=1, padding=2, dilation=2, groups=2, bias=True),
    dict(x=(1, 3, 6, 7), w=(2, 3, 4, 3), stride=1, padding="same", dilation=1, groups=1, bias=True),
    dict(x=(1, 3, 8, 8), w=(2, 3, 2, 2), stride=2, padding=0, dilation=1, groups=1, bias=True),
    dict(x=(2, 2, 7, 7), w=(2, 1, 1, 1), stride=3, padding=1, dilation=1, groups=2, bias=False),
    dict(x=(1, 4, 10, 5), w=(4, 1, 3, 3), stride=[1, 2], padding="same", dilation=[2, 1], groups=4, bias=True),
    dict(x=(3, 2, 6, 6), w=(4, 2, 3, 3), stride=1, padding=1, dilation=1, groups=1, bias=True),
]
out["conv2d"] = []
for c in conv_cases:
    if c["padding"] == "same" and c["stride"] != 1:
        c["stride"] = 1
    x, w = rnd(*c["x"]), rnd(*c["w"])
    b = rnd(c["w"][0]) if c["bias"] else None
    y = F.conv2d(x, w, b, stride=c["stride"], padding=c["padding"], dilation=c["dilation"], groups=c["groups"])
    case = {k: v for k, v in c.items() if k not in ("x", "w")}
    case.update(x=t(x), w=t(w), y=t(y))
    if b is not None:
        case["b"] = t(b)
    out["conv2d"].append(case)

out["conv1d"] = []
for c in [dict(x=(2, 3, 11), w=(4, 3, 3), stride=2, padding=1, dilation=1, groups=1),
          dict(x=(1, 4, 9), w=(2, 2, 2), stride=1, padding="same", dilation=3, groups=2)]:
    x, w, b = rnd(*c["x"]), rnd(*c["w"]), rnd(c["w"][0])
    y = F.conv1d(x, w, b, stride=c["stride"], padding=c["padding"], dilation=c["dilation"], groups=c["groups"])
    case = {k: v for k, v in c.items() if k not in ("x", "w")}
    case.update(x=t(x), w=t(w), b=t(b), y=t(y))
    out["conv1d"].append(case)

out["conv_transpose2d"] = []
for c in [dict(x=(2, 3, 4, 5), w=(3, 2, 3, 3), stride=2, padding=1, output_padding=1, groups=1, dilation=1),
          dict(x=(1, 4, 5, 4), w=(4, 3, 2, 3), stride=1, padding=0, output_padding=0, groups=2, dilation=2),
          dict(x=(1, 2, 3, 3), w=(2, 2, 3, 2), stride=[3, 2], padding=[2, 0], output_padding=[1, 0], groups=1,
               dilation=1)]:
    x, w, b = rnd(*c["x"]), rnd(*c["w"]), rnd(c["w"][1] * c["groups"])
    y = F.conv_transpose2d(x, w, b, stride=c["stride"], padding=c["padding"], output_padding=c["output_padding"],
                           groups=c["groups"], dilation=c["dilation"])
    case = {k: v for k, v in c.items() if k not in ("x", "w")}
    case.update(x=t(x), w=t(w), b=t(b), y=t(y))
    out["conv_transpose2d"].append(case)

# ---- pooling ----
out["max_pool2d"] = []
for c in [dict(kernel=2, stride=None, padding=0, dilation=1, ceil_mode=False),
          dict(kernel=3, stride=2, padding=1, dilation=1, ceil_mode=False),
          dict(kernel=3, stride=2, padding=0, dilation=1, ceil_mode=True),
          dict(kernel=2, stride=1, padding=0, dilation=2, ceil_mode=False),
          dict(kernel=[3, 2], stride=[2, 1], padding=[1, 1], dilation=1, ceil_mode=True)]:
    x = rnd(2, 3, 7, 8)
    y = F.max_pool2d(x, c["kernel"], c["stride"], c["padding"], c["dilation"], c["ceil_mode"])
    out["max_pool2d"].append(dict(c, x=t(x), y=t(y)))

out["avg_pool2d"] = []
for c in [dict(kernel=2, stride=None, padding=0, ceil_mode=False, count_include_pad=True),
          dict(kernel=3, stride=2, padding=1, ceil_mode=False, count_include_pad=True),
          dict(kernel=3, stride=2, padding=1, ceil_mode=False, count_include_pad=False),
          dict(kernel=3, stride=2, padding=1, ceil_mode=True, count_include_pad=True),
          dict(kernel=3, stride=2, padding=0, ceil_mode=True, count_include_pad=False),
          dict(kernel=[2, 3], stride=[2, 2], padding=[1, 0], ceil_mode=True, count_include_pad=True)]:
    x = rnd(2, 2, 7, 8)
    y = F.avg_pool2d(x, c["kernel"], c["stride"], c["padding"], c["ceil_mode"], c["count_include_pad"])
    out["avg_pool2d"].append(dict(c, x=t(x), y=t(y)))

# ---- attention (torch 1.13 has no F.scaled_dot_product_attention: its formula) ----
def sdpa(q, k, v, mask=None, causal=False):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if causal:
        s = s.masked_fill(~torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).tril(), float("-inf"))
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else s + mask
    return torch.softmax(s, -1) @ v


out["sdpa"] = []
q, k, v = rnd(2, 3, 4, 8), rnd(2, 3, 5, 8), rnd(2, 3, 5, 6)
out["sdpa"].append(dict(kind="plain", q=t(q), k=t(k), v=t(v), y=t(sdpa(q, k, v))))
k2, v2 = rnd(2, 3, 4, 8), rnd(2, 3, 4, 6)
out["sdpa"].append(dict(kind="causal", q=t(q), k=t(k2), v=t(v2), y=t(sdpa(q, k2, v2, causal=True))))
bmask = torch.rand(4, 5) > 0.3
bmask[:, 0] = True
out["sdpa"].append(dict(kind="bool", q=t(q), k=t(k), v=t(v), mask=t(bmask.float()), y=t(sdpa(q, k, v, bmask))))
fmask = rnd(4, 5)
out["sdpa"].append(dict(kind="float", q=t(q), k=t(k), v=t(v), mask=t(fmask), y=t(sdpa(q, k, v, fmask))))

# ---- layers ----
layers = {}
lin = torch.nn.Linear(5, 3)
x = rnd(4, 5)
layers["linear"] = dict(state={n: t(p) for n, p in lin.state_dict().items()}, x=t(x), y=t(lin(x)))

conv = torch.nn.Conv2d(4, 6, 3, stride=2, padding=1, groups=2)
x = rnd(2, 4, 6, 5)
layers["conv2d"] = dict(state={n: t(p) for n, p in conv.state_dict().items()}, x=t(x), y=t(conv(x)))

convt = torch.nn.ConvTranspose2d(4, 2, 3, stride=2, padding=1, output_padding=1)
x = rnd(1, 4, 3, 4)
layers["conv_transpose2d"] = dict(state={n: t(p) for n, p in convt.state_dict().items()}, x=t(x), y=t(convt(x)))

bn = torch.nn.BatchNorm2d(3, momentum=0.2)
with torch.no_grad():
    bn.weight.copy_(rnd(3))
    bn.bias.copy_(rnd(3))
state0 = {n: t(p) for n, p in bn.state_dict().items()}
x1, x2, x3 = rnd(4, 3, 5, 5) * 2 + 1, rnd(4, 3, 5, 5), rnd(2, 3, 5, 5)
y1, y2 = bn(x1), bn(x2)
bn.eval()
y3 = bn(x3)
layers["batchnorm2d"] = dict(state=state0, x1=t(x1), x2=t(x2), x3=t(x3), y1=t(y1), y2=t(y2), y3=t(y3),
                             running_mean=t(bn.running_mean), running_var=t(bn.running_var))
bn1 = torch.nn.BatchNorm1d(4, momentum=None)
x1, x2 = rnd(6, 4), rnd(5, 4, 3)
y1, y2 = bn1(x1), bn1(x2)
layers["batchnorm1d_cumulative"] = dict(x1=t(x1), x2=t(x2), y1=t(y1), y2=t(y2), running_mean=t(bn1.running_mean),
                                        running_var=t(bn1.running_var))

ln = torch.nn.LayerNorm([3, 4])
with torch.no_grad():
    ln.weight.copy_(rnd(3, 4))
    ln.bias.copy_(rnd(3, 4))
x = rnd(2, 5, 3, 4)
layers["layernorm"] = dict(state={n: t(p) for n, p in ln.state_dict().items()}, x=t(x), y=t(ln(x)))

gn = torch.nn.GroupNorm(2, 6)
with torch.no_grad():
    gn.weight.copy_(rnd(6))
    gn.bias.copy_(rnd(6))
x = rnd(2, 6, 3, 2)
layers["groupnorm"] = dict(state={n: t(p) for n, p in gn.state_dict().items()}, x=t(x), y=t(gn(x)))

w = rnd(4)
x = rnd(3, 4)
rms = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w  # torch 1.13 has no RMSNorm: its formula
layers["rmsnorm"] = dict(state={"weight": t(w)}, eps=1e-6, x=t(x), y=t(rms))

emb = torch.nn.Embedding(7, 3)
idx = torch.tensor([[1, 0, 6], [3, 3, 2]])
layers["embedding"] = dict(state={n: t(p) for n, p in emb.state_dict().items()}, x=t(idx), y=t(emb(idx)))
out["layers"] = layers

# ---- losses ----
losses = {}
logits, labels = rnd(5, 4), torch.tensor([0, 3, -100, 2, 1])
losses["ce_ignore_smooth"] = dict(x=t(logits), target=t(labels), y=t(F.cross_entropy(logits, labels,
                                  ignore_index=-100, label_smoothing=0.1)),
                                  y_sum=t(F.cross_entropy(logits, labels, reduction="sum", label_smoothing=0.1)),
                                  y_none=t(F.cross_entropy(logits, labels, reduction="none")))
logits4, labels4 = rnd(2, 3, 2, 2), torch.tensor([[[0, 2], [1, 1]], [[2, 0], [0, 1]]])
losses["ce_spatial"] = dict(x=t(logits4), target=t(labels4), y=t(F.cross_entropy(logits4, labels4)))
probs = torch.softmax(rnd(3, 4), -1)
logits3 = rnd(3, 4)
losses["ce_probs"] = dict(x=t(logits3), target=t(probs), y=t(F.cross_entropy(logits3, probs, label_smoothing=0.2)))
logp = torch.log_softmax(rnd(5, 4), -1)
losses["nll"] = dict(x=t(logp), target=t(labels), y=t(F.nll_loss(logp, labels)))
z, yb, pw = rnd(3, 4), torch.rand(3, 4), torch.rand(4) + 0.5
losses["bce_logits"] = dict(x=t(z), target=t(yb), pos_weight=t(pw),
                            y=t(F.binary_cross_entropy_with_logits(z, yb, pos_weight=pw)),
                            y_plain=t(F.binary_cross_entropy_with_logits(z, yb, reduction="sum")))
p = torch.sigmoid(z)
losses["bce"] = dict(x=t(p), target=t(yb), y=t(F.binary_cross_entropy(p, yb)))
a, b = rnd(3, 4), rnd(3, 4)
losses["mse"] = dict(x=t(a), target=t(b), y=t(F.mse_loss(a, b)), y_l1=t(F.l1_loss(a, b)))
out["losses"] = losses

# ---- optimizers: fixed gradients per step, so only the update rule is compared ----
def lamb_step(ps, grads, state, lr, b1, b2, eps, wd, step):
    # LAMB (You et al.) with Adam's bias correction, as tinygrad and our LAMB compute it
    new = []
    for i, (p, g) in enumerate(zip(ps, grads)):
        m, v = state.setdefault(i, (torch.zeros_like(p), torch.zeros_like(p)))
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        state[i] = (m, v)
        up = (m / (1 - b1 ** step)) / ((v / (1 - b2 ** step)).sqrt() + eps) + wd * p
        r1, r2 = p.norm(), up.norm()
        r = (r1 / r2) if (r1 > 0 and r2 > 0) else 1.0
        new.append(p - lr * r * up)
    return new


p0 = [rnd(3, 4), rnd(4)]
steps = 4
grads = [[rnd(3, 4), rnd(4)] for _ in range(steps)]
opt_cases = {
    "sgd": (torch.optim.SGD, dict(lr=0.1)),
    "sgd_momentum_wd": (torch.optim.SGD, dict(lr=0.05, momentum=0.9, weight_decay=0.01)),
    "sgd_nesterov": (torch.optim.SGD, dict(lr=0.05, momentum=0.8, nesterov=True)),
    "adam": (torch.optim.Adam, dict(lr=0.01, betas=(0.9, 0.99), eps=1e-8, weight_decay=0.1)),
    "adamw": (torch.optim.AdamW, dict(lr=0.01, betas=(0.8, 0.999), eps=1e-8, weight_decay=0.05)),
    "lamb": (None, dict(lr=0.01, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.02)),
}
optims = {}
for name, (cls, kw) in opt_cases.items():
    ps = [p.clone().requires_grad_(True) for p in p0]
    traj = []
    if cls is None:
        state, cur = {}, [p.detach().clone() for p in p0]
        for s in range(steps):
            cur = lamb_step(cur, grads[s], state, kw["lr"], kw["betas"][0], kw["betas"][1], kw["eps"],
                            kw["weight_decay"], s + 1)
            traj.append([t(c) for c in cur])
    else:
        o = cls(ps, **kw)
        for s in range(steps):
            for p, g in zip(ps, grads[s]):
                p.grad = g.clone()
            o.step()
            traj.append([t(p) for p in ps])
    optims[name] = dict(kw, traj=traj)
out["optim"] = dict(params=[t(p) for p in p0], grads=[[t(g) for g in gs] for gs in grads], cases=optims)

# ---- learning-rate schedules ----
def lrs(make, n):
    o = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1)
    s = make(o)
    vals = [o.param_groups[0]["lr"]]
    for _ in range(n):
        o.step()
        s.step()
        vals.append(o.param_groups[0]["lr"])
    return vals


sch = torch.optim.lr_scheduler
out["lr"] = {
    "step": lrs(lambda o: sch.StepLR(o, step_size=3, gamma=0.5), 10),
    "cosine": lrs(lambda o: sch.CosineAnnealingLR(o, T_max=6, eta_min=0.01), 12),
    "onecycle": lrs(lambda o: sch.OneCycleLR(o, max_lr=0.5, total_steps=20, cycle_momentum=False), 19),
    "onecycle_linear3": lrs(lambda o: sch.OneCycleLR(o, max_lr=1.0, total_steps=16, pct_start=0.25,
                                                     anneal_strategy="linear", three_phase=True,
                                                     cycle_momentum=False), 15),
}

# ---- gradients: loss = sum(op(...) * G) with a fixed random G ----
def grads_of(fn, *inputs):
    xs = [i.clone().requires_grad_(True) for i in inputs]
    y = fn(*xs)
    g = rnd(*y.shape)
    (y * g).sum().backward()
    return dict(inputs=[t(i) for i in inputs], g=t(g), grads=[t(x.grad) for x in xs])


grad = {}
grad["conv2d"] = grads_of(lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1, dilation=1, groups=2),
                          rnd(2, 4, 7, 6), rnd(6, 2, 3, 3), rnd(6))
grad["conv2d_dilated"] = grads_of(lambda x, w: F.conv2d(x, w, None, stride=1, padding=2, dilation=2),
                                  rnd(1, 2, 6, 6), rnd(3, 2, 3, 3))
grad["conv_transpose2d"] = grads_of(lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1),
                                    rnd(1, 3, 3, 4), rnd(3, 2, 3, 3), rnd(2))
# conv's own backward rule (dx and dw as convs): stride, dilation, groups, asymmetric and wide padding
grad["conv2d_s2_d2_g2"] = grads_of(lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=(1, 2), dilation=2, groups=2),
                                   rnd(2, 4, 9, 8), rnd(6, 2, 3, 2), rnd(6))
grad["conv2d_asymmetric"] = grads_of(lambda x, w, b: F.conv2d(F.pad(x, (2, 1, 1, 0)), w, b, stride=(2, 1)),
                                     rnd(1, 3, 7, 6), rnd(4, 3, 3, 3), rnd(4))
# stride and dilation 1: dx through the window matrix's gradient (col2im), with groups and a 3x4 kernel
grad["conv2d_s1_g2"] = grads_of(lambda x, w, b: F.conv2d(x, w, b, stride=1, padding=(1, 2), groups=2),
                                rnd(2, 4, 6, 7), rnd(6, 2, 3, 4), rnd(6))
grad["conv2d_wide_pad_s3"] = grads_of(lambda x, w: F.conv2d(x, w, None, stride=3, padding=3),
                                      rnd(2, 2, 8, 7), rnd(3, 2, 2, 3))
grad["conv1d_s2"] = grads_of(lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=1), rnd(2, 3, 10), rnd(4, 3, 3),
                             rnd(4))
grad["conv3d"] = grads_of(lambda x, w: F.conv3d(x, w, None, stride=(1, 2, 1), padding=1), rnd(1, 2, 4, 5, 4),
                          rnd(2, 2, 2, 3, 2))
grad["max_pool2d"] = grads_of(lambda x: F.max_pool2d(x, 3, 2, 1), rnd(2, 2, 7, 6))
grad["avg_pool2d"] = grads_of(lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
                              rnd(2, 2, 7, 6))
grad["batchnorm2d"] = grads_of(lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True, eps=1e-5),
                               rnd(4, 3, 3, 2), rnd(3), rnd(3))
grad["sdpa"] = grads_of(lambda q, k, v: sdpa(q, k, v, causal=True), rnd(1, 2, 4, 8), rnd(1, 2, 4, 8), rnd(1, 2, 4, 6))
# 16 output channels per group fill a CPU's vectors: the direct conv runs channels last; a batch of 20 gives
# the direct dw two partials of 10 samples
grad["conv2d_g2_c16_b20"] = grads_of(lambda x, w, b: F.conv2d(x, w, b, stride=(1, 2), padding=1, groups=2),
                                     rnd(20, 4, 6, 7), rnd(32, 2, 3, 3), rnd(32))
# short output rows (5) and 16 channels in and out, stride 1: the forward, the input gradient (no col2im)
# and the weight gradient all run direct and channels last on a CPU
grad["conv2d_c16_short_rows"] = grads_of(lambda x, w, b: F.conv2d(x, w, b, stride=1, padding=1),
                                         rnd(3, 16, 6, 5), rnd(16, 16, 3, 3), rnd(16))
out["grad"] = grad

# ---- training: Linear-ReLU-Linear on a fixed batch, cross-entropy, a few real optimizer steps ----
torch.manual_seed(1)
net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
state0 = {n: p.detach().clone() for n, p in net.state_dict().items()}
xb, yb = rnd(6, 4), torch.tensor([0, 2, 1, 1, 0, 2])
train = dict(state={n: t(p) for n, p in state0.items()}, x=t(xb), y=t(yb), cases={})
train_cases = {
    "sgd_nesterov": (torch.optim.SGD, dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01)),
    "adam": (torch.optim.Adam, dict(lr=0.01)),
    "adamw": (torch.optim.AdamW, dict(lr=0.01, weight_decay=0.1)),
    "lamb": (None, dict(lr=0.01, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.01)),
}
for name, (cls, kw) in train_cases.items():
    net.load_state_dict(state0)
    ps = list(net.parameters())
    o = cls(ps, **kw) if cls else None
    lstate, losses_seen = {}, []
    for s in range(3):
        net.zero_grad()
        loss = F.cross_entropy(net(xb), yb)
        loss.backward()
        losses_seen.append(loss.item())
        if o:
            o.step()
        else:
            new = lamb_step([p.detach() for p in ps], [p.grad for p in ps], lstate, kw["lr"], kw["betas"][0],
                            kw["betas"][1], kw["eps"], kw["weight_decay"], s + 1)
            with torch.no_grad():
                for p, n in zip(ps, new):
                    p.copy_(n)
    train["cases"][name] = dict(losses=losses_seen, final={n: t(p) for n, p in net.state_dict().items()})
out["train"] = train

# a small CNN with BatchNorm: conv, running statistics and pooling gradients inside real SGD steps
torch.manual_seed(2)
cnn = torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3, padding=1), torch.nn.BatchNorm2d(2), torch.nn.ReLU(),
                          torch.nn.MaxPool2d(2), torch.nn.Flatten(), torch.nn.Linear(8, 3))
cnn_state = {n: t(p) for n, p in cnn.state_dict().items()}
xc, yc = rnd(4, 1, 4, 4), torch.tensor([2, 0, 1, 2])
o = torch.optim.SGD(cnn.parameters(), lr=0.1, momentum=0.9)
cnn_losses = []
for _ in range(3):
    o.zero_grad()
    loss = F.cross_entropy(cnn(xc), yc)
    loss.backward()
    cnn_losses.append(loss.item())
    o.step()
out["cnn"] = dict(state=cnn_state, x=t(xc), y=t(yc), losses=cnn_losses,
                  final={n: t(p) for n, p in cnn.state_dict().items()})

# normalization layers with learned weight and bias trained for 3 steps: every model x loss x optimizer,
# the state after every step (the updates' gradients read the old weight and bias of every layer)
torch.manual_seed(3)
norm_models = {
    "layernorm": (lambda: torch.nn.LayerNorm(6), (4, 6)),
    "groupnorm": (lambda: torch.nn.GroupNorm(2, 4), (3, 4, 5)),
    "batchnorm": (lambda: torch.nn.BatchNorm2d(3), (4, 3, 2, 2)),
    "linear_layernorm": (lambda: torch.nn.Sequential(torch.nn.Linear(5, 6), torch.nn.LayerNorm(6),
                                                     torch.nn.Linear(6, 4)), (4, 5)),
    # no conv bias: BatchNorm makes its gradient 0 up to rounding, which Adam scales to whole steps
    "conv_batchnorm": (lambda: torch.nn.Sequential(torch.nn.Conv2d(2, 3, 3, padding=1, bias=False),
                                                   torch.nn.BatchNorm2d(3), torch.nn.ReLU()), (2, 2, 4, 4)),
}
norm_losses = {
    "sum": lambda o, tgt, y: o.sum(),
    "mean_of_square": lambda o, tgt, y: ((o - tgt) * (o - tgt)).mean(),
    "square_mean": lambda o, tgt, y: (o - tgt).square().mean(),
    "mse_loss": lambda o, tgt, y: F.mse_loss(o, tgt),
    "cross_entropy": lambda o, tgt, y: F.cross_entropy(o.reshape(o.shape[0], -1), y),
}
norm_optims = {
    "sgd": (torch.optim.SGD, dict(lr=0.1)),
    "sgd_momentum": (torch.optim.SGD, dict(lr=0.05, momentum=0.9)),
    "adam": (torch.optim.Adam, dict(lr=0.01)),
}
norm_train = {}
for mname, (make, xshape) in norm_models.items():
    model = make()
    with torch.no_grad():  # weights away from the ones/zeros defaults, so every gradient term counts
        for n, p in model.named_parameters():
            p.copy_((1.0 if n.endswith("weight") and p.dim() == 1 else 0.0) + 0.5 * torch.randn_like(p))
    state0 = {n: v.clone() for n, v in model.state_dict().items()}
    xn = rnd(*xshape)
    with torch.no_grad():
        oshape = model(xn).shape
    tgt = rnd(*oshape)
    classes = math.prod(oshape[1:])
    yn = torch.randint(0, classes, (xshape[0],))
    case = dict(state={n: t(v) for n, v in state0.items()}, x=t(xn), target=t(tgt), y=t(yn), runs={})
    for lname, loss_fn in norm_losses.items():
        for oname, (cls, kw) in norm_optims.items():
            if mname == "batchnorm" and lname == "sum" and oname == "adam":
                continue  # the weight's gradient is 0 up to rounding, which Adam scales to whole steps
            model.load_state_dict(state0)
            model.train()
            o = cls(model.parameters(), **kw)
            losses, states = [], []
            for _ in range(3):
                o.zero_grad()
                loss = loss_fn(model(xn), tgt, yn)
                loss.backward()
                losses.append(loss.item())
                o.step()
                states.append({n: t(v) for n, v in model.state_dict().items()})
            case["runs"][lname + "/" + oname] = dict(losses=losses, states=states)
    norm_train[mname] = case
out["norm_train"] = norm_train

# ---- ConvTranspose1d, InstanceNorm, LayerNorm2d, LSTMCell: forward and gradients (own seed, so the vectors
# above stay as they were) ----
torch.manual_seed(3)


def module_case(m, inputs, fn=None):
    """m's state, its output on inputs and the gradients of sum(out * G) for the inputs and every parameter."""
    m.zero_grad(set_to_none=True)  # a module used for several cases must not accumulate
    xs = [i.clone().requires_grad_(True) for i in inputs]
    ys = fn(m, *xs) if fn else (m(*xs),)
    gs = [rnd(*y.shape) for y in ys]
    sum((y * g).sum() for y, g in zip(ys, gs)).backward()
    name = lambda n: n[3:] if n.startswith("ln.") else n  # LayerNorm2dRef's parameters are ours without "ln."
    return dict(state={name(n): t(p) for n, p in m.state_dict().items()}, inputs=[t(i) for i in inputs],
                ys=[t(y) for y in ys], g=[t(g) for g in gs], dinputs=[t(x.grad) for x in xs],
                dparams={name(n): t(p.grad) for n, p in m.named_parameters()})


new_layers = {}
new_layers["conv_transpose1d"] = []
for c in [dict(cin=3, cout=4, k=3, stride=2, padding=1, output_padding=1, dilation=1, groups=1, bias=True, x=(2, 3, 7)),
          dict(cin=4, cout=6, k=2, stride=3, padding=0, output_padding=2, dilation=1, groups=2, bias=True, x=(1, 4, 5)),
          dict(cin=2, cout=3, k=3, stride=1, padding=2, output_padding=0, dilation=2, groups=1, bias=False, x=(3, 2, 9)),
          dict(cin=6, cout=3, k=4, stride=2, padding=3, output_padding=1, dilation=1, groups=3, bias=True, x=(2, 6, 5)),
          dict(cin=2, cout=2, k=2, stride=3, padding=2, output_padding=1, dilation=2, groups=1, bias=True, x=(1, 2, 6)),
          dict(cin=5, cout=5, k=5, stride=2, padding=1, output_padding=0, dilation=3, groups=5, bias=True, x=(2, 5, 3)),
          # padding beyond dilation * (kernel - 1): the output is cut from the inside of the full one
          dict(cin=2, cout=3, k=2, stride=3, padding=2, output_padding=1, dilation=1, groups=1, bias=True, x=(1, 2, 7))]:
    m = torch.nn.ConvTranspose1d(c["cin"], c["cout"], c["k"], stride=c["stride"], padding=c["padding"],
                                 output_padding=c["output_padding"], groups=c["groups"], bias=c["bias"],
                                 dilation=c["dilation"])
    new_layers["conv_transpose1d"].append(dict(c, x=list(c["x"]), **module_case(m, [rnd(*c["x"])])))
# unbatched (C, L) input
m = torch.nn.ConvTranspose1d(3, 2, 3, stride=2, padding=1)
new_layers["conv_transpose1d_unbatched"] = module_case(m, [rnd(3, 5)])

new_layers["instancenorm"] = []
for cls, shape, eps in [(torch.nn.InstanceNorm2d, (2, 3, 5, 4), 1e-5), (torch.nn.InstanceNorm1d, (3, 4, 7), 1e-3),
                        (torch.nn.InstanceNorm3d, (2, 2, 3, 4, 3), 1e-5)]:
    m = cls(shape[1], eps=eps, affine=True)
    with torch.no_grad():
        m.weight.copy_(rnd(shape[1]))
        m.bias.copy_(rnd(shape[1]))
    new_layers["instancenorm"].append(dict(eps=eps, **module_case(m, [rnd(*shape) * 2 + 1])))


class LayerNorm2dRef(torch.nn.Module):  # torch's LayerNorm over the channels of NCHW
    def __init__(self, c):
        super().__init__()
        self.ln = torch.nn.LayerNorm(c)

    def forward(self, x):
        return self.ln(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


m = LayerNorm2dRef(5)
with torch.no_grad():
    m.ln.weight.copy_(rnd(5))
    m.ln.bias.copy_(rnd(5))
new_layers["layernorm2d"] = module_case(m, [rnd(2, 5, 3, 4)])

cell = torch.nn.LSTMCell(5, 4)
new_layers["lstmcell"] = module_case(cell, [rnd(3, 5), rnd(3, 4), rnd(3, 4)], lambda m, x, h, c: m(x, (h, c)))
new_layers["lstmcell_zero_state"] = module_case(cell, [rnd(2, 5)], lambda m, x: m(x))
new_layers["lstmcell_unbatched"] = module_case(cell, [rnd(5), rnd(4), rnd(4)], lambda m, x, h, c: m(x, (h, c)))
nobias = torch.nn.LSTMCell(3, 2, bias=False)
new_layers["lstmcell_no_bias"] = module_case(nobias, [rnd(4, 3), rnd(4, 2), rnd(4, 2)], lambda m, x, h, c: m(x, (h, c)))
out["new_layers"] = new_layers

# ---- LARS and Muon: their update equations written out in numpy (float64), fixed gradients per step ----
import numpy as np

rng = np.random.default_rng(4)
lm_params = [rng.standard_normal((4, 3)), rng.standard_normal(5), np.zeros((2, 3)), rng.standard_normal((2, 3, 2))]
lm_steps = 4
lm_grads = [[rng.standard_normal(p.shape) for p in lm_params] for _ in range(lm_steps)]


def lars_traj(lr, momentum, wd, nesterov, classic, tcoef):
    ps, bs, traj = [p.copy() for p in lm_params], [np.zeros_like(p) for p in lm_params], []
    for s in range(lm_steps):
        for i, g in enumerate(lm_grads[s]):
            p = ps[i]
            pn, gn = np.linalg.norm(p), np.linalg.norm(g)
            trust = tcoef * pn / (gn + wd * pn) if tcoef != 0 and pn > 0 and gn > 0 else 1.0
            d = g + wd * p
            if classic:  # lr and trust ratio before the momentum
                d = lr * trust * d
            if momentum:
                bs[i] = momentum * bs[i] + d
                d = d + momentum * bs[i] if nesterov else bs[i]
            if not classic:
                d = lr * trust * d
            ps[i] = p - d
        traj.append([dict(shape=list(p.shape), data=p.reshape(-1).tolist()) for p in ps])
    return traj


def ns_ref(G, steps, coeffs, eps=1e-7):
    if G.shape[0] > G.shape[1]:
        return ns_ref(G.T, steps, coeffs, eps).T
    X = G / (np.sqrt((G * G).sum()) + eps)
    for _ in range(steps):
        A = X @ X.T
        Y, P = np.zeros_like(X), X
        for c in coeffs:  # sum_i c_i A^i X
            Y, P = Y + c * P, A @ P
        X = Y
    return X


def muon_traj(lr, momentum, wd, ns_steps, coeffs, nesterov):
    ps, bs, traj = [p.copy() for p in lm_params], [np.zeros_like(p) for p in lm_params], []
    for s in range(lm_steps):
        for i, g in enumerate(lm_grads[s]):
            u = g
            if momentum:
                bs[i] = momentum * bs[i] + g
                u = g + momentum * bs[i] if nesterov else bs[i]
            u = ns_ref(u.reshape(u.shape[0], -1), ns_steps, coeffs).reshape(u.shape)
            ps[i] = ps[i] * (1 - lr * wd) - lr * u
        traj.append([dict(shape=list(p.shape), data=p.reshape(-1).tolist()) for p in ps])
    return traj


def arr(a):
    return dict(shape=list(a.shape), data=a.reshape(-1).tolist())


lars_cases = {
    "lars_classic": dict(lr=0.5, momentum=0.9, weight_decay=0.01, nesterov=False, classic=True, tcoef=0.02),
    "lars_popular_nesterov": dict(lr=0.3, momentum=0.8, weight_decay=0.05, nesterov=True, classic=False, tcoef=0.05),
    "lars_no_momentum": dict(lr=0.2, momentum=0.0, weight_decay=0.0, nesterov=False, classic=True, tcoef=0.01),
    "lars_tcoef0": dict(lr=0.1, momentum=0.9, weight_decay=0.01, nesterov=False, classic=False, tcoef=0.0),
}
muon_cases = {
    "muon_default": dict(lr=0.02, momentum=0.95, weight_decay=0.1, ns_steps=5, ns_coefficients=[3.4445, -4.775, 2.0315],
                         nesterov=True),
    "muon_plain": dict(lr=0.05, momentum=0.9, weight_decay=0.0, ns_steps=3, ns_coefficients=[2.0, -1.5, 0.5],
                       nesterov=False),
}
lm = dict(params=[arr(p) for p in lm_params], grads=[[arr(g) for g in gs] for gs in lm_grads], cases={})
for name, kw in lars_cases.items():
    lm["cases"][name] = dict(kw, traj=lars_traj(kw["lr"], kw["momentum"], kw["weight_decay"], kw["nesterov"],
                                                kw["classic"], kw["tcoef"]))
for name, kw in muon_cases.items():
    lm["cases"][name] = dict(kw, traj=muon_traj(kw["lr"], kw["momentum"], kw["weight_decay"], kw["ns_steps"],
                                                kw["ns_coefficients"], kw["nesterov"]))
ns_in = rng.standard_normal((3, 5))
lm["newton_schulz"] = dict(x=arr(ns_in), y=arr(ns_ref(ns_in, 5, [3.4445, -4.775, 2.0315])),
                           y_t=arr(ns_ref(ns_in.T, 2, [1.5, -0.5])))
out["lars_muon"] = lm

with open(sys.argv[1], "w") as f:
    json.dump(out, f)
