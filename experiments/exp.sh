#!/usr/bin/env bash
# exp.sh — run an experiment on the lab and store it under results/.
#
#   experiments/exp.sh allreduce|reduce|broadcast|barrier|allgather|reducescatter|alltoall|sweep|paper
#
# Settings come from the environment (make passes its variables):
#   SIZE=64M        allreduce/reduce/broadcast: bytes, K/M/G = 2^10/2^20/2^30 (4 B .. 2G);
#                   allgather/reducescatter/alltoall: the whole buffer (nccl-tests' size:
#                   AllGather's received bytes, ReduceScatter's sent bytes), rounded down
#                   by inccl_perf to whole blocks of nranks elements
#   ROOT=0          reduce/broadcast: the root rank
#   DTYPE=float32   int32, uint32, int64, uint64, float16, bfloat16, float32 or
#                   float64 (sizes: whole elements of it);  OP=sum  sum, max or min
#                   (allreduce, reduce, reducescatter)
#   WINDOW=2048     libinccl's window, packets of 1 KiB in flight (1..16384;
#                   default: the library's, 512); the ring keeps its own
#   MESSAGE=64      libinccl's RDMA message, packets of 1 KiB (1..64; default:
#                   the library's, 16); the ring keeps its own
#   ITERS, WARMUP   timed and untimed iterations per size (default 3 and 1 below
#                   64 MiB, 1 and 0 from there)
#   MIN=1M MAX=1G FACTOR=2   the sizes of `sweep`, MIN, MIN*FACTOR, ... up to MAX
#   SIZES="16M 64M 512M"     sweep: these sizes instead of MIN/MAX/FACTOR
#   COLLECTIVES="allreduce broadcast"   sweep: these collectives only (default
#                   allreduce reduce broadcast barrier; also allgather reducescatter alltoall)
#   BASELINES="ceiling ceiling-load loggp ring mpi-tcp"   measured in the same
#                   run ("none" for INC alone); ceiling-load: every host sending
#                   and receiving at once (ceiling.sh CEILING_MODE=load); mpi-ucx
#                   (OpenMPI over UCX on rxe) only when named: UCX 1.13 cannot
#                   run on rxe here (experiments/README.md), and finding that
#                   out costs about 22 s per run
#   ROUNDS=3        1..20: the measurements run in rounds, interleaved (ceiling,
#                   ceiling-load, then per size inc, ring, mpi-tcp, mpi-ucx; again),
#                   each row stored with its round; LogGP and the busy-polling
#                   ceiling in round 1 only
#   ROUND_BUDGET=SECONDS  1..86400: start no round that would end more than
#                   SECONDS after the run began, judged by its longest round so
#                   far, round 1 without what only it does (loggp.sh, the
#                   busy-polling ceiling: 15 min of a 60 min round 1 on 1-2-4,
#                   rounds 2 and on 32 min); a round counts at least 1 s; the first always runs:
#                   for a lab held for a limited time. meta.yaml's `rounds` are
#                   those run, `rounds_planned` the ROUNDS asked; unset: all
#   CEILING_RUNS=3  1..9: runs of each ceiling (ceiling.sh), their median stored
#   RESULTS=results where run directories go
# `paper` runs the rows of the seed's published table (AllReduce 32M, 128M,
# 256M, 512M, 1G; Reduce 32M, 512M). Brings the lab up if it is down. Every
# result is verified on every rank (inccl_perf, mpi_perf); the run is stored
# in RESULTS/<experiment>-<UTC date>-<time>/ (results.csv, loggp.csv,
# meta.yaml, switch counters, image manifests, log) and never overwrites an
# earlier one. A baseline that could not start (no transport, no binary,
# bootstrap failed before any collective) is "not available": the run goes
# on without it and meta.yaml says why. Wrong elements in any row (INC or a
# baseline) or a failure after a start fail the run; every row is kept, a
# wrong one with its count in the `wrong` column. Exit status: 0 all
# verified, 1 a failure (what was measured is kept), 2 bad settings.
# The whole script is one brace group, read to its end before any of it runs: a long
# run reads nothing more of this file, so a change to it (an editor writing it in place,
# a checkout) cannot land in the middle of the run (bash reads a script as it goes).
{
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
allreduce | reduce | broadcast | barrier | allgather | reducescatter | alltoall | sweep | paper) ;;
-h | --help) usage; exit 0 ;;
*) usage; exp_err "unknown experiment '${exp}' (allreduce, reduce, broadcast, barrier, allgather, reducescatter, alltoall, sweep, paper)"; exit 2 ;;
esac

