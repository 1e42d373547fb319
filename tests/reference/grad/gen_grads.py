# Writes gradient test cases from PyTorch autograd: inputs, the upstream gradient (none for a one-element
# loss), the forward output and the expected gradient of every input. test_grads.cpp checks each case.
import json
import sys

import torch
import torch.nn.functional as F

torch.manual_seed(0)
CASES = []


def gen(spec):
    kind, shape = spec[0], spec[1]
    if kind == "n":  # normal
        return torch.randn(shape)
    if kind == "u":  # uniform(-1, 1)
        return torch.rand(shape) * 2 - 1
    if kind == "p":  # positive, away from 0
        return torch.rand(shape) * 1.5 + 0.5
    if kind == "prob":  # in (0.1, 0.9)
        return torch.rand(shape) * 0.8 + 0.1
    if kind == "data":  # explicit values
        return torch.tensor(spec[2], dtype=torch.float32).reshape(shape)
    if kind == "i":  # integers in [lo, hi)
        return torch.randint(spec[2], spec[3], shape, dtype=torch.int64)
    raise ValueError(kind)


def case(name, specs, fn, nograd=()):
    xs = [gen(s) for s in specs]
    for i, x in enumerate(xs):
        if x.is_floating_point() and i not in nograd:
            x.requires_grad_(True)
    out = fn(*xs)
    upstream = None
    if out.numel() == 1:
        out.backward()
    else:
        upstream = torch.randn(out.shape)
        out.backward(upstream)

    def enc(t):
        return {"shape": list(t.shape), "data": t.detach().reshape(-1).tolist()}

    inputs = []
    for i, x in enumerate(xs):
        d = enc(x)
        d["dtype"] = "float32" if x.is_floating_point() else "int32"
        d["grad"] = x.is_floating_point() and i not in nograd
        d["expected"] = enc(x.grad) if d["grad"] else None
        inputs.append(d)
    CASES.append({"name": name, "inputs": inputs, "output": enc(out),
                  "upstream": enc(upstream) if upstream is not None else None})


A = ("n", [3, 5])
P = ("p", [3, 5])
U = ("u", [3, 5])
R3 = ("n", [3, 4, 5])

# ---- unary ----
case("neg", [A], lambda x: -x)
case("reciprocal", [P], lambda x: x.reciprocal())
case("sqrt", [P], lambda x: x.sqrt())
case("rsqrt", [P], lambda x: x.rsqrt())
case("exp", [A], lambda x: x.exp())
case("exp2", [A], lambda x: torch.exp2(x))
case("log", [P], lambda x: x.log())
case("log2", [P], lambda x: x.log2())
case("sin", [A], lambda x: x.sin())
case("cos", [A], lambda x: x.cos())
case("tan", [U], lambda x: x.tan())
case("tanh", [A], lambda x: x.tanh())
case("sigmoid", [A], lambda x: x.sigmoid())
case("relu", [A], lambda x: x.relu())
case("leaky_relu", [A], lambda x: F.leaky_relu(x, 0.1))
case("gelu", [A], lambda x: F.gelu(x, approximate="tanh"))
case("silu", [A], lambda x: F.silu(x))
case("softplus", [A], lambda x: F.softplus(x))
case("logsigmoid", [A], lambda x: F.logsigmoid(x))
case("abs", [A], lambda x: x.abs())
case("sign", [A], lambda x: x.sign() * 2 + x)
case("square", [A], lambda x: x.square())
case("trunc_floor_ceil_round", [("n", [3, 5])], lambda x: (x * 3).trunc() + (x * 3).floor() + x.ceil() * x + x.round())
case("sum_scalar_loss", [A], lambda x: (x * x).sum())

# ---- binary (broadcasting) and ternary ----
B1, B2 = ("n", [3, 1, 4]), ("n", [5, 4])
case("add_broadcast", [B1, B2], lambda a, b: a + b)
case("sub_broadcast", [B1, B2], lambda a, b: a - b)
case("mul_broadcast", [B1, B2], lambda a, b: a * b)
case("div_broadcast", [B1, ("p", [5, 4])], lambda a, b: a / b)
case("rdiv_scalar", [P], lambda x: 3.0 / x)
case("pow_tensor", [("p", [3, 1, 4]), ("n", [5, 4])], lambda a, b: a.pow(b))
case("pow_scalar", [P], lambda x: x.pow(2.5) + x.pow(2.0))
case("rpow_scalar", [A], lambda x: 2.0 ** x)
case("pow_zero_base", [("data", [5], [0.0, 0.0, 1.0, 2.0, 0.0]), ("data", [5], [2.0, 0.0, 0.0, 3.0, 1.0])],
     lambda a, b: a.pow(b))
