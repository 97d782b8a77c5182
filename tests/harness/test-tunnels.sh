#!/usr/bin/env bash
# test-tunnels.sh — lab/tunnels.sh makes the tunnels of topogen's tunnels.tsv
# for real, without VMs: tests/topology/hypervisors/two.yaml (1-2-4 over two
# hypervisors, both at 127.0.0.1), namespace switches, generated with a
# prefix of its own. A namespace of the test stands for the machine: its
# loopback is both hypervisors' address, and tunnels.sh runs in it once per
# hypervisor. Nodes sw0 (on "here") and sw2 (on "there") are namespaces with
# their management veth on their hypervisor's management bridge (wires.tsv);
# their tree edge sw0-sw2 crosses machines (a VXLAN tunnel, MTU 9000) and so
# does the management network (the VXLAN tunnel between the two bridges).
#
# Checked: datagrams of 8000 bytes each way over the crossing edge and of
# 1000 bytes over the management network arrive, every one (addresses of the
# topology, inside the test's namespaces only); a tunnels.tsv whose sw2 end
# sends to the wrong port carries nothing that way (the check can fail);
# tunnels.sh prints every device it makes and makes nothing twice; down
# removes them all and leaves the management bridges (libvirt's); a UDP
# tunnel's port that something holds is refused (VM mode); a hostile line is
# refused before any command runs. Needs root and network namespaces; ~10 s.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/lib/harness.sh
harness_begin test-tunnels "setup traffic down refusals"
build=${BUILD:-build}
P=${TUNNELS_TEST_PREFIX:-iltn$$}
P=${P:0:8}
tmp=$(mktemp -d)
U=$P-u nss=()
gone() {
    local x
    for x in "${nss[@]}"; do ip netns del "$x" 2>/dev/null; done
    rm -rf "$tmp"
}
harness_on_exit gone
phase setup "the machine's stand-in, two namespace nodes, their management bridges, tunnels.sh up for each hypervisor"
if [ "$(id -u)" != 0 ] || ! ip netns list >/dev/null 2>&1; then
    echo "skip: not root, no network namespaces"
    harness_end
fi
gen=$tmp/gen
"$build/topogen" -o "$gen" --prefix "$P" --switches netns tests/topology/hypervisors/two.yaml >/dev/null ||
    { ko "topogen failed"; harness_end; }
"$build/topogen" -o "$tmp/gen-vm" --prefix "$P" tests/topology/hypervisors/two.yaml >/dev/null ||
    { ko "topogen (VM mode) failed"; harness_end; }
nss=("$U" "$P-sw0" "$P-sw2")
for x in "${nss[@]}"; do ip netns add "$x"; ip -n "$x" link set lo up; done
# in the stand-in: each hypervisor's management bridge (its libvirt network's), a node's mgmt0 on it (wires.tsv)
mgmt_of() { awk -F'\t' -v n="$1" '$1 == "mgmt" && $3 == n {print $8, $9}' "$gen/wires.tsv"; }
for n in sw0 sw2; do
    read -r br veth < <(mgmt_of $n)
    ip -n "$U" link show "$br" >/dev/null 2>&1 || ip -n "$U" link add "$br" type bridge stp_state 0
    ip -n "$U" link set "$br" up
    ip -n "$U" link add "$veth" type veth peer name mgmt0 netns "$P-$n"
    ip -n "$U" link set "$veth" master "$br" up
    ip -n "$P-$n" addr add "$(jq -r --arg n $n '.nodes[] | select(.name == $n) | "\(.management.address)/\(.management.prefix)"' "$gen/lab.json")" dev mgmt0
    ip -n "$P-$n" link set mgmt0 up
done
made=""
for h in here there; do
    out=$(ip netns exec "$U" lab/tunnels.sh up "$gen/tunnels.tsv" $h "$P" 2>&1) || ko "tunnels.sh up $h: $out"
    made+="$out"$'\n'
done
want=$(awk -F'\t' '!/^#/ && $2 != "udp" {print "link " $13; if ($2 != "mgmt") print "link " $14; if ($15 != "-") print "link " $15}' "$gen/tunnels.tsv" | sort)
check "tunnels.sh up printed each device it made, those of tunnels.sh's lines ($(grep -c . <<<"$made"))" \
    bash -c '[ "$(grep . <<<"$1" | sort)" = "$2" ]' _ "$made" "$want"
