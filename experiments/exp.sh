#!/usr/bin/env bash
# exp.sh — run an experiment on the lab and store it under results/.
#
#   experiments/exp.sh allreduce|reduce|broadcast|barrier|sweep|paper
#
# Settings come from the environment (make passes its variables):
#   SIZE=64M        allreduce/reduce/broadcast: bytes, K/M/G = 2^10/2^20/2^30 (4 B .. 2G)
#   ROOT=0          reduce/broadcast: the root rank
#   DTYPE=float32   int32 or float32;  OP=sum  sum, max or min
#   ITERS, WARMUP   timed and untimed iterations per size (default 3 and 1 below
#                   64 MiB, 1 and 0 from there)
#   MIN=1M MAX=1G FACTOR=2   the sizes of `sweep` (every collective)
#   BASELINES="ceiling loggp ring mpi-tcp mpi-ucx"   measured in the same run
#                   ("none" for INC alone)
#   RESULTS=results where run directories go
# `paper` runs the rows of the seed's published table (AllReduce 32M, 128M,
# 256M, 512M, 1G; Reduce 32M, 512M). Brings the lab up if it is down. Every
# result is verified on every rank (inccl_perf, mpi_perf); the run is stored
# in RESULTS/<experiment>-<UTC date>-<time>/ (results.csv, loggp.csv,
# meta.yaml, switch counters, image manifests, log) and never overwrites an
# earlier one. Exit status: 0 all verified, 1 a failure (what was measured is
# kept), 2 bad settings.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
state=${INCLAB_STATE:-/var/lib/inclab/${INCLAB_PREFIX:-inclab}}
: "${TOPOLOGY:=topology/1-2-4.yaml}"
export TOPOLOGY
. "$top/experiments/lib.sh"

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0" >&2; }

exp=${1:-}
case $exp in
allreduce | reduce | broadcast | barrier | sweep | paper) ;;
-h | --help) usage; exit 0 ;;
*) usage; exp_err "unknown experiment '${exp}' (allreduce, reduce, broadcast, barrier, sweep, paper)"; exit 2 ;;
esac

# ---- settings -----------------------------------------------------------------
SIZE=${SIZE:-64M} ROOT=${ROOT:-0} DTYPE=${DTYPE:-float32} OP=${OP:-sum}
MIN=${MIN:-1M} MAX=${MAX:-1G} FACTOR=${FACTOR:-2} RESULTS=${RESULTS:-results}
BASELINES=${BASELINES:-ceiling loggp ring mpi-tcp mpi-ucx}
[ "$BASELINES" = none ] && BASELINES=
topogen=${INCLAB_BUILD:-build}/topogen
[ -x "$topogen" ] || { exp_err "$topogen is missing: run 'make' first"; exit 2; }
tgen=$(mktemp -d)
trap 'rm -rf "$tgen"' EXIT
if ! "$topogen" -o "$tgen" "$TOPOLOGY" >/dev/null 2>"$tgen/err"; then
    exp_err "topology $TOPOLOGY: $(cat "$tgen/err")"
    exit 2
fi
nranks=$(grep -v '^#' "$tgen/inventory.tsv" | awk -F'\t' '$2 == "host"' | wc -l)
bad=0
exp_check_choice DTYPE "$DTYPE" int32 float32 || bad=1
exp_check_choice OP "$OP" sum max min || bad=1
for b in $BASELINES; do exp_check_choice BASELINES "$b" ceiling loggp ring mpi-tcp mpi-ucx || bad=1; done
case $exp in
reduce | broadcast) exp_check_root "$ROOT" "$nranks" || bad=1 ;;
esac
case $exp in
allreduce | reduce | broadcast) bytes=$(exp_size_bytes "$SIZE") || bad=1 ;;
sweep)
    lo=$(exp_size_bytes "$MIN") || bad=1
    hi=$(exp_size_bytes "$MAX") || bad=1
    exp_check_count FACTOR "$FACTOR" 2 || bad=1
    [ "$bad" = 1 ] || [ "$lo" -le "$hi" ] || { exp_err "MIN=$MIN is larger than MAX=$MAX"; bad=1; }
    ;;
esac
[ -z "${ITERS:-}" ] || exp_check_count ITERS "$ITERS" 1 || bad=1
[ -z "${WARMUP:-}" ] || exp_check_count WARMUP "$WARMUP" 0 || bad=1
[ "$bad" = 0 ] || exit 2

# the plan: one "collective bytes" line per measurement
plan=$tgen/plan
case $exp in
allreduce | reduce | broadcast) echo "$exp $bytes" > "$plan" ;;
barrier) echo "barrier 4" > "$plan" ;;
sweep)
    for c in allreduce reduce broadcast; do exp_sizes "$lo" "$hi" "$FACTOR" | sed "s/^/$c /"; done > "$plan"
    echo "barrier 4" >> "$plan"
    ;;
paper)
    for s in 32M 128M 256M 512M 1G; do echo "allreduce $(exp_size_bytes $s)"; done > "$plan"
    for s in 32M 512M; do echo "reduce $(exp_size_bytes $s)"; done >> "$plan"
    ;;
esac
if [ "${EXP_DRY_RUN:-0}" = 1 ]; then # for tests: the settings and the plan, nothing run
    echo "experiment $exp nranks $nranks dtype $DTYPE op $OP root $ROOT baselines '${BASELINES}'"
    cat "$plan"
    exit 0
fi

# ---- the lab ----------------------------------------------------------------------
if ! lab/lab.sh status >/dev/null 2>&1 || ! exp_lab_reachable 2>/dev/null; then
    exp_log "the lab is not up: make lab-up"
    lab/lab.sh up || { exp_err "lab-up failed: the lab cannot be reached"; exit 1; }
