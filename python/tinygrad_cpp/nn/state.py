"""safetensors files, PyTorch checkpoints, zip and tar archives, and state dicts. A C++ layer gives its own
state dict (tg::nn::state_dict); lists, dicts and plain Python objects holding layers and tensors are walked by
name as tinygrad does. Files come in as tinygrad's do: a path, or a 1-d uint8 tensor of the bytes
(Tensor(pathlib.Path(...)) maps a file)."""
import functools, io, json, pathlib
from typing import BinaryIO
from tinygrad_cpp._tinygrad_cpp import Tensor, dtypes, nn as _nn

safe_load = _nn._state.safe_load


class TensorIO(io.RawIOBase, BinaryIO):
  """A readable, seekable binary file over a 1-d uint8 tensor's bytes (writes are refused)."""
  def __init__(self, t: Tensor):
    if t.ndim != 1 or t.dtype != dtypes.uint8: raise ValueError("Tensor must be 1d and of dtype uint8!")
    self._position, self._tensor = 0, t
  def readable(self) -> bool: return True
  def read(self, size: int = -1) -> bytes:
    if (buf := super().read(size)) is None: raise ValueError("io.RawIOBase.read returned None")
    return buf
  def readinto(self, buffer) -> int:
    n = self._tensor.shape[0]
    data = self._tensor[self._position:self._position + len(buffer)].numpy().tobytes() if self._position < n else b""
    buffer[:len(data)] = data
    self._position += len(data)
    return len(data)
  def seekable(self) -> bool: return True
  def seek(self, offset: int, whence: int = 0) -> int:
    n = self._tensor.shape[0]
    self._position = min(n, max(0, [offset, self._position + offset, n + offset][whence]))
    return self._position
  def __enter__(self): return self
  def write(self, s): raise io.UnsupportedOperation("TensorIO.write not supported")
  def writelines(self, lines): raise io.UnsupportedOperation("TensorIO.writelines not supported")


def accept_filename(func):
  """func(uint8 tensor) also takes a path (str or pathlib.Path), read as Tensor(pathlib.Path(path))."""
  @functools.wraps(func)
  def wrapper(fn): return func(Tensor(pathlib.Path(fn)) if not isinstance(fn, Tensor) else fn)
  return wrapper


def _bytes(t: Tensor) -> bytes: return t.numpy().tobytes()


@accept_filename
def safe_load_metadata(t: Tensor):
  """A safetensors file: (the file's tensor, where its data starts, its JSON header)."""
  if t.shape[0] < 8: raise ValueError(f"[safe_load_metadata] {t.shape[0]} bytes is too short for a safetensors header")
  data_start = int.from_bytes(_bytes(t[0:8]), "little") + 8
  if data_start > t.shape[0]:
    raise ValueError(f"[safe_load_metadata] the header claims {data_start - 8} bytes of a {t.shape[0]}-byte file")
  return t, data_start, json.loads(_bytes(t[8:data_start]))


@accept_filename
def torch_load(t: Tensor) -> dict:
  """A torch.save checkpoint (tg::nn::torch_parse: the pickle is interpreted, never executed)."""
  return _nn._state.torch_parse(_bytes(t))


@accept_filename
def zip_extract(t: Tensor) -> dict:
  """Every file of a zip archive as a uint8 tensor (stored or deflated)."""
  return _nn._state.zip_extract(_bytes(t))


@accept_filename
def tar_extract(t: Tensor) -> dict:
  """Every regular file of a tar archive as a uint8 tensor, a slice of t."""
  import tarfile
  with tarfile.open(fileobj=TensorIO(t), mode="r") as tar:
    return {m.name: t[m.offset_data:m.offset_data + m.size] for m in tar if m.type == tarfile.REGTYPE}


def safe_save(tensors: dict, fn: str, metadata: dict | None = None):
  if metadata: raise ValueError("[safe_save] metadata is not supported yet")
  _nn._state.safe_save(tensors, fn)


def get_state_dict(obj, prefix: str = "", tensor_type=Tensor) -> dict:
  if isinstance(obj, tensor_type): return {prefix.rstrip("."): obj}
  if isinstance(obj, _nn.Module): return {prefix + k: v for k, v in _nn._state.module_state_dict(obj).items()}
  if isinstance(obj, (list, tuple)): items = enumerate(obj)
  elif isinstance(obj, dict): items = obj.items()
  elif hasattr(obj, "__dict__"): items = vars(obj).items()
  else: return {}
  out = {}
  for k, v in items: out.update(get_state_dict(v, f"{prefix}{k}.", tensor_type))
  return out


def get_parameters(obj) -> list: return list(get_state_dict(obj).values())


def load_state_dict(model, state_dict: dict, strict: bool = True, verbose: bool = True, consume: bool = False,
                    realize: bool = True) -> list:
  """verbose: tinygrad's progress bar (none here); consume: drop each loaded entry from state_dict."""
  if isinstance(model, _nn.Module):
    _nn._state.module_load_state_dict(model, state_dict, strict)
    mine = get_state_dict(model)
    targets = list(mine.values())
  else:
    mine = get_state_dict(model)
    if strict and (missing := sorted(set(mine) - set(state_dict))): raise KeyError(f"[load_state_dict] missing {missing}")
    targets = [v.assign(state_dict[k].to(v.device)) for k, v in mine.items() if k in state_dict]
    if targets and realize: targets[0].realize(*targets[1:])
  if consume:
    for k in mine: state_dict.pop(k, None)
  return targets
