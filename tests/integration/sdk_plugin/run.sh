#!/usr/bin/env bash
# What a third party does: install the SDK to a prefix, build plugins out of tree against it with
# pkg-config (a small example and the installed accelerator template), drop them into a folder named by
# TG_PLUGIN_PATH, see them in `tg devices`, prove the template with the installed `tg-conformance`,
# select it with DEV= and compute with it.
set -euo pipefail
SRC=$1 BUILD=$2 PYTHON=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

meson install -C "$BUILD" --destdir "$tmp/root" --no-rebuild --quiet
read -r prefix libdir bindir datadir < <(meson introspect "$BUILD" --buildoptions | "$PYTHON" -c \
  'import json,sys; o={x["name"]:x["value"] for x in json.load(sys.stdin)}; print(o["prefix"], o["libdir"], o["bindir"], o["datadir"])')
libdir="$tmp/root$prefix/$libdir"
bindir="$tmp/root$prefix/$bindir"
sdkshare="$tmp/root$prefix/$datadir/tinygrad-cpp"
export PKG_CONFIG_PATH="$libdir/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$tmp/root"
pkg-config --cflags --libs tinygrad-cpp
plugindir=$(pkg-config --variable=plugindir tinygrad-cpp)
echo "plugindir: $plugindir"

# `run [VAR=value...] -- program args`: an installed program run the way a user would, in a clean
# environment with the SDK's libraries and our plugin folder.
run() {
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  env -i ${ASAN_OPTIONS:+ASAN_OPTIONS="$ASAN_OPTIONS"} ${UBSAN_OPTIONS:+UBSAN_OPTIONS="$UBSAN_OPTIONS"} ${LSAN_OPTIONS:+LSAN_OPTIONS="$LSAN_OPTIONS"} PATH="$PATH" LD_LIBRARY_PATH="$libdir" TG_PLUGIN_PATH="$tmp/plugins" TG_CACHE_DIR="$tmp/cache" \
    "${envs[@]}" "$@"
}

# 1. The small example project: listed with its version, selected with DEV.
meson setup "$tmp/plugin-build" "$SRC/project" >/dev/null
ninja -C "$tmp/plugin-build" >/dev/null
mkdir "$tmp/plugins"
cp "$tmp/plugin-build/libtg-outoftree.so" "$tmp/plugins/"
out=$(run -- "$bindir/tg" devices)
echo "$out"
echo "$out" | grep -q "OUTOFTREE" || fail "OUTOFTREE not listed"
echo "$out" | grep "OUTOFTREE" | grep -q "9.8.7" || fail "plugin version not shown"
sel=$(run DEV=OUTOFTREE -- "$bindir/tg" devices)
echo "$sel" | grep -i "default" | grep -q "OUTOFTREE" || { echo "$sel"; fail "DEV=OUTOFTREE not selected"; }
echo "out-of-tree plugin found through TG_PLUGIN_PATH and selected with DEV"

# 2. The accelerator template, from the installed SDK's copy, warnings as errors.
[ -f "$sdkshare/template/meson.build" ] || fail "template not installed in $sdkshare/template"
[ -f "$sdkshare/NEW_ACCELERATOR.md" ] || fail "NEW_ACCELERATOR.md not installed in $sdkshare"
cp -r "$sdkshare/template" "$tmp/template-src"
meson setup -Dwerror=true "$tmp/template-build" "$tmp/template-src" >"$tmp/template.log" 2>&1 &&
  ninja -C "$tmp/template-build" >>"$tmp/template.log" 2>&1 || { cat "$tmp/template.log"; fail "template does not build"; }
cp "$tmp/template-build/libtg-template.so" "$tmp/plugins/"
template="$tmp/plugins/libtg-template.so"

