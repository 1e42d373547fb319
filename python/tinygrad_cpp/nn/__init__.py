"""Layers (C++ tg::nn modules), optimizers and state, under tinygrad's names."""
from tinygrad_cpp._tinygrad_cpp import nn as _nn

Module = _nn.Module
Linear, Conv1d, Conv2d, Embedding = _nn.Linear, _nn.Conv1d, _nn.Conv2d, _nn.Embedding
BatchNorm, BatchNorm2d, LayerNorm, GroupNorm = _nn.BatchNorm, _nn.BatchNorm2d, _nn.LayerNorm, _nn.GroupNorm
ConvTranspose1d, ConvTranspose2d, LSTMCell = _nn.ConvTranspose1d, _nn.ConvTranspose2d, _nn.LSTMCell
InstanceNorm, LayerNorm2d, RMSNorm, BatchNorm3d = _nn.InstanceNorm, _nn.LayerNorm2d, _nn.RMSNorm, _nn.BatchNorm3d

datasets = _nn.datasets
from tinygrad_cpp.nn import optim, state  # noqa: E402
