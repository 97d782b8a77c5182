#!/usr/bin/env bash
# deps.sh — install the Debian packages inclab needs that are missing.
#
#   lab/deps.sh [build] [lab]
#
# build: lab/packages.build (compilers, libraries, what `make check` runs: no
# hypervisor); lab: lab/packages.host as well (images, QEMU, libvirt, namespace
# nodes). No argument: both. Idempotent: with everything installed it only
# checks (dpkg-query) and returns.
#
# Another apt or dpkg (unattended-upgrades, a second make) may hold the package
# manager's locks: deps.sh waits for them, saying whose they are every 15 s,
# for at most DEPS_LOCK_WAIT seconds (default 900), then fails naming the
# holder. apt-get install waits by itself (DPkg::Lock::Timeout); apt-get
# update does not, so a run of it that failed on its lock is retried.
# For tests: DEPS_APT is the apt-get to run, DEPS_DIR the directory of the lists.
set -euo pipefail
here=${DEPS_DIR:-$(cd "$(dirname "$0")" && pwd)}
apt=${DEPS_APT:-apt-get}
wait_max=${DEPS_LOCK_WAIT:-900}
[[ $wait_max =~ ^[0-9]{1,5}$ ]] || { echo "deps: DEPS_LOCK_WAIT must be whole seconds (0..99999), not '$wait_max'" >&2; exit 2; }
lists=()
for what in "${@:-build lab}"; do
    for w in $what; do
        case $w in
        build) lists+=("$here/packages.build") ;;
        lab) lists+=("$here/packages.build" "$here/packages.host") ;;
        *) echo "deps: unknown package set '$w' (build, lab)" >&2; exit 2 ;;
        esac
    done
done
mapfile -t want < <(cat "${lists[@]}" | grep -v '^[[:space:]]*\(#\|$\)' | sort -u)
missing=()
for p in "${want[@]}"; do
    dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
    echo "deps: all ${#want[@]} packages installed"
    exit 0
fi
if [ "$(id -u)" != 0 ]; then
    echo "deps: missing packages: ${missing[*]}; run 'make deps' as root (apt-get install)" >&2
    exit 1
fi

# apt_locked OUTPUT — did apt fail because another process holds one of its locks?
apt_locked() { grep -q 'Could not get lock\|Unable to acquire the dpkg frontend lock\|Unable to lock directory' "$1"; }

# apt_run WHAT ARGS... — run apt-get ARGS, its output shown; while it fails on a
# lock, wait and run it again (at most DEPS_LOCK_WAIT s in all), saying every
# 15 s who holds the lock (apt's own words name the process).
apt_run() {
    local what=$1 out t0=$SECONDS said=-15 rc
    shift
    out=$(mktemp)
    while :; do
        rc=0
        "$apt" -o DPkg::Lock::Timeout="$wait_max" "$@" > "$out" 2>&1 || rc=$?
        if [ "$rc" = 0 ]; then cat "$out"; rm -f "$out"; return 0; fi
        if ! apt_locked "$out"; then cat "$out" >&2; rm -f "$out"; return 1; fi
        if [ $((SECONDS - t0)) -ge "$wait_max" ]; then
            echo "deps: $what: still locked after $((SECONDS - t0)) s (DEPS_LOCK_WAIT=$wait_max): $(grep -m1 'Could not get lock\|Unable to' "$out")" >&2
            rm -f "$out"; return 1
        fi
        if [ $((SECONDS - said)) -ge 15 ]; then
            said=$SECONDS
            echo "deps: $what: waiting for another package manager to finish ($((SECONDS - t0)) s so far): $(grep -m1 'Could not get lock\|Unable to' "$out" | sed 's/^E: //')"
        fi
        sleep 2
    done
}

echo "deps: installing ${#missing[@]} packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# tshark asks whether non-root users may capture: answer no, without a prompt.
# debconf has its own lock, which a running dpkg holds: wait for it the same way.
t0=$SECONDS
until echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections 2>/dev/null; do
    [ $((SECONDS - t0)) -lt "$wait_max" ] || { echo "deps: debconf-set-selections failed for $((SECONDS - t0)) s (is debconf's database locked?)" >&2; exit 1; }
    [ $(((SECONDS - t0) % 15)) -ne 0 ] || echo "deps: waiting for debconf's database ($((SECONDS - t0)) s so far)"
    sleep 1
done
apt_run "apt-get update" update -q || { echo "deps: apt-get update failed (is Debian's archive reachable?)" >&2; exit 1; }
apt_run "apt-get install" install -y -q --no-install-recommends "${missing[@]}" || {
    echo "deps: apt-get install failed for: ${missing[*]}" >&2; exit 1; }
echo "deps: installed ${missing[*]}"
