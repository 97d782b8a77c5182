#!/usr/bin/env bash
# ceiling.sh — the RDMA ceiling of the running lab: perftest's ib_send_bw over
# RC/rxe from rank 0 to the lowest rank under another leaf switch (pku1 -> pku3
# in 1-2-4: the path crosses the whole tree, the switches only routing).
#
#   [CEILING_EVENTS=1] [CEILING_RUNS=3] experiments/ceiling.sh [-s BYTES] [-n ITERS]
#
# The ceiling is the median of CEILING_RUNS runs of ib_send_bw (default 3):
# one run of a few seconds moved by a third from one run to the next on a
# TCG lab (4.1 to 6.1 MB/s within an hour on the same lab), more than the
# collectives it is compared with. Each run's figure goes to stderr.
#
# CEILING_EVENTS=1 makes both ends sleep on CQ events (-e) as libinccl does;
# by default they spin (perftest's default), which under TCG takes CPU from
# the switch VMs. Prints one results.csv row on stdout (algorithm "ceiling",
# collective "p2p"; MB/s = 10^6 bytes/s like inccl_perf: perftest prints
# MiB/s, converted here) and a line for people on stderr. Exit 1 when the
# lab is down or ib_send_bw fails three times.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
state=${INCLAB_STATE:-/var/lib/inclab/${INCLAB_PREFIX:-inclab}}
. "$top/experiments/lib.sh"
size=65536 iters=400 runs=${CEILING_RUNS:-3}
while getopts s:n: o; do
    case $o in
    s) size=$OPTARG ;;
    n) iters=$OPTARG ;;
    *) echo "usage: experiments/ceiling.sh [-s BYTES] [-n ITERS]" >&2; exit 2 ;;
    esac
done
[[ $size =~ ^[0-9]+$ && $size -ge 1 && $iters =~ ^[0-9]+$ && $iters -ge 5 ]] ||
    { exp_err "ceiling: -s needs a byte count >= 1 and -n a count >= 5"; exit 2; }
[[ $runs =~ ^[1-9]$ ]] || { exp_err "ceiling: CEILING_RUNS must be 1..9, not '$runs'"; exit 2; }
[ -r "$state/gen/inventory.tsv" ] || { exp_err "ceiling: no lab in $state (make lab-up)"; exit 1; }
read -r src dst addr sg dg < <(exp_pair) || exit 1
# -u 18: local ACK timeout 4.096 us * 2^18 = 1.07 s. perftest's default (67 ms) is
# shorter than a TCG guest can stall: rxe then retransmits for nothing.
figures=()
for r in $(seq 1 "$runs"); do
    v=$(exp_perftest_value ib_send_bw 4 "$size" "$src" "$dst" "$addr" "$sg" "$dg" -n "$iters" -F -u 18 ${CEILING_EVENTS:+-e}) || exit 1
    echo "ceiling: run $r of $runs: $v MiB/s" >&2
    figures+=("$v")
done
mib=$(exp_median "${figures[@]}")
mb=$(awk -v m="$mib" 'BEGIN {printf "%.2f", m * 1.048576}')
time_us=$(awk -v s="$size" -v b="$mb" 'BEGIN {printf "%.2f", (b > 0 ? s / b : 0)}')
echo "ceiling: ib_send_bw $src -> $dst ($addr)${CEILING_EVENTS:+ -e}, $iters x $size B, median of $runs: $mb MB/s ($mib MiB/s as perftest prints it)" >&2
echo "ceiling,p2p,-,-,-,2,$size,-,$iters,$time_us,$mb,$mb,0"
