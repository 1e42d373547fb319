"""Optimizers: tg::nn::optim, with tinygrad's names and signatures. As in tinygrad, SGD, Adam, AdamW and Muon are
functions returning a LARS, LAMB or Adam (C++ classes); LARS and LAMB take every tinygrad argument.
device=: the optimizer state lives with each parameter, so it must be None or the parameters' device.
fused=: accepted; tinygrad's fused step packs the parameters into one buffer for speed, and here every update
of a step is scheduled and fused together anyway (results are the same either way)."""
import os
from tinygrad_cpp._tinygrad_cpp import nn as _nn

Optimizer, OptimizerGroup = _nn.optim.Optimizer, _nn.optim.OptimizerGroup
LRScheduler, OneCycleLR, CosineAnnealingLR = _nn.optim.LRScheduler, _nn.optim.OneCycleLR, _nn.optim.CosineAnnealingLR


class ContextVar:
  """tinygrad.helpers.ContextVar's face: a named setting, its value read from the environment."""
  def __init__(self, key: str, default: int): self.key, self.value = key, int(os.getenv(key, default))
  def __bool__(self): return bool(self.value)
  def __repr__(self): return f"ContextVar({self.key!r}, {self.value})"


FUSE_OPTIM = ContextVar("FUSE_OPTIM", 0)


def _params(params, device, op):
  params = list(params)
  if device is not None:
    devices = {p.device for p in params}
    if devices != {device}:
      raise ValueError(f"[{op}] the state lives with each parameter (on {sorted(devices)}); device={device!r} "
                       "must be None or the parameters' device")
  return params


class LARS(_nn.optim.LARS):
  def __init__(self, params, lr=0.001, momentum=0.9, weight_decay=1e-4, ns_steps=0, ns_coefficients=None,
               nesterov=False, classic=True, pre_wd=True, tcoef=0.001, device=None, fused=FUSE_OPTIM):
    super().__init__(_params(params, device, "LARS"), lr, momentum, weight_decay, ns_steps,
                     list(ns_coefficients) if ns_coefficients else None, nesterov, classic, pre_wd, tcoef)


class LAMB(_nn.optim.LAMB):
  def __init__(self, params, lr=0.001, b1=0.9, b2=0.999, eps=1e-6, weight_decay=0.0, adam=False, device=None,
               fused=FUSE_OPTIM):
    super().__init__(_params(params, device, "LAMB"), lr, b1, b2, eps, weight_decay, adam)


def SGD(params, lr=0.001, momentum=0.0, weight_decay=0.0, nesterov=False, classic=False, device=None,
        fused=FUSE_OPTIM):
  """classic: lr applied before the momentum (b = m b + lr g), else after it, as PyTorch (b = m b + g)."""
  return LARS(params, lr, momentum, weight_decay, 0, None, nesterov, classic=classic, pre_wd=True, tcoef=0.0,
              device=device, fused=fused)


def Adam(params, lr=0.001, b1=0.9, b2=0.999, eps=1e-8, device=None, fused=FUSE_OPTIM, *, weight_decay=0.0):
  """weight_decay (ours): added to the gradient, as torch.optim.Adam's."""
  return _nn.optim.Adam(_params(params, device, "Adam"), lr, b1, b2, eps, weight_decay)


def AdamW(params, lr=0.001, b1=0.9, b2=0.999, eps=1e-8, weight_decay=0.01, device=None, fused=FUSE_OPTIM):
  return LAMB(params, lr, b1, b2, eps, weight_decay, adam=True, device=device, fused=fused)


def Muon(params, lr=0.001, momentum=0.95, weight_decay=0.1, ns_steps=5, ns_coefficients=(3.4445, -4.775, 2.0315),
         nesterov=True, device=None, fused=FUSE_OPTIM):
  return LARS(params, lr, momentum, weight_decay, ns_steps, ns_coefficients, nesterov, classic=False, pre_wd=False,
              tcoef=0.0, device=device, fused=fused)
