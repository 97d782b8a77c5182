#!/usr/bin/env bash
# test-plots.sh — the analysis tools (analysis/increport.c, analysis/plots.sh)
# on checked-in results (tests/analysis/samples: a paper run and a sweep run
# from before rounds (results.csv without the round column), the sweep with
# loggp.csv and a row with wrong elements; a run of 3 rounds with both
# ceilings and its conditions in meta.yaml) and broken files
# (tests/analysis/bad). No lab. Every expectation is computed here from the
# sample files with awk, or is a parameter the samples were generated from
# (LogGP: L = 100 us, o = 40 us, G = 0.4 us/B). Prints ok/FAIL per check and
# at its end only (tests/lib/harness.sh),
# "N passed, M failed"; exit 1 on any failure.
# The tools are make's: ${INCLAB_BUILD:-${BUILD:-build}}/increport (make
# test-analysis passes its BUILD), also for analysis/plots.sh.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 1
build=${INCLAB_BUILD:-${BUILD:-build}}
case $build in /*) ;; *) build=$top/$build ;; esac
export INCLAB_BUILD=$build # analysis/plots.sh takes increport from there
increport=$build/increport
samples=tests/analysis/samples
bad=tests/analysis/bad
# said RC WANT_RC TEXT — the exit status was WANT_RC and stdin contains TEXT
said() { [ "$1" = "$2" ] && grep -qF -- "$3"; }
tmp=$(mktemp -d)
. "$top/tests/lib/harness.sh"
gone() { rm -rf "$tmp"; }
harness_begin test-plots all
harness_on_exit gone
phase all "every check"
[ -x "$increport" ] || { ko "$increport is not built (make BUILD=$build $increport)"; harness_end; }

# ---- bad files: each refused, with the file, the line and the reason ---------------
while IFS='|' read -r file want; do
    out=$("$increport" check "$bad/$file" 2>&1); rc=$?
    check "bad $file refused (exit $rc): $out" said $rc 1 "$bad/$want" <<<"$out"
done <<'EOF'
empty.csv|empty.csv: empty: no header line
header.csv|header.csv:1: header is not 'algorithm,collective,dtype,op,root,nranks,bytes,elements,iters,time_us,algbw_MBps,busbw_MBps,wrong'
fields.csv|fields.csv:3: 12 fields, not 13
time.csv|time.csv:2: time_us 'fast' is not a time > 0
negative.csv|negative.csv:2: time_us '-5' is not a time > 0
nan.csv|nan.csv:2: time_us 'nan' is not a time > 0
collective.csv|collective.csv:2: collective 'allgather' is not
algbw.csv|algbw.csv:2: algbw_MBps 2.00 is not bytes / time_us = 1.00
elements.csv|elements.csv:2: elements 1000 does not match bytes 1048576
root.csv|root.csv:2: root '4' is not a rank of 0..3
quoted.csv|quoted.csv:2: quoted fields are not part of this format
wrong.csv|wrong.csv:3: wrong 'many' is not a whole number
loggp-measure.csv|loggp-measure.csv:3: measure 'latency' is not half_rtt or gap
round.csv|round.csv:3: round '21' is not a whole number 1..20
round-zero.csv|round-zero.csv:2: round '0' is not a whole number 1..20
round-missing.csv|round-missing.csv:2: 13 fields, not 14
EOF
out=$("$increport" check "$bad/nosuchfile.csv" 2>&1); rc=$?
check "a missing file is an error (exit $rc): $out" said $rc 1 'No such file' <<<"$out"
"$increport" frobnicate >/dev/null 2>&1; rc=$?
check "an unknown command is a usage error (exit $rc)" [ $rc = 2 ]

# ---- good files: every row read ---------------------------------------------------------
for f in "$samples"/*/results.csv "$samples"/*/loggp.csv; do
    rows=$(tail -n +2 "$f" | grep -c .)
    out=$("$increport" check "$f" 2>&1); rc=$?
    check "$f reads: $out" said $rc 0 ": $rows " <<<"$out"
done

# ---- make plots on a copy of the samples -------------------------------------------------
res=$tmp/results
cp -r "$samples" "$res"
out=$(analysis/plots.sh "$res" 2>&1); rc=$?
check "plots.sh on the samples exits 0: $(tail -n 1 <<<"$out")" [ $rc = 0 ]
paper=$res/paper-20261101-120000 sweep=$res/sweep-20261102-090000
want_paper="summary allreduce-throughput allreduce-time reduce-throughput reduce-time"
want_sweep="$want_paper broadcast-throughput broadcast-time barrier-time loggp-fit loggp-allreduce"
for run in paper sweep; do
    dir=$res/$(basename "$(eval echo "\$$run")") want=want_$run
    for c in ${!want}; do
        check "$run: $c.png is a PNG" sh -c "[ \"\$(head -c 4 '$dir/plots/$c.png' | od -An -c | tr -d ' ')\" = '211PNG' ]"
        check "$run: $c.svg is an SVG titled with topology and accelerator" \
            sh -c "grep -q '<svg' '$dir/plots/$c.svg' && grep -q 'topology 1-2-4, TCG' '$dir/plots/$c.svg'"
    done
    n=$(ls "$dir/plots/"*.png | wc -l)
    check "$run: $n PNG charts, as expected ($(wc -w <<<"${!want}"))" [ "$n" = "$(wc -w <<<"${!want}")" ]
done
check "paper: no broadcast chart (nothing measured)" [ ! -e "$paper/plots/broadcast-throughput.png" ]

# chart data = the verified rows of results.csv, in MiB / s / MB/s, ascending size: per size the
# median time over the rounds, bytes / that time, that times the median busbw / algbw of the rows,
# then algbw min and max (the rows'), time min and max
expect_dat() { # RUN ALGO COLL: the .dat lines expected from results.csv
    awk -F, -v a="$2" -v c="$3" 'NR > 1 && $1 == a && $2 == c && $13 == 0 {print $7, $10, $11, $12}' "$1/results.csv" |
        sort -k1,1n | awk '
        function med(v, n,   i, j, x, w) { for (i = 1; i <= n; i++) w[i] = v[i]
            for (i = 2; i <= n; i++) { x = w[i]; for (j = i - 1; j >= 1 && w[j] > x; j--) w[j + 1] = w[j]; w[j + 1] = x }
            lo = w[1]; hi = w[n]; return n % 2 ? w[(n + 1) / 2] : (w[n / 2] + w[n / 2 + 1]) / 2 }
        function flush() { if (!n) return
            tm = med(t, n); tlo = lo; thi = hi; med(b, n); blo = lo; bhi = hi; bm = size / tm; um = bm * med(q, n)
            printf "%.9g %.9g %.6g %.6g %.6g %.6g %.9g %.9g\n", size / 1048576, tm / 1e6, bm, um, blo, bhi, tlo / 1e6, thi / 1e6; n = 0 }
        $1 != size { flush(); size = $1 }
        { n++; t[n] = $2; b[n] = $3; q[n] = $4 / $3 }
        END { flush() }'
}
rounds=$res/rounds-20261105-100000
for spec in "$paper inc allreduce" "$paper ring allreduce" "$paper mpi-tcp allreduce" "$paper inc reduce" \
    "$sweep inc broadcast" "$sweep mpi-ucx allreduce" "$sweep ring broadcast" "$rounds inc allreduce" "$rounds ring allreduce"; do
    set -- $spec
    got=$(grep -v '^#' "$1/plots/$3-$2.dat" 2>/dev/null)
    check "$(basename "$1"): $3-$2.dat holds the $(expect_dat "$@" | wc -l) verified rows of results.csv" \
        [ "$got" = "$(expect_dat "$@")" ]
done
check "sweep: the 8 MiB broadcast with 17 wrong elements is not drawn" sh -c "! grep -q '^8 ' '$sweep/plots/broadcast-inc.dat'"
check "rounds: allreduce-inc.dat is the median of 3 rounds, 22 s (128 MiB / 22 s = 6.10081 MB/s, busbw x 1.5), with 20 - 25 s" \
    grep -qx '128 22 6.10081 9.15121 5.37 6.71 20 25' "$rounds/plots/allreduce-inc.dat"
check "sweep: barrier.dat has every algorithm's barrier time" \
    [ "$(cat "$sweep/plots/barrier.dat" | grep -v '^#')" = "$(awk -F, '$2 == "barrier" {printf "%s %.6g %.6g %.6g\n", $1, $10, $10, $10}' "$sweep/results.csv")" ]
ceil=$(awk -F, '$1 == "ceiling" {print $11}' "$paper/results.csv")
check "paper: the throughput chart draws the run's ceiling ($ceil MB/s)" \
    grep -qE "^plot $(awk -v c="$ceil" 'BEGIN {printf "%.6g", c}') with lines " "$paper/plots/allreduce.gp"
check "paper: no same-load ceiling drawn (not measured)" sh -c "! grep -q 'same-load' '$paper/plots/allreduce.gp'"
check "rounds: the throughput chart draws both ceilings' medians (2.4 and the same-load 1.2 MB/s) and min-max bars" \
    sh -c "grep -qF ', 1.2 with lines lw 3 dt 4' '$rounds/plots/allreduce.gp' && grep -qF 'plot 2.4 with lines lw 3 dt 2' '$rounds/plots/allreduce.gp' &&
        grep -qF \"'allreduce-inc.dat' using 1:3:5:6 with yerrorlines\" '$rounds/plots/allreduce.gp'"

# ---- REPORT.md --------------------------------------------------------------------------
rep=$res/REPORT.md
check "REPORT.md written" [ -s "$rep" ]
# seed row AllReduce 32 MiB: ours from the paper run (the only run with 32 MiB)
poll=$(sed -n 's/^ceiling_busy_poll_MBps: //p' "$paper/meta.yaml")
row=$(grep '^| AllReduce | 32 MiB |' "$rep")
exp=$(awk -F, -v c="$ceil" -v p="$poll" '$1 == "inc" && $2 == "allreduce" && $7 == 33554432 {
    printf "| AllReduce | 32 MiB | 5.9 s | 45.0 | %.1f s | %.1f | %.2f | %.2f | %.2f | not measured | | %.2f | %.2f | paper-20261101-120000 |",
        $10 / 1e6, $11 * 8, $11, c, $11 / c, p, $11 / p }' "$paper/results.csv")
check "REPORT: seed row AllReduce 32 MiB next to ours: $row" [ "$row" = "$exp" ]
row=$(grep '^| Reduce | 512 MiB |' "$rep")
exp=$(awk -F, -v c="$ceil" -v p="$poll" '$1 == "inc" && $2 == "reduce" && $7 == 536870912 {
    printf "| Reduce | 512 MiB | 130.0 s | 31.0 | %.1f s | %.1f | %.2f | %.2f | %.2f | not measured | | %.2f | %.2f | paper-20261101-120000 |",
        $10 / 1e6, $11 * 8, $11, c, $11 / c, p, $11 / p }' "$paper/results.csv")
check "REPORT: seed row Reduce 512 MiB next to ours: $row" [ "$row" = "$exp" ]
# seed row AllReduce 128 MiB: from the run of 3 rounds, medians (inc 6.10 MB/s; ceilings 2.40 and 1.20 per host)
row=$(grep '^| AllReduce | 128 MiB |' "$rep")
exp=$(awk -F, 'function m3(a, b, c) { return a + b + c - (a < b ? (a < c ? a : c) : (b < c ? b : c)) - (a > b ? (a > c ? a : c) : (b > c ? b : c)) }
    $1 == "inc" { t[++n] = $10; w[n] = $11 } $1 == "ceiling" { c[++k] = $11 } $1 == "ceiling-load" { l[++j] = $11 }
    END { bw = m3(w[1], w[2], w[3]); ce = m3(c[1], c[2], c[3]); lo = m3(l[1], l[2], l[3])
        printf "| AllReduce | 128 MiB | 3.4 s | 300.0 | %.1f s (%.1f s – %.1f s, 3 rounds) | %.1f | %.2f | %.2f | %.2f | %.2f | %.2f | 1.80 | %.2f | rounds-20261105-100000 |",
            m3(t[1], t[2], t[3]) / 1e6, 20, 25, bw * 8, bw, ce, bw / ce, lo, bw / lo, bw / 1.8 }' "$rounds/results.csv")
check "REPORT: seed row AllReduce 128 MiB from the rounds run, median and min-max, of both ceilings: $row" [ "$row" = "$exp" ]
check "REPORT: the seed table warns that it combines runs of different commits" \
    grep -qF '**Warning: This table combines 2 runs made under different conditions:** commit `0123abc` (paper-20261101-120000) vs `4567def-dirty` (rounds-20261105-100000)' "$rep"
check "REPORT: the geometric mean over ring warns the same" \
    grep -qF '**Warning: The geometric mean over ring (host-based, switches route) combines 3 runs made under different conditions:** commit' "$rep"
check "REPORT: ... and says which runs recorded no load average" \
    grep -qF 'The geometric mean over ring (host-based, switches route): 2 of the 3 runs it combines recorded no load average' "$rep"
check "REPORT: the rounds run's speed-up is the ratio of medians (ring 40 s / INC 22 s = 1.82)" \
    grep -qF '| rounds-20261105-100000 | AllReduce | 128 MiB | 22.0 s (20.0 s – 25.0 s, 3 rounds) | 40.0 s | **1.82** |' "$rep"
check "REPORT: the rounds run's conditions, round by round, steal where there was some" \
    sh -c "grep -qF -- '- conditions: switches \`vm\`, 3 round(s)' '$rep' &&
        grep -qF -- '  - round 2 from 2026-11-05T10:05:00Z: load average 1.10 before, 2.30 after, 3.25 % of the CPU stolen' '$rep' &&
        grep -qF -- '  - round 1 from 2026-11-05T10:00:00Z: load average 0.50 before, 1.10 after' '$rep'"
check "REPORT: warns that the rounds ran under different load (0.50 to 2.30)" \
    grep -qF '**warning: its rounds ran under different load** (load average 0.50 to 2.30, more than 1.0 apart)' "$rep"
check "REPORT: a run from before rounds says so" grep -qF -- '- conditions: switches `vm`, 1 round(s) (a run from before rounds: one of each)' "$rep"
check "REPORT: both ceilings of the rounds run" \
    sh -c "grep -qF -- '- RDMA ceiling (ib_send_bw across the tree, unloaded pair): 2.40 MB/s' '$rep' && grep -qF -- '- same-load ceiling (every host ib_send_bw -b at once, per host): 1.20 MB/s' '$rep'"
check "REPORT: every seed row is there" [ "$(grep -c '^| \(AllReduce\|Reduce\) | [0-9]* [MG]iB | [0-9.]* s |' "$rep")" = 7 ]
# speed-ups: ring / INC and TCP / INC at 32 MiB in the paper run
sp=$(awk -F, '$7 == 33554432 && $2 == "allreduce" { t[$1] = $10 } END { printf "%.2f %.2f", t["ring"] / t["inc"], t["mpi-tcp"] / t["inc"] }' "$paper/results.csv")
row=$(grep '^| paper-20261101-120000 | AllReduce | 32 MiB |' "$rep")
check "REPORT: speed-up over ring at 32 MiB (${sp% *}): $row" grep -qF "| **${sp% *}** |" <<<"$row"
check "REPORT: speed-up over OpenMPI TCP at 32 MiB (${sp#* })" grep -qF "| **${sp#* }** |" <<<"$row"
n=$(awk -F, 'FNR > 1 && $13 == 0 { k = FILENAME "," $2 "," $7; t[$1 "," k] = 1; if ($1 == "inc") inc[k] = 1 }
    END { for (k in inc) if (("ring," k) in t || ("mpi-tcp," k) in t || ("mpi-ucx," k) in t) n++; print n }' "$paper/results.csv" "$sweep/results.csv")
check "REPORT: $n speed-up rows (every INC row with a baseline of the same size)" \
    [ "$(grep -c '^| \(paper\|sweep\)-[0-9-]* | ' "$rep")" = "$n" ]
check "REPORT: LogGP parameters of the sweep run recovered (L 100, o 40, G 0.4 us/B)" \
    grep -qF '| 100.0 us | 40.0 us | 0.40000 us/B | 2.50 MB/s | 0.45000 us/B | 5 half_rtt, 5 gap |' "$rep"
# predicted INC AllReduce of 1 MiB = L + 2o + nG = 100 + 80 + 1048576 * 0.4 us = 419.6 ms
check "REPORT: LogGP prediction of the 1 MiB INC AllReduce (419.6 ms)" grep -qF '| inc | 1 MiB | 1.2 s | 419.6 ms |' "$rep"
check "REPORT: the left-out wrong row is said" grep -q '1 row(s) with wrong elements left out' "$rep"
check "REPORT: embeds every chart drawn" \
    [ "$(grep -c '^!\[' "$rep")" = "$(find "$res" -path '*/plots/*.png' | wc -l)" ]
for img in $(grep -o '([^)]*\.png)' "$rep" | tr -d '()'); do
    [ -s "$res/$img" ] || { ko "REPORT links $img, which is not there"; break; }
done

# ---- again: the same charts, nothing stale ------------------------------------------------
# (the text files only: PNG and SVG carry nothing that changes, but are not compared byte for byte)
before=$(cd "$res" && find . -type f | sort && find . -type f \( -name '*.dat' -o -name '*.gp' -o -name '*.md' \) | sort | xargs cat | md5sum)
analysis/plots.sh "$res" >/dev/null 2>&1; rc=$?
after=$(cd "$res" && find . -type f | sort && find . -type f \( -name '*.dat' -o -name '*.gp' -o -name '*.md' \) | sort | xargs cat | md5sum)
check "a second make plots exits 0 and leaves the same files with the same data, scripts and report" \
    sh -c "[ $rc = 0 ] && [ '$after' = '$before' ]"

# ---- a bad run among good ones: named, left out, the rest still drawn -----------------------
mkdir -p "$res/broken-20261103-000000"
cp "$bad/fields.csv" "$res/broken-20261103-000000/results.csv"
rm -f "$paper"/plots/*.png
out=$(analysis/plots.sh "$res" 2>&1); rc=$?
check "a bad run fails make plots (exit $rc) naming the file and line" \
    said $rc 1 'broken-20261103-000000/results.csv:3: 12 fields, not 13' <<<"$out"
check "... and the good runs are still drawn" [ -s "$paper/plots/allreduce-throughput.png" ]
check "... and REPORT.md says a run was left out" grep -q '1 more could not be read' "$rep"

# ---- rows of an algorithm no chart draws (mpi_perf's default label): read, not drawn ------------
other=$tmp/other
mkdir -p "$other/custom-20261104-000000"
{ head -n 1 "$paper/results.csv"; echo "mpi,allreduce,int32,sum,-,4,4096,1024,1,4096.00,1.00,1.50,0"; } \
    > "$other/custom-20261104-000000/results.csv"
out=$(analysis/plots.sh "$other" 2>&1); rc=$?
check "a run with only an undrawn algorithm: make plots exits 0 and writes no empty chart ($rc)" \
    sh -c "[ $rc = 0 ] && [ ! -e '$other/custom-20261104-000000/plots/allreduce.gp' ]"
check "... and its report links no chart" sh -c "! grep -q '^!\[' '$other/REPORT.md'"

# ---- an even number of rounds: the median bandwidth is bytes / the median time, never a mean of its own ----
# 2 rounds of a 128 MiB AllReduce at 20 s and 40 s: 30 s and 128 MiB / 30 s = 4.47 MB/s (the mean of the
# rows' 6.71 and 3.36 would be 5.04); min - max of the bandwidth stay the rows' own
even=$tmp/even er=even-20261106-100000
mkdir -p "$even/$er"
cat >"$even/$er/results.csv" <<EOF
$(head -n 1 "$rounds/results.csv")
ceiling,p2p,-,-,-,2,65536,-,400,27306.67,2.40,2.40,0,1
inc,allreduce,float32,sum,-,4,134217728,33554432,1,20000000.00,6.71,10.07,0,1
ring,allreduce,float32,sum,-,4,134217728,33554432,1,30000000.00,4.47,6.71,0,1
ceiling,p2p,-,-,-,2,65536,-,400,32768.00,2.00,2.00,0,2
inc,allreduce,float32,sum,-,4,134217728,33554432,1,40000000.00,3.36,5.03,0,2
ring,allreduce,float32,sum,-,4,134217728,33554432,1,50000000.00,2.68,4.03,0,2
EOF
sed -e 's/^rounds: 3/rounds: 2/' -e '/^  - round: 3/,/^    loadavg_after/d' -e "s/loadavg_after: '2.30 1.00 0.50'/loadavg_after: 'unknown'/" \
    "$rounds/meta.yaml" >"$even/$er/meta.yaml"
cp "$sweep/loggp.csv" "$even/$er/"
# next to it a run of another topology and rank count (same commit, accelerator, switch mode)
mkdir -p "$even/big-20261106-110000"
printf '%s\n' "$(head -n 1 "$paper/results.csv")" "inc,allreduce,float32,sum,-,16,4194304,1048576,3,4194304.00,1.00,1.88,0" \
    "ring,allreduce,float32,sum,-,16,4194304,1048576,3,8388608.00,0.50,0.94,0" >"$even/big-20261106-110000/results.csv"
printf '%s\n' "commit: '4567def-dirty'" "topology: 1-4-16" "accelerator: 'tcg'" "nranks: 16" >"$even/big-20261106-110000/meta.yaml"
out=$(analysis/plots.sh "$even" 2>&1); rc=$?
check "even rounds: make plots exits 0 ($(tail -n 1 <<<"$out"))" [ $rc = 0 ]
for a in inc ring; do
    got=$(grep -v '^#' "$even/$er/plots/allreduce-$a.dat" 2>/dev/null)
    check "even rounds: allreduce-$a.dat: bytes / median time, min-max of the rows ($got)" [ "$got" = "$(expect_dat "$even/$er" "$a" allreduce)" ]
done
check "even rounds: INC 30 s is 4.47392 MB/s (not 5.04), bars 3.36 - 6.71" \
    grep -q '^128 30 4\.47392 [0-9.]* 3\.36 6\.71 20 40$' "$even/$er/plots/allreduce-inc.dat"
check "even rounds: the seed table's row: 30.0 s next to 4.47 MB/s (35.8 Mbps)" \
    grep -qF '| AllReduce | 128 MiB | 3.4 s | 300.0 | 30.0 s (20.0 s – 40.0 s, 2 rounds) | 35.8 | 4.47 |' "$even/REPORT.md"
check "even rounds: the ceiling is 64 KiB / the median time (2.18 MB/s, not 2.20)" \
    grep -qF -- '- RDMA ceiling (ib_send_bw across the tree, unloaded pair): 2.18 MB/s' "$even/REPORT.md"
check "even rounds: a load average recorded as unknown says so (not -1.00)" \
    grep -qxF -- '  - round 2 from 2026-11-05T10:05:00Z: load average 1.10 before, unknown after, 3.25 % of the CPU stolen' "$even/REPORT.md"
check "a geometric mean over runs of different topologies and rank counts warns of both" \
    grep -qF '**Warning: The geometric mean over ring (host-based, switches route) combines 2 runs made under different conditions:** topology `1-2-4` (even-20261106-100000) vs `1-4-16` (big-20261106-110000); ranks `4` (even-20261106-100000) vs `16` (big-20261106-110000).' "$even/REPORT.md"
# LogGP of the same run (L 100 us, o 40 us, G 0.4 us/B): one line per algorithm and size, the median and min-max
# of its rounds; INC predicted 180 us + 128 MiB x 0.4 us/B = 53.7 s, ring 6 x 180 us + 1.5 x 128 MiB x 0.4 = 80.5 s
check "even rounds: LogGP predicted vs measured: one INC line, median 30 s of 20 - 40 s, 30 / 53.7 = 0.56" \
    sh -c "[ \$(grep -c '^| inc | 128 MiB |' '$even/REPORT.md') = 1 ] &&
        grep -qxF '| inc | 128 MiB | 30.0 s (20.0 s – 40.0 s, 2 rounds) | 53.7 s | 0.56 |' '$even/REPORT.md'"
check "even rounds: ... and one ring line, median 40 s of 30 - 50 s, 40 / 80.5 = 0.50" \
    sh -c "[ \$(grep -c '^| ring | 128 MiB |' '$even/REPORT.md') = 1 ] &&
        grep -qxF '| ring | 128 MiB | 40.0 s (30.0 s – 50.0 s, 2 rounds) | 80.5 s | 0.50 |' '$even/REPORT.md'"

# a row of a round meta.yaml does not have: the run is refused by its file and line
mkdir -p "$tmp/r3/r3-20261106-120000"
cp "$rounds/results.csv" "$tmp/r3/r3-20261106-120000/"
cp "$even/$er/meta.yaml" "$tmp/r3/r3-20261106-120000/"
out=$(analysis/plots.sh "$tmp/r3" 2>&1); rc=$?
check "a results.csv row of round 3 with meta.yaml's rounds: 2 is refused (exit $rc)" \
    said $rc 1 'r3-20261106-120000/results.csv:10: round 3, but meta.yaml says rounds: 2' <<<"$out"

# ---- hostile strings: meta.yaml and run names never run anything through gnuplot, and show as written in REPORT.md ----
evil=$tmp/evil e1=evil-20261107-000000 e2='evil2|x-20261107-000001'
mkdir -p "$evil/$e1" "$evil/$e2"
cp "$paper/results.csv" "$evil/$e1/"
cp "$paper/results.csv" "$evil/$e2/"
cat >"$evil/$e1/meta.yaml" <<EOF
experiment: allreduce
commit: "abc\` | ![x](http://example.invalid/x.png) <b>"
topology: "1-2-4\nsystem(\"touch $tmp/pwned\")"
accelerator: tcg
host_cpu: "CPU | with a pipe\n| injected | row |"
status: "verified\n## heading"
EOF
cat >"$evil/$e2/meta.yaml" <<EOF
commit: "\`x\`|y"
topology: "\n!touch $tmp/pwned2\n#"
accelerator: "tcg\n!touch x"
EOF
out=$(analysis/plots.sh "$evil" 2>&1); rc=$?
check "hostile meta.yaml: make plots exits 0 ($(tail -n 1 <<<"$out"))" [ $rc = 0 ]
check "hostile meta.yaml: a newline in topology runs nothing through gnuplot (system(), !)" \
    sh -c "[ ! -e '$tmp/pwned' ] && [ ! -e '$tmp/pwned2' ] && [ ! -e '$evil/$e2/plots/x' ]"
check "hostile meta.yaml: the title shows the topology on one line" \
    grep -qF "set title 'AllReduce — topology 1-2-4 system(\"touch $tmp/pwned\"), TCG, 4 ranks (run $e1)'" "$evil/$e1/plots/allreduce.gp"
check "hostile meta.yaml: no line of any script starts with what followed a newline" \
    sh -c "! grep -h '^system\|^!' '$evil'/*/plots/*.gp"
erep=$evil/REPORT.md
check "hostile meta.yaml: REPORT.md shows the host CPU with its pipes escaped, on its line" \
    grep -qxF -- '- topology 1-2-4 system("touch '"$tmp"'/pwned"), accelerator tcg, host CPU CPU \| with a pipe \| injected \| row \|' "$erep"
check "hostile meta.yaml: ... no injected table row or heading" sh -c "! grep -q '^| injected\|^## heading' '$erep'"
check "hostile meta.yaml: the status shows as text (# escaped)" grep -qxF -- '- status: verified \#\# heading' "$erep"
check "hostile meta.yaml: a commit with a backtick is one code span (the image inside it is text)" \
    grep -qF -- '- experiment `allreduce`, 2026-11-07T00:00:00Z, commit ``abc` | ![x](http://example.invalid/x.png) <b>``' "$erep"
check "hostile meta.yaml: the warning of the geometric mean quotes both commits as code, the run names escaped" \
    grep -qF 'commit ``abc` | ![x](http://example.invalid/x.png) <b>`` (evil-20261107-000000) vs `` `x`|y `` (evil2\|x-20261107-000001)' "$erep"
check "hostile run name: a | in a table cell escaped, percent-encoded in the chart links" \
    sh -c "grep -qF '| evil2\|x-20261107-000001 | AllReduce | 32 MiB |' '$erep' && grep -qF '](evil2%7Cx-20261107-000001/plots/allreduce-throughput.png)' '$erep'"
nl="run"$'\n'"x-20261107-000000"
mkdir -p "$tmp/nl/$nl"
cp "$paper/results.csv" "$tmp/nl/$nl/"
out=$(analysis/plots.sh "$tmp/nl" 2>&1); rc=$?
check "a run directory named with a newline: left out with a reason, exit 1 ($rc)" \
    said $rc 1 'a run directory whose name holds a control character is not read' <<<"$out"

# ---- hostile runs (tests/analysis/bad/hostile): payloads that run a command if a title is not quoted ----
# Each payload creates a file pwned-* where gnuplot runs. First the control: the titles increport
# wrote, written naively (quotes not doubled) and given to gnuplot, do create them; then make plots
# on the same runs creates none.
hr=$tmp/hostile hn="name'.system('touch pwned-name').'-20261108-000002"
cp -r "$bad/hostile" "$hr" && rm -f "$hr/README.md"
mkdir -p "$hr/$hn" && cp "$paper/results.csv" "$paper/meta.yaml" "$hr/$hn/"
out=$(analysis/plots.sh "$hr" 2>&1); rc=$?
check "hostile runs: make plots exits 0 and draws all 3 ($(tail -n 1 <<<"$out"))" \
    sh -c "[ $rc = 0 ] && [ \$(ls '$hr'/*/plots/allreduce-throughput.png | wc -l) = 3 ]"
