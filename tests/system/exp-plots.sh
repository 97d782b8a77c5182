#!/usr/bin/env bash
# exp-plots.sh — one small experiment end to end on the running lab, then
# `make plots` on what it stored: `make exp-allreduce` (INC with every
# baseline: the ib_send_bw ceiling, the LogGP measurements, libinccl's ring,
# OpenMPI over TCP and over UCX when UCX runs on rxe), every element verified
# on every rank, the run stored with its metadata; then the charts and
# REPORT.md drawn from it.
#
#   tests/system/exp-plots.sh [SIZE]       (default 1M)
#
# Two interleaved rounds (ROUNDS=2, one ib_send_bw run per ceiling and round),
# one repetition of each LogGP CPU measure and one o_w pair keep it short and
# still check that every round is stored with its conditions and that every
# LogGP row is measured and read.
# Stores into a temporary RESULTS directory (removed at the end; EXP_KEEP=1
# keeps it and prints where). Prints ok/FAIL per check and, at its end only
# (tests/lib/harness.sh), "N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/lib/harness.sh
size=${1:-1M}
build=${INCLAB_BUILD:-${BUILD:-build}}
res=$(mktemp -d /tmp/inclab-exp.XXXXXX)
keep() { if [ "${EXP_KEEP:-0}" = 1 ]; then echo "results kept in $res"; else rm -rf "$res"; fi; }
harness_begin exp-plots "experiment plots"
harness_on_exit keep
phase experiment "make exp-allreduce SIZE=$size with every baseline"

t0=$(date +%s)
LOGGP_SIZES=${LOGGP_SIZES:-8 1024 16384} LOGGP_ITERS=${LOGGP_ITERS:-50} LOGGP_WAIT_REPEAT=${LOGGP_WAIT_REPEAT:-1} \
    LOGGP_CPU_REPEAT=${LOGGP_CPU_REPEAT:-1} CEILING_RUNS=1 \
    make -s exp-allreduce SIZE="$size" ITERS=2 WARMUP=1 RESULTS="$res" ROUNDS=2 \
    BASELINES="ceiling ceiling-load loggp ring mpi-tcp mpi-ucx" > "$res/exp.out" 2>&1
rc=$?
sed 's/^/    /' "$res/exp.out" | tail -n 20
check "make exp-allreduce SIZE=$size with every baseline exits 0 in $(($(date +%s) - t0)) s" [ $rc = 0 ]
run=$(ls -d "$res"/allreduce-* 2>/dev/null | head -n 1)
if [ -z "$run" ]; then
    ko "no run directory in $res"
    harness_stop "nothing to draw"
fi
csv=$run/results.csv
bytes=$(. experiments/lib.sh; exp_size_bytes "$size")
for a in ceiling ceiling-load inc ring mpi-tcp; do
    row=$(awk -F, -v a="$a" 'NR > 1 && $1 == a' "$csv" | head -n 1)
    check "results.csv has a verified $a row: $row" sh -c "[ -n '$row' ] && [ \"\$(echo '$row' | cut -d, -f13)\" = 0 ]"
done
nranks=$(sed -n 's/^nranks: //p' "$run/meta.yaml")
check "the inc and ring rows are AllReduce of $bytes bytes on all $nranks ranks, one of each in rounds 1 and 2" \
    [ "$(awk -F, -v b="$bytes" -v n="$nranks" 'NR > 1 && ($1 == "inc" || $1 == "ring") && $2 == "allreduce" && $7 == b && $6 == n {print $1, $14}' "$csv" | sort | tr '\n' ' ')" = "inc 1 inc 2 ring 1 ring 2 " ]
check "increport reads results.csv and loggp.csv" "$build/increport" check "$csv" "$run/loggp.csv"
for k in commit topology accelerator host_cpu date switch_mode rounds; do
    v=$(sed -n "s/^$k: //p" "$run/meta.yaml")
    check "meta.yaml: $k: $v" [ -n "$v" ]
done
check "meta.yaml: status verified" grep -qx 'status: verified' "$run/meta.yaml"
check "meta.yaml: the conditions of both rounds ($(grep -c 'loadavg_before' "$run/meta.yaml") load averages before a round)" \
    [ "$(grep -c 'loadavg_before' "$run/meta.yaml")" = 2 ]
