#!/usr/bin/env bash
# inc-reboots.sh — rebooted nodes come back ready without lab-up, on the running lab.
#
# At once: the controller and the leaf switch of the last host are rebooted
# (lab.sh reboot: a VM through its guest agent, a namespace node by killing
# its processes and running what its boot would), and the last host is
# power-cycled (HARD=1: virsh reset, no shutdown). Nothing of lab-up runs.
# Then every node must run a new boot and be ready, every switch must have
# registered with the new controller, and a collective across the whole tree
# must pass with every element verified (inc-collectives.sh, INC_SCOPE=tree).
# Runs in tests/lib/harness.sh: "N passed, M failed" only at its end.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/lib/harness.sh
. tests/lib/registered.sh
harness_begin inc-reboots run
phase run "reboot the controller, a leaf switch and a host; then collectives"
lab=lab/lab.sh
state=${INCLAB_STATE:-/var/lib/inclab/${INCLAB_PREFIX:-inclab}}
inv=$state/gen/inventory.tsv
done_() { harness_end; }
col() { awk -F'\t' -v n="$1" -v c="$2" '$1 == n {print $c}' "$inv"; }

[ -r "$inv" ] || { ko "inc-reboots: no lab in $state (make lab-up)"; done_; }
ctl=$(awk -F'\t' '$2 == "controller" {print $1}' "$inv")
host=$(awk -F'\t' '$2 == "host" {print $3 "\t" $1}' "$inv" | sort -n | tail -n 1 | cut -f2)
leaf=$(col "$host" 7)
mapfile -t switches < <(awk -F'\t' '$2 == "switch" {print $1}' "$inv")
kind() { local k; k=$(col "$1" 11); echo "${k:-vm}"; }
echo "inc-reboots: controller $ctl ($(kind "$ctl")), leaf $leaf ($(kind "$leaf")), host $host ($(kind "$host"), power-cycled)"

# a namespace node has no kernel of its own: its service's pid shows that it restarted
declare -A pid0
for n in "$ctl" "$leaf"; do
    [ "$(kind "$n")" = netns ] && pid0[$n]=$("$lab" exec "$n" "cat /run/inclab/service.pid" 2>/dev/null)
done
t0=$(date +%s)
HARD=1 "$lab" reboot "$host" > /tmp/inclab-reboot-host.log 2>&1 &
p1=$!
"$lab" reboot "$ctl" "$leaf" > /tmp/inclab-reboot-ctl.log 2>&1 &
p2=$!
wait "$p1"; rc1=$?
wait "$p2"; rc2=$?
secs=$(($(date +%s) - t0))
check "lab reboot $ctl $leaf: back and ready ($(tail -n 1 /tmp/inclab-reboot-ctl.log))" [ "$rc2" = 0 ]
check "HARD=1 lab reboot $host: back and ready ($(tail -n 1 /tmp/inclab-reboot-host.log))" [ "$rc1" = 0 ]
echo "  (all three back in $secs s)"
for n in "$ctl" "$leaf" "$host"; do
    if line=$("$lab" exec "$n" /usr/local/sbin/inclab-ready 30 2>&1); then ok "$n ready after its reboot: ${line:0:120}"
    else ko "$n not ready after its reboot: $line"; fi
done

for n in "${!pid0[@]}"; do
    p1=$("$lab" exec "$n" "cat /run/inclab/service.pid" 2>/dev/null)
    check "$n (namespace node): its service runs anew (pid ${pid0[$n]:-none} before, ${p1:-none} after; the old one gone)" \
        sh -c "[ -n '${pid0[$n]}' ] && [ -n '$p1' ] && [ '${pid0[$n]}' != '$p1' ] && ! kill -0 '${pid0[$n]}' 2>/dev/null"
done

# every switch registered again with the rebooted controller (they retry every 2 s)
nsw=${#switches[@]}
switches_registered "$ctl" "$nsw"
check "all $nsw switches registered with the rebooted controller (${reg:-0})" [ "${reg:-0}" -ge "$nsw" ]

INC_SCOPE=tree INC_COUNTS=1,257,65539 sub_test tests/system/inc-collectives.sh
done_
