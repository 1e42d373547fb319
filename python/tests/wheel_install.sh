#!/usr/bin/env bash
# `pip install .` end to end: builds the wheel from this source tree into a fresh venv, then imports the module
# from another folder with DEV=CLANG and checks that libtg and the CLANG plugin came from the wheel, not from a
# build tree. The venv sees Debian's numpy (--system-site-packages); meson-python >= 0.15 comes from PyPI
# (Debian 12's python3-mesonpy 0.12 rejects pyproject.toml's [tool.meson-python.args]). ccache is used when installed (meson finds it): a warm cache makes the build
# mostly links. Prints the build time. Usage: wheel_install.sh [source dir] (default: this checkout).
set -euo pipefail
src=$(cd "${1:-$(dirname "$0")/../..}" && pwd)
PYTHON=${PYTHON:-/usr/bin/python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.ccache} CCACHE_NOHASHDIR=1
unset PYTHONPATH TG_PLUGIN_PATH

"$PYTHON" -m venv --system-site-packages "$work/venv"
"$work/venv/bin/pip" install -q "meson-python>=0.15"
start=$SECONDS
if ! "$work/venv/bin/pip" install --no-build-isolation "$src" >"$work/pip.log" 2>&1; then
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
got = (Tensor([1, 2]) + 1).tolist()
assert got == [2, 3], got
assert Device.DEFAULT == "CLANG", Device.DEFAULT
loaded = {line.split()[-1] for line in open("/proc/self/maps") if line.rstrip().endswith(".so")}
for name in ("libtg.so", "libtg-clang.so"):
  where = [p for p in loaded if os.path.basename(p) == name]
  assert where and all(p.startswith(pkg + os.sep) for p in where), f"{name} loaded from {where or 'nowhere'}"
print(f"wheel_install: ok: {got} on {Device.DEFAULT}, libtg and the CLANG plugin from {pkg}")
PY
