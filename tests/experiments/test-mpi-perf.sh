#!/usr/bin/env bash
# test-mpi-perf.sh [MPI_PERF] — mpi_perf (experiments/baselines/mpi_perf.c),
# the OpenMPI baseline, run by mpirun as 4 ranks on this machine over TCP on
# the loopback interface only (no lab, no other network): every collective,
# dtype and operator at sizes with odd element counts, the exact CSV header
# and fields of inccl_perf's report, JSON and text, -O, the chunking of
# large collectives (MPI_PERF_CHUNK_BYTES), a corrupted element that must be
# found (MPI_PERF_CORRUPT), bad options refused with exit 2, and the exit
# statuses experiments/lib.sh tells "could not start" (3, or OpenMPI's own
# failure before mpi_perf's report header) from wrong elements (1) by, with
# its verdicts on real runs. Prints ok/FAIL per check and, at its end only
# (tests/lib/harness.sh), "N passed, M failed"; exit 1 on any failure.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
prog=${1:-$top/build/mpi_perf}
tmp=$(mktemp -d)
. "$top/tests/lib/harness.sh"
gone() { rm -rf "$tmp"; }
harness_begin test-mpi-perf all
harness_on_exit gone
phase all "every check"

[ -x "$prog" ] || { ko "$prog is not built (make build/mpi_perf)"; harness_end; }
command -v mpirun >/dev/null || { ko "no mpirun (OpenMPI: make deps installs libopenmpi-dev)"; harness_end; }

# Loopback only, also for anything OpenMPI starts on its own; root allowed (CI runs as root).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_oob_tcp_if_include=lo OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,tcp
NP=4
HEADER="algorithm,collective,dtype,op,root,nranks,bytes,elements,iters,time_us,algbw_MBps,busbw_MBps,wrong,time_max_us"

# mpi NP ARGS... — mpi_perf ARGS as NP ranks; stdout, stderr and exit status in $tmp/{out,err,rc}
mpi() {
    local np=$1 rc=0
    shift
    timeout 120 mpirun --allow-run-as-root --oversubscribe -np "$np" --mca pml ob1 --mca btl self,tcp \
        --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo \
        "$prog" "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
    echo "$rc" >"$tmp/rc"
}

# bytes SIZE — SIZE with an optional K or M suffix (powers of 1024) in bytes
bytes() {
    case $1 in *K) echo $((${1%K} << 10)) ;; *M) echo $((${1%M} << 20)) ;; *) echo "$1" ;; esac
}

# width DTYPE — the bytes of one element of DTYPE (4 for '-': barrier)
width() {
    case $1 in float16 | bfloat16) echo 2 ;; int64 | uint64 | float64) echo 8 ;; *) echo 4 ;; esac
}

# sweep MIN MAX FACTOR [WIDTH] — the sizes mpi_perf runs, in bytes (rounded down to whole
# WIDTH-byte elements (default 4), at least one, no repeats), space-separated
sweep() {
    local raw b last=-1 out="" max w=${4:-4}
    raw=$(bytes "$1") max=$(bytes "$2")
    while [ "$raw" -le "$max" ]; do
        b=$((raw < w ? w : raw - raw % w))
        [ "$b" != "$last" ] && out="$out $b" && last=$b
        [ "$3" -ge 2 ] || break
        raw=$((raw * $3))
    done
    echo "${out# }"
}

