"""Optimizers: tg::nn::optim, with tinygrad's argument names."""
from tinygrad_cpp._tinygrad_cpp import nn as _nn

Optimizer, SGD, Adam, AdamW = _nn.optim.Optimizer, _nn.optim.SGD, _nn.optim.Adam, _nn.optim.AdamW
LARS, Muon, OptimizerGroup = _nn.optim.LARS, _nn.optim.Muon, _nn.optim.OptimizerGroup
LRScheduler, OneCycleLR, CosineAnnealingLR = _nn.optim.LRScheduler, _nn.optim.OneCycleLR, _nn.optim.CosineAnnealingLR
