"""safetensors files and state dicts. A C++ layer gives its own state dict (tg::nn::state_dict); lists,
dicts and plain Python objects holding layers and tensors are walked by name as tinygrad does."""
from tinygrad_cpp._tinygrad_cpp import Tensor, nn as _nn

safe_load = _nn._state.safe_load


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
