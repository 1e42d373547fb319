#!/usr/bin/env bash
# Data parallel on two CLANG devices: `tg train-mnist --devices CLANG:0,CLANG:1` splits each batch over the
# devices, with every parameter and buffer a full copy on each and BatchNorm's batch statistics all-reduced.
# Its losses are compared with one device's on the same global batches.
# quick: 3 steps of batch 16, each within 1e-5 (measured: 1.3e-6 at most); a batch that does not split evenly
# is refused.
# slow: 20 steps of batch 32; steps 1-5 within 1e-5 (measured: 1.6e-6 at most), the loss below 1.2 at step 20.
# Not asserted, as it does not hold: all 20 steps within 1e-4 (the criterion). Step 6 is 8e-5 off,
# step 7 3e-3, later steps up to 4e-2. One device alone drifts as much when only the order of its sums
# changes (the same batch with its halves swapped: 1e-4 at step 5, 5e-2 later), and is itself 1.2e-4 off
# the float64 run at step 2: where a ReLU input or a max-pool tie sits within rounding of its kink, the
# gradient jumps, BatchNorm's large 1/std for nearly constant channels scales the jump up and Adam's
# normalized steps carry it on. In float64 one device, two devices and the swapped batch agree to 12 digits
# over all 20 steps (docs/scaling.md).
set -euo pipefail
tg=$1 mode=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
if [ "$mode" = quick ]; then steps=3 batch=16 exact=3; else steps=20 batch=32 exact=5; fi

"$tg" train-mnist --steps $steps --batch $batch --eval 64 --out "$dir/one.safetensors" --losses "$dir/one.txt" \
  > "$dir/one.log"
TG_CLANG_DEVICES=2 "$tg" train-mnist --steps $steps --batch $batch --eval 64 --out "$dir/two.safetensors" \
  --losses "$dir/two.txt" --devices CLANG:0,CLANG:1 | tee "$dir/two.log"
grep -q "^device: CLANG:0,CLANG:1$" "$dir/two.log" || { echo "FAIL: no device line"; exit 1; }
paste "$dir/one.txt" "$dir/two.txt" | awk -v steps=$steps -v exact=$exact '
  { d = $1 - $2; if (d < 0) d = -d; printf "step %2d: %.7f %.7f (diff %.2g)\n", NR, $1, $2, d
    if (NR <= exact && d > 1e-5) bad = 1; if (d <= 1e-4) within++; last = $2 }
  END { if (NR != steps) { print "FAIL: " NR " steps"; exit 1 }
        printf "%d of %d steps within 1e-4 of one device\n", within, NR
        if (bad) { print "FAIL: steps 1-" exact " differ by more than 1e-5"; exit 1 }
        if (steps == 20 && last > 1.2) { print "FAIL: loss " last " after 20 steps"; exit 1 } }'

if [ "$mode" = quick ]; then  # a batch that does not split evenly is refused with a message naming the command
  if TG_CLANG_DEVICES=2 "$tg" train-mnist --steps 1 --batch 33 --devices CLANG:0,CLANG:1 2> "$dir/err.log"; then
    echo "FAIL: uneven batch accepted"; exit 1
  fi
  grep -q "does not split evenly" "$dir/err.log" || { cat "$dir/err.log"; exit 1; }
fi
echo "ok: steps 1-$exact within 1e-5 of one device"
