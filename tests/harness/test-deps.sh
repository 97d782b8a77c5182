#!/usr/bin/env bash
# test-deps.sh — lab/deps.sh against a fake apt-get (DEPS_APT) and package lists
# of a package that is not installed (DEPS_DIR): it waits while apt says another
# process holds its lock, says so, and goes on when the lock is free; it gives up
# after DEPS_LOCK_WAIT with the holder named and a non-zero exit; any other apt
# failure fails at once; bad arguments are refused. No real apt runs.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/lib/harness.sh
harness_begin test-deps "lock refusals"
tmp=$(mktemp -d)
cleanup() { rm -rf "$tmp"; }
harness_on_exit cleanup
phase lock "a locked apt: wait, then go on or give up"
# a package name that dpkg cannot know (Debian names have no upper case)
printf '# test\nNOT-A-PACKAGE-x\n' > "$tmp/packages.build"
printf '# test\n' > "$tmp/packages.host"
# the fake apt-get: its first $LOCKED runs (counted in $tmp/count) fail as apt does
# when process 4242 holds the dpkg frontend lock; then it succeeds, or fails
# an install otherwise when FAIL=1; every call's arguments go to $tmp/calls
cat > "$tmp/apt-get" <<'A'
#!/bin/sh
n=$(cat "$T/count" 2>/dev/null || echo 0); n=$((n + 1)); echo $n > "$T/count"
echo "$*" >> "$T/calls"
if [ "$n" -le "$LOCKED" ]; then
    echo "E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 4242 (apt-get)" >&2
    echo "E: Unable to acquire the dpkg frontend lock (/var/lib/dpkg/lock-frontend), is another process using it?" >&2
    exit 100
fi
case "${FAIL:-}:$*" in 1:*install*) echo "E: Unable to locate package NOT-A-PACKAGE-x" >&2; exit 100 ;; esac
echo "fake apt-get: $*"
A
chmod +x "$tmp/apt-get"
deps() { rm -f "$tmp/count" "$tmp/calls"; T=$tmp DEPS_DIR=$tmp DEPS_APT=$tmp/apt-get "$@" lab/deps.sh build > "$tmp/out" 2>&1; }

LOCKED=2 DEPS_LOCK_WAIT=60 deps env; rc=$?
check "locked twice, then free: exit 0 (got $rc)" test "$rc" = 0
check "it said it waits and named the holder" grep -q 'waiting for another package manager.*held by process 4242' "$tmp/out"
check "update ran again after the lock was free, then install" \
    sh -c "[ \"\$(cut -d' ' -f3 '$tmp/calls' | tr '\n' ' ')\" = 'update update update install ' ]"
check "install asked apt to wait for the dpkg lock too" grep -q 'DPkg::Lock::Timeout=60 install' "$tmp/calls"

LOCKED=1000 DEPS_LOCK_WAIT=3 deps env; rc=$?
check "locked for good: non-zero exit (got $rc)" test "$rc" != 0
check "it says how long it waited and who holds the lock" grep -q 'still locked after [3-9] s (DEPS_LOCK_WAIT=3).*process 4242' "$tmp/out"

LOCKED=0 FAIL=1 DEPS_LOCK_WAIT=60 deps env; rc=$?
check "another apt failure: non-zero exit at once (got $rc, $(wc -l < "$tmp/calls") apt call(s))" \
    sh -c "[ $rc != 0 ] && [ \$(wc -l < '$tmp/calls') = 2 ]"
check "and apt's words are shown" grep -q 'Unable to locate package' "$tmp/out"

phase refusals "bad arguments, the build set"
T=$tmp DEPS_DIR=$tmp DEPS_APT=$tmp/apt-get lab/deps.sh hypervisor > "$tmp/out" 2>&1; rc=$?
check "an unknown package set: exit 2 (got $rc)" test "$rc" = 2
check "named" grep -q "unknown package set 'hypervisor'" "$tmp/out"
DEPS_LOCK_WAIT=soon lab/deps.sh build > "$tmp/out" 2>&1; rc=$?
check "DEPS_LOCK_WAIT=soon: exit 2 (got $rc)" sh -c "[ $rc = 2 ] && grep -q 'DEPS_LOCK_WAIT must be' '$tmp/out'"
# the lists as make check sees them: no hypervisor, no image tools in the build set (libvirt's clients
# are in it: the golden tests validate the generated XML with virt-xml-validate)
check "lab/packages.build names no hypervisor or image tool" \
    sh -c "! grep -v '^#' lab/packages.build | grep -qx 'qemu-system-x86\|qemu-utils\|libvirt-daemon-system\|libvirt-daemon\|mmdebstrap\|cloud-image-utils'"
check "lab/packages.build names virt-xml-validate's package (the golden tests)" grep -qx 'libvirt-clients' lab/packages.build
harness_end
