#!/usr/bin/env bash
# test-capture.sh — udpcap on real interfaces, without a lab: two network
# namespaces of this test joined by a veth (addresses of the benchmarking range
# 198.18.0.0/15, inside the namespaces only), a ping flood across it, and
# udpcap capturing both ends at once into one pcapng file. It must write one
# interface per link, named as told, hold every frame the veths counted
# (tshark counts them, per interface and direction, against the kernel's
# rx/tx counters read by this script) and say "lost 0" (exit 0). With a ring
# far too small for the flood (-b 1, read only every 3 s by a stopped udpcap)
# it must say LOST and exit 3, with a count that matches what is missing from
# the file. Loopback tunnels (a VM lab's): UDP datagrams to two ports inside
# a namespace, each frame written without its outer headers, in its
# direction. `lab.sh capture` on the tables of a lab (no lab up; a stand-in
# udpcap records its arguments): a link not in the topology, a malformed or
# repeated one, bad SECONDS: a precise error, exit 1; good links become
# udpcap's link specs in the tables' order; udpcap's exit 3 is kept; over
# hypervisors, an edge that crosses machines is captured at its end on this
# machine (a namespace's interface, a VM's VXLAN device, a UDP tunnel on
# loopback), one with no end here, on another machine's loopback or with both
# ends on another machine reached over ssh (its namespaces' there) refused. Needs
# root for namespaces (else those phases are skipped); about 15 s.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/lib/harness.sh
harness_begin test-capture "lab veth match overflow tunnel"
udpcap=$PWD/${BUILD:-build}/udpcap
P=${CAPTURE_TEST_PREFIX:-ilcp$$}
P=${P:0:8}
tmp=$(mktemp -d)
nss=()
gone() {
    local x
    for x in "${nss[@]}"; do ip netns del "$x" 2>/dev/null; done
    rm -rf "$tmp"
}
harness_on_exit gone
phase lab "lab.sh capture: bad input refused, links turned into udpcap's"
fake=$tmp/lab
mkdir -p "$fake/gen" "$tmp/bin"
printf '# link\tnode_a\tif_a\tport_a\tnode_b\tif_b\tport_b\tsubnet\n0\tsw0\tto-sw1\t-\tsw1\tto-sw0\t-\ts\n1\tsw1\tto-pku1\t47102\tpku1\tto-sw1\t47103\ts\n' \
    > "$fake/gen/links.tsv"
printf '# kind\tlink\tnode_a\tif_a\tnode_b\tif_b\tmtu\tbridge\tveth\ttap\nveth\t0\tsw0\tto-sw1\tsw1\tto-sw0\t1500\t-\t-\t-\n' > "$fake/gen/wires.tsv"
echo '# node' > "$fake/gen/inventory.tsv"
# the stand-in: its arguments to a file, exit $FAKE_RC
printf '#!/bin/sh\necho "$@" > %s/args\nexit ${FAKE_RC:-0}\n' "$tmp" > "$tmp/bin/udpcap"
chmod +x "$tmp/bin/udpcap"
labcap() { INCLAB_STATE=$fake INCLAB_PREFIX=ilcpx INCLAB_BUILD=$tmp/bin lab/lab.sh capture "$@" > "$tmp/lab.out" 2>&1; }
for x in "sw1-nosuch|5|no link 'sw1-nosuch' in this lab's topology; the links: sw0-sw1 sw1-pku1" \
    "sw1-pku1|0|SECONDS must be a whole number of seconds in 1..86400, not '0'" \
    "sw1-pku1|9x|SECONDS must be a whole number of seconds in 1..86400, not '9x'" \
    " |5|which link?" "sw1+pku1|5|'sw1+pku1' is not a link a-b" "sw1-pku1 pku1-sw1|5|link sw1-pku1 given twice"; do
    IFS='|' read -r l s want <<<"$x"
    rm -f "$tmp/args"
    labcap "$l" "$s"; rc=$?
    check "lab capture '$l' $s: exit $rc, $(head -n 1 "$tmp/lab.out")" \
        sh -c '[ "$1" = 1 ] && grep -qF -- "$2" "$3" && [ ! -e "$4" ]' _ "$rc" "$want" "$tmp/lab.out" "$tmp/args"