# exists (what lab.sh asks a machine reached over ssh before up): every device made, each once, on its hypervisor
ex=$(for h in here there; do ip netns exec "$U" lab/tunnels.sh exists "$gen/tunnels.tsv" $h; done 2>&1)
check "tunnels.sh exists names every device up made ($(grep -c . <<<"$ex")), as 'exists NAME'" \
    bash -c '[ "$(sed "s/^exists /link /" <<<"$1" | sort)" = "$2" ]' _ "$ex" "$want"
for h in here there; do ip netns exec "$U" lab/tunnels.sh up "$gen/tunnels.tsv" $h "$P" >> "$tmp/again" 2>&1; done
check "a second up makes nothing ($(grep -c . "$tmp/again") lines)" [ ! -s "$tmp/again" ]
# the data edge's addresses, as the topology gives them (lab.json): sw0's to-sw2, sw2's to-sw0
for e in "sw0 sw2" "sw2 sw0"; do
    read -r n peer <<<"$e"
    a=$(jq -r --arg n $n --arg p $peer '.links[] | select([.ends[].node] | sort == ([$n, $p] | sort)) | .ends[] | select(.node == $n) | "\(.address)/\(.prefix)"' "$gen/lab.json")
    ip -n "$P-$n" addr add "$a" dev "to-$peer" && ip -n "$P-$n" link set "to-$peer" up || ko "$n: cannot address to-$peer with '$a'"
done
addr_of() { jq -r --arg n "$1" --arg p "$2" '.links[] | select([.ends[].node] | sort == ([$n, $p] | sort)) | .ends[] | select(.node == $n) | .address' "$gen/lab.json"; }
mgmt_addr() { jq -r --arg n "$1" '.nodes[] | select(.name == $n) | .management.address' "$gen/lab.json"; }

# udp_count FROM TO TO_ADDR SIZE — how many of 3 datagrams of SIZE bytes from namespace FROM reach TO_ADDR:9999 in TO
cat > "$tmp/rx.py" <<'EOF'
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], 9999))
s.settimeout(4)
n = 0
try:
    while n < 3:
        d = s.recv(65536)
        n += len(d) == int(sys.argv[2])
except socket.timeout:
    pass
print(n)
EOF
udp_count() {
    ip netns exec "$P-$2" python3 "$tmp/rx.py" "$3" "$4" > "$tmp/rx.out" &
    local rx=$!
    sleep 1
    ip netns exec "$P-$1" python3 -c '
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(3):
    s.sendto(b"x" * int(sys.argv[2]), (sys.argv[1], 9999)); time.sleep(0.2)' "$3" "$4"
    wait $rx
    cat "$tmp/rx.out"
}

phase traffic "datagrams over the crossing edge (VXLAN, MTU 9000) and the management network's tunnel"
for e in "sw0 sw2" "sw2 sw0"; do
    read -r n peer <<<"$e"
    got=$(udp_count $n $peer "$(addr_of $peer $n)" 8000)
    check "tree edge $n -> $peer across hypervisors: $got of 3 datagrams of 8000 bytes" [ "$got" = 3 ]
    got=$(udp_count $n $peer "$(mgmt_addr $peer)" 1000)
    check "management network $n -> $peer across hypervisors: $got of 3 datagrams of 1000 bytes" [ "$got" = 3 ]
done
# the same with sw2's end of the edge made from a line that sends to a port where nothing listens: nothing arrives at sw0
dev=$(awk -F'\t' '$2 == "netns" && $4 == "sw2" {print $13}' "$gen/tunnels.tsv")
awk -F'\t' -v OFS='\t' '$2 == "netns" && $4 == "sw2" {$11 = 47999} 1' "$gen/tunnels.tsv" > "$tmp/wrong.tsv"
ip -n "$U" link del "$dev" && ip netns exec "$U" lab/tunnels.sh up "$tmp/wrong.tsv" there "$P" > "$tmp/wrong.out" 2>&1
got=$(udp_count sw2 sw0 "$(addr_of sw0 sw2)" 8000)
check "sw2's end made sending to port 47999 ($(tr '\n' ' ' < "$tmp/wrong.out")): $got of 3 arrive (the traffic check can fail)" [ "$got" = 0 ]

