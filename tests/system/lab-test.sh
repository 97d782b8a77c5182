#!/usr/bin/env bash
# lab-test.sh — system test of the lab on real QEMU/libvirt/cloud-init/rdma_rxe.
#
# Phases (each timed):
#   1. a half-failed lab-up (boot limit forced to 5 s) fails with an error, and
#      lab-down then removes everything it left
#   2. lab-up of $TOPOLOGY until every node is ready; a second lab-up is a no-op
#   3. node checks through the command runner: hostname, role, lab-status (the
#      table, and FORMAT=json against topogen and the addresses the nodes have)
#   4. data plane: every tree edge carries traffic (ping across it, NIC
#      counters move), host-to-host traffic crosses the tree (TTL shows the
#      hops), ib_send_bw from rank 0 to the first rank under another leaf crosses the tree
#      (experiments/ceiling.sh, spinning and sleeping on CQ events)
#   4b. the riskiest link: real rdma_rxe on a host accepts the ACKs and SENDs
#      built by the switch code (tests/system/rc-slice.sh), captured on the
#      edge with `lab capture` and decoded by tshark; then the edge and the
#      leaf's uplink captured around a tree AllReduce, every switch end's port
#      counters (rx, tx) equal to the captured frames of their kind
#   4c. in-network AllReduce/Reduce/Broadcast/Barrier of the ranks under one
#      leaf, bootstrapped through the controller and the switch daemons running
#      as services, every result verified on every rank (tests/system/inc-collectives.sh)
#   4d. the same for every rank across the whole tree, with float inputs whose
#      sums round, NaN, ±Inf, ±0 and int32 overflow, checked bit for bit
#      against the order of the tree, and barriers with a late rank; at full
#      depth also ranks that disagree on the count (every rank fails, clearly)
#   4i. several jobs at once: four communicators over the same switches (two
#      with no host in common, others sharing hosts), every element verified;
#      a fifth, while they run, refused at once with EBUSY naming the full
#      switch; then alone it passes (tests/system/inc-jobs.sh)
#   4e. large collectives: every collective x op at 64 MiB (float32) on every
#      rank across the tree, a 512 MiB AllReduce under one leaf (inccl_perf),
#      and the ring baseline's AllReduce and Broadcast across the tree
#   4f. the checkers catch a wrong switch: the leaf's switch corrupts one
#      element of one result, drops one rank's contribution, releases the
#      barrier early (lab.sh fault; this is a test lab): inccl_check and
#      inccl_perf must report it and exit non-zero; then a clean run passes
#   4h. deaths: incswitch on a leaf, a member's inccl_perf and rank 0's, each
#      killed mid-AllReduce: every other rank exits with the reason within
#      10 s; the switch restarts, registers again and a new AllReduce passes
#      (tests/system/inc-deaths.sh)
#   4g. one small experiment end to end: make exp-allreduce with every
#      baseline (ceiling, LogGP, ring, OpenMPI), then make plots on what it
#      stored (tests/system/exp-plots.sh)
#   4j. reboots: the controller and a leaf switch rebooted and a host
#      power-cycled at once come back ready without lab-up, the switches
#      register again, and collectives across the tree pass
#      (tests/system/inc-reboots.sh); in both depths (VM and namespace nodes
#      come back differently)
#   4k. restarts: lab-stop saves every VM (managed save) and stops the
#      namespace nodes; lab-status says stopped, no QEMU of the lab runs; lab-up
#      restores it (seconds printed), every node ready, the VMs' same boot and
#      their clocks set, the switches registered, collectives across the tree
#      pass (tests/system/lab-restore.sh; about a minute); in both depths
#   5. lab-down leaves no domain, network, bridge, process or state; a second
#      lab-down is a no-op
# Runs in tests/lib/harness.sh: ends with "N passed, M failed" only when it
# reached its end, exit status 0 only when nothing failed; a signal, an abort
# or a phase that never ran exits non-zero and names the phases left.
# The lab is a test lab (INCLAB_TEST_LAB=1: its switches allow fault injection).
# Sizes: INC_TREE_COUNTS, INC_BLOCK_COUNTS (AllGather, ReduceScatter, AllToAll
# per block; default the tree counts), INC_LARGE_COUNT, INC_HUGE, EXP_SIZE override the
# defaults below and are printed at the start (.ci/run clears them).
# INCLAB_KEEP=1 leaves the lab up after the test (for debugging): the run then
# stops before phase 5 and does not pass. SWITCHES=netns tests a lab whose
# switches and controller are network namespaces (lab.sh); default vm.
# LAB_TEST_DEPTH=full (default) runs every phase; core runs what depends on
# how the nodes are made (1 2 3 4 4b 4c 4d 4j 4k 5: boot, nodes, every edge, the
# switch code against real rxe, the collectives under a leaf and across the
# tree, reboots, restarts) and leaves out 4i 4e 4f 4h 4g (several jobs, large collectives, fault
# injection, deaths, an experiment), which do not: make test runs them on one mode only (README).
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/lib/harness.sh
. tests/lib/labclean.sh
: "${TOPOLOGY:=topology/1-2-4.yaml}"
export TOPOLOGY
# A lab of its own, never the user's (whose default prefix is inclab, UDP ports
# from 47000): its names, state and loopback ports (README, Tests).
export INCLAB_PREFIX=${INCLAB_PREFIX:-inclab-test} INCLAB_UDP_BASE=${INCLAB_UDP_BASE:-48600}
export INCLAB_STATE=${INCLAB_STATE:-/var/lib/inclab/$INCLAB_PREFIX}
export INCLAB_TEST_LAB=1
: "${SWITCHES:=vm}"
export SWITCHES
# the binaries of make's BUILD (lab.sh and the sub-tests read INCLAB_BUILD)
INCLAB_BUILD=$(cd "${INCLAB_BUILD:-${BUILD:-build}}" 2>/dev/null && pwd) || { echo "lab-test: no build directory '${INCLAB_BUILD:-${BUILD:-build}}' (make payload)"; exit 2; }
export INCLAB_BUILD
state=${INCLAB_STATE:-/var/lib/inclab/$INCLAB_PREFIX}
lab=lab/lab.sh
tree_counts=${INC_TREE_COUNTS:-1,257,65539}
block_counts=${INC_BLOCK_COUNTS:-$tree_counts}
large_count=${INC_LARGE_COUNT:-16777216}
huge=${INC_HUGE:-512M}
exp_size=${EXP_SIZE:-1M}