check "the host image's package manifest is stored" [ -s "$run/manifest-host.txt" ]
# cpuwin.csv: for each libinccl measurement (inc, ring; 2 rounds) a row per host and switch process of this
# machine, the same union of windows for all; a host's CPU inside them at most the union's length (one core
# per vCPU) plus the bound, and some CPU; every measurement has rows (no cpuwin_missing); one machine row
# (PID 0) whose busy time holds the processes' (at least their sum, within the bounds) and at most every core
# busy over the span
cw_bad=$(awk -F, -v hosts="$nranks" -v cores="$(nproc)" '
    NR == 1 { if ($0 != "algorithm,collective,bytes,round,calls,node,role,pid,cpu_us,span_us,bound_us,offset_us") print "header: " $0; next }
    { k = $1 "," $2 "," $3 "," $4; meas[k] = 1; if ($7 == "host") h[k]++; else if ($7 == "switch") sw[k]++
      if (k in span && span[k] != $10) print "span differs: " $0; span[k] = $10
      if ($7 == "machine") { m[k]++; mc[k] = $9; mb[k] = $11; if ($8 != 0 || $9 > $10 * cores + $11) print "machine row: " $0 }
      else { p[k] += $9; pb[k] += $11 }
      if ($7 == "host" && ($9 <= 0 || $9 > $10 + $11)) print "host CPU outside 0 < cpu <= span + bound: " $0 }
    END { n = 0; for (k in meas) { n++; if (h[k] != hosts || !sw[k]) print k ": " h[k] + 0 " host rows, " sw[k] + 0 " switch rows"
            if (m[k] != 1) print k ": " m[k] + 0 " machine rows, not 1"
            else if (mc[k] + mb[k] + pb[k] < p[k]) print k ": the machine busy " mc[k] " us, less than its processes " p[k] }
        if (n != 4) print n " measurements, not 4 (inc and ring, 2 rounds)" }' "$run/cpuwin.csv" 2>&1)
cw_what="cpuwin.csv: a row per process of each libinccl measurement and the machine's, hosts' CPU within the windows, the machine's at least theirs${cw_bad:+: $(head -c 300 <<<"$cw_bad")}"
if [ -s "$run/cpuwin.csv" ] && [ -z "$cw_bad" ] && ! grep -q '^cpuwin_missing:' "$run/meta.yaml"; then ok "$cw_what"; else ko "$cw_what"; fi
check "the switches' counters of the run are stored ($(wc -l < "$run/switch-counters.txt") lines)" [ -s "$run/switch-counters.txt" ]

phase plots "make plots on the stored run"
out=$(make -s plots RESULTS="$res" 2>&1); rc=$?
echo "$out" | sed 's/^/    /'
check "make plots exits 0" [ $rc = 0 ]
for c in summary allreduce-throughput allreduce-time loggp-fit loggp-allreduce; do
    check "$c.png and .svg drawn" sh -c "[ -s '$run/plots/$c.png' ] && grep -q '<svg' '$run/plots/$c.svg'"
done
check "REPORT.md shows INC against ring and OpenMPI for this run" \
    grep -q "^| $(basename "$run") | AllReduce | " "$res/REPORT.md"
# the LogGP model of the run: its measured parameters, and predicted next to measured for INC and the ring
check "REPORT.md has the run's LogGP parameters: $(grep -m 1 '^| o_s |' "$res/REPORT.md" | cut -c 1-80)" \
    grep -q '^| o_s | [0-9.]* us |' "$res/REPORT.md"
for a in inc ring; do
    check "REPORT.md predicts the $a AllReduce of 1 MiB next to its measured median: $(grep -m 1 "^| AllReduce | $a | 1 MiB |" "$res/REPORT.md" | cut -c 1-120)" \
        grep -q "^| AllReduce | $a | 1 MiB | [0-9.]* [mu]*s .*| [0-9.]* [mu]*s | [-+][0-9]* %" "$res/REPORT.md"
done
grep "^| $(basename "$run") | AllReduce | \|^- INC over" "$res/REPORT.md" | sed 's/^/    /'
harness_end
