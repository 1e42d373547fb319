#!/usr/bin/env bash
# tg's command line on bad input: each case ends with its exit status and one line that names the
# command and the problem; none aborts, hangs or is accepted. Runs on INTERP with tiny data sets made here;
# under AddressSanitizer (tools/sanitize) on CLANG: the sanitized interpreter takes minutes a training step.
set -uo pipefail
tg=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
if [ -n "${ASAN_OPTIONS:-}" ]; then export DEV=CLANG; else export DEV=INTERP; fi
failed=0

# check STATUS PATTERN COMMAND...: COMMAND exits with STATUS and its output matches PATTERN (grep -E)
check() {
  local want=$1 pattern=$2
  shift 2
  timeout 120 "$@" > "$dir/log" 2>&1
  local got=$?
  if [ "$got" != "$want" ] || ! grep -qE -- "$pattern" "$dir/log"; then
    echo "FAIL: $* exited $got (want $want) without /$pattern/:"
    cat "$dir/log"
    failed=1
  fi
}

# idx DIMS...: the header of a uint8 idx file with these dims
idx() {
  printf "\\x00\\x00\\x08\\x$(printf %02x $#)"
  for d in "$@"; do
    for shift in 24 16 8 0; do printf "\\x$(printf %02x $((d >> shift & 255)))"; done
  done
}
# fashion DIR LABEL: a Fashion-MNIST folder of 2 training and 2 test images, the last test label LABEL
fashion() {
  mkdir -p "$1"
  { idx 2 28 28; head -c 1568 /dev/zero; } > "$1/train-images-idx3-ubyte"
  { idx 2 28 28; head -c 1568 /dev/zero; } > "$1/t10k-images-idx3-ubyte"
  { idx 2; printf '\x03\x09'; } > "$1/train-labels-idx1-ubyte"
  { idx 2; printf "\\x09\\x$(printf %02x "$2")"; } > "$1/t10k-labels-idx1-ubyte"
}

# environment: junk in an integer variable stops every command, even one that never reads it
for v in JIT=x SPEC=x DEBUG=abc; do
  check 1 "^tg demo: \[env\] ${v%%=*}='${v#*=}' is not an integer$" env "$v" "$tg" demo
done
check 1 "^tg env: \[env\] JIT='x' is not an integer$" env JIT=x "$tg" env

# flags: repeated, help at any flag position, stray arguments
check 1 "^tg train-mnist: \[train-mnist\] --steps is given twice$" "$tg" train-mnist --steps 3 --steps 4
check 0 "^usage: tg train-mnist \[--steps 1000\]" "$tg" train-mnist --help
check 0 "^usage: tg infer \[--model" "$tg" infer --show 3 -h
check 0 "^usage: tg devices$" "$tg" devices --help
check 2 "^tg demo: takes no arguments$" "$tg" demo extra
check 1 "^tg train-mnist: \[train-mnist\] --lr must be a positive finite number, got 'inf'$" \
  "$tg" train-mnist --lr inf

# data: a label that is no class, a batch larger than the data set, FIFOs and a link loop
fashion "$dir/good" 0
fashion "$dir/label10" 10
fashion "$dir/label255" 255
check 0 "^saved: " "$tg" train-mnist --data "$dir/good" --steps 1 --batch 2 --out "$dir/m.safetensors"
check 1 "^tg infer: \[fashion_mnist\] '$dir/label10/t10k-labels-idx1-ubyte': label 10 of image 1 is not a class 0\.\.9$" \
  "$tg" infer --data "$dir/label10" --model "$dir/m.safetensors"
check 1 "^tg train-mnist: \[fashion_mnist\] '.*': label 255 of image 1 is not a class 0\.\.9$" \
  "$tg" train-mnist --data "$dir/label255" --steps 1 --batch 2
check 1 "^tg train-mnist: \[train-mnist\] --batch 3 is larger than the 2 training images$" \
  "$tg" train-mnist --data "$dir/good" --steps 1 --batch 3
fashion "$dir/fifo" 0
rm "$dir/fifo/t10k-labels-idx1-ubyte" && mkfifo "$dir/fifo/t10k-labels-idx1-ubyte"
check 1 "^tg infer: \[read_idx\] '.*' is not a regular file$" "$tg" infer --data "$dir/fifo" --model "$dir/m.safetensors"
mkfifo "$dir/model.fifo"
check 1 "^tg infer: \[safe_load\] '$dir/model.fifo' is not a regular file$" "$tg" infer --model "$dir/model.fifo"
ln -s "$dir/loop" "$dir/loop"
check 1 "^tg infer: \[safe_load\] cannot open '$dir/loop': Too many levels of symbolic links$" \
  "$tg" infer --model "$dir/loop"

# std exceptions end in a line too: a valid header over 4 GB of (sparse) data, under a 2 GB memory limit
# (not under AddressSanitizer, whose shadow memory needs more address space than that)
if [ -z "${ASAN_OPTIONS:-}" ]; then
  fashion "$dir/huge" 0
  idx 5100000 28 28 > "$dir/huge/train-images-idx3-ubyte"
  truncate -s $((16 + 5100000 * 784)) "$dir/huge/train-images-idx3-ubyte"
  check 1 "^tg train-mnist: out of memory$" \
    bash -c 'ulimit -v 2000000 && exec "$@"' - "$tg" train-mnist --data "$dir/huge" --steps 1
fi

# a save that fails half way (the file size limit, as a full disk) leaves the old model as it was
cp "$dir/m.safetensors" "$dir/m.before"
check 1 "^tg train-mnist: \[safe_save\] cannot write '$dir/m.safetensors': File too large$" \
  env CACHELEVEL=0 bash -c 'trap "" XFSZ && ulimit -f 16 && exec "$@"' - \
  "$tg" train-mnist --data "$dir/good" --steps 1 --batch 2 --out "$dir/m.safetensors"
cmp -s "$dir/m.safetensors" "$dir/m.before" || { echo "FAIL: the failed save changed the old model"; failed=1; }
if ls "$dir" | grep -q 'tmp'; then echo "FAIL: the failed save left $(ls "$dir" | grep tmp)"; failed=1; fi

# SIGINT while training stops it; the model saved before is untouched and nothing half written is left
cp "$dir/m.before" "$dir/m.safetensors"
env --default-signal=INT "$tg" train-mnist --data "$dir/good" --steps 100000000 --batch 2 \
  --out "$dir/m.safetensors" > "$dir/int.log" 2>&1 &
pid=$!
for _ in $(seq 1200); do grep -q "^step " "$dir/int.log" && break; sleep 0.1; done
kill -INT "$pid"
wait "$pid"
got=$?
if [ "$got" != 130 ] || ! grep -q "^step " "$dir/int.log"; then
  echo "FAIL: SIGINT during training: exit $got (want 130, after the first step):"
  cat "$dir/int.log"
  failed=1
fi
cmp -s "$dir/m.safetensors" "$dir/m.before" || { echo "FAIL: the interrupted run changed the saved model"; failed=1; }
if ls "$dir" | grep -q 'tmp'; then echo "FAIL: the interrupted run left $(ls "$dir" | grep tmp)"; failed=1; fi

[ "$failed" = 0 ] && echo "ok: every bad input was refused with its reason"
exit "$failed"
