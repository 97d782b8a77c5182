#!/usr/bin/env bash
# test-sync.sh — lab-sync into VMs without booting any: a lab of this test
# (its tables only) of two host VMs over two hypervisors, pa on "here"
# (qemu:///system) and pb on "there" (a qemu+ssh:// URI), whose guest agents
# are tests/harness/fake-agent-virsh standing in for virsh: each guest is a
# directory of this test holding its usr/local and etc, and every command
# the agent runs sees those two over the machine's (a private mount
# namespace), so nothing of the machine is touched. pa holds the payload but
# one file made stale, pb lacks a file and holds the stale one too. lab-sync
# must push exactly what differs (pa 1 of 3 files, pb 2 of 3), leave each
# guest's files equal to the payload's with their modes and its symbolic
# links, run ldconfig, and ask each VM only through its own hypervisor's URI;
# a second lab-sync pushes nothing; an agent that cannot tell its files'
# hashes gets every file. Needs root (mount namespaces; else skipped); about
# 5 s. Runs in tests/lib/harness.sh.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/lib/harness.sh
harness_begin test-sync "sync again unreadable"
P=ilsy$$
P=${P:0:8}
tmp=$(mktemp -d)
cleanup() { [ "${SYNC_KEEP:-0}" = 1 ] && echo "kept $tmp" || rm -rf "$tmp"; }
harness_on_exit cleanup
if [ "$(id -u)" != 0 ] || ! unshare -m true 2>/dev/null; then
    echo "skip: not root, or no mount namespaces"
    phase sync "skipped"; phase again "skipped"; phase unreadable "skipped"
    harness_end
fi
there='qemu+ssh://root@192.0.2.1/system?keyfile=/k'
t=$'\t'
root=$tmp/root state=$tmp/root/$P
mkdir -p "$state/gen" "$tmp/run" "$tmp/bin" "$tmp/agent"
{ echo "# node${t}role${t}rank${t}mgmt${t}data_if${t}data_addr${t}parent${t}memory_mib${t}vcpus${t}domain${t}kind${t}hypervisor"
  echo "pa${t}host${t}0${t}192.168.0.101${t}to-sw1${t}10.1.1.21/24${t}sw1${t}3072${t}1${t}$P-pa${t}vm${t}here"
  echo "pb${t}host${t}1${t}192.168.0.102${t}to-sw2${t}10.2.1.7/24${t}sw2${t}3072${t}1${t}$P-pb${t}vm${t}there"
} > "$state/gen/inventory.tsv"
{ echo "# hypervisor${t}uri${t}address${t}network${t}bridge${t}memory_mib${t}nodes${t}images${t}pool"
  echo "here${t}qemu:///system${t}127.0.0.1${t}$P-mgmt${t}$P-mgmt${t}3072${t}pa${t}-${t}-"
  echo "there${t}$there${t}192.0.2.1${t}$P-mgmt-there${t}$P-h1${t}3072${t}pb${t}/var/lib/x${t}$P-images"
} > "$state/gen/hypervisors.tsv"
# the payload: a program, a header, a library and its link
pay=$tmp/payload/host/usr/local
mkdir -p "$pay/bin" "$pay/include" "$pay/lib"
head -c 150000 /dev/urandom > "$pay/bin/tool" && chmod 755 "$pay/bin/tool"   # 4 agent writes of 48 KiB
echo 'int x(void);' > "$pay/include/x.h" && chmod 644 "$pay/include/x.h"
echo 'not a library' > "$pay/lib/libx.so.1.0" && chmod 644 "$pay/lib/libx.so.1.0"
ln -s libx.so.1.0 "$pay/lib/libx.so.1"
# the guests: pa the payload with x.h stale, pb without tool and with x.h stale
for g in pa pb; do
    d=$tmp/agent/$P-$g
    mkdir -p "$d/etc" "$d/usr/local/sbin"
    cp -a "$pay/." "$d/usr/local/"
    rm "$d/usr/local/lib/libx.so.1"
    echo '/* stale */' >> "$d/usr/local/include/x.h"
    printf '#!/bin/sh\necho ran >> /usr/local/ldconfig-ran\n' > "$d/usr/local/sbin/ldconfig"
    chmod 755 "$d/usr/local/sbin/ldconfig"