done
labcap "pku1-sw1 sw1-sw0" 7; rc=$?
args=$(sed 's/ -o [^ ]*\.pcapng / -o F /' "$tmp/args")
check "lab capture 'pku1-sw1 sw1-sw0': exit $rc, udpcap $args" \
    sh -c '[ "$1" = 0 ] && [ "$2" = "-s 7 -o F sw1-pku1:udp:47102:47103 sw0-sw1:netns:ilcpx-sw0:to-sw1" ] && [ "$(tail -n 1 "$3")" != "" ]' \
    _ "$rc" "$args" "$tmp/lab.out"
FAKE_RC=3 labcap "sw1-pku1" 5; rc=$?
check "lab capture when udpcap lost frames: exit $rc, says LOST, prints the file" \
    sh -c '[ "$1" = 3 ] && grep -q "frames were LOST" "$2" && grep -q "sw1-pku1-.*\.pcapng$" "$2"' _ "$rc" "$tmp/lab.out"

# a lab over hypervisors (README: "Labs over several hypervisors"): "here" is the first,
# this machine; "there" and "far" are reached over ssh. An edge that crosses machines is
# captured at its end here, as tunnels.tsv wires it: a namespace node's interface, a VM's
# VXLAN device, a QEMU UDP tunnel on loopback when its peer's address is this machine's
hv=$tmp/hv
mkdir -p "$hv/gen"
t=$'\t'
{ echo "# link${t}node_a${t}if_a${t}port_a${t}node_b${t}if_b${t}port_b${t}subnet${t}hypervisor_a${t}hypervisor_b"
  echo "0${t}sw0${t}to-sw1${t}-${t}sw1${t}to-sw0${t}-${t}s${t}here${t}here"
  echo "1${t}sw0${t}to-sw2${t}-${t}sw2${t}to-sw0${t}-${t}s${t}here${t}there"
  echo "2${t}sw2${t}to-pku3${t}-${t}pku3${t}to-sw2${t}-${t}s${t}there${t}there"
  echo "3${t}sw1${t}to-pku1${t}47106${t}pku1${t}to-sw1${t}47107${t}s${t}here${t}there"
  echo "4${t}sw3${t}to-pku5${t}47108${t}pku5${t}to-sw3${t}47109${t}s${t}there${t}there"
  echo "5${t}sw4${t}to-pku6${t}-${t}pku6${t}to-sw4${t}-${t}s${t}there${t}far"
  echo "6${t}sw2${t}to-pku7${t}-${t}pku7${t}to-sw2${t}-${t}s${t}there${t}here"
  echo "7${t}sw1${t}to-pku8${t}47114${t}pku8${t}to-sw1${t}47115${t}s${t}here${t}far"
} > "$hv/gen/links.tsv"
{ echo "# kind${t}link${t}node_a${t}if_a${t}node_b${t}if_b${t}mtu${t}bridge${t}veth${t}tap${t}hypervisor"
  echo "veth${t}0${t}sw0${t}to-sw1${t}sw1${t}to-sw0${t}9000${t}-${t}-${t}-${t}here"
  echo "bridge${t}2${t}sw2${t}to-pku3${t}pku3${t}to-sw2${t}1500${t}ilcpx-b2${t}ilcpx-v2${t}ilcpx-t2${t}there"
} > "$hv/gen/wires.tsv"
{ echo "# hypervisor${t}uri${t}address${t}network${t}bridge${t}memory_mib${t}nodes${t}images${t}pool"
  echo "here${t}qemu:///system${t}127.0.0.1${t}ilcpx-mgmt${t}ilcpx-mgmt${t}1${t}sw0 sw1${t}-${t}-"
  echo "there${t}qemu+ssh://root@127.0.0.1:2222/system${t}127.0.0.1${t}ilcpx-mgmt-there${t}ilcpx-h1${t}1${t}sw2${t}/var/lib/x${t}ilcpx-images"
  echo "far${t}qemu+ssh://root@198.51.100.7/system${t}198.51.100.7${t}ilcpx-mgmt-far${t}ilcpx-h2${t}1${t}pku6${t}/var/lib/x${t}ilcpx-images"
} > "$hv/gen/hypervisors.tsv"
# (the first hypervisor's ends only: those are the ones capture reads)
{ echo "# hypervisor${t}kind${t}link${t}node${t}if${t}peer${t}peer_hypervisor${t}local${t}lport${t}remote${t}rport${t}vni${t}device${t}bridge${t}veth${t}tap${t}mtu"
  echo "there${t}netns${t}1${t}sw2${t}to-sw0${t}sw0${t}here${t}127.0.0.1${t}47103${t}127.0.0.1${t}47102${t}2${t}ilcpx-y1${t}ilcpx-c1${t}ilcpx-w1${t}-${t}9000"
  echo "here${t}netns${t}1${t}sw0${t}to-sw2${t}sw2${t}there${t}127.0.0.1${t}47102${t}127.0.0.1${t}47103${t}2${t}ilcpx-x1${t}ilcpx-b1${t}ilcpx-v1${t}-${t}9000"
  echo "here${t}udp${t}3${t}sw1${t}to-pku1${t}pku1${t}there${t}127.0.0.1${t}47106${t}127.0.0.1${t}47107${t}-${t}-${t}-${t}-${t}-${t}1500"
  echo "here${t}vm${t}6${t}pku7${t}to-sw2${t}sw2${t}there${t}127.0.0.1${t}47113${t}127.0.0.1${t}47112${t}7${t}ilcpx-y6${t}ilcpx-c6${t}-${t}ilcpx-t6${t}1500"
  echo "here${t}udp${t}7${t}sw1${t}to-pku8${t}pku8${t}far${t}127.0.0.1${t}47114${t}198.51.100.7${t}47115${t}-${t}-${t}-${t}-${t}-${t}1500"
} > "$hv/gen/tunnels.tsv"
echo '# node' > "$hv/gen/inventory.tsv"
hvcap() { INCLAB_STATE=$hv INCLAB_PREFIX=ilcpx INCLAB_BUILD=$tmp/bin lab/lab.sh capture "$@" > "$tmp/lab.out" 2>&1; }
for x in "sw2-sw0|sw0-sw2:netns:ilcpx-sw0:to-sw2" "pku1-sw1|sw1-pku1:udp:47106:47107" "sw2-pku7|pku7-sw2:netns:-:ilcpx-y6"; do
    IFS='|' read -r l want <<<"$x"
    rm -f "$tmp/args"
    hvcap "$l" 4; rc=$?
    args=$(sed 's/ -o [^ ]*\.pcapng / -o F /' "$tmp/args" 2>/dev/null)
    check "over hypervisors, lab capture '$l': exit $rc, udpcap $args" \
        sh -c '[ "$1" = 0 ] && [ "$2" = "-s 4 -o F $3" ]' _ "$rc" "$args" "$want"
