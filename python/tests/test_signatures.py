"""tinygrad 0.14.0's public Python API against ours, mechanically: every public name of Tensor (and nn, nn.optim,
nn.state, dtypes) must exist here with the same parameter names, kinds and defaults (inspect.signature on both
sides; our pybind11 functions carry text signatures). What differs must be in signature_allowlist.txt with a
reason, and every line there must still differ. Runs with the test venv's Python (tinygrad from PyPI); exits 77
(skipped) without tinygrad.
  python test_signatures.py [--all]   # --all: print every difference, allowed or not
"""
import inspect, os, sys

try:
  import tinygrad, tinygrad.nn, tinygrad.nn.optim, tinygrad.nn.state  # noqa: E401
except ImportError:
  print("SKIP: tinygrad is not installed here (tools/setup-testenv installs tinygrad==0.14.0 into the test venv)")
  sys.exit(77)
import tinygrad_cpp, tinygrad_cpp.nn, tinygrad_cpp.nn.optim, tinygrad_cpp.nn.state  # noqa: E401,E402

ALLOWLIST = os.path.join(os.path.dirname(os.path.abspath(__file__)), "signature_allowlist.txt")
P = inspect.Parameter


def public(obj): return sorted(n for n in dir(obj) if not n.startswith("_"))


def defined_in(mod, prefix):  # a module's own classes and functions, not what it imports
  return [n for n in public(mod) if (inspect.isclass(getattr(mod, n)) or inspect.isfunction(getattr(mod, n)))
          and getattr(getattr(mod, n), "__module__", "").startswith(prefix)]


def norm_default(v):
  if v is P.empty: return v
  if type(v).__name__ == "DType": return v.name  # tinygrad takes a dtype's name wherever it takes a DType
  if type(v).__name__ == "ContextVar": return ("ContextVar", v.key)
  if isinstance(v, list): return tuple(v)
  if isinstance(v, type): return ("class", v.__name__)  # tinygrad's Tensor and ours
  return v


def sig_of(obj):
  """(parameters, error): a class by its __init__ without self."""
  try:
    if inspect.isclass(obj):
      ps = list(inspect.signature(obj.__init__).parameters.values())[1:]
    else:
      ps = list(inspect.signature(obj).parameters.values())
  except (ValueError, TypeError) as e:
    return None, f"no signature ({e})"
  return ps, None


def fmt(ps):
  out = []
  for p in ps:
    s = {P.VAR_POSITIONAL: "*", P.VAR_KEYWORD: "**"}.get(p.kind, "") + p.name
    if p.default is not P.empty: s += f"={p.default!r}"
    out.append(s)
  return "(" + ", ".join(out) + ")"


def compare_params(theirs, ours):
  """'' when ours accepts the same calls: same names, kinds and defaults in order (the names of *args and **kwargs
  do not matter). tinygrad's **kwargs may be ours, or keyword-only parameters tinygrad does not name (what its
  **kwargs passes on: dtype, device, requires_grad)."""
  t_kw = any(p.kind == P.VAR_KEYWORD for p in theirs)
  theirs = [p for p in theirs if p.kind != P.VAR_KEYWORD]
  o_kw = any(p.kind == P.VAR_KEYWORD for p in ours)
  ours_core = [p for p in ours if p.kind != P.VAR_KEYWORD]
  named = {p.name for p in theirs}
  extra = [p for p in ours_core if p.kind == P.KEYWORD_ONLY and p.name not in named]
  if t_kw and (o_kw or extra): ours_core = [p for p in ours_core if p not in extra]
  elif t_kw: return "tinygrad takes **kwargs, ours does not"
  elif o_kw: return "ours takes **kwargs, tinygrad does not"
  if len(theirs) > len(ours_core): return "parameters differ"
  more = ours_core[len(theirs):]  # ours may go on with optional parameters (device=, requires_grad=): a superset
  if any(p.default is P.empty and p.kind != P.VAR_POSITIONAL for p in more) or \
     any(p.kind == P.VAR_POSITIONAL for p in more) and not any(p.kind == P.VAR_POSITIONAL for p in theirs):
    return "parameters differ"
  for t, o in zip(theirs, ours_core):
    starred = t.kind in (P.VAR_POSITIONAL, P.VAR_KEYWORD)
    if t.kind != o.kind or (not starred and t.name != o.name): return f"parameter {t.name!r} differs"
    if norm_default(t.default) != norm_default(o.default): return f"default of {t.name!r} differs"
  return ""