case("maximum", [B1, B2], lambda a, b: torch.maximum(a, b))
case("minimum", [B1, B2], lambda a, b: torch.minimum(a, b))
case("maximum_ties", [("data", [4], [1.0, 2.0, 3.0, -1.0]), ("data", [4], [1.0, 5.0, 3.0, -2.0])],
     lambda a, b: torch.maximum(a, b) * torch.tensor([1.0, 2.0, 3.0, 4.0]))
case("minimum_ties", [("data", [4], [1.0, 2.0, 3.0, -1.0]), ("data", [4], [1.0, 5.0, 3.0, -2.0])],
     lambda a, b: torch.minimum(a, b) * torch.tensor([1.0, 2.0, 3.0, 4.0]))
case("where", [("i", [3, 1], 0, 2), B2, ("n", [3, 5, 4])], lambda c, a, b: torch.where(c.reshape(3, 1, 1) != 0, a, b))
case("clamp_scalar", [A], lambda x: x.clamp(-0.5, 0.7))
case("clamp_tensor", [A, ("n", [5]), ("n", [3, 5])], lambda x, lo, hi: torch.clamp(x, lo, lo + hi.abs()))
case("logaddexp", [B1, B2], lambda a, b: torch.logaddexp(a, b))
case("mod_float", [A, ("p", [5])], lambda a, b: torch.remainder(a * 3, b))
case("fmod_float", [A, ("p", [5])], lambda a, b: torch.fmod(a * 3, b))
case("cast_roundtrip", [A], lambda x: x.double().float() * 2 + x.half().float().detach())

# ---- reductions ----
case("sum_all", [R3], lambda x: x.sum())
case("sum_axis", [R3], lambda x: x.sum(1))
case("sum_axes_keepdim", [R3], lambda x: x.sum((0, 2), keepdim=True))
case("mean_axis", [R3], lambda x: x.mean(-1))
case("mean_all", [R3], lambda x: x.mean())
case("max_all", [R3], lambda x: x.amax())
case("max_axis", [R3], lambda x: x.amax(1))
case("min_axis_keepdim", [R3], lambda x: x.amin(0, keepdim=True))
case("max_ties", [("data", [2, 3], [1.0, 4.0, 4.0, 2.0, 2.0, 2.0])], lambda x: x.amax(1))
case("max_ties_all", [("data", [2, 3], [1.0, 4.0, 4.0, 2.0, 4.0, 2.0])], lambda x: x.amax() * 3)
case("min_ties", [("data", [2, 3], [1.0, 1.0, 4.0, 0.0, 2.0, 0.0])], lambda x: x.amin(1))
case("prod_axis", [("u", [3, 4, 5])], lambda x: x.prod(1))
case("prod_zeros", [("data", [3, 4], [1.0, 0.0, 2.0, 3.0, 0.0, 0.0, 2.0, 1.0, 1.5, 2.0, -1.0, 0.5])],
     lambda x: x.prod(1))
case("var_axis", [R3], lambda x: x.var(1))
case("var_keepdim", [R3], lambda x: x.var((0, 2), keepdim=True))
case("std_all", [R3], lambda x: x.std())
case("std_correction0", [R3], lambda x: x.std(-1, unbiased=False))
case("logsumexp", [R3], lambda x: torch.logsumexp(x, -1))
case("cumsum", [R3], lambda x: x.cumsum(1))
case("cumsum_last", [("n", [7])], lambda x: x.cumsum(0))

