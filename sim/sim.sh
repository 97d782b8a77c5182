#!/usr/bin/env bash
# sim.sh COLLECTIVE — `make sim-allreduce`, `make sim-reduce`, `make sim-broadcast`,
# `make sim-allgather`, `make sim-reducescatter`, `make sim-alltoall`, `make sim-barrier`:
# that collective on a tree in incsim (sim/README.md), stored as a run directory
# in RESULTS (default results/) for `make plots`.
#
# Settings come from the environment (make exports what its command line sets),
# as the exp-* targets' do:
#   TOPOLOGY   a topology file (topology/1-2-4.yaml) or a tree's shape (1-32-1024)
#   SIZE       bytes per rank, K/M/G suffixes; or SIZES='1M 16M 64M'; allgather,
#              reducescatter, alltoall: the whole buffer (nccl-tests' size, as exp-*),
#              rounded down to whole blocks of ranks float32 elements; barrier: none
#   RUN        a lab run directory whose measurements give the parameters (as the
#              analytic model reads them: loggp.csv, cpu.csv, switch-counters.txt)
#   LINK_BW (MB/s) LINK_LATENCY (us) HOST_O (us) HOST_G (us/B) SWITCH_FRAME (us)
#   CORES      the parameters by hand (they win over RUN's); HOST_O and HOST_G set
#              every per-message and per-byte host cost alike; CORES the machine's
#              cores every node shares (0: a core per node, as on real hardware)
#   ROOT       the root rank of a Reduce or Broadcast (default 0); refused by the others
#   ALGORITHMS inc,ring (default both)   LOSS  WINDOW  MESSAGE  SLOTS  SEED
#   QUEUE (frames of a device queue and a switch's receive ring)  RTO (us)
#   UNIT       packets per model frame (1: the lab's frames; 16: a message each, ~7x fewer events)
#   RESULTS    default results
# Exit: incsim's (0 verified, 1 a wrong result, 2 bad settings).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
incsim=${INCLAB_BUILD:-$top/build}/incsim
coll=${1:-allreduce}
case $coll in
    allreduce|reduce|broadcast|allgather|reducescatter|alltoall|barrier) ;;
    *) echo "sim: '$coll' is not simulated: allreduce, reduce, broadcast, allgather, reducescatter, alltoall or barrier" >&2; exit 2 ;;
esac
[ -x "$incsim" ] || { echo "sim: $incsim is missing: make $incsim" >&2; exit 2; }
args=()
topo=${TOPOLOGY:-topology/1-2-4.yaml}
if [[ $topo =~ ^1(-[0-9]+)+$ ]]; then
    args+=(--tree "$topo")
else
    args+=(--topology "$topo")
fi
if [ -n "${SIZES:-}" ]; then
    [ -z "${SIZE:-}" ] || { echo "sim: give SIZE or SIZES, not both" >&2; exit 2; }
    read -ra list <<< "$SIZES"
    args+=(--size "$(IFS=,; echo "${list[*]}")")
elif [ -n "${SIZE:-}" ]; then
    args+=(--size "$SIZE")
elif [ "$coll" = barrier ]; then
    : # a Barrier has no size
else
    echo "sim: give SIZE=64M (or SIZES='1M 16M 64M')" >&2; exit 2
fi
opt() { if [ -n "${!1:-}" ]; then args+=("$2" "${!1}"); fi; }
opt RUN --run
opt LINK_BW --link-bw-MBps
opt LINK_LATENCY --link-latency-us
opt HOST_O --host-o-us
opt HOST_G --host-G-us-per-byte
opt SWITCH_FRAME --switch-frame-us
opt CORES --cores
opt ALGORITHMS --algorithms
opt LOSS --loss
opt WINDOW --window
opt MESSAGE --message
opt SLOTS --slots
opt SEED --seed
opt QUEUE --queue
opt RTO --rto-us
opt UNIT --unit
args+=(--collective "$coll")
opt ROOT --root # incsim refuses it for a collective without a root
results=${RESULTS:-results}
if [ -e "$results" ] && [ ! -d "$results" ]; then
    echo "sim: RESULTS '$results' is not a directory" >&2; exit 2
fi
mkdir -p -- "$results"
commit=$(git -C "$top" rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ "$commit" != unknown ] && [ -n "$(git -C "$top" status --porcelain --untracked-files=no 2>/dev/null)" ]; then
    commit=$commit-dirty
fi
exec "$incsim" "${args[@]}" --results "$results" --commit "$commit"
