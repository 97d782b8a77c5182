#!/usr/bin/env bash
# inc-slice.sh — in-network collectives on the running lab.
#
# INC_SLICE_SCOPE=leaf (default): the hosts under rank 0's leaf switch (pku1,
#   pku2 in 1-2-4), aggregated on that one switch.
# INC_SLICE_SCOPE=tree: every host; every switch on their paths aggregates,
#   leaves forward to their parents (UDP 4792), the root sends results down.
#
# Hosts run inccl_check (libinccl over their real rxe queue pairs); switches
# run incswitch. Every collective × dtype × op is verified on every rank
# against an expectation the rank computes itself. The switch rules are
# written here from the topology and the QPNs the ranks report (the
# controller's job, later). Prints "N passed, M failed".
# INC_SLICE_COUNTS overrides the element counts (default: 1,255,256,257,1031,65539).
set -uo pipefail
cd "$(dirname "$0")/../.."
lab=lab/lab.sh
state=${INCLAB_STATE:-/var/lib/inclab/${INCLAB_PREFIX:-inclab}}
build=${INCLAB_BUILD:-build}
counts=${INC_SLICE_COUNTS:-1,255,256,257,1031,65539}
scope=${INC_SLICE_SCOPE:-leaf}
inv=$state/gen/inventory.tsv
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok   $*"; }
ko() { fail=$((fail + 1)); echo "FAIL $*"; }
done_() { echo "$pass passed, $fail failed"; exit $((fail > 0 ? 1 : 0)); }
col() { awk -F'\t' -v n="$1" -v c="$2" '$1 == n {print $c}' "$inv"; }
addr_on() { "$lab" exec "$1" "ip -o -4 addr show dev $2 | awk '{print \$4}' | cut -d/ -f1 | head -n 1"; }