# check_csv FILE LABEL COLL DTYPE OP ROOT ITERS WRONG SIZES — every field of every
# row of the CSV report FILE (WRONG: the wrong count each row must show, SIZES
# the bytes of the rows in order, space-separated); prints what is wrong, if anything
check_csv() {
    local f=$1 label=$2 coll=$3 dtype=$4 op=$5 root=$6 iters=$7 wrong=$8 sizes=$9
    if [ "$(head -n 1 "$f")" != "$HEADER" ]; then
        echo "header is '$(head -n 1 "$f")'"
        return
    fi
    tail -n +2 "$f" | awk -F, -v label="$label" -v coll="$coll" -v dtype="$dtype" -v op="$op" -v root="$root" \
        -v n="$NP" -v iters="$iters" -v wrong="$wrong" -v sizes="$sizes" -v w="$(width "$dtype")" '
        function bad(what) { printf "row %d: %s: %s\n", NR, what, $0; err = 1 }
        function num(x) { return x ~ /^[0-9]+\.[0-9][0-9]$/ }
        # a, printed with two decimals, is b computed from the time before it was rounded to two decimals
        function near(a, b) { d = a - b; if (d < 0) d = -d; return d <= 0.011 + b * (0.0051 / $10 + 1e-6) }
        BEGIN { nsizes = split(sizes, want, " ") }
        {
            if (NF != 14) { bad(NF " fields, not 14"); next }
            if ($1 != label) bad("algorithm " $1 ", not " label)
            if ($2 != coll) bad("collective " $2 ", not " coll)
            if ($3 != dtype) bad("dtype " $3 ", not " dtype)
            if ($4 != op) bad("op " $4 ", not " op)
            if ($5 != root) bad("root " $5 ", not " root)
            if ($6 != n) bad("nranks " $6 ", not " n)
            if ($7 !~ /^[0-9]+$/ || $8 !~ /^[0-9]+$/) bad("bytes or elements not a number")
            if ($7 != want[NR]) bad("bytes " $7 ", not " want[NR])
            if ($7 != w * $8) bad("bytes " $7 " are not " w " x " $8 " elements")
            if ($9 != iters) bad("iters " $9 ", not " iters)
            if (!num($10) || $10 <= 0) bad("time_us " $10 " is not a positive number with two decimals")
            if (coll == "barrier") {
                if ($11 != "-" || $12 != "-") bad("a barrier has no bandwidth: " $11 " " $12)
            } else {
                if (!num($11) || !num($12)) bad("algbw or busbw not a number with two decimals")
                if (!near($11, $7 / $10)) bad("algbw " $11 " is not bytes / time_us = " $7 / $10)
                f = coll == "allreduce" ? 2 * (n - 1) / n : coll ~ /^(allgather|reducescatter|alltoall)$/ ? (n - 1) / n : 1
                if (!near($12, f * $7 / $10)) bad("busbw " $12 " is not " f " x algbw")
            }
            if ($13 !~ /^[0-9]+$/ || $13 != wrong) bad("wrong " $13 ", not " wrong)
            # the slowest rank time: rank 0 is one of the ranks (-S max: time_us is it)
            if (!num($14) || $14 + 0 < $10 + 0) bad("time_max_us " $14 " is not a time >= time_us " $10)
        }
        END {
            if (NR != nsizes) { printf "%d rows, not %d\n", NR, nsizes; err = 1 }
            exit err
        }'
}

# run LABEL COLL DTYPE OP ROOT ITERS MIN MAX FACTOR [MPI_PERF ARGS...] — a CSV run
# that must succeed with the rows of the sweep MIN..MAX by FACTOR, all right
# (OP and ROOT as the report must show them: '-' where they do not apply)
run() {
    local label=$1 coll=$2 dtype=$3 op=$4 root=$5 iters=$6 min=$7 max=$8 factor=$9 what sizes problems
    shift 9
    what="$coll $dtype op $op root $root $min..$max x$factor${MPI_PERF_CHUNK_BYTES:+ in pieces of $MPI_PERF_CHUNK_BYTES} $*"
    mpi "$NP" -F csv -C "$coll" -n "$iters" -w 1 "$@"
    sizes=$(sweep "$min" "$max" "$factor" "$(width "$dtype")")
    [ "$coll" = barrier ] && sizes=0
    problems=$(check_csv "$tmp/out" "$label" "$coll" "$dtype" "$op" "$root" "$iters" 0 "$sizes")
    if [ "$(cat "$tmp/rc")" != 0 ]; then
        ko "$what: exit $(cat "$tmp/rc"): $(head -c 600 "$tmp/err")"
    elif [ -n "$problems" ]; then
        ko "$what: $problems"
    else
        ok "$what: $(($(wc -l <"$tmp/out") - 1)) rows verified"
    fi
}