fi
exp_lab_reachable || exit 1
run=$(exp_run_dir "$RESULTS" "$exp") || exit 1
# the code that ran: taken now, as files may change while a long run goes on
commit="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo -dirty)"
log=$run/run.log
exec > >(tee -a "$log") 2>&1
exp_log "experiment $exp on $(basename "$TOPOLOGY" .yaml): $(wc -l < "$plan") measurement(s), baselines: ${BASELINES:-none}; storing in $run"
marks=$(exp_switch_log_lines)
csv=$run/results.csv
echo "algorithm,collective,dtype,op,root,nranks,bytes,elements,iters,time_us,algbw_MBps,busbw_MBps,wrong" > "$csv"
failed=()
has() { [[ " $BASELINES " == *" $1 "* ]]; }
iters_for() { # ITERS WARMUP for @1 bytes
    if [ "$1" -ge $((64 << 20)) ]; then echo "${ITERS:-1} ${WARMUP:-0}"; else echo "${ITERS:-3} ${WARMUP:-1}"; fi
}
# append the data rows of CSV file $1 to results.csv; fail when a row has wrong elements
take_rows() {
    local wrong
    tail -n +2 "$1" | grep -v '^#' | grep . >> "$csv"
    wrong=$(tail -n +2 "$1" | grep -v '^#' | awk -F, '$NF != 0' | wc -l)
    [ "$wrong" = 0 ]
}

if has ceiling; then
    exp_log "ceiling: ib_send_bw rank 0 -> a rank under another leaf, sleeping on CQ events (-e)"
    if row=$(CEILING_EVENTS=1 experiments/ceiling.sh); then
        echo "$row" >> "$csv"
    else
        failed+=("ceiling")
    fi
    exp_log "ceiling: the same, busy polling (perftest's default; kept in meta.yaml)"
    poll_row=$(experiments/ceiling.sh) || poll_row=
fi
if has loggp; then
    exp_log "LogGP: ping-pong and streaming between rank 0 and a rank under another leaf"
    experiments/loggp.sh > "$run/loggp.csv" || failed+=("loggp")
fi

while read -r coll b; do
    read -r it wu < <(iters_for "$b")
    args="-C $coll -b $b -e $b -n $it -w $wu"
    case $coll in
    allreduce) args="$args -d $DTYPE -o $OP" ;;
    reduce) args="$args -d $DTYPE -o $OP -R $ROOT" ;;
    broadcast) args="$args -d $DTYPE -R $ROOT" ;;
    esac
    algos="inc"
    case $coll in allreduce | broadcast | barrier) has ring && algos="$algos ring" ;; esac
    for a in $algos; do
        exp_log "$a $coll of $b bytes on $nranks ranks"
        if exp_run_ranks "$tgen/out.csv" inccl_perf -A "$a" -T 300 $args && take_rows "$tgen/out.csv"; then
            tail -n 1 "$tgen/out.csv" | awk -F, '{printf "    %s: %s us, algbw %s MB/s, %s wrong\n", $1, $10, $11, $13}'
        else
            failed+=("$a $coll $b")
        fi
    done
    for a in mpi-tcp mpi-ucx; do
        has "$a" || continue
        exp_log "$a $coll of $b bytes on $nranks ranks"
        if exp_run_mpi "$tgen/out.csv" "$a" $args && take_rows "$tgen/out.csv"; then
            tail -n 1 "$tgen/out.csv" | awk -F, '{printf "    %s: %s us, algbw %s MB/s, %s wrong\n", $1, $10, $11, $13}'
        elif [ "$a" = mpi-ucx ]; then
            exp_log "    mpi-ucx is not available on this lab (see run.log); not counted as a failure"
            BASELINES=${BASELINES/mpi-ucx/}
        else
            failed+=("$a $coll $b")
        fi
    done
done < "$plan"

# ---- metadata ------------------------------------------------------------------------
exp_switch_counters "$marks" > "$run/switch-counters.txt"
. "$state/lab.env" 2>/dev/null || true
set -- ${LAB_ROLES:-}
images=
while [ $# -ge 2 ]; do
    cp "$2/manifest.txt" "$run/manifest-$1.txt" 2>/dev/null && images="$images  $1: $(basename "$2")"$'\n'
    shift 2
done
{
    echo "experiment: $exp"
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "commit: $commit"
    echo "topology: $(basename "$TOPOLOGY" .yaml)"
    echo "topology_file: $TOPOLOGY"
    echo "accelerator: ${LAB_ACCEL:-unknown}"
    echo "host_cpu: \"$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -n 1)\""
    echo "host_cores: $(nproc)"
    echo "nranks: $nranks"
    echo "tree_levels: $(exp_tree_levels)"
    echo "mtu: 1024"
    echo "dtype: $DTYPE"
    echo "op: $OP"
    echo "root: $ROOT"
    echo "baselines: \"${BASELINES}\""
    [ -n "${poll_row:-}" ] && echo "ceiling_busy_poll_MBps: $(cut -d, -f11 <<<"$poll_row")"
    echo "switch_counters: switch-counters.txt"
    echo "status: $([ ${#failed[@]} = 0 ] && echo verified || echo "failed (${failed[*]})")"
    echo "images:"
    printf '%s' "$images"
} > "$run/meta.yaml"
exp_log "results:"
column -t -s, "$csv" | sed 's/^/    /'
if [ ${#failed[@]} -gt 0 ]; then
    exp_err "failed: ${failed[*]} (what was measured is in $run)"
    exit 1
fi
exp_log "every result verified; stored in $run (make plots draws it)"