done
for x in "sw3-pku5|link sw3-pku5 is a QEMU UDP tunnel of hypervisor there, reached over ssh" \
    "pku6-sw4|link sw4-pku6 crosses from hypervisor there to far, neither of them here, this machine" \
    "sw1-pku8|link sw1-pku8 is a QEMU UDP tunnel to 198.51.100.7 (hypervisor far, another machine)" \
    "pku3-sw2|link sw2-pku3 has both ends on hypervisor there, reached over ssh" \
    "sw0-sw2 sw2-sw0|link sw0-sw2 given twice"; do
    IFS='|' read -r l want <<<"$x"
    rm -f "$tmp/args"
    hvcap "$l" 4; rc=$?
    check "over hypervisors, lab capture '$l': exit $rc, $(head -n 1 "$tmp/lab.out")" \
        sh -c '[ "$1" = 1 ] && grep -qF -- "$2" "$3" && [ ! -e "$4" ]' _ "$rc" "$want" "$tmp/lab.out" "$tmp/args"
done

if [ "$(id -u)" != 0 ] || ! ip netns list >/dev/null 2>&1; then
    echo "skip: not root, no network namespaces"
    harness_end
fi

# counters NS IF — "rx tx" packets of IF in namespace NS
counters() { ip netns exec "$1" cat "/sys/class/net/$2/statistics/rx_packets" "/sys/class/net/$2/statistics/tx_packets" | tr '\n' ' '; }
# frames FILE IFNAME DIR — frames of interface IFNAME in direction DIR (1 in, 2 out) that tshark reads in FILE
frames() { tshark -r "$1" -Y "frame.interface_name == \"$2\" && frame.packet_flags_direction == $3" 2>/dev/null | wc -l; }