# refused WHY ARGS... — mpi_perf ARGS must exit 2 with WHY on stderr
refused() {
    local why=$1
    shift
    mpi 2 "$@"
    if [ "$(cat "$tmp/rc")" = 2 ] && grep -qF -- "$why" "$tmp/err" && grep -qF "usage:" "$tmp/err"; then
        ok "mpi_perf $* refused: $why"
    else
        ko "mpi_perf $* (exit $(cat "$tmp/rc")) said '$(head -n 1 "$tmp/err")', want exit 2 and '$why'"
    fi
}

# the ranks run here and inherit mpirun's environment: the test hooks need no -x
unset MPI_PERF_CORRUPT MPI_PERF_CHUNK_BYTES

# ---- every collective, dtype and operator; odd element counts ------------------
run mpi-tcp allreduce float32 sum - 3 4 1M 7 -a mpi-tcp -d float32 -o sum -b 4 -e 1M -f 7
run mpi-tcp allreduce int32 sum - 3 4 1M 7 -a mpi-tcp -d int32 -o sum -b 4 -e 1M -f 7
for dt in int32 float32; do
    for op in max min; do
        run mpi-ucx allreduce $dt $op - 2 12 300K 9 -a mpi-ucx -d $dt -o $op -b 12 -e 300K -f 9
    done
done
run mpi reduce int32 sum 2 2 4 1M 11 -d int32 -o sum -R 2 -b 4 -e 1M -f 11
run mpi reduce float32 max 2 2 20 200K 13 -d float32 -o max -R 2 -b 20 -e 200K -f 13
run mpi reduce float32 min 0 2 100004 100004 1 -o min -b 100004 -e 100004
run mpi broadcast float32 - 1 2 4 1M 11 -R 1 -b 4 -e 1M -f 11 -o max
run mpi broadcast int32 - 1 2 28 28 1 -R 1 -d int32 -b 28 -e 28
run mpi barrier - - - 4 0 0 1 -d int32 -o max -R 3
# the block collectives, in place (MPI_IN_PLACE), every element of every rank checked; sizes of
# whole blocks of 4 ranks (nccl-tests' busbw factor (n-1)/n)
for dt in int32 float32; do
    run mpi allgather $dt - - 2 16 1M 8 -d $dt -b 16 -e 1M -f 8
    run mpi alltoall $dt - - 2 16 1M 8 -d $dt -b 16 -e 1M -f 8
    for op in sum max min; do
        run mpi reducescatter $dt $op - 2 16 64K 16 -d $dt -o $op -b 16 -e 64K -f 16
    done
done
# the other dtypes (float16/bfloat16 through an MPI_Op of the switches' arithmetic), odd sizes
for dt in uint32 int64 uint64 float16 bfloat16 float64; do
    run mpi-tcp allreduce $dt sum - 2 6 100K 7 -a mpi-tcp -d $dt -o sum -b 6 -e 100K -f 7
done
run mpi reduce float16 max 1 2 2 64K 16 -d float16 -o max -R 1 -b 2 -e 64K -f 16
run mpi reduce bfloat16 min 0 2 30 30 1 -d bfloat16 -o min -b 30 -e 30
run mpi reduce uint64 max 2 2 8 8K 32 -d uint64 -o max -R 2 -b 8 -e 8K -f 32
run mpi allreduce int64 min - 2 17 17 1 -d int64 -o min -b 17 -e 17
run mpi broadcast float64 - 3 2 8 1M 32 -d float64 -R 3 -b 8 -e 1M -f 32
MPI_PERF_CHUNK_BYTES=4K run mpi allreduce float16 sum - 2 100002 100002 1 -d float16 -b 100002 -e 100002
# sizes that are not whole elements are rounded down (at least one element)
run mpi allreduce float32 sum - 1 10 10 1 -b 10 -e 10
run mpi allreduce float32 sum - 1 1 1 1 -b 1 -e 1
# the timing statistic of inccl_perf (rank 0's mean) is accepted and changes nothing else
run mpi allreduce int32 max - 2 4K 16K 2 -S rank0 -d int32 -o max -b 4K -e 16K

