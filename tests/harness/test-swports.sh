#!/usr/bin/env bash
# test-swports.sh — incswitch's counters per port (switch/portstat.h) on a
# real interface, and `lab.sh capture` comparing them with a capture, without
# VMs: a lab of two namespace nodes made by hand (the tables lab.sh reads, the
# nodes' own directories): switch swt runs the real incswitch, a veth to host
# hst (addresses of the benchmarking range 198.18.0.0/15, inside the
# namespaces only), and a stand-in controller (python, the control protocol of
# proto/ctlmsg.h: register, ok, rules, release) on swt's loopback.
#
# From the host, known frames: UDP datagrams to the switch's 4791, 4792 and
# 4793 (the port's capture takes them: rx), to 4790 (it does not), and one
# valid RoCE SEND (ICRC right) ahead of the connection's PSN, which the engine
# NAKs: one frame out (tx). Captured by `lab.sh capture swt-hst`, the switch's
# "ports" line (SIGUSR1) must count exactly those, lab.sh must find the
# capture equal (lost 0, exit 0). After a release the port is closed (open=0):
# frames then are not counted and a capture says "not compared"; rules again
# open it once more (opens=2), counts kept; a port closed in the middle of a
# capture while frames still come: LOST, exit 3, the switch missed them.
# Needs root; about 15 s.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/lib/harness.sh
harness_begin test-swports "setup count closed lost"
build=${BUILD:-build}
[[ $build = /* ]] || build=$PWD/$build
P=${SWPORTS_TEST_PREFIX:-ilsp$$}
P=${P:0:8}
tmp=$(mktemp -d)
nss=() pids=()
mps=() # mount points this test made (see setup)
gone() {
    local x
    for x in "${pids[@]}"; do kill "$x" 2>/dev/null; done
    for x in "${nss[@]}"; do ip netns del "$x" 2>/dev/null; done
    if [ ${#mps[@]} -gt 0 ]; then
        if grep -qs '^LAB_SWITCHES=netns' /var/lib/inclab/*/lab.env; then # a namespace lab came up meanwhile: its lab-down removes them
            printf '%s\n' "${mps[@]}" >> /run/inclab/made-mountpoints
        else
            for ((x = ${#mps[@]} - 1; x >= 0; x--)); do rmdir "${mps[x]}" 2>/dev/null; done
        fi
    fi
    rm -rf "$tmp"
}
harness_on_exit gone
phase setup "namespaces, incswitch serving one communicator on the veth"
if [ "$(id -u)" != 0 ] || ! ip netns list >/dev/null 2>&1; then
    echo "skip: not root, no network namespaces"
    harness_end
fi
S=$P-swt H=$P-hst
nss=("$S" "$H")
# the lab's tables, as topogen writes them, and the switch node's own directories (lab.sh ns_argv)
lab=$tmp/lab root=$tmp/lab/nodes/swt/root
mkdir -p "$lab/gen" "$tmp/caps" && # shellcheck source=lab/nswire.sh
. lab/nswire.sh # NS_DIRS: the list lab.sh and nsnode.sh use
for d in $NS_DIRS; do mkdir -p "$root/$d"; done
printf '# link\tnode_a\tif_a\tport_a\tnode_b\tif_b\tport_b\tsubnet\n0\tswt\tsp\t-\thst\thp\t-\t198.18.0.0/24\n' > "$lab/gen/links.tsv"
printf '# kind\tlink\tnode_a\tif_a\tnode_b\tif_b\tmtu\tbridge\tveth\ttap\nveth\t0\tswt\tsp\thst\thp\t1500\t-\t-\t-\n' > "$lab/gen/wires.tsv"
printf '# node\trole\trank\tmgmt\tdata_if\tdata_addr\tparent\tmemory_mib\tvcpus\tdomain\tkind\n%s\n%s\n' \
    "swt	switch	-1	-	sp	198.18.0.1/24	-	0	0	-	netns" "hst	host	0	-	hp	198.18.0.2/24	swt	0	0	-	netns" > "$lab/gen/inventory.tsv"
swlog=$root/var/log/inclab/incswitch.log
# lab.sh runs a command on a namespace node with the node's own directories
# bind-mounted on the machine's (ns_argv); the mount points must exist, as
# lab-up makes them (ns_mountpoints): those missing are made here, removed at
# the end (if empty), or left to the lab-down of a namespace lab that came up
# meanwhile, recorded as lab-up records them
# shellcheck source=lab/nswire.sh
. lab/nswire.sh # NS_DIRS: the list lab.sh and nsnode.sh use
for d in $NS_DIRS; do
    [ -d "/$d" ] && continue
    mkdir -p "/$d" || { ko "cannot make the mount point /$d"; harness_end; }
    mps+=("/$d")
done
ip netns add "$S" && ip netns add "$H" &&
    ip -n "$S" link add sp type veth peer name hp netns "$H" &&
    ip -n "$S" addr add 198.18.0.1/24 dev sp && ip -n "$H" addr add 198.18.0.2/24 dev hp &&
    ip -n "$S" link set sp up && ip -n "$H" link set hp up && ip -n "$S" link set lo up &&
    for n in "$S" "$H"; do ip netns exec "$n" sysctl -q -w net.ipv6.conf.all.disable_ipv6=1 || exit 1; done ||
    { ko "cannot make the namespaces and veth"; harness_end; }
ip netns exec "$H" ping -c 1 -W 2 198.18.0.1 >/dev/null # neighbours resolved before any count

# The stand-in controller: registration answered, then for each line on its
# stdin ("rules" or "release") that message sent and the switch's answer
# printed ("answer: ..."). Rules: communicator 1, one host child on port sp,
# our QPN 0x100100, its first PSN 100.
cat > "$tmp/ctl.py" <<'EOF'
import socket, sys
RULES = ("msg: rules\ncomm: 1\nswitch: swt\nnslots: 64\nchildren:\n"
         "  - {port: sp, local_ip: 198.18.0.1, peer_ip: 198.18.0.2, local_qpn: 0x100100, peer_qpn: 17,"
         " rq_psn: 100, sq_psn: 200, first_rank: 0}\n")
ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", int(sys.argv[1])))
ls.listen(1)
ls.settimeout(10)
c, _ = ls.accept()
c.settimeout(10)
buf = b""
def message():
    global buf
    while b"\n...\n" not in buf:
        d = c.recv(4096)
        if not d:
            raise SystemExit("the switch closed the connection")
        buf += d
    m, buf = buf.split(b"\n...\n", 1)
    return m.decode()
def say(text):
    c.sendall(text.encode() + b"...\n")
reg = message()
print("registered:", reg.replace("\n", " "), flush=True)
say("msg: ok\n")
for line in sys.stdin:
    say(RULES if line.strip() == "rules" else "msg: release\ncomm: 1\n")
    print("answer:", message().replace("\n", " "), flush=True)
EOF
port=$((52400 + $$ % 500))
mkfifo "$tmp/ctl.in"
ip netns exec "$S" python3 "$tmp/ctl.py" "$port" < "$tmp/ctl.in" > "$tmp/ctl.out" 2>&1 &
pids+=($!)
exec 7> "$tmp/ctl.in"
ip netns exec "$S" "$build/incswitch" -c "127.0.0.1:$port" -n swt > "$swlog" 2>&1 &
swpid=$!
pids+=("$swpid")
echo "$swpid" > "$root/run/inclab/service.pid" # as the lab's service loop writes it
# ctl SAY — send "rules" or "release", wait for the switch's answer (10 s)
ctl() {
    local n
    n=$(grep -c '^answer:' "$tmp/ctl.out")
    echo "$1" >&7
    for _ in $(seq 1 100); do [ "$(grep -c '^answer:' "$tmp/ctl.out")" -gt "$n" ] && break; sleep 0.1; done
    grep '^answer:' "$tmp/ctl.out" | tail -n 1
}
for _ in $(seq 1 100); do grep -q '^registered:' "$tmp/ctl.out" && break; sleep 0.1; done
ans=$(ctl rules)
check "incswitch registered and serves the rules: '$ans'" grep -q 'msg: ok comm: 1' <<<"$ans"
# ports — the ports line incswitch logs on SIGUSR1 (5 s)
ports() {
    local n l=""
    n=$(wc -l < "$swlog")
    kill -USR1 "$swpid"
    for _ in $(seq 1 50); do
        l=$(tail -n +$((n + 1)) "$swlog" | grep -m 1 '^incswitch swt ports:') && break
        sleep 0.1
    done
    echo "$l"
}
l0=$(ports)
check "before any frame: '$l0'" [ "$l0" = "incswitch swt ports: sp rx=0 tx=0 open=1 opens=1" ]

# capture_start / capture_stop — lab.sh capture swt-hst (600 s, ended by SIGINT to its udpcap, as Ctrl-C);
# capture_stop sets rc (its exit) and out (what it printed)
capture_start() {
    INCLAB_STATE=$lab INCLAB_PREFIX=$P INCLAB_BUILD=$build CAPTURE_DIR=$tmp/caps lab/lab.sh capture swt-hst 600 > "$tmp/lab.out" 2>&1 &
    cap=$!
    pids+=("$cap")
    for _ in $(seq 1 100); do pgrep -x -P "$cap" udpcap >/dev/null && break; sleep 0.1; done
    sleep 1
}
capture_stop() {
    sleep 1
    pkill -INT -x -P "$cap" udpcap
    wait "$cap"; rc=$?
    out=$(cat "$tmp/lab.out")
}
# compared — lab.sh capture's comparison line for the switch
compared() { grep '^lab: capture: swt-hst: switch swt port sp' <<<"$out"; }

phase count "known frames from the host: rx and tx counted, as the capture saw them"
capture_start
smac=$(ip netns exec "$S" cat /sys/class/net/sp/address) hmac=$(ip netns exec "$H" cat /sys/class/net/hp/address)
# send.py COUNT_4791 COUNT_4792 COUNT_4793 COUNT_4790 SEND — datagrams of 40 zero bytes to the
# switch's ports; SEND 1: also one RoCE SEND ONLY to QPN 0x100100, PSN 105 (ahead of 100), ICRC right
cat > "$tmp/send.py" <<'EOF'
import socket, struct, sys, zlib
n1, n2, n3, n0, send = map(int, sys.argv[1:6])
smac, hmac = bytes.fromhex(sys.argv[6].replace(":", "")), bytes.fromhex(sys.argv[7].replace(":", ""))
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for port, n in ((4791, n1), (4792, n2), (4793, n3), (4790, n0)):
    for _ in range(n):
        u.sendto(bytes(40), ("198.18.0.1", port))
if send:
    bth = bytes([4, 0, 0xff, 0xff, 0]) + (0x100100).to_bytes(3, "big") + bytes([0x80]) + (105).to_bytes(3, "big")
    payload = bytes(64)
    udp = struct.pack("!HHHH", 49152, 4791, 8 + len(bth) + len(payload) + 4, 0)
    ip = bytearray(struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp) + len(bth) + len(payload) + 4, 0, 0x4000, 64, 17, 0,
                               socket.inet_aton("198.18.0.2"), socket.inet_aton("198.18.0.1")))
    s = sum(struct.unpack("!10H", ip))
    s = (s & 0xffff) + (s >> 16)
    ip[10:12] = struct.pack("!H", ~((s & 0xffff) + (s >> 16)) & 0xffff)
    # ICRC (RoCEv2): CRC-32 over 8 bytes of ones, then IP, UDP and BTH with their variant fields as ones
    m = bytearray(ip); m[1] = 0xff; m[8] = 0xff; m[10:12] = b"\xff\xff"
    mu = bytearray(udp); mu[6:8] = b"\xff\xff"
    mb = bytearray(bth); mb[4] = 0xff
    icrc = struct.pack("<I", zlib.crc32(b"\xff" * 8 + bytes(m) + bytes(mu) + bytes(mb) + payload) & 0xffffffff)
    r = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    r.bind(("hp", 0))
    r.send(smac + hmac + b"\x08\x00" + bytes(ip) + udp + bth + payload + icrc)
EOF
ip netns exec "$H" python3 "$tmp/send.py" 20 10 5 7 1 "$smac" "$hmac"
capture_stop
l1=$(ports)
# 20 + 10 + 5 datagrams and the SEND into the port's capture; its NAK out
check "after 20+10+5 datagrams to 4791-4793, 7 to 4790 and one SEND: '$l1' (want rx=36 tx=1)" \
    [ "$l1" = "incswitch swt ports: sp rx=36 tx=1 open=1 opens=1" ]
check "lab capture: exit $rc, the switch's counts equal the capture's: $(compared)" \
    bash -c '[ "$1" = 0 ] && grep -qx "lab: capture: swt-hst: switch swt port sp counted rx 36 tx 1, captured to it 36, from it 1; lost 0 (capture missed 0, switch missed 0)" <<<"$2"' \
    _ "$rc" "$out"
pcap=$(tail -n 1 <<<"$out")
nak=$(tshark -r "$pcap" -Y '!icmp && ip.src == 198.18.0.1 && infiniband.bth.opcode == 17 && infiniband.aeth.syndrome == 96' 2>/dev/null | wc -l)
# (AETH syndrome 96 = 0x60: NAK, PSN sequence error; the host's ICMP port unreachable quoting it left out)
check "the frame the switch sent is the engine's NAK of the PSN gap (tshark finds $nak)" [ "$nak" = 1 ]

phase closed "a released port: closed, counts kept; opened again"
ans=$(ctl release)
capture_start
ip netns exec "$H" python3 "$tmp/send.py" 5 0 0 0 0 "$smac" "$hmac"
capture_stop
l2=$(ports)
check "released ('$ans'), then 5 datagrams to 4791: '$l2' (closed, nothing more counted)" \
    [ "$l2" = "incswitch swt ports: sp rx=36 tx=1 open=0 opens=1" ]
check "lab capture of a port closed the whole window: exit $rc, not compared: $(grep -o 'switch swt port sp was closed.*' <<<"$out")" \
    bash -c '[ "$1" = 0 ] && grep -q "switch swt port sp was closed the whole window (no communicator on it): not compared (5 frames to it, 0 from it captured)" <<<"$2"' \
    _ "$rc" "$out"
ans=$(ctl rules)
l3=$(ports)
check "rules again ('$ans'): '$l3' (open, opened twice, counts kept)" \
    [ "$l3" = "incswitch swt ports: sp rx=36 tx=1 open=1 opens=2" ]

phase lost "the port closed in the middle of a capture while frames still come: LOST"
capture_start
ip netns exec "$H" python3 "$tmp/send.py" 4 0 0 0 0 "$smac" "$hmac"
sleep 0.5
ans=$(ctl release)
ip netns exec "$H" python3 "$tmp/send.py" 3 0 0 0 0 "$smac" "$hmac"
capture_stop
check "lab capture: exit $rc (want 3), LOST: $(compared)" \
    bash -c '[ "$1" = 3 ] && grep -q "switch swt port sp (closed in the window) counted rx 4 tx 0, captured to it 7, from it 0; lost 3 (capture missed 0, switch missed 3)" <<<"$2" &&
        grep -q "LOST 3 frames on link swt-hst against switch swt" <<<"$2" && grep -q "frames were LOST" <<<"$2"' _ "$rc" "$out"
harness_end
