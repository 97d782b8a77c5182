#!/usr/bin/env bash
# loggp.sh — the measurements a LogGP fit needs (analysis/, seeds/004: T = L +
# 2o + n·G), between rank 0 and the lowest rank under another leaf of the
# running lab, over RC/rxe across the tree (switches only routing):
#
#   half_rtt  ib_send_lat's typical one-way latency (half a ping-pong) of a
#             message of `bytes`, in microseconds
#   gap       the time per message of a back-to-back stream of such messages
#             (ib_send_bw -e: 1 / message rate), in microseconds
#
#   experiments/loggp.sh > loggp.csv       (LOGGP_SIZES, LOGGP_ITERS to change)
#
# Prints the CSV (header measure,bytes,iters,value_us) on stdout, progress on
# stderr; exit 1 when a measurement fails.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
state=${INCLAB_STATE:-/var/lib/inclab/${INCLAB_PREFIX:-inclab}}
. "$top/experiments/lib.sh"
sizes=${LOGGP_SIZES:-8 64 512 4096 32768}
iters=${LOGGP_ITERS:-100}
[ -r "$state/gen/inventory.tsv" ] || { exp_err "loggp: no lab in $state (make lab-up)"; exit 1; }
read -r src dst addr sg dg < <(exp_pair) || exit 1
# ib_send_lat's field 5 is t_typical (us); ib_send_bw's field 5 is MsgRate
# (Mpps), so 1/rate is the gap in us.
pair=("$src" "$dst" "$addr" "$sg" "$dg")
echo "measure,bytes,iters,value_us"
for s in $sizes; do
    lat=$(exp_perftest_value ib_send_lat 5 "$s" "${pair[@]}" -n "$iters" -F -u 18) || exit 1
    echo "half_rtt,$s,$iters,$lat"
    gap=$(exp_perftest_value ib_send_bw 5 1/ "$s" "${pair[@]}" -n $((iters * 4)) -F -u 18 -e) || exit 1
    echo "gap,$s,$((iters * 4)),$gap"
    echo "loggp: $s B: half round trip $lat us, gap $gap us" >&2
done