# ---- collectives in several MPI calls (MPI counts are ints: pieces of at most 1 GiB) ----
MPI_PERF_CHUNK_BYTES=4K run mpi allreduce int32 sum - 2 100004 1M 10 -d int32 -b 100004 -e 1M -f 10
MPI_PERF_CHUNK_BYTES=12 run mpi reduce float32 sum 3 2 4 100 5 -R 3 -b 4 -e 100 -f 5
MPI_PERF_CHUNK_BYTES=4K run mpi broadcast float32 - 2 2 100004 100004 1 -R 2 -b 100004 -e 100004

# ---- the other formats and -O ----------------------------------------------------
mpi "$NP" -F json -C reduce -R 3 -d int32 -o min -b 4 -e 4K -f 32 -n 2 -a mpi-tcp
if [ "$(cat "$tmp/rc")" = 0 ] && python3 - "$tmp/out" "$HEADER" <<'EOF'; then
import json, sys
rows = json.load(open(sys.argv[1]))
keys = sys.argv[2].split(",")
assert [r["bytes"] for r in rows] == [4, 128, 4096], rows
for r in rows:
    assert list(r) == keys, list(r)
    assert (r["algorithm"], r["collective"], r["dtype"], r["op"], r["root"], r["nranks"]) == \
        ("mpi-tcp", "reduce", "int32", "min", 3, 4), r
    assert r["elements"] * 4 == r["bytes"] and r["iters"] == 2 and r["wrong"] == 0, r
    bw = r["bytes"] / r["time_us"]  # time_us is rounded to two decimals
    assert r["time_us"] > 0 and abs(r["algbw_MBps"] - bw) <= 0.011 + bw * 0.0051 / r["time_us"], r
    assert r["busbw_MBps"] == r["algbw_MBps"], r
    assert r["time_max_us"] == r["time_us"], r  # -S max (the default): time_us is the slowest rank's
EOF
    ok "JSON: 3 objects with the CSV header's keys in its order"
else
    ko "JSON report: exit $(cat "$tmp/rc"): $(head -c 600 "$tmp/out") $(head -c 300 "$tmp/err")"
fi
mpi "$NP" -F json -C barrier
if [ "$(cat "$tmp/rc")" = 0 ] && python3 -c '
import json, sys
r, = json.load(open(sys.argv[1]))
assert (r["dtype"], r["op"], r["root"], r["algbw_MBps"], r["busbw_MBps"], r["bytes"]) == (None,) * 5 + (0,), r
' "$tmp/out"; then ok "JSON barrier: null where a field does not apply"; else ko "JSON barrier: $(cat "$tmp/out")"; fi
mpi "$NP" -F text -C broadcast -R 3 -b 1K -e 4K -a mpi-tcp
if [ "$(cat "$tmp/rc")" = 0 ] && grep -q '^# mpi_perf: algorithm mpi-tcp, collective broadcast, dtype float32, op -, root 3, nranks 4' "$tmp/out" &&
    grep -qx '# wrong elements: 0' "$tmp/out" && [ "$(grep -c '^  ' "$tmp/out")" = 3 ] && grep -q '^# average busbw: ' "$tmp/out"; then
    ok "text: header, 3 lines, no wrong element, average busbw"
else
    ko "text report: $(cat "$tmp/out")"
fi
mpi "$NP" -F csv -b 64 -e 256 -O "$tmp/report.csv"
if [ "$(cat "$tmp/rc")" = 0 ] && [ ! -s "$tmp/out" ] &&
    [ -z "$(check_csv "$tmp/report.csv" mpi allreduce float32 sum - 5 0 "64 128 256")" ]; then
    ok "-O FILE: the report in the file (defaults: mpi, float32 sum, 5 iterations), nothing on stdout"
