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
# the medians of the run, per algorithm and size, and the ceilings, MB/s (results.csv: column 1
# the algorithm, 7 bytes, 11 algbw, 13 wrong; rows with wrong elements left out)
awk -F, 'NR > 1 && $13 == 0 && $2 == "p2p" { ceil[$1] = ceil[$1] " " $11 }
    NR > 1 && $13 == 0 && $2 == "allreduce" { v[$1 "," $7] = v[$1 "," $7] " " $11; if (!($7 in s)) { s[$7] = 1; sizes[++ns] = $7 } if (!($1 in a)) { a[$1] = 1; algs[++na] = $1 } }
    function median(list,   n, x, i, j, t) { n = split(list, x, " "); if (!n) return "-";
        for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (x[j] + 0 < x[i] + 0) { t = x[i]; x[i] = x[j]; x[j] = t }
        return n % 2 ? x[(n + 1) / 2] : sprintf("%.2f", (x[n / 2] + x[n / 2 + 1]) / 2) }
    END { printf "  %-10s", "algbw MB/s"; for (i = 1; i <= ns; i++) printf " %10s", sizes[i] / 1048576 " MiB"; print "";
          for (k = 1; k <= na; k++) { printf "  %-10s", algs[k]; for (i = 1; i <= ns; i++) printf " %10s", median(v[algs[k] "," sizes[i]]); print "" }
          for (c in ceil) printf "  %s: %s MB/s per host (median of the run)\n", c, median(ceil[c]) }' \
    "$run/results.csv"
echo "  charts: $run/plots/ (PNG and SVG); report: $RESULTS/REPORT.md; log: $run/run.log"
[ "$exp_rc" = 0 ] || { err "the experiment failed (exit $exp_rc): see $run/run.log"; exit 1; }
[ "$plots_rc" = 0 ] || { err "a chart failed (exit $plots_rc)"; exit 1; }
exit 0
