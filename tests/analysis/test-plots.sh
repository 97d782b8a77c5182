#!/usr/bin/env bash
# test-plots.sh — the analysis tools (analysis/increport.c, analysis/plots.sh)
# on checked-in results (tests/analysis/samples: a paper run and a sweep run
# from before rounds (results.csv without the round column), the sweep with
# loggp.csv and a row with wrong elements; a run of 3 rounds with both
# ceilings, barriers and its conditions in meta.yaml) and broken files
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
collective.csv|collective.csv:2: collective 'gatherall' is not
algbw.csv|algbw.csv:2: algbw_MBps 2.00 is not bytes / time_us = 1.00
elements.csv|elements.csv:2: elements 1000 does not match bytes 1048576
root.csv|root.csv:2: root '4' is not a rank of 0..3
quoted.csv|quoted.csv:2: quoted fields are not part of this format
wrong.csv|wrong.csv:3: wrong 'many' is not a whole number
loggp-measure.csv|loggp-measure.csv:3: measure 'latency' is not half_rtt, gap, cpu_send, cpu_recv, cpu_send_batch, cpu_swap, cpu_copy, cpu_sum, cpu_send_uc, cpu_recv_uc, cpu_send_signaled, cpu_waited_send, cpu_waited_recv, cpu_pair_send, cpu_pair_recv, cpu_pair_waited_send, cpu_pair_waited_recv, intr_pair_send, intr_pair_recv, intr_pair_waited_send, intr_pair_waited_recv or cpu_empty_recv
loggp-intr.csv|loggp-intr.csv:3: value_us 'many' is not a number
loggp-pair-size.csv|loggp-pair-size.csv:3: cpu_pair_waited_recv at 8 B: o_w's pairs are measured at 16384 B (the ring's message)
round.csv|round.csv:3: round '21' is not a whole number 1..20
round-zero.csv|round-zero.csv:2: round '0' is not a whole number 1..20
round-missing.csv|round-missing.csv:2: 13 fields, not 14
time-max.csv|time-max.csv:3: time_max_us 'slow' is not a time > 0 or -
time-max-below.csv|time-max-below.csv:2: time_max_us 90.00 is below time_us 100.00: the slowest rank cannot be faster than rank 0
cpuwin-role.csv|cpuwin-role.csv:3: role 'qemu' is not host, switch or machine
cpuwin-machine-pid.csv|cpuwin-machine-pid.csv:3: pid '5' is not a PID (1..2^31-1; 0 for the machine, which alone has 0)
cpuwin-host-pid0.csv|cpuwin-host-pid0.csv:2: pid '0' is not a PID (1..2^31-1; 0 for the machine, which alone has 0)
cpuwin-machine-twice.csv|cpuwin-machine-twice.csv:4: a second machine line for inc allreduce 1048576 B round 1
cpuwin-hosts.csv|cpuwin-hosts.csv:67: more than 65 hosts in one measurement
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