else
    ko "-O FILE: exit $(cat "$tmp/rc"), stdout '$(cat "$tmp/out")', file '$(cat "$tmp/report.csv" 2>/dev/null)'"
fi
mpi "$NP" -F csv -b 64 -e 64 -O "$tmp/no/such/dir/report.csv"
if [ "$(cat "$tmp/rc")" = 3 ] && grep -q "cannot write $tmp/no/such/dir/report.csv" "$tmp/err"; then
    ok "-O into a missing directory: exit 3 (could not start) with the reason"
else
    ko "-O into a missing directory: exit $(cat "$tmp/rc"): $(head -n 2 "$tmp/err")"
fi

# ---- the check finds a wrong element (test hook MPI_PERF_CORRUPT=RANK) -------------
# corrupted CORRUPT_RANK COLL ARGS... — one flipped element per size on that rank: exit 1, wrong = 1 in every row
corrupted() {
    local r=$1 coll=$2 problems
    shift 2
    MPI_PERF_CORRUPT=$r mpi "$NP" -F csv -C "$coll" -n 2 "$@"
    rows=$(tail -n +2 "$tmp/out" | wc -l)
    if [ "$(cat "$tmp/rc")" = 1 ] && [ "$rows" -ge 1 ] && [ -z "$(tail -n +2 "$tmp/out" | awk -F, '$13 != 1')" ] &&
        grep -q "rank $r: $coll of .* 1 of .* elements wrong" "$tmp/err"; then
        ok "one element corrupted on rank $r after $coll $*: exit 1, wrong = 1 in each of $rows rows"
    else
        ko "corrupted $coll on rank $r: exit $(cat "$tmp/rc"), '$(cat "$tmp/out")' '$(head -c 400 "$tmp/err")'"
    fi
}
corrupted 3 allreduce -d float32 -b 4 -e 4K -f 32
corrupted 0 allreduce -d int32 -o min -b 12 -e 12
corrupted 2 reduce -R 2 -d int32 -o max -b 1K -e 1K
corrupted 1 reduce -R 2 -b 1K -e 1K
corrupted 3 broadcast -R 0 -b 100 -e 100
corrupted 2 allgather -b 1K -e 1K
corrupted 1 alltoall -d int32 -b 4K -e 4K
corrupted 1 allreduce -d bfloat16 -b 2 -e 2K -f 32
corrupted 2 allreduce -d float64 -o max -b 8 -e 8K -f 32

# ---- bad options: exit 2, a reason and the usage -----------------------------------
refused "unknown collective 'alltogether'" -C alltogether
refused "unknown dtype 'float128'" -d float128
refused "unknown op 'prod'" -o prod
refused "unknown format 'xml'" -F xml
refused "-b: bad size '0'" -b 0
refused "-b: bad size '12X'" -b 12X
refused "-e: bad size '1.5G'" -e 1.5G
refused "-e: bad size '-4'" -e -4
refused "MIN (2 KiB) is larger than MAX (1 KiB)" -b 2K -e 1K
refused "factor 1 would never reach MAX" -b 1K -e 2K -f 1
refused "-f: bad factor 'x'" -f x
refused "root 2 is not a rank of 0..1" -C reduce -R 2
refused "-R: bad root '-1'" -R -1
refused "-n: bad iteration count '0'" -n 0
refused "-w: bad warm-up count '-1'" -w -1
refused "-a: bad label 'a,b'" -a a,b
refused "-a: bad label ''" -a ""
refused "-S: unknown statistic 'mean'" -S mean
refused "unknown option '-v'" -v
refused "unexpected argument 'extra'" extra
refused "option -n needs a value" -n
MPI_PERF_CORRUPT=7 refused "MPI_PERF_CORRUPT='7' is not a rank of 0..1" -b 4 -e 4
MPI_PERF_CHUNK_BYTES=6 refused "MPI_PERF_CHUNK_BYTES='6' is not a whole number" -b 4 -e 4
MPI_PERF_CHUNK_BYTES=12 refused "MPI_PERF_CHUNK_BYTES='12' is not a whole number of 8-byte elements" -d int64 -b 8 -e 8
mpi 2 -h
if [ "$(cat "$tmp/rc")" = 0 ] && grep -q '^usage: ' "$tmp/out" && grep -q -- '-a LABEL' "$tmp/out"; then
    ok "-h: the help, exit 0"
