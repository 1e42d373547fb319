# A small CNN (conv 3x3 -> relu -> conv 3x3 stride 2 -> relu -> flatten -> linear) with a fixed seed, its
# weights, input and output written as JSON: the reference the QCOM test matches.
import json
import sys

import torch
import torch.nn.functional as F

torch.manual_seed(0)
x = torch.randn(2, 4, 8, 8)
w1, b1 = torch.randn(8, 4, 3, 3) * 0.3, torch.randn(8) * 0.1
w2, b2 = torch.randn(8, 8, 3, 3) * 0.2, torch.randn(8) * 0.1
w3, b3 = torch.randn(10, 8 * 4 * 4) * 0.1, torch.randn(10) * 0.1
h = F.relu(F.conv2d(x, w1, b1, padding=1))
h = F.relu(F.conv2d(h, w2, b2, stride=2, padding=1))
y = F.linear(h.flatten(1), w3, b3)


def t(v):
    return {"shape": list(v.shape), "data": v.flatten().tolist()}


with open(sys.argv[1], "w") as f:
    json.dump({"x": t(x), "w1": t(w1), "b1": t(b1), "w2": t(w2), "b2": t(b2), "w3": t(w3), "b3": t(b3), "y": t(y)}, f)
