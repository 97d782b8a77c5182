#!/usr/bin/env bash
# test-lab-aborts.sh — the lab system test itself cannot pass when it is cut
# short. tests/system/lab-test.sh, on the real lab, is ended at several
# points: a set -u abort and an `exit 0` as phase 1 begins
# (HARNESS_ABORT_AT), SIGTERM to its process group while phase 1's
# half-failed lab-up boots the VMs, and SIGINT (a terminal's Ctrl-C) while
# phase 2's lab-up runs. Each time it must exit non-zero, name the phase it
# was in and those it never began, print no closing count line, and leave no
# lab behind (its cleanup runs on every end). Needs what the lab needs
# (images, libvirt); runs before the lab test in `make test`.
# Runs in tests/lib/harness.sh: "N passed, M failed" only at its end.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/lib/harness.sh
. tests/lib/labclean.sh
# A lab of its own, never the user's (whose default prefix is inclab, UDP ports
# from 47000): its names, state and loopback ports (README, Tests).
export INCLAB_PREFIX=${INCLAB_PREFIX:-inclab-test} INCLAB_UDP_BASE=${INCLAB_UDP_BASE:-48600}
export INCLAB_STATE=${INCLAB_STATE:-/var/lib/inclab/$INCLAB_PREFIX}
state=${INCLAB_STATE:-/var/lib/inclab/$INCLAB_PREFIX}
harness_begin test-lab-aborts "abort-at-start exit0-at-start term-in-1 int-in-2"
tmp=$(mktemp -d)
gone() { rm -rf "$tmp"; }
harness_on_exit gone
# every phase of the full test, on the all-VM lab: the list the lab test itself runs
export LAB_TEST_DEPTH=full SWITCHES=vm
all=$(sed -n 's/^full) phases="\(.*\)" ;;$/\1/p' tests/system/lab-test.sh)
[ -n "$all" ] || { ko "test-lab-aborts: no 'full) phases=\"...\" ;;' line in tests/system/lab-test.sh"; harness_end; }

# judge WHAT RC LEFT — the lab test's run in $tmp/out ended abnormally: exit
# RC non-zero, no closing count line, phases LEFT named, and no lab left.
judge() {
    local what=$1 rc=$2 left=$3
    check "$what: exit $rc, $(grep -m 1 'ABORTED' "$tmp/out" | cut -c1-120)" \
        sh -c "[ $rc != 0 ] && ! grep -q '^[0-9]* passed, [0-9]* failed\$' '$tmp/out' &&
               grep -q 'did not finish: $left;' '$tmp/out'"
    check "$what: nothing of the lab left behind" lab_is_clean
}

# run_until FILE PATTERN SIGNAL — start the lab test as its own process
# group, send SIGNAL to the group once PATTERN shows in FILE (the lab test's
# output or a log it writes; then wait KILL_DELAY s, default 5, so that the
# work is under way), and return the lab test's exit status.
run_until() {
    local file=$1 pattern=$2 sig=$3 pid rc
    rm -f "$file"
    set -m
    # default signal actions, whatever this test inherited (test-harness.sh says why)
    env --default-signal=INT,TERM,HUP tests/system/lab-test.sh > "$tmp/out" 2>&1 &
    pid=$!
    set +m
    for _ in $(seq 1 1800); do
        grep -q -- "$pattern" "$file" 2>/dev/null && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.5
    done
    sleep "${KILL_DELAY:-5}"
    echo "  at '$pattern' in $(basename "$file") + ${KILL_DELAY:-5} s: SIG$sig to the lab test's process group"
    kill -"$sig" -- -"$pid" 2>/dev/null
    wait "$pid"; rc=$?
    tail -n 3 "$tmp/out" | sed 's/^/    /'
    return $rc
}

phase abort-at-start "a set -u abort as phase 1 begins"
HARNESS_ABORT_AT=1:unset tests/system/lab-test.sh > "$tmp/out" 2>&1
judge "set -u abort in phase 1" $? "$all"

phase exit0-at-start "an exit 0 as phase 1 begins"
HARNESS_ABORT_AT=1:exit0 tests/system/lab-test.sh > "$tmp/out" 2>&1
judge "exit 0 in phase 1" $? "$all"

phase term-in-1 "SIGTERM while phase 1's half-failed lab-up boots the VMs"
# (the half-failed lab-up logs into /tmp/inclab-halfup.log: its wait for the VMs)
KILL_DELAY=2 run_until /tmp/inclab-halfup.log 'waiting for [0-9]* nodes' TERM
judge "SIGTERM in phase 1" $? "$all"

phase int-in-2 "SIGINT while phase 2's lab-up runs"
run_until "$tmp/out" '--- \[[0-9]* s\] 2\. lab-up' INT
judge "SIGINT in phase 2" $? "${all#1 }"
harness_end
