#!/usr/bin/env bash
# `pip install .` end to end, as a new user runs it: a fresh venv (nothing from the system's site-packages),
# build isolation (meson-python, meson and numpy from PyPI), then the module imported from another folder
# with DEV=CLANG, checked against hand-derived values with the numpy that pip installed (2.x today), and
# libtg and the CLANG plugin shown to come from the wheel, not from a build tree. ccache is used when
# installed (meson finds it). Prints the build time. Usage: wheel_install.sh [source dir] (default: this
# checkout).
set -euo pipefail
src=$(cd "${1:-$(dirname "$0")/../..}" && pwd)
PYTHON=${PYTHON:-/usr/bin/python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.ccache} CCACHE_NOHASHDIR=1
unset PYTHONPATH TG_PLUGIN_PATH

"$PYTHON" -m venv "$work/venv"
start=$SECONDS
if ! "$work/venv/bin/pip" install "$src" >"$work/pip.log" 2>&1; then
  tail -n 60 "$work/pip.log"
  echo "wheel_install: pip install failed (log above)" >&2
  exit 1
fi
echo "wheel_install: built and installed in $((SECONDS - start)) s"

cd "$work"
trap 'status=$?; [ $status -eq 0 ] || { echo "the installed package:"; ls -R "$work"/venv/lib/python3*/site-packages/tinygrad_cpp
  readelf -d "$work"/venv/lib/python3*/site-packages/tinygrad_cpp/_tinygrad_cpp*.so | grep -E "NEEDED.*tg|RUNPATH|RPATH"; }
  rm -rf "$work"' EXIT
DEV=CLANG "$work/venv/bin/python" - "$work/venv" <<'PY'
import os, sys
import tinygrad_cpp
from tinygrad_cpp import Tensor, Device
venv = os.path.realpath(sys.argv[1])
pkg = os.path.dirname(os.path.realpath(tinygrad_cpp.__file__))
assert pkg.startswith(venv + os.sep), f"imported from {pkg}, not from the venv {venv}"
import numpy as np
got = (Tensor([1, 2]) + 1).tolist()
assert got == [2, 3], got
assert (Tensor([1.0, 2.0]) * 2).tolist() == [2.0, 4.0]
x = np.arange(6, dtype=np.float32).reshape(2, 3)
t = Tensor(x)
assert t.numpy().ctypes.data == x.ctypes.data, "Tensor(numpy) -> .numpy() copied"
assert (t * 2).numpy().tolist() == [[0, 2, 4], [6, 8, 10]]
a = Tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
(a @ a).sum().backward()  # d/da sum(a @ a) = ones @ a.T + a.T @ ones
assert a.grad.tolist() == [[7.0, 11.0], [9.0, 13.0]], a.grad.tolist()
assert Device.DEFAULT == "CLANG", Device.DEFAULT
loaded = {line.split()[-1] for line in open("/proc/self/maps") if line.rstrip().endswith(".so")}
for name in ("libtg.so", "libtg-clang.so"):
  where = [p for p in loaded if os.path.basename(p) == name]
  assert where and all(p.startswith(pkg + os.sep) for p in where), f"{name} loaded from {where or 'nowhere'}"
print(f"wheel_install: ok: {got} on {Device.DEFAULT} with numpy {np.__version__}, libtg and the CLANG plugin from {pkg}")
PY
