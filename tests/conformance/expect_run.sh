#!/bin/sh
# Runs tg-conformance where the outcome is known (a broken plugin, a manifest): it must exit with CODE and
# print a line matching PATTERN (an extended regex), e.g. the failure that names the problem.
# usage: expect_run.sh CODE PATTERN TG-CONFORMANCE [ARGS...]
code=$1
pattern=$2
shift 2
out=$("$@" 2>&1)
rc=$?
printf '%s\n' "$out"
if [ "$rc" -ne "$code" ]; then
  echo "expect_run: tg-conformance exited with $rc; expected $code"
  exit 1
fi
if ! printf '%s\n' "$out" | grep -E -q "$pattern"; then
  echo "expect_run: no output line matches '$pattern'"
  exit 1
fi
echo "expect_run: exit code $code and a line matching '$pattern', as expected"
