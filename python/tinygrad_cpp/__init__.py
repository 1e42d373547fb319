"""tinygrad.cpp from Python, under tinygrad's names: Tensor, dtypes, Device, TinyJit, nn."""
from tinygrad_cpp._tinygrad_cpp import Tensor, DType, dtypes, UOp, ScheduleItem, Variable, Context, TinyJit
from tinygrad_cpp._tinygrad_cpp import default_device, canonical_device
from tinygrad_cpp import nn


class Device:
  """The device new tensors go to: DEV=NAME, else the first usable plugin (as in C++)."""
  DEFAULT = default_device()
  canonicalize = staticmethod(canonical_device)


__all__ = ["Tensor", "DType", "dtypes", "UOp", "ScheduleItem", "Variable", "Context", "TinyJit", "Device", "nn"]
