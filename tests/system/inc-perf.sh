#!/usr/bin/env bash
# inc-perf.sh — run inccl_perf (hostlib/tools/inccl_perf.c) on the ranks of
# the running lab and print rank 0's table; every rank verifies its results.
#
#   INC_SCOPE=leaf|tree tests/system/inc-perf.sh INCCL_PERF_ARGS...
#
# leaf: the hosts under rank 0's leaf switch; tree: every host. Prints
# "ok"/"FAIL" per rank (exit status of inccl_perf: 0 only when every element
# on every rank was right) and, at its end only (tests/lib/harness.sh),
# "N passed, M failed".
# INC_EXPECT_FAIL=REGEX: a switch was told to be wrong (lab.sh fault): every
#   rank must exit 1 with REGEX on stderr (or a timeout after a peer gave
#   up), and at least one rank must show REGEX.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/lib/harness.sh
harness_begin inc-perf run
phase run "inccl_perf on the ranks"
lab=lab/lab.sh
state=${INCLAB_STATE:-/var/lib/inclab/${INCLAB_PREFIX:-inclab}}
scope=${INC_SCOPE:-leaf}
limit=${INC_LIMIT:-3600}
inv=$state/gen/inventory.tsv
expect_fail=${INC_EXPECT_FAIL:-}
. tests/lib/caught.sh
col() { awk -F'\t' -v n="$1" -v c="$2" '$1 == n {print $c}' "$inv"; }
[ -r "$inv" ] || { ko "inc-perf: no lab in $state (make lab-up)"; harness_end; }
leaf0=$(awk -F'\t' '$2 == "host" && $3 == 0 {print $7}' "$inv")
case "$scope" in
leaf) mapfile -t hosts < <(awk -F'\t' -v l="$leaf0" '$2 == "host" && $7 == l {print $3 "\t" $1}' "$inv" | sort -n | cut -f2) ;;
tree) mapfile -t hosts < <(awk -F'\t' '$2 == "host" {print $3 "\t" $1}' "$inv" | sort -n | cut -f2) ;;
*) ko "INC_SCOPE must be leaf or tree, not '$scope'"; harness_end ;;
esac
n=${#hosts[@]} master=$(col "${hosts[0]}" 4)
args="$*"
# the job's key (libinccl: INCCL_JOB_KEY): rank 0 takes only ranks that hold it
job=$("${INCLAB_BUILD:-build}/incctl" -G -) || { ko "cannot make a job key (incctl -G -)"; harness_end; }
for i in "${!hosts[@]}"; do
    "$lab" exec "${hosts[$i]}" "pkill -x inccl_perf; rm -f /tmp/perf.*; (INCCL_JOB_KEY=$job inccl_perf -r $i -N $n -m $master $args \
        > /tmp/perf.out 2> /tmp/perf.err; echo \$? > /tmp/perf.rc) < /dev/null > /dev/null 2>&1 &" >/dev/null
done
t0=$(date +%s)
for h in "${hosts[@]}"; do
    while [ $(($(date +%s) - t0)) -lt "$limit" ]; do
        "$lab" exec "$h" "test -e /tmp/perf.rc" >/dev/null 2>&1 && break
        sleep 3
    done
done
"$lab" exec "${hosts[0]}" "cat /tmp/perf.out"
for i in "${!hosts[@]}"; do
    h=${hosts[$i]}
    rc=$("$lab" exec "$h" "cat /tmp/perf.rc" 2>/dev/null)
    err=$("$lab" exec "$h" "cat /tmp/perf.err" 2>/dev/null)
    if [ -n "$expect_fail" ]; then
        judge_caught "inccl_perf $args: rank $i ($h)" "${rc:-}" "$err" "$expect_fail"
    elif [ "$rc" = 0 ]; then ok "inccl_perf $args: rank $i ($h) verified every element"
    else ko "inccl_perf $args: rank $i ($h) exit '${rc:-none after $limit s}': $(tail -n 2 <<<"$err" | tr '\n' ' ')"; fi
    "$lab" exec "$h" "pkill -x inccl_perf; true" >/dev/null 2>&1
done
echo "  (done in $(($(date +%s) - t0)) s)"
[ -z "$expect_fail" ] || check "the fault was caught on $caught of $n ranks (want at least one)" [ "$caught" -ge 1 ]
harness_end
