"""Optimizers: tg::nn::optim, with tinygrad's argument names."""
from tinygrad_cpp._tinygrad_cpp import nn as _nn

Optimizer, SGD, Adam, AdamW = _nn.optim.Optimizer, _nn.optim.SGD, _nn.optim.Adam, _nn.optim.AdamW
