#!/usr/bin/env bash
# test-exp-args.sh — the experiment driver's settings, without a lab:
# experiments/lib.sh's checks (sizes with K/M/G, roots, choices, run
# directories that never overwrite) and experiments/exp.sh's plans and errors
# (EXP_DRY_RUN=1 stops before the lab). Prints ok/FAIL per check and
# "N passed, M failed"; exit 1 on any failure.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 1
state=/nonexistent
. experiments/lib.sh
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok   $*"; }
ko() { fail=$((fail + 1)); echo "FAIL $*"; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# same VALUE OUTPUT... — expect a command's stdout
same() { local want=$1 got; shift; got=$("$@" 2>/dev/null); [ "$got" = "$want" ] && ok "$* = $(echo $want)" || ko "$* = '$(echo $got)', want '$(echo $want)'"; }
# refused WHY CMD... — expect a non-zero exit and WHY in stderr
refused() {
    local why=$1 err rc
    shift
    err=$("$@" 2>&1 >/dev/null); rc=$?
    if [ "$rc" != 0 ] && [[ $err == *"$why"* ]]; then ok "$* refused: $why"; else ko "$* (exit $rc) said '$err', want '$why'"; fi
}

same 4096 exp_size_bytes 4096
same 65536 exp_size_bytes 64K
same 536870912 exp_size_bytes 512M
same 536870912 exp_size_bytes 512m
same 2147483648 exp_size_bytes 2G
same 4 exp_size_bytes 4
refused "not a number of bytes" exp_size_bytes 12X
refused "not a number of bytes" exp_size_bytes 1.5G
refused "not a number of bytes" exp_size_bytes -4
refused "not a number of bytes" exp_size_bytes ""
refused "not a number of bytes" exp_size_bytes 512MB
refused "smaller than one 4-byte element" exp_size_bytes 0
refused "not a whole number of 4-byte elements" exp_size_bytes 1023
refused "larger than 2G" exp_size_bytes 3G
refused "larger than 2G" exp_size_bytes 9999999996
exp_check_root 3 4 && ok "root 3 of 4" || ko "root 3 of 4 refused"
refused "ROOT=4 is not a rank of this topology (0..3)" exp_check_root 4 4
refused "ROOT=-1 is not a rank" exp_check_root -1 4
refused "ROOT=x is not a rank" exp_check_root x 4
refused "DTYPE=float64 is not one of: int32 float32" exp_check_choice DTYPE float64 int32 float32
same "$(printf '1\n4\n16')" exp_sizes 1 16 4

# run directories: never the same twice, even within one second
a=$(exp_run_dir "$tmp/r" allreduce) b=$(exp_run_dir "$tmp/r" allreduce) c=$(exp_run_dir "$tmp/r" allreduce)
if [ -d "$a" ] && [ -d "$b" ] && [ -d "$c" ] && [ "$a" != "$b" ] && [ "$b" != "$c" ] && [ "$a" != "$c" ]; then
    ok "three run directories: $(basename "$a") $(basename "$b") $(basename "$c")"
else
    ko "run directories collide: '$a' '$b' '$c'"
fi
touch "$tmp/file"
refused "cannot create $tmp/file/r" exp_run_dir "$tmp/file/r" x

# perftest's reports (lines as ib_send_lat / ib_send_bw print them); under TCG
# its cycle counter now and then gives "inf", which must never become a figure
lat_inf=' 512        100          inf            inf            inf                inf             0.00            inf                     inf'
lat_ok=' 512        100          80.12          900.20         120.51             130.22          20.00           200.00                  300.00'
bw_ok=' 4096       400              1.95               1.90                 0.000486'
same 120.510 exp_perftest_figure 512 5 <<<"$lat_ok"
same "" exp_perftest_figure 512 5 <<<"$lat_inf"
same "" exp_perftest_figure 4096 5 <<<"$lat_ok"
same 2057.613 exp_perftest_figure 4096 5 1/ <<<"$bw_ok"
same 1.900 exp_perftest_figure 4096 4 <<<"$bw_ok"
same "" exp_perftest_figure 4096 4 <<<' 4096       400              0.00               0.00                 0.000000'
# exp_perftest_value runs again on "inf", and gives up after three runs
runs="$tmp/runs"
exp_perftest() { echo run >>"$runs"; [ "$(wc -l <"$runs")" -ge 2 ] && echo "$lat_ok" || echo "$lat_inf"; }
: >"$runs"; same 120.510 exp_perftest_value ib_send_lat 5 512 a b c d e -n 100
[ "$(wc -l <"$runs")" = 2 ] && ok "one run again after inf" || ko "$(wc -l <"$runs") runs after inf, want 2"
exp_perftest() { echo "$lat_inf"; }
refused "ib_send_lat: no finite figure for 512 B in 3 runs" exp_perftest_value ib_send_lat 5 512 a b c d e
unset -f exp_perftest
# the ceiling is the median of its runs
same 5.000 exp_median 6.1 4.1 5.0
same 4.500 exp_median 4.0 5.0
same 4.000 exp_median 4
same 2.000 exp_median 10 1.5 2 2.5 -3
refused "no numbers" exp_median

# the driver's plans (EXP_DRY_RUN=1: settings checked, nothing run)
dry() { EXP_DRY_RUN=1 "$@" experiments/exp.sh "${EXP:?}"; }
out=$(EXP=paper dry env 2>&1)
if grep -qx "allreduce 1073741824" <<<"$out" && grep -qx "reduce 536870912" <<<"$out" && [ "$(grep -c '^allreduce ' <<<"$out")" = 5 ] &&
    [ "$(grep -c '^reduce ' <<<"$out")" = 2 ]; then ok "paper: 5 AllReduce and 2 Reduce rows of the seed's table"; else ko "paper plan: $out"; fi
out=$(EXP=sweep dry env MIN=1M MAX=16M FACTOR=4 2>&1)
if [ "$(grep -c '^allreduce ' <<<"$out")" = 3 ] && [ "$(grep -c '^broadcast ' <<<"$out")" = 3 ] && grep -qx "barrier 4" <<<"$out"; then
    ok "sweep 1M..16M x4: 3 sizes per collective and a barrier"
else
    ko "sweep plan: $out"
fi
out=$(EXP=reduce dry env SIZE=512M ROOT=3 DTYPE=int32 OP=max BASELINES=none 2>&1)
if grep -qx "reduce 536870912" <<<"$out" && grep -q "dtype int32 op max root 3 baselines ''" <<<"$out"; then
    ok "reduce SIZE=512M ROOT=3 DTYPE=int32 OP=max BASELINES=none"
else
    ko "reduce plan: $out"
fi
refused "ROOT=4 is not a rank of this topology (0..3)" env EXP_DRY_RUN=1 ROOT=4 experiments/exp.sh broadcast
refused "size '1.5G' is not a number of bytes" env EXP_DRY_RUN=1 SIZE=1.5G experiments/exp.sh allreduce
refused "larger than 2G" env EXP_DRY_RUN=1 SIZE=4G experiments/exp.sh allreduce
refused "OP=prod is not one of: sum max min" env EXP_DRY_RUN=1 OP=prod experiments/exp.sh allreduce
refused "BASELINES=nccl is not one of" env EXP_DRY_RUN=1 BASELINES="ring nccl" experiments/exp.sh allreduce
refused "MIN=1G is larger than MAX=1M" env EXP_DRY_RUN=1 MIN=1G MAX=1M experiments/exp.sh sweep
refused "FACTOR=1 is not a whole number >= 2" env EXP_DRY_RUN=1 FACTOR=1 experiments/exp.sh sweep
refused "ITERS=0 is not a whole number >= 1" env EXP_DRY_RUN=1 ITERS=0 experiments/exp.sh allreduce
refused "unknown experiment 'alltoall'" env EXP_DRY_RUN=1 experiments/exp.sh alltoall
refused "topology topology/none.yaml" env EXP_DRY_RUN=1 TOPOLOGY=topology/none.yaml experiments/exp.sh allreduce

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
