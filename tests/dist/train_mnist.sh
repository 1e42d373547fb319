#!/usr/bin/env bash
# `tg train-mnist --dist mpi` on 2 ranks. quick: a short run whose weights hash the same on both ranks
# after every step (tg stops with an error otherwise), evaluated and saved by rank 0 alone, reloading with
# the accuracy it reported; the same run with --overlap off (every all-reduce started after the whole
# backward) ends with the same state hash; bad flags; a build without the MPI backend says so at start.
# accuracy: against one process with the same global batch, steps and seed, the test
# accuracy on all 10000 test images is within 0.3 points.
set -euo pipefail
mpirun=$1 tg=$2 mode=$3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
acc() { sed -n 's/^test accuracy: \([0-9.]*\)% on [0-9]* images.*$/\1/p' "$1"; }
dist_run() {  # steps, batch, eval, overlap
  "$mpirun" --allow-run-as-root --oversubscribe -np 2 "$tg" train-mnist --dist mpi --steps "$1" --batch "$2" \
    --eval "$3" --out "$dir/dist.safetensors" --overlap "${4:-on}" > "$dir/dist.log"
  cat "$dir/dist.log"
  grep -q "^weights identical on all 2 ranks after each of $1 steps$" "$dir/dist.log" ||
    { echo "FAIL: no weight check line"; exit 1; }
  [ "$(grep -c '^test accuracy' "$dir/dist.log")" = 1 ] || { echo "FAIL: not rank 0 alone evaluated"; exit 1; }
  [ -n "$(acc "$dir/dist.log")" ] || { echo "FAIL: no accuracy line"; exit 1; }
}

if [ "$mode" = accuracy ]; then
  "$tg" train-mnist --steps 200 --batch 64 --eval 10000 --out "$dir/single.safetensors" > "$dir/single.log"
  dist_run 200 64 10000
  single=$(acc "$dir/single.log") dist=$(acc "$dir/dist.log")
  [ -n "$single" ] || { echo "FAIL: no accuracy line"; cat "$dir/single.log"; exit 1; }
  awk -v s="$single" -v d="$dist" 'BEGIN { x = s - d; exit !(x <= 0.3 && x >= -0.3) }' ||
    { echo "FAIL: 2 ranks reached $dist%, one process $single%"; exit 1; }
  echo "ok: one process $single%, 2 ranks $dist%"
  exit 0
fi

dist_run 30 32 1000
dist=$(acc "$dir/dist.log")
awk -v a="$dist" 'BEGIN { exit !(a >= 40) }' || { echo "FAIL: accuracy $dist% after 30 steps"; exit 1; }
"$tg" infer --model "$dir/dist.safetensors" --eval 1000 --show 1 > "$dir/infer.log"
grep -q "^test accuracy: $dist% on 1000 images" "$dir/infer.log" || { cat "$dir/infer.log"; exit 1; }
hash_on=$(sed -n 's/^state hash: //p' "$dir/dist.log")
dist_run 30 32 100 off
hash_off=$(sed -n 's/^state hash: //p' "$dir/dist.log")
[ -n "$hash_on" ] && [ "$hash_on" = "$hash_off" ] ||
  { echo "FAIL: state hash $hash_on with overlap, $hash_off without"; exit 1; }

# --dist needs a known backend and a batch that splits evenly over the ranks; --overlap is on or off, with --dist
if "$tg" train-mnist --overlap on 2> "$dir/err"; then echo "FAIL: --overlap without --dist accepted"; exit 1; fi
grep -q "^tg train-mnist: \[train-mnist\] --overlap applies to --dist only$" "$dir/err" || { cat "$dir/err"; exit 1; }
if "$tg" train-mnist --dist nccl 2> "$dir/err"; then echo "FAIL: --dist nccl accepted"; exit 1; fi
grep -q "^tg train-mnist: \[train-mnist\] --dist takes 'mpi', got 'nccl'$" "$dir/err" || { cat "$dir/err"; exit 1; }
if "$mpirun" --allow-run-as-root --oversubscribe -np 2 "$tg" train-mnist --dist mpi --batch 33 --steps 1 \
  > /dev/null 2> "$dir/err"; then echo "FAIL: --batch 33 on 2 ranks accepted"; exit 1; fi
grep -q "^tg train-mnist: \[train-mnist\] --batch 33 does not split evenly over 2 ranks$" "$dir/err" ||
  { cat "$dir/err"; exit 1; }
# tg and libtg moved out of the build tree, with no MPI backend beside them: a clear reason at start
mkdir "$dir/bare"
cp "$tg" "$(ldd "$tg" | sed -n 's/^\s*libtg\.so[^ ]* => \(.*\) (.*$/\1/p')" "$dir/bare/"
if LD_LIBRARY_PATH="$dir/bare" "$dir/bare/tg" train-mnist --dist mpi 2> "$dir/err"; then
  echo "FAIL: ran without the MPI backend"; exit 1
fi
grep -q "^tg train-mnist: \[dist\] this build has no MPI support (libtg-mpi.so was not built: install libopenmpi-dev and reconfigure with -Dmpi=enabled)$" "$dir/err" ||
  { cat "$dir/err"; exit 1; }
# a backend that cannot be loaded (here: not a library at all) is reported with the loader's reason
mkdir "$dir/bare/tinygrad-cpp" && echo "not a library" > "$dir/bare/tinygrad-cpp/libtg-mpi.so"
if LD_LIBRARY_PATH="$dir/bare" "$dir/bare/tg" train-mnist --dist mpi 2> "$dir/err"; then
  echo "FAIL: ran with a broken MPI backend"; exit 1
fi
grep -q "^tg train-mnist: \[dist\] cannot load the MPI backend $dir/bare/tinygrad-cpp/libtg-mpi.so: .* (is the MPI runtime installed? on Debian: apt-get install openmpi-bin)$" "$dir/err" ||
  { cat "$dir/err"; exit 1; }
echo "ok: 2 ranks trained to $dist%, reloaded the same; state hash $hash_on with and without overlap"
