#!/usr/bin/env bash
# plots.sh — `make plots`: charts and REPORT.md from every run stored under
# RESULTS (default results/).
#
#   analysis/plots.sh [RESULTS]
#
# build/increport writes each run's chart data and gnuplot scripts into
# RUN/plots/ and RESULTS/REPORT.md; gnuplot then draws every chart as PNG
# and SVG. A run whose files do not read is named with the file and line and
# left out; the others are still drawn. Exit status: 0 every run drawn, 1 a
# run could not be read or a chart failed, 2 nothing to read from.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
results=${1:-results}
increport=${INCLAB_BUILD:-$top/build}/increport
[ -x "$increport" ] || { echo "plots: $increport is missing: run 'make' first" >&2; exit 2; }
command -v gnuplot >/dev/null || { echo "plots: gnuplot is missing: make deps installs it (gnuplot-nox)" >&2; exit 2; }
[ -e "$results" ] || { echo "plots: no results directory '$results' (make exp-allreduce SIZE=64M stores a run there)" >&2; exit 2; }
[ -d "$results" ] || { echo "plots: '$results' is not a directory (RESULTS names the directory that holds the runs)" >&2; exit 2; }

rc=0
scripts=$("$increport" plots "$results") || rc=1
n=0 bad=0
while read -r gp; do
    [ -n "$gp" ] || continue
    if (cd -- "$(dirname -- "$gp")" && gnuplot "$(basename -- "$gp")" 2> "$(basename "$gp" .gp).log"); then
        n=$((n + 1))
        rm -f "${gp%.gp}.log"
    else
        echo "plots: gnuplot failed on $gp: $(tail -n 3 "${gp%.gp}.log" | tr '\n' ' ')" >&2
        bad=$((bad + 1))
        rc=1
    fi
done <<<"$scripts"
charts=$(find "$results" -path '*/plots/*.png' | wc -l)
echo "plots: $n script(s) drew $charts PNG chart(s) (each also as SVG) in $results/*/plots/; report: $results/REPORT.md"
[ "$bad" = 0 ] || echo "plots: $bad script(s) failed" >&2
exit $rc
