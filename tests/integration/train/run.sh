#!/usr/bin/env bash
# The main job end to end on real Fashion-MNIST data, kept short: train a few steps, save, reload with
# `tg infer`, and check that the reloaded model gives exactly the accuracy training reported and that it
# learned something (a fixed seed makes the run deterministic; chance is 10%).
set -euo pipefail
tg=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

"$tg" train-mnist --steps 40 --batch 32 --eval 500 --out "$dir/m.safetensors" | tee "$dir/train.log"
"$tg" infer --model "$dir/m.safetensors" --eval 500 --show 3 | tee "$dir/infer.log"

trained=$(sed -n 's/^test accuracy: \([0-9.]*\)% on 500 images$/\1/p' "$dir/train.log")
reloaded=$(sed -n 's/^test accuracy: \([0-9.]*\)% on 500 images (.*)$/\1/p' "$dir/infer.log")
[ -n "$trained" ] && [ -n "$reloaded" ] || { echo "FAIL: no accuracy line"; exit 1; }
[ "$trained" = "$reloaded" ] || { echo "FAIL: trained $trained% but reloaded $reloaded%"; exit 1; }
awk -v a="$trained" 'BEGIN { exit !(a >= 50) }' || { echo "FAIL: accuracy $trained% after 40 steps"; exit 1; }

# Bad input: a missing model and an unknown flag fail with a message naming the command.
if "$tg" infer --model "$dir/none.safetensors" 2> "$dir/err.log"; then echo "FAIL: missing model accepted"; exit 1; fi
grep -q "^tg infer: \[infer\] no model at" "$dir/err.log" || { cat "$dir/err.log"; exit 1; }
if "$tg" train-mnist --stepz 3 2> "$dir/err.log"; then echo "FAIL: unknown flag accepted"; exit 1; fi
grep -q "unknown argument '--stepz'" "$dir/err.log" || { cat "$dir/err.log"; exit 1; }
echo "ok: trained and reloaded accuracy $trained%"