phase veth "two ends of a veth at once, nothing lost"
nss=("$P-a" "$P-b")
ip netns add "$P-a" && ip netns add "$P-b" &&
    ip -n "$P-a" link add va type veth peer name vb netns "$P-b" &&
    ip -n "$P-a" addr add 198.18.0.1/24 dev va && ip -n "$P-b" addr add 198.18.0.2/24 dev vb &&
    ip -n "$P-a" link set va up && ip -n "$P-b" link set vb up &&
    for n in "$P-a" "$P-b"; do ip netns exec "$n" sysctl -q -w net.ipv6.conf.all.disable_ipv6=1 || exit 1; done ||
    { ko "cannot make the namespaces and veth"; harness_end; }
ip netns exec "$P-a" ping -c 1 -W 2 198.18.0.2 >/dev/null # neighbours resolved before the window (no IPv6: no frames of its own)
read -r arx0 atx0 < <(counters "$P-a" va)
read -r brx0 btx0 < <(counters "$P-b" vb)
# the window opens before the flood (udpcap says so) and ends after it (SIGTERM, which udpcap
# ends on as at the end of -s): a fixed 1 s head start and -s 3 missed the flood's first
# frames on a loaded machine (18,786 of 20,001 in udpcap's window)
"$udpcap" -s 600 -o "$tmp/v.pcapng" "a-b:netns:$P-a:va" "b-a:netns:$P-b:vb" 2> "$tmp/v.err" &
cap=$!
for _ in $(seq 1 300); do grep -q "^udpcap: capturing" "$tmp/v.err" && break; sleep 0.1; done # its window is open
ip netns exec "$P-a" ping -f -c 20000 -s 1000 -q 198.18.0.2 >/dev/null
sleep 0.5
kill -TERM $cap 2>/dev/null
wait $cap; rc=$?
read -r arx1 atx1 < <(counters "$P-a" va)
read -r brx1 btx1 < <(counters "$P-b" vb)
names=$(capinfos -M "$tmp/v.pcapng" 2>/dev/null | sed -n 's/^ *Name = //p' | tr '\n' ' ')
check "udpcap exit $rc, interfaces '$names'" sh -c '[ "$1" = 0 ] && [ "$2" = "a-b b-a " ]' _ "$rc" "$names"
for x in "a-b va $((arx1 - arx0)) $((atx1 - atx0))" "b-a vb $((brx1 - brx0)) $((btx1 - btx0))"; do
    read -r n ifc rx tx <<<"$x"
    fin=$(frames "$tmp/v.pcapng" "$n" 1) fout=$(frames "$tmp/v.pcapng" "$n" 2)
    line=$(grep "^udpcap: $n: " "$tmp/v.err")
    check "$n: $ifc counted rx $rx tx $tx, the file holds $fin in and $fout out; udpcap: ${line#udpcap: }" \
        bash -c '[ "$1" -ge 20000 ] && [ "$1" = "$3" ] && [ "$2" = "$4" ] && grep -q "counted rx $1 tx $2 .*; lost 0$" <<<"$5"' \
        _ "$rx" "$tx" "$fin" "$fout" "$line"
done

phase match "udpcap -m: a switch port's frames counted by its filter, by source"
# from a: 30 datagrams to UDP 4791, 20 to 4792, 10 to 4793 (a switch port takes them), 25 to 4790 (not)
"$udpcap" -s 3 -o "$tmp/m.pcapng" -m all:a-b:out -m mine:a-b:out:198.18.0.9,198.18.0.1 -m other:a-b:out:198.18.0.9 \
    -m back:a-b:in -m there:b-a:in "a-b:netns:$P-a:va" "b-a:netns:$P-b:vb" > "$tmp/m.out" 2> "$tmp/m.err" &
cap=$!
sleep 1
ip netns exec "$P-a" python3 -c '
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for port, n in ((4791, 30), (4792, 20), (4793, 10), (4790, 25)):
    for i in range(n):
        s.sendto(bytes(40), ("198.18.0.2", port))
'
wait $cap; rc=$?
got=$(tr '\n' ' ' < "$tmp/m.out")
check "udpcap -m: exit $rc, counts '$got' (want 60 from a, 60 from a's address, 0 from another, 0 to a, 60 arriving at b)" \
    sh -c '[ "$1" = 0 ] && [ "$2" = "all 60 mine 60 other 0 back 0 there 60 " ]' _ "$rc" "$got"