done
rm "$tmp/agent/$P-pb/usr/local/bin/tool"
ln -s "$PWD/tests/harness/fake-agent-virsh" "$tmp/bin/virsh"
sync_lab() {
    PATH=$tmp/bin:$PATH FAKE_AGENT_ROOT=$tmp/agent INCLAB_STATE_ROOT=$root INCLAB_PREFIX=$P INCLAB_RUN_DIR=$tmp/run \
        INCLAB_PAYLOAD=$tmp/payload lab/lab.sh sync > "$tmp/out" 2>&1
}
# same GUEST — the guest's files are the payload's: contents, modes, the link
same() {
    local d=$tmp/agent/$P-$1/usr/local f
    for f in bin/tool include/x.h lib/libx.so.1.0; do
        cmp -s "$pay/$f" "$d/$f" && [ "$(stat -c %a "$pay/$f")" = "$(stat -c %a "$d/$f")" ] || return 1
    done
    [ "$(readlink "$d/lib/libx.so.1")" = libx.so.1.0 ]
}
pushed() { grep -o "synced $1 (host): [0-9]* of [0-9]* file(s) pushed" "$tmp/out" | sed 's/.*: //; s/ file.*//'; }

phase sync "lab-sync pushes what differs, each VM through its own connection"
sync_lab; rc=$?
check "lab-sync: exit $rc; pa got $(pushed pa), pb $(pushed pb) (want 1 of 3, 2 of 3)$([ $rc = 0 ] || echo ": $(tail -n 2 "$tmp/out" | tr '\n' ' ')")" \
    bash -c '[ "$1" = 0 ] && [ "$2" = "1 of 3" ] && [ "$3" = "2 of 3" ]' _ "$rc" "$(pushed pa)" "$(pushed pb)"
for g in pa pb; do
    check "$g holds the payload's files with their modes and libx.so.1 -> libx.so.1.0, ldconfig ran" \
        eval "same $g && [ -s '$tmp/agent/$P-$g/usr/local/ldconfig-ran' ]"
done
uris=$(awk -v d="$P-pa" '$2 == d {print $1}' "$tmp/agent/calls" | sort -u | tr '\n' ' ')
check "every agent call for pa through qemu:///system ($uris)" [ "$uris" = "qemu:///system " ]
uris=$(awk -v d="$P-pb" '$2 == d {print $1}' "$tmp/agent/calls" | sort -u | tr '\n' ' ')
check "every agent call for pb through 'there''s URI ($uris)" [ "$uris" = "$there " ]

phase again "a second lab-sync pushes nothing"
: > "$tmp/agent/calls"
sync_lab; rc=$?
check "lab-sync again: exit $rc; pa $(pushed pa), pb $(pushed pb), $(grep -c guest-file-open "$tmp/agent/calls") file opened" \
    bash -c '[ "$1" = 0 ] && [ "$2" = "0 of 3" ] && [ "$3" = "0 of 3" ] && ! grep -q guest-file-open "$4"' \
    _ "$rc" "$(pushed pa)" "$(pushed pb)" "$tmp/agent/calls"

phase unreadable "an agent that cannot tell the hashes: every file pushed"
FAKE_AGENT_HASH_FAIL=1 sync_lab; rc=$?
check "lab-sync: exit $rc; pa $(pushed pa), pb $(pushed pb), said: $(grep -o "pa: its files' hashes could not be read.*" "$tmp/out")" \
    bash -c '[ "$1" = 0 ] && [ "$2" = "3 of 3" ] && [ "$3" = "3 of 3" ] && grep -q "pb: its files. hashes could not be read: every file is pushed" "$4"' \
    _ "$rc" "$(pushed pa)" "$(pushed pb)" "$tmp/out"
for g in pa pb; do check "$g still holds the payload's files" eval "same $g"; done
harness_end
