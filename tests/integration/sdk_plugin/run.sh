#!/usr/bin/env bash
# What a third party does: install the SDK to a prefix, build a plugin out of tree against it with
# pkg-config, drop it into a folder named by TG_PLUGIN_PATH, see it in `tg devices`, select it with DEV=.
set -euo pipefail
SRC=$1 BUILD=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

meson install -C "$BUILD" --destdir "$tmp/root" --no-rebuild --quiet
read -r prefix libdir bindir < <(meson introspect "$BUILD" --buildoptions | python3 -c \
  'import json,sys; o={x["name"]:x["value"] for x in json.load(sys.stdin)}; print(o["prefix"], o["libdir"], o["bindir"])')
libdir="$tmp/root$prefix/$libdir"
tgbin="$tmp/root$prefix/$bindir/tg"
export PKG_CONFIG_PATH="$libdir/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$tmp/root"
pkg-config --cflags --libs tinygrad-cpp

meson setup "$tmp/plugin-build" "$SRC/project" >/dev/null
ninja -C "$tmp/plugin-build" >/dev/null
mkdir "$tmp/plugins"
cp "$tmp/plugin-build/libtg-outoftree.so" "$tmp/plugins/"

tg() { env -i PATH="$PATH" LD_LIBRARY_PATH="$libdir" TG_PLUGIN_PATH="$tmp/plugins" "$@" "$tgbin" devices; }
out=$(tg)
echo "$out"
echo "$out" | grep -q "OUTOFTREE" || { echo "FAIL: OUTOFTREE not listed"; exit 1; }
echo "$out" | grep "OUTOFTREE" | grep -q "9.8.7" || { echo "FAIL: plugin version not shown"; exit 1; }
sel=$(tg DEV=OUTOFTREE)
echo "$sel" | grep -i "default" | grep -q "OUTOFTREE" || { echo "FAIL: DEV=OUTOFTREE not selected"; echo "$sel"; exit 1; }
echo "out-of-tree plugin found through TG_PLUGIN_PATH and selected with DEV"