# ---- movement ----
case("reshape", [R3], lambda x: x.reshape(6, 10) * torch.arange(10.0))
case("permute", [R3], lambda x: x.permute(2, 0, 1))
case("expand", [("n", [3, 1, 5])], lambda x: x.expand(2, 3, 4, 5))
case("transpose_flatten", [R3], lambda x: x.transpose(0, 2).flatten(1))
case("squeeze_unsqueeze", [("n", [3, 1, 5])], lambda x: x.squeeze(1).unsqueeze(0))
P4 = ("n", [1, 2, 3, 5])
case("pad_constant", [P4], lambda x: F.pad(x, (2, 1, 1, 2), value=0.5))
case("pad_reflect", [P4], lambda x: F.pad(x, (2, 1, 1, 2), mode="reflect"))
case("pad_replicate", [P4], lambda x: F.pad(x, (2, 1, 1, 2), mode="replicate"))
case("pad_circular", [P4], lambda x: F.pad(x, (2, 1, 1, 2), mode="circular"))
case("shrink", [R3], lambda x: x[1:3, :, 2:4])
case("flip", [R3], lambda x: x.flip((0, 2)))
case("cat", [("n", [2, 3]), ("n", [4, 3]), ("n", [1, 3])], lambda a, b, c: torch.cat([a, b, c], 0))
case("stack", [("n", [2, 3]), ("n", [2, 3])], lambda a, b: torch.stack([a, b], 1))
case("split", [("n", [3, 7])],
     lambda x: sum((p * (i + 1)).sum() * (i + 1) for i, p in enumerate(torch.split(x, 3, 1))))
case("chunk", [("n", [6, 2])], lambda x: x.chunk(3, 0)[1] * 2 + x.chunk(3, 0)[2])
case("repeat", [("n", [2, 3])], lambda x: x.repeat(2, 1, 3))

# ---- indexing ----
case("slice_step", [("n", [7, 8])], lambda x: x[::2, 1::3])
case("index_int_newaxis", [R3], lambda x: x[1, None, :, 2:4])
case("index_tensor", [("n", [5, 3]), ("i", [6], 0, 5)], lambda x, i: x[i])
case("index_two_tensors", [("n", [4, 5]), ("i", [3], 0, 4), ("i", [3], 0, 5)], lambda x, i, j: x[i, j])
case("gather", [("n", [3, 5]), ("i", [3, 4], 0, 5)], lambda x, i: torch.gather(x, 1, i))

# ---- linear algebra ----
case("matmul", [("n", [3, 4]), ("n", [4, 5])], lambda a, b: a @ b)
case("matmul_batched", [("n", [2, 3, 4]), ("n", [4, 5])], lambda a, b: a @ b)
# big enough that a CPU device packs b into strips
case("matmul_packed", [("n", [128, 128]), ("n", [128, 128])], lambda a, b: a @ b)
# operands that compute (stored before the matmul) and a computed upstream gradient, through matmul's own
# backward rule; batched with equal batch axes as attention's
case("matmul_computed", [("n", [40, 24]), ("n", [24, 48])], lambda a, b: (a.tanh() @ (b * 2 + 1)).sin())
case("matmul_batched_computed", [("n", [2, 20, 24]), ("n", [2, 24, 18])],
     lambda a, b: (a.exp() @ b.transpose(1, 2).relu().transpose(1, 2)) * 0.5)
case("dot_vectors", [("n", [6]), ("n", [6])], lambda a, b: a @ b)
case("einsum_ij_jk", [("n", [3, 4]), ("n", [4, 5])], lambda a, b: torch.einsum("ij,jk->ik", a, b))
case("einsum_batched", [("n", [2, 3, 4]), ("n", [2, 4, 5])], lambda a, b: torch.einsum("bij,bjk->bik", a, b))
case("einsum_trace", [("n", [4, 4])], lambda a: torch.einsum("ii->", a))
case("linear", [("n", [3, 4]), ("n", [4, 5]), ("n", [5])], lambda x, w, b: x @ w + b)

# ---- convolution and pooling (movement ops and multiply-reduce) ----
case("conv2d", [("n", [2, 3, 6, 5]), ("n", [4, 3, 3, 3]), ("n", [4])],
     lambda x, w, b: F.conv2d(x, w, b, stride=1, padding=1))
case("conv2d_strided_grouped", [("n", [1, 4, 9, 8]), ("n", [6, 2, 3, 2])],
     lambda x, w: F.conv2d(x, w, stride=2, dilation=2, groups=2))
case("max_pool2d", [("n", [1, 2, 6, 7])], lambda x: F.max_pool2d(x, 2))
case("avg_pool2d", [("n", [1, 2, 6, 7])], lambda x: F.avg_pool2d(x, 3, stride=2, padding=1))