[ -r "$inv" ] || { echo "inc-slice: no lab (make lab-up)"; exit 1; }
leaf0=$(awk -F'\t' '$2 == "host" && $3 == 0 {print $7}' "$inv")
case "$scope" in
leaf) mapfile -t hosts < <(awk -F'\t' -v l="$leaf0" '$2 == "host" && $7 == l {print $3 "\t" $1}' "$inv" | sort -n | cut -f2) ;;
tree) mapfile -t hosts < <(awk -F'\t' '$2 == "host" {print $3 "\t" $1}' "$inv" | sort -n | cut -f2) ;;
*) echo "inc-slice: INC_SLICE_SCOPE must be leaf or tree"; exit 2 ;;
esac
n=${#hosts[@]}
declare -A rank lo hi member
for i in "${!hosts[@]}"; do
    h=${hosts[$i]}; rank[$h]=$i; member[$h]=1
    x=$h
    while :; do  # every ancestor up to the communicator's top aggregates ranks of this host
        p=$(col "$x" 7)
        { [ "$p" = - ] || { [ "$scope" = leaf ] && [ "$x" = "$leaf0" ]; }; } && break
        member[$p]=1
        [ -z "${lo[$p]:-}" ] || [ "$i" -lt "${lo[$p]}" ] && lo[$p]=$i
        [ -z "${hi[$p]:-}" ] || [ "$i" -gt "${hi[$p]}" ] && hi[$p]=$i
        x=$p
    done
done
switches=()
for s in $(awk -F'\t' '$2 == "switch" {print $1}' "$inv"); do [ -n "${member[$s]:-}" ] && switches+=("$s"); done
root=""
for s in "${switches[@]}"; do p=$(col "$s" 7); [ -n "${member[$p]:-}" ] || root=$s; done
psn=$((RANDOM * 512 % 16777216)) upsn=$((RANDOM * 256))
echo "inc-slice ($scope): ranks ${hosts[*]}; switches ${switches[*]} (root $root); PSN $psn; counts $counts"

for s in "${switches[@]}"; do
    "$lab" push "$s" "$build/incswitch" /usr/local/bin/incswitch >/dev/null || { ko "copy incswitch to $s"; done_; }
    "$lab" exec "$s" "pkill incswitch; true" >/dev/null
done
declare -A sw_addr  # the address of its switch each host connects to
for i in "${!hosts[@]}"; do
    h=${hosts[$i]} p=$(col "${hosts[$i]}" 7)
    a=$(col "$h" 6)
    sw_addr[$h]=$("$lab" exec "$p" "ip -o -4 route get ${a%/*} | grep -o 'src [0-9.]*' | cut -d' ' -f2")
    "$lab" push "$h" "$build/inccl_check" /usr/local/bin/inccl_check >/dev/null || { ko "copy inccl_check to $h"; done_; }
    "$lab" exec "$h" "pkill inccl_check; rm -f /tmp/inccl.*; (inccl_check -r $i -n $n -s ${sw_addr[$h]} -Q 256 -P $psn \
        -w /tmp/inccl.qpn -G /tmp/inccl.go -c $counts > /tmp/inccl.out 2>&1; echo \$? > /tmp/inccl.rc) \
        < /dev/null > /dev/null 2>&1 &" >/dev/null
done
declare -A qpn
for h in "${hosts[@]}"; do
    for _ in $(seq 1 60); do qpn[$h]=$("$lab" exec "$h" "cat /tmp/inccl.qpn 2>/dev/null") && [ -n "${qpn[$h]}" ] && break; sleep 0.5; done
    [ -n "${qpn[$h]}" ] || { ko "rank ${rank[$h]} on $h created its queue pair: $("$lab" exec "$h" "cat /tmp/inccl.out")"; done_; }
done
ok "$n ranks created their queue pairs"

# Rules: children in rank order; host children on 4791 (QPN 256), switch children on 4792
# (their end 512, ours 768); non-root switches get their parent.
for s in "${switches[@]}"; do
    rules="switch: $s
nslots: 1024
retransmit_us: 200000
ranks: $n"
    p=$(col "$s" 7)
    if [ "$s" != "$root" ]; then
        rules+="
parent: {port: to-$p, local_ip: $(addr_on "$s" "to-$p"), peer_ip: $(addr_on "$p" "to-$s"), local_qpn: 512, peer_qpn: 768, rq_psn: $upsn, sq_psn: $upsn}"
    fi
    rules+="
children:"
    for c in $(awk -F'\t' -v s="$s" '$7 == s {print $1}' "$inv"); do
        [ -n "${member[$c]:-}" ] || continue
        if [ "$(col "$c" 2)" = host ]; then
            a=$(col "$c" 6)
            rules+="
  - {port: to-$c, local_ip: ${sw_addr[$c]}, peer_ip: ${a%/*}, local_qpn: 256, peer_qpn: ${qpn[$c]}, rq_psn: $psn, sq_psn: $psn, first_rank: ${rank[$c]}, nranks: 1}"
        else
            rules+="
  - {port: to-$c, local_ip: $(addr_on "$s" "to-$c"), peer_ip: $(addr_on "$c" "to-$s"), local_qpn: 768, peer_qpn: 512, udp: 4792, rq_psn: $upsn, sq_psn: $upsn, first_rank: ${lo[$c]}, nranks: $((hi[$c] - lo[$c] + 1))}"
        fi
    done
    # children must be listed in rank order
    rules="$(grep -v '^  - ' <<<"$rules")
$(grep '^  - ' <<<"$rules" | sed 's/.*first_rank: \([0-9]*\).*/\1\t&/' | sort -n | cut -f2-)"
    "$lab" exec "$s" "cat > /tmp/rules.yaml <<'RULES'
$rules
RULES
(incswitch -r /tmp/rules.yaml -t 1800 > /tmp/incswitch.out 2>&1; echo \$? > /tmp/incswitch.rc) < /dev/null > /dev/null 2>&1 &
sleep 1; head -n 3 /tmp/incswitch.out" | sed 's/^/  /'
done
for h in "${hosts[@]}"; do "$lab" exec "$h" "touch /tmp/inccl.go" >/dev/null & done  # release all ranks together
wait
t0=$(date +%s)
for h in "${hosts[@]}"; do
    for _ in $(seq 1 1500); do "$lab" exec "$h" "test -e /tmp/inccl.rc" >/dev/null 2>&1 && break; sleep 1; done
done
secs=$(($(date +%s) - t0))
for s in "${switches[@]}"; do
    "$lab" exec "$s" "pkill -TERM incswitch; sleep 1; tail -n 1 /tmp/incswitch.out" | sed 's/^/  /'
done
for h in "${hosts[@]}"; do
    out=$("$lab" exec "$h" "cat /tmp/inccl.out")
    grep '^FAIL' <<<"$out" | head -n 5 | sed "s/^/  $h: /"
    rc=$("$lab" exec "$h" "cat /tmp/inccl.rc" 2>/dev/null)
    if [ "$rc" = 0 ]; then ok "rank ${rank[$h]} ($h): $(tail -n 1 <<<"$out")"; else ko "rank ${rank[$h]} ($h) exit '$rc': $(tail -n 1 <<<"$out")"; fi
done
echo "  (all ranks done in $secs s)"
for s in "${switches[@]}"; do "$lab" exec "$s" "pkill incswitch; true" >/dev/null 2>&1; done
done_
