#!/usr/bin/env bash
# rc-slice.sh — the riskiest link, proven on the running lab: does the real
# rdma_rxe of a host accept the frames our switch code builds?
#
# The first host (rank 0) runs rc_probe: an RC queue pair connected to its
# leaf switch's address. The leaf runs rcecho on the host's port: it captures
# the host's SENDs with libpcap, answers each with an ACK built by
# switch/roce.c + rc_conn.c, and echoes every message back as SENDs with its
# own PSN sequence. rc_probe succeeds only if rxe completed every SEND (our
# ACKs were accepted) and received every echo intact (our SENDs were accepted).
# Runs in tests/lib/harness.sh: "N passed, M failed" only at its end; exit 0
# when nothing failed.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/lib/harness.sh
harness_begin rc-slice "setup exchange"
lab=lab/lab.sh
state=${INCLAB_STATE:-/var/lib/inclab/${INCLAB_PREFIX:-inclab}}
build=${INCLAB_BUILD:-${BUILD:-build}} # make's BUILD: make test-lab passes it
messages=${RC_SLICE_MESSAGES:-16} bytes=${RC_SLICE_BYTES:-4000}
[[ $messages =~ ^[0-9]+$ && $bytes =~ ^[0-9]+$ ]] || { echo "rc-slice: RC_SLICE_MESSAGES and RC_SLICE_BYTES must be numbers"; exit 2; }
stop_tools() {
    "$lab" exec "$host" "pkill rc_probe; true" >/dev/null 2>&1
    "$lab" exec "$leaf" "pkill rcecho; true" >/dev/null 2>&1
}
phase setup "the probe's queue pair"

host=$(awk -F'\t' '$2 == "host" && $3 == 0 {print $1}' "$state/gen/inventory.tsv")
leaf=$(awk -F'\t' -v h="$host" '$1 == h {print $7}' "$state/gen/inventory.tsv")
haddr=$(awk -F'\t' -v h="$host" '$1 == h {print $6}' "$state/gen/inventory.tsv"); haddr=${haddr%/*}
[ -n "$host" ] && [ -n "$leaf" ] || { ko "rc-slice: no lab in $state (make lab-up)"; harness_end; }
harness_on_exit stop_tools
laddr=$("$lab" exec "$leaf" "ip -o -4 route get $haddr | grep -o 'src [0-9.]*' | cut -d' ' -f2")
gidx=$("$lab" exec "$host" /usr/local/sbin/inclab-ready | grep -o 'gid\[[0-9]*\]' | tr -dc 0-9)
echo "rc-slice: $host ($haddr, GID index $gidx) <-> $leaf port to-$host ($laddr), $messages messages of $bytes bytes"

"$lab" push "$host" "$build/rc_probe" /usr/local/bin/rc_probe >/dev/null &&
    "$lab" push "$leaf" "$build/rcecho" /usr/local/bin/rcecho >/dev/null ||
    { ko "copy the probe tools into the lab"; harness_stop "no tools on the nodes"; }
"$lab" exec "$host" "rm -f /tmp/probe.qpn /tmp/probe.go" >/dev/null
swqpn=0x100 swpsn=$((RANDOM * 256))
ppid=$("$lab" exec "$host" "rc_probe -d rxe0 -g $gidx -r $laddr -Q $swqpn -S $swpsn -n $messages -b $bytes \
    -w /tmp/probe.qpn -G /tmp/probe.go < /dev/null > /tmp/probe.out 2>&1 & echo \$!")
qp=""
for _ in $(seq 1 50); do
    qp=$("$lab" exec "$host" "cat /tmp/probe.qpn 2>/dev/null") && [ -n "$qp" ] && break
    sleep 0.3
done
read -r hqpn hpsn <<<"$qp"
phase exchange "messages through the switch code and back"
if [ -z "${hqpn:-}" ]; then
    ko "rc_probe created its QP"; "$lab" exec "$host" "cat /tmp/probe.out"
else
    ok "rc_probe created QP $hqpn (first PSN $hpsn) on $host"
    "$lab" exec "$leaf" "rm -f /tmp/rcecho.rc /tmp/rcecho.out; (rcecho -i to-$host -l $laddr -q $swqpn -s $swpsn -r $haddr -Q $hqpn \
        -S $hpsn -n $messages -t 90 > /tmp/rcecho.out 2>&1; echo \$? > /tmp/rcecho.rc) < /dev/null > /dev/null 2>&1 &" >/dev/null
    # the host sends only once rcecho's capture is active (it says so)
    for _ in $(seq 1 120); do
        "$lab" exec "$leaf" "grep -q 'rcecho: capturing' /tmp/rcecho.out || test -e /tmp/rcecho.rc" >/dev/null 2>&1 && break
        sleep 0.5
    done
    "$lab" exec "$host" "touch /tmp/probe.go" >/dev/null
    for _ in $(seq 1 100); do
        "$lab" exec "$host" "kill -0 $ppid 2>/dev/null" >/dev/null 2>&1 || break
        sleep 1
    done
    out=$("$lab" exec "$host" "cat /tmp/probe.out")
    echo "  host:   $out"
    for _ in $(seq 1 20); do "$lab" exec "$leaf" "test -e /tmp/rcecho.rc" >/dev/null 2>&1 && break; sleep 1; done
    echo "  switch: $("$lab" exec "$leaf" "cat /tmp/rcecho.out")"
    if grep -q "$messages messages of $bytes bytes sent, acknowledged by the switch and echoed back intact" <<<"$out"; then
        ok "real rxe on $host accepted the switch's ACKs and SENDs: $messages messages of $bytes bytes echoed intact"
    else
        ko "rxe on $host did not complete the exchange with the switch code"
    fi
    rc=$("$lab" exec "$leaf" "cat /tmp/rcecho.rc" 2>/dev/null)
    if [ "$rc" = 0 ]; then ok "rcecho on $leaf saw all $messages echoes acknowledged by the host"; else ko "rcecho exit status '$rc'"; fi
fi
harness_end