# ---- settings -----------------------------------------------------------------
SIZE=${SIZE:-64M} ROOT=${ROOT:-0} DTYPE=${DTYPE:-float32} OP=${OP:-sum}
MIN=${MIN:-1M} MAX=${MAX:-1G} FACTOR=${FACTOR:-2} RESULTS=${RESULTS:-results}
SIZES=${SIZES:-} COLLECTIVES=${COLLECTIVES:-allreduce reduce broadcast barrier}
# mpi-ucx is not a default: UCX_SKIPPED says why, in one line of the run's log
UCX_SKIPPED=
[ -n "${BASELINES:-}" ] || UCX_SKIPPED="mpi-ucx: skipped by default: Debian 12's UCX 1.13 finds no transport on rxe (experiments/README.md); BASELINES='ceiling ceiling-load loggp ring mpi-tcp mpi-ucx' tries it"
BASELINES=${BASELINES:-ceiling ceiling-load loggp ring mpi-tcp} ROUNDS=${ROUNDS:-3}
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
exp_check_choice DTYPE "$DTYPE" int32 uint32 int64 uint64 float16 bfloat16 float32 float64 || bad=1
width=$(exp_dtype_width "$DTYPE")
exp_check_choice OP "$OP" sum max min || bad=1
for b in $BASELINES; do exp_check_choice BASELINES "$b" ceiling ceiling-load loggp ring mpi-tcp mpi-ucx || bad=1; done
exp_check_range ROUNDS "$ROUNDS" 1 20 || bad=1
case $exp in
reduce | broadcast) exp_check_root "$ROOT" "$nranks" || bad=1 ;;
esac
case $exp in
allreduce | reduce | broadcast | allgather | reducescatter | alltoall) bytes=$(exp_size_bytes "$SIZE" "$width") || bad=1 ;;
sweep)
    if [ -n "$SIZES" ]; then # the sizes given, each checked, duplicates refused
        sweep_sizes= sweep_given=
        for s in $SIZES; do
            b=$(exp_size_bytes "$s" "$width") || { bad=1; continue; }
            case " $sweep_sizes " in
            *" $b "*) exp_err "SIZES: $s is $b bytes, given before as $(awk -v b="$b" '{for (i = 1; i <= NF; i += 2) if ($(i + 1) == b) {print $i; exit}}' <<<"$sweep_given")"; bad=1 ;;
            esac
            sweep_sizes="$sweep_sizes $b" sweep_given="$sweep_given $s $b"
        done
        [ -n "$sweep_sizes" ] || [ "$bad" = 1 ] || { exp_err "SIZES is empty"; bad=1; }
    else
        lo=$(exp_size_bytes "$MIN" "$width") || bad=1
        hi=$(exp_size_bytes "$MAX" "$width") || bad=1
        exp_check_count FACTOR "$FACTOR" 2 || bad=1
        [ "$bad" = 1 ] || [ "$lo" -le "$hi" ] || { exp_err "MIN=$MIN is larger than MAX=$MAX"; bad=1; }
        [ "$bad" = 1 ] || sweep_sizes=$(exp_sizes "$lo" "$hi" "$FACTOR" | tr '\n' ' ')
    fi
    [ -n "${COLLECTIVES// /}" ] || { exp_err "COLLECTIVES is empty"; bad=1; }
    for c in $COLLECTIVES; do exp_check_choice COLLECTIVES "$c" allreduce reduce broadcast barrier allgather reducescatter alltoall || bad=1; done
    ;;