out=$(run -- "$bindir/tg" devices)
echo "$out"
line=$(echo "$out" | grep -E '^[ *] TEMPLATE ') || fail "TEMPLATE not listed"
echo "$line" | grep -q " 0\.1\.0 " || fail "TEMPLATE version 0.1.0 not shown: $line"
echo "$line" | grep -qE " ok$" || fail "TEMPLATE not usable: $line"
echo "$out" | grep -A1 -E '^[ *] TEMPLATE ' | grep -q "$template (TG_PLUGIN_PATH)" || fail "TEMPLATE not from TG_PLUGIN_PATH"
echo "$out" | grep "^default:" | grep -vq TEMPLATE || fail "TEMPLATE became the default without DEV"

line=$(run TEMPLATE_CC=/nonexistent/cc -- "$bindir/tg" devices | grep -E '^[ *] TEMPLATE ') || fail "TEMPLATE not listed without a C compiler"
echo "$line"
echo "$line" | grep -q "unavailable: no C compiler found (install gcc or set TEMPLATE_CC)" ||
  fail "probe without a C compiler does not say why: $line"

sel=$(run DEV=TEMPLATE -- "$bindir/tg" devices)
echo "$sel" | grep "^default:" | grep -q "TEMPLATE" || { echo "$sel"; fail "DEV=TEMPLATE not selected"; }
echo "DEV=TEMPLATE selects it: $(echo "$sel" | grep '^default:')"

# 3. The installed conformance suite on the template, with a JUnit report as a vendor's CI would ask for.
status=0
run -- "$bindir/tg-conformance" --plugin "$template" --junit "$tmp/junit.xml" || status=$?
[ "$status" -eq 0 ] || fail "tg-conformance --plugin $template exited with $status"
"$PYTHON" - "$tmp/junit.xml" <<'EOF' || fail "JUnit report missing or not clean"
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
tests = sum(int(s.get("tests", 0)) for s in suites)
bad = sum(int(s.get("failures", 0)) + int(s.get("errors", 0)) for s in suites)
print(f"JUnit: {tests} test cases, {bad} failures or errors")
sys.exit(0 if tests > 0 and bad == 0 else 1)
EOF

# 4. A computation on DEV=TEMPLATE (source rendered, compiled by cc, run by the plugin) against PyTorch.
demo=$(run DEV=TEMPLATE -- "$bindir/tg" demo)
echo "$demo" | grep -q "^device: TEMPLATE:0" || { echo "$demo"; fail "tg demo did not run on TEMPLATE"; }
echo "$demo" | "$PYTHON" -c '
import re, sys, torch
text = sys.stdin.read()
got = [float(v) for v in re.findall(r"-?\d+\.\d+(?:e-?\d+)?", text.split("result (realized now):")[1].split("shape=")[0])]
x = torch.arange(12, dtype=torch.float32).reshape(3, 4)
w = torch.tensor([0.5, -1.0, 0.25, 1.0, -0.5, 0.0, 1.0, 0.5]).reshape(4, 2)
want = torch.softmax(torch.relu(x @ w - 2), -1).flatten().tolist()
print("tg demo on TEMPLATE:", got)
print("PyTorch:            ", [round(v, 8) for v in want])
assert len(got) == len(want) and all(abs(g - r) <= 1e-6 + 1e-5 * abs(r) for g, r in zip(got, want)), "mismatch"
' || fail "tg demo on TEMPLATE computed wrong values"

# 5. `meson install` of the template puts it into the SDK's plugin dir, found next to libtg without TG_PLUGIN_PATH.
meson install -C "$tmp/template-build" --quiet >/dev/null
[ -f "$plugindir/libtg-template.so" ] || fail "meson install did not put the template into $plugindir"
out=$(env -i ${ASAN_OPTIONS:+ASAN_OPTIONS="$ASAN_OPTIONS"} ${UBSAN_OPTIONS:+UBSAN_OPTIONS="$UBSAN_OPTIONS"} ${LSAN_OPTIONS:+LSAN_OPTIONS="$LSAN_OPTIONS"} PATH="$PATH" LD_LIBRARY_PATH="$libdir" "$bindir/tg" devices)
echo "$out" | grep -A1 -E '^[ *] TEMPLATE ' | grep -q "(installed)" || { echo "$out"; fail "installed TEMPLATE not found"; }
echo "template plugin: built out of tree, listed, passes tg-conformance, selected with DEV, computes correctly, installs"
