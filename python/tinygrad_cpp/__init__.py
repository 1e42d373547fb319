"""tinygrad.cpp from Python, under tinygrad's names: Tensor, dtypes, Device, TinyJit, nn."""
from tinygrad_cpp._tinygrad_cpp import Tensor, DType, dtypes, UOp, ScheduleItem, Variable, Context, TinyJit
from tinygrad_cpp._tinygrad_cpp import default_device, canonical_device
from tinygrad_cpp import nn


def _from_url(url: str, gunzip: bool = False, **kwargs) -> Tensor:
  """The bytes at url (http(s), file, ...) as a 1-d uint8 tensor; gunzip: decompressed first. kwargs: Tensor's
  (device=, ...)."""
  import gzip, urllib.request
  import numpy as np
  with urllib.request.urlopen(url) as r: data = r.read()
  if gunzip: data = gzip.decompress(data)
  return Tensor(np.frombuffer(data, np.uint8).copy(), **kwargs)


Tensor.from_url = staticmethod(_from_url)


class Device:
  """The device new tensors go to: DEV=NAME, else the first usable plugin (as in C++)."""
  DEFAULT = default_device()
  canonicalize = staticmethod(canonical_device)


__all__ = ["Tensor", "DType", "dtypes", "UOp", "ScheduleItem", "Variable", "Context", "TinyJit", "Device", "nn"]
