#!/usr/bin/env bash
# mixed-tree.sh — any tree (issue 15): topology/1-2-2-2.yaml, whose switches
# have both host and switch children (sw0: sw1 then pku4; sw1: pku1 then sw2)
# and whose hosts sit at three depths, booted with namespace switches; every
# collective x dtype x op (AllReduce and Reduce int32/float32 SUM/MAX/MIN,
# Broadcast, Barrier with a late rank) verified on all 4 ranks by inccl_check,
# float32 bit for bit in the order of the tree ((0,(1,2)),3), at counts of one
# packet, several, and more packets than a switch has slots (8,193: the slot
# table wraps); then lab-down, which must leave nothing.
#
#   tests/system/mixed-tree.sh                (make test-lab-mixed; part of make test)
#
# Its own lab: prefix inclab-mx (INCLAB_PREFIX overrides it) and state, so a
# user's lab is left alone. Hosts of 1536 MiB: about 8 GiB for the 4 host VMs.
# MIXED_COUNTS overrides the counts (printed; .ci/run clears it).
# Prints each phase's time; "N passed, M failed" only at its end.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/lib/harness.sh
. tests/lib/labclean.sh
export TOPOLOGY=topology/1-2-2-2.yaml SWITCHES=netns INCLAB_PREFIX=${INCLAB_PREFIX:-inclab-mx}
export INCLAB_STATE=/var/lib/inclab/$INCLAB_PREFIX INCLAB_UDP_BASE=${INCLAB_UDP_BASE:-48300}
INCLAB_BUILD=$(cd "${INCLAB_BUILD:-${BUILD:-build}}" 2>/dev/null && pwd) || { echo "mixed-tree: no build directory (make payload)"; exit 2; }
export INCLAB_BUILD
state=$INCLAB_STATE
# one packet, a few, 257 packets, and 8,193 (the controller gives each switch 8,192 slots)
counts=${MIXED_COUNTS:-1,257,65539,2097155}
down() { lab/lab.sh down > /dev/null 2>&1; }
harness_begin mixed-tree "up collectives down"
harness_on_exit down
echo "mixed-tree: $TOPOLOGY, switches $SWITCHES, prefix $INCLAB_PREFIX; counts $counts${MIXED_COUNTS:+ (MIXED_COUNTS)}"

phase up "lab-up of $TOPOLOGY with SWITCHES=netns"
t0=$(date +%s)
if ! lab/lab.sh up; then ko "lab-up of $TOPOLOGY"; harness_stop "no lab"; fi
ok "lab-up: $(grep -v '^#' "$state/gen/inventory.tsv" | wc -l) nodes ready in $(($(date +%s) - t0)) s"

phase collectives "every collective x dtype x op on the 4 ranks of the mixed tree"
# the tree inccl_check computes its float32 reference in, from the inventory
INC_SCOPE=tree INC_COUNTS=$counts INC_PATTERN=ieee sub_test tests/system/inc-collectives.sh

phase down "lab-down leaves nothing"
check "lab-down" lab/lab.sh down
check "nothing left" lab_is_clean
harness_end