# ---- charts people read: checked from the scripts and SVGs make plots wrote ------------------------
# gp_lint GP — one line per problem of a gnuplot script: the grid not light grey and dotted; a plot element
# without a key entry, other than a ceiling drawn behind the data whose entry is a NaN line of its style;
# a ceiling not thick (lw >= 2), not dashed, grey or the grid's colour, or without its own label naming its
# value; an axis label without a unit (the x axis of categories excepted); a title without the run's
# conditions; a key not below the x label with a bottom margin for the tic labels, the x label, a gap and
# every entry (4 + entries, + 1 for two-line tic labels, character heights).
gp_lint() {
    awk '
    function grey(c,   r, g, b) { r = substr(c, 2, 2); g = substr(c, 4, 2); b = substr(c, 6, 2); return r == g && g == b }
    function light(c,   i) { for (i = 2; i <= 6; i += 2) if (index("0123456789ab", tolower(substr(c, i, 1))) && tolower(substr(c, i, 1)) < "b") return 0; return 1 }
    function colour(s) { return match(s, /rgb .#[0-9a-fA-F]+/) ? substr(s, RSTART + 5, RLENGTH - 5) : "" }
    function bad(what) { print FILENAME ":" FNR ": " what }
    /^set grid/ && !/noxtics/ { grid = colour($0); if (grid == "" || !grey(grid) || !light(grid) || $0 !~ / dt [0-9]/) bad("grid not light grey and dotted: " $0) }
    /^set label/ { if (match($0, /\047[^\047]* [0-9.]+ MB\/s\047/)) { t = substr($0, RSTART, RLENGTH); sub(/ MB\/s\047$/, "", t); sub(/.* /, "", t); labels[sprintf("%.2f", t)] = 1 } }
    /^unset label/ { delete labels }
    /^set bmargin/ { margin = $3 }
    /^set key below/ { key = 1 } /^unset key/ { key = 0 }
    /^set xtics/ || /xtic\(strcol/ { } 
    /^set ylabel/ && !/\(.*\)/ { bad("y axis without a unit: " $0) }
    /^set xlabel \047/ && !/\(.*\)/ && !/^set xlabel .algorithm.$/ { bad("x axis without a unit: " $0) }
    /^set title/ && !(/switches / && /commit / && / round/) { bad("title without the run conditions: " $0) }
    /^plot / {
        line = $0; s = $0; n = 0
        gsub(/\047[^\047]*\047/, "Q", s); gsub(/"[^"]*"/, "Q", s)
        while (gsub(/\([^()]*\)/, "P", s)) ;
        k = split(substr(s, 6), el, ",")
        for (i = 1; i <= k; i++) {
            if (el[i] ~ / notitle$/) {
                if (!match(el[i], /^ *[0-9.e+-]+ with lines /)) { bad("an element without a key entry: " el[i]); continue }
                v = el[i]; sub(/^ */, "", v); sub(/ .*/, "", v)
                at = index(line, "plot " v " with lines "); if (!at) at = index(line, ", " v " with lines ")
                st = substr(line, at); sub(/^(plot|,) [^ ]+ with lines /, "", st); sub(/ notitle.*/, "", st)
                c = colour(st)
                if (st !~ /lw [2-9]/ || st !~ /dt [2-9]/ || c == "" || c == grid || grey(c)) bad("ceiling " v " not thick, dashed and coloured: " st)
                if (!(sprintf("%.2f", v) in labels)) bad("ceiling " v " without its own label")
                if (index(line, "NaN with lines " st " title ") == 0) bad("ceiling " v " without its key entry")
            } else if (el[i] ~ / title /) n++
            else bad("an element without a key entry: " el[i])
        }
        tics = index(line, "xtic(strcol(1) . \"\\n\"") ? 2 : 1
        if (n && (!key || margin < 3 + tics + n)) bad(sprintf("key of %d entries: not below the x label, or bottom margin %s < %d", n, margin, 3 + tics + n))
    }' "$1"
}
# svg_overprint SVG — the texts (key entries, tic labels) set within 12 units (1.2 lines of the 10 pt font)
# of the line of the x axis label, which is the text equal to the script's xlabel
svg_overprint() {
    awk -v labels="$(sed -n "s/^set xlabel '\(.*\)'.*/\1/p" "$2" | sort -u | tr '\n' '\t')" '
    BEGIN { n = split(labels, l, "\t"); for (i = 1; i <= n; i++) if (l[i] != "") xl[l[i]] = 1 }
    /translate\(/ { match($0, /translate\([0-9.]+,[0-9.]+\)/); split(substr($0, RSTART + 10, RLENGTH - 11), p, ","); y = p[2] }
    /<text>/ { t = $0; sub(/.*<text>/, "", t); sub(/<\/text>.*/, "", t); k++; ty[k] = y; tx[k] = t; if (t in xl) xy = y }
    END { if (xy == "") { print "no x label in the SVG"; exit }
        for (i = 1; i <= k; i++) if (!(tx[i] in xl) && ty[i] - xy < 12 && xy - ty[i] < 12) print "over the x label: " tx[i] }' "$1"
}
# controls: the layout make plots wrote before (key below alone, the busy-poll ceiling a thin grey dotted
# line like the grid, no conditions in the title) fails both checks
ctl=$tmp/layout && mkdir -p "$ctl" && cp "$rounds"/plots/allreduce-*.dat "$ctl/"
cat >"$ctl/old.gp" <<'OLD'
set grid
set key below
set logscale x 2
set xrange [64:256]
set xlabel 'message size per rank (MiB)'
set title 'AllReduce — topology 1-2-4, TCG, 4 ranks (run rounds-20261105-100000)'
set ylabel 'algorithm bandwidth (MB/s = 10^6 B/s)'
set terminal svg size 960,600 dynamic font 'sans,10' noenhanced
set output 'old.svg'
plot 'allreduce-inc.dat' using 1:3:5:6 with yerrorlines lw 2 title 'INC (aggregated in the switches) (median, min-max)', 'allreduce-ring.dat' using 1:3:5:6 with yerrorlines lw 2 title 'ring (host-based, switches route) (median, min-max)', 1.2 with lines dt 4 lc 'dark-red' title 'same-load ceiling per host, every host ib_send_bw -b -e at once (1.20 MB/s)', 2.4 with lines dt 2 lc 'black' title 'RDMA ceiling, ib_send_bw -e across the tree (2.40 MB/s)', 1.8 with lines dt 3 lc 'gray' notitle
OLD
(cd "$ctl" && gnuplot old.gp 2>/dev/null)
lint=$(gp_lint "$ctl/old.gp")
check "control: gp_lint finds the old layout's grid, key margin, unlabelled grey ceiling and title ($(wc -l <<<"$lint") problems)" \
    sh -c "grep -q 'grid not light' <<'X' && grep -q 'bottom margin' <<'X2' && grep -q 'ceiling 1.8 not thick' <<'X3' && grep -q 'title without' <<'X4'
$lint
X
$lint
X2
$lint
X3
$lint
X4"
check "control: the old layout's SVG has key entries on the x label's line ($(svg_overprint "$ctl/old.svg" "$ctl/old.gp" | head -n 1))" \
    [ -n "$(svg_overprint "$ctl/old.svg" "$ctl/old.gp")" ]
# every script and chart make plots wrote
for gp in "$res"/*/plots/*.gp; do
    lint=$(gp_lint "$gp")
    check "$(basename "$(dirname "$(dirname "$gp")")")/$(basename "$gp"): every line labelled, units, ceilings distinct from the grid, key below the x label${lint:+: $lint}" [ -z "$lint" ]
done
for svg in "$res"/*/plots/*.svg; do
    gp=$(dirname "$svg")/$(basename "$svg" .svg | sed 's/-\(throughput\|time\|fit\|allreduce\)$//').gp
    [ "$(basename "$svg")" = loggp-allreduce.svg ] && gp=$(dirname "$svg")/loggp.gp
    over=$(svg_overprint "$svg" "$gp")
    check "$(basename "$(dirname "$(dirname "$svg")")")/$(basename "$svg"): nothing on the x label's line${over:+: $over}" [ -z "$over" ]
done
# min-max bars where a size ran several rounds (the rounds run: 3 rows of each algorithm and size), none with one
n3=$(awk -F, '$1 == "inc" && $2 == "allreduce" && $7 == 134217728' "$rounds/results.csv" | wc -l)
check "rounds: both algorithms drawn with min-max bars, said to be medians of $n3 rounds (throughput and time)" \
    [ "$(grep -o "'allreduce-\(inc\|ring\).dat' using 1:[23]:[57]:[68] with yerrorlines[^']*'[^']*' title '[^']*median of $n3 rounds, bars min – max'" "$rounds/plots/allreduce.gp" | wc -l)" = 4 ]
check "rounds: the barrier chart has min-max bars of the $n3 rounds" \
    grep -qF "'' using 0:2:3:4 with yerrorbars lw 2 pt 0 lc rgb 'black' title 'min – max of up to $n3 rounds'" "$rounds/plots/barrier.gp"
check "rounds: the summary draws histogram error bars from each algorithm's min and max columns" \
    sh -c "grep -qx 'set style histogram errorbars gap 1 lw 1.5' '$rounds/plots/summary.gp' && grep -qF \"'summary.dat' using 3:4:5:xtic\" '$rounds/plots/summary.gp' && grep -qF \"'summary.dat' using 6:7:8 \" '$rounds/plots/summary.gp'"
check "paper and sweep (one round each): no error bars, every line says one round" \
    sh -c "! grep -l 'yerror\|errorbars' '$paper'/plots/*.gp '$sweep'/plots/*.gp && grep -q '(one round)' '$paper/plots/allreduce.gp'"
# the ceilings: their own label at their median (from results.csv and meta.yaml), each its own style
m3() { awk -F, -v a="$1" '$1 == a { print $11 }' "$rounds/results.csv" | sort -n | awk 'NR == 2 { printf "%.2f", $1 }'; }
poll=$(sed -n 's/^ceiling_busy_poll_MBps: //p' "$rounds/meta.yaml")
for spec in "RDMA|$(m3 ceiling)|dt 2" "same load|$(m3 ceiling-load)|dt 4" "busy poll|$(printf %.2f "$poll")|dt 5"; do
    IFS='|' read -r what v dt <<<"$spec"
    check "rounds: the $what ceiling is labelled in the right margin ($v MB/s) and is its own $dt line" \
        sh -c "grep -q \"^set label [0-9] '$what $v MB/s' at graph 1, graph [01].[0-9]* offset 1,0 left \" '$rounds/plots/allreduce.gp' &&
            grep -q \"$(awk -v v="$v" 'BEGIN {printf "%g", v}') with lines lw 3 $dt \" '$rounds/plots/allreduce.gp'"
done
# labels_apart GP — the 3 ceilings' labels outside the plot (an opaque one inside hid a bar), in a right margin
# as wide as the longest, in the order of their values and at least 0.05 of the plot's height apart
labels_apart() {
    awk -F"'" '/^set label [0-9] / { n++; v[n] = $2; sub(/ MB\/s$/, "", v[n]); sub(/.* /, "", v[n]); w = length($2) > w ? length($2) : w
            split($3, a, "graph "); y[n] = a[3] + 0; if ($3 !~ /^ at graph 1, graph [0-9.]+ offset 1,0 left /) bad = 1 }
        /^set rmargin [0-9]/ { m = $0; sub(/.* /, "", m) }
        END { if (n != 3 || bad || m < w) exit 1
            for (i = 1; i <= n; i++) for (j = 1; j <= n; j++) if (i != j && v[i] + 0 < v[j] + 0 && (y[j] - y[i] < 0.0499)) exit 1 }' "$1"
}
for gp in "$rounds/plots/allreduce.gp" "$rounds/plots/summary.gp"; do
    check "rounds: $(basename "$gp"): the 3 ceilings' labels in the right margin, in order, never on each other" labels_apart "$gp"
done
# ceilings 0.05 MB/s apart (the busy-poll one moved next to the RDMA ceiling's 2.40): labels still apart
close=$tmp/close && mkdir -p "$close" && cp -r "$rounds" "$close/"
sed -i 's/^ceiling_busy_poll_MBps: .*/ceiling_busy_poll_MBps: 2.35/' "$close/$(basename "$rounds")/meta.yaml"
"$increport" plots "$close" >/dev/null 2>&1
both_apart() { labels_apart "$1/plots/summary.gp" && labels_apart "$1/plots/allreduce.gp"; }
check "ceilings 0.05 MB/s apart: their labels still in order and apart (summary and throughput)" \
    both_apart "$close/$(basename "$rounds")"
# one summary chart per run: INC next to every baseline the run measured, and every ceiling it measured
for run in "$paper" "$sweep" "$rounds"; do
    algs=$(awk -F, 'NR > 1 && $13 == 0 && $2 != "p2p" && $2 != "barrier" && $1 ~ /^(inc|ring|mpi-tcp|mpi-ucx)$/ {print $1}' "$run/results.csv" | sort -u)
    ceils=$(awk -F, '$1 ~ /^ceiling/ {print $1}' "$run/results.csv" | sort -u; grep -q '^ceiling_busy_poll_MBps' "$run/meta.yaml" && echo poll)
    got=$(sed -n 's/^# collective size then per algorithm median min max algbw_MBps (run [^)]*)://p' "$run/plots/summary.dat" | tr ' ' '\n' | grep . | sort)
    check "$(basename "$run"): summary.dat has a column of each algorithm measured ($(echo $algs))" [ "$got" = "$algs" ]
    want=$(for c in $ceils; do case $c in ceiling) echo 'RDMA ceiling: ib_send_bw';; ceiling-load) echo 'same-load ceiling per host';; poll) echo 'RDMA ceiling with busy polling';; esac; done | sort)
    have=$(grep -o "NaN with lines [^']*'[^']*'[^']*title '\(RDMA ceiling: ib_send_bw\|same-load ceiling per host\|RDMA ceiling with busy polling\)" "$run/plots/summary.gp" | sed "s/.*title '//" | sort)
    check "$(basename "$run"): the summary chart draws every ceiling the run measured ($(echo $ceils))" [ "$have" = "$want" ]
done
# summary.dat's figures: per collective and size, each algorithm's median bandwidth, min and max (the same as its chart data)
exp=$(for c in allreduce reduce broadcast; do
    for a in inc ring mpi-tcp mpi-ucx; do expect_dat "$sweep" "$a" "$c" | awk -v a="$a" -v c="$c" '{print c, $1, a, $3, $5, $6}'; done; done |
    awk -v algs="$(sed -n 's/^# collective size then.*)://p' "$sweep/plots/summary.dat")" '
    BEGIN { n = split(algs, al, " "); split("allreduce AllReduce reduce Reduce broadcast Broadcast", t, " "); for (i = 1; i < 6; i += 2) title[t[i]] = t[i + 1] }
    { v[$1 " " $2 " " $3] = $4 " " $5 " " $6; if (!(($1 " " $2) in seen)) { seen[$1 " " $2] = 1; key[++k] = $1 " " $2 } }
    END { for (j = 1; j <= k; j++) { split(key[j], q, " "); line = sprintf("%s \"%s MiB\"", title[q[1]], q[2])
        for (i = 1; i <= n; i++) line = line " " ((key[j] " " al[i]) in v ? v[key[j] " " al[i]] : "- - -"); print line } }')
check "sweep: summary.dat holds each algorithm's median and min-max MB/s per collective and size, - where not measured" \
    [ "$(grep -v '^#' "$sweep/plots/summary.dat")" = "$exp" ]
# chart titles: the run's conditions from meta.yaml
cond="switches vm, commit $(sed -n "s/^commit: '\(.*\)'/\1/p" "$rounds/meta.yaml"), $(sed -n 's/^date: //p' "$rounds/meta.yaml"), 3 rounds: medians, bars min – max"
check "rounds: every chart title's second line gives its conditions ($cond)" \
    [ "$(grep -c "^set title .* \. \"\\\\n\" \. '$cond'\$" "$rounds"/plots/*.gp | awk -F: '{s += $2} END {print s}')" = "$(grep -c '^set title' "$rounds"/plots/*.gp | awk -F: '{s += $2} END {print s}')" ]

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
# the sample's loggp.csv: CPU per 8 B message send 29/30/31.5 us, receive 48/50/52.5 (medians 30, 50), 32 per
# post -3/20/21 (median 20: a negative difference is read, and outvoted); per 65544 B message 30 + 65536 x 0.2
# and 50 + 65536 x 0.2; half round trip 183.6 us at 8 B, so L = 183.6 - (30 + 50) = 103.6 us
check "REPORT: model parameters of the sweep run measured (o_s 30, o_r 50, o 40, o_sb 20, G_s = G_r = 0.2 us/B, L 103.6)" \
    sh -c "grep -qF '| o_s | 30.0 us |' '$rep' && grep -qF '| o_r | 50.0 us |' '$rep' && grep -qF '| o | 40.0 us |' '$rep' &&
        grep -qF '| o_sb | 20.0 us |' '$rep' && grep -qF '| G_s | 0.20000 us/B |' '$rep' && grep -qF '| G_r | 0.20000 us/B |' '$rep' &&
        grep -qF '| L | 103.6 us | half a ping-pong of 8 B (ib_send_lat, 183.6 us) - 2o |' '$rep' && grep -qF '| C | 2 |' '$rep'"
# INC AllReduce of 1 MiB on 1-2-4, C = 2: 1024 packets, 65 messages (packet 0, then 64 of 16); a host sends
# 65 x 20 + 1048576 x 0.2 = 211015.2 us and receives 65 x 50 + 1048576 x 0.2 = 212965.2; four hosts' 1695921.6
# over 2 cores = 847960.8 us, above one host's 423980.4; + a step: the run's INC Barrier, the median of
# 1500, 1700, 1400 us = 1500: 849460.8 us; measured 1.2 s: -26 %
# the sample's cpu.csv: during that measurement (4 collectives, 2 s) the hosts used 4 x 0.5 s, the switches
# 3 x 0.1 s, the machine 3.3 s: the rest of it 1 s in 2 s, 0.5 cores; the lab had 1.5: 1695921.6 / 1.5 + 1500
# = 1132114 us, -2 % of 1154430; the busiest host 0.5 s / 4 = 125 ms a collective, all 2.3 s / 4 / 1.5 = 383.3 ms
check "REPORT: the model's 1 MiB INC AllReduce on the 1.5 cores left to the lab (1.1 s, -2 %; 849.5 ms, -26 % on 2)" \
    grep -qF '| AllReduce | inc | 1 MiB | 1.2 s | 1.1 s | -2 % | 1.50 (2 - 0.50 others) | - | W / C | 424.0 ms | 1.1 s | 1.5 ms | 849.5 ms (-26 %) | 125.0 ms, 383.3 ms |' "$rep"
check "REPORT: a size without cpu.csv rows: on all 2 cores (2 MiB INC AllReduce, 1.7 s)" \
    grep -qF '| AllReduce | inc | 2 MiB | 2.3 s | 1.7 s | -26 % **miss** | 2 | - | W / C |' "$rep"
# the machine's speed: loggp.sh's float sum took 200 ms a pass over 16 MiB, the probe before the 1 MiB INC
# AllReduce 300 ms: 1.5 times slower, shown beside the prediction, which it leaves as it was (-2 %)
sp=$tmp/speed && mkdir -p "$sp" && cp -r "$sweep" "$sp/"
echo 'cpu_sum,16777216,8,200000' >>"$sp/$(basename "$sweep")/loggp.csv"
echo 'inc,allreduce,1048576,1,4,pku1,probe,300000,2000000' >>"$sp/$(basename "$sweep")/cpu.csv"
"$increport" plots "$sp" >/dev/null 2>"$tmp/speed.err"
check "REPORT: the machine 1.5 times slower before the 1 MiB INC AllReduce (its probe over loggp.sh's float sum): shown, the prediction as before ($(head -c 200 "$tmp/speed.err"))" \
    sh -c "grep -qF '| AllReduce | inc | 1 MiB | 1.2 s | 1.1 s | -2 % | 1.50 (2 - 0.50 others) | 1.50 | W / C | 424.0 ms | 1.1 s | 1.5 ms | 849.5 ms (-26 %) |' '$sp/REPORT.md' &&
        grep -qF '| AllReduce | inc | 2 MiB | 2.3 s | 1.7 s | -26 % **miss** | 2 | - | W / C |' '$sp/REPORT.md' &&
        grep -qF '| speed | 200.0 ms a pass | the machine' '$sp/REPORT.md'"
# the run's probes: that one of 1.5 alone is not applied (fewer than 3: said); with the ring's 1 MiB probes of
# rounds 1 and 2, 240 and 260 ms (1.2, 1.3), their median 1.3 scales every host's work: the INC AllReduce's
# 1695921.6 us x 1.3 = 2204698.08 over 1.5 cores + 1500 = 1471298.7 us (+27 % of 1154430; on 2 cores 1103849,
# -4 %), W_max 424.0 x 1.3 = 551.2 ms
check "REPORT: one probe not applied, said" grep -qF 'probes in the run: 1, and the hosts'"'"' work is scaled by their median from 3 on' "$sp/REPORT.md"
printf 'ring,allreduce,1048576,1,4,pku1,probe,240000,2000000\nring,allreduce,1048576,2,4,pku1,probe,260000,2000000\n' >>"$sp/$(basename "$sweep")/cpu.csv"
"$increport" plots "$sp" >/dev/null 2>"$tmp/speed.err"
check "REPORT: the median of the run's 3 probes (1.30) scales the hosts' work: 1 MiB INC AllReduce 1.5 s, +27 % ($(head -c 200 "$tmp/speed.err"))" \
    sh -c "grep -qF '| AllReduce | inc | 1 MiB | 1.2 s | 1.5 s | +27 % **miss** | 1.50 (2 - 0.50 others) | 1.50 | W / C | 551.2 ms | 1.5 s | 1.5 ms | 1.1 s (-4 %) |' '$sp/REPORT.md' &&
        grep -qF '| speed | 200.0 ms a pass; the run 1.30 (1.20 - 1.50) | the machine' '$sp/REPORT.md' && grep -qF 'Applied: the median of the run'\''s 3 probes' '$sp/REPORT.md'"
check "REPORT: without loggp.sh's float sum over 16 MiB no speed reference, said" \
    grep -qF '| speed | - | no reference (loggp.csv without cpu_sum over 16 MiB)' "$rep"
# a step from the run's Barriers: INC's median 1500 us; the ring's median 4500 us over its 2(P-1) = 6 steps
check "REPORT: a step is the run's Barrier (INC 1.5 ms, the ring's 4.5 ms / 6)" \
    sh -c "grep -qF '| step (INC) | 1.5 ms | the run'\''s INC Barrier (median)' '$rep' &&
        grep -qF '| step (ring) | 0.8 ms | the run'\''s ring Barrier (median) over its 2(P-1) = 6 steps' '$rep'"
# the sample's switch.csv: during that measurement (4 collectives) sw1 timed out 6 times, sw2 twice: 2 a collective
check "REPORT: the switches' retransmit timeouts per collective from switch.csv (2.0; '-' without rows)" \
    sh -c "grep -qF '| 125.0 ms, 383.3 ms | 2.0 |' '$rep' && grep -qF '| 2 | - | W / C | 847.9 ms | 1.7 s | 1.5 ms | 1.7 s (-26 %) | - | - |' '$rep'"
bs=$tmp/badswitch && mkdir -p "$bs" && cp -r "$sweep" "$bs/"
printf 'inc,allreduce,1048576,1,4,sw1,timeouts,6;touch x\n' >>"$bs/$(basename "$sweep")/switch.csv"
"$increport" plots "$bs" 2>"$tmp/badswitch.err" >/dev/null
check "a switch.csv line that is not 'name,...,whole number': said with its line, the run still modelled, no column ($(cat "$tmp/badswitch.err"))" \
    sh -c "grep -qF 'switch.csv:6: not' '$tmp/badswitch.err' && grep -qF '| 125.0 ms, 383.3 ms | - |' '$bs/REPORT.md'"
# the sample's rxe.csv: INC 1 MiB, the hosts' 600 + 200 + 400 + 400 interrupts over 4 x 4000 packets = 0.100;
# the ring's 1 MiB in two rounds, 800 / 4000 and 1600 / 4000: the median of 0.2 and 0.4
check "REPORT: the hosts' interrupts per packet from rxe.csv (0.100; the ring's median of two rounds 0.300; '-' without rows)" \
    sh -c "grep -qF '| 125.0 ms, 383.3 ms | 2.0 | 0.100 |' '$rep' && grep -qF '| 636.8 ms | 1.3 s | 4.5 ms | 1.3 s (+85 %) | - | - | 0.300 |' '$rep' &&
        grep -qF '| 847.9 ms | 1.7 s | 1.5 ms | 1.7 s (-26 %) | - | - | - |' '$rep'"
bx=$tmp/badrxe && mkdir -p "$bx" && cp -r "$sweep" "$bx/"
printf 'inc,allreduce,1048576,1,4,pku1,guest_intr,-3\n' >>"$bx/$(basename "$sweep")/rxe.csv"
"$increport" plots "$bx" 2>"$tmp/badrxe.err" >/dev/null
check "an rxe.csv line that is not 'name,...,whole number': said with its line, the run still modelled, no column ($(cat "$tmp/badrxe.err"))" \
    sh -c "grep -qF 'rxe.csv:27: not' '$tmp/badrxe.err' && grep -qF '| 125.0 ms, 383.3 ms | 2.0 | - |' '$bx/REPORT.md'"
# the interrupts inside the timed calls (rxe.csv's timed_intr, timed_pkts; 3 calls): 4 x 900 over 4 x 3000 = 0.300
# beside the whole run's 0.100; a timed count that is not one refused with its line as the others
ti=$tmp/timedintr && mkdir -p "$ti" && cp -r "$sweep" "$ti/"
for h in pku1 pku2 pku3 pku4; do
    printf 'inc,allreduce,1048576,1,3,%s,timed_intr,900\ninc,allreduce,1048576,1,3,%s,timed_pkts,3000\n' "$h" "$h"
done >>"$ti/$(basename "$sweep")/rxe.csv"
"$increport" plots "$ti" 2>"$tmp/timedintr.err" >/dev/null
check "REPORT: the interrupts per packet inside the timed calls beside the whole run's (0.100 (calls 0.300)), the ring's without them ($(head -c 200 "$tmp/timedintr.err"))" \
    sh -c "grep -qF '| 125.0 ms, 383.3 ms | 2.0 | 0.100 (calls 0.300) | - |' '$ti/REPORT.md' && grep -qF '| - | - | 0.300 | - |' '$ti/REPORT.md' &&
        grep -qF '(calls X): the same inside the timed calls only' '$ti/REPORT.md' && [ ! -s '$tmp/timedintr.err' ]"
printf 'inc,allreduce,1048576,1,3,pku1,timed_intr,-1\n' >>"$ti/$(basename "$sweep")/rxe.csv"
"$increport" plots "$ti" 2>"$tmp/timedintr.err" >/dev/null
check "an rxe.csv timed count of -1 (inccl_perf could not read it: exp.sh writes none): said with its line, no column ($(head -c 200 "$tmp/timedintr.err"))" \
    sh -c "grep -qF 'rxe.csv:35: not' '$tmp/timedintr.err' && grep -qF '| 125.0 ms, 383.3 ms | 2.0 | - |' '$ti/REPORT.md'"
# cpuwin.csv (the CPU inside the timed calls): INC AllReduce of 1 MiB, 3 calls, on the 1.5 cores left to the lab:
# the busiest host 450 ms / 3 = 150 ms +- 60 / 3 = 20 ms; all five processes 1470 ms / 3 / 1.5 = 326.7 ms
# +- 270 / 3 / 1.5 = 60 ms; offsets +- 12 ms. A measurement without rows gets '-'; a run without the file no column
cw=$tmp/cpuwin && mkdir -p "$cw" && cp -r "$sweep" "$cw/"
cat >"$cw/$(basename "$sweep")/cpuwin.csv" <<'CW'
algorithm,collective,bytes,round,calls,node,role,pid,cpu_us,span_us,bound_us,offset_us
inc,allreduce,1048576,1,3,pku1,host,2101,300000,1200000,60000,12000
inc,allreduce,1048576,1,3,pku2,host,2102,450000,1200000,60000,12000
inc,allreduce,1048576,1,3,pku3,host,2103,360000,1200000,60000,12000
inc,allreduce,1048576,1,3,pku4,host,2104,330000,1200000,60000,12000
inc,allreduce,1048576,1,3,sw0,switch,2105,30000,1200000,30000,12000
CW
"$increport" plots "$cw" >/dev/null 2>"$tmp/cpuwin.err"
check "REPORT: the CPU inside the timed calls from cpuwin.csv (150 ms +- 20 ms, 326.7 ms +- 60 ms, offsets +- 12 ms; '-' without rows) ($(head -c 200 "$tmp/cpuwin.err"))" \
    sh -c "grep -qF '| 125.0 ms, 383.3 ms | 2.0 | 0.100 | - | 150.0 ms ± 20.0 ms, 326.7 ms ± 60.0 ms (± 12.0 ms) |' '$cw/REPORT.md' &&
        grep -qF '| 847.9 ms | 1.7 s | 1.5 ms | 1.7 s (-26 %) | - | - | - | - | - |' '$cw/REPORT.md' &&
        grep -qF 'CPU inside the timed calls per collective: busiest host, all / C (clock offset) |' '$cw/REPORT.md'"
# each host's work in the model (INC AllReduce of 1 MiB: 424.0 ms each, the same loggp.csv) against its own line
# of cpuwin.csv per call (300, 450, 360, 330 ms over 3 calls), in rank order
check "REPORT: each host's model work against its CPU inside the calls (pku1: 424.0 ms / 100.0 ms, +324 %; pku2 +183 %)" \
    grep -qF '| AllReduce | inc | 1 MiB | pku1: 424.0 ms / 100.0 ms (+324 %) | pku2: 424.0 ms / 150.0 ms (+183 %) | pku3: 424.0 ms / 120.0 ms (+253 %) | pku4: 424.0 ms / 110.0 ms (+285 %) |' "$cw/REPORT.md"
# the cores the lab's processes kept busy inside the calls: their 1470 ms over the windows' 1200 ms, of C = 1.5
check "REPORT: the cores busy inside the calls (1.23 of 1.50, 82 %)" \
    grep -qF '| 150.0 ms ± 20.0 ms, 326.7 ms ± 60.0 ms (± 12.0 ms) | 1.23 of 1.50 (82 %) |' "$cw/REPORT.md"
check "REPORT: no per-host table without cpuwin.csv" sh -c "! grep -q \"Each host's work in the model\" '$rep'"
check "REPORT: a run without cpuwin.csv has no such column" sh -c "! grep -q 'CPU inside the timed calls' '$rep'"
# the machine's line: 1470 ms of the processes + 0.3 cores x 1.2 s of other work inside the calls = 1830 ms:
# C = 2 - 0.30 = 1.70 in place of cpu.csv's 1.5 (its others, 0.5, counted the tool's start-up), all / C
# 1470 / 3 / 1.7 = 288.2 ms +- 270 / 3 / 1.7 = 52.9 ms; a machine busier than the processes by nothing: C = 2
cm=$tmp/cpuwin-machine && mkdir -p "$cm" && cp -r "$cw/$(basename "$sweep")" "$cm/"
printf 'inc,allreduce,1048576,1,3,machine,machine,0,1830000,1200000,2000,12000\n' >>"$cm/$(basename "$sweep")/cpuwin.csv"
"$increport" plots "$cm" >/dev/null 2>"$tmp/cpuwin-machine.err"
check "REPORT: C from the machine's line inside the calls (1.70 = 2 - 0.30; 288.2 ms +- 52.9 ms) ($(head -c 200 "$tmp/cpuwin-machine.err"))" \
    sh -c "grep -qF '| 1.70 (2 - 0.30 others in the calls) |' '$cm/REPORT.md' &&
        grep -qF '| 150.0 ms ± 20.0 ms, 288.2 ms ± 52.9 ms (± 12.0 ms) |' '$cm/REPORT.md' &&
        grep -qF 'used inside the timed calls (cpuwin.csv' '$cm/REPORT.md'"
sed -i 's/^inc,allreduce,1048576,1,3,machine,machine,0,1830000,/inc,allreduce,1048576,1,3,machine,machine,0,1400000,/' "$cm/$(basename "$sweep")/cpuwin.csv"
"$increport" plots "$cm" >/dev/null 2>"$tmp/cpuwin-machine.err"
check "REPORT: a machine's line below its processes' (tick rounding): nothing else ran, C = 2 - 0 ($(head -c 200 "$tmp/cpuwin-machine.err"))" \
    sh -c "grep -qF '| 2.00 (2 - 0.00 others in the calls) |' '$cm/REPORT.md' && grep -qF ', 245.0 ms ± 45.0 ms (± 12.0 ms) |' '$cm/REPORT.md'"
printf 'inc,allreduce,1048576,1,3,sw1,switch,2106,-4,1200000,30000,12000\n' >>"$cw/$(basename "$sweep")/cpuwin.csv"
"$increport" plots "$cw" >/dev/null 2>"$tmp/cpuwin.err"; rc=$?
check "a cpuwin.csv line with a negative CPU: said with its line, exit $rc, the run still modelled, no column ($(cat "$tmp/cpuwin.err"))" \
    sh -c "[ $rc = 1 ] && grep -qF \"cpuwin.csv:7: cpu_us '-4' is not a number of us >= 0\" '$tmp/cpuwin.err' &&
        grep -qF '| 125.0 ms, 383.3 ms | 2.0 | 0.100 |' '$cw/REPORT.md' && ! grep -q 'CPU inside the timed calls' '$cw/REPORT.md'"
# the 16 KiB ping-pong on events (o_w): per round trip 1150 and 1250 us against the 16 KiB stream's send 100 and
# receive 150: o_w = 1200 - 250 = 950 us; the ring AllReduce of 1 MiB on 4 ranks waits for 2P - 3 = 5 of each
# round's 6 pieces of 16 KiB, 16 rounds: 80 x 950 us = 76 ms more for every host (W_max 636.8 -> 712.8 ms), and
# each leaves its core idle for L (103.6 us): 4 x 80 x 103.6 us over 2 cores, 16.6 ms more (+107 -> +110 %)
bw=$tmp/waited && mkdir -p "$bw" && cp -r "$sweep" "$bw/"
printf 'cpu_send,16384,400,100\ncpu_recv,16384,400,150\ncpu_waited_send,16384,400,1150\ncpu_waited_recv,16384,400,1250\n' \
    >>"$bw/$(basename "$sweep")/loggp.csv"
"$increport" plots "$bw" >/dev/null 2>"$tmp/waited.err"
check "REPORT: o_w from the ping-pong on events (950 us) and the ring's waits in its W_max (712.8 ms) ($(head -c 200 "$tmp/waited.err"))" \
    sh -c "grep -qF '| o_w | 950.0 us | a 16 KiB message received by a host that sleeps waiting for it' '$bw/REPORT.md' &&
        grep -qF '| AllReduce | ring | 1 MiB | 689.6 ms | 1.4 s | +110 % **miss** | 2 | - | W / C | 712.8 ms |' '$bw/REPORT.md'"
# o_w's pairs (a stream and the ping-pong right after it) take the place of those rows: per pair the ping-pong's
# mean of the two hosts less the stream's send + receive: 1000 - 200, 1400 - 600, 2000 - 400: 800, 800, 1600,
# median 800 us (the medians of each measure apart would make 1400 - 400 = 1000). Interrupts per pair, stream
# send + receive and the ping-pong's mean: 0.6 and 1.6, 1.0 and 1.5, 0.6 and 2.6: medians 0.60 and 1.60, the extra
# 1.0, 0.5, 2.0: 1.00, so 800 us per interrupt; each regime's own CPU per interrupt: the ping-pong 1000 / 1.6,
# 1400 / 1.5, 2000 / 2.6 (769), the stream 200 / 0.6, 600 / 1.0, 400 / 0.6 (600). o_w, the extra at the ping-pong's
# price pair by pair: 625, 466.7, 1538.5: 625 us; 80 waits x 625 us = 50 ms more (W_max 686.8 ms)
bp=$tmp/pairs && mkdir -p "$bp" && cp -r "$bw/$(basename "$sweep")" "$bp/"
for p in '100 100 1100 900 0.2 0.4 1.4 1.8' '300 300 1400 1400 0.5 0.5 1.5 1.5' '200 200 2000 2000 0.3 0.3 2.6 2.6'; do
    read -r cs cr ws wr is ir iws iwr <<<"$p"
    printf 'cpu_pair_send,16384,1024,%s\ncpu_pair_recv,16384,1024,%s\ncpu_pair_waited_send,16384,600,%s\n' "$cs" "$cr" "$ws"
    printf 'cpu_pair_waited_recv,16384,600,%s\nintr_pair_send,16384,1024,%s\nintr_pair_recv,16384,1024,%s\n' "$wr" "$is" "$ir"
    printf 'intr_pair_waited_send,16384,600,%s\nintr_pair_waited_recv,16384,600,%s\n' "$iws" "$iwr"
done >>"$bp/$(basename "$sweep")/loggp.csv"
"$increport" plots "$bp" >/dev/null 2>"$tmp/pairs.err"
check "REPORT: o_w from its pairs (625 us, not the 950 of the older rows beside them), the pairs' CPU difference, the interrupts a wait adds and their price, the ring's W_max 686.8 ms ($(head -c 200 "$tmp/pairs.err"))" \
    sh -c "grep -qF '| o_w | 625.0 us | a 16 KiB message received by a host that sleeps waiting for it, beyond a stream'\''s, from 3 pairs' '$bp/REPORT.md' &&
        grep -qF 'less the stream'\''s sender'\''s + receiver'\''s CPU per message: median 800.0 us (800.0 to 1600.0)' '$bp/REPORT.md' &&
        grep -qF 'guest interrupts (3 pairs): 0.60 per message sent and received in the stream, 1.60 per round trip: 1.00 more, 800 us of CPU each (CPU per interrupt of the whole ping-pong 769 us, of the stream 600 us); added for every message' '$bp/REPORT.md' &&
        grep -qF '| AllReduce | ring | 1 MiB | 689.6 ms |' '$bp/REPORT.md' && grep -F '| AllReduce | ring | 1 MiB | 689.6 ms |' '$bp/REPORT.md' | grep -qF '| 686.8 ms |'"
# the interrupts counted inside the ring AllReduce's timed calls (3 a round) in place of the streams': per call, all
# hosts, 4 x 600 / 3 = 800 (round 1) and 4 x 900 / 3 = 1200 (round 2), median 1000, over 4 x 7650 / 3 = 10200
# packets; the pairs' stream took 0.60 a 16 KiB message sent and received, 34 packets counted (16 and an ACK, at
# both ends): 180 at its rate, 820 beyond it (their price: loggp_predict_intr(), test_results); the INC rows
# without timed counts '-'
for r in 1:600 2:900; do # a measurement's lines together, as exp.sh writes them
    for h in pku1 pku2 pku3 pku4; do
        printf 'ring,allreduce,1048576,%s,3,%s,timed_intr,%s\nring,allreduce,1048576,%s,3,%s,timed_pkts,7650\n' \
            "${r%:*}" "$h" "${r#*:}" "${r%:*}" "$h"
    done
done >>"$bp/$(basename "$sweep")/rxe.csv"
"$increport" plots "$bp" >/dev/null 2>"$tmp/callintr.err"
check "REPORT: the prediction with the interrupts counted inside the calls (820 a call beyond the streams' rate), '-' without counts ($(head -c 200 "$tmp/callintr.err"); $(grep -F '| AllReduce | ring | 1 MiB | 689.6 ms |' "$bp/REPORT.md" | tail -c 120))" \
    sh -c "grep -F '| AllReduce | ring | 1 MiB | 689.6 ms |' '$bp/REPORT.md' | grep -q '; +820 a call) |\$' &&
        grep -F '| AllReduce | inc | 1 MiB |' '$bp/REPORT.md' | grep -q '| 0.100 | - |\$' &&
        grep -q 'With the interrupts counted inside the calls: [01] of 1\.\$' '$bp/REPORT.md' && [ ! -s '$tmp/callintr.err' ]"
# a pair short of a row: refused with the counts, no model
sed -i '$d' "$bp/$(basename "$sweep")/loggp.csv"
sed -i '/^cpu_pair_waited_recv,16384,600,2000$/d' "$bp/$(basename "$sweep")/loggp.csv"
"$increport" plots "$bp" >/dev/null 2>"$tmp/pairs.err"
check "REPORT: o_w's rows not whole pairs: the model refused, saying the counts ($(head -c 300 "$tmp/pairs.err"))" \
    grep -qF 'loggp.csv has 3 cpu_pair_send, 3 cpu_pair_recv, 3 cpu_pair_waited_send and 2 cpu_pair_waited_recv rows at 16384 B: not whole pairs of o_w' "$bp/REPORT.md" "$tmp/pairs.err"
check "REPORT: o_w not measured is said (the sample's loggp.csv has no ping-pong on events)" \
    grep -qF '| o_w | - | not measured (loggp.csv without cpu_pair_* or cpu_waited_send, cpu_waited_recv)' "$rep"
check "REPORT: the count of predictions within 25 % (one in the samples)" grep -qF '1 of 15 predictions within ±25 % of the measured median.' "$rep"
check "REPORT: the left-out wrong row is said" grep -q '1 row(s) with wrong elements left out' "$rep"
check "REPORT: embeds every chart drawn" \
    [ "$(grep -c '^!\[' "$rep")" = "$(find "$res" -path '*/plots/*.png' | wc -l)" ]
for img in $(grep -o '([^)]*\.png)' "$rep" | tr -d '()'); do
    [ -s "$res/$img" ] || { ko "REPORT links $img, which is not there"; break; }
done
# every figure names its run directory (in its alt text, and under it with the run's conditions)
figs=$(awk '/^!\[/ { fig = $0; want = 1; next } want && NF { print fig "\t" $0; want = 0 }' "$rep")
bad_figs=$(while IFS=$'\t' read -r fig cap; do
    dir=${fig#*](}; dir=${dir%%/plots/*}
    case $fig in *", run $dir]("*) ;; *) echo "alt text without run $dir: $fig"; continue ;; esac
    for w in "run directory \`$dir\`" "; topology " ", switches \`" ", accelerator " " ranks, date " ", commit \`" ", sizes " " round"; do
        case $cap in "*Figure "*"$w"*) ;; *) echo "caption of $dir without '$w': $cap"; break ;; esac
    done
done <<<"$figs")
check "REPORT: each of the $(grep -c '^!\[' "$rep") figures names its run directory and conditions${bad_figs:+: $bad_figs}" \
    sh -c "[ -z '$bad_figs' ] && [ $(wc -l <<<"$figs") = $(grep -c '^!\[' "$rep") ]"
check "REPORT: the rounds run's throughput chart with its conditions from meta.yaml and results.csv" \
    grep -qxF '*Figure allreduce-throughput: run directory `rounds-20261105-100000`; topology 1-2-4, switches `vm`, accelerator tcg, 4 ranks, date 2026-11-05T10:00:00Z, commit `4567def-dirty`, sizes 128 MiB, 3 rounds (medians, bars min – max).*' "$rep"
sizes=$(awk -F, 'NR > 1 && $2 == "allreduce" && $13 == 0 && $1 ~ /^(inc|ring|mpi-tcp|mpi-ucx)$/ {print $7 / 1048576 " MiB"}' "$sweep/results.csv" | sort -un | paste -sd, | sed 's/,/, /g')
check "REPORT: the sweep run's AllReduce figures name its sizes ($sizes)" \
    grep -qF "commit \`0123abc\`, sizes $sizes, 1 round.*" "$rep"
lg=$(awk -F, 'NR > 1 { n++; if (!lo || $2 < lo) lo = $2; if ($2 > hi) hi = $2 } END { printf "%d B – %d B (%d LogGP measurements)", lo, hi, n }' "$sweep/loggp.csv")
check "REPORT: the LogGP fit's figure names the sizes measured ($lg), the barrier's says it has none" \
    sh -c "grep -qF 'commit \`0123abc\`, sizes $lg, 1 round.*' '$rep' && grep -qF ', sizes none (a barrier carries no data), 3 rounds' '$rep'"
check "REPORT: each run's summary chart comes first among its figures" \
    [ "$(awk '/^### / { first = 1 } /^!\[/ && first { print ($0 ~ /^!\[INC against every baseline and ceiling, run /); first = 0 }' "$rep" | sort -u)" = 1 ]

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
# the model of the same run (the sweep's loggp.csv): one line per algorithm and size, the median and min-max of
# its rounds. INC 128 MiB: 8193 messages; a host 8193 x 20 + 8193 x 50 + 2 x 134217728 x 0.2 = 54260601.2 us,
# four over 2 cores 108521202.4 + 183.6 = 108.5 s (+262 % of 30 s); ring: 6 steps of 32 MiB = 12288 messages of
# 16 KiB each way, a host 12288 x (30 + 50) + 2 x 6 x 33554432 x 0.2 = 81513676.8 us, four over 2 cores
# 163027353.6 + 6 x 183.6 = 163.0 s (+308 % of 40 s)
check "even rounds: predicted vs measured: one INC line, median 30 s of 20 - 40 s, predicted 108.5 s" \
    sh -c "[ \$(grep -c '^| AllReduce | inc | 128 MiB |' '$even/REPORT.md') = 1 ] &&
        grep -qF '| AllReduce | inc | 128 MiB | 30.0 s (20.0 s – 40.0 s, 2 rounds) | 108.5 s | +262 % **miss** |' '$even/REPORT.md'"
check "even rounds: ... and one ring line, median 40 s of 30 - 50 s, predicted 163.0 s" \
    sh -c "[ \$(grep -c '^| AllReduce | ring | 128 MiB |' '$even/REPORT.md') = 1 ] &&
        grep -qF '| AllReduce | ring | 128 MiB | 40.0 s (30.0 s – 50.0 s, 2 rounds) | 163.0 s | +308 % **miss** |' '$even/REPORT.md'"

check "even rounds: the model's table says it compares with rank 0's time (the run has no time_max_us)" \
    grep -qxF "Measured: rank 0's time (the run has no time_max_us)." "$even/REPORT.md"

# ---- time_max_us (the slowest rank's time, after the round): the model is compared with it, all else keeps time_us ----
# the even run again with the slowest rank's times: INC 35 s and 45 s (rank 0: 20 s, 40 s), median 40 s: predicted
# 108521386 us is +171 % of it (of rank 0's 30 s: +262 %); the ring's slowest rank is rank 0 (30 s, 50 s: 40 s, +308 %)
slow=$tmp/slow sl=slow-20261106-120000
mkdir -p "$slow/$sl"
{
    echo "$(head -n 1 "$rounds/results.csv"),time_max_us"
    tail -n +2 "$even/$er/results.csv" | awk -F, -v OFS=, '{ t = $1 == "ceiling" ? "-" : $1 == "ring" ? $10 : $10 == "20000000.00" ? "35000000.00" : "45000000.00"; print $0, t }'
} >"$slow/$sl/results.csv"
cp "$even/$er/meta.yaml" "$even/$er/loggp.csv" "$slow/$sl/"
out=$(analysis/plots.sh "$slow" 2>&1); rc=$?
check "time_max_us: make plots exits 0 ($(tail -n 1 <<<"$out"))" [ $rc = 0 ]
check "time_max_us: the model's table says it compares with the slowest rank's time" \
    grep -qxF "Measured: the slowest rank's time (time_max_us)." "$slow/REPORT.md"
check "time_max_us: INC predicted vs measured on the slowest rank's median 40 s of 35 - 45 s (+171 %, not +262 %)" \
    grep -qF '| AllReduce | inc | 128 MiB | 40.0 s (35.0 s – 45.0 s, 2 rounds) | 108.5 s | +171 % **miss** |' "$slow/REPORT.md"
check "time_max_us: the ring's slowest rank is its rank 0: 40 s of 30 - 50 s, +308 %" \
    grep -qF '| AllReduce | ring | 128 MiB | 40.0 s (30.0 s – 50.0 s, 2 rounds) | 163.0 s | +308 % **miss** |' "$slow/REPORT.md"
check "time_max_us: the seed table keeps rank 0's time (30.0 s, 4.47 MB/s)" \
    grep -qF '| AllReduce | 128 MiB | 3.4 s | 300.0 | 30.0 s (20.0 s – 40.0 s, 2 rounds) | 35.8 | 4.47 |' "$slow/REPORT.md"
check "time_max_us: allreduce-inc.dat keeps rank 0's times (median 30 s, 20 - 40 s)" \
    grep -q '^128 30 4\.47392 [0-9.]* 3\.36 6\.71 20 40$' "$slow/$sl/plots/allreduce-inc.dat"
check "time_max_us: the model's chart draws the slowest rank's median 40 s, bars 35 - 45 s" \
    sh -c "grep -qx '128 40 35 45' '$slow/$sl/plots/loggp-allreduce-inc.dat' &&
        grep -qF \"'loggp-allreduce-inc.dat' using 1:2:3:4 with yerrorbars\" '$slow/$sl/plots/loggp.gp' &&
        grep -qF 'inc measured (slowest rank): median of 2 rounds' '$slow/$sl/plots/loggp.gp'"
check "time_max_us: a run without it draws rank 0's in the model's chart" \
    sh -c "grep -qx '128 30 20 40' '$even/$er/plots/loggp-allreduce-inc.dat' && grep -qF 'inc measured (rank 0): median of 2 rounds' '$even/$er/plots/loggp.gp'"
out=$("$build/increport" show "$slow/$sl" 2>&1)
check "time_max_us: increport show gives each row's (- for the ceiling)" \
    bash -c 'grep -q "inc allreduce .* round=1 time_max_us=35000000.00$" <<<"$1" && grep -q "ceiling p2p .* round=1 time_max_us=-$" <<<"$1"' _ "$out"

# ---- a simulated run (sim/, simulated: true) next to the lab's: its own section, never in the seed table or the speed-ups ----
# the rounds run measured 128 MiB AllReduce INC 20/25/22 s (median 22 s) and ring 40/38/45 s (median 40 s); the
# simulation says INC 18 s (18/22 - 1 = -18 %, within), ring 60 s (60/40 - 1 = +50 %, a miss), and 4 MiB INC 1 s,
# which the lab did not measure; ring / INC 60/18 = 3.33 simulated, 40/22 = 1.82 measured
simd=$tmp/sim sr=sim-20261106-130000
mkdir -p "$simd/$sr"
cp -r "$rounds" "$simd/"
cat >"$simd/$sr/results.csv" <<EOF
$(head -n 1 "$rounds/results.csv")
inc,allreduce,float32,sum,-,4,134217728,33554432,1,18000000.00,7.46,11.18,0,1
ring,allreduce,float32,sum,-,4,134217728,33554432,1,60000000.00,2.24,3.36,0,1
inc,allreduce,float32,sum,-,4,4194304,1048576,1,1000000.00,4.19,6.29,0,1
EOF
printf '%s\n' "experiment: sim-allreduce" "date: 2026-11-06T13:00:00Z" "commit: '4567def-dirty'" "topology: '1-2-4'" \
    "simulated: true" "accelerator: 'simulated'" "switch_mode: 'simulated'" "nranks: 4" "rounds: 1" "round_conditions:" "  - round: 1" "    start: '2026-11-06T13:00:00Z'" \
    "    loadavg_before: '0.10 0.10 0.10'" "    loadavg_after: '0.20 0.10 0.10'" >"$simd/$sr/meta.yaml"
out=$(analysis/plots.sh "$simd" 2>&1); rc=$?
check "simulated: make plots exits 0 ($(tail -n 1 <<<"$out"))" [ $rc = 0 ]
check "simulated: INC 128 MiB 18 s next to the lab's 22 s (20 - 25 s), -18 %, ring / INC 3.33 and 1.82" \
    grep -qF "| $sr | AllReduce | inc | 128 MiB | 18.0 s | 22.0 s (20.0 s – 25.0 s, 3 rounds) | -18 % | 3.33 | 1.82 | rounds-20261105-100000 |" "$simd/REPORT.md"
check "simulated: ring 128 MiB 60 s next to the lab's 40 s, +50 % marked a miss" \
    grep -qF "| $sr | AllReduce | ring | 128 MiB | 60.0 s | 40.0 s (38.0 s – 45.0 s, 3 rounds) | **+50 %** | 3.33 | 1.82 |" "$simd/REPORT.md"
check "simulated: a size the lab did not measure says so" \
    grep -qF "| $sr | AllReduce | inc | 4 MiB | 1.0 s | not measured on the lab |" "$simd/REPORT.md"
check "simulated: 1 of 2 within ±25 %" grep -qF '1 of 2 simulated times within ±25 % of the lab' "$simd/REPORT.md"
check "simulated: the seed table's 128 MiB row is the lab's (22.0 s), not the newer simulation's" \
    grep -qF '| AllReduce | 128 MiB | 3.4 s | 300.0 | 22.0 s (20.0 s – 25.0 s, 3 rounds) |' "$simd/REPORT.md"
check "simulated: its 3 rows in its own section and nowhere else (no speed-up row)" \
    [ "$(grep -c "^| $sr |" "$simd/REPORT.md")" = 3 ]
check "a report without a simulated run has no such section" sh -c "! grep -q 'Simulated against measured' '$res/REPORT.md'"
sed -i 's/^simulated: true/simulated: yes/' "$simd/$sr/meta.yaml"
out=$("$increport" show "$simd/$sr" 2>&1); rc=$?
check "simulated: anything but true or false is refused with its line (exit $rc): $out" \
    said $rc 1 "$sr/meta.yaml:5: simulated 'yes' is not true or false" <<<"$out"

# ---- a run over two hypervisors (meta.yaml hypervisors: 2, placement): REPORT and its charts say it spans machines ----
spd=$tmp/span sp=span-20261106-140000
mkdir -p "$spd/$sp"
cp -r "$rounds" "$spd/"
cp "$rounds/results.csv" "$spd/$sp/"
sed -e 's/^date: .*/date: 2026-11-06T14:00:00Z/' -e "/^switch_mode:/a hypervisors: 2\nplacement:\n  - {hypervisor: 'here', uri: 'qemu:///system', nodes: 'controller sw0 sw1 pku1 pku2'}\n  - {hypervisor: 'there', uri: 'qemu+ssh://root@127.0.0.1:2222/system?keyfile=/k&no_verify=1', nodes: 'sw2 pku3 pku4'}" \
    "$rounds/meta.yaml" >"$spd/$sp/meta.yaml"
out=$(analysis/plots.sh "$spd" 2>&1); rc=$?
check "two hypervisors: make plots exits 0 ($(tail -n 1 <<<"$out"))" [ $rc = 0 ]
check "two hypervisors: REPORT says the run spans 2 hypervisors" \
    grep -qF -- '- **spans 2 hypervisors**: its nodes ran on 2 machines' "$spd/REPORT.md"
check "two hypervisors: ... and of no other run" [ "$(grep -c 'spans [0-9]* hypervisors' "$spd/REPORT.md")" = 1 ]
check "two hypervisors: its charts' conditions say so" grep -qF 'switches vm, over 2 hypervisors, commit' "$spd/$sp/plots/summary.gp"
check "two hypervisors: a geometric mean over it and a one-machine run warns of it" \
    grep -qF 'hypervisors `1` (rounds-20261105-100000) vs `2` (span-20261106-140000)' "$spd/REPORT.md"
sed -i 's/^hypervisors: 2/hypervisors: 17/' "$spd/$sp/meta.yaml"
out=$("$increport" show "$spd/$sp" 2>&1); rc=$?
check "hypervisors: 17 (more than topogen allows) is refused with its line (exit $rc): $out" \
    said $rc 1 "$sp/meta.yaml:8: hypervisors '17' is not a whole number 1..16" <<<"$out"

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

# ---- the block collectives (make exp-allgather, exp-reducescatter, exp-alltoall): their own charts and rows ----
blk=$tmp/blocks br=allgather-20261127-003000
mkdir -p "$blk/$br"
{
    head -n 1 "$paper/results.csv"
    for c in allgather reducescatter alltoall; do
        op=-; [ $c = reducescatter ] && op=max
        echo "inc,$c,float32,$op,-,4,1048576,262144,3,500000.00,2.10,1.57,0"
        echo "ring,$c,float32,$op,-,4,1048576,262144,3,1000000.00,1.05,0.79,0"
        echo "inc,$c,float32,$op,-,4,4194304,1048576,3,1600000.00,2.62,1.97,0"
        echo "mpi-tcp,$c,float32,$op,-,4,4194304,1048576,3,4000000.00,1.05,0.79,0"
    done
} >"$blk/$br/results.csv"
printf '%s\n' "experiment: allgather" "commit: '89abcde'" "topology: 1-2-4" "accelerator: 'tcg'" "nranks: 4" \
    "status: verified" >"$blk/$br/meta.yaml"
out=$(analysis/plots.sh "$blk" 2>&1); rc=$?
check "block collectives: make plots exits 0 ($(tail -n 1 <<<"$out"))" [ $rc = 0 ]
for c in allgather reducescatter alltoall; do
    for a in inc ring mpi-tcp; do
        got=$(grep -v '^#' "$blk/$br/plots/$c-$a.dat" 2>/dev/null)
        check "block collectives: $c-$a.dat holds the verified rows of results.csv" [ "$got" = "$(expect_dat "$blk/$br" "$a" "$c")" ]
    done
    for ch in $c-throughput $c-time; do
        check "block collectives: $ch.png is a PNG" \
            sh -c "[ \"\$(head -c 4 '$blk/$br/plots/$ch.png' | od -An -c | tr -d ' ')\" = '211PNG' ]"
    done
done
check "block collectives: their charts' size is the whole buffer (nccl-tests' convention), AllReduce's the message" \
    sh -c "grep -qF 'buffer size per rank, all nranks blocks (MiB)' '$blk/$br/plots/alltoall.gp' &&
        ! grep -qF 'buffer size per rank' '$paper/plots/allreduce.gp'"
check "block collectives: REPORT shows the AllGather, ReduceScatter and AllToAll charts" \
    sh -c "grep -qF 'AllGather bandwidth vs size' '$blk/REPORT.md' && grep -qF 'ReduceScatter time vs size' '$blk/REPORT.md' &&
        grep -qF 'AllToAll bandwidth vs size' '$blk/REPORT.md'"
# speed-up rows: ring 1 s / INC 0.5 s = 2.00 at 1 MiB; OpenMPI 4 s / INC 1.6 s = 2.50 at 4 MiB
check "block collectives: REPORT's speed-up rows (AllGather 1 MiB: ring / INC 2.00; AllToAll 4 MiB: TCP / INC 2.50)" \
    sh -c "grep -q '^| $br | AllGather | 1 MiB | .* | \*\*2.00\*\* |' '$blk/REPORT.md' &&
        grep -q '^| $br | AllToAll | 4 MiB | .* | \*\*2.50\*\* |' '$blk/REPORT.md'"

# ---- nothing to read -------------------------------------------------------------------------
out=$(analysis/plots.sh "$tmp/none" 2>&1); rc=$?
check "no results directory: exit 2 with a reason ($out)" said $rc 2 'no results directory' <<<"$out"
mkdir "$tmp/empty"
out=$(analysis/plots.sh "$tmp/empty" 2>&1); rc=$?
check "an empty results directory: exit 0, says there are no runs" said $rc 0 'no runs in' <<<"$out"
check "... and its REPORT.md says so and how to make one, no empty table" \
    sh -c "grep -qF '**No runs here yet**' '$tmp/empty/REPORT.md' && grep -qF 'make exp-allreduce SIZE=64M' '$tmp/empty/REPORT.md' &&
        ! grep -q '^|' '$tmp/empty/REPORT.md'"
touch "$tmp/afile"
out=$(analysis/plots.sh "$tmp/afile" 2>&1); rc=$?
check "RESULTS a file, not a directory: exit 2 saying so ($out)" said $rc 2 "'$tmp/afile' is not a directory" <<<"$out"
# corrupted runs, alone: each named by file (and line), REPORT.md says none could be read, exit 1
cor=$tmp/corrupt
mkdir -p "$cor/garbage-20261109-000000" "$cor/cut-20261109-000000" "$cor/nul-20261109-000000" "$cor/dir-20261109-000000/results.csv" "$cor/yaml-20261109-000000"
printf 'PK\003\004\377\376garbage\001\002\n\377\n' >"$cor/garbage-20261109-000000/results.csv"
{ head -n 3 "$paper/results.csv"; printf 'inc,allreduce,float32,sum,-,4,104857'; } >"$cor/cut-20261109-000000/results.csv"
{ head -n 3 "$paper/results.csv"; printf 'inc,allreduce,float32,sum,-,4,1048576,262144,1,1\0000.00,1.00,1.50,0\n'; } >"$cor/nul-20261109-000000/results.csv"
cp "$paper/results.csv" "$cor/yaml-20261109-000000/"
printf 'commit: [unclosed\n' >"$cor/yaml-20261109-000000/meta.yaml"
out=$(analysis/plots.sh "$cor" 2>&1); rc=$?
while IFS='|' read -r what want; do
    check "corrupt $what: refused by name ($(grep -F "$want" <<<"$out" | head -n 1))" said $rc 1 "$cor/$want" <<<"$out"
done <<'EOF2'
binary garbage|garbage-20261109-000000/results.csv:1: header is not
a row cut short|cut-20261109-000000/results.csv:4: 7 fields, not 13
a NUL byte|nul-20261109-000000/results.csv:4: a line longer than 4095 bytes or with a NUL byte
results.csv a directory|dir-20261109-000000/results.csv: a directory, not a file
meta.yaml not YAML|yaml-20261109-000000/meta.yaml:2: not YAML
EOF2
check "... and REPORT.md says no run could be read, 5 refused" \
    sh -c "grep -qF '**No runs here yet**' '$cor/REPORT.md' && grep -qF '5 run(s) could not be read' '$cor/REPORT.md'"

harness_end