# ---- nn functional ----
case("softmax", [R3], lambda x: x.softmax(-1))
case("softmax_axis1", [R3], lambda x: x.softmax(1))
case("log_softmax", [R3], lambda x: x.log_softmax(-1))
case("layernorm", [R3], lambda x: F.layer_norm(x, (5,), eps=1e-5))
case("cross_entropy_indices", [("n", [4, 5]), ("i", [4], 0, 5)], lambda x, y: F.cross_entropy(x, y))
case("cross_entropy_probs", [("n", [4, 5]), ("prob", [4, 5])], lambda x, y: F.cross_entropy(x, y.softmax(-1)),
     nograd=(1,))
case("cross_entropy_smoothing", [("n", [4, 5]), ("i", [4], 0, 5)],
     lambda x, y: F.cross_entropy(x, y, label_smoothing=0.1))
case("cross_entropy_sum", [("n", [4, 5]), ("i", [4], 0, 5)], lambda x, y: F.cross_entropy(x, y, reduction="sum"))
case("sparse_ce_ignore", [("n", [6, 5]), ("data", [6], [0.0, 2.0, 4.0, 2.0, 1.0, 3.0])],
     lambda x, y: F.cross_entropy(x, y.long(), ignore_index=2), nograd=(1,))
case("binary_crossentropy", [("prob", [3, 5]), ("prob", [3, 5])], lambda p, y: F.binary_cross_entropy(p, y),
     nograd=(1,))
case("binary_crossentropy_logits", [A, ("prob", [3, 5])],
     lambda x, y: F.binary_cross_entropy_with_logits(x, y), nograd=(1,))
case("mlp_loss", [("n", [8, 5]), ("n", [5, 7]), ("n", [7]), ("n", [7, 3]), ("n", [3]), ("i", [8], 0, 3)],
     lambda x, w1, b1, w2, b2, y: F.cross_entropy((x @ w1 + b1).relu() @ w2 + b2, y), nograd=(0,))

# ---- composed ops ----
case("asin", [U], lambda x: torch.asin(x * 0.9))
case("acos", [U], lambda x: torch.acos(x * 0.9))
case("atan", [("n", [3, 5])], lambda x: torch.atan(x * 2))
case("sinh_cosh", [A], lambda x: torch.sinh(x) + torch.cosh(x) * 2)
case("asinh", [A], lambda x: torch.asinh(x * 3))
case("acosh", [P], lambda x: torch.acosh(x + 1))
case("atanh", [U], lambda x: torch.atanh(x * 0.9))
case("erf", [A], lambda x: torch.erf(x))
case("log10", [P], lambda x: torch.log10(x))
case("copysign", [A, A], lambda a, b: torch.copysign(a, b), nograd=(1,))
case("lerp", [A, A, U], lambda a, b, w: torch.lerp(a, b, w * 1.5))
case("gelu_exact", [A], lambda x: F.gelu(x))
case("elu", [A], lambda x: F.elu(x, 0.7))
case("celu", [A], lambda x: F.celu(x, 1.5))
case("selu", [A], lambda x: F.selu(x))
case("mish", [A], lambda x: F.mish(x))
case("hardsigmoid_hardswish", [A], lambda x: F.hardsigmoid(x * 3) + F.hardswish(x * 3))
case("hardtanh_relu6", [A], lambda x: F.hardtanh(x) + F.relu6(x * 5))
case("softsign", [A], lambda x: F.softsign(x))
case("quick_gelu", [A], lambda x: x * torch.sigmoid(1.702 * x))
case("softmin", [R3], lambda x: F.softmin(x, 1))
case("masked_fill", [R3, ("i", [4, 1], 0, 2)], lambda x, m: x.masked_fill(m != 0, 0.5))
case("tril_triu", [R3], lambda x: torch.tril(x, 1) + torch.triu(x, -1) * 2)
case("std_mean", [R3], lambda x: (lambda s, m: s * 2 + m)(*torch.std_mean(x, 1)))
case("var_mean", [R3], lambda x: (lambda v, m: v + m * 3)(*torch.var_mean(x, (0, 2), keepdim=True)))
case("normalize", [R3], lambda x: F.normalize(x, 2.0, 1))
case("normalize_p3", [R3], lambda x: F.normalize(x, 3.0, -1))
case("cumprod", [("u", [3, 6])], lambda x: torch.cumprod(x + 0.2, 1))
case("cummax", [R3], lambda x: torch.cummax(x, 1).values)
case("cummin", [R3], lambda x: torch.cummin(x, -1).values)
case("logcumsumexp", [R3], lambda x: torch.logcumsumexp(x, 2))
case("roll", [R3], lambda x: torch.roll(x, (1, -2), (0, 2)) * torch.arange(5.0))
case("diag", [("n", [4])], lambda x: torch.diag(x, 1) * torch.arange(5.0))
case("diag_2d", [("n", [4, 6])], lambda x: torch.diag(x, -1))
case("diagonal", [R3], lambda x: torch.diagonal(x, 1, 0, 2))
case("meshgrid", [("n", [3]), ("n", [4])], lambda a, b: (lambda g, h: g * h + g)(*torch.meshgrid(a, b, indexing="xy")))
case("repeat_interleave", [R3], lambda x: torch.repeat_interleave(x, 2, 1) * torch.arange(5.0))
case("unfold", [("n", [3, 10])], lambda x: x.unfold(1, 4, 3) * torch.arange(4.0))
case("pad_to_shrink_to", [R3], lambda x: F.pad(x, (0, 2, 0, 1)) * 2 + F.pad(x[:2, :3, :4], (0, 3, 0, 2, 0, 1)))
case("scatter", [("n", [4, 5]), ("n", [2, 5])], lambda x, s: torch.scatter(x, 0, torch.tensor([[1, 0, 3, 2, 0], [3, 2, 0, 1, 1]]), s))
case("scatter_reduce_sum", [("n", [4, 5]), ("n", [3, 5])],
     lambda x, s: x.scatter_reduce(0, torch.tensor([[1, 0, 3, 2, 0], [1, 2, 0, 1, 1], [3, 3, 3, 0, 0]]), s, "sum"))
