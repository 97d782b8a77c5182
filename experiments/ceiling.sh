#!/usr/bin/env bash
# ceiling.sh — the RDMA ceilings of the running lab, perftest's ib_send_bw
# over RC/rxe with the switches only routing:
#
#   [CEILING_MODE=pair|load] [CEILING_EVENTS=0|1] [CEILING_RUNS=3] [CEILING_LISTEN_WAIT=60] experiments/ceiling.sh [-s BYTES] [-n ITERS]
#
# pair (default, algorithm "ceiling"): the unloaded pair, rank 0 to the lowest
# rank under another leaf switch (pku1 -> pku3 in 1-2-4: the path crosses the
# whole tree), one direction, nothing else running.
# load (algorithm "ceiling-load"): the same-load ceiling. Every host sends and
# receives at once in the pattern an AllReduce imposes: the hosts paired
# across leaves (exp_load_pairs in lib.sh: 1-2-4 pku1<->pku3 and pku2<->pku4;
# an odd host out sits idle, said on stderr), one bidirectional ib_send_bw
# (-b --report-both) per pair, each pair on its own port (18515 + pair), all
# clients started together once every server listens on its port (ss in the
# guest, at most CEILING_LISTEN_WAIT seconds, default 60). Each client's start
# and end as its guest's clock shows them go to stderr, with a warning when
# the starts are more than 10 % of the shortest client run apart (the pairs
# then did not all run at the same time). Every ib_send_bw on every host of
# the pairs is stopped on every failure and at exit (also on INT and TERM).
# A host's figure is what it sent (MB/s); the ceiling is the median over
# every host of every run. nranks in its row is the number of hosts measured.
#
# The ceiling is the median of CEILING_RUNS runs (1..9, default 3): one run
# of a few seconds moved by a third from one run to the next on a TCG lab
# (4.1 to 6.1 MB/s within an hour on the same lab), more than the
# collectives it is compared with. Each run's figures go to stderr.
#
# CEILING_EVENTS=1 makes both ends sleep on CQ events (-e) as libinccl does;
# with 0 or unset they spin (perftest's default), which under TCG takes CPU from
# the switch VMs. Prints one report row on stdout (EXP_CSV_HEADER, collective "p2p"; MB/s
# = 10^6 bytes/s like inccl_perf: perftest prints MiB/s, converted here) and
# a line for people on stderr. Exit 2 on bad settings, 1 when the lab is down
# or ib_send_bw fails three times.
# The whole script is one brace group, read to its end before any of it runs: a long
# run reads nothing more of this file, so a change to it (an editor writing it in place,
# a checkout) cannot land in the middle of the run (bash reads a script as it goes).
{
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
ev= # -e with CEILING_EVENTS=1: both ends sleep on completion events
case ${CEILING_EVENTS:-0} in
0) ;;
1) ev=-e ;;
*) exp_err "ceiling: CEILING_EVENTS must be 0 or 1, not '$CEILING_EVENTS'"; exit 2 ;;
esac
listen_wait=${CEILING_LISTEN_WAIT:-60}
[[ $listen_wait =~ ^[0-9]{1,3}$ ]] && [ $((10#$listen_wait)) -ge 1 ] ||
    { exp_err "ceiling: CEILING_LISTEN_WAIT must be 1..999 seconds, not '$listen_wait'"; exit 2; }
listen_wait=$((10#$listen_wait))
[ "${CEILING_DRY_RUN:-0}" = 1 ] && { echo "mode $mode runs $runs size $size iters $iters events ${ev:-none}"; exit 0; } # for tests
[ -r "$state/gen/inventory.tsv" ] || { exp_err "ceiling: no lab in $state (make lab-up)"; exit 1; }
# -u 18: local ACK timeout 4.096 us * 2^18 = 1.07 s. perftest's default (67 ms) is
# shorter than a TCG guest can stall: rxe then retransmits for nothing.
# row ALGO NRANKS MIB — the report row (EXP_CSV_HEADER) of a ceiling of MIB MiB/s
row() {
    local mb time_us
    mb=$(awk -v m="$3" 'BEGIN {printf "%.2f", m * 1.048576}')
    time_us=$(awk -v s="$size" -v b="$mb" 'BEGIN {printf "%.2f", (b > 0 ? s / b : 0)}')
    echo "$1,p2p,-,-,-,$2,$size,-,$iters,$time_us,$mb,$mb,0,-" # no rank's time apart: time_max_us -
}

if [ "$mode" = pair ]; then
    read -r src dst addr sg dg < <(exp_pair) || exit 1
    figures=()
    for r in $(seq 1 "$runs"); do
        v=$(exp_perftest_value ib_send_bw 4 "$size" "$src" "$dst" "$addr" "$sg" "$dg" -n "$iters" -F -u 18 $ev) || exit 1
        echo "ceiling: run $r of $runs: $v MiB/s" >&2
        figures+=("$v")
    done
    mib=$(exp_median "${figures[@]}")
    echo "ceiling: ib_send_bw $src -> $dst ($addr)${ev:+ $ev}, $iters x $size B, median of $runs: $(row x 2 "$mib" | cut -d, -f11) MB/s ($mib MiB/s as perftest prints it)" >&2
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
# stop_all — stop every ib_send_bw, server or client, on every host of the pairs.
stop_all() {
    local h
    for h in "${hosts[@]}"; do "$top/lab/lab.sh" exec "$h" "pkill -x ib_send_bw; true" >/dev/null 2>&1; done
}
trap 'stop_all; rm -rf "$tmp"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
# listening HOST PORT — wait until the server on HOST listens on TCP PORT (ss
# in the guest), at most $listen_wait s; else 1 with the reason on stderr.
listening() {
    local t0=$SECONDS
    until "$top/lab/lab.sh" exec "$1" "ss -Hltn 'sport = :$2' | grep -q ." >/dev/null 2>&1; do
        if [ $((SECONDS - t0)) -ge "$listen_wait" ]; then
            exp_err "ceiling: ib_send_bw's server on $1 is not listening on port $2 after $listen_wait s (CEILING_LISTEN_WAIT): $("$top/lab/lab.sh" exec "$1" "tail -n 5 /tmp/ceiling-load.server.$2" 2>/dev/null | exp_reason)"
            return 1
        fi
        sleep 1
    done
}
# client_times — each client's start and end as its guest's clock showed
# them (its lines "start T", "end T") on stderr; a warning line when the
# starts are more than 10 % of the shortest client run apart.
client_times() {
    local k a b
    # one pass per client: its line for people on stderr, "start end" (when both were read) on stdout
    for k in "${!pairs[@]}"; do
        read -r a b <<<"${pairs[$k]}"
        awk -v who="$a -> $b" '$1 == "start" && $2 ~ /^[0-9]+(\.[0-9]+)?$/ { s = $2 } $1 == "end" && $2 ~ /^[0-9]+(\.[0-9]+)?$/ { e = $2 }
            END { printf("ceiling-load: client %s started %s, ended %s (the guest'\''s clock)\n", who, s == "" ? "?" : s, e == "" ? "?" : e) > "/dev/stderr"
                  if (s != "" && e != "") print s, e }' "$tmp/client.$k"
    done | LC_ALL=C awk '{ n++; if (n == 1 || $1 < lo) lo = $1; if (n == 1 || $1 > hi) hi = $1; d = $2 - $1; if (n == 1 || d < short) short = d }
        END { if (n >= 2 && hi - lo > 0.1 * short)
            printf "ceiling-load: warning: the clients started %.3f s apart, more than 10 %% of the shortest client run (%.3f s): the pairs did not all run at the same time\n", hi - lo, short }' >&2
}
# load_run — one run of every pair at once; "HOST MIB" for each host measured
# on stdout; 1 when a server did not start or listen, a pair failed or gave
# no finite figure (the reason on stderr). Every ib_send_bw of the pairs is
# stopped before it returns.
load_run() {
    local k a b addr f bad=0 pids=()
    stop_all
    for k in "${!pairs[@]}"; do
        read -r a b <<<"${pairs[$k]}"
        "$top/lab/lab.sh" exec "$b" "timeout 300 ib_send_bw -d rxe0 -b --report-both -p $((18515 + k)) -s $size -n $iters -F -u 18 $ev -x ${gid[$b]} < /dev/null > /tmp/ceiling-load.server.$((18515 + k)) 2>&1 &" >/dev/null ||
            { exp_err "ceiling: cannot start ib_send_bw's server on $b"; stop_all; return 1; }
    done
    for k in "${!pairs[@]}"; do
        read -r a b <<<"${pairs[$k]}"
        listening "$b" $((18515 + k)) || { stop_all; return 1; }
    done
    for k in "${!pairs[@]}"; do
        read -r a b <<<"${pairs[$k]}"
        addr=$(exp_col "$b" 6)
        "$top/lab/lab.sh" exec "$a" "echo start \$(date +%s.%N); timeout 240 ib_send_bw -d rxe0 -b --report-both -p $((18515 + k)) -s $size -n $iters -F -u 18 $ev -x ${gid[$a]} ${addr%/*}; rc=\$?; echo end \$(date +%s.%N); exit \$rc" \
            > "$tmp/client.$k" 2>&1 &
        pids+=($!)
    done
    for k in "${!pids[@]}"; do
        wait "${pids[$k]}" || { exp_err "ceiling: ib_send_bw ${pairs[$k]/ / <-> } failed: $(grep -v '^\(start\|end\) ' "$tmp/client.$k" | exp_reason)"; bad=1; }
    done
    stop_all
    client_times
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
echo "ceiling-load: ib_send_bw -b on ${#pairs[@]} pair(s) at once ($(printf '%s, ' "${pairs[@]/ / <-> }" | sed 's/, $//'))${ev:+ $ev}, $iters x $size B, median of ${#hosts[@]} host(s) x $runs run(s): $(row x 2 "$mib" | cut -d, -f11) MB/s per host" >&2
row ceiling-load "${#hosts[@]}" "$mib"
exit
}
