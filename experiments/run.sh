#!/usr/bin/env bash
# run.sh — `make run`: the main job from nothing to a verified chart.
#
#   experiments/run.sh
#
# 1. brings the lab of TOPOLOGY up unless it is up (lab/lab.sh up: packages,
#    images, boot, readiness; a stopped lab comes back from its saved state).
#    A new lab runs its switches and controller as network namespaces
#    (SWITCHES=netns, the mode for figures: README); SWITCHES=vm asks for the
#    all-VM lab; a lab that is already up keeps its mode.
# 2. runs an AllReduce sweep (experiments/exp.sh sweep) with every default
#    baseline in the same run: the busy-polling and same-load ceilings, the
#    LogGP measurements, libinccl's ring and OpenMPI over TCP; every element of
#    every result is verified on every rank, in interleaved rounds.
# 3. draws every stored run and writes RESULTS/REPORT.md (analysis/plots.sh).
# 4. prints where the run, its charts and the report are, and the medians.
#
# Settings (make passes them): SIZES (default "1M 4M 16M 64M"), ROUNDS (3),
# DTYPE, OP, BASELINES, RESULTS (results), TOPOLOGY, SWITCHES; exp.sh checks
# them. Exit status: 0 everything verified and drawn, 1 the lab, the
# experiment or a chart failed (what was measured is kept and drawn), 2 bad
# settings.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
: "${TOPOLOGY:=topology/1-2-4.yaml}" "${INCLAB_PREFIX:=inclab}" "${RESULTS:=results}"
export TOPOLOGY INCLAB_PREFIX RESULTS
state=${INCLAB_STATE:-/var/lib/inclab/$INCLAB_PREFIX}
t0=$SECONDS
. "$top/experiments/lib.sh"

# summary CSV — the medians of a run (exp_median, 2 decimals), MB/s: a row per
# algorithm and a column per size of its AllReduce rows, then each ceiling.
# results.csv: column 1 the algorithm, 2 the collective, 7 bytes, 11 algbw,
# 13 wrong; rows with wrong elements are left out.
summary() {
    local csv=$1 a b m sizes line
    # rows: what the awk programs below select; "-" where none
    rows() { awk -F, -v sel="$1" 'NR > 1 && $13 == 0 && '"$2" "$csv"; }
    med() { local v; v=$(rows "$1" "$2 {print \$11}"); [ -n "$v" ] && m=$(exp_median $v) && printf '%.2f' "$m" || printf -- -; }
    sizes=$(rows "" '$2 == "allreduce" && !seen[$7]++ {print $7}')
    line=$(printf '  %-10s' 'algbw MB/s')
    for b in $sizes; do line+=$(printf ' %10s' "$(awk -v b="$b" 'BEGIN {print b / 1048576 " MiB"}')"); done
    echo "$line"
    for a in $(rows "" '$2 == "allreduce" && !seen[$1]++ {print $1}'); do
        line=$(printf '  %-10s' "$a")
        for b in $sizes; do line+=$(printf ' %10s' "$(med "$a,$b" '$2 == "allreduce" && $1 "," $7 == sel')"); done
        echo "$line"
    done
    for a in $(rows "" '$2 == "p2p" && !seen[$1]++ {print $1}'); do
        echo "  $a: $(med "$a" '$2 == "p2p" && $1 == sel') MB/s per host (median of the run)"
    done
}

say() { printf '[run %s, %d s] %s\n' "$(date +%H:%M:%S)" $((SECONDS - t0)) "$*"; }
err() { printf 'run: %s\n' "$*" >&2; }

case ${SWITCHES:-} in "" | vm | netns) ;; *) err "SWITCHES must be vm or netns, not '${SWITCHES}'"; exit 2 ;; esac
# the settings first, so that a typo costs no lab-up
export SIZES=${SIZES:-1M 4M 16M 64M} ROUNDS=${ROUNDS:-3} COLLECTIVES=allreduce
EXP_DRY_RUN=1 experiments/exp.sh sweep > /dev/null || exit 2

say "1/3 the lab ($TOPOLOGY, lab '$INCLAB_PREFIX')"
if [ -e "$state/lab.env" ]; then
    # a lab exists: its own mode (lab.sh refuses another one with a precise message)
    lab/lab.sh up || { err "lab-up failed (make lab-status shows the nodes; make lab-down removes the lab)"; exit 1; }
else
    SWITCHES=${SWITCHES:-netns} lab/lab.sh up || { err "lab-up failed (make lab-down removes what it left)"; exit 1; }
fi

say "2/3 AllReduce of $SIZES, $ROUNDS round(s), INC and every default baseline, every element verified"
before=$(ls -d "$RESULTS"/sweep-* 2>/dev/null | sort)
experiments/exp.sh sweep; exp_rc=$?
after=$(ls -d "$RESULTS"/sweep-* 2>/dev/null | sort)
run=$(comm -13 <(echo "$before") <(echo "$after") | tail -n 1)
[ -n "$run" ] || { err "the experiment stored no run in $RESULTS (exit $exp_rc)"; exit 1; }

say "3/3 charts and the report"
INCLAB_BUILD=${INCLAB_BUILD:-$top/build} analysis/plots.sh "$RESULTS"; plots_rc=$?

echo
say "done: run $run ($(sed -n 's/^status: //p' "$run/meta.yaml" | tr -d "'\""))"
summary "$run/results.csv"
echo "  charts: $run/plots/ (PNG and SVG); report: $RESULTS/REPORT.md; log: $run/run.log"
[ "$exp_rc" = 0 ] || { err "the experiment failed (exit $exp_rc): see $run/run.log"; exit 1; }
[ "$plots_rc" = 0 ] || { err "a chart failed (exit $plots_rc)"; exit 1; }
exit 0
