#!/usr/bin/env bash
# test-lab-down.sh — lab-down touches only its own lab. Without booting
# anything: a lab "A" (prefix $P) and a neighbour "B" whose prefix extends
# A's ("$P-x"), each with a state directory (marker and made record) under a
# state root of this test, real network namespaces with a process in each,
# bridges, a veth, processes that look like QEMU of their domains, and, when
# a libvirtd already answers, defined (never started) libvirt domains. Also
# things of A's names that A's record does not list. lab-down of A must
# remove exactly what A recorded and leave every one of B's and the
# unrecorded ones; lab-down of B then removes B's. It must refuse (exit 1,
# nothing removed) a state outside the state root, a state without A's marker
# or with B's, a symbolic link, a relative path and a malformed prefix; keep
# (exit 1) a state holding what A did not make or a record it cannot trust;
# leave a "daemon" whose pid is no longer that daemon; and do nothing, with
# exit 0, a second time. Machine-wide notes go to a run directory of this
# test (INCLAB_RUN_DIR), so no lab's daemons or host settings are touched.
# Needs root for namespaces and devices (else those checks are skipped); a
# few seconds. Runs in tests/lib/harness.sh.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/lib/harness.sh
harness_begin test-lab-down "refusals neighbours twice"
lab=$PWD/lab/lab.sh
# names of this test: short enough for device names (15 characters)
P=${LABDOWN_TEST_PREFIX:-ildt$$}
P=${P:0:8}
B=$P-x
tmp=$(mktemp -d)
root=$tmp/root
mkdir -p "$root" "$tmp/run" "$tmp/bin"
export INCLAB_STATE_ROOT=$root INCLAB_RUN_DIR=$tmp/run
pids=() nss=() links=() doms=()
is_root=0
[ "$(id -u)" = 0 ] && ip netns list >/dev/null 2>&1 && is_root=1
virsh_ok=0
pgrep -x libvirtd >/dev/null && virsh -q -c qemu:///system version >/dev/null 2>&1 && virsh_ok=1

gone() {
    local x
    for x in "${pids[@]}"; do kill -9 "$x" 2>/dev/null; done
    for x in "${nss[@]}"; do ip netns del "$x" 2>/dev/null; done
    for x in "${links[@]}"; do ip link del "$x" 2>/dev/null; done
    for x in "${doms[@]}"; do virsh -q -c qemu:///system undefine "$x" >/dev/null 2>&1; done
    rm -rf "$tmp"
}
harness_on_exit gone