else
    ko "-h: exit $(cat "$tmp/rc"): $(head -n 2 "$tmp/out")"
fi

# ---- could not start, or wrong: what experiments/lib.sh makes of real runs ----------
# judged WANT LABEL — exp_mpi_status on mpirun's status and stdout in $tmp/{rc,out},
# then exp_outcome with its stderr ($tmp/err): the verdict must start with WANT
judged() {
    local want=$1 label=$2 st=0 v
    exp_mpi_status "$(cat "$tmp/rc")" "$tmp/out" || st=$?
    v=$(exp_outcome "$label" "$st" "$tmp/out" "$tmp/err")
    if [[ $v == "$want"* ]]; then
        ok "$3: mpirun exit $(cat "$tmp/rc") -> $(cut -c1-110 <<<"$v")"
    else
        ko "$3: mpirun exit $(cat "$tmp/rc"), status $st -> '$v', want '$want...'; stdout '$(head -c 300 "$tmp/out")'"
    fi
}
state=/nonexistent
. "$top/experiments/lib.sh"
mpi 2 -F csv -a mpi-tcp -b 4K -e 4K -n 1
judged "ok" mpi-tcp "every element right"
MPI_PERF_CORRUPT=1 mpi 2 -F csv -a mpi-tcp -b 4K -e 8K -n 1
judged "failed: 2 wrong elements in 2 rows" mpi-tcp "one element corrupted per size"
mpi 2 -F csv -a mpi-tcp -b 64 -e 64 -O "$tmp/no/such/dir/report.csv"
judged "unavailable: mpi_perf: cannot write $tmp/no/such/dir/report.csv" mpi-tcp "report file that cannot be opened"
rc=0
timeout 120 mpirun --allow-run-as-root -np 2 --mca pml ob1 --mca btl self,tcp --mca btl_tcp_if_include lo \
    --mca oob_tcp_if_include lo "$tmp/no-mpi_perf" -F csv >"$tmp/out" 2>"$tmp/err" || rc=$?
echo "$rc" >"$tmp/rc"
judged "unavailable: " mpi-tcp "no mpi_perf to start"
grep -q "unable to launch" <<<"$(exp_outcome mpi-tcp 3 "$tmp/out" "$tmp/err")" && ok "no mpi_perf to start: the reason says mpirun was unable to launch it" ||
    ko "no mpi_perf to start: reason '$(exp_outcome mpi-tcp 3 "$tmp/out" "$tmp/err")'"
if [ -e /sys/class/infiniband/rxe0 ]; then
    echo "  (UCX on a missing rxe0 not tried: this machine has rxe0; not counted)"
else # the lab's UCX settings where there is no rxe0: OpenMPI fails in MPI_Init, before mpi_perf's header
    rc=0
    timeout 120 mpirun --allow-run-as-root --oversubscribe -np 2 --mca oob_tcp_if_include lo --mca pml ucx \
        --mca btl ^tcp,openib,uct -x UCX_NET_DEVICES=rxe0:1 -x UCX_TLS=rc_verbs,self \
        "$prog" -a mpi-ucx -F csv -b 4K -e 4K >"$tmp/out" 2>"$tmp/err" || rc=$?
    echo "$rc" >"$tmp/rc"
    judged "unavailable: " mpi-ucx "UCX without a transport"  # the reason: "PML ucx cannot be selected", UCX's warnings
    grep -qi "ucx" <<<"$(exp_outcome mpi-ucx 3 "$tmp/out" "$tmp/err")" && ok "UCX without a transport: the reason names UCX" ||
        ko "UCX without a transport: reason '$(exp_outcome mpi-ucx 3 "$tmp/out" "$tmp/err")'"
fi

harness_end