esac
[ -z "${ITERS:-}" ] || exp_check_count ITERS "$ITERS" 1 || bad=1
[ -z "${WARMUP:-}" ] || exp_check_count WARMUP "$WARMUP" 0 || bad=1
[ -z "${WINDOW:-}" ] || exp_check_range WINDOW "$WINDOW" 1 16384 || bad=1
[ -z "${MESSAGE:-}" ] || exp_check_range MESSAGE "$MESSAGE" 1 64 || bad=1
CEILING_RUNS=${CEILING_RUNS:-3}
exp_check_range CEILING_RUNS "$CEILING_RUNS" 1 9 || bad=1
[ -z "${ROUND_BUDGET:-}" ] || exp_check_range ROUND_BUDGET "$ROUND_BUDGET" 1 86400 || bad=1
[ "$bad" = 0 ] || exit 2

# the plan: one "collective bytes" line per measurement
plan=$tgen/plan
case $exp in
allreduce | reduce | broadcast | allgather | reducescatter | alltoall) echo "$exp $bytes" > "$plan" ;;
barrier) echo "barrier 4" > "$plan" ;;
sweep) # in the order allreduce reduce broadcast barrier allgather reducescatter alltoall, whatever order COLLECTIVES names them
    for c in allreduce reduce broadcast barrier allgather reducescatter alltoall; do
        [[ " $COLLECTIVES " == *" $c "* ]] || continue
        if [ "$c" = barrier ]; then echo "barrier 4"; else for b in $sweep_sizes; do echo "$c $b"; done; fi
    done > "$plan"
    ;;
paper)
    for s in 32M 128M 256M 512M 1G; do echo "allreduce $(exp_size_bytes $s)"; done > "$plan"
    for s in 32M 512M; do echo "reduce $(exp_size_bytes $s)"; done >> "$plan"
    ;;
esac
if [ "${EXP_DRY_RUN:-0}" = 1 ]; then # for tests: the settings and the plan, nothing run
    echo "experiment $exp nranks $nranks dtype $DTYPE op $OP root $ROOT baselines '${BASELINES}' rounds $((10#$ROUNDS))"
    cat "$plan"
    [ -z "$UCX_SKIPPED" ] || echo "$UCX_SKIPPED"
    exit 0
fi

# ---- the lab ----------------------------------------------------------------------
if ! lab/lab.sh status >/dev/null 2>&1 || ! exp_lab_reachable 2>/dev/null; then
    exp_log "the lab is not up: make lab-up"
    lab/lab.sh up || { exp_err "lab-up failed: the lab cannot be reached"; exit 1; }