phase down "tunnels.sh down removes what up made, and only that"
for h in here there; do ip netns exec "$U" lab/tunnels.sh down "$gen/tunnels.tsv" $h || ko "tunnels.sh down $h failed"; done
left=$(for d in $(awk '{print $2}' <<<"$made"); do ip -n "$U" link show "$d" >/dev/null 2>&1 && echo "$d"; done)
bridges=$(awk -F'\t' '!/^#/ && $2 == "mgmt" {print $14}' "$gen/tunnels.tsv" | sort -u)
check "every device made is gone${left:+ (left: $left)}; the management bridges ($(echo $bridges)) are still there" \
    bash -c '[ -z "$1" ] && for b in $2; do ip -n "$3" link show "$b" >/dev/null 2>&1 || exit 1; done' _ "$left" "$bridges" "$U"
ex=$(for h in here there; do ip netns exec "$U" lab/tunnels.sh exists "$gen/tunnels.tsv" $h; done 2>&1)
check "tunnels.sh exists names none after down${ex:+: $ex}" [ -z "$ex" ]
check "the namespace ends (to-sw2, to-sw0) went with their veths" \
    bash -c '! ip -n "$1-sw0" link show to-sw2 >/dev/null 2>&1 && ! ip -n "$1-sw2" link show to-sw0 >/dev/null 2>&1' _ "$P"

phase refusals "a held UDP port, hostile lines, bad arguments: refused, nothing made"
port=$(awk -F'\t' '$2 == "udp" && $1 == "there" {print $9}' "$tmp/gen-vm/tunnels.tsv")
ip netns exec "$U" python3 -c 'import socket, sys, time; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", int(sys.argv[1]))); time.sleep(30)' "$port" &
holder=$!
# until it holds the port (a fixed second was not enough on a machine at a load of 35: nothing held yet,
# tunnels.sh made its tunnel); it is killed as soon as tunnels.sh has answered
for _ in $(seq 100); do
    ip netns exec "$U" ss -Hluan "sport = :$port" 2>/dev/null | grep -q . && break
    sleep 0.1
done
out=$(ip netns exec "$U" lab/tunnels.sh up "$tmp/gen-vm/tunnels.tsv" there "$P" 2>&1); rc=$?
kill $holder 2>/dev/null; wait $holder 2>/dev/null
check "VM mode, port $port of sw2's UDP tunnel held: exit $rc, nothing made first ($out)" \
    bash -c '[ "$1" = 1 ] && [ "$(wc -l <<<"$3")" = 1 ] && grep -q "UDP port $2 .* is taken" <<<"$3"' _ "$rc" "$port" "$out"
before=$(ip -n "$U" -o link show | wc -l)
while IFS='|' read -r what from to want; do
    sed "s/$from/$to/" "$gen/tunnels.tsv" > "$tmp/bad.tsv"
    out=$(ip netns exec "$U" lab/tunnels.sh up "$tmp/bad.tsv" here "$P" 2>&1); rc=$?
    check "$what: exit $rc, '$want' (got: $out)" bash -c '[ "$1" = 1 ] && grep -qF -- "$2" <<<"$3"' _ "$rc" "$want" "$out"
done <<EOF
a device name with a shell word|$P-x1|x1;reboot|VNI, DEVICE and BRIDGE must be
an address that is not one|127.0.0.1\t47002|127.0.0.1x\t47002|LOCAL and REMOTE must be IPv4
a port out of range|47002|99999|LPORT and RPORT must be ports
an unknown kind|\tnetns\t|\tveth\t|unknown kind 'veth'
EOF
check "nothing made by the refused runs ($before links in the stand-in, $(ip -n "$U" -o link show | wc -l) after), nothing run" \
    bash -c '[ "$1" = "$(ip -n "$2" -o link show | wc -l)" ] && [ ! -e "$3" ]' _ "$before" "$U" "$tmp/pwned"
for args in "up $gen/tunnels.tsv Here $P" "up $gen/tunnels.tsv here" "sideways $gen/tunnels.tsv here $P" "up /nonexistent here $P"; do
    # shellcheck disable=SC2086
    out=$(lab/tunnels.sh $args 2>&1); rc=$?
    check "tunnels.sh $args: exit 1 ($out)" bash -c '[ "$1" = 1 ] && grep -q "^tunnels: " <<<"$2"' _ "$rc" "$out"
done
harness_end