case("scatter_reduce_amax", [("n", [4, 5]), ("n", [3, 5])],
     lambda x, s: x.scatter_reduce(0, torch.tensor([[1, 0, 3, 2, 0], [1, 2, 0, 1, 1], [3, 3, 3, 0, 0]]), s, "amax",
                                   include_self=False))
case("sort", [R3], lambda x: torch.sort(x, 1, descending=True).values * torch.arange(5.0))
case("topk", [R3], lambda x: torch.topk(x, 2, -1).values)
case("masked_select", [R3, ("i", [4, 5], 0, 2)], lambda x, m: torch.masked_select(x, m != 0))

case("interpolate_bilinear", [("n", [1, 2, 4, 5])], lambda x: F.interpolate(x, size=[7, 3], mode="bilinear"))
case("interpolate_bicubic", [("n", [1, 2, 4, 5])],
     lambda x: F.interpolate(x, size=[6, 8], mode="bicubic", align_corners=True))
case("interpolate_nearest", [("n", [1, 2, 5])], lambda x: F.interpolate(x, size=[8], mode="nearest"))
case("rearrange", [R3], lambda x: x.reshape(3, 2, 2, 5).permute(0, 3, 2, 1).reshape(3, 5, 4))
UNPOOL_IDX = [[0, 3, 10], [19, 14, 17], [30, 33, 28]]  # one position in each 2x2 window of a 6x6 plane
case("max_unpool2d", [("n", [1, 2, 3, 3])],
     lambda x: F.max_unpool2d(x, torch.tensor(UNPOOL_IDX).expand(1, 2, 3, 3), 2) * torch.arange(6.0))
case("svd_values", [("n", [5, 3])], lambda a: torch.linalg.svdvals(a) * torch.tensor([1.0, 2.0, 3.0]))
case("qr", [("n", [5, 3])], lambda a: (lambda q, r: q.sum(0) * 2 + r.sum(1).sum() + (q * q).sum())(*torch.linalg.qr(a)))
# many Jacobi sweeps: every rotation's stored matrix is read in three layouts, so its gradient must be stored
# as well (a recomputed one grows threefold per rotation)
case("svd_values_8x6", [("n", [8, 6])], lambda a: torch.linalg.svdvals(a) * torch.arange(1.0, 7.0))

with open(sys.argv[1], "w") as f:
    json.dump(CASES, f)