fi
exp_lab_reachable || exit 1
run=$(exp_run_dir "$RESULTS" "$exp") || exit 1
ROUNDS=$((10#$ROUNDS))
CEILING_RUNS=$((10#$CEILING_RUNS))
export CEILING_RUNS # ceiling.sh's runs, recorded in meta.yaml
# the code that ran and the conditions: taken now, as files may change while a long run goes on
commit=$(exp_commit)
accel=$(exp_word "$(exp_lab_env LAB_ACCEL)" unknown)
switch_mode=$(exp_word "$(exp_lab_env LAB_SWITCHES)" vm)
placement=$(exp_placement)
cpu_model=$(exp_cpu_model)
log=$run/run.log
exec > >(tee -a "$log") 2>&1
exp_log "experiment $exp on $(basename "$TOPOLOGY" .yaml): $(wc -l < "$plan") measurement(s) x $ROUNDS round(s), baselines: ${BASELINES:-none}; storing in $run"
[ -z "$UCX_SKIPPED" ] || exp_log "$UCX_SKIPPED"
exp_log "conditions: accelerator $accel, switches $switch_mode, commit $commit, CPU $cpu_model, load $(exp_loadavg)"
marks=$(exp_switch_log_lines)
smarks=$marks # moved past each libinccl measurement's lines (switch.csv)
csv=$run/results.csv
echo "$EXP_RESULTS_HEADER" > "$csv"
echo "$EXP_CPU_HEADER" > "$run/cpu.csv"
echo "$EXP_RXE_HEADER" > "$run/rxe.csv"
echo "$EXP_SWITCH_HEADER" > "$run/switch.csv"
echo "$EXP_CPUWIN_HEADER" > "$run/cpuwin.csv"
# the CPU inside the timed calls (cpuwin.csv): cpusample samples the lab's processes on this machine
# every EXP_CPUSAMPLE_MS (10 ms: a process gains about one tick of CLK_TCK 100 per sample) while
# inccl_perf -X writes each rank's windows; cpuwin joins them (experiments/README.md)
EXP_CPUSAMPLE_MS=10
cpusample=${INCLAB_BUILD:-build}/cpusample cpuwin=${INCLAB_BUILD:-build}/cpuwin cw_off=
[ -x "$cpusample" ] && [ -x "$cpuwin" ] || cw_off="no $cpusample or $cpuwin (make)"
cw_missing=() # libinccl measurements without cpuwin.csv rows, each with why (meta.yaml)
cw_remote=    # nodes whose process is on another machine: not sampled (said once)
# the machine's speed just before each measurement (cpu.csv's probe row, exp_speed_probe): hostwork
# in rank 0's host, as loggp.sh's cpu_sum measures it; off, and said, without hostwork
probe_host=$(exp_hosts | head -n 1) probe_off= hwbin=${INCLAB_BUILD:-build}/hostwork
if [ ! -x "$hwbin" ]; then
    probe_off="no $hwbin (make)"
elif ! "$top/lab/lab.sh" push "$probe_host" "$hwbin" /tmp/hostwork >/dev/null 2>&1; then
    probe_off="hostwork could not be put on $probe_host"
fi
[ -z "$probe_off" ] || exp_log "speed probe off: $probe_off; cpu.csv without probe rows (REPORT's speed column -)"
conditions=() # one YAML list item per round (meta.yaml's round_conditions)
failed=()               # what failed the run, each with why
declare -A unavailable=() # baseline -> why it could not start (not measured from then on)
# has BASELINE — requested and not found unavailable in this run
has() { [[ " $BASELINES " == *" $1 "* ]] && [ -z "${unavailable[$1]:-}" ]; }
iters_for() { # ITERS WARMUP for @1 bytes
    if [ "$1" -ge $((64 << 20)) ]; then echo "${ITERS:-1} ${WARMUP:-0}"; else echo "${ITERS:-3} ${WARMUP:-1}"; fi
}
# judge LABEL WHAT RC — file the measurement WHAT of algorithm LABEL (its
# runner's status RC, rank 0's report in $tgen/out.csv, errors in $tgen/err):
# every row of LABEL goes to results.csv, wrong ones included (their count
# in column 13); then exp_outcome's verdict: ok prints the rows; a baseline
# that never started in this run is not available (why, in the log and
# meta.yaml); anything else, and INC not starting, fails the run with why.
judge() {
    local label=$1 what=$2 rc=$3 verdict why ran_before=
    [ -s "$tgen/err" ] && cat "$tgen/err" >&2
    grep -q "^$label," "$csv" && ran_before=1
    exp_rows "$label" "$tgen/out.csv" | exp_store_row "$round" >> "$csv"
    verdict=$(exp_outcome "$label" "$rc" "$tgen/out.csv" "$tgen/err")
    why=${verdict#*: }
    case $verdict in
    ok)
        exp_rows "$label" "$tgen/out.csv" | awk -F, '{printf "    %s: %s us, algbw %s MB/s, %s wrong\n", $1, $10, $11, $13}'
        ;;
    unavailable:*)
        if [ "$label" = inc ] || [ -n "$ran_before" ]; then
            failed+=("$what: could not start${ran_before:+ (it ran earlier in this run)}: $why")
            exp_err "$what: could not start${ran_before:+ (it ran earlier in this run)}: $why"
        else
            unavailable[$label]=$why
            exp_log "    $label: not available: $why (not counted as a failure; not measured for the rest of this run)"
        fi
        ;;
    *)
        failed+=("$what: $why")
        exp_err "$what: $why"
        ;;
    esac
}

run_t0=$(date +%s) longest=0 rounds_run=0
once=0 # s of this round's work that only round 1 does (loggp.sh, the busy-polling ceiling): no later round repeats it
for round in $(seq 1 "$ROUNDS"); do
    if [ -n "${ROUND_BUDGET:-}" ] && [ "$round" -gt 1 ] &&
        [ $(($(date +%s) - run_t0 + longest)) -ge $((10#$ROUND_BUDGET)) ]; then
        exp_log "round budget: $((round - 1)) of $ROUNDS rounds run; round $round would end after ROUND_BUDGET=$((10#$ROUND_BUDGET)) s (the longest round took $longest s, round 1's one-off work left out; $(($(date +%s) - run_t0)) s gone)"
        break
    fi
    round_t0=$(date +%s)
    load_before=$(exp_loadavg) ticks_before=$(exp_cpu_ticks) round_start=$(date -u +%Y-%m-%dT%H:%M:%SZ)
    rtag= # the round in messages, when there are several
    [ "$ROUNDS" = 1 ] || rtag=" (round $round)"
    exp_log "round $round of $ROUNDS (load average $load_before)"
    if has ceiling; then
        exp_log "ceiling: ib_send_bw rank 0 -> a rank under another leaf, sleeping on CQ events (-e)"
        : > "$tgen/err"
        if CEILING_MODE=pair CEILING_EVENTS=1 experiments/ceiling.sh > "$tgen/out.csv"; then
            judge ceiling "ceiling$rtag" 0 # its row, checked as every other
        else
            failed+=("ceiling$rtag: ceiling.sh failed (see its messages above)")
        fi
        if [ "$round" = 1 ]; then
            exp_log "ceiling: the same, busy polling (perftest's default; kept in meta.yaml)"
            once_t0=$(date +%s)
            poll_row=$(CEILING_MODE=pair CEILING_EVENTS= experiments/ceiling.sh) || poll_row= # never -e, whatever the caller exported
            once=$((once + $(date +%s) - once_t0))
        fi
    fi
    if has ceiling-load; then
        exp_log "ceiling-load: ib_send_bw -b on every pair of hosts across the leaves at once, -e"
        : > "$tgen/err"
        if CEILING_MODE=load CEILING_EVENTS=1 experiments/ceiling.sh > "$tgen/out.csv"; then
            judge ceiling-load "ceiling-load$rtag" 0
        else
            failed+=("ceiling-load$rtag: ceiling.sh failed (see its messages above)")
        fi
    fi
    if [ "$round" = 1 ] && has loggp; then
        exp_log "LogGP: ping-pong and streaming between rank 0 and a rank under another leaf"
        once_t0=$(date +%s)
        experiments/loggp.sh > "$run/loggp.csv" || failed+=("loggp: loggp.sh failed (see its messages above)")
        once=$((once + $(date +%s) - once_t0))
    fi

    while read -r coll b; do
        read -r it wu < <(iters_for "$b")
        args="-C $coll -b $b -e $b -n $it -w $wu"
        case $coll in
        allreduce) args="$args -d $DTYPE -o $OP" ;;
        reduce) args="$args -d $DTYPE -o $OP -R $ROOT" ;;
        broadcast) args="$args -d $DTYPE -R $ROOT" ;;
        allgather | alltoall) args="$args -d $DTYPE" ;;
        reducescatter) args="$args -d $DTYPE -o $OP" ;;
        esac
        algos="inc"
        case $coll in allreduce | broadcast | barrier | allgather | reducescatter | alltoall) has ring && algos="$algos ring" ;; esac
        for a in $algos; do
            exp_log "$a $coll of $b bytes on $nranks ranks$rtag"
            rc=0
            # the CPU time of every host's and switch's process during the measurement (cpu.csv)
            cpu_pids=$(exp_cpu_pids 2>/dev/null)
            probe=
            [ -n "$probe_off" ] || probe=$(exp_speed_probe "$probe_host" "$(awk -v h="$probe_host" '$1 == h' <<<"$cpu_pids")") ||
                exp_log "speed probe: hostwork failed in $probe_host (no probe row for this measurement)"
            t0_us=$(date +%s%6N)
            cpu0=$(exp_cpu_snap "$cpu_pids"; exp_cpu_busy)
            # the CPU inside its timed calls (cpuwin.csv): this machine's processes of the lab sampled
            # (a node on another machine, "@PID", is not: no row), each VM's clock read before and after
            cw_why= cw_sampler=
            cw_procs=$(awk '$3 ~ /^[0-9]+$/ { print $1 ":" $2 ":" $3 }' <<<"$cpu_pids")
            for x in $(awk '$3 ~ /^@/ { print $1 }' <<<"$cpu_pids"); do
                [[ " $cw_remote " == *" $x "* ]] && continue
                cw_remote="$cw_remote $x"
                exp_log "cpuwin: $x runs on another machine: its process is not sampled (no cpuwin.csv row)"
            done
            if [ -n "$cw_off" ]; then cw_why=$cw_off
            elif [ -z "$cw_procs" ]; then cw_why="no process of the lab found on this machine"
            elif ! exp_cw_clocks "$tgen/clock0"; then cw_why="a guest clock could not be read before the run"
            else
                # -m: the machine's busy time too, so cpuwin.csv says what the rest of the machine took inside the calls
                "$cpusample" -i "$EXP_CPUSAMPLE_MS" -m -o "$tgen/samples.csv" $(tr ' ' '\n' <<<"$cw_procs" | cut -d: -f3) \
                    2> "$tgen/cpusample.err" &
                cw_sampler=$!
            fi
            # WINDOW, MESSAGE: libinccl's packets in flight to the switch and packets per
            # RDMA message (inccl_perf -W, -M; the ring keeps its own); -X: each rank's windows
            exp_run_ranks "$tgen/out.csv" inccl_perf -A "$a" -T 300 $args ${WINDOW:+-W $((10#$WINDOW))} \
                ${MESSAGE:+-M $((10#$MESSAGE))} ${cw_sampler:+-X /tmp/exp.win} 2> "$tgen/err" || rc=$?
            wall_us=$(($(date +%s%6N) - t0_us))
            if [ -n "$cw_sampler" ]; then
                kill -TERM "$cw_sampler" 2>/dev/null
                cw_rc=0
                wait "$cw_sampler" || cw_rc=$?
                if [ "$cw_rc" != 0 ]; then cw_why="cpusample exited $cw_rc: $(head -c 300 "$tgen/cpusample.err" | tr -d '\000-\037')"
                elif [ "$rc" != 0 ]; then cw_why="the measurement failed"
                elif ! exp_cw_clocks "$tgen/clock1"; then cw_why="a guest clock could not be read after the run"
                elif ! exp_cpuwin_rows "$tgen" "$a" "$coll" "$round" "$cw_procs machine:machine:0" > "$tgen/cpuwin.rows" 2> "$tgen/cpuwin.err"; then
                    cw_why=$(head -c 600 "$tgen/cpuwin.err" | sed 's/^exp: //' | paste -sd ' ')
                else
                    cat "$tgen/cpuwin.rows" >> "$run/cpuwin.csv"
                    # each host's interrupts and packets inside its timed calls (rxe.csv's timed_*; calls: the
                    # timed ones, as cpuwin counted them in the windows)
                    exp_timed_counts "$tgen" | awk -v p="$a,$coll,$b,$round,$(head -n 1 "$tgen/cpuwin.rows" | cut -d, -f5)" \
                        '{ print p "," $1 "," $2 "," $3 }' >> "$run/rxe.csv"
                    awk -F, '$7 == "host" { n++; c += $9; if ($9 > m) m = $9 } $7 != "machine" { p += $9 } $7 == "machine" { mc = $9 } END {
                        if (n) printf "    cpuwin: %d calls in %.0f ms: busiest host %.0f ms, all hosts %.0f ms of CPU inside them, the rest of the machine %.0f ms (offsets +- %d us)\n",
                            $5, $10 / 1000, m / 1000, c / 1000, (mc - p) / 1000, $12 }' "$tgen/cpuwin.rows"
                fi
            fi
            if [ -n "$cw_why" ]; then
                cw_missing+=("$a $coll $b B$rtag: $cw_why")
                exp_log "    cpuwin: no rows: $cw_why"
            fi
            { exp_cpu_delta "$cpu0" "$(exp_cpu_snap "$cpu_pids"; exp_cpu_busy)"
              [ -z "$probe" ] || echo "$probe_host probe $probe"; } |
                awk -v p="$a,$coll,$b,$round,$((it + wu))" -v w="$wall_us" '{ print p "," $1 "," $2 "," $3 "," w }' >> "$run/cpu.csv"
            # what each host's rxe sent, received and resent meanwhile (rxe.csv): the model's missing terms
            # (exp_run_ranks read them with each host's exit status: no exec of their own)
            cat "$tgen/out.csv.rxe" 2>/dev/null |
                awk -v p="$a,$coll,$b,$round,$((it + wu))" '{ print p "," $1 "," $2 "," $3 }' >> "$run/rxe.csv"
            # what the switches counted for its communicator (switch.csv): timeouts, resends
            exp_switch_delta "$smarks" > "$tgen/switch.delta" # not in a pipe: it sets EXP_SWITCH_MARKS here
            smarks=$EXP_SWITCH_MARKS
            awk -v p="$a,$coll,$b,$round,$((it + wu))" '{ print p "," $1 "," $2 "," $3 }' "$tgen/switch.delta" >> "$run/switch.csv"
            judge "$a" "$a $coll $b B$rtag" "$rc"
        done
        for a in mpi-tcp mpi-ucx; do
            has "$a" || continue
            exp_log "$a $coll of $b bytes on $nranks ranks$rtag"
            rc=0
            exp_run_mpi "$tgen/out.csv" "$a" $args 2> "$tgen/err" || rc=$?
            judge "$a" "$a $coll $b B$rtag" "$rc"
        done
    done < "$plan"
    load_after=$(exp_loadavg)
    steal=$(exp_steal_pct "$ticks_before" "$(exp_cpu_ticks)")
    conditions+=("  - round: $round
    start: '$round_start'
    loadavg_before: '$load_before'
    loadavg_after: '$load_after'${steal:+
    steal_pct: $steal}")
    exp_log "round $round done (load average $load_after${steal:+, steal $steal %})"
    rounds_run=$round
    took=$(($(date +%s) - round_t0 - once)) once=0 # what a later round would take: round 1 less its one-off work
    [ "$took" -ge 1 ] || took=1 # a round counts at least a second
    [ "$took" -le "$longest" ] || longest=$took
done

# ---- metadata ------------------------------------------------------------------------
exp_switch_counters "$marks" > "$run/switch-counters.txt"
set -f # lab.env's words are text: a * in them is no file name pattern
set -- $(exp_lab_env LAB_ROLES)
set +f
images=
while [ $# -ge 2 ]; do
    case $1 in
    */* | .*) ;; # a role is a plain word (it names a manifest file here)
    *) cp "$2/manifest.txt" "$run/manifest-$1.txt" 2>/dev/null && images="$images  $(exp_yaml_str "$1"): $(exp_yaml_str "$(basename "$2")")"$'\n' ;;
    esac
    shift 2
done
{
    echo "experiment: $exp"
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "commit: $(exp_yaml_str "$commit")"
    echo "topology: $(exp_yaml_str "$(basename "$TOPOLOGY" .yaml)")"
    echo "topology_file: $(exp_yaml_str "$TOPOLOGY")"
    echo "accelerator: $(exp_yaml_str "$accel")"
    echo "switch_mode: $(exp_yaml_str "$switch_mode")"
    echo "$placement"
    echo "host_cpu: $(exp_yaml_str "$cpu_model")"
    echo "host_cores: $(nproc)"
    echo "nranks: $nranks"
    echo "tree_levels: $(exp_tree_levels)"
    echo "mtu: 1024"
    echo "dtype: $DTYPE"
    echo "op: $OP"
    echo "root: $ROOT"
    echo "rounds: $rounds_run"
    [ "$rounds_run" = "$ROUNDS" ] || echo "rounds_planned: $ROUNDS"
    # the settings as given (checked above: numbers), "default" for the sizes' defaults
    if [ -n "${ITERS:-}" ]; then echo "iters: $((10#$ITERS))"; else echo "iters: default"; fi
    if [ -n "${WARMUP:-}" ]; then echo "warmup: $((10#$WARMUP))"; else echo "warmup: default"; fi
    if [ -n "${WINDOW:-}" ]; then echo "window: $((10#$WINDOW))"; else echo "window: default"; fi
    if [ -n "${MESSAGE:-}" ]; then echo "message: $((10#$MESSAGE))"; else echo "message: default"; fi
    echo "ceiling_runs: $CEILING_RUNS"
    if [ "$exp" = sweep ]; then # what the sweep measured, in that order
        echo "sizes: [$(echo $sweep_sizes | sed 's/ /, /g')]"
        echo "collectives: [$(for c in allreduce reduce broadcast barrier allgather reducescatter alltoall; do [[ " $COLLECTIVES " == *" $c "* ]] && printf '%s ' "$c"; done | sed 's/ $//; s/ /, /g')]"
    fi
    echo "round_conditions:"
    printf '%s\n' "${conditions[@]}"
    measured=
    for x in $BASELINES; do [ -n "${unavailable[$x]:-}" ] || measured="$measured $x"; done
    echo "baselines: \"${measured# }\""
    if [ ${#unavailable[@]} -gt 0 ]; then
        echo "not_available:"
        for x in "${!unavailable[@]}"; do echo "  $x: $(exp_yaml_str "${unavailable[$x]}")"; done
    fi
    [ -n "${poll_row:-}" ] && echo "ceiling_busy_poll_MBps: $(cut -d, -f11 <<<"$poll_row")"
    echo "switch_counters: switch-counters.txt"
    if [ ${#cw_missing[@]} -gt 0 ]; then # libinccl measurements without cpuwin.csv rows, and why
        echo "cpuwin_missing:"
        for x in "${cw_missing[@]}"; do echo "  - $(exp_yaml_str "$x")"; done
    fi
    if [ ${#failed[@]} = 0 ]; then
        echo "status: verified"
    else
        joined=$(printf '%s; ' "${failed[@]}")
        echo "status: $(exp_yaml_str "failed: ${joined%; }")"
    fi
    echo "images:"
    printf '%s' "$images"
} > "$run/meta.yaml"
exp_log "results:"
column -t -s, "$csv" | sed 's/^/    /'
for x in "${!unavailable[@]}"; do exp_log "not available: $x: ${unavailable[$x]}"; done
if [ ${#failed[@]} -gt 0 ]; then
    for x in "${failed[@]}"; do exp_err "failed: $x"; done
    exp_err "the run failed (${#failed[@]} failure(s) above; what was measured is in $run, wrong rows with their count in column 13)"
    exit 1
fi
exp_log "every result verified; stored in $run (make plots draws it)"
exit
}