on() { "$lab" exec "$@"; }
cleanup() { if [ "${INCLAB_KEEP:-0}" != 1 ]; then "$lab" down >/dev/null 2>&1; fi; }
case ${LAB_TEST_DEPTH:=full} in
full) phases="1 2 3 4 4b 4c 4d 4i 4e 4f 4h 4g 4j 4k 5" ;;
core) phases="1 2 3 4 4b 4c 4d 4j 4k 5" ;;
*) echo "lab-test: LAB_TEST_DEPTH must be full or core, not '$LAB_TEST_DEPTH'"; exit 2 ;;
esac
harness_begin lab-test "$phases"
harness_on_exit cleanup
over=""
for v in INC_TREE_COUNTS INC_BLOCK_COUNTS INC_LARGE_COUNT INC_HUGE EXP_SIZE INCLAB_KEEP; do
    [ -z "${!v:-}" ] || over+=" $v=${!v}"
done
echo "lab test ($LAB_TEST_DEPTH: phases $phases): $TOPOLOGY, switches $SWITCHES; tree counts $tree_counts, block counts $block_counts, large count $large_count, huge AllReduce $huge, experiment size $exp_size${over:+; set in the environment:$over}"

inv() { grep -v '^#' "$state/gen/inventory.tsv"; }
field() { awk -F'\t' -v n="$1" -v c="$2" '$1 == n {print $c}' "$state/gen/inventory.tsv"; }

# ---------------------------------------------------------------------------
phase 1 "half-failed lab-up, then lab-down"
"$lab" down >/dev/null 2>&1
if INCLAB_BOOT_TIMEOUT=5 "$lab" up > /tmp/inclab-halfup.log 2>&1; then
    ko "lab-up with a 5 s boot limit should fail"
