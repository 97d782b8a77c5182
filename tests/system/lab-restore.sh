#!/usr/bin/env bash
# lab-restore.sh — lab-stop keeps the running lab's state, lab-up brings it back
# from there (no boot), on the running lab.
#
# lab-stop must exit 0; then lab-status shows the lab stopped and every node
# "stopped", no QEMU process of the lab runs, and every VM has a managed save
# image. lab-up must bring it back (its seconds printed; the issue's budget,
# 60 s, is reported, not asserted: it depends on the machine's load) with
# every node ready (inclab-ready: addresses, links, rxe0 ACTIVE with its GID),
# every VM running the same boot as before the stop (its kernel's boot id:
# restored, not rebooted), a namespace node's service running anew (pid),
# every VM's clock set to this machine's again (it stood still while saved),
# every switch registered with the controller, and a collective across the
# whole tree passing with every element verified (inc-collectives.sh,
# INC_SCOPE=tree). About a minute on 1-2-4 under TCG (stop 10-20 s, up
# 20-40 s, collectives 20 s). Runs in tests/lib/harness.sh: "N passed,
# M failed" only at its end.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/lib/harness.sh
. tests/lib/registered.sh
harness_begin lab-restore run
phase run "lab-stop, then lab-up from the saved state; then collectives"
lab=lab/lab.sh
prefix=${INCLAB_PREFIX:-inclab}
state=${INCLAB_STATE:-/var/lib/inclab/$prefix}
inv=$state/gen/inventory.tsv
save_dir=${INCLAB_LIBVIRT_SAVE:-/var/lib/libvirt/qemu/save}
BUDGET_S=60   # the restore time the issue asks for (reported, not asserted)
CLOCK_OFF_S=2 # a restored VM's clock against this machine's: set within this (date's whole seconds, an agent call)
done_() { harness_end; }
col() { awk -F'\t' -v n="$1" -v c="$2" '$1 == n {print $c}' "$inv"; }
kind() { local k; k=$(col "$1" 11); echo "${k:-vm}"; }

[ -r "$inv" ] || { ko "lab-restore: no lab in $state (make lab-up)"; done_; }
mapfile -t nodes < <(grep -v '^#' "$inv" | cut -f1)
mapfile -t switches < <(awk -F'\t' '$2 == "switch" {print $1}' "$inv")
ctl=$(awk -F'\t' '$2 == "controller" {print $1}' "$inv")

# what must survive (a VM's boot) or be new (a namespace node's service)
declare -A boot0 pid0
for n in "${nodes[@]}"; do
    if [ "$(kind "$n")" = netns ]; then pid0[$n]=$("$lab" exec "$n" "cat /run/inclab/service.pid" 2>/dev/null)
    else boot0[$n]=$("$lab" exec "$n" "cat /proc/sys/kernel/random/boot_id" 2>/dev/null); fi
done

t0=$(date +%s)
"$lab" stop > /tmp/inclab-stop.log 2>&1; rc=$?
stop_s=$(($(date +%s) - t0))
sed 's/^/  /' /tmp/inclab-stop.log
check "lab-stop: exit $rc in $stop_s s ($(tail -n 1 /tmp/inclab-stop.log | cut -c16-140))" [ "$rc" = 0 ]

status=$("$lab" status 2>&1)
echo "$status"
nstopped=$(awk 'NR > 2 && $4 == "stopped"' <<<"$status" | wc -l)
check "lab-status: the lab stopped, $nstopped of ${#nodes[@]} nodes 'stopped'" \
    sh -c '[ "$1" = "$2" ] && grep -q "^stopped since" <<EOS
$3
EOS' _ "$nstopped" "${#nodes[@]}" "$status"
# libvirt names the guest "-name guest=DOMAIN,..." on QEMU's command line
qemus=""
for n in "${nodes[@]}"; do
    ps -eo args= | grep -q "^[^ ]*qemu-system[^ ]* .*-name guest=$prefix-$n," && qemus+=" $n"
done
check "no QEMU of the lab runs after lab-stop${qemus:+ (still:$qemus)}" [ -z "$qemus" ]
missing=""
for n in "${!boot0[@]}"; do [ -s "$save_dir/$prefix-$n.save" ] || missing+=" $n"; done
check "every VM's memory saved ($save_dir/DOMAIN.save)${missing:+; none for:$missing}" [ -z "$missing" ]

t0=$(date +%s)
"$lab" up > /tmp/inclab-restore.log 2>&1; rc=$?
up_s=$(($(date +%s) - t0))
grep -E 'restor|resumed|clock set|ready after|warning' /tmp/inclab-restore.log | sed 's/^/  /'
check "lab-up of the stopped lab: exit $rc, restored and ready in $up_s s (budget $BUDGET_S s: $([ "$up_s" -le $BUDGET_S ] && echo met || echo MISSED))" \
    sh -c '[ "$1" = 0 ] && grep -q "restored from saved state and ready" /tmp/inclab-restore.log' _ "$rc"

status=$("$lab" status 2>&1)
nready=$(grep -c ' \(running\|netns\) .*ready=yes' <<<"$status")
check "lab-status: every node running and ready ($nready of ${#nodes[@]}), the lab no longer stopped" \
    sh -c '[ "$1" = "$2" ] && ! grep -q "^stopped since" <<EOS
$3
EOS' _ "$nready" "${#nodes[@]}" "$status"

for n in "${nodes[@]}"; do
    if [ "$(kind "$n")" = netns ]; then
        p1=$("$lab" exec "$n" "cat /run/inclab/service.pid" 2>/dev/null)
        check "$n (namespace node): its service runs anew (pid ${pid0[$n]:-none} before, ${p1:-none} after)" \
            sh -c '[ -n "$1" ] && [ -n "$2" ] && [ "$1" != "$2" ] && kill -0 "$2"' _ "${pid0[$n]}" "$p1"
        continue
    fi
    b1=$("$lab" exec "$n" "cat /proc/sys/kernel/random/boot_id" 2>/dev/null)
    check "$n: restored, not rebooted (boot id ${b1:0:8}, before the stop ${boot0[$n]:0:8})" \
        sh -c '[ -n "$1" ] && [ "$1" = "$2" ]' _ "${boot0[$n]}" "$b1"
    g=$("$lab" exec "$n" "date +%s" 2>/dev/null); h=$(date +%s)
    check "$n: its clock set again (guest $g, this machine $h: within $CLOCK_OFF_S s)" \
        sh -c '[ -n "$1" ] && d=$(($1 - $2)) && [ "${d#-}" -le "$3" ]' _ "$g" "$h" "$CLOCK_OFF_S"
done

# every switch registered with the controller (they retry every 2 s)
switches_registered "$ctl" "${#switches[@]}"
check "all ${#switches[@]} switches registered with the controller after the restore (${reg:-0})" [ "${reg:-0}" -ge "${#switches[@]}" ]

INC_SCOPE=tree INC_COUNTS=1,257,65539 sub_test tests/system/inc-collectives.sh
echo "  (lab-stop $stop_s s, lab-up from the saved state $up_s s)"
done_
