#!/usr/bin/env bash
# A rank that hangs, dies or disagrees on shapes: the job ends with a clear error well within a limit,
# never hangs. fault_rank gives a silent rank 3 s.
set -uo pipefail
mpirun=$1 prog=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
run() {  # mode, then the lines stderr must match
  local mode=$1; shift
  local t0=$SECONDS
  timeout 90 "$mpirun" --allow-run-as-root --oversubscribe -np 2 env TG_DIST_TIMEOUT=60 "$prog" "$mode" \
    > "$dir/out" 2> "$dir/err"
  local rc=$? took=$((SECONDS - t0))
  echo "--- $mode: exit $rc after ${took}s"; cat "$dir/err"
  [ "$rc" -ne 0 ] || { echo "FAIL: $mode: the job succeeded"; exit 1; }
  [ "$rc" -ne 124 ] || { echo "FAIL: $mode: the job hung (killed by timeout after 90 s)"; exit 1; }
  [ "$took" -le 30 ] || { echo "FAIL: $mode: took ${took}s"; exit 1; }
  for pattern in "$@"; do
    grep -q -- "$pattern" "$dir/err" || { echo "FAIL: $mode: no line matching '$pattern'"; exit 1; }
  done
}
run hang "^rank 0: \[all_reduce\] rank 0 of 2: the other ranks did not join within 3 s (TG_DIST_TIMEOUT): a rank died or hangs; aborting the job$"
run die "rank 1 .* exited on signal 9 (Killed)"
run shape "^rank 0: \[all_reduce_mean\] ranks disagree on the tensors (different models or shapes?); rank 0 of 2 has 1 tensors: float(4)$" \
  "^rank 1: \[all_reduce_mean\] ranks disagree on the tensors (different models or shapes?); rank 1 of 2 has 1 tensors: float(5)$"
echo "ok: hang, die and shape faults end the job with an error"