else
    check "half-failed lab-up says why: $(grep -m1 -o 'timeout after 5 s.*' /tmp/inclab-halfup.log | cut -c1-60 ||
        tail -n 3 /tmp/inclab-halfup.log)" \
        grep -q 'timeout after 5 s' /tmp/inclab-halfup.log
fi
check "lab-down after a half-failed lab-up removes everything" sh -c "'$lab' down >/dev/null 2>&1"
check "nothing left behind after lab-down" lab_is_clean

# ---------------------------------------------------------------------------
phase 2 "lab-up"
t0=$(date +%s)
if ! "$lab" up; then
    ko "lab-up of $TOPOLOGY"
    harness_stop "no lab to test"
fi
up_s=$(($(date +%s) - t0))
ok "lab-up of $TOPOLOGY: every node ready in $up_s s"
t0=$(date +%s)
"$lab" up > /tmp/inclab-up2.log 2>&1; rc=$?
check "second lab-up is a no-op (exit $rc, $(($(date +%s) - t0)) s, starts nothing)" \
    sh -c "[ $rc = 0 ] && grep -q 'every VM already running' /tmp/inclab-up2.log"

# ---------------------------------------------------------------------------
phase 3 "nodes"
for n in $(inv | cut -f1); do
    if [ "$(field "$n" 11)" = netns ]; then
        # a namespace node has the machine's hostname: check where it runs
        h=$(on "$n" 'ip netns identify $$' 2>&1)
        check "$n: runs in network namespace '$h'" [ "$h" = "$INCLAB_PREFIX-$n" ]
    else
        h=$(on "$n" hostname 2>&1)
        check "$n: hostname is '$h'" [ "$h" = "$n" ]
    fi
    r=$(on "$n" '. /etc/inclab/node.conf; echo $ROLE' 2>&1)
    check "$n: role from its NoCloud seed is '$r'" [ "$r" = "$(field "$n" 2)" ]
done
# nodes_ready STATUS — how many nodes lab-status STATUS shows running (or a namespace) and ready
nodes_ready() { grep -c ' \(running\|netns\) .*ready=yes' <<<"$1"; }
status=$("$lab" status 2>&1)
echo "$status"
check "lab-status shows every node running and ready" [ "$(nodes_ready "$status")" = "$(inv | wc -l)" ]
# lab-status FORMAT=json: JSON (jq) that lists every node of the topology
# running and ready; its static facts those topogen prints for the topology
# file now, and each node's addresses those the node itself has (ip addr in it)
json=$("$lab" status --format json 2>/tmp/inclab-status-json.err); rc=$?
check "lab-status --format json: exit $rc, a JSON document (jq)$(head -c 200 /tmp/inclab-status-json.err)" \
    sh -c '[ "$1" = 0 ] && printf "%s" "$2" | jq -e "type == \"object\"" >/dev/null' _ "$rc" "$json"
want_nodes=$(inv | cut -f1 | tr '\n' ' ')
got=$(jq -r '[.nodes[] | select(.state == "running" and .ready == true) | .name] | join(" ")' <<<"$json" 2>&1)
check "lab-status JSON: lab '$INCLAB_PREFIX', switches $SWITCHES, state running and ready, every node running and ready ($got)" \
    sh -c '[ "$1 " = "$2" ] && printf "%s" "$3" | jq -e --arg p "$4" --arg s "$5" \
        ".lab == \$p and .switches == \$s and .state == \"running\" and .ready == true" >/dev/null' \
    _ "$got" "$want_nodes" "$json" "$INCLAB_PREFIX" "$SWITCHES"
"$INCLAB_BUILD/topogen" --json --prefix "$INCLAB_PREFIX" --switches "$SWITCHES" "$TOPOLOGY" > /tmp/inclab-topogen.json 2>&1
check "lab-status JSON: nodes, roles, kinds, addresses, interfaces and links are what topogen --json says of $TOPOLOGY" \
    sh -c 'printf "%s" "$1" | jq -e --slurpfile t /tmp/inclab-topogen.json \
        "del(.state_dir, .accelerator, .test_lab, .state, .ready) | .nodes |= map(del(.state, .ready, .readiness)) | . == \$t[0]" >/dev/null' _ "$json"
