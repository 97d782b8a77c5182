#!/usr/bin/env bash
# inc-perf.sh — run inccl_perf (hostlib/tools/inccl_perf.c) on the ranks of
# the running lab and print rank 0's table; every rank verifies its results.
#
#   INC_SCOPE=leaf|tree tests/system/inc-perf.sh INCCL_PERF_ARGS...
#
# leaf: the hosts under rank 0's leaf switch; tree: every host. Prints
# "ok"/"FAIL" per rank (exit status of inccl_perf: 0 only when every element
# on every rank was right) and "N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")/../.."
lab=lab/lab.sh
state=${INCLAB_STATE:-/var/lib/inclab/${INCLAB_PREFIX:-inclab}}
scope=${INC_SCOPE:-leaf}
limit=${INC_LIMIT:-3600}
inv=$state/gen/inventory.tsv
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok   $*"; }
ko() { fail=$((fail + 1)); echo "FAIL $*"; }
col() { awk -F'\t' -v n="$1" -v c="$2" '$1 == n {print $c}' "$inv"; }
[ -r "$inv" ] || { echo "inc-perf: no lab (make lab-up)"; exit 1; }
leaf0=$(awk -F'\t' '$2 == "host" && $3 == 0 {print $7}' "$inv")
case "$scope" in
leaf) mapfile -t hosts < <(awk -F'\t' -v l="$leaf0" '$2 == "host" && $7 == l {print $3 "\t" $1}' "$inv" | sort -n | cut -f2) ;;
tree) mapfile -t hosts < <(awk -F'\t' '$2 == "host" {print $3 "\t" $1}' "$inv" | sort -n | cut -f2) ;;
*) echo "inc-perf: INC_SCOPE must be leaf or tree"; exit 2 ;;
esac
n=${#hosts[@]} master=$(col "${hosts[0]}" 4)
args="$*"
for i in "${!hosts[@]}"; do
    "$lab" exec "${hosts[$i]}" "pkill -x inccl_perf; rm -f /tmp/perf.*; (inccl_perf -r $i -N $n -m $master $args \
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
    if [ "$rc" = 0 ]; then ok "inccl_perf $args: rank $i ($h) verified every element"
    else ko "inccl_perf $args: rank $i ($h) exit '${rc:-none after $limit s}': $("$lab" exec "$h" "tail -n 2 /tmp/perf.err" | tr '\n' ' ')"; fi
    "$lab" exec "$h" "pkill -x inccl_perf; true" >/dev/null 2>&1
done
echo "  (done in $(($(date +%s) - t0)) s)"
echo "$pass passed, $fail failed"
exit $((fail > 0 ? 1 : 0))
