#!/usr/bin/env bash
# inc-slice.sh — in-network collectives on the running lab, one switch deep.
#
# The hosts under rank 0's leaf switch (pku1 and pku2 in 1-2-4) run
# inccl_check (libinccl over their real rxe queue pairs); the leaf runs
# incswitch, which terminates their connections and aggregates. Every
# collective × dtype × op is verified on every rank against an expectation the
# rank computes itself. The switch rules are written here from the QPNs the
# ranks report (the controller's job, later). Prints "N passed, M failed".
#
# INC_SLICE_COUNTS overrides the element counts (default: 1,255,256,257,1031,65539).
set -uo pipefail
cd "$(dirname "$0")/../.."
lab=lab/lab.sh
state=${INCLAB_STATE:-/var/lib/inclab/${INCLAB_PREFIX:-inclab}}
build=${INCLAB_BUILD:-build}
counts=${INC_SLICE_COUNTS:-1,255,256,257,1031,65539}
inv=$state/gen/inventory.tsv
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok   $*"; }
ko() { fail=$((fail + 1)); echo "FAIL $*"; }
done_() { echo "$pass passed, $fail failed"; exit $((fail > 0 ? 1 : 0)); }

[ -r "$inv" ] || { echo "inc-slice: no lab (make lab-up)"; exit 1; }
leaf=$(awk -F'\t' '$2 == "host" && $3 == 0 {print $7}' "$inv")
mapfile -t hosts < <(awk -F'\t' -v l="$leaf" '$2 == "host" && $7 == l {print $3 "\t" $1}' "$inv" | sort -n | cut -f2)
n=${#hosts[@]}
haddr0=$(awk -F'\t' -v h="${hosts[0]}" '$1 == h {print $6}' "$inv"); haddr0=${haddr0%/*}
laddr=$("$lab" exec "$leaf" "ip -o -4 route get $haddr0 | grep -o 'src [0-9.]*' | cut -d' ' -f2")
psn=$((RANDOM * 512 % 16777216)) swqpn=256
echo "inc-slice: ranks ${hosts[*]} aggregated on $leaf ($laddr), PSN $psn, counts $counts"

"$lab" push "$leaf" "$build/incswitch" /usr/local/bin/incswitch >/dev/null || { ko "copy incswitch to $leaf"; done_; }
for i in "${!hosts[@]}"; do
    h=${hosts[$i]}
    "$lab" push "$h" "$build/inccl_check" /usr/local/bin/inccl_check >/dev/null || { ko "copy inccl_check to $h"; done_; }
    "$lab" exec "$h" "pkill inccl_check; rm -f /tmp/inccl.*; (inccl_check -r $i -n $n -s $laddr -Q $swqpn -P $psn \
        -w /tmp/inccl.qpn -G /tmp/inccl.go -c $counts > /tmp/inccl.out 2>&1; echo \$? > /tmp/inccl.rc) \
        < /dev/null > /dev/null 2>&1 &" >/dev/null
done
rules="switch: $leaf
nslots: 1024
retransmit_us: 200000
children:"
for i in "${!hosts[@]}"; do
    h=${hosts[$i]}
    qpn=""
    for _ in $(seq 1 60); do qpn=$("$lab" exec "$h" "cat /tmp/inccl.qpn 2>/dev/null") && [ -n "$qpn" ] && break; sleep 0.5; done
    [ -n "$qpn" ] || { ko "rank $i on $h created its queue pair: $("$lab" exec "$h" "cat /tmp/inccl.out")"; done_; }
    a=$(awk -F'\t' -v h="$h" '$1 == h {print $6}' "$inv")
    rules+="
  - {port: to-$h, local_ip: $laddr, peer_ip: ${a%/*}, local_qpn: $swqpn, peer_qpn: $qpn, rq_psn: $psn, sq_psn: $psn, first_rank: $i, nranks: 1}"
done
ok "ranks created queue pairs; switch rules for $n children written"
"$lab" exec "$leaf" "pkill incswitch; cat > /tmp/rules.yaml <<'RULES'
$rules
RULES
(incswitch -r /tmp/rules.yaml -t 1800 > /tmp/incswitch.out 2>&1; echo \$? > /tmp/incswitch.rc) < /dev/null > /dev/null 2>&1 &
sleep 1; cat /tmp/incswitch.out" | sed 's/^/  /'
for h in "${hosts[@]}"; do "$lab" exec "$h" "touch /tmp/inccl.go" >/dev/null; done
t0=$(date +%s)
for h in "${hosts[@]}"; do
    for _ in $(seq 1 1200); do "$lab" exec "$h" "test -e /tmp/inccl.rc" >/dev/null 2>&1 && break; sleep 1; done
done
secs=$(($(date +%s) - t0))
"$lab" exec "$leaf" "pkill -TERM incswitch; sleep 1; tail -n 1 /tmp/incswitch.out" | sed 's/^/  /'
for i in "${!hosts[@]}"; do
    h=${hosts[$i]}
    out=$("$lab" exec "$h" "cat /tmp/inccl.out")
    grep '^FAIL' <<<"$out" | head -n 5 | sed "s/^/  $h: /"
    summary=$(tail -n 1 <<<"$out")
    rc=$("$lab" exec "$h" "cat /tmp/inccl.rc" 2>/dev/null)
    if [ "$rc" = 0 ]; then ok "rank $i ($h): $summary"; else ko "rank $i ($h) exit '$rc': $summary"; fi
done
echo "  (all ranks done in $secs s)"
"$lab" exec "$leaf" "pkill incswitch; true" >/dev/null 2>&1
done_