# down PREFIX [STATE] — lab-down of PREFIX (state STATE, default under the
# root): its output in $tmp/out, its exit status returned.
down() {
    INCLAB_PREFIX=$1 INCLAB_STATE=${2:-$root/$1} "$lab" down > "$tmp/out" 2>&1
}
# refused WHAT PATTERN PREFIX [STATE] — lab-down exits 1 saying PATTERN.
refused() {
    local what=$1 pat=$2 rc
    shift 2
    down "$@"; rc=$?
    check "$what: refused (exit $rc): $(grep -m 1 -o 'lab: .*' "$tmp/out" | cut -c1-110)" \
        sh -c '[ "$1" = 1 ] && grep -q -- "$2" "$3"' _ "$rc" "$pat" "$tmp/out"
}
# mkstate PREFIX [MARKER_PREFIX] — a state directory of PREFIX with the
# marker lab-up writes (naming MARKER_PREFIX, default PREFIX), empty record.
mkstate() {
    mkdir -p "$root/$1"
    echo "inclab lab ${2:-$1}" > "$root/$1/.inclab-lab"
    : > "$root/$1/made"
}
# fake_qemu DOMAIN — start a process that looks like libvirt's QEMU of DOMAIN
# (command name qemu-system-x86, "-name guest=DOMAIN,debug-threads=on"); its pid in $fq.
fake_qemu() {
    "$tmp/bin/qemu-system-x86_64" -name "guest=$1,debug-threads=on" > /dev/null 2>&1 &
    fq=$!
    pids+=("$fq")
}
printf '#!/bin/sh\nwhile :; do sleep 1; done\n' > "$tmp/bin/qemu-system-x86_64"
chmod +x "$tmp/bin/qemu-system-x86_64"
alive() { kill -0 "$1" 2>/dev/null; }
# dead PID — process PID has ended (gone, or a zombie not yet reaped by this script)
dead() { [ ! -e "/proc/$1" ] || grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null; }
ns_has() { ip netns list | awk -v n="$1" '$1 == n {f = 1} END {exit !f}'; }
link_has() { ip link show dev "$1" >/dev/null 2>&1; }
dom_has() { virsh -q -c qemu:///system dominfo "$1" >/dev/null 2>&1; }

# ---------------------------------------------------------------------------
phase refusals "state paths and prefixes lab-down must refuse"
mkdir -p "$tmp/elsewhere/$P"
echo keep > "$tmp/elsewhere/$P/data"
refused "a state outside the state root" "not a directory directly under the state root" "$P" "$tmp/elsewhere/$P"
check "  ... and left untouched" [ "$(cat "$tmp/elsewhere/$P/data" 2>/dev/null)" = keep ]
refused "a state below a directory under the root" "not a directory directly under" "$P" "$root/sub/$P"
refused "a relative state path" "must be an absolute path" "$P" "rel/$P"
refused "a state '..' under the root" "not a directory directly under" "$P" "$root/.."
mkdir -p "$root/$P"
echo keep > "$root/$P/data"
refused "a state without the lab's marker" "no marker .inclab-lab naming it" "$P"
check "  ... and left untouched" [ "$(cat "$root/$P/data" 2>/dev/null)" = keep ]
rm -rf "${root:?}/$P"
mkstate "$P" "$B"
echo "path made-by-b" >> "$root/$P/made"
mkdir "$root/$P/made-by-b"
refused "a state whose marker names the neighbour $B" "no marker .inclab-lab naming it" "$P"
check "  ... and left untouched" [ -d "$root/$P/made-by-b" ]
rm -rf "${root:?}/$P"
ln -s "$tmp/elsewhere/$P" "$root/$P"
refused "a state that is a symbolic link" "symbolic link" "$P"
check "  ... and what it points to left untouched" [ "$(cat "$tmp/elsewhere/$P/data" 2>/dev/null)" = keep ]
rm -f "$root/$P"
refused "a prefix that is not a name" "INCLAB_PREFIX must be" "../$P"
refused "a prefix with a space" "INCLAB_PREFIX must be" "$P x"
mkdir "$root/$P"
down "$P"; rc=$?
check "an empty unmarked state (lab-up killed before its marker) is removed (exit $rc)" \
    sh -c '[ "$1" = 0 ] && [ ! -e "$2" ]' _ "$rc" "$root/$P"
# daemons are stopped by the pid lab-up noted, only while that pid is that daemon
sleep 300 & spid=$!; pids+=($spid)
printf 'libvirtd %s\nvirtlogd %s\n' "$spid" "$spid" > "$tmp/run/started-daemons"
down "$P"; rc=$?
if grep -q 'daemons and host settings left as they are' "$tmp/out"; then
    check "a noted daemon pid that is not the daemon (a 'sleep') is left alone; libvirt holds other domains, so no daemon is stopped (exit $rc)" \
        sh -c '[ "$1" = 0 ] && kill -0 "$2"' _ "$rc" "$spid"
else
    check "a noted daemon pid that is not the daemon (a 'sleep') is left alone (exit $rc): $(grep -m 1 -o 'libvirtd: pid.*' "$tmp/out")" \
        sh -c '[ "$1" = 0 ] && kill -0 "$2" && grep -q "is no longer the libvirtd lab-up started" "$3"' _ "$rc" "$spid" "$tmp/out"
fi
kill "$spid" 2>/dev/null

# ---------------------------------------------------------------------------
phase neighbours "lab-down of $P leaves the neighbour $B and what $P did not record"
mkstate "$P"
mkstate "$B"
A_made=$root/$P/made B_made=$root/$B/made
# state files: recorded ones, of A and of B
mkdir -p "$root/$P/disks" "$root/$B/disks"
echo x > "$root/$P/disks/pku1.qcow2"; echo x > "$root/$B/disks/pku1.qcow2"
echo LAB_SWITCHES=vm > "$root/$P/lab.env"; echo LAB_SWITCHES=vm > "$root/$B/lab.env"
printf 'path disks\npath lab.env\n' | tee -a "$A_made" >> "$B_made"
# QEMU look-alikes: A's recorded domain, B's, and one whose name extends A's
printf 'domain %s\n' "$P-pku1" >> "$A_made"
printf 'domain %s\n' "$B-pku1" >> "$B_made"
fake_qemu "$P-pku1"; qa=$fq
fake_qemu "$B-pku1"; qb=$fq
fake_qemu "$P-pku10"; q10=$fq
sleep 0.3
if [ "$is_root" = 1 ]; then
    for n in "$P-sw0" "$B-sw0" "$P-stray"; do nss+=("$n"); ip netns add "$n"; done
    for n in "$P-b0" "$B-b0" "$P-m0"; do links+=("$n"); ip link add "$n" type bridge; done
    links+=("$P-v0")
    ip link add "$P-v0" type veth peer name eth0 netns "$P-sw0"
    ip netns exec "$P-sw0" sleep 300 & na=$!; pids+=($na)
    ip netns exec "$B-sw0" sleep 300 & nb=$!; pids+=($nb)
    printf 'netns %s\nlink %s\nlink %s\n' "$P-sw0" "$P-b0" "$P-v0" >> "$A_made"
    printf 'netns %s\nlink %s\n' "$B-sw0" "$B-b0" >> "$B_made"
else
    echo "  (not root: namespaces and devices not checked)"
fi
if [ "$virsh_ok" = 1 ]; then
    for d in "$P-pku1" "$B-pku1" "$P-pku10"; do
        doms+=("$d")
        printf "<domain type='qemu'><name>%s</name><memory unit='MiB'>32</memory><os><type arch='x86_64'>hvm</type></os></domain>\n" \
            "$d" > "$tmp/$d.xml"
        virsh -q -c qemu:///system define "$tmp/$d.xml" >/dev/null || ko "cannot define the test domain $d"
    done
else
    echo "  (no libvirtd answering: libvirt domains not checked)"
fi
echo "  before: netns $(ip netns list 2>/dev/null | awk -v p="$P" 'index($1, p) == 1 {printf "%s ", $1}')links $(ip -o link show 2>/dev/null |
    awk -F': ' -v p="$P" '{sub(/@.*/, "", $2)} index($2, p) == 1 {printf "%s ", $2}')domains $([ "$virsh_ok" = 1 ] &&
    virsh -q -c qemu:///system list --all --name | awk -v p="$P" 'index($1, p) == 1 {printf "%s ", $1}')"
down "$P"; rc=$?
sed 's/^/    /' "$tmp/out"
check "lab-down of $P: exit $rc" [ "$rc" = 0 ]
check "its state directory is gone" [ ! -e "$root/$P" ]
check "the QEMU process of its domain $P-pku1 is gone" dead "$qa"
check "the QEMU processes of $B-pku1 and of $P-pku10 (not its domain) run" eval 'alive "$qb" && alive "$q10"'
check "the neighbour's state is whole" sh -c "[ -f '$root/$B/.inclab-lab' ] && [ -f '$root/$B/disks/pku1.qcow2' ] && [ -f '$root/$B/lab.env' ]"
if [ "$is_root" = 1 ]; then
    check "its namespace $P-sw0, bridge $P-b0 and veth $P-v0 are gone, with the process in the namespace" \
        eval '! ns_has "$P-sw0" && ! link_has "$P-b0" && ! link_has "$P-v0" && dead "$na"'
    check "the neighbour's namespace $B-sw0 (and the process in it) and bridge $B-b0 remain" \
        eval 'ns_has "$B-sw0" && link_has "$B-b0" && alive "$nb"'
    check "the namespace $P-stray and the bridge $P-m0, of its names but not recorded, remain" \
        eval 'ns_has "$P-stray" && link_has "$P-m0"'
fi
if [ "$virsh_ok" = 1 ]; then
    check "its domain $P-pku1 is undefined" eval '! dom_has "$P-pku1"'
    check "the domains $B-pku1 (neighbour) and $P-pku10 (not recorded) remain defined" \
        eval 'dom_has "$B-pku1" && dom_has "$P-pku10"'
fi

# ---------------------------------------------------------------------------
phase twice "again, the neighbour's own lab-down, and records lab-down must not trust"
down "$P"; rc=$?
check "a second lab-down of $P does nothing (exit $rc, $(grep -o '[0-9]* domain(s) removed' "$tmp/out"))" \
    sh -c '[ "$1" = 0 ] && grep -q "(0 domain(s) removed)" "$2"' _ "$rc" "$tmp/out"
check "  ... and the neighbour's QEMU process and state are still there" eval 'alive "$qb" && [ -f "$root/$B/lab.env" ]'
down "$B"; rc=$?
check "lab-down of $B removes its own (exit $rc): state, QEMU process" \
    eval '[ "$rc" = 0 ] && [ ! -e "$root/$B" ] && dead "$qb"'
check "  ... and not $P-pku10's QEMU process" alive "$q10"
if [ "$is_root" = 1 ]; then
    check "  ... its namespace and bridge, not $P-stray or $P-m0" \
        eval '! ns_has "$B-sw0" && ! link_has "$B-b0" && dead "$nb" && ns_has "$P-stray" && link_has "$P-m0"'
fi
[ "$virsh_ok" = 1 ] && check "  ... its domain, not $P-pku10" eval '! dom_has "$B-pku1" && dom_has "$P-pku10"'
# a state holding what lab-up did not make, a record naming a path outside the
# state and a domain of another lab: those are not acted on, the state stays
mkstate "$P"
mkdir -p "$root/$P/gen" "$tmp/outside"
echo keep > "$tmp/outside/data"; echo keep > "$root/$P/notes.txt"
printf 'path gen\n' >> "$root/$P/made"
down "$P"; rc=$?
check "a state holding a file lab-up did not make: exit $rc, the file, marker and record kept, what was recorded removed" \
    sh -c '[ "$1" = 1 ] && grep -q "holds what lab-up did not make: notes.txt" "$2" && [ -f "$3/.inclab-lab" ] && grep -qx "path gen" "$3/made" && [ -f "$3/notes.txt" ] && [ ! -e "$3/gen" ]' \
    _ "$rc" "$tmp/out" "$root/$P"
rm -f "$root/$P/notes.txt"
mkdir -p "$root/$P/gen"
printf 'path ../outside\ndomain other-pku1\npath gen/../..\n' >> "$root/$P/made"
down "$P"; rc=$?
check "a record naming a path outside the state and a domain of another lab: refused (exit $rc), those lines named, nothing removed" \
    sh -c '[ "$1" = 1 ] && grep -q "\"path ../outside\": not a name" "$2" && grep -q "\"domain other-pku1\": not a name of this lab" "$2" &&
           grep -q "\"path gen/../..\": not a name" "$2" && [ -f "$3/data" ] && [ -f "$4/.inclab-lab" ] && [ -d "$4/gen" ]' \
    _ "$rc" "$tmp/out" "$tmp/outside" "$root/$P"
harness_end
