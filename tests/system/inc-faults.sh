#!/usr/bin/env bash
# inc-faults.sh — the checkers catch a wrong switch. On a test lab (lab-up
# with INCLAB_TEST_LAB=1) the switch of the ranks under rank 0's leaf is
# told to be wrong (lab.sh fault; switch/engine.h says what each kind does):
#
#   corrupt        one element of one result changes
#   drop           one rank's contribution is left out of one result
#   early-barrier  every barrier is released when the first rank enters
#                  (a rank may then get a barrier's result while it still
#                  finishes the collective before: an unexpected result)
#
# For each kind, inccl_check and inccl_perf on those ranks must report the
# wrong elements (or the barrier left early) and exit 1, with nothing else
# wrong, and the switch must have counted the fault; then, with the fault
# off, a clean run must pass. Also: the fault verb refuses a lab that is not
# a test lab, a node that is not a switch and an unknown kind.
# Runs in tests/lib/harness.sh: "N passed, M failed" only at its end.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/lib/harness.sh
lab=lab/lab.sh
state=${INCLAB_STATE:-/var/lib/inclab/${INCLAB_PREFIX:-inclab}}
inv=$state/gen/inventory.tsv
counts=${INC_FAULT_COUNTS:-257,1031}   # two counts: each of two ranks is once the late one at a barrier
sw=""
off() { [ -z "$sw" ] || "$lab" fault "$sw" off >/dev/null 2>&1; }
harness_begin inc-faults "refusals corrupt drop early-barrier clean"
harness_on_exit off

# refused WHY CMD... — CMD must exit non-zero and say WHY.
said() { [ "$2" != 0 ] && grep -q -- "$1" <<<"$3"; }
refused() {
    local why=$1 out rc
    shift
    out=$("$@" 2>&1); rc=$?
    check "refused (exit $rc): ${*: -3} — '$(tail -n 1 <<<"$out" | cut -c1-100)'" said "$why" "$rc" "$out"
}

# faults_seen — faults_injected summed over the switch's log lines of
# communicators that ended after line $1 of its log.
faults_seen() {
    "$lab" exec "$sw" "tail -n +$(($1 + 1)) /var/log/inclab/incswitch.log" 2>/dev/null |
        grep -o 'faults_injected=[0-9]*' | awk -F= '{s += $2} END {print s + 0}'
}
log_lines() { "$lab" exec "$sw" "wc -l < /var/log/inclab/incswitch.log" 2>/dev/null || echo 0; }

phase refusals "the fault verb refuses what it must"
[ -r "$inv" ] || { ko "inc-faults: no lab in $state (make lab-up)"; harness_end; }
host0=$(awk -F'\t' '$2 == "host" && $3 == 0 {print $1}' "$inv")
sw=$(awk -F'\t' -v h="$host0" '$1 == h {print $7}' "$inv")
echo "inc-faults: faults on $sw, the switch of the ranks under it; inccl_check counts $counts"
refused "faults are injected on switches" "$lab" fault "$host0" corrupt
refused "must be corrupt, drop, early-barrier or off" "$lab" fault "$sw" flip-a-bit
# the same lab's files, marked as not a test lab
notest=$(mktemp -d)
mkdir -p "$notest/gen" && cp "$inv" "$notest/gen/" && grep -v '^LAB_TEST=' "$state/lab.env" > "$notest/lab.env"
refused "for test labs only" env INCLAB_STATE="$notest" "$lab" fault "$sw" corrupt
rm -rf "$notest"
check "the switches of this test lab run incswitch with -F" \
    sh -c "'$lab' exec '$sw' 'grep -q \"fault injection allowed\" /var/log/inclab/incswitch.log'"

# one_fault KIND CHECK_REGEX PERF_ARGS PERF_REGEX — arm KIND, then inccl_check
# and inccl_perf must each catch it (FAIL lines / stderr matching the regexes).
one_fault() {
    local kind=$1 cre=$2 pargs=$3 pre=$4 before n
    check "$sw: fault $kind armed" "$lab" fault "$sw" "$kind"
    before=$(log_lines)
    INC_EXPECT_FAIL=$cre INC_COUNTS=$counts INC_LIMIT=600 sub_test tests/system/inc-collectives.sh
    # shellcheck disable=SC2086
    INC_EXPECT_FAIL=$pre INC_LIMIT=600 sub_test tests/system/inc-perf.sh $pargs
    n=$(faults_seen "$before")
    check "$sw counted the $kind fault in both communicators (faults_injected $n)" [ "$n" -ge 2 ]
}

phase corrupt "one element of one result corrupted"
one_fault corrupt 'wrong element' "-C allreduce -d int32 -o sum -b 4K -e 4K -n 1 -w 0" 'wrong'
phase drop "one rank's contribution dropped from one result"
one_fault drop 'wrong element' "-C allreduce -d float32 -o sum -b 4K -e 4K -n 1 -w 0" 'wrong'
phase early-barrier "every barrier released when the first rank enters"
# A rank released early may also find the barrier's result (immediate
# 0xffff0080: a barrier's, INC_IMM_LAST set as on every call's last packet; no
# data) while it still finishes the collective before: libinccl refuses it as
# unexpected, which is the fault caught too.
one_fault early-barrier 'left after .* before rank|immediate 0xffff0080' "-C barrier -n 2 -w 0" \
    'left after .* before rank|immediate 0xffff0080'

phase clean "the fault off: a clean run"
check "$sw: fault off" "$lab" fault "$sw" off
before=$(log_lines)
INC_COUNTS=$counts sub_test tests/system/inc-collectives.sh
sub_test tests/system/inc-perf.sh -C barrier -n 2 -w 0
n=$(faults_seen "$before")
check "$sw injected no fault with it off (faults_injected $n)" [ "$n" = 0 ]
harness_end