pwned=$(find "$hr" "$top" -name 'pwned-*' 2>/dev/null)
check "hostile runs: no payload ran (no pwned-* file: ${pwned:-none})" [ -z "$pwned" ]
ctl=$tmp/naive
mkdir -p "$ctl"
for gp in "$hr"/*/plots/allreduce.gp; do # the titles as a printf-style writer would have put them
    { echo "set terminal svg noenhanced"; echo "set output '$ctl/x.svg'"
      grep '^set title' "$gp" | sed "s/''/'/g"; } >"$ctl/naive.gp"
    (cd "$ctl" && gnuplot naive.gp >/dev/null 2>&1)
done
made=$(cd "$ctl" && ls pwned-* 2>/dev/null | tr '\n' ' ')
check "control: the same titles unquoted make gnuplot run all 3 payloads ($made)" \
    [ "$made" = "pwned-backquote pwned-name pwned-quote " ]
want_q="set title 'AllReduce — topology 1-2-4'' . system(''touch pwned-quote'') . '', TCG, 4 ranks (run quote-20261108-000000)' . \"\\n\" . 'switches vm, commit 0123abc, 2026-11-08T00:00:00Z, 1 round (a run from before rounds)'"
want_b="topology x'' . \`touch pwned-backquote\` . ''@GPVAL_PWD, TCG !TOUCH PWNE,"
want_n="(run name''.system(''touch pwned-name'').''-20261108-000002)'"
check "hostile runs: each title holds its payload as text, in one single-quoted string" \
    bash -c 'grep -qxF "$1" "$4/quote-20261108-000000/plots/allreduce.gp" && grep -qF "$2" "$4/backquote-20261108-000001/plots/allreduce.gp" &&
        grep -qF "$3" "$4/$5/plots/allreduce.gp"' _ "$want_q" "$want_b" "$want_n" "$hr" "$hn"

# make plots takes RESULTS from the environment: a value with shell syntax is a (missing) directory, never a command
out=$(make -s --no-print-directory -C "$top" BUILD="$build" plots RESULTS="$tmp/none; touch $tmp/pwned-make" 2>&1); rc=$?
check "make plots RESULTS='DIR; touch ...': fails naming that directory, runs nothing (got $rc)" \
    bash -c '[ "$1" != 0 ] && grep -qF "no results directory '"'"'$3/none; touch $3/pwned-make'"'"'" <<<"$2" && [ ! -e "$3/pwned-make" ]' _ "$rc" "$out" "$tmp"

# ---- nothing to read -------------------------------------------------------------------------
out=$(analysis/plots.sh "$tmp/none" 2>&1); rc=$?
check "no results directory: exit 2 with a reason ($out)" said $rc 2 'no results directory' <<<"$out"
mkdir "$tmp/empty"
out=$(analysis/plots.sh "$tmp/empty" 2>&1); rc=$?
check "an empty results directory: exit 0, says there are no runs" said $rc 0 'no runs in' <<<"$out"

harness_end
