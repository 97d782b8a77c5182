#!/usr/bin/env bash
# ceiling.sh — the RDMA ceilings of the running lab, perftest's ib_send_bw
# over RC/rxe with the switches only routing:
#
#   [CEILING_MODE=pair|load] [CEILING_EVENTS=1] [CEILING_RUNS=3] experiments/ceiling.sh [-s BYTES] [-n ITERS]
#
# pair (default, algorithm "ceiling"): the unloaded pair, rank 0 to the lowest
# rank under another leaf switch (pku1 -> pku3 in 1-2-4: the path crosses the
# whole tree), one direction, nothing else running.
# load (algorithm "ceiling-load"): the same-load ceiling. Every host sends and
# receives at once in the pattern an AllReduce imposes: the hosts paired
# across leaves (exp_load_pairs in lib.sh: 1-2-4 pku1<->pku3 and pku2<->pku4;
# an odd host out sits idle, said on stderr), one bidirectional ib_send_bw
# (-b --report-both) per pair, each pair on its own port (18515 + pair), all
# clients started together. A host's figure is what it sent (MB/s); the
# ceiling is the median over every host of every run. nranks in its row is
# the number of hosts measured.
#
# The ceiling is the median of CEILING_RUNS runs (1..9, default 3): one run
# of a few seconds moved by a third from one run to the next on a TCG lab
# (4.1 to 6.1 MB/s within an hour on the same lab), more than the
# collectives it is compared with. Each run's figures go to stderr.
#
# CEILING_EVENTS=1 makes both ends sleep on CQ events (-e) as libinccl does;
# by default they spin (perftest's default), which under TCG takes CPU from
# the switch VMs. Prints one results.csv row on stdout (collective "p2p"; MB/s
# = 10^6 bytes/s like inccl_perf: perftest prints MiB/s, converted here) and
# a line for people on stderr. Exit 2 on bad settings, 1 when the lab is down
# or ib_send_bw fails three times.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
state=${INCLAB_STATE:-/var/lib/inclab/${INCLAB_PREFIX:-inclab}}
. "$top/experiments/lib.sh"
size=65536 iters=400 runs=${CEILING_RUNS:-3} mode=${CEILING_MODE:-pair}
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
exp_check_choice CEILING_MODE "$mode" pair load || exit 2
[ "${CEILING_DRY_RUN:-0}" = 1 ] && { echo "mode $mode runs $runs size $size iters $iters"; exit 0; } # for tests
[ -r "$state/gen/inventory.tsv" ] || { exp_err "ceiling: no lab in $state (make lab-up)"; exit 1; }
# -u 18: local ACK timeout 4.096 us * 2^18 = 1.07 s. perftest's default (67 ms) is
# shorter than a TCG guest can stall: rxe then retransmits for nothing.
# row ALGO NRANKS MIB — the results.csv row of a ceiling of MIB MiB/s
row() {
    local mb time_us
    mb=$(awk -v m="$3" 'BEGIN {printf "%.2f", m * 1.048576}')
    time_us=$(awk -v s="$size" -v b="$mb" 'BEGIN {printf "%.2f", (b > 0 ? s / b : 0)}')
    echo "$1,p2p,-,-,-,$2,$size,-,$iters,$time_us,$mb,$mb,0"
}

if [ "$mode" = pair ]; then
    read -r src dst addr sg dg < <(exp_pair) || exit 1
    figures=()
    for r in $(seq 1 "$runs"); do
        v=$(exp_perftest_value ib_send_bw 4 "$size" "$src" "$dst" "$addr" "$sg" "$dg" -n "$iters" -F -u 18 ${CEILING_EVENTS:+-e}) || exit 1
        echo "ceiling: run $r of $runs: $v MiB/s" >&2
        figures+=("$v")
    done
    mib=$(exp_median "${figures[@]}")
    echo "ceiling: ib_send_bw $src -> $dst ($addr)${CEILING_EVENTS:+ -e}, $iters x $size B, median of $runs: $(row x 2 "$mib" | cut -d, -f11) MB/s ($mib MiB/s as perftest prints it)" >&2
    row ceiling 2 "$mib"
    exit 0
fi

