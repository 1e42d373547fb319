#!/usr/bin/env bash
# Data parallel on two CLANG devices: `tg train-mnist --devices CLANG:0,CLANG:1` splits each batch over the
# devices, with every parameter and buffer a full copy on each and BatchNorm's batch statistics all-reduced.
# Its losses are compared with one device's on the same global batches.
# Both modes: 20 steps of batch 32 in float64 (--dtype float64), every step within 1e-9 of one device (the
# issue asks 1e-4; measured: 1.5e-14 at most). Then float32:
# quick: 3 steps of batch 16, each within 1e-5 (measured: 1.3e-6 at most); a batch that does not split evenly
# is refused; the float64-trained model, saved as float32, is read back by `tg infer`.
# slow: 20 steps of batch 32; steps 1-5 within 1e-5 (measured: 1.6e-6 at most), the loss below 1.2 at step 20.
# Not asserted in float32, as it does not hold: all 20 steps within 1e-4. Step 6 is 8e-5 off, step 7 3e-3,
# later steps up to 4e-2. One device alone drifts as much when only the order of its sums changes (the same
# batch with its halves swapped: 1e-4 at step 5, 5e-2 later), and is itself 1.2e-4 off the float64 run at
# step 2: where a ReLU input or a max-pool tie sits within rounding of its kink, the gradient jumps,
# BatchNorm's large 1/std for nearly constant channels scales the jump up and Adam's normalized steps carry
# it on (docs/scaling.md).
set -euo pipefail
tg=$1 mode=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# compare DTYPE STEPS BATCH EXACT_STEPS TOL: one device, then two; steps 1..EXACT_STEPS within TOL
compare() {
  local dtype=$1 steps=$2 batch=$3 exact=$4 tol=$5
  "$tg" train-mnist --steps "$steps" --batch "$batch" --eval 64 --dtype "$dtype" \
    --out "$dir/one.safetensors" --losses "$dir/one.txt" > "$dir/one.log"
  TG_CLANG_DEVICES=2 "$tg" train-mnist --steps "$steps" --batch "$batch" --eval 64 --dtype "$dtype" \
    --out "$dir/two.safetensors" --losses "$dir/two.txt" --devices CLANG:0,CLANG:1 | tee "$dir/two.log"
  grep -q "^device: CLANG:0,CLANG:1$" "$dir/two.log" || { echo "FAIL: no device line"; exit 1; }
  paste "$dir/one.txt" "$dir/two.txt" | awk -v steps="$steps" -v exact="$exact" -v tol="$tol" '
    { d = $1 - $2; if (d < 0) d = -d; printf "step %2d: %.15f %.15f (diff %.2g)\n", NR, $1, $2, d
      if (NR <= exact && d > tol) bad = 1; if (d <= 1e-4) within++; last = $2 }
    END { if (NR != steps) { print "FAIL: " NR " steps"; exit 1 }
          printf "%d of %d steps within 1e-4 of one device\n", within, NR
          if (bad) { print "FAIL: steps 1-" exact " differ by more than " tol; exit 1 }
          if (steps == 20 && last > 1.2) { print "FAIL: loss " last " after 20 steps"; exit 1 } }'
}

echo "--- float64, 20 steps of batch 32"
compare float64 20 32 20 1e-9
if [ "$mode" = quick ]; then
  # the model trained in float64 is saved as float32, as `tg infer` reads it
  "$tg" infer --model "$dir/two.safetensors" --eval 64 > "$dir/infer.log"
  grep -q "^test accuracy: " "$dir/infer.log" || { cat "$dir/infer.log"; echo "FAIL: infer"; exit 1; }
  grep -q "float64" "$dir/one.log" || { echo "FAIL: the training line does not name float64"; exit 1; }
  echo "--- float32, 3 steps of batch 16"
  compare float32 3 16 3 1e-5
  # a batch that does not split evenly, or a dtype it does not train in, is refused with a message
  refused() {  # refused PATTERN ARGS...: tg ARGS fails with PATTERN in its error output
    local pattern=$1
    shift
    if "$tg" "$@" 2> "$dir/err.log"; then echo "FAIL: tg $* accepted"; exit 1; fi
    grep -q -- "$pattern" "$dir/err.log" || { cat "$dir/err.log"; exit 1; }
  }
  TG_CLANG_DEVICES=2 refused "does not split evenly" train-mnist --steps 1 --batch 33 --devices CLANG:0,CLANG:1
  refused "\[train-mnist\] --dtype takes float32 or float64, got 'int32'" train-mnist --steps 1 --dtype int32
  refused "\[train-mnist\] --dtype applies to one process only" train-mnist --dist mpi --dtype float64
else
  echo "--- float32, 20 steps of batch 32"
  compare float32 20 32 5 1e-5
fi
echo "ok"
