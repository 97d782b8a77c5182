#!/usr/bin/env bash
# run-phase.sh NAME CMD... — run one test phase, print its wall time, keep its exit code.
name=$1; shift
t0=$(date +%s.%N)
echo "=== phase $name: $*"
"$@"; rc=$?
printf '=== phase %s: %s in %.1f s\n' "$name" "$([ $rc = 0 ] && echo passed || echo "FAILED (exit $rc)")" \
    "$(echo "$(date +%s.%N) - $t0" | bc)"
exit $rc