def is_attribute(cls, name):  # a property or a slot: read, never called
  if not inspect.isclass(cls): return not callable(getattr(cls, name))
  a = inspect.getattr_static(cls, name, None)
  return isinstance(a, property) or type(a).__name__ in ("member_descriptor", "getset_descriptor") or \
    (a is not None and not callable(a) and not isinstance(a, (staticmethod, classmethod)))


def compare(key, theirs_owner, ours_owner, name, diffs):
  if not hasattr(ours_owner, name):
    diffs[key] = "missing"
    return
  t, o = getattr(theirs_owner, name), getattr(ours_owner, name)
  if is_attribute(theirs_owner, name):
    if not is_attribute(ours_owner, name): diffs[key] = "tinygrad's is an attribute, ours is a method"
    return
  if is_attribute(ours_owner, name):
    diffs[key] = "ours is an attribute, tinygrad's is a method"
    return
  tp, terr = sig_of(t)
  if terr: return  # nothing to compare against
  op, oerr = sig_of(o)
  if oerr:
    diffs[key] = oerr
    return
  why = compare_params(tp, op)
  if why: diffs[key] = f"{why}: tinygrad {fmt(tp)}, ours {fmt(op)}"


def all_differences():
  diffs = {}
  T, O = tinygrad.Tensor, tinygrad_cpp.Tensor
  for n in public(T) + ["__init__"]: compare(f"Tensor.{n}", T, O, n, diffs)
  for label, tm, om, prefix in [("nn", tinygrad.nn, tinygrad_cpp.nn, "tinygrad.nn"),
                                ("nn.optim", tinygrad.nn.optim, tinygrad_cpp.nn.optim, "tinygrad.nn.optim"),
                                ("nn.state", tinygrad.nn.state, tinygrad_cpp.nn.state, "tinygrad.nn.state")]:
    for n in defined_in(tm, prefix):
      if label == "nn" and getattr(tm, n).__module__ != "tinygrad.nn": continue  # optim/state have their own
      compare(f"{label}.{n}", tm, om, n, diffs)
      tc = getattr(tm, n)
      if inspect.isclass(tc) and hasattr(om, n) and not f"{label}.{n}" in diffs:
        for m in public(tc) + (["__call__"] if "__call__" in vars(tc) else []):
          compare(f"{label}.{n}.{m}", tc, getattr(om, n), m, diffs)
  for n in public(tinygrad.dtypes): compare(f"dtypes.{n}", tinygrad.dtypes, tinygrad_cpp.dtypes, n, diffs)
  return diffs


def read_allowlist():
  allowed = {}
  with open(ALLOWLIST) as f:
    for i, line in enumerate(f, 1):
      line = line.split("#", 1)[0].strip() if line.lstrip().startswith("#") else line.strip()
      if not line: continue
      name, _, reason = line.partition(" ")
      if not reason.strip(): raise SystemExit(f"{ALLOWLIST}:{i}: {name} has no reason")
      allowed[name] = reason.strip()
  return allowed


def main():
  assert tinygrad.__version__ if hasattr(tinygrad, "__version__") else True
  diffs, allowed = all_differences(), read_allowlist()
  unexplained = {k: v for k, v in diffs.items() if k not in allowed}
  stale = sorted(k for k in allowed if k not in diffs)
  if "--all" in sys.argv:
    for k, v in sorted(diffs.items()): print(f"{'allowed ' if k in allowed else ''}{k}: {v}")
  for k, v in sorted(unexplained.items()): print(f"DIFF {k}: {v}")
  for k in stale: print(f"STALE allow-list entry (it matches now; remove it): {k}")
  print(f"signature differences: {len(diffs)} ({len(diffs) - len(unexplained)} allowed, {len(unexplained)} not); "
        f"stale allow-list entries: {len(stale)}")
  return 1 if unexplained or stale else 0


if __name__ == "__main__":
  sys.exit(main())
