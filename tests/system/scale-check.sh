#!/usr/bin/env bash
# scale-check.sh — the 16-rank check of issue 14, run by hand (make
# scale-check; CI keeps its time budget): the 1-4-16 tree with namespace
# switches on this machine, every collective x dtype x op verified on all 16
# ranks (inccl_check through tests/system/inc-collectives.sh), then an
# AllReduce sweep with INC, the ring and both ceilings (make exp-sweep,
# interleaved rounds), its plots, and lab-down.
#
#   tests/system/scale-check.sh              (SCALE_MIN=1M SCALE_MAX=64M SCALE_ROUNDS=3 SCALE_PATTERN=ieee)
#
# Leaves a user's lab alone: it uses its own prefix (inclab-sc: 9 characters,
# so its device names are the prefix's, which lab_is_clean looks for) and state.
# Needs about 18.3 GiB of RAM for 16 host VMs of 768 MiB (topology/1-4-16.yaml;
# lab-up refuses to start VMs the machine cannot hold).
# Prints each phase's time; "N passed, M failed" only at its end.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/lib/harness.sh
. tests/lib/labclean.sh
export TOPOLOGY=topology/1-4-16.yaml SWITCHES=netns INCLAB_PREFIX=inclab-sc
export INCLAB_STATE=/var/lib/inclab/$INCLAB_PREFIX INCLAB_UDP_BASE=${INCLAB_UDP_BASE:-48000}
INCLAB_BUILD=$(cd "${INCLAB_BUILD:-${BUILD:-build}}" 2>/dev/null && pwd) || { echo "scale-check: no build directory (make payload)"; exit 2; }
export INCLAB_BUILD
state=$INCLAB_STATE
min=${SCALE_MIN:-1M} max=${SCALE_MAX:-64M} rounds=${SCALE_ROUNDS:-3}
down() { lab/lab.sh down > /dev/null 2>&1; }
harness_begin scale-check "up collectives sweep down"
harness_on_exit down

phase up "lab-up of $TOPOLOGY with SWITCHES=netns"
t0=$(date +%s)
if ! lab/lab.sh up; then ko "lab-up of $TOPOLOGY"; harness_stop "no lab"; fi
ok "lab-up: $(grep -v '^#' "$state/gen/inventory.tsv" | wc -l) nodes ready in $(($(date +%s) - t0)) s"

phase collectives "every collective x dtype x op on all 16 ranks"
# ieee: float sums that round, checked bit for bit in the tree's order (fan-in 4: the switches' child order)
INC_SCOPE=tree INC_COUNTS=${SCALE_COUNTS:-1,257,65539} INC_PATTERN=${SCALE_PATTERN:-ieee} sub_test tests/system/inc-collectives.sh

phase sweep "AllReduce sweep $min..$max, INC, ring and both ceilings, $rounds rounds"
res=${SCALE_RESULTS:-results}
if make -s exp-sweep MIN="$min" MAX="$max" FACTOR=4 COLLECTIVES=allreduce ROUNDS="$rounds" BASELINES="ceiling ceiling-load ring" \
    RESULTS="$res"; then
    ok "sweep stored in $res: $(ls -td "$res"/sweep-* 2>/dev/null | head -n 1)"
    check "make plots on it" make -s plots RESULTS="$res"
else
    ko "make exp-sweep failed"
fi

phase down "lab-down leaves nothing"
check "lab-down" lab/lab.sh down
check "nothing left" lab_is_clean
harness_end
