#!/usr/bin/env bash
# Configures a copy of the source tree with --force-fallback-for every wrapped dependency and compiles the
# files that use them, so the dependency() fallbacks, the wraps' [provide] names and the packagefiles build
# files are checked. The release archives the wraps name cannot be downloaded here: each is stood in for by
# an archive of the same layout made from the installed Debian package, and the copied wrap's source_hash is
# set to that archive's. SQLite's package has no sqlite3.c, so its wrap is not exercised here.
set -euo pipefail
src=$1
work=$(mktemp -d)
trap "rm -rf $work" EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

mkdir "$work/src"
for f in meson.build meson_options.txt sdk modules plugins apps python subprojects; do
  cp -r "$src/$f" "$work/src/"
done
rm -rf "$work/src/subprojects/packagecache"
cache="$work/src/subprojects/packagecache"
mkdir -p "$cache"

# stand_in WRAP ARCHIVE_FORMAT DIR: packs $work/stage/DIR (or its contents, for zip wraps without a lead
# directory) under the wrap's source_filename and writes its sha256 into the copied wrap.
stand_in() {
  local wrap="$work/src/subprojects/$1.wrap" name
  name=$(sed -n 's/^source_filename = //p' "$wrap")
  case "$name" in
    *.tar.gz) tar -C "$work/stage" -czf "$cache/$name" "$3" ;;
    *.zip) (cd "$work/stage/$3" && zip -qr "$cache/$name" .) ;;
  esac
  local sum
  sum=$(sha256sum "$cache/$name" | cut -d' ' -f1)
  sed -i "s/^source_hash = .*/source_hash = $sum/" "$wrap"
}
mkdir -p "$work/stage/fmt-9.1.0/include" "$work/stage/xxHash-0.8.3" "$work/stage/json/include" \
  "$work/stage/range-v3-0.12.0/include"
cp -r /usr/include/fmt "$work/stage/fmt-9.1.0/include/"
cp /usr/include/xxhash.h /usr/include/xxh3.h "$work/stage/xxHash-0.8.3/"
cp -r /usr/include/nlohmann "$work/stage/json/include/"
cp -r /usr/include/range /usr/include/meta /usr/include/concepts "$work/stage/range-v3-0.12.0/include/"
[ -d /usr/include/std ] && cp -r /usr/include/std "$work/stage/range-v3-0.12.0/include/" || true
stand_in fmt tar fmt-9.1.0
stand_in xxhash tar xxHash-0.8.3
stand_in nlohmann_json zip json
stand_in range-v3 tar range-v3-0.12.0

forced=fmt,libxxhash,nlohmann_json,range-v3
log="$work/setup.log"
meson setup "$work/build" "$work/src" --wrap-mode=nodownload --force-fallback-for=$forced \
  -Dtests=false -Dbench=false -Dauto_features=disabled >"$log" 2>&1 || { cat "$log"; fail "meson setup"; }
for dep in fmt libxxhash nlohmann_json range-v3; do
  grep -q "Dependency $dep from subproject subprojects/.* found: YES" "$log" ||
    { cat "$log"; fail "$dep was not taken from its wrap"; }
done
grep -qi "dependency sqlite3 found: YES" "$log" || fail "sqlite3 (from the system) not found"

# The files that include each dependency, compiled against the subprojects' include dirs and defines.
objs=()
for f in base/hash.cpp base/error.cpp nn/safetensors.cpp schedule/rangeify.cpp; do
  obj=$(ninja -C "$work/build" -t targets all | grep -o "^modules/[^:]*${f//\//_}\.o" | head -1)
  [ -n "$obj" ] || fail "no object for $f"
  objs+=("$obj")
done
ninja -C "$work/build" "${objs[@]}" >"$work/build.log" 2>&1 || { tail -50 "$work/build.log"; fail "compile"; }
cmds=$(ninja -C "$work/build" -t commands "${objs[0]}" | tail -1)
for want in "subprojects/xxHash-0.8.3" "-DXXH_INLINE_ALL" "subprojects/fmt-9.1.0/include" "-DFMT_HEADER_ONLY=1"; do
  [[ "$cmds" == *"$want"* ]] || fail "hash.cpp is not compiled with $want: $cmds"
done
echo "ok: $forced from their wraps; ${#objs[@]} files compiled against them"