# ---- load: every pair at once -------------------------------------------------------
plan=$(exp_load_pairs) || exit 1
[ -n "$plan" ] && mapfile -t pairs <<<"$plan" || { exp_err "ceiling: fewer than two hosts: no pair for a load ceiling"; exit 1; }
declare -A gid=()
hosts=()
for p in "${pairs[@]}"; do
    for h in $p; do
        hosts+=("$h")
        gid[$h]=$("$top/lab/lab.sh" exec "$h" /usr/local/sbin/inclab-ready 2>/dev/null | grep -o 'gid\[[0-9]*\]' | tr -dc 0-9)
        [ -n "${gid[$h]}" ] || { exp_err "ceiling: no RoCE GID on $h (is the lab ready?)"; exit 1; }
    done
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# load_run — one run of every pair at once; "HOST MIB" for each host measured
# on stdout; 1 when a pair failed or gave no finite figure (its output on stderr).
load_run() {
    local k a b addr f bad=0 pids=()
    for h in "${hosts[@]}"; do "$top/lab/lab.sh" exec "$h" "pkill -x ib_send_bw; true" >/dev/null 2>&1; done
    for k in "${!pairs[@]}"; do
        read -r a b <<<"${pairs[$k]}"
        "$top/lab/lab.sh" exec "$b" "timeout 300 ib_send_bw -d rxe0 -b --report-both -p $((18515 + k)) -s $size -n $iters -F -u 18 ${CEILING_EVENTS:+-e} -x ${gid[$b]} < /dev/null > /tmp/ceiling-load.server 2>&1 &" >/dev/null ||
            { exp_err "ceiling: cannot start ib_send_bw's server on $b"; return 1; }
    done
    sleep 2
    for k in "${!pairs[@]}"; do
        read -r a b <<<"${pairs[$k]}"
        addr=$(exp_col "$b" 6)
        "$top/lab/lab.sh" exec "$a" "timeout 240 ib_send_bw -d rxe0 -b --report-both -p $((18515 + k)) -s $size -n $iters -F -u 18 ${CEILING_EVENTS:+-e} -x ${gid[$a]} ${addr%/*}" \
            > "$tmp/client.$k" 2>&1 &
        pids+=($!)
    done
    for k in "${!pids[@]}"; do
        wait "${pids[$k]}" || { exp_err "ceiling: ib_send_bw ${pairs[$k]/ / <-> } failed: $(exp_reason < "$tmp/client.$k")"; bad=1; }
    done
    for h in "${hosts[@]}"; do "$top/lab/lab.sh" exec "$h" "pkill -x ib_send_bw; true" >/dev/null 2>&1; done
    [ "$bad" = 0 ] || return 1
    for k in "${!pairs[@]}"; do
        read -r a b <<<"${pairs[$k]}"
        f=$(exp_bidir_figures "$size" < "$tmp/client.$k")
        [ -n "$f" ] || { exp_err "ceiling: ib_send_bw $a <-> $b: no finite figure for $size B: $(grep -E "^ *$size " "$tmp/client.$k" | tail -n 1)"; return 1; }
        echo "$a ${f% *}"
        echo "$b ${f#* }"
    done
}
figures=()
for r in $(seq 1 "$runs"); do
    got=
    for attempt in 1 2 3; do
        got=$(load_run) && break
        got=
        sleep 3
    done
    [ -n "$got" ] || { exp_err "ceiling: the load run failed three times"; exit 1; }
    echo "ceiling-load: run $r of $runs (MiB/s sent by each host): $(tr '\n' ' ' <<<"$got")" >&2
    while read -r _ v; do figures+=("$v"); done <<<"$got"
done
mib=$(exp_median "${figures[@]}")
echo "ceiling-load: ib_send_bw -b on ${#pairs[@]} pair(s) at once ($(printf '%s, ' "${pairs[@]/ / <-> }" | sed 's/, $//'))${CEILING_EVENTS:+ -e}, $iters x $size B, median of ${#hosts[@]} host(s) x $runs run(s): $(row x 2 "$mib" | cut -d, -f11) MB/s per host" >&2
row ceiling-load "${#hosts[@]}" "$mib"