for x in "k:nosuch:in|no such LINK" "k:a-b:sideways|the direction is in or out" "k:a-b:out:198.18.0.300|is not an IPv4 address" \
    "k y:a-b:in|is not KEY:LINK" "k:a-b|is not KEY:LINK" "k:a-b:in:|is not an IPv4 address"; do
    IFS='|' read -r spec want <<<"$x"
    out=$("$udpcap" -s 1 -o "$tmp/bad.pcapng" -m "$spec" "a-b:netns:$P-a:va" 2>&1); rc=$?
    check "udpcap -m '$spec': exit $rc, '$out'" sh -c '[ "$1" = 2 ] && printf "%s\n" "$3" | grep -qF -- "$2"' _ "$rc" "$want" "$out"
done

phase overflow "a ring too small: LOST, exit 3"
# udpcap stopped (SIGSTOP) while the flood fills its 1 MiB rings, then let go
"$udpcap" -s 3 -b 1 -o "$tmp/o.pcapng" "a-b:netns:$P-a:va" 2> "$tmp/o.err" &
cap=$!
sleep 0.5
kill -STOP $cap
ip netns exec "$P-a" ping -f -c 20000 -s 1000 -q 198.18.0.2 >/dev/null
kill -CONT $cap
wait $cap; rc=$?
line=$(grep "^udpcap: a-b: " "$tmp/o.err")
read -r rx tx lost < <(sed -n 's/.* counted rx \([0-9]*\) tx \([0-9]*\) .*; lost \([0-9]*\)$/\1 \2 \3/p' <<<"$line")
held=$(capinfos -c -M "$tmp/o.pcapng" 2>/dev/null | sed -n 's/^Number of packets: *//p')
check "overflow: exit $rc, LOST said, lost $lost = counted $rx + $tx - $held in the file: ${line#udpcap: }" \
    bash -c '[ "$1" = 3 ] && grep -q "LOST $2 frames on link a-b" "$3" && [ "$2" -gt 0 ] && [ "$2" = $(($4 + $5 - $6)) ]' \
    _ "$rc" "${lost:-x}" "$tmp/o.err" "${rx:-0}" "${tx:-0}" "${held:-0}"

phase tunnel "loopback UDP tunnels: inner frames, by destination port"
# 300 datagrams to port 47001 (to a), 200 to 47002 (to b), 60-byte "frames" numbered; one runt
ip -n "$P-a" link set lo up
# (three of those to A are IPv4/UDP 10.0.0.1 -> 4791 inside: -m counts them, inner headers)
ip netns exec "$P-a" "$udpcap" -s 3 -o "$tmp/u.pcapng" -m t:x-y:in -m f:x-y:in:10.0.0.1 -m o:x-y:out \
    "x-y:udp:47001:47002" > "$tmp/u.out" 2> "$tmp/u.err" &
cap=$!
sleep 1
ip netns exec "$P-a" python3 -c '
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
roce = bytes(12) + b"\x08\x00" + bytes.fromhex("4500002e00000000401100000a0000010a000002") + bytes.fromhex("c00012b7001a0000") + bytes(18)
for i in range(500):
    s.sendto(roce if i in (0, 5, 10) else bytes(56) + i.to_bytes(4, "big"), ("127.0.0.1", 47001 if i % 5 < 3 else 47002))
s.sendto(b"runt", ("127.0.0.1", 47001))
'
wait $cap; rc=$?
fin=$(frames "$tmp/u.pcapng" x-y 1) fout=$(frames "$tmp/u.pcapng" x-y 2)
lens=$(tshark -r "$tmp/u.pcapng" -T fields -e frame.len 2>/dev/null | sort -u | tr '\n' ' ')
got=$(tr '\n' ' ' < "$tmp/u.out")
check "tunnel: exit $rc, $fin frames in (to port A), $fout out, lengths '$lens', -m '$got': $(grep '^udpcap: x-y' "$tmp/u.err")" \
    sh -c '[ "$1" = 0 ] && [ "$2" = 300 ] && [ "$3" = 200 ] && [ "$4" = "60 " ] && [ "$5" = "t 3 f 3 o 0 " ]' _ "$rc" "$fin" "$fout" "$lens" "$got"
harness_end