for n in $(inv | cut -f1); do
    # what the node has: "IF ADDR/LEN" per IPv4 address of global scope, sorted
    has=$(on "$n" "ip -o -4 addr show scope global" 2>/dev/null | awk '{print $2, $4}' | sort | tr '\n' ' ')
    says=$(jq -r --arg n "$n" '.nodes[] | select(.name == $n) | (.management, .addresses[]) | "\(.interface) \(.address)/\(.prefix)"' <<<"$json" | sort | tr '\n' ' ')
    check "lab-status JSON: $n's addresses are those $n has (${has% })" sh -c '[ -n "$1" ] && [ "$1" = "$2" ]' _ "$has" "$says"
done
# The machine's own namespace: no address on any of the lab's devices, and no
# route through one (it must never send to the lab).
lab_devs=$( (echo "$INCLAB_PREFIX-mgmt"; [ -r "$state/gen/wires.tsv" ] && grep -v '^#' "$state/gen/wires.tsv" | cut -f8-10 | tr '\t' '\n') | grep -v '^-$' | sort -u)
own=$(for d in $lab_devs; do ip -o addr show dev "$d" 2>/dev/null; ip route show dev "$d" 2>/dev/null; done)
check "the machine's namespace has no address or route on the lab's $(wc -w <<<"$lab_devs") devices${own:+: $own}" [ -z "$own" ]
"$lab" exec nosuchnode true >/dev/null 2>&1; rc=$?
check "exec on an unknown node fails with a message (exit $rc)" [ $rc -ne 0 ]
on pku1 'exit 7' >/dev/null 2>&1; rc=$?
check "exec returns the command's exit code (7 -> $rc)" [ $rc = 7 ]
# lab-down of another lab (here one that does not exist) touches nothing of this
# one: libvirtd stays (it once stopped the daemons under a running lab)
INCLAB_PREFIX=$INCLAB_PREFIX-o INCLAB_STATE=$state-o "$lab" down > /tmp/inclab-down-other.log 2>&1; rc=$?
status=$("$lab" status 2>&1)
check "lab-down of another prefix: exit $rc, libvirtd still answers, every node still running and ready" \
    sh -c '[ "$1" = 0 ] && virsh -q -c qemu:///system list --name >/dev/null 2>&1 && [ "$2" = "$3" ]' \
    _ "$rc" "$(nodes_ready "$status")" "$(inv | wc -l)"

# ---------------------------------------------------------------------------
phase 4 "data plane"
# Each tree edge: ping from one end to the other end's address on that link,
# and the receiving NIC's counter must move by at least the pings.
while IFS=$'\t' read -r idx a ifa porta b ifb portb subnet; do
    baddr=$(on "$b" "ip -o -4 addr show | awk '/ (to-$a|br[0-9]+) / {print \$4}' | head -n 1" 2>/dev/null)
    baddr=${baddr%/*}
    # a bridged host port has no address: ping the address the peer uses on its side
    [ -n "$baddr" ] || baddr=$(on "$b" "ip -o -4 addr show dev $ifb | awk '{print \$4}'" 2>/dev/null | cut -d/ -f1)
    rx0=$(on "$b" "cat /sys/class/net/$ifb/statistics/rx_packets" 2>/dev/null)
    out=$(on "$a" "ping -c 3 -i 0.2 -W 3 $baddr" 2>&1); rc=$?
    rx1=$(on "$b" "cat /sys/class/net/$ifb/statistics/rx_packets" 2>/dev/null)
    check "edge $a-$b ($subnet): ping $baddr $(grep -o '[0-9]* received' <<<"$out"), $b:$ifb rx +$((rx1 - rx0)) packets" \
        sh -c "[ $rc = 0 ] && [ $((rx1 - rx0)) -ge 3 ]"
done < <(grep -v '^#' "$state/gen/links.tsv")

hosts=$(inv | awk -F'\t' '$2 == "host" {print $3, $1}' | sort -n | cut -d' ' -f2)
# From rank 0 to the lowest rank under another leaf (pku1 -> pku3 in 1-2-4), so the
# path crosses the whole tree; with a single leaf, to the last rank.
src=$(head -n 1 <<<"$hosts")
dst=$(inv | awk -F'\t' -v p="$(field "$src" 7)" '$2 == "host" && $7 != p {print $3, $1}' | sort -n | head -n 1 | cut -d' ' -f2)
[ -n "$dst" ] || dst=$(tail -n 1 <<<"$hosts")
dst_addr=$(field "$dst" 6); dst_addr=${dst_addr%/*}
src_addr=$(field "$src" 6); src_addr=${src_addr%/*}
# Hops on the tree path = switches a packet crosses; each forwarding decrements the TTL.
hops=$(awk -F'\t' -v s="$src" -v d="$dst" '
    { parent[$1] = $7 }
    END { n = 0; for (x = parent[s]; x != "-"; x = parent[x]) { up[x] = ++n }
          m = 0; for (y = parent[d]; y != "-"; y = parent[y]) { m++; if (y in up) { print up[y] + m - 1; exit } } }' \
    <(inv))
out=$(on "$src" "ping -c 3 -i 0.2 -W 3 $dst_addr" 2>&1); rc=$?
ttl=$(grep -o 'ttl=[0-9]*' <<<"$out" | head -n 1 | cut -d= -f2)
check "$src -> $dst ($dst_addr) crosses $hops switches: ping ok, reply ttl=$ttl (64 - $hops)" \
    sh -c "[ $rc = 0 ] && [ '$ttl' = $((64 - hops)) ]"

# The RDMA ceiling (experiments/ceiling.sh, as every experiment measures it):
# busy polling (perftest's default) and sleeping on CQ events (-e).
for mode in poll events; do
    row=$(if [ $mode = events ]; then CEILING_EVENTS=1 experiments/ceiling.sh; else experiments/ceiling.sh; fi 2>/tmp/inclab-ceiling.err)
    rc=$?
    bw=$(cut -d, -f11 <<<"$row")
    check "ceiling ($mode): $(tail -n 1 /tmp/inclab-ceiling.err)" sh -c "[ $rc = 0 ] && [ -n '$bw' ]"
done

# ---------------------------------------------------------------------------
phase 4b "frames built by the switch code, accepted by real rdma_rxe"
host0=$(inv | awk -F'\t' '$2 == "host" && $3 == 0 {print $1}')
leaf0=$(field "$host0" 7)
up0=$(field "$leaf0" 7)
# two links at once: the host's edge (the RC slice's frames) and the leaf's uplink, if it has one
caplinks="$leaf0-$host0"; [ "$up0" = - ] || caplinks+=" $up0-$leaf0"
# into a directory of its own: make test stores nothing under results/
capdir=$(mktemp -d)
CAPTURE_DIR=$capdir "$lab" capture "$caplinks" 45 > /tmp/inclab-capture.out 2>&1 &
cap_pid=$!
sleep 2
sub_test tests/system/rc-slice.sh
wait $cap_pid; cap_rc=$?
pcap=$(tail -n 1 /tmp/inclab-capture.out)
if [ -s "$pcap" ]; then
    # tshark's own RoCE dissector: data frames from the host, ACKs and echoes from the switch
    sends=$(tshark -r "$pcap" -Y 'infiniband.bth.opcode <= 5' 2>/dev/null | wc -l)
    acks=$(tshark -r "$pcap" -Y 'infiniband.bth.opcode == 17' 2>/dev/null | wc -l)
    check "lab capture of edge $leaf0-$host0: $(grep -o '[0-9]* frames' /tmp/inclab-capture.out | head -n 1) in $pcap, tshark decodes $sends RC SENDs and $acks ACKs" \
        sh -c "[ $sends -gt 0 ] && [ $acks -gt 0 ]"
    # pcapng, one interface per link named after it (in links.tsv's order), every frame on its own
    names=$(capinfos -M "$pcap" 2>/dev/null | sed -n 's/^ *Name = //p' | sort | tr '\n' ' ')
    want=$(awk -v x="$leaf0" -v y="$host0" -v u="$up0" '!/^#/ && (($2 == x && $5 == y) || ($2 == y && $5 == x) || ($2 == u && $5 == x) || ($2 == x && $5 == u)) {print $2 "-" $5}' \
        "$state/gen/links.tsv" | sort | tr '\n' ' ')
    check "the capture is pcapng with one interface per link: '$names' (want '$want')" \
        bash -c '[ "$(capinfos -t "$1" 2>/dev/null | sed -n "s/^File type: *//p")" = "Wireshark/... - pcapng" ] && [ "$2" = "$3" ]' _ "$pcap" "$names" "$want"
    # udpcap's line per link: frames, the capture's drops, the interface's own counters, lost
    # (the uplink may carry nothing in the window: then 0 frames, and 0 counted)
    for n in $want; do
        line=$(grep "^udpcap: $n: " /tmp/inclab-capture.out)
        frames=$(sed -n 's/^udpcap: [^:]*: \([0-9]*\) frames.*/\1/p' <<<"$line")
        inif=$(tshark -r "$pcap" -Y "frame.interface_name == \"$n\"" 2>/dev/null | wc -l)
        check "capture of $n: nothing lost (exit $cap_rc): ${line#udpcap: }; tshark reads $inif frames of it" \
            bash -c '[ "$1" = 0 ] && [ -n "$3" ] && [ "$3" = "$4" ] && grep -q "capture dropped 0[;,]" <<<"$2" && grep -q "; lost 0$" <<<"$2"' \
            _ "$cap_rc" "$line" "$frames" "$inif"
        # a namespace's interface counted every frame itself: exactly those were captured
        if grep -q ' counted rx ' <<<"$line"; then
            read -r rx tx cin cout < <(sed -n 's/.* counted rx \([0-9]*\) tx \([0-9]*\) (captured in its window \([0-9]*\) + \([0-9]*\)).*/\1 \2 \3 \4/p' <<<"$line")
            check "capture of $n matches the interface's counters: rx $rx = $cin captured in, tx $tx = $cout captured out" \
                bash -c '[ -n "$1" ] && [ "$1" = "$3" ] && [ "$2" = "$4" ]' _ "$rx" "$tx" "$cin" "$cout"
        fi
    done
    # rcecho, not incswitch, answered on the leaf's port: incswitch had it closed (no communicator)
    check "capture of $leaf0-$host0: the switch's port was closed, not compared: $(grep -o "$leaf0-$host0: switch $leaf0 port [^ ]* was closed.*" /tmp/inclab-capture.out)" \
        grep -q "^lab: capture: $leaf0-$host0: switch $leaf0 port [^ ]* was closed the whole window" /tmp/inclab-capture.out
    rm -rf "$pcap" "$capdir"
else
    ko "lab capture of edges $caplinks produced no pcapng (exit $cap_rc): $(cat /tmp/inclab-capture.out)"
fi
# The same links around an in-network AllReduce across the tree (one count,
# ~10 s): each switch end's port counters (incswitch, switch/portstat.h) equal
# the captured frames of their kind, to and from it. The window starts and
# ends idle: the capture is stopped (SIGINT to its udpcap, as Ctrl-C) 2 s
# after the run.
capdir=$(mktemp -d)
CAPTURE_DIR=$capdir "$lab" capture "$caplinks" 600 > /tmp/inclab-capture.out 2>&1 &
cap_pid=$!
# (it reads the switches' counters first: through the guest agent in a VM lab, seconds)
for _ in $(seq 1 300); do pgrep -x -P "$cap_pid" udpcap >/dev/null && break; sleep 0.2; done
sleep 1
INC_SCOPE=tree INC_COUNTS=65539 sub_test tests/system/inc-collectives.sh
sleep 2
pkill -INT -x -P "$cap_pid" udpcap
wait $cap_pid; cap_rc=$?
# "lab: capture: LINK: switch SW port IF counted rx N tx N, captured to it N, from it N; lost N (...)"
cmp=$(grep "^lab: capture: .*: switch .* counted rx " /tmp/inclab-capture.out)
nends=$(for x in $caplinks; do for y in ${x%-*} ${x#*-}; do [ "$(field "$y" 2)" = switch ] && echo "$y"; done; done | wc -l)
ncmp=$(grep -c . <<<"$cmp")
check "capture around a tree AllReduce: exit $cap_rc, $ncmp switch ports compared (want $nends)$([ "$ncmp" = "$nends" ] || echo ": $(grep '^lab: ' /tmp/inclab-capture.out | tr '\n' ' ')")" \
    sh -c '[ "$1" = 0 ] && [ "$2" = "$3" ]' _ "$cap_rc" "$ncmp" "$nends"
while read -r line; do
    [ -n "$line" ] || continue
    read -r drx dtx crx ctx < <(sed -n 's/.* counted rx \([0-9]*\) tx \([0-9]*\), captured to it \([0-9]*\), from it \([0-9]*\);.*/\1 \2 \3 \4/p' <<<"$line")
    check "${line#lab: capture: }" \
        bash -c '[ "${1:-0}" -gt 0 ] && [ "${2:-0}" -gt 0 ] && [ "$1" = "$3" ] && [ "$2" = "$4" ] && grep -q "; lost 0 " <<<"$5"' \
        _ "$drx" "$dtx" "$crx" "$ctx" "$line"
done <<<"$cmp"
rm -rf "$capdir"
# bad input: a link not in the topology, invalid seconds: a precise error, non-zero exit
out=$("$lab" capture "$host0-nosuchnode" 5 2>&1); rc=$?
check "capture of a link not in the topology: exit $rc, '$out'" \
    bash -c '[ "$1" != 0 ] && grep -q "no link .$2-nosuchnode. in this lab" <<<"$3"' _ "$rc" "$host0" "$out"
out=$("$lab" capture "$leaf0-$host0" 0 2>&1); rc=$?
check "capture for 0 seconds: exit $rc, '$out'" \
    bash -c '[ "$1" != 0 ] && grep -q "SECONDS must be a whole number of seconds in 1..86400, not .0." <<<"$2"' _ "$rc" "$out"

# ---------------------------------------------------------------------------
phase 4c "in-network collectives under one leaf switch (libinccl + incswitch)"
sub_test tests/system/inc-collectives.sh

# ---------------------------------------------------------------------------
phase 4d "in-network collectives across the whole tree (leaves forward to the root)"
# every dtype (int32, uint32, int64, uint64, float16, bfloat16, float32, float64):
# on the netns 1-2-4 lab 28 s where int32,float32 alone take 8 s
INC_SCOPE=tree INC_COUNTS=$tree_counts INC_DTYPES=all sub_test tests/system/inc-collectives.sh
# AllGather, ReduceScatter, AllToAll (issue 16) through the switches (ieee inputs, the tree's
# order) and on the ring baseline (exact inputs): every element on every rank, in and out of
# place (36 s and 25 s on a netns 1-2-4 lab at the tree counts 1,257,65539)
INC_SCOPE=tree INC_COUNTS=$block_counts INC_COLLS=allgather,reducescatter,alltoall sub_test tests/system/inc-collectives.sh
INC_SCOPE=tree INC_ALGO=ring INC_COUNTS=$block_counts INC_COLLS=allgather,reducescatter,alltoall \
    sub_test tests/system/inc-collectives.sh
# the bit-exact float check is sensitive to the order of addition: a reference
# that adds ((0+2)+(1+3)) where the switches add ((0+1)+(2+3)) must be caught
if [ "$(inv | awk -F'\t' '$2 == "host"' | wc -l)" = 4 ]; then
    INC_SCOPE=tree INC_COUNTS=257 INC_TREE='((0,2),(1,3))' INC_EXPECT_FAIL='float32 sum .*wrong element' \
        sub_test tests/system/inc-collectives.sh
else
    echo "  (the wrong-order reference check is written for the 4 ranks of 1-2-4)"
fi
# ranks that disagree on the count (issue 16): the last rank's calls a packet longer (256 and 512
# int32: one packet and two), or longer by less than a packet (257 and 300 elements: two packets
# each, the last of another length); through the switches and on the ring. Every rank exits 1, one
# at least saying that another rank's collective differs in count, the others when it gave up (a
# collective waits 15 s at most here); the switches count it apart from other mismatches. On the netns
# 1-2-4 lab: 29, 27 and 25 s. A switch that ignores INC_IMM_LAST fails the first (mismatch_count 0:
# the ranks only failed at the next call's operator), ring ranks that ignore the call's immediate
# fail the third (192 wrong elements on every rank, nobody saying why).
# Full depth only: what they test is the switches' and libinccl's logic, the same binaries in
# both kinds of node (the VM depth saves their 90 s).
count_fail="another rank.s collective (in the same place )?differs in count"
if [ "$LAB_TEST_DEPTH" = full ]; then
INC_SCOPE=tree INC_COUNTS=256 INC_COUNTS_LAST=512 INC_DTYPES=int32 INC_WAIT_MS=15000 INC_LIMIT=180 \
    INC_EXPECT_FAIL=$count_fail sub_test tests/system/inc-collectives.sh
INC_SCOPE=tree INC_COUNTS=257 INC_COUNTS_LAST=300 INC_DTYPES=int32 INC_WAIT_MS=15000 INC_LIMIT=180 \
    INC_EXPECT_FAIL=$count_fail sub_test tests/system/inc-collectives.sh
INC_SCOPE=tree INC_ALGO=ring INC_COUNTS=256 INC_COUNTS_LAST=512 INC_DTYPES=int32 INC_WAIT_MS=15000 INC_LIMIT=180 \
    INC_EXPECT_FAIL=$count_fail sub_test tests/system/inc-collectives.sh
fi

if [ "$LAB_TEST_DEPTH" = full ]; then
# ---------------------------------------------------------------------------
phase 4i "several jobs at once over the same switches; one too many refused with EBUSY"
sub_test tests/system/inc-jobs.sh

# ---------------------------------------------------------------------------
phase 4e "large collectives (inccl_perf, every element verified on every rank)"
# Every collective x op at 64 MiB (16M elements) on every rank across the tree, in
# float32 with the ieee inputs (inccl_check: 8 checks per rank), then one 512 MiB
# AllReduce. What a large count tests (the sliding window, PSN and slot reuse over
# 16 K messages) does not depend on the dtype, and every dtype runs in 4d: int32 as
# well took 553 s here where float32 alone takes about half.
INC_SCOPE=tree INC_COUNTS=$large_count INC_DTYPES=float32 INC_LIMIT=3600 sub_test tests/system/inc-collectives.sh
sub_test tests/system/inc-perf.sh -C allreduce -d float32 -o sum -b "$huge" -e "$huge" -n 1 -w 0
# the host-based baseline (libinccl's ring over RC between the hosts, switches routing)
INC_SCOPE=tree sub_test tests/system/inc-perf.sh -A ring -C allreduce -d float32 -o sum -b 4 -e 4M -f 32 -n 1 -w 1
INC_SCOPE=tree sub_test tests/system/inc-perf.sh -A ring -C broadcast -d int32 -R 2 -b 1028 -e 1028 -n 2 -w 0

# ---------------------------------------------------------------------------
phase 4f "the checkers catch a wrong switch (fault injection, test lab only)"
sub_test tests/system/inc-faults.sh

# ---------------------------------------------------------------------------
phase 4h "deaths: a switch, a member or rank 0 killed mid-AllReduce is an error on every other rank within 10 s"
sub_test tests/system/inc-deaths.sh

# ---------------------------------------------------------------------------
phase 4g "an experiment end to end: make exp-allreduce, then make plots"
sub_test tests/system/exp-plots.sh "$exp_size"
fi

# ---------------------------------------------------------------------------
phase 4j "reboots: the controller, a leaf switch and a host come back ready without lab-up"
sub_test tests/system/inc-reboots.sh

# Every time above was taken inside a guest: each VM's clock must have run at
# this machine's rate since lab-up (lab.sh clocks), else those times are wrong.
clocks=$("$lab" clocks --check 2>&1); rc=$?
sed 's/^/  /' <<<"$clocks"
check "every VM's clock ran at this machine's rate since lab-up (within 1 %)" [ "$rc" = 0 ]

# ---------------------------------------------------------------------------
phase 4k "restarts: lab-stop keeps the lab's state, lab-up brings it back from there"
sub_test tests/system/lab-restore.sh

# ---------------------------------------------------------------------------
phase 5 "lab-down"
[ "${INCLAB_KEEP:-0}" = 1 ] && harness_stop "INCLAB_KEEP=1: leaving the lab up (phase 5 did not run)"
check "lab-down" sh -c "'$lab' down >/dev/null 2>&1"
check "nothing left behind after lab-down" lab_is_clean
check "second lab-down is a no-op" sh -c "'$lab' down 2>&1 | grep -q '0 domain(s) removed'"
harness_end
