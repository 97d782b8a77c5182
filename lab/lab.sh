#!/usr/bin/env bash
# lab.sh — lifecycle of an inclab lab on QEMU/libvirt.
#
#   lab/lab.sh up                  build/reuse images, define and boot every node, wait until ready
#   lab/lab.sh status [--format table|json]
#                                  one line per node (libvirt state, addresses, readiness), or
#                                  the lab as one JSON document (README: "lab-status FORMAT=json")
#   lab/lab.sh graph [DIR]         draw the topology with graphviz: DIR/NAME.{dot,svg,png}
#   lab/lab.sh exec NODE CMD       run CMD (sh -c) on NODE through the guest agent; its exit code
#   lab/lab.sh ssh NODE [CMD]      CMD given: like exec; else the serial console
#   lab/lab.sh push NODE SRC DST   copy a file into NODE (guest agent), mode 0755
#   lab/lab.sh console NODE        serial console (root shell; leave with Ctrl-])
#   lab/lab.sh capture LINK [SEC]  pcapng of the frames on tree edges LINK ('sw1-pku1 sw0-sw1'),
#                                  one interface each; the frames lost printed (exit 3 if any), against
#                                  the interfaces' and the switches' own counters
#   lab/lab.sh fault SWITCH KIND   test labs only: arm fault KIND (corrupt, drop, early-barrier) on
#                                  every communicator SWITCH serves from now on; KIND off disarms
#   lab/lab.sh reboot NODE...      reboot the nodes at once (a VM through its guest agent, or with
#                                  HARD=1 a power cycle; a namespace node: its processes killed, its
#                                  /run emptied, its setup and service run again) and wait until
#                                  each is ready again, as after a reboot by anyone: nothing of
#                                  lab-up runs, the node's own boot does it
#   lab/lab.sh clocks [--check]    how fast each VM's clock ran against this machine's since
#                                  lab-up; --check: exit 1 when one strayed over 1 %
#   lab/lab.sh guest-time NODE [N] "MACHINE_NS GUEST_NS RTT_NS": of N (1..20, default 3) reads
#                                  of a VM's clock through its guest agent, the one of least round
#                                  trip (guest - machine is its clock's offset, +- RTT_NS / 2)
#   lab/lab.sh sync                copy the freshly built binaries (build/payload) and service
#                                  units into the running nodes and restart the services
#   lab/lab.sh stop                stop the lab keeping its state: each VM's memory saved by libvirt
#                                  (managed save; its QEMU exits), each namespace node's processes
#                                  ended; the next `up` brings it back from there (no boot)
#   lab/lab.sh down                remove every domain, network, device, file and process the lab
#                                  recorded in its state ($INCLAB_STATE/made), and nothing else
#   lab/lab.sh daemons             start virtlogd and libvirtd as lab-up does, unless they run (a
#                                  lab over hypervisors whose other connection is this machine's
#                                  libvirtd needs it before lab-up asks); recorded as lab-up's, so
#                                  lab-down stops them with the last domain
#
# The lab is described by $TOPOLOGY (default topology/1-2-4.yaml) and lives in
# $INCLAB_STATE (default $INCLAB_STATE_ROOT/$INCLAB_PREFIX; the root defaults
# to /var/lib/inclab, and lab-up and lab-down accept no state elsewhere: see
# "what the lab made" below). SWITCHES=vm (default)
# runs every node as a VM; SWITCHES=netns runs the switches and the controller
# as network namespaces of this machine (natively, the same binaries, node
# setup and services as their images; see "namespace nodes" below) and only
# the hosts as VMs. INCLAB_TEST_LAB=1 at
# lab-up makes a test lab (the lab system test's): its switches allow fault
# injection, and only such a lab accepts the fault verb. This machine never
# sends to a lab address: nodes are reached through the guest agent
# (virtio-serial) and the serial console; tree edges are UDP tunnels on
# 127.0.0.1; the management network is a bridge with no host-side address.
# A topology that declares hypervisors places nodes on several libvirt
# connections (README: "Labs over several hypervisors"): each node is reached
# through its own, the edges between them are tunnels (lab/tunnels.sh).
# Every verb is idempotent and works on a half-built lab.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
# the namespace wiring, shared with nsnode.sh (nsw_*; nsw_made records in made)
# shellcheck source=lab/nswire.sh
. "$here/nswire.sh"
nsw_made() { made "$1" "$2"; }
# graph draws the running lab's own topology unless TOPOLOGY names one (make
# unsets its default: Makefile, lab-graph)
topology_given=${TOPOLOGY:+1}
: "${TOPOLOGY:=topology/1-2-4.yaml}"
: "${INCLAB_PREFIX:=inclab}"
: "${INCLAB_STATE_ROOT:=/var/lib/inclab}"
: "${INCLAB_STATE:=$INCLAB_STATE_ROOT/$INCLAB_PREFIX}"
: "${INCLAB_UDP_BASE:=47000}"
: "${INCLAB_BUILD:=$top/build}"
# the binaries the images and namespace nodes get (make exports it; run by hand, the build's)
: "${INCLAB_PAYLOAD:=$INCLAB_BUILD/payload}"
URI=qemu:///system
LIBVIRT_CONF=${INCLAB_LIBVIRT_CONF:-/etc/libvirt}   # where libvirtd keeps defined domains
prefix=$INCLAB_PREFIX state=$INCLAB_STATE state_root=$INCLAB_STATE_ROOT
gen=$state/gen
# The prefix and the state directory are written into libvirt XML, cloud-init
# seeds and lab.env (which this script sources) and name devices and
# namespaces: a strict grammar, checked before any verb uses them (topogen
# checks what it writes again).
[[ $prefix =~ ^[a-z][a-z0-9]*(-[a-z0-9]+)*$ && ${#prefix} -le 32 ]] ||
    { printf "lab: INCLAB_PREFIX must be 1..32 characters of a-z, 0-9 and single '-' between them, starting with a letter, not '%s'\n" "$prefix" >&2; exit 1; }
[[ $state =~ ^/[A-Za-z0-9._/+-]*$ && $state != *--* && ${#state} -le 200 ]] ||
    { printf "lab: INCLAB_STATE must be an absolute path of at most 200 characters of A-Z a-z 0-9 . _ / + - without '--', not '%s'\n" "$state" >&2; exit 1; }
# What lab-up changes for the whole machine (daemons it started, host settings
# to restore) is noted here, shared by every lab on the machine.
run=${INCLAB_RUN_DIR:-/run/inclab}

log() { printf '[lab %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { printf 'lab: %s\n' "$*" >&2; exit 1; }
vsh() { virsh -q -c "$URI" "$@"; }
# A lab whose topology declares hypervisors (README: "Labs over several
# hypervisors") has $gen/hypervisors.tsv: each node's domain and each
# machine's management network are reached through its hypervisor's libvirt
# connection. Without it every one is reached through $URI, as always.
# hyp_uri HYPERVISOR, node_uri NODE, net_uri NETWORK — the connection's URI
hyp_uri() { awk -F'\t' -v h="$1" '!/^#/ && $1 == h {print $2; exit}' "$gen/hypervisors.tsv" 2>/dev/null; }
node_uri() {
    local h u=""
    h=$(awk -F'\t' -v n="$1" '!/^#/ && $1 == n {print $12}' "$gen/inventory.tsv" 2>/dev/null)
    [ -z "$h" ] || u=$(hyp_uri "$h")
    echo "${u:-$URI}"
}
net_uri() {
    local u
    u=$(awk -F'\t' -v d="$1" '!/^#/ && $4 == d {print $2; exit}' "$gen/hypervisors.tsv" 2>/dev/null)
    echo "${u:-$URI}"
}
# dvsh NODE ARGS... — virsh on NODE's hypervisor; dvsh_dom DOMAIN ARGS... — the same for a domain of the lab
dvsh() { local n=$1; shift; virsh -q -c "$(node_uri "$n")" "$@"; }
dvsh_dom() { local d=$1; shift; dvsh "${d#"$prefix-"}" "$@"; }
# nvsh NETWORK ARGS... — virsh on the hypervisor of the lab's management network NETWORK
nvsh() { local d=$1; shift; virsh -q -c "$(net_uri "$d")" "$@"; }
# shq TEXT — TEXT as one single-quoted word of sh (dash too: no $'...'), for the
# commands this script hands to a node's /bin/sh -c
shq() { printf "'%s'" "${1//\'/\'\\\'\'}"; }
# mode_ok MODE, secs_ok SECONDS — a file mode (3 or 4 octal digits), a duration of
# 1..86400 s: checked before they reach a command line or arithmetic
mode_ok() { [[ $1 =~ ^[0-7]{3,4}$ ]] || die "push: mode must be 3 or 4 octal digits, not '$1'"; }
secs_ok() { [[ $1 =~ ^[0-9]{1,5}$ ]] && [ "$1" -ge 1 ] && [ "$1" -le 86400 ] || die "capture: SECONDS must be a whole number of seconds in 1..86400, not '$1'"; }

# ---- daemons -------------------------------------------------------------

# Start virtlogd and libvirtd when they are not running (no systemd here).
# What we start is noted in $run/started-daemons, one "NAME PID" line each:
# "NAME -" before it starts (a crash right after still leaves a note: `down`
# then reads the daemon's own pid file, /run/NAME.pid), "NAME PID" once it
# runs. `down` stops exactly those processes, by pid (stop_daemons).
# no_fds CMD... — replace this (sub)shell by CMD with only stdin, stdout and
# stderr open; callers run it in a subshell of its own: (no_fds CMD...). A
# daemon inherits every descriptor of whoever started the lab (a make
# jobserver's pipe, a `flock FILE make lab-up`'s lock) and would hold it for as
# long as it runs: a lock that never frees, a make that never sees its pipe
# close. It must be exec'd in that subshell, not run from it: the subshell
# would stay, waiting, with every descriptor still open (seen: the lock held
# by a namespace node's service, through its parent subshell).
no_fds() {
    local fd
    for fd in /proc/$BASHPID/fd/*; do
        fd=${fd##*/}
        [ "$fd" -gt 2 ] 2>/dev/null && eval "exec $fd>&-"
    done
    exec "$@"
}

ensure_daemons() {
    local d pid
    mkdir -p "$run"
    for d in virtlogd libvirtd; do
        daemon_running "$d" && continue
        echo "$d -" >> "$run/started-daemons"
        log "starting $d"
        (no_fds "$d" --daemon) || die "cannot start $d"
        pid=$(daemon_pid "$d") && echo "$d $pid" >> "$run/started-daemons"
    done
    local i
    for i in $(seq 1 150); do
        virsh -c "$URI" version >/dev/null 2>&1 && return 0
        sleep 0.2
    done
    die "libvirtd does not answer on $URI (see /var/log/libvirt/)"
}


# daemon_running NAME — does a process NAME run (a zombie, which has no
# executable any more, does not: one stopped daemon is a zombie until this
# machine's init reaps it)?
daemon_running() {
    local p
    for p in $(pgrep -x "$1"); do readlink "/proc/$p/exe" >/dev/null 2>&1 && return 0; done
    return 1
}

# daemon_pid NAME — the pid in NAME's own pid file (/run/NAME.pid, which
# `NAME --daemon` writes as root) once it names a running NAME (is_daemon);
# waits up to 5 s for it. Fails when there is none.
daemon_pid() {
    local pid i
    for i in $(seq 1 50); do
        pid=$(head -c 16 "/run/$1.pid" 2>/dev/null | tr -d ' \n') || pid=""
        [[ $pid =~ ^[0-9]{1,9}$ ]] && is_daemon "$pid" "$1" && { echo "$pid"; return 0; }
        sleep 0.1
    done
    return 1
}

# is_daemon PID NAME — is process PID the daemon NAME: its command name is
# NAME and its executable the NAME on PATH (a pid reused by anything else,
# or a process merely called NAME, is not)? The " (deleted)" the kernel adds
# to the executable's path after an upgrade replaced it is ignored.
is_daemon() {
    local comm exe want
    [[ $1 =~ ^[0-9]{1,9}$ ]] || return 1
    comm=$(cat "/proc/$1/comm" 2>/dev/null) || return 1
    [ "$comm" = "$2" ] || return 1
    exe=$(readlink "/proc/$1/exe" 2>/dev/null) || return 1
    want=$(command -v "$2") && want=$(readlink -f "$want") || return 1
    [ "${exe% (deleted)}" = "$want" ]
}

# stop_daemons — stop the daemons lab-up started ($run/started-daemons), each
# by the pid noted (or, for a "NAME -" note alone, its pid file's), and only
# while that pid is still that daemon (is_daemon): SIGTERM, then after 10 s
# SIGKILL; then up to 10 s more until its zombie is reaped (pgrep -x still
# finds a zombie, and whoever checks for a running daemon that way would take
# it for one). A daemon someone else started is not in the note and stays.
stop_daemons() {
    local d pid pids
    [ -e "$run/started-daemons" ] || return 0
    for d in $(awk '{print $1}' "$run/started-daemons" | sort -u); do
        case $d in virtlogd | libvirtd) ;; *) log "ignored '$d' in $run/started-daemons: not a daemon lab-up starts"; continue ;; esac
        pids=$(awk -v d="$d" '$1 == d && $2 ~ /^[0-9]+$/ {print $2}' "$run/started-daemons" | sort -u)
        if [ -z "$pids" ]; then
            pid=$(head -c 16 "/run/$d.pid" 2>/dev/null | tr -d ' \n') || pid=""
            pids=$pid
        fi
        for pid in $pids; do
            is_daemon "$pid" "$d" || { log "$d: pid $pid is no longer the $d lab-up started: left alone"; continue; }
            kill "$pid" 2>/dev/null || true
            for _ in $(seq 1 100); do is_daemon "$pid" "$d" || break; sleep 0.1; done
            is_daemon "$pid" "$d" && kill -9 "$pid" 2>/dev/null
            for _ in $(seq 1 100); do [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$d" ] || break; sleep 0.1; done
            log "stopped $d (pid $pid), which lab-up had started"
        done
    done
    rm -f "$run/started-daemons"
}

daemons_up() { pgrep -x libvirtd >/dev/null && virsh -c "$URI" version >/dev/null 2>&1; }

# accel_probe KERNEL INITRD — set LOCAL_ACC to this machine's accelerator: KVM
# when /dev/kvm exists and a guest kernel really starts under it with the CPU the
# domains get (host-passthrough): "Linux version" on its serial console within
# 20 s; else TCG, LOCAL_WHY saying why. The probe's kernel has no init
# (rdinit=/nonexistent): it panics at once and QEMU exits (panic=-1,
# -no-reboot). A /dev/kvm that is present but cannot run a guest (seen: nested
# KVM whose guests fail on MSR 0x10a) gives TCG, not a lab that never boots.
accel_probe() {
    local out why
    LOCAL_ACC=tcg LOCAL_WHY=""
    [ -e /dev/kvm ] || { LOCAL_WHY="no /dev/kvm"; return 0; }
    out=$(timeout 20 qemu-system-x86_64 -accel kvm -cpu host -m 256 -display none -nodefaults -serial stdio \
        -no-reboot -kernel "$1" -initrd "$2" -append "console=ttyS0 earlyprintk=serial,ttyS0 panic=-1 rdinit=/nonexistent" \
        < /dev/null 2>&1) || true   # (QEMU ends by a panic, a failure or the timeout: its output says which)
    if grep -q 'Linux version' <<<"$out"; then
        LOCAL_ACC=kvm
    else
        why=$(grep -m1 -i 'error\|fail\|could not\|cannot' <<<"$out" | tr -cd '[:print:]' | cut -c1-100) || true
        LOCAL_WHY="/dev/kvm is present but a guest kernel does not start under it (${why:-no console output in 20 s})"
    fi
}

# KVM_PROBE — the sh command that shows whether QEMU starts a guest under KVM on
# the machine it runs on (hyp_accel: another hypervisor's, over ssh): QEMU
# (path: the word after it, libvirt's emulator there) under KVM with the CPU the
# domains get (host-passthrough) and nothing to boot: SeaBIOS prints its banner
# ("SeaBIOS (version") on the debug console (port 0x402) at once, finds no
# disk, reboots at once (reboot-timeout=0) and QEMU exits (-no-reboot); awk
# prints the banner, or QEMU's first lines (its errors when KVM fails); 20 s at
# most (timeout there).
KVM_PROBE='timeout 20 "$0" -accel kvm -cpu host -m 64 -display none -nodefaults -no-reboot -boot reboot-timeout=0 -chardev stdio,id=bios -device isa-debugcon,iobase=0x402,chardev=bios </dev/null 2>&1 | awk '"'"'/SeaBIOS \(version/ {print; exit} NR <= 5'"'"
# hyp_accel NAME URI — (lab-up) set HYP_ACC to the accelerator of hypervisor NAME,
# reached over ssh by qemu+ssh:// URI (not the first): kvm when its libvirt offers
# KVM domains for x86_64 (virsh domcapabilities --virttype kvm, within
# HYP_TIMEOUT) and QEMU there (the emulator libvirt names) starts a guest under
# KVM (KVM_PROBE over ssh, 40 s at most); else tcg, HYP_ACC_WHY saying why.
hyp_accel() {
    local out qemu why rc=0
    HYP_ACC=tcg HYP_ACC_WHY=""
    out=$(timeout "${HYP_TIMEOUT:-30}" virsh -q -c "$2" domcapabilities --virttype kvm --arch x86_64 2>&1 </dev/null) || rc=$?
    if [ $rc != 0 ] || ! grep -q '<domain>kvm</domain>' <<<"$out"; then
        why=$(grep -m1 -i 'error' <<<"$out" | tr -cd '[:print:]' | cut -c1-100) || true
        HYP_ACC_WHY="its libvirt offers no KVM domains for x86_64${why:+ ($why)}"
        return 0
    fi
    qemu=$(sed -n 's:^ *<path>\(.*\)</path>.*:\1:p' <<<"$out" | head -n 1)
    [[ $qemu =~ ^/[A-Za-z0-9._/+-]{1,200}$ ]] || { HYP_ACC_WHY="its libvirt names no emulator path to probe KVM with ('${qemu:0:60}')"; return 0; }
    hyp_ssh_argv "$2" || { HYP_ACC_WHY=$HYP_SSH_WHY; return 0; }
    out=$(timeout 40 "${HYP_SSH[@]}" "sh -c $(shq "$KVM_PROBE") $(shq "$qemu")" </dev/null 2>&1) || true   # (its output says)
    if grep -q 'SeaBIOS (version' <<<"$out"; then
        HYP_ACC=kvm
    else
        why=$(grep -m1 -i 'error\|fail\|could not\|cannot\|not found' <<<"$out" | tr -cd '[:print:]' | cut -c1-120) || true
        HYP_ACC_WHY="its libvirt offers KVM, but QEMU there ($qemu) does not start a guest under it: ${why:-no SeaBIOS banner in 20 s}"
    fi
}

# lab_accels KERNEL INITRD HYPS — (lab-up, before anything of the lab is made)
# set acc, the accelerator of this machine's domains, and LAB_ACCEL_AT,
# "NAME=kvm|tcg ..." for each hypervisor of HYPS ("NAME<TAB>URI" lines, the
# first this machine; none: empty). The running lab's (LAB_ACCEL, LAB_ACCEL_AT
# of lab.env) when it has them; INCLAB_ACCEL=tcg: TCG everywhere, nothing
# probed; else this machine's by accel_probe (KERNEL, INITRD), each hypervisor
# reached over ssh by hyp_accel, every other one (this machine: hyp_check) this
# machine's, each logged with why it has no KVM. INCLAB_ACCEL=kvm: dies, naming
# each hypervisor (or this machine) where KVM cannot run a guest.
lab_accels() {
    local name uri first=1 a why bad=""
    if [ -n "${LAB_ACCEL:-}" ]; then acc=$LAB_ACCEL; return 0; fi
    if [ "${INCLAB_ACCEL:-}" = tcg ]; then
        acc=tcg LAB_ACCEL_AT=$(awk -F'\t' 'NF {printf "%s%s=tcg", (n++ ? " " : ""), $1}' <<<"$3")
        log "accelerator: TCG everywhere (INCLAB_ACCEL=tcg)"
        return 0
    fi
    accel_probe "$1" "$2"
    acc=$LOCAL_ACC LAB_ACCEL_AT=""
    [ -n "$3" ] || { [ "$acc" = kvm ] || bad="this machine ($LOCAL_WHY)"; }
    while IFS=$'\t' read -r name uri; do
        [ -n "$name" ] || continue
        if [ $first = 0 ] && [[ $uri == qemu+ssh://* ]]; then
            hyp_accel "$name" "$uri"; a=$HYP_ACC why=$HYP_ACC_WHY
        else
            a=$acc why=$LOCAL_WHY
        fi
        first=0
        LAB_ACCEL_AT+="${LAB_ACCEL_AT:+ }$name=$a"
        log "hypervisor $name: accelerator ${a^^}${why:+ ($why)}"
        [ "$a" = kvm ] || bad+="${bad:+; }hypervisor $name ($why)"
    done <<<"$3"
    [ "${INCLAB_ACCEL:-}" != kvm ] || [ -z "$bad" ] || die "INCLAB_ACCEL=kvm: KVM cannot run a guest on $bad"
    [ "${INCLAB_ACCEL:-}" != kvm ] || log "accelerator: KVM everywhere (INCLAB_ACCEL=kvm, each probed)"
}

# libvirt runs QEMU as libvirt-qemu (group kvm). Without udev /dev/kvm can be
# root-only (0600): give it Debian's udev default (root:kvm 0660) for the lab;
# `down` restores what was found. Needed under TCG too: with a /dev/kvm its
# QEMU user cannot open, libvirt finds its cached QEMU capabilities ("kvm"
# present) never match and probes QEMU again on every call (seen: a minute per
# domain define while VMs boot, lab-up 723 s instead of about 360). Fatal for
# KVM @1 = kvm; under TCG only slower, so a warning.
kvm_access() {
    local qemu_user=libvirt-qemu
    id "$qemu_user" >/dev/null 2>&1 || return 0
    runuser -u "$qemu_user" -- test -w /dev/kvm 2>/dev/null && return 0
    mkdir -p "$run"
    [ -s "$run/kvm_mode" ] || stat -c '%a %u %g' /dev/kvm > "$run/kvm_mode"
    if chgrp kvm /dev/kvm 2>/dev/null && chmod 660 /dev/kvm 2>/dev/null &&
        runuser -u "$qemu_user" -- test -w /dev/kvm 2>/dev/null; then
        log "/dev/kvm: $(awk '{print "mode " $1 " uid " $2 " gid " $3}' "$run/kvm_mode") -> root:kvm 660 for QEMU (restored by lab-down)"
    elif [ "$1" = kvm ]; then
        die "$qemu_user cannot open /dev/kvm even as root:kvm 0660 (is it in group kvm?); INCLAB_ACCEL=tcg runs without KVM"
    else
        log "warning: $qemu_user cannot open /dev/kvm: libvirt will probe QEMU on every call (slow lab-up)"
    fi
}

# ---- guest agent command runner -------------------------------------------

# qga REQUEST [AGENT_S [LIMIT_S]] — REQUEST to the guest agent of domain $dom
# (the caller's), its reply or virsh's error on stdout, virsh's status. An
# agent that is connected but not yet running makes a call wait its whole
# AGENT_S: readiness polls use a short one (QGA_TIMEOUT=3). virsh's timeout
# bounds the agent, not a connection that hangs: LIMIT_S, when given, bounds
# the whole call (status 124, or 137 when it had to be killed).
qga() {
    local call=(virsh -q -c "$(node_uri "${dom#"$prefix-"}")" qemu-agent-command --timeout "${2:-${QGA_TIMEOUT:-10}}" "$dom" "$1")
    [ -z "${3:-}" ] || call=(timeout -k 2 "$3" "${call[@]}")
    "${call[@]}" 2>&1
}

# gspawn NODE CMD — start CMD on NODE and return at once; prints the guest pid
# (collect the output later with gwait NODE PID).
gspawn() {
    local dom=$prefix-$1 req out
    req=$(jq -cn --arg c "$2" '{execute:"guest-exec",arguments:{path:"/bin/sh",arg:["-c",$c],"capture-output":true}}')
    out=$(qga "$req") || { echo "lab: $1: guest agent: $out" >&2; return 125; }
    jq -r '.return.pid' <<<"$out"
}

# gwait NODE PID [TIMEOUT_S] — wait for a gspawn'ed command, print its
# stdout/stderr, return its exit code (124 on timeout, 125 when the agent fails).
gwait() {
    local dom=$prefix-$1 req st t0=$SECONDS limit=${3:-120}
    req=$(jq -cn --argjson p "$2" '{execute:"guest-exec-status",arguments:{pid:$p}}')
    while :; do
        st=$(qga "$req") || { echo "lab: $1: guest agent: $st" >&2; return 125; }
        [ "$(jq -r '.return.exited' <<<"$st")" = true ] && break
        [ $((SECONDS - t0)) -ge "$limit" ] && { echo "lab: $1: pid $2 still running after ${limit} s" >&2; return 124; }
        sleep 0.3
    done
    jq -r '.return["out-data"] // empty' <<<"$st" | base64 -d
    jq -r '.return["err-data"] // empty' <<<"$st" | base64 -d >&2
    return "$(jq -r '.return.exitcode // 125' <<<"$st")"
}

# gpush NODE SRC DST [MODE] — copy a file into NODE through the guest agent.
gpush() {
    local dom=$prefix-$1 src=$2 dst=$3 mode=${4:-0755} out h chunk
    mode_ok "$mode"
    [ -r "$src" ] || die "push: cannot read '$src'"
    out=$(qga "$(jq -cn --arg p "$dst.inclab-tmp" '{execute:"guest-file-open",arguments:{path:$p,mode:"w"}}')") ||
        die "push: $1: cannot open $dst: $out"
    h=$(jq -r '.return' <<<"$out")
    local tmp; tmp=$(mktemp -d)
    split -b 49152 "$src" "$tmp/c."
    for chunk in "$tmp"/c.*; do
        out=$(qga "$(jq -cn --argjson h "$h" --arg b "$(base64 -w0 "$chunk")" \
            '{execute:"guest-file-write",arguments:{handle:$h,"buf-b64":$b}}')" 30) ||
            { rm -rf "$tmp"; die "push: $1: write failed: $out"; }
    done
    rm -rf "$tmp"
    qga "$(jq -cn --argjson h "$h" '{execute:"guest-file-close",arguments:{handle:$h}}')" >/dev/null
    gexec "$1" "chmod $mode $(shq "$dst.inclab-tmp") && mv $(shq "$dst.inclab-tmp") $(shq "$dst")" 30
}

# gexec NODE CMD [TIMEOUT_S] — run CMD under /bin/sh -c on NODE and wait for it.
gexec() {
    local pid
    pid=$(gspawn "$1" "$2") || return 125
    gwait "$1" "$pid" "${3:-600}"
}

# ---- what the lab made -------------------------------------------------------
#
# A lab's state is the directory $state_root/NAME (check_state_path), which
# holds from its first moment the marker file $MARKER, "inclab lab PREFIX".
# $state/made lists everything lab-up makes, one "KIND NAME" line each, each
# line written before the thing is made: a lab-up killed at any point leaves a
# line for a thing that may not exist, never a thing without a line.
#   domain NAME    a libvirt domain          network NAME  a libvirt network
#   netns NAME     a network namespace (every process in it is the lab's)
#   link NAME      a device in the machine's namespace (bridge, veth end, tap)
#   path NAME      a file or directory directly in $state, with what it holds
# and on a hypervisor other than the first (README: "Labs over several
# hypervisors"), NAME prefixed by the hypervisor's name and a '.':
#   pool H.NAME    a libvirt storage pool (its directory and the images shipped
#                  into it stay: a cache for the next lab)
#   volume H.NAME  a volume of that pool (a VM's overlay, seed, console log; an
#                  upload not yet verified)
#   tunnel H.NAME  a tunnel device made over ssh on H's machine (also a
#                  device of its namespace nodes' wires, a VM's tap there)
#   rnetns H.NAME  a network namespace made over ssh on H's machine (a
#                  namespace node there: every process in it is the lab's)
#   rdir H.NAME    the lab's directory NAME (PREFIX.H) on H's machine, with
#                  what it holds (ns_rroot: its namespace nodes' directories)
# lab-down removes exactly those, names compared for equality (never as
# prefixes: lab "inclab" is not lab "inclab-sc"), QEMU processes only when
# they name one of those domains, and refuses a state without the marker of
# its prefix. What lab-up changes for the whole machine is in $run instead.

MARKER=.inclab-lab
# a name in made, a state directory's name: no '/', no space, not "." or ".."
NAME_RE='^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$'

# check_state_path — $state must be an absolute path directly under the
# (absolute) state root, its last part a name (NAME_RE), and not a symbolic
# link: lab-up makes, and lab-down removes, a lab's state nowhere else.
check_state_path() {
    local root parent name=${state##*/}
    case $state_root in /*) ;; *) die "INCLAB_STATE_ROOT must be an absolute path, not '$state_root'" ;; esac
    case $state in /*) ;; *) die "INCLAB_STATE must be an absolute path, not '$state'" ;; esac
    root=$(realpath -m -- "$state_root") && parent=$(realpath -m -- "${state%/*}/") ||
        die "cannot resolve INCLAB_STATE '$state' or INCLAB_STATE_ROOT '$state_root'"
    [ "$root" != / ] || die "INCLAB_STATE_ROOT must not be /"
    [[ $name =~ $NAME_RE ]] && [ "$parent" = "$root" ] ||
        die "INCLAB_STATE '$state' is not a directory directly under the state root $root (INCLAB_STATE_ROOT): a lab's state is made and removed only there"
    [ ! -L "$state" ] || die "INCLAB_STATE '$state' is a symbolic link: refused"
}

# marker_ok — does $state hold the marker of this lab's prefix (a plain file)?
marker_ok() {
    [ -f "$state/$MARKER" ] && [ ! -L "$state/$MARKER" ] && [ "$(head -n 1 "$state/$MARKER")" = "inclab lab $prefix" ]
}

# state_foreign — true when $state exists and is not this lab's: no marker of
# this prefix, and not an empty directory (what a lab-up killed between its
# mkdir and the marker leaves, which is taken as this lab's).
state_foreign() {
    [ -e "$state" ] || [ -L "$state" ] || return 1
    marker_ok && return 1
    ! { [ -d "$state" ] && [ ! -L "$state" ] && [ -z "$(ls -A "$state")" ]; }
}

# state_init — (lab-up) make $state and its marker, or find them; refused for
# a state that is not this lab's (state_foreign).
state_init() {
    check_state_path
    state_foreign &&
        die "$state exists and is not the state of lab '$prefix' (no marker $MARKER naming it): remove it by hand, or choose another INCLAB_STATE / INCLAB_PREFIX"
    mkdir -p "$state_root" && { [ -d "$state" ] || mkdir "$state"; } || die "cannot make the state directory $state"
    marker_ok || echo "inclab lab $prefix" > "$state/$MARKER" || die "cannot write $state/$MARKER"
}

# made_names KIND — the names of KIND in $state/made, in the order made.
made_names() { awk -v k="$1" '$1 == k && NF == 2 {print $2}' "$state/made" 2>/dev/null; }

# made_check — every line of $state/made is "KIND NAME" with a known KIND and
# a NAME of NAME_RE; domains, networks and namespaces begin with "$prefix-";
# paths are neither the marker nor made. Prints each bad line; fails if any.
made_check() {
    [ -e "$state/made" ] || return 0
    # (the same grammar as NAME_RE: mawk has no {m,n})
    awk -v p="$prefix-" -v m="$MARKER" '
        { bad = "" }
        NF != 2 { bad = "not KIND NAME" }
        !bad && $1 !~ /^(domain|network|netns|link|path|pool|volume|tunnel|rnetns|rdir)$/ { bad = "unknown kind" }
        !bad && ($2 !~ /^[A-Za-z0-9][A-Za-z0-9._-]*$/ || length($2) > 128) { bad = "not a name" }
        !bad && $1 ~ /^(domain|network|netns)$/ && index($2, p) != 1 { bad = "not a name of this lab" }
        !bad && $1 ~ /^(pool|volume|tunnel|rnetns|rdir)$/ && $2 !~ /^[a-z][a-z0-9-]*\.[A-Za-z0-9]/ { bad = "not HYPERVISOR.NAME" }
        !bad && $1 ~ /^(pool|volume|rnetns)$/ && index(substr($2, index($2, ".") + 1), p) != 1 { bad = "not a name of this lab" }
        !bad && $1 == "rdir" && substr($2, index($2, ".") + 1) != substr(p, 1, length(p) - 1) "." substr($2, 1, index($2, ".") - 1) { bad = "not the lab'"'"'s directory PREFIX.HYPERVISOR" }
        !bad && $1 == "path" && ($2 == m || $2 == "made") { bad = "the lab'"'"'s own record" }
        bad { printf "line %d: \"%s\": %s\n", NR, substr($0, 1, 80), bad; n++ }
        END { exit n > 0 }' "$state/made"
}

# qemu_pids DOMAIN — the QEMU processes of libvirt domain DOMAIN: command
# name qemu-system-*, and an argument "guest=DOMAIN" or "guest=DOMAIN,..."
# (libvirt's "-name guest=DOMAIN,debug-threads=on"), compared for equality.
qemu_pids() {
    local p comm arg
    for p in /proc/[0-9]*; do
        read -r comm 2>/dev/null < "$p/comm" || continue
        case $comm in qemu-system-*) ;; *) continue ;; esac
        while IFS= read -r -d '' arg; do
            [ "${arg%%,*}" = "guest=$1" ] && { echo "${p#/proc/}"; break; }
        done 2>/dev/null < "$p/cmdline"
    done
    return 0   # (a process gone meanwhile is no failure)
}

# ---- namespace nodes (SWITCHES=netns) ---------------------------------------
#
# A namespace node NODE is the network namespace $prefix-NODE, wired by
# wires.tsv (topogen), plus a directory $state/nodes/NODE/root that holds what
# its VM image would: /etc/inclab (node.conf, net.sh, the topology), /run/inclab,
# /var/log/inclab, /usr/local/bin (the role's payload) and /usr/local/sbin (the
# guests' inclab-node-setup and inclab-ready). Every command run in the node
# sees those five directories bind-mounted over the machine's (in the private
# mount namespace `ip netns exec` makes), so the same scripts and paths work
# unchanged; the rest of the file system is the machine's. The role's service
# (the ExecStart of its systemd unit, with node.conf as environment) runs under
# a restart loop, as Restart=always would. $state/made lists every namespace and
# device the lab made, written before it is made: lab-down removes exactly those.
# A node placed on a hypervisor reached over ssh (ns_remote) is all that on its
# machine: lab/nsnode.sh (ns_at) and nsrun_at do there, over ssh, what these
# functions do here; its directory is under ns_rroot there, its records in made
# name that hypervisor (rnetns, rdir, tunnel H.NAME).


node_kind() { awk -F'\t' -v n="$1" '$1 == n {print ($11 == "" ? "vm" : $11)}' "$gen/inventory.tsv"; }
node_role() { awk -F'\t' -v n="$1" '$1 == n {print $2}' "$gen/inventory.tsv"; }
ns_nodes() { awk -F'\t' '!/^#/ && $11 == "netns" {print $1}' "$gen/inventory.tsv"; }
# node_hyp NODE — NODE's hypervisor (inventory.tsv's 12th column; nothing without hypervisors)
node_hyp() { awk -F'\t' -v n="$1" '!/^#/ && $1 == n {print $12; exit}' "$gen/inventory.tsv" 2>/dev/null; }
# ns_remote NODE — is NODE a namespace node of a hypervisor reached over ssh (hyp_by_ssh)?
# Then it lives on that machine: its namespace, wires, directories (ns_rroot there) and
# processes, each made, run and removed there by lab/nsnode.sh (ns_at) or nsrun_at.
ns_remote() { [ -e "$gen/hypervisors.tsv" ] && [ "$(node_kind "$1")" = netns ] && hyp_by_ssh "$(node_hyp "$1")"; }
# ns_here_nodes — the namespace nodes of this machine (ns_nodes but the ns_remote ones)
ns_here_nodes() { local n; for n in $(ns_nodes); do ns_remote "$n" || echo "$n"; done; }
# ssh_hyps — the hypervisors reached over ssh (hyp_by_ssh), separated by spaces
ssh_hyps() {
    local h out=""
    [ -e "$gen/hypervisors.tsv" ] || return 0
    for h in $(awk -F'\t' '!/^#/ {print $1}' "$gen/hypervisors.tsv"); do hyp_by_ssh "$h" && out+="$h "; done
    echo "$out"
}
# ns_rroot HYPERVISOR — the lab's directory on that machine (INCLAB_REMOTE_ROOT, default
# /var/lib/inclab, then PREFIX.HYPERVISOR: no lab's state directory, whose names have no '.'
# from a prefix); its nodes/NODE/root is what $state/nodes/NODE/root is here
ns_rroot() { echo "${INCLAB_REMOTE_ROOT:-/var/lib/inclab}/$prefix.$1"; }

# ns_argv NODE CMD [ROOT] — set NSARGV to the command line that runs CMD under
# /bin/sh -c in NODE's namespace with the node's directories (those of ROOT,
# default $state/nodes/NODE/root) mounted and a clean environment.
ns_argv() {
    NSARGV=(ip netns exec "$prefix-$1" env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
        HOME=/root TERM="${TERM:-dumb}" INCLAB_NETNS=1 NS_DIRS="$NS_DIRS" /bin/sh -c '
        for d in $NS_DIRS; do mount --bind "$0/$d" "/$d" || exit 125; done
        exec /bin/sh -c "$1"' "${3:-$state/nodes/$1/root}" "$2")
}

# nsrun NODE CMD [TIMEOUT_S] — run CMD in NODE (ns_argv); its exit code (124
# on timeout). TIMEOUT_S 0: no limit. Standard input is passed through.
nsrun() {
    if ns_remote "$1"; then nsrun_at "$@"; return; fi
    ns_exists "$prefix-$1" || { echo "lab: $1: no namespace $prefix-$1 (make lab-up)" >&2; return 125; }
    ns_argv "$1" "$2"
    timeout "${3:-600}" "${NSARGV[@]}"
}

# nsrun_at NODE CMD [TIMEOUT_S] — nsrun for a node of a hypervisor reached over
# ssh: the same command line (ns_argv, its directories those under ns_rroot
# there), each word quoted (shq), run on its machine under timeout there
# (TIMEOUT_S 0: none, and a terminal when this one has one), after a check
# that the namespace exists (125 otherwise). Standard input passed through;
# its exit code (255: ssh failed).
nsrun_at() {
    local h c a t=${3:-600}
    [[ $t =~ ^[0-9]{1,6}$ ]] || die "exec: TIMEOUT must be a whole number of seconds, not '$t'"
    h=$(node_hyp "$1")
    ns_argv "$1" "$2" "$(ns_rroot "$h")/nodes/$1/root"
    c="ip netns list 2>/dev/null | awk -v n=$(shq "$prefix-$1") '\$1 == n {f = 1} END {exit !f}' || { echo $(shq "lab: $1: no namespace $prefix-$1 on hypervisor $h (make lab-up)") >&2; exit 125; }; exec timeout $t"
    for a in "${NSARGV[@]}"; do c+=" $(shq "$a")"; done
    hyp_ssh_argv "$(hyp_uri "$h")" || { echo "lab: hypervisor $h: $HYP_SSH_WHY" >&2; return 125; }
    [ "$t" != 0 ] || ! [ -t 0 ] || HYP_SSH[1]=-t
    "${HYP_SSH[@]}" "$c"
}

# ns_at HYPERVISOR VERB STAGE [ARG...] — lab/nsnode.sh VERB on HYPERVISOR's
# machine over ssh (hyp_sh), for its namespace nodes: the script and what
# directory STAGE holds (- for nothing) go as a tar on standard input into a
# temporary directory there (removed when it ends); its arguments, the lab's
# root there (ns_rroot), prefix, hypervisor and ARGs, each quoted (shq; the
# script checks them again). Prints its output; its exit code.
ns_at() {
    local h=$1 verb=$2 stage=$3 args="" a t rc=0
    shift 3
    hyp_dir_ok "$(ns_rroot "$h")" || die "INCLAB_REMOTE_ROOT: '$(ns_rroot "$h")' is not a directory path of the lab's grammar"
    for a in "$verb" "$(ns_rroot "$h")" "$prefix" "$h" "$@"; do args+=" $(shq "$a")"; done
    t=$(mktemp -d) || die "mktemp failed"
    cp "$here/nsnode.sh" "$here/nswire.sh" "$t/" || die "cannot copy $here/nsnode.sh and nswire.sh"
    [ "$stage" = - ] || cp -a "$stage/." "$t/" || die "cannot copy $stage"
    tar -C "$t" -cf - . | hyp_sh "$h" "set -e; d=\$(mktemp -d); trap 'rm -rf \"\$d\"' EXIT; tar -x -C \"\$d\" -f -; bash \"\$d/nsnode.sh\"$args < /dev/null" || rc=$?
    rm -rf "$t"
    return $rc
}

# ns_node_exists NODE — does NODE's namespace exist (on its machine)?
ns_node_exists() {
    if ns_remote "$1"; then [ "$(ns_at "$(node_hyp "$1")" state - "$1" 2>/dev/null)" != absent ]; else ns_exists "$prefix-$1"; fi
}

# nexec NODE CMD [TIMEOUT_S] — run CMD on NODE, a VM (guest agent) or a namespace.
# A namespace node of another machine gets no standard input (as a VM's
# command): ssh would read the caller's, e.g. the rest of a `while read` loop's.
nexec() {
    if ns_remote "$1"; then nsrun_at "$1" "$2" "${3:-600}" < /dev/null
    elif [ "$(node_kind "$1")" = netns ]; then nsrun "$1" "$2" "${3:-600}"; else gexec "$1" "$2" "${3:-600}"; fi
}

# npush NODE SRC DST [MODE] — copy a file into NODE. Into a namespace node only
# under its own directories (elsewhere it would write the machine's files).
npush() {
    local d ok=0
    if [ "$(node_kind "$1")" != netns ]; then gpush "$@"; return; fi
    [ -r "$2" ] || die "push: cannot read '$2'"
    for d in $NS_DIRS; do case $3 in /$d/?*) ok=1 ;; esac; done
    case $3 in *..*) ok=0 ;; esac
    [ $ok = 1 ] || die "push: $1 is a namespace node: push only into its own directories (/${NS_DIRS// /, /}), not '$3'"
    mode_ok "${4:-0755}"
    nsrun "$1" "cat > $(shq "$3.inclab-tmp") && chmod ${4:-0755} $(shq "$3.inclab-tmp") && mv $(shq "$3.inclab-tmp") $(shq "$3")" 60 < "$2"
}

# mgmt_bridge — the management network's bridge device, as topogen named it in
# network-mgmt.xml (at most 15 characters: a long prefix gives a hashed tag);
# "$prefix-mgmt" when the lab has no generated files.
mgmt_bridge() {
    local b
    b=$(sed -n "s/.*<bridge name='\([^']*\)'.*/\1/p" "$gen/network-mgmt.xml" 2>/dev/null | head -n 1)
    echo "${b:-$prefix-mgmt}"
}

# made KIND NAME — record, before making it, a thing of this lab (once); see
# "what the lab made". is_made KIND NAME — is it recorded (exact line)?
made() { is_made "$1" "$2" || echo "$1 $2" >> "$state/made" || die "cannot write $state/made"; }
is_made() { grep -qxF -- "$1 $2" "$state/made" 2>/dev/null; }
link_exists() { ip link show dev "$1" >/dev/null 2>&1; }
ns_exists() { ip netns list 2>/dev/null | awk -v n="$1" '$1 == n {f = 1} END {exit !f}'; }

# ns_mountpoints — the machine directories a namespace node's own are mounted
# on must exist; those made here are listed in /run/inclab/made-mountpoints and
# removed (if empty) when the last namespace lab goes down.
ns_mountpoints() {
    mkdir -p "$run"
    nsw_mountpoints "$run/made-mountpoints"
}

# ns_check_names — refuse namespaces and devices of this lab's names that
# something else made (not in $state/made): nothing of anyone else's is touched.
ns_check_names() {
    local n name h out skip
    skip=$(ssh_hyps)
    for n in $(ns_here_nodes); do
        ns_exists "$prefix-$n" && ! is_made netns "$prefix-$n" &&
            die "network namespace '$prefix-$n' exists and is not this lab's: remove it or choose another INCLAB_PREFIX"
    done
    # the devices wires.tsv names in the machine's namespace: veths and taps (columns 9, 10), bridges (column 8)
    # (a line of a hypervisor reached over ssh is that machine's: asked there, below)
    for name in $(awk -F'\t' -v s="$skip" '!/^#/ && !(s != "" && index(" " s, " " $11 " ")) { if ($9 != "-") print $9; if ($10 != "-") print $10; if ($1 == "bridge") print $8 }' "$gen/wires.tsv"); do
        link_exists "$name" && ! is_made link "$name" &&
            die "network device '$name' exists and is not this lab's: remove it or choose another INCLAB_PREFIX"
    done
    # the namespace nodes of a hypervisor reached over ssh: their names there (nsnode.sh exists)
    for h in $skip; do
        ns_hyp_nodes "$h" >/dev/null || continue
        ns_stage_wires "$h"
        out=$(ns_at "$h" exists "$NS_STAGE" $(ns_hyp_nodes "$h")) || { rm -rf "$NS_STAGE"; die "hypervisor $h: cannot ask for its namespaces and devices over ssh (see above)"; }
        rm -rf "$NS_STAGE"
        for name in $(awk '$1 == "exists" {print $2}' <<<"$out"); do
            is_made rnetns "$h.$name" || is_made tunnel "$h.$name" ||
                die "network namespace or device '$name' exists on hypervisor $h and is not this lab's: remove it or choose another INCLAB_PREFIX"
        done
    done
    return 0
}

# ns_hyp_nodes HYPERVISOR — the namespace nodes placed on HYPERVISOR (fails if none)
ns_hyp_nodes() { awk -F'\t' -v h="$1" '!/^#/ && $11 == "netns" && $12 == h {print $1; f = 1} END {exit !f}' "$gen/inventory.tsv"; }

# ns_stage_wires HYPERVISOR — NS_STAGE: a new temporary directory holding
# wires.tsv's lines of HYPERVISOR (for nsnode.sh; the caller removes it)
ns_stage_wires() {
    NS_STAGE=$(mktemp -d) || die "mktemp failed"
    awk -F'\t' -v h="$1" '!/^#/ && $11 == h' "$gen/wires.tsv" > "$NS_STAGE/wires.tsv" || die "cannot read $gen/wires.tsv"
}

# ns_wire_at HYPERVISOR — (lab-up) ns_wire on HYPERVISOR's machine, for its
# namespace nodes and its lines of wires.tsv (nsnode.sh wire, over ssh): the
# lab's directory there and each namespace recorded in made first (rdir
# H.PREFIX.H, rnetns H.NAME), each device as nsnode.sh names it before it
# makes it (tunnel H.NAME, as tunnels.sh's).
ns_wire_at() {
    local h=$1 n out
    made rdir "$h.$prefix.$h"
    for n in $(ns_hyp_nodes "$h"); do made rnetns "$h.$prefix-$n"; done
    ns_stage_wires "$h"
    out=$({ ns_at "$h" wire "$NS_STAGE" $(ns_hyp_nodes "$h") || echo "exit $?"; } |
        while read -r k v; do case $k in link) made tunnel "$h.$v" ;; dir | netns) ;; *) echo "$k $v" ;; esac; done)
    rm -rf "$NS_STAGE"
    [ -z "$out" ] || die "hypervisor $h: its namespace nodes could not be wired (nsnode.sh: $out)"
    log "hypervisor $h: namespace node(s) $(ns_hyp_nodes "$h" | tr '\n' ' ')wired there over ssh (nsnode.sh; their directories in $(ns_rroot "$h"))"
}

# ns_wire — make every namespace and device of wires.tsv of this machine that
# is missing (those of a hypervisor reached over ssh: ns_wire_at), as
# lab/nswire.sh makes them (nsnode.sh the same there), each recorded in made first.
ns_wire() {
    local n skip
    skip=$(ssh_hyps)
    for n in $(ns_here_nodes); do
        ns_exists "$prefix-$n" || nsw_netns "$prefix-$n"
    done
    nsw_wire "$prefix" < <(awk -F'\t' -v s="$skip" '!/^#/ && !(s != "" && index(" " s, " " $11 " ")) {print $1, $3, $4, $5, $6, $7, $8, $9}' "$gen/wires.tsv")
}

# ns_files NODE — fill NODE's directories: node.conf, net.sh and the topology
# from gen/nodes/NODE, its role's payload, the guests' setup scripts.
ns_files() {
    local n=$1 role root=$state/nodes/$1/root d f payload=${INCLAB_PAYLOAD:-$INCLAB_BUILD/payload}
    role=$(node_role "$n")
    if ns_remote "$n"; then ns_files_at "$n" "$payload/$role"; return; fi
    made path nodes
    for d in $NS_DIRS; do mkdir -p "$root/$d"; done
    [ -d "$payload/$role/usr/local/bin" ] || die "no payload for $role in $payload: run 'make payload' first"
    for f in "$gen/nodes/$n"/*; do ns_install "$f" "$root/etc/inclab"; done
    for f in "$payload/$role/usr/local/bin"/*; do ns_install "$f" "$root/usr/local/bin"; done
    for f in "$top/images/guest/usr/local/sbin"/*; do ns_install "$f" "$root/usr/local/sbin"; done
}

# ns_files_at NODE PAYLOAD — ns_files for a node of a hypervisor reached over
# ssh: the same files, staged here under files/ with their SHA256SUMS, sent in
# nsnode.sh's tar; there they are checked against those sums, then installed
# into its directories under ns_rroot (nsnode.sh files), each by rename.
ns_files_at() {
    local n=$1 h t f out
    h=$(node_hyp "$n")
    [ -d "$2/usr/local/bin" ] || die "no payload for $(node_role "$n") in ${2%/*}: run 'make payload' first"
    t=$(mktemp -d) || die "mktemp failed"
    mkdir -p "$t/files/etc/inclab" "$t/files/usr/local/bin" "$t/files/usr/local/sbin"
    cp -p "$gen/nodes/$n"/* "$t/files/etc/inclab/" && cp -p "$2/usr/local/bin"/* "$t/files/usr/local/bin/" &&
        cp -p "$top/images/guest/usr/local/sbin"/* "$t/files/usr/local/sbin/" || { rm -rf "$t"; die "$n: cannot stage its files"; }
    (cd "$t/files" && find . -type f | sed 's|^\./||' | sort | xargs -d '\n' sha256sum) > "$t/SHA256SUMS" || { rm -rf "$t"; die "$n: cannot hash its files"; }
    made rdir "$h.$prefix.$h"
    out=$(ns_at "$h" files "$t" "$n" 2>&1) || { rm -rf "$t"; die "$n: its files could not be installed on hypervisor $h: $(tail -n 2 <<<"$out" | tr '\n' ' ')"; }
    rm -rf "$t"
    log "  $n (hypervisor $h): $out"
}

# ns_install FILE DIR — copy FILE into DIR by rename: a running binary of the
# same name keeps its file ("text file busy" otherwise) until it restarts.
ns_install() {
    cp -p "$1" "$2/.${1##*/}.new" && mv -f "$2/.${1##*/}.new" "$2/${1##*/}" || die "cannot install $1 into $2"
}

# ns_unit ROLE — the ExecStart command of ROLE's service unit (as in its image).
ns_unit() {
    local u
    case $1 in switch) u=incswitch.service ;; controller) u=incctl.service ;; *) return 1 ;; esac
    sed -n 's/^ExecStart=//p' "$top/images/roles/$1/etc/systemd/system/$u"
}

# ns_loop_runs NODE — does NODE's service restart loop run?
ns_loop_runs() {
    if ns_remote "$1"; then [ "$(ns_at "$(node_hyp "$1")" state - "$1" 2>/dev/null)" = loop ]; return; fi
    local f=$state/nodes/$1/root/run/inclab/service-loop.pid
    [ -s "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null
}

# ns_service NODE — start NODE's service under a restart loop unless it runs.
# The loop's pid is in run/inclab/service-loop.pid, the service's in
# run/inclab/service.pid (inclab-ready checks it). A node of a hypervisor
# reached over ssh: the same loop, started there by nsnode.sh service.
ns_service() {
    local n=$1 root=$state/nodes/$1/root cmd h="" out
    ns_remote "$n" && h=$(node_hyp "$n") root=$(ns_rroot "$h")/nodes/$n/root
    [ -n "$h" ] || ! ns_loop_runs "$n" || return 0
    cmd=$(ns_unit "$(node_role "$n")") || return 0
    [ -n "$h" ] || rm -f "$root/run/inclab/service.pid"
    ns_argv "$n" "echo \$\$ > /run/inclab/service-loop.pid
        set -a; . /etc/inclab/node.conf; set +a
        while :; do
            $cmd &
            echo \$! > /run/inclab/service.pid
            wait \$!; rc=\$?
            echo \"\$(date '+%F %T') service exited with status \$rc; restarting in 1 s\" >> /var/log/inclab/service-loop.log
            sleep 1
        done" "$root"
    if [ -n "$h" ]; then
        out=$(ns_at "$h" service - "$n" "${NSARGV[@]}" 2>&1) || die "$n: its service did not start on hypervisor $h: $(tail -n 2 <<<"$out" | tr '\n' ' ')"
        return 0
    fi
    # In a session of its own (no signal from lab.sh's terminal), and exec'ed
    # from a subshell: nothing of this script is read again after it starts.
    (no_fds setsid "${NSARGV[@]}" > /dev/null 2>&1 < /dev/null) &
    local i
    for i in $(seq 1 50); do [ -s "$root/run/inclab/service.pid" ] && return 0; sleep 0.1; done
    die "$n: its service did not start (see $root/var/log/inclab/)"
}

# ns_setup NODE — network, role setup and service of a namespace node
# (what cloud-init's network-config and runcmd do in its VM).
ns_setup() {
    local out
    out=$(nsrun "$1" "sh /etc/inclab/net.sh" 60 2>&1 < /dev/null) || die "$1: network setup failed: $out"
    out=$(nsrun "$1" "inclab-node-setup" 60 2>&1 < /dev/null) || die "$1: inclab-node-setup failed: $out"
    ns_service "$1"
}

# ns_up — namespaces, wires and running nodes, the controller first (the
# switches register with it). Idempotent.
ns_up() {
    local n h
    ns_mountpoints
    ns_check_names
    ns_wire
    for h in $(ssh_hyps); do ! ns_hyp_nodes "$h" >/dev/null || ns_wire_at "$h"; done
    [ ! -e "$gen/tunnels.tsv" ] || hyp_tunnels
    for n in $(awk -F'\t' '!/^#/ && $11 == "netns" {print ($2 == "controller" ? 0 : 1), $1}' "$gen/inventory.tsv" | sort -s -k1,1 | cut -d' ' -f2); do
        ns_files "$n"
        ns_setup "$n"
    done
    log "namespace nodes up: $(ns_nodes | tr '\n' ' ')"
}

# ns_kill NETNS — stop every process in the lab's namespace NETNS (all are the lab's).
ns_kill() {
    local pids
    pids=$(ip netns pids "$1" 2>/dev/null | tr '\n' ' ') || true # no such namespace: nothing to kill
    [ -n "${pids// /}" ] || return 0
    kill $pids 2>/dev/null || true
    for _ in $(seq 1 30); do
        pids=$(ip netns pids "$1" 2>/dev/null | tr '\n' ' ') || true
        [ -n "${pids// /}" ] || return 0
        sleep 0.1
    done
    kill -9 $pids 2>/dev/null || true
}

# ns_down — remove every namespace (after its processes) and device listed in
# $state/made; the veth ends inside a namespace go with it. Those of a
# hypervisor reached over ssh (rnetns H.NAME, rdir H.NAME) on its machine
# (ns_down_at). Adds to $failed what it could not remove.
ns_down() {
    local name n=0 l=0
    ns_down_at
    for name in $(made_names netns); do
        ns_exists "$name" || continue
        ns_kill "$name"
        ip netns del "$name" 2>/dev/null
        if ns_exists "$name"; then log "could not remove namespace $name"; failed=$((failed + 1)); else n=$((n + 1)); fi
    done
    for name in $(made_names link); do
        link_exists "$name" || continue
        ip link del "$name" 2>/dev/null
        if link_exists "$name"; then log "could not remove device $name"; failed=$((failed + 1)); else l=$((l + 1)); fi
    done
    [ $((n + l)) = 0 ] || log "removed $n namespace(s) and $l device(s) of the lab"
}

# ns_down_at — (lab-down) on each hypervisor with rnetns or rdir records whose
# connection answers (not in $dead): those namespaces removed after their
# processes (nsnode.sh down), then the lab's directory there (rmroot); each
# record of one that does not answer, or that stays, counted in $failed (the
# record is kept: a second lab-down removes it).
ns_down_at() {
    local h uri names out
    for h in $( { made_names rnetns; made_names rdir; } | cut -d. -f1 | sort -u); do
        uri=$(hyp_uri "$h")
        names=$(made_names rnetns | awk -v h="$h" 'index($0, h ".") == 1 {print substr($0, length(h) + 2)}' | tr '\n' ' ')
        if [ -z "$uri" ] || { [ -n "${dead:-}" ] && grep -qxF -- "$uri" <<<"$dead"; }; then
            log "could not remove namespace(s) ${names:-none} and the lab's directory on hypervisor $h: it does not answer"; failed=$((failed + 1)); continue
        fi
        # shellcheck disable=SC2086 # names: one word each (made_check)
        out=$(ns_at "$h" down - $names 2>&1) ||
            { log "could not remove namespace(s) on hypervisor $h over ssh: $(tail -n 1 <<<"$out")"; failed=$((failed + 1)); continue; }
        if grep -q '^left ' <<<"$out"; then
            log "could not remove namespace(s) on hypervisor $h: $(sed -n 's/^left //p' <<<"$out" | tr '\n' ' ')"; failed=$((failed + 1)); continue
        fi
        log "hypervisor $h: removed $(grep -c '^removed ' <<<"$out" || true) namespace(s) of the lab over ssh"
        is_made rdir "$h.$prefix.$h" || continue
        out=$(ns_at "$h" rmroot - 2>&1) || { log "could not remove $(ns_rroot "$h") on hypervisor $h: $(tail -n 1 <<<"$out")"; failed=$((failed + 1)); continue; }
        [ -z "$out" ] || log "hypervisor $h: $out"
    done
}

# ns_unmountpoints — remove the mount points ns_mountpoints made (only empty
# directories) once no namespace lab is left on the machine.
ns_unmountpoints() {
    [ -e "$run/made-mountpoints" ] || return 0
    grep -qs '^LAB_SWITCHES=netns' "$state_root"/*/lab.env /var/lib/inclab/*/lab.env && return 0
    nsw_unmountpoints "$run/made-mountpoints"
}

# ---- inventory ------------------------------------------------------------

nodes() { grep -v '^#' "$gen/inventory.tsv" | cut -f1; }
need_lab() { [ -e "$gen/inventory.tsv" ] || die "no lab in $state: run 'make lab-up' first"; }
need_node() {
    need_lab
    [ -n "${1:-}" ] || die "which node? NODE=<name>, one of: $(nodes | tr '\n' ' ')"
    grep -qxF -- "$1" <<<"$(nodes)" || die "no node '$1' in this lab; nodes: $(nodes | tr '\n' ' ')"
}
# console_log NODE — the file of a VM's serial console log (its domain's; on a
# hypervisor but the first, in its pool directory, on that machine)
console_log() { sed -n "s/.*<log file='\([^']*\)'.*/\1/p" "$gen/domains/$1.xml" 2>/dev/null | head -n 1; }
dom_state() { dvsh "$1" domstate "$prefix-$1" 2>/dev/null | head -n 1 || echo absent; }

# ---- up ---------------------------------------------------------------------

cmd_up() {
    local t0=$SECONDS acc topo_hash roles image LAB_ACCEL="" LAB_ACCEL_AT="" LAB_TSC_KHZ="" LAB_TSC_AT="" test_lab=0 switches=${SWITCHES:-}
    case ${INCLAB_ACCEL:-} in kvm | tcg | "") ;; *) die "INCLAB_ACCEL must be kvm or tcg, not '$INCLAB_ACCEL'" ;; esac
    case ${INCLAB_TEST_LAB:-0} in 0 | "") ;; 1) test_lab=1 ;; *) die "INCLAB_TEST_LAB must be 0 or 1, not '$INCLAB_TEST_LAB'" ;; esac
    case $switches in vm | netns | "") ;; *) die "SWITCHES must be vm or netns, not '$switches'" ;; esac
    check_state_path
    state_foreign &&
        die "$state exists and is not the state of lab '$prefix' (no marker $MARKER naming it): remove it by hand, or choose another INCLAB_STATE / INCLAB_PREFIX"
    [ -r "$TOPOLOGY" ] || die "topology file '$TOPOLOGY' not found"
    "$INCLAB_BUILD/topogen" --check "$TOPOLOGY" >/dev/null || die "invalid topology '$TOPOLOGY' (see above)"
    # a lab over several hypervisors: every connection answers and may hold the
    # lab (hyp_check: the remote ones now, before images are built; the local
    # ones once libvirtd runs), before anything of the lab is made
    local hyps
    hyps=$("$INCLAB_BUILD/topogen" --json "$TOPOLOGY" | jq -r '(.hypervisors // [])[] | [.name, .uri] | @tsv') ||
        die "topogen --json failed on '$TOPOLOGY'"
    [ -z "$hyps" ] || hyp_check remote "$hyps"
    topo_hash=$(sha256sum < "$TOPOLOGY" | cut -c1-16)
    if [ -e "$state/lab.env" ]; then
        # shellcheck disable=SC1091
        local LAB_TOPOLOGY="" LAB_HASH="" LAB_ROLES=""; . "$state/lab.env"
        [ "$LAB_HASH" = "$topo_hash" ] ||
            die "a lab of '$LAB_TOPOLOGY' (other contents) is in $state: 'make lab-down' first"
        [ -z "${INCLAB_ACCEL:-}" ] || [ -z "$LAB_ACCEL" ] || [ "$INCLAB_ACCEL" = "$LAB_ACCEL" ] ||
            die "the lab in $state runs under $LAB_ACCEL: 'make lab-down' before INCLAB_ACCEL=$INCLAB_ACCEL"
        [ -z "${INCLAB_ACCEL:-}" ] || [ -z "$(tr ' ' '\n' <<<"$LAB_ACCEL_AT" | grep -v "=$INCLAB_ACCEL\$" | grep .)" ] ||
            die "the lab in $state runs its hypervisors under $LAB_ACCEL_AT: 'make lab-down' before INCLAB_ACCEL=$INCLAB_ACCEL"
        [[ $LAB_ACCEL_AT =~ ^([a-z][a-z0-9-]*=(kvm|tcg)( |$))*$ ]] || die "lab.env: LAB_ACCEL_AT '$LAB_ACCEL_AT' is not NAME=kvm|tcg words"
        [ "${LAB_TEST:-0}" = "$test_lab" ] ||
            die "the lab in $state $([ "${LAB_TEST:-0}" = 1 ] && echo is || echo 'is not') a test lab: 'make lab-down' before INCLAB_TEST_LAB=$test_lab"
        [ -z "$switches" ] || [ "$switches" = "${LAB_SWITCHES:-vm}" ] ||
            die "the lab in $state runs its switches as ${LAB_SWITCHES:-vm}: 'make lab-down' before SWITCHES=$switches"
        switches=${LAB_SWITCHES:-vm}
    fi
    switches=${switches:-vm}
    if [ "$switches" = netns ]; then
        for tool in ip timeout setsid mount; do command -v $tool >/dev/null || die "SWITCHES=netns needs '$tool'"; done
        ip netns list >/dev/null 2>&1 || die "SWITCHES=netns: 'ip netns' does not work here (root and a kernel with network namespaces needed)"
    fi

    if [ -e "$state/stopped" ] && [ -n "${LAB_ROLES:-}" ]; then
        # A stopped lab's disks are overlays on the images it was made with, and
        # its saved VMs run those kernels: no build (a new image would not be
        # theirs, and building one removes the image it supersedes).
        log "images: the stopped lab's own (no build): $LAB_ROLES"
        roles=$(awk '{for (i = 1; i < NF; i += 2) print $i, $(i + 1)}' <<<"$LAB_ROLES")
        local r
        while read -r _ r; do
            [ -e "$r/disk.qcow2" ] ||
                die "the stopped lab's image $r is gone (removed as superseded?): its disks cannot be restored; 'make lab-down' then 'make lab-up' boots a new lab"
        done <<<"$roles"
    else
        log "images (cached in ${INCLAB_CACHE:-/var/cache/inclab}/images)"
        # In netns mode only hosts boot an image.
        roles=$("$top/images/build.sh" --print ${INCLAB_PAYLOAD:+--payload "$INCLAB_PAYLOAD"} $([ "$switches" = netns ] && echo host)) ||
            die "image build failed"
    fi
    local t_img=$SECONDS   # where the time goes: printed when the lab is ready
    image=$(awk 'NR == 1 {print $2}' <<<"$roles")
    lab_accels "$image/vmlinuz" "$image/initrd.img" "$hyps"
    if [ "$acc" = kvm ]; then log "accelerator: KVM (/dev/kvm)"; else log "accelerator: TCG (no usable /dev/kvm${LOCAL_WHY:+: $LOCAL_WHY}: software emulation, slow)"; fi
    [ -e /dev/kvm ] && kvm_access "$acc"
    # TCG guests are told this machine's TSC rate (their TSC is this machine's): measured
    # once per lab, kept in lab.env so a second lab-up defines the same domains
    if [[ " $acc ${LAB_ACCEL_AT//=/ } " == *" tcg "* ]]; then
        [ -n "$LAB_TSC_KHZ" ] ||
            LAB_TSC_KHZ=$("$INCLAB_BUILD/tsckhz" 2> >(while read -r l; do log "$l"; done)) || LAB_TSC_KHZ=""
        if [ -n "$LAB_TSC_KHZ" ]; then
            log "guests' TSC rate: $LAB_TSC_KHZ kHz, this machine's (their kernels do not measure it)"
        else
            log "warning: this machine's TSC rate is unknown: the guests measure it at boot, and on a loaded machine may get it wrong ('make lab-clocks' shows)"
        fi
        # the other machines' own, for their guests (once per lab, as this machine's)
        [ -z "$hyps" ] || [ -n "$LAB_TSC_AT" ] || LAB_TSC_AT=$(hyp_tsc "$hyps")
        [[ $LAB_TSC_AT =~ ^([a-z][a-z0-9-]*=[0-9]{6,9}( |$))*$ ]] || die "lab.env: LAB_TSC_AT '$LAB_TSC_AT' is not NAME=KHZ words"
    else
        LAB_TSC_KHZ="" LAB_TSC_AT=""
    fi
    ensure_daemons
    if [ -n "$hyps" ]; then
        # the namespace nodes and their hypervisors: they must be on this machine
        local nsnodes=""
        [ "$switches" != netns ] || nsnodes=$("$INCLAB_BUILD/topogen" --json "$TOPOLOGY" |
            jq -r '.nodes[] | select(.role != "host") | [.name, .hypervisor] | @tsv') || die "topogen --json failed on '$TOPOLOGY'"
        hyp_check local "$hyps" "$nsnodes"
    fi
    state_init
    made path disks; made path seeds; made path console; made path gen.new; made path gen; made path lab.env
    mkdir -p "$state"/{disks,seeds,console}
    chmod 755 "$state" "$state_root" 2>/dev/null || true
    # every node's key ($state/keys, 0600, made once per lab): each node gets its own, the controller the table
    made path keys
    "$INCLAB_BUILD/topogen" -o "$gen.new" --prefix "$prefix" --state-dir "$state" --accel "$acc" --keys "$state/keys" \
        --udp-base "$INCLAB_UDP_BASE" --switches "$switches" $([ "$test_lab" = 1 ] && echo --test-lab) \
        ${LAB_TSC_KHZ:+--tsc-khz "$LAB_TSC_KHZ"} $(for x in $LAB_TSC_AT; do printf -- '--tsc-khz-at %s ' "$x"; done) \
        $(for x in $LAB_ACCEL_AT; do printf -- '--accel-at %s ' "$x"; done) \
        $(awk '{printf "--image %s=%s ", $1, $2}' <<<"$roles") "$TOPOLOGY" ||
        die "topogen failed"
    rm -rf "$gen"; mv "$gen.new" "$gen"
    check_memory
    # lab.env is sourced by the verbs: every value quoted by bash's printf %q
    # (the same text for the words and paths topogen accepted above), the
    # roles' list a word list of the same grammar in double quotes, which
    # experiments/lib.sh (exp_lab_env) reads as text
    local role_words; role_words=$(tr '\n' ' ' <<<"$roles")
    [[ $role_words =~ ^[A-Za-z0-9._/+\ -]*$ ]] || die "images/build.sh printed roles that are not words and paths: '$role_words'"
    { printf 'LAB_TOPOLOGY=%q\nLAB_HASH=%q\nLAB_ACCEL=%q\n' "$TOPOLOGY" "$topo_hash" "$acc"
      printf 'LAB_ROLES="%s"\nLAB_TEST=%q\nLAB_SWITCHES=%q\nLAB_TSC_KHZ=%q\n' "$role_words" "$test_lab" "$switches" "$LAB_TSC_KHZ"
      printf 'LAB_TSC_AT="%s"\nLAB_ACCEL_AT="%s"\n' "$LAB_TSC_AT" "$LAB_ACCEL_AT"
    } > "$state/lab.env"

    # libvirt names of this lab that something else holds: refused, never taken
    nvsh "$prefix-mgmt" net-info "$prefix-mgmt" >/dev/null 2>&1 && ! is_made network "$prefix-mgmt" &&
        die "libvirt network '$prefix-mgmt' exists and is not this lab's: remove it or choose another INCLAB_PREFIX"
    link_exists "$(mgmt_bridge)" && ! is_made link "$(mgmt_bridge)" &&
        die "network device '$(mgmt_bridge)' exists and is not this lab's: remove it or choose another INCLAB_PREFIX"
    local n
    for n in $(nodes); do
        [ "$(node_kind "$n")" = vm ] || continue
        dvsh "$n" dominfo "$prefix-$n" >/dev/null 2>&1 && ! is_made domain "$prefix-$n" &&
            die "libvirt domain '$prefix-$n' exists and is not this lab's: remove it or choose another INCLAB_PREFIX"
    done
    made network "$prefix-mgmt"
    made link "$(mgmt_bridge)"   # the network's bridge: libvirt makes it, lab-down removes one that outlives it
    if ! nvsh "$prefix-mgmt" net-info "$prefix-mgmt" >/dev/null 2>&1; then
        nvsh "$prefix-mgmt" net-define "$gen/network-mgmt.xml" >/dev/null
    fi
    # (no `| grep -q` under pipefail: grep's early exit would fail the pipeline)
    local netinfo; netinfo=$(nvsh "$prefix-mgmt" net-info "$prefix-mgmt" 2>/dev/null || true)
    if ! grep -q '^Active:.*yes' <<<"$netinfo"; then
        nvsh "$prefix-mgmt" net-start "$prefix-mgmt" >/dev/null
        log "management network $prefix-mgmt started (bridge without host address)"
    fi
    # No IPv6 on the host side of the bridge either: the machine stays silent on the lab.
    sysctl -q -w "net.ipv6.conf.$(mgmt_bridge).disable_ipv6=1" 2>/dev/null || true
    # with hypervisors: every other one's management network, through its connection
    [ ! -e "$gen/hypervisors.tsv" ] || hyp_networks
    # with hypervisors: the pool of every other one and the images its VMs need, shipped
    [ ! -e "$gen/hypervisors.tsv" ] || hyp_pools

    tune_host
    # with hypervisors the tunnels between them (hyp_tunnels) come before the VMs, whose
    # taps join their bridges; in netns mode inside ns_up, before the nodes' net.sh use them
    if [ "$switches" = netns ]; then ns_up; elif [ -e "$gen/tunnels.tsv" ]; then hyp_tunnels; fi
    local t role image pool started=0 restore=""
    for n in $(nodes); do
        [ "$(node_kind "$n")" = vm ] || continue
        [ "$(dom_state "$n")" = running ] && continue
        # paused (a lab-stop that failed half-way): it runs on from there
        if [ "$(dom_state "$n")" = paused ]; then dvsh "$n" resume "$prefix-$n" >/dev/null || die "cannot resume $n"; continue; fi
        role=$(awk -v n="$n" '$1 == n {print $2}' "$gen/inventory.tsv")
        image=$(awk -v r="$role" '$1 == r {print $2}' <<<"$roles")
        # A domain of this lab whose disk or seed is gone (a lab-up killed
        # between the two) is defined anew. On a hypervisor but the first they
        # are volumes of its pool (node_pool), made through its connection.
        pool=$(node_pool "$n")
        if [ -n "$pool" ]; then
            dvsh "$n" vol-info --pool "$pool" "$prefix-$n.iso" >/dev/null 2>&1 &&
                dvsh "$n" vol-info --pool "$pool" "$prefix-$n.qcow2" >/dev/null 2>&1 ||
                dvsh "$n" undefine "$prefix-$n" >/dev/null 2>&1 || true
        elif ! [ -e "$state/seeds/$n.iso" ] || ! [ -e "$state/disks/$n.qcow2" ]; then
            dvsh "$n" undefine "$prefix-$n" >/dev/null 2>&1 || true
        fi
        if ! dvsh "$n" dominfo "$prefix-$n" >/dev/null 2>&1; then
            # (the UDP ports of a VM on another machine are that machine's: tunnels.sh checks those of its tunnels)
            hyp_elsewhere "$(awk -F'\t' -v n="$n" '$1 == n {print $12}' "$gen/inventory.tsv")" || check_ports "$n"
            if [ -n "$pool" ]; then
                vm_pool_files "$n" "$pool" "$image"
            else
                rm -f "$state/disks/$n.qcow2"
                qemu-img create -q -f qcow2 -F qcow2 -b "$image/disk.qcow2" "$state/disks/$n.qcow2"
                # the seed holds the node's key: its owner alone reads it (libvirt gives it to QEMU's user)
                (umask 077; cloud-localds -N "$gen/seeds/$n/network-config" "$state/seeds/$n.iso" \
                    "$gen/seeds/$n/user-data" "$gen/seeds/$n/meta-data")
            fi
            made domain "$prefix-$n"
            dvsh "$n" define "$gen/domains/$n.xml" >/dev/null
        fi
        # its taps on the lab's bridges (netns mode): libvirt makes them, lab-down
        # removes any that outlive their VM
        # (on a hypervisor reached over ssh, that machine's: tunnel H.TAP, removed there)
        [ "$switches" = vm ] || while read -r t h; do
            if [ -n "$h" ] && hyp_by_ssh "$h"; then made tunnel "$h.$t"; else made link "$t"; fi
        done < <(awk -F'\t' -v n="$n" '$1 == "bridge" && $5 == n {print $10, $11}' "$gen/wires.tsv")
        # saved by lab-stop: restored below, all at once
        if has_msave "$n"; then restore+=" $n"; continue; fi
        dvsh "$n" start "$prefix-$n" >/dev/null || die "cannot start $n (console log: $state/console/$n.log)"
        started=$((started + 1))
    done
    # shellcheck disable=SC2086
    [ -z "$restore" ] || restore_vms $restore
    # The VMs' taps on the lab's bridges (netns mode): no IPv6 on them either.
    [ "$switches" = netns ] && while read -r n h; do
        if [ -n "$h" ] && hyp_by_ssh "$h"; then hyp_sh "$h" "sysctl -q -w net.ipv6.conf.$(shq "$n").disable_ipv6=1 >/dev/null 2>&1; true" </dev/null || true
        else nsw_quiet "$n"; fi
    done < <(awk -F'\t' '$1 == "bridge" {print $10, $11}' "$gen/wires.tsv")
    [ ! -e "$gen/tunnels.tsv" ] || for n in $(awk -F'\t' '!/^#/ && $2 == "vm" {print $16}' "$gen/tunnels.tsv"); do nsw_quiet "$n"; done
    local t_vms=$SECONDS
    if [ $started -eq 0 ] && [ -z "$restore" ]; then log "every VM already running"
    else log "started $started VM(s)${restore:+, restored$restore from saved state}"; fi
    wait_ready || { cmd_status; die "lab not ready; inspect with 'make lab-console NODE=...' or $state/console/, then 'make lab-down'"; }
    local t_ready=$SECONDS
    clock_mark
    rm -f "$state/stopped"
    log "time by step: images $((t_img - t0)) s, networks, definitions and VM starts${restore:+ and restores} $((t_vms - t_img)) s, until every node was ready $((t_ready - t_vms)) s, clock marks $((SECONDS - t_ready)) s"
    if [ -n "$restore" ]; then log "lab '$TOPOLOGY' restored from saved state and ready in $((SECONDS - t0)) s"
    else log "lab '$TOPOLOGY' ready in $((SECONDS - t0)) s"; fi
    cmd_status
}

# ---- labs over several hypervisors (README: "Labs over several hypervisors") ----

# hyp_check remote|local LINES [NSNODES] — (lab-up) the hypervisors of LINES
# ("NAME<TAB>URI", the first the lab's own). remote (before images are
# built): each whose connection names a host answers through it within
# HYP_TIMEOUT s (30) and runs x86_64 QEMU guests; each but the first whose URI
# is qemu+ssh:// also answers ssh as the URI says (hyp_ssh_argv), as root (its
# tunnel ends are network devices), with the tools tunnels.sh and the image
# shipping use. local (once libvirtd runs): each local one answers too; the
# first is this machine (its libvirt's host UUID is the local connection's:
# lab.sh, the lab's management network, disks and namespace nodes are here);
# another that is another machine must be reached by qemu+ssh:// (its tunnel
# ends and namespace nodes, NSNODES: lines "NODE<TAB>HYPERVISOR" of the
# namespace nodes, are made there over ssh). Sets HYP_ELSEWHERE to the
# names of those on other machines. A precise error before anything of the
# lab is made.
HYP_TOOLS="ip bridge ss sysctl sha256sum base64 mktemp bash stat mv cat tar setsid timeout mount awk"
# hyp_tools — set HYP_TOOLS_ASKED to the tools a machine reached over ssh must
# have: HYP_TOOLS, and with INCLAB_TEST_HYP_TOOL (a test lab only) one more,
# one that no machine has, so that lab-hypervisors.sh sees the refusal over a
# real ssh connection. It is written into the remote command: a plain command
# name or a precise error (called directly, not in $(...), so that die ends lab.sh).
hyp_tools() {
    local extra=${INCLAB_TEST_HYP_TOOL:-}
    HYP_TOOLS_ASKED=$HYP_TOOLS
    [ -n "$extra" ] || return 0
    [ "${INCLAB_TEST_LAB:-0}" = 1 ] || die "INCLAB_TEST_HYP_TOOL is for test labs only (INCLAB_TEST_LAB=1)"
    [[ $extra =~ ^[a-z][a-z0-9_-]{0,31}$ ]] || die "INCLAB_TEST_HYP_TOOL must be a command name of a-z 0-9 _ - (at most 32), not '$extra'"
    HYP_TOOLS_ASKED="$HYP_TOOLS $extra"
}
hyp_check() {
    local which=$1 name uri caps uuid here_uuid="" remote first=1 out ns errf err
    HYP_ELSEWHERE=""
    [ "$which" = remote ] || here_uuid=$(vsh capabilities 2>/dev/null | sed -n 's:^ *<uuid>\(.*\)</uuid>.*:\1:p' | head -n 1)
    while IFS=$'\t' read -r name uri; do
        case $uri in *:///*) remote=0 ;; *) remote=1 ;; esac
        if [ "$which" = local ] || [ $remote = 1 ]; then
            caps=$(timeout "${HYP_TIMEOUT:-30}" virsh -q -c "$uri" capabilities 2>&1 </dev/null) ||
                die "hypervisor $name: its connection $uri does not answer: $(tail -n 3 <<<"$caps" | tr '\n' ' ')"
        fi
        if [ "$which" = remote ]; then
            if [ $remote = 1 ]; then
                grep -q "<arch name='x86_64'>" <<<"$caps" && grep -q "<domain type='qemu'" <<<"$caps" ||
                    die "hypervisor $name ($uri) runs no x86_64 QEMU guests (qemu-system-x86 and libvirt-daemon-system installed there?)"
            fi
            if [ $first = 0 ] && [[ $uri == qemu+ssh://* ]]; then
                hyp_ssh_argv "$uri" || die "hypervisor $name: $HYP_SSH_WHY"
                # what the machine printed (stdout) apart from what ssh said (stderr: warnings)
                hyp_tools
                errf=$(mktemp) || die "mktemp failed"
                out=$(timeout "${HYP_TIMEOUT:-30}" "${HYP_SSH[@]}" "id -u; for t in $HYP_TOOLS_ASKED; do command -v \"\$t\" >/dev/null || echo \"missing \$t\"; done" </dev/null 2>"$errf") ||
                    { err=$(tail -n 2 "$errf" | tr '\n' ' '); rm -f "$errf"; die "hypervisor $name: ssh to its machine ($HYP_SSH_DEST, as its URI says) fails: $err$(tail -n 2 <<<"$out" | tr '\n' ' ')"; }
                rm -f "$errf"
                [ "$(head -n 1 <<<"$out")" = 0 ] ||
                    die "hypervisor $name: ssh reaches its machine ($HYP_SSH_DEST) as uid '$(head -n 1 <<<"$out" | head -c 20)', not root: its tunnel ends are network devices (the URI's user must be root)"
                ! grep -q '^missing ' <<<"$out" ||
                    die "hypervisor $name ($HYP_SSH_DEST) lacks $(sed -n 's/^missing //p' <<<"$out" | tr '\n' ' ')(iproute2, coreutils and bash must be installed there)"
                log "hypervisor $name: ssh answers as root ($HYP_SSH_DEST)"
            fi
            first=0
            continue
        fi
        if [ $remote = 0 ]; then
            grep -q "<arch name='x86_64'>" <<<"$caps" && grep -q "<domain type='qemu'" <<<"$caps" ||
                die "hypervisor $name ($uri) runs no x86_64 QEMU guests (qemu-system-x86 and libvirt-daemon-system installed there?)"
        fi
        uuid=$(sed -n 's:^ *<uuid>\(.*\)</uuid>.*:\1:p' <<<"$caps" | head -n 1)
        if [ -n "$uuid" ] && [ "$uuid" = "$here_uuid" ]; then
            log "hypervisor $name: $uri answers (this machine)"
        elif [ $first = 1 ]; then
            die "the first hypervisor, $name ($uri), is another machine (host ${uuid:-unknown}, this one ${here_uuid:-unknown}): lab-up runs on the first hypervisor's machine (its management network, disks and namespace nodes are there); declare this machine first (README: \"Labs over several hypervisors\")"
        elif [[ $uri != qemu+ssh://* ]]; then
            ns=$(awk -F'\t' -v h="$name" '$2 == h {print $1}' <<<"${3:-}" | tr '\n' ' ')
            die "hypervisor $name ($uri) is another machine (host ${uuid:-unknown}): its tunnel ends (lab/tunnels.sh)${ns:+ and its namespace nodes (${ns% }: lab/nsnode.sh)} are made there over ssh, which only a qemu+ssh:// URI names; this transport cannot carry them (README: \"Labs over several hypervisors\")"
        else
            HYP_ELSEWHERE+=" $name"
            log "hypervisor $name: $uri answers (another machine, host $uuid: images shipped into its pool, tunnel ends made over ssh)"
        fi
        first=0
    done <<<"$2"
}

# hyp_tsc LINES — (lab-up, TCG) "NAME=KHZ ..." for each hypervisor of LINES
# ("NAME<TAB>URI", the first this machine's) but the first that is reached by
# qemu+ssh://: its machine's TSC rate, measured there by this build's tsckhz
# (sent over ssh into a temporary directory there, run, removed; up to 3
# tries). Its TCG
# guests read that machine's TSC: told this machine's rate instead, their
# clocks would run off by the ratio of the two. One that cannot be measured
# is left out (its guests get this machine's rate), with a warning.
hyp_tsc() {
    local name uri first=1 khz out=""
    while IFS=$'\t' read -r name uri; do
        if [ $first = 1 ]; then first=0; continue; fi
        [[ $uri == qemu+ssh://* ]] || continue
        hyp_ssh_argv "$uri" || continue
        # (3 tries: tsckhz refuses a rate its two measurements disagree on, on a busy machine)
        for _ in 1 2 3; do
            # shellcheck disable=SC2016 # expanded there
            khz=$(timeout 60 "${HYP_SSH[@]}" 'set -e; d=$(mktemp -d); trap "rm -rf \"$d\"" EXIT; cat > "$d/tsckhz"; chmod 700 "$d/tsckhz"; "$d/tsckhz"' \
                < "$INCLAB_BUILD/tsckhz" 2>/dev/null) || khz=""
            [[ ! $khz =~ ^[0-9]{6,9}$ ]] || break
        done
        if [[ $khz =~ ^[0-9]{6,9}$ ]]; then
            log "hypervisor $name: its machine's TSC rate $khz kHz (tsckhz over ssh), for its TCG guests"
            out+="$name=$khz "
        else
            log "warning: hypervisor $name: its machine's TSC rate could not be measured (tsckhz over ssh): its TCG guests are told this machine's; 'make lab-clocks' shows whether their clocks run right"
        fi
    done <<<"$1"
    echo "${out% }"
}

# hyp_ssh_argv URI — set HYP_SSH to the ssh command line (without the remote
# command) that reaches the machine of qemu+ssh:// URI as libvirt's ssh
# transport does: the URI's user, host and port, its keyfile= (ssh -i),
# known_hosts= (UserKnownHostsFile) and no_verify=1 (StrictHostKeyChecking=no);
# never a password prompt (BatchMode), at most HYP_TIMEOUT s (30) to connect.
# HYP_SSH_DEST is "USER@HOST port PORT" for messages. Fails, with HYP_SSH_WHY,
# for another URI or a part outside the grammar (a keyfile or known_hosts
# with a %-escape: write the path plainly).
hyp_ssh_argv() {
    local uri=$1 rest auth query="" user="" host port="" kv k v
    HYP_SSH=() HYP_SSH_DEST="" HYP_SSH_WHY=""
    case $uri in qemu+ssh://*) ;; *) HYP_SSH_WHY="'$uri' is not a qemu+ssh:// URI"; return 1 ;; esac
    rest=${uri#qemu+ssh://}
    auth=${rest%%/*}
    case $rest in *\?*) query=${rest#*\?} ;; esac
    host=$auth
    case $auth in *@*) user=${auth%%@*} host=${auth#*@} ;; esac
    case $host in *:*) port=${host##*:} host=${host%:*} ;; esac
    [[ $host =~ ^[A-Za-z0-9][A-Za-z0-9.-]{0,252}$ ]] || { HYP_SSH_WHY="the host of '$uri' is not a name or an IPv4 address"; return 1; }
    [ -z "$user" ] || [[ $user =~ ^[A-Za-z0-9_][A-Za-z0-9._-]{0,31}$ ]] || { HYP_SSH_WHY="the user of '$uri' is not a user name"; return 1; }
    [ -z "$port" ] || { [[ $port =~ ^[0-9]{1,5}$ ]] && [ "$port" -ge 1 ] && [ "$port" -le 65535 ]; } || { HYP_SSH_WHY="the port of '$uri' is not a port"; return 1; }
    HYP_SSH=(ssh -T -o BatchMode=yes -o ConnectTimeout="${HYP_TIMEOUT:-30}")
    [ -z "$user" ] || HYP_SSH+=(-l "$user")
    [ -z "$port" ] || HYP_SSH+=(-p "$port")
    local IFS='&'
    for kv in $query; do
        k=${kv%%=*} v=${kv#*=}
        case $k in
        keyfile | known_hosts)
            [[ $v =~ ^/[A-Za-z0-9._/+-]{1,200}$ ]] ||
                { HYP_SSH_WHY="the $k of '$uri' is not an absolute path of A-Z a-z 0-9 . _ / + - (a %-escape is not taken: write it plainly)"; return 1; }
            if [ "$k" = keyfile ]; then HYP_SSH+=(-i "$v"); else HYP_SSH+=(-o "UserKnownHostsFile=$v"); fi ;;
        # no_verify=1: no host key check, as libvirt's ssh transport does; and none remembered
        # either, so a machine whose key changed (a test's sshd makes a new one each run) is not
        # met with ssh's warning banner, nor is the user's known_hosts written
        no_verify) [ "$v" != 1 ] || HYP_SSH+=(-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR) ;;
        esac   # (libvirt's others, e.g. no_tty, command, socket: not ssh's concern here)
    done
    HYP_SSH+=(-- "$host")
    HYP_SSH_DEST="${user:+$user@}$host${port:+ port $port}"
}

# hyp_elsewhere HYPERVISOR — (lab-up, after hyp_check local) is it another machine?
hyp_elsewhere() { [ -n "$1" ] && [[ " ${HYP_ELSEWHERE:-} " == *" $1 "* ]]; }
# hyp_first — the first hypervisor's name (hypervisors.tsv)
hyp_first() { awk -F'\t' '!/^#/ {print $1; exit}' "$gen/hypervisors.tsv" 2>/dev/null; }
# hyp_col HYPERVISOR COLUMN — that column of its line in hypervisors.tsv (8: images, 9: pool)
hyp_col() { awk -F'\t' -v h="$1" -v c="$2" '!/^#/ && $1 == h {print $c; exit}' "$gen/hypervisors.tsv" 2>/dev/null; }
# hyp_by_ssh HYPERVISOR — is it reached over ssh (not the first, a qemu+ssh:// URI)? Then its
# tunnel ends and files are made there over ssh, also when its machine is this one (the lab test's)
hyp_by_ssh() { [ "$1" != "$(hyp_first)" ] && [[ $(hyp_uri "$1") == qemu+ssh://* ]]; }
# hyp_sh HYPERVISOR SCRIPT — run SCRIPT (sh) on HYPERVISOR's machine: over ssh when
# hyp_by_ssh, else here (every other hypervisor is this machine: hyp_check). Standard
# input passed through; its exit code (255: ssh failed).
hyp_sh() {
    if hyp_by_ssh "$1"; then
        hyp_ssh_argv "$(hyp_uri "$1")" || { echo "lab: hypervisor $1: $HYP_SSH_WHY" >&2; return 125; }
        "${HYP_SSH[@]}" "$2"
    else
        sh -c "$2"
    fi
}
# hyp_dir_ok DIR — a pool directory of topogen's grammar (topo_dir_ok), checked again before use
hyp_dir_ok() { [[ $1 =~ ^(/[A-Za-z0-9_+][A-Za-z0-9._+-]*)+$ && $1 != *--* && $1 != */./* && $1 != */../* && $1 != */. && $1 != */.. && ${#1} -le 120 ]]; }

# hyp_networks — (lab-up) the management network of every hypervisor but the
# first (whose is the lab's usual one), defined and started through its
# connection; one of those names that is not this lab's is refused.
hyp_networks() {
    local h uri net br info
    while IFS=$'\t' read -r h uri _ net br _; do
        [ "$net" = "$prefix-mgmt" ] && continue
        virsh -q -c "$uri" net-info "$net" >/dev/null 2>&1 && ! is_made network "$net" &&
            die "libvirt network '$net' on hypervisor $h exists and is not this lab's: remove it or choose another INCLAB_PREFIX"
        link_exists "$br" && ! is_made link "$br" &&
            die "network device '$br' exists and is not this lab's: remove it or choose another INCLAB_PREFIX"
        made network "$net"
        made link "$br"
        virsh -q -c "$uri" net-info "$net" >/dev/null 2>&1 || virsh -q -c "$uri" net-define "$gen/hv/$h/network-mgmt.xml" >/dev/null ||
            die "hypervisor $h: cannot define network $net"
        info=$(virsh -q -c "$uri" net-info "$net" 2>/dev/null || true)
        if ! grep -q '^Active:.*yes' <<<"$info"; then
            virsh -q -c "$uri" net-start "$net" >/dev/null || die "hypervisor $h: cannot start network $net"
            log "management network $net started on hypervisor $h"
        fi
        sysctl -q -w "net.ipv6.conf.$br.disable_ipv6=1" 2>/dev/null || true
    done < <(grep -v '^#' "$gen/hypervisors.tsv")
}

# hyp_tunnels — (lab-up) every hypervisor's ends of the tunnels between them
# (tunnels.tsv), made by lab/tunnels.sh: here for the first hypervisor (and
# one of this machine with another transport), on its machine over ssh for
# one reached by qemu+ssh:// (tun_remote). Each device is recorded in made as
# tunnels.sh names it, before it makes it: "link NAME" here, "tunnel
# HYPERVISOR.NAME" over ssh. A device of those names that exists and is not
# this lab's is refused first (there: tunnels.sh exists).
hyp_tunnels() {
    local name h out
    for h in $(awk -F'\t' '!/^#/ {print $1}' "$gen/hypervisors.tsv"); do
        if hyp_by_ssh "$h"; then
            out=$(tun_remote "$h" exists) || die "hypervisor $h: cannot ask for its tunnel devices over ssh (see above)"
            for name in $(awk '$1 == "exists" {print $2}' <<<"$out"); do
                is_made tunnel "$h.$name" ||
                    die "network device '$name' exists on hypervisor $h and is not this lab's: remove it or choose another INCLAB_PREFIX"
            done
            continue
        fi
        for name in $(awk -F'\t' -v h="$h" '!/^#/ && $1 == h && $2 != "udp" { print $13; if ($2 != "mgmt") print $14; if ($15 != "-") print $15 }' "$gen/tunnels.tsv"); do
            link_exists "$name" && ! is_made link "$name" &&
                die "network device '$name' exists and is not this lab's: remove it or choose another INCLAB_PREFIX"
        done
    done
    for h in $(awk -F'\t' '!/^#/ {print $1}' "$gen/hypervisors.tsv"); do
        if hyp_by_ssh "$h"; then
            out=$({ tun_remote "$h" up || echo "exit $?"; } |
                while read -r k v; do if [ "$k" = link ]; then made tunnel "$h.$v"; else echo "$k $v"; fi; done)
        else
            out=$({ "$here/tunnels.sh" up "$gen/tunnels.tsv" "$h" "$prefix" || echo "exit $?"; } |
                while read -r k v; do if [ "$k" = link ]; then made link "$v"; else echo "$k $v"; fi; done)
        fi
        [ -z "$out" ] || die "hypervisor $h: its tunnels could not be made (tunnels.sh: $out)"
    done
    # the VMs' taps on those bridges: libvirt makes them, lab-down removes any that outlive their VM
    for name in $(awk -F'\t' '!/^#/ && $2 == "vm" {print $16}' "$gen/tunnels.tsv"); do made link "$name"; done
    log "tunnels between hypervisors: $(awk -F'\t' '!/^#/ && $2 != "udp"' "$gen/tunnels.tsv" | wc -l) VXLAN end(s), $(awk -F'\t' '!/^#/ && $2 == "udp"' "$gen/tunnels.tsv" | wc -l) QEMU UDP end(s)"
}

# tun_remote HYPERVISOR VERB — lab/tunnels.sh VERB (up, exists) for HYPERVISOR's
# lines of tunnels.tsv, run on its machine over ssh (hyp_sh): the script goes
# on standard input into a temporary directory there, the lines (names,
# numbers and addresses topogen wrote, which tunnels.sh checks again there) as
# base64 in the command, every other word quoted; the directory is removed
# when it ends. Prints tunnels.sh's output; its exit code.
tun_remote() {
    local h=$1 verb=$2 b64 args
    b64=$(awk -F'\t' -v h="$h" '/^#/ || $1 == h' "$gen/tunnels.tsv" | base64 -w 0)
    [[ $b64 =~ ^[A-Za-z0-9+/=]*$ ]] || die "base64 printed what is not base64"
    args="$(shq "$verb") \"\$d/tunnels.tsv\" $(shq "$h")"
    [ "$verb" != up ] || args+=" $(shq "$prefix")"
    hyp_ssh_argv "$(hyp_uri "$h")" || die "hypervisor $h: $HYP_SSH_WHY"
    log "hypervisor $h: tunnels.sh $verb over ssh ($HYP_SSH_DEST)"
    hyp_sh "$h" "set -e; d=\$(mktemp -d); trap 'rm -rf \"\$d\"' EXIT; cat > \"\$d/tunnels.sh\"; echo $b64 | base64 -d > \"\$d/tunnels.tsv\"; bash \"\$d/tunnels.sh\" $args < /dev/null" < "$here/tunnels.sh"
}

# ---- images, disks and seeds on hypervisors other than the first ----------------
#
# Each hypervisor but the first keeps what its VMs read in a libvirt storage
# pool of the lab's (hypervisors.tsv: pool PREFIX-images, type dir, over the
# directory its "images:" names): the base images they need, shipped by
# hyp_ship, and each VM's overlay, seed and console log (vm_pool_files), all
# made through its libvirt connection. ssh only where libvirt cannot: the
# sha256 of what arrived (read where it landed, not sent back), the rename of
# a verified upload to its final name and the record of its hash.

# pool_up HYPERVISOR URI POOL DIR — (lab-up) the lab's pool POOL over DIR on
# HYPERVISOR, defined (recorded first), built (the directory made when
# missing), started and refreshed. A pool of that name that is not this lab's,
# or this lab's over another directory, is refused.
pool_up() {
    local h=$1 uri=$2 pool=$3 dir=$4 out path
    if virsh -q -c "$uri" pool-info "$pool" >/dev/null 2>&1; then
        is_made pool "$h.$pool" ||
            die "libvirt storage pool '$pool' on hypervisor $h exists and is not this lab's: remove it or choose another INCLAB_PREFIX"
        path=$(virsh -q -c "$uri" pool-dumpxml "$pool" 2>/dev/null | sed -n 's:^ *<path>\(.*\)</path>.*:\1:p' | head -n 1)
        [ "$path" = "$dir" ] || die "hypervisor $h: the lab's pool $pool is over '$path', not $dir (the topology's images): 'make lab-down' first"
    else
        made pool "$h.$pool"
        out=$(virsh -q -c "$uri" pool-define-as "$pool" dir --target "$dir" 2>&1) ||
            die "hypervisor $h: cannot define storage pool $pool over $dir (another pool over that directory? one pool per directory): $(tail -n 1 <<<"$out")"
    fi
    out=$(virsh -q -c "$uri" pool-info "$pool" 2>/dev/null || true)   # (no `| grep -q` under pipefail)
    if ! grep -q '^State:.*running' <<<"$out"; then
        out=$(virsh -q -c "$uri" pool-build "$pool" 2>&1 && virsh -q -c "$uri" pool-start "$pool" 2>&1) ||
            die "hypervisor $h: cannot build and start storage pool $pool over $dir: $(tail -n 1 <<<"$out")"
        log "hypervisor $h: storage pool $pool over $dir started"
    fi
    virsh -q -c "$uri" pool-refresh "$pool" >/dev/null 2>&1 || die "hypervisor $h: cannot refresh storage pool $pool"
}

# local_sha FILE — FILE's sha256 (once per lab-up: LOCAL_SHA keeps it), its time logged
declare -A LOCAL_SHA=()
local_sha() {
    local t0=$SECONDS
    if [ -z "${LOCAL_SHA[$1]:-}" ]; then
        LOCAL_SHA[$1]=$(sha256sum < "$1" | cut -d' ' -f1) && [[ ${LOCAL_SHA[$1]} =~ ^[0-9a-f]{64}$ ]] || die "cannot hash $1"
        [ $((SECONDS - t0)) -lt 2 ] || log "  sha256 of $1: $((SECONDS - t0)) s"
    fi
}

# hyp_ship HYPERVISOR URI POOL DIR SRC VOL — (lab-up) this machine's file SRC as
# volume VOL of POOL (over DIR) on HYPERVISOR, verified by hash. Kept when it is
# there already with a record (VOL.sha256, "SHA256 SIZE", written only after a
# verified upload) of SRC's hash and size, and that size: a cheap check, not a
# second read of hundreds of MiB (what changes an image changes its name). Else
# uploaded into a temporary volume PREFIX-VOL.part (recorded: lab-down removes
# one a killed lab-up left), its sha256 computed where it landed and compared
# with SRC's: a mismatch removes it and stops lab-up; a match renames it to VOL
# and writes the record. Progress and time are logged. SHIPPED_BYTES counts.
SHIPPED_BYTES=0
hyp_ship() {
    local h=$1 uri=$2 pool=$3 dir=$4 src=$5 vol=$6 tmpv size sha rec got t0 ms out
    tmpv=$prefix-$vol.part
    [[ $vol =~ $NAME_RE && $tmpv =~ $NAME_RE ]] || die "hypervisor $h: '$vol' is not a volume name"
    size=$(stat -c %s -- "$src") || die "cannot read $src"
    local_sha "$src"; sha=${LOCAL_SHA[$src]}
    rec=$(hyp_sh "$h" "cat -- $(shq "$dir/$vol.sha256") 2>/dev/null; stat -c %s -- $(shq "$dir/$vol") 2>/dev/null; true" </dev/null) ||
        die "hypervisor $h: cannot read what its pool directory $dir holds of $vol"
    if [ "$rec" = "$sha $size"$'\n'"$size" ] && virsh -q -c "$uri" vol-info --pool "$pool" "$vol" >/dev/null 2>&1; then
        log "hypervisor $h: $vol kept: shipped and verified before (its record: sha256 $sha, $size bytes, this machine's $src's)"
        return 0
    fi
    made volume "$h.$tmpv"
    virsh -q -c "$uri" vol-delete --pool "$pool" "$tmpv" >/dev/null 2>&1 || true   # a killed lab-up's (recorded)
    out=$(virsh -q -c "$uri" vol-create-as "$pool" "$tmpv" "$size" --format raw 2>&1) ||
        die "hypervisor $h: cannot make volume $tmpv ($size bytes) in pool $pool: $(tail -n 1 <<<"$out")"
    log "hypervisor $h: shipping $src ($((size / 1048576)) MiB) into pool $pool as $vol"
    t0=$(date +%s%N)
    out=$(virsh -q -c "$uri" vol-upload --pool "$pool" "$tmpv" "$src" 2>&1) ||
        { virsh -q -c "$uri" vol-delete --pool "$pool" "$tmpv" >/dev/null 2>&1
          die "hypervisor $h: the upload of $src into $tmpv failed (the partial volume removed): $(tail -n 1 <<<"$out")"; }
    ms=$((($(date +%s%N) - t0) / 1000000))
    got=$(hyp_sh "$h" "sha256sum < $(shq "$dir/$tmpv")" </dev/null | cut -d' ' -f1) || got=""
    if [ "$got" != "$sha" ]; then
        virsh -q -c "$uri" vol-delete --pool "$pool" "$tmpv" >/dev/null 2>&1 || log "could not remove the partial volume $tmpv on hypervisor $h"
        die "hypervisor $h: $vol arrived with sha256 ${got:-unknown}, not $sha (this machine's $src, $size bytes): the partial volume $tmpv is removed, nothing kept"
    fi
    hyp_sh "$h" "mv -f -- $(shq "$dir/$tmpv") $(shq "$dir/$vol") && printf '%s %s\n' $sha $size > $(shq "$dir/$vol.sha256")" </dev/null ||
        die "hypervisor $h: cannot rename $tmpv to $vol in $dir"
    virsh -q -c "$uri" pool-refresh "$pool" >/dev/null 2>&1 || die "hypervisor $h: cannot refresh storage pool $pool"
    SHIPPED_BYTES=$((SHIPPED_BYTES + size))
    log "hypervisor $h: $vol shipped and verified: $size bytes in $((ms / 1000)).$(printf %03d $((ms % 1000))) s ($((size * 1000 / (ms + 1) / 1048576)) MiB/s), sha256 $sha there as here"
}

# hyp_pools — (lab-up) on every hypervisor but the first that runs VMs: its
# pool (pool_up) and the images of its VMs' roles (roles: cmd_up's "ROLE DIR"
# lines), each file shipped (hyp_ship) as IMAGE.qcow2, IMAGE.vmlinuz,
# IMAGE.initrd.img (IMAGE: the image directory's name, ROLE-HASH).
hyp_pools() {
    local h uri dir pool vms role image b n t0=$SECONDS
    while IFS=$'\t' read -r h uri _ _ _ _ _ dir pool; do
        [ -n "$pool" ] && [ "$pool" != - ] || continue
        vms=$(awk -F'\t' -v h="$h" '!/^#/ && $12 == h && $11 != "netns" {print $1}' "$gen/inventory.tsv")
        [ -n "$vms" ] || continue
        [ "$pool" = "$prefix-images" ] && hyp_dir_ok "$dir" || die "hypervisors.tsv: pool '$pool' over '$dir' is not the lab's grammar"
        # this machine's: never in the image cache or a lab's state
        hyp_elsewhere "$h" || case $dir/ in "${INCLAB_CACHE:-/var/cache/inclab}"/* | "$state_root"/*)
            die "hypervisor $h is this machine: its images directory $dir must be outside the image cache ${INCLAB_CACHE:-/var/cache/inclab} and the labs' state $state_root" ;; esac
        pool_up "$h" "$uri" "$pool" "$dir"
        for role in $(for n in $vms; do node_role "$n"; done | sort -u); do
            image=$(awk -v r="$role" '$1 == r {print $2}' <<<"$roles")
            b=${image##*/}
            [ -n "$image" ] && [[ $b =~ $NAME_RE ]] || die "no image of role $role for hypervisor $h"
            hyp_ship "$h" "$uri" "$pool" "$dir" "$image/disk.qcow2" "$b.qcow2"
            hyp_ship "$h" "$uri" "$pool" "$dir" "$image/vmlinuz" "$b.vmlinuz"
            hyp_ship "$h" "$uri" "$pool" "$dir" "$image/initrd.img" "$b.initrd.img"
        done
    done < <(grep -v '^#' "$gen/hypervisors.tsv")
    [ "$SHIPPED_BYTES" = 0 ] || log "images shipped: $SHIPPED_BYTES bytes in $((SECONDS - t0)) s"
}

# node_pool NODE — the pool of NODE's hypervisor when its files are in one (a
# hypervisor but the first), else nothing
node_pool() {
    local h p
    h=$(awk -F'\t' -v n="$1" '!/^#/ && $1 == n {print $12}' "$gen/inventory.tsv" 2>/dev/null)
    [ -n "$h" ] || return 0
    p=$(hyp_col "$h" 9)
    [ "$p" = - ] || echo "$p"
}

# vm_pool_files NODE POOL IMAGE — (lab-up) NODE's overlay PREFIX-NODE.qcow2 on
# its role's shipped IMAGE.qcow2 and its seed PREFIX-NODE.iso (made here,
# uploaded), in POOL through its hypervisor's connection; the console log
# PREFIX-NODE.log that virtlogd writes there recorded too. Each recorded first.
vm_pool_files() {
    local n=$1 pool=$2 image=$3 h uri vsize out v
    h=$(awk -F'\t' -v n="$n" '!/^#/ && $1 == n {print $12}' "$gen/inventory.tsv")
    uri=$(hyp_uri "$h")
    for v in qcow2 iso log; do
        made volume "$h.$prefix-$n.$v"
        virsh -q -c "$uri" vol-delete --pool "$pool" "$prefix-$n.$v" >/dev/null 2>&1 || true   # this lab's, from a killed lab-up
    done
    vsize=$(qemu-img info -U --output=json "$image/disk.qcow2" | jq -r '."virtual-size"') && [[ $vsize =~ ^[0-9]+$ ]] ||
        die "cannot read the virtual size of $image/disk.qcow2"
    out=$(virsh -q -c "$uri" vol-create-as "$pool" "$prefix-$n.qcow2" "$vsize" --format qcow2 \
        --backing-vol "${image##*/}.qcow2" --backing-vol-format qcow2 2>&1) ||
        die "hypervisor $h: cannot make $n's overlay in pool $pool: $(tail -n 1 <<<"$out")"
    (umask 077; cloud-localds -N "$gen/seeds/$n/network-config" "$state/seeds/$n.iso" \
        "$gen/seeds/$n/user-data" "$gen/seeds/$n/meta-data")
    out=$(virsh -q -c "$uri" vol-create-as "$pool" "$prefix-$n.iso" "$(stat -c %s "$state/seeds/$n.iso")" --format raw 2>&1 &&
        virsh -q -c "$uri" vol-upload --pool "$pool" "$prefix-$n.iso" "$state/seeds/$n.iso" 2>&1) ||
        die "hypervisor $h: cannot upload $n's seed into pool $pool: $(tail -n 1 <<<"$out")"
    log "  $n: overlay $prefix-$n.qcow2 and seed $prefix-$n.iso in pool $pool on hypervisor $h"
}

# check_memory — refuse to start VMs this machine cannot hold: each VM of
# this machine (one on another is that machine's: hyp_elsewhere) not running
# yet needs its guest memory (memory_mib) and QEMU's own, about 150 MiB
# (its RSS outside guest RAM and TCG's cache on these machines: 174 MiB), plus
# the TCG translation cache its domain sets (topogen's TCG_TB_CACHE_MIB; none
# under KVM). Without that cap a 1-4-16 lab took 23 GiB of 24 and the OOM
# killer took a host VM mid-experiment.
check_memory() {
    local need=0 nvm=0 avail n mib tb
    for n in $(nodes); do
        [ "$(node_kind "$n")" = vm ] || continue
        # (a VM on another machine takes that machine's memory)
        hyp_elsewhere "$(awk -F'\t' -v n="$n" '$1 == n {print $12}' "$gen/inventory.tsv")" && continue
        [ "$(dom_state "$n")" = running ] && continue
        mib=$(awk -F'\t' -v n="$n" '$1 == n {print $8}' "$gen/inventory.tsv")
        tb=$(sed -n "s/.*<tb-cache unit='MiB'>\([0-9]*\)<.*/\1/p" "$gen/domains/$n.xml")
        need=$((need + mib + 150 + ${tb:-0})) nvm=$((nvm + 1))
    done
    [ "$nvm" -gt 0 ] || return 0
    avail=$(awk '$1 == "MemAvailable:" {print int($2 / 1024)}' /proc/meminfo)
    [ -n "$avail" ] || return 0
    log "memory: $nvm VM(s) to start need about $need MiB (guest memory + 150 MiB each${tb:+ + a $tb MiB translation cache}), $avail MiB available"
    [ "$need" -le "$avail" ] && return 0
    local msg="$nvm VM(s) need about $need MiB (their guest memory from $TOPOLOGY + 150 MiB each for QEMU${tb:+ + $tb for its translation cache}), this machine has $avail MiB available (MemAvailable)"
    if [ "${INCLAB_MEMORY_CHECK:-1}" = 0 ]; then
        log "warning: $msg; starting anyway (INCLAB_MEMORY_CHECK=0): guests that touch all their memory will meet the OOM killer"
        return 0
    fi
    die "not enough memory: $msg; free memory, lower defaults.memory in the topology file, or INCLAB_MEMORY_CHECK=0 to start anyway"
}

# QEMU's UDP tunnel sockets take the default receive buffer (208 KiB, about 90
# frames): under TCG a VM that is not scheduled for a moment overflows it and
# RDMA falls into retransmission timeouts. Raise the default before QEMU opens
# its sockets; `down` restores the value found here.
tune_host() {
    local want=4194304 cur
    cur=$(sysctl -n net.core.rmem_default)
    if [ "$cur" -lt "$want" ]; then
        mkdir -p "$run"
        [ -e "$run/rmem_default" ] || echo "$cur" > "$run/rmem_default"
        sysctl -q -w net.core.rmem_default=$want
        [ "$(sysctl -n net.core.rmem_max)" -ge $want ] || {
            [ -e "$run/rmem_max" ] || sysctl -n net.core.rmem_max > "$run/rmem_max"
            sysctl -q -w net.core.rmem_max=$want; }
        log "net.core.rmem_default $cur -> $want for the tunnel sockets (restored by lab-down)"
    fi
}

restore_host() {
    local k
    if [ -e "$run/kvm_mode" ]; then
        if read -r mode uid gid < "$run/kvm_mode" && chown "$uid:$gid" /dev/kvm 2>/dev/null &&
            chmod "$mode" /dev/kvm 2>/dev/null; then :
        else
            log "could not restore /dev/kvm to '$(cat "$run/kvm_mode")' (mode uid gid)"
        fi
        rm -f "$run/kvm_mode"
    fi
    for k in rmem_default rmem_max; do
        if [ -e "$run/$k" ]; then
            sysctl -q -w "net.core.$k=$(cat "$run/$k")" && rm -f "$run/$k"
        fi
    done
}

# Refuse to start a node whose loopback UDP ports are taken by someone else.
check_ports() {
    local port
    for port in $(awk -v n="$1" '$2 == n {print $4} $5 == n {print $7}' "$gen/links.tsv" | grep -x '[0-9]*'); do
        if [ -n "$(ss -Hulna "sport = :$port")" ]; then
            die "loopback UDP port $port (for node $1) is in use: set INCLAB_UDP_BASE to a free range"
        fi
    done
}

# Poll every node's inclab-ready until all pass; show progress (each node's
# readiness as it comes, with its seconds). The nodes not yet ready are asked
# at once each round (an agent call takes about a second under TCG: one
# after the other, 8 restored VMs took 9-15 s to be seen ready).
wait_ready() {
    local limit=${INCLAB_BOOT_TIMEOUT:-1500} t0=$SECONDS last=-100 n line pending vm_pending tmp pids
    [ "${acc:-tcg}" = kvm ] && limit=${INCLAB_BOOT_TIMEOUT:-300}
    declare -A done_at=()
    log "waiting for $(nodes | wc -l) nodes to be ready (limit ${limit} s)"
    tmp=$(mktemp -d)
    while :; do
        pending="" vm_pending=0 pids=()
        for n in $(nodes); do
            [ -n "${done_at[$n]:-}" ] && continue
            (QGA_TIMEOUT=3 nexec "$n" /usr/local/sbin/inclab-ready 20 > "$tmp/$n" 2>/dev/null && : > "$tmp/$n.ok") &
            pids+=($!)
        done
        [ ${#pids[@]} = 0 ] || wait "${pids[@]}"
        for n in $(nodes); do
            [ -n "${done_at[$n]:-}" ] && continue
            if [ -e "$tmp/$n.ok" ]; then
                done_at[$n]=$((SECONDS - t0))
                log "  $n ready after ${done_at[$n]} s: $(head -c 300 "$tmp/$n")"
            else
                pending="$pending $n"
                [ "$(node_kind "$n")" = vm ] && vm_pending=1
            fi
        done
        rm -f "$tmp"/*
        [ -z "$pending" ] && { rm -rf "$tmp"; return 0; }
        if [ $((SECONDS - t0)) -ge "$limit" ]; then
            rm -rf "$tmp"
            log "timeout after ${limit} s; not ready:$pending"
            for n in $pending; do
                line=$(nexec "$n" /usr/local/sbin/inclab-ready 20 2>&1 || true)
                log "  $n: ${line:-guest agent not answering} (last console lines below)"
                tail -n 5 "$(console_log "$n")" 2>/dev/null | sed 's/^/      /' >&2 || true
            done
            return 1
        fi
        if [ $((SECONDS - last)) -ge 30 ]; then
            log "  ... $((SECONDS - t0)) s: ${#done_at[@]}/$(nodes | wc -l) ready; waiting for:$pending"
            last=$SECONDS
        fi
        # a VM takes minutes to boot: poll it every 3 s; a namespace node is ready in about a second
        if [ "$vm_pending" = 1 ]; then sleep 3; else sleep 0.3; fi
    done
}

# ---- guest clocks -------------------------------------------------------------
#
# Every figure the lab reports is a time taken inside a guest, and under TCG a
# guest's clock is its TSC: QEMU's copy of this machine's, at the rate the guest
# kernel calibrated at boot against an emulated HPET. A guest whose calibration
# or copy went wrong runs fast or slow, and nothing inside it can tell. So lab-up
# marks each VM's clock against this machine's ($state/clocks.tsv: node, machine
# ns, guest ns, the agent call's round trip ns), and `clocks` reports how far
# each has drifted since. Namespace nodes read this machine's clock: not listed.

CLOCK_TOLERANCE_PCT=1   # a guest off by more has every time it measures off as much
CLOCK_MIN_WINDOW_S=20   # below this the agent's round trip (tens of ms) blurs the rate

# guest_time NODE — "MACHINE_NS GUEST_NS RTT_NS": the guest's CLOCK_REALTIME
# (the agent's guest-get-time; no guest runs a time service, so nothing steps
# it) against the midpoint of this machine's clock around the call. Status 1,
# and on stdout instead why (the reply, printable characters only, clipped),
# when the agent's reply is not {"return": NS} with NS a whole number of at
# most 2^63-1 (read from the text itself: a JSON reader rounding to doubles
# would lose the low digits), or the call gives none in GUEST_TIME_LIMIT_S
# (virsh's --timeout bounds the agent; this bounds a connection that hangs).
GUEST_TIME_AGENT_S=5 GUEST_TIME_LIMIT_S=15
guest_time() {
    local dom=$prefix-$1 a b out rc=0 ns re='^[[:space:]]*\{[[:space:]]*"return"[[:space:]]*:[[:space:]]*([0-9]{1,19})[[:space:]]*\}[[:space:]]*$'
    a=$(date +%s%N)
    out=$(qga '{"execute":"guest-get-time"}' "$GUEST_TIME_AGENT_S" "$GUEST_TIME_LIMIT_S" < /dev/null) || rc=$?
    b=$(date +%s%N)
    out=$(tr -c '[:print:]' ' ' <<<"$out" | cut -c1-120)
    [ "$rc" != 124 ] && [ "$rc" != 137 ] || { echo "no answer in $GUEST_TIME_LIMIT_S s"; return 1; }
    [ "$rc" = 0 ] || { echo "the agent call failed: $out"; return 1; }
    [[ $out =~ $re ]] && ns=${BASH_REMATCH[1]} || ns=x
    # 19 digits: above 2^63-1 unless below 2^63 = 9223372036854775808 (digit strings of one length order as numbers)
    if [ "$ns" = x ] || { [ ${#ns} = 19 ] && ! [[ $ns < 9223372036854775808 ]]; }; then
        echo "its reply is not a whole number of ns (0..2^63-1): $out"
        return 1
    fi
    echo "$(((a + b) / 2)) $((10#$ns)) $((b - a))"
}

# clock_mark [NODE...] — start the clock window of every VM (lab-up, once all
# are ready), or of the VMs named (a reboot restarts a guest's clock); the
# other VMs keep theirs.
clock_mark() {
    local n t tmp=$state/clocks.tsv.tmp
    # two reboots at once each mark their own VMs: one at a time (a lock on the state directory)
    exec {lk}<"$state"
    flock "$lk"
    made path clocks.tsv.tmp
    made path clocks.tsv
    if [ $# -gt 0 ] && [ -s "$state/clocks.tsv" ]; then
        awk -F'\t' -v skip=" $* " 'index(skip, " " $1 " ") == 0' "$state/clocks.tsv" > "$tmp"
    else
        : > "$tmp"
        set -- $(nodes)
    fi
    for n in "$@"; do
        [ "$(node_kind "$n")" = vm ] || continue
        t=$(guest_time "$n") || { log "  $n: the guest agent gave no time; its clock is not checked"; continue; }
        printf '%s\t%s\n' "$n" "${t// /$'\t'}" >> "$tmp"
    done
    mv "$tmp" "$state/clocks.tsv"
    exec {lk}<&-
}

# cmd_guest_time NODE [N] — the read of NODE's clock (guest_time) of least
# round trip of N (1..20, default 3): an offset good to half that trip, for
# who moves a guest's times onto this machine's clock (the experiments'
# cpuwin.csv). An N that is not 1..20 is refused with status 2 before any
# call; a namespace node (it reads this machine's clock) is refused, as is a
# VM whose agent gave no time in all N tries (the last try's reason said).
cmd_guest_time() {
    local n=$1 tries=$2 i t best="" why="" rtt
    [[ $tries =~ ^[0-9]{1,2}$ ]] && [ "$((10#$tries))" -ge 1 ] && [ "$((10#$tries))" -le 20 ] ||
        { printf "lab: guest-time NODE [N]: N is 1..20, not '%s'\n" "$tries" >&2; exit 2; }
    [ "$(node_kind "$n")" = vm ] || die "guest-time: $n is a namespace node: its clock is this machine's"
    for ((i = 0; i < 10#$tries; i++)); do
        t=$(guest_time "$n") || { why=$t; continue; }
        rtt=${t##* }
        [ -n "$best" ] && [ "$rtt" -ge "${best##* }" ] || best=$t
    done
    [ -n "$best" ] || die "guest-time: $n: its guest agent gave no time in $((10#$tries)) tries: $why"
    echo "$best"
}

# cmd_clocks [--check] — one line per VM: its clock's rate against this
# machine's since the mark, and what it gained or lost. --check: exit 1 when a
# VM could not be read or strayed over CLOCK_TOLERANCE_PCT (beyond what the
# agent's round trips can explain) over a window of CLOCK_MIN_WINDOW_S or more.
cmd_clocks() {
    local check=0 bad=0 n h1 g1 e1 h2 g2 e2 t verdict hyp hh=""
    case ${1:-} in "") ;; --check) check=1 ;; *) die "clocks [--check], not '$1'" ;; esac
    need_lab
    [ -s "$state/clocks.tsv" ] || die "no clock marks in $state/clocks.tsv: lab-up has not finished (or the lab has no VM)"
    echo "this machine's clocksource: $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null || echo unknown)"
    # with hypervisors a column more: where each VM runs (its clock is that machine's TSC
    # under TCG; the rate is against this machine's clock, and the agent's round trip
    # through a remote connection, with its ssh, is in the slack)
    [ ! -e "$gen/hypervisors.tsv" ] || hh=HYPERVISOR
    printf '%-11s %10s %9s %12s  %s\n' NODE RATE WINDOW_S DRIFT_MS "${hh:+$(printf '%-12s ' "$hh")}VERDICT"
    while IFS=$'\t' read -r n h1 g1 e1; do
        hyp=""
        [ -z "$hh" ] || hyp=$(printf '%-12s ' "$(awk -F'\t' -v n="$n" '!/^#/ && $1 == n {print $12}' "$gen/inventory.tsv")")
        if ! [[ $h1 =~ ^[0-9]{1,19}$ && $g1 =~ ^[0-9]{1,19}$ && $e1 =~ ^[0-9]{1,19}$ ]]; then
            printf '%-11s %10s %9s %12s  %s\n' "$n" - - - "${hyp}malformed mark in $state/clocks.tsv"
            bad=1; continue
        fi
        if ! t=$(guest_time "$n"); then
            printf '%-11s %10s %9s %12s  %s\n' "$n" - - - "${hyp}guest agent gave no time"
            bad=1; continue
        fi
        read -r h2 g2 e2 <<<"$t"
        # differences in 64-bit shell arithmetic (ns since 1970 lose digits in awk's doubles)
        verdict=$(awk -v dh=$((h2 - h1)) -v dg=$((g2 - g1)) -v e=$(((e1 + e2) / 2)) -v tol="$CLOCK_TOLERANCE_PCT" \
            -v minw="$CLOCK_MIN_WINDOW_S" -v n="$n" -v hyp="$hyp" 'BEGIN {
                if (dh <= 0) { printf "%-11s %10s %9s %12s  %s%s\n", n, "-", "-", "-", hyp, "no time has passed"; exit 0 }
                r = dg / dh; slack = e / dh
                if (dh < minw * 1e9) v = "window too short to judge"
                else if (r > 1 + tol / 100 + slack || r < 1 - tol / 100 - slack) { v = sprintf("OFF by over %g %%: times measured on it are wrong", tol); bad = 1 }
                else v = "ok"
                printf "%-11s %10.5f %9.1f %+12.1f  %s%s\n", n, r, dh / 1e9, (dg - dh) / 1e6, hyp, v
                exit bad }') || {
            bad=1
            # what the guest's kernel made of its clock at boot
            verdict+=$'\n'$(nexec "$n" 'echo "clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)";
                dmesg | grep -E "tsc: |clocksource: Switched|APIC calibration" | head -n 8' 30 2>&1 | sed 's/^/    /')
        }
        echo "$verdict"
    done < "$state/clocks.tsv"
    [ "$check" = 0 ] || return "$bad"
}

# ---- status -----------------------------------------------------------------

# node_state NODE KIND — the live state of a node: running, stopped (a VM shut
# off), paused, crashed, stopping, suspended (libvirt's states), absent (no
# such domain or namespace), unknown (libvirtd is not running: a VM cannot be
# asked). A namespace node is running while its namespace exists, stopped
# while its lab is stopped (lab-stop) and its service does not run.
node_state() {
    if [ "$2" = netns ]; then
        # a stopped lab's namespaces stay, without their service (lab-stop)
        local st=""
        # (a node of a hypervisor reached over ssh: asked there, once)
        ! ns_remote "$1" || st=$(ns_at "$(node_hyp "$1")" state - "$1" 2>/dev/null) || st=unknown
        case $st in
        "") if ! ns_exists "$prefix-$1"; then echo absent
            elif [ -e "$state/stopped" ] && ! ns_loop_runs "$1"; then echo stopped
            else echo running; fi ;;
        absent | unknown) echo "$st" ;;
        noloop) if [ -e "$state/stopped" ]; then echo stopped; else echo running; fi ;;
        *) echo running ;;
        esac
        return
    fi
    daemons_up || { echo unknown; return; }
    case $(dom_state "$1") in
    running) echo running ;;
    "shut off") echo stopped ;;
    paused) echo paused ;;
    crashed) echo crashed ;;
    "in shutdown") echo stopping ;;
    pmsuspended) echo suspended ;;
    *) echo absent ;;
    esac
}

# status_verb [--format table|json] — `lab.sh status`: the state of every node
# of the lab, as a table (cmd_status, the default) or one JSON document
# (status_json). A lab that does not exist (no state in $state) is an error,
# in both formats.
status_verb() {
    local format=table
    while [ $# -gt 0 ]; do
        case $1 in
        --format) [ $# -ge 2 ] || die "status: --format needs a value: table or json"; format=$2; shift 2 ;;
        --format=*) format=${1#--format=}; shift ;;
        --json) format=json; shift ;;
        *) die "status [--format table|json], not '$1'" ;;
        esac
    done
    case $format in table | json) ;; *) die "status: FORMAT must be table or json, not '$format'" ;; esac
    if [ ! -e "$gen/inventory.tsv" ]; then
        local left="" d
        if daemons_up; then
            for d in $(made_names domain); do dvsh_dom "$d" dominfo "$d" >/dev/null 2>&1 && left+=" $d"; done
        fi
        [ -z "$left" ] || echo "lab: but libvirt still has the lab's domains:$left (make lab-down removes them)" >&2
        die "no lab '$prefix': nothing in its state directory $state (make lab-up; INCLAB_PREFIX names the lab)"
    fi
    if [ "$format" = json ]; then status_json; else cmd_status; fi
}

cmd_status() {
    if [ ! -e "$gen/inventory.tsv" ]; then
        echo "no lab (state directory $state is empty)"
        local left="" d
        if daemons_up; then
            for d in $(made_names domain); do dvsh_dom "$d" dominfo "$d" >/dev/null 2>&1 && left+=" $d"; done
        fi
        [ -z "$left" ] || echo "but libvirt still has the lab's domains:$left (make lab-down removes them)"
        return 0
    fi
    # shellcheck disable=SC1091
    . "$state/lab.env"
    echo "lab: $LAB_TOPOLOGY, accelerator $LAB_ACCEL${LAB_ACCEL_AT:+ (hypervisors: $(sed 's/=/ /g; s/ \([^ ]*\) / \1, /g' <<<"$LAB_ACCEL_AT "| sed 's/, $//'))}, switches ${LAB_SWITCHES:-vm}, state in $state"
    [ ! -e "$state/stopped" ] ||
        echo "stopped since $(head -c 40 "$state/stopped") (lab-stop): 'make lab-up' brings it back from its saved state, 'make lab-down' removes it"
    # with hypervisors a column more: where each node runs
    local hfmt="" hcol=()
    [ ! -e "$gen/hypervisors.tsv" ] || { hfmt="%-12s "; hcol=(HYPERVISOR); }
    printf "%-11s %-10s %-4s %-8s %-15s %-16s $hfmt%s\n" NODE ROLE RANK STATE MGMT DATA "${hcol[@]}" READY
    local n role rank mgmt dif daddr st r
    local kind hyp
    while IFS=$'\t' read -r n role rank mgmt dif daddr _ _ _ _ kind hyp; do
        if [ "${kind:-vm}" = netns ]; then
            st=$(ns_node_exists "$n" && echo netns || echo absent)
            # its processes ended by lab-stop (the restart loop gone too)
            [ "$st" = netns ] && [ -e "$state/stopped" ] && ! ns_loop_runs "$n" && st=stopped
        else
            st=$(daemons_up && dom_state "$n" || echo "no-libvirtd")
            # shut off with its memory saved by lab-stop
            [ "$st" = "shut off" ] && has_msave "$n" && st=stopped
        fi
        r="-"
        if [ "$st" = running ] || [ "$st" = netns ]; then r=$(nexec "$n" /usr/local/sbin/inclab-ready 20 2>/dev/null || true); fi
        [ "$rank" = -1 ] && rank=-
        [ -z "$hfmt" ] || hcol=("$hyp")
        printf "%-11s %-10s %-4s %-8s %-15s %-16s $hfmt%s\n" "$n" "$role" "$rank" "$st" "$mgmt" "$daddr" "${hcol[@]}" "${r:--}"
    done < <(grep -v '^#' "$gen/inventory.tsv")
}

# status_json — the lab as one JSON document on stdout (README, "lab-status
# FORMAT=json"): the static facts topogen wrote at lab-up ($gen/lab.json:
# nodes, roles, kinds, addresses, interfaces, links) with the live ones added
# by jq: each node's state, readiness and inclab-ready's line, the lab's
# state, accelerator and state directory. Every string from outside reaches
# the document through jq --arg.
status_json() {
    local n kind st line ready nodes_live=""
    # shellcheck disable=SC1091
    . "$state/lab.env"
    [ -r "$gen/lab.json" ] ||
        die "status: lab '$prefix' has no $gen/lab.json (made before lab-status FORMAT=json existed): 'make lab-down', then 'make lab-up'"
    jq -e '.version == 1 and (.nodes | type) == "array"' "$gen/lab.json" >/dev/null 2>&1 ||
        die "status: $gen/lab.json is not the lab's JSON of version 1: 'make lab-down', then 'make lab-up'"
    while IFS=$'\t' read -r n kind; do
        st=$(node_state "$n" "$kind") line="" ready=false
        if [ "$st" = running ] && line=$(nexec "$n" /usr/local/sbin/inclab-ready 20 2>/dev/null); then ready=true; fi
        # the line inclab-ready printed (its why= when not ready), or null when it could not run
        nodes_live+=$(jq -cn --arg name "$n" --arg state "$st" --argjson ready "$ready" --arg line "$(head -n 1 <<<"$line")" \
            '{name: $name, state: $state, ready: $ready, readiness: (if $line == "" then null else $line end)}')$'\n'
    done < <(jq -r '.nodes[] | [.name, .kind] | @tsv' "$gen/lab.json")
    jq --slurpfile live <(printf '%s' "$nodes_live") --arg state_dir "$state" --arg accel "${LAB_ACCEL:-}" --arg accel_at "${LAB_ACCEL_AT:-}" \
        --argjson test_lab "$([ "${LAB_TEST:-0}" = 1 ] && echo true || echo false)" '
        ($live | map({(.name): .}) | add // {}) as $by
        | .nodes |= map(. + ($by[.name] // {state: "unknown", ready: false, readiness: null}))
        | .state_dir = $state_dir
        | .accelerator = (if $accel == "" then null else $accel end)
        | ([$accel_at | splits(" ") | select(. != "") | split("=") | {(.[0]): .[1]}] | add // {}) as $acc_at
        | if (.hypervisors | type) == "array" then .hypervisors |= map(.accelerator = ($acc_at[.name] // null)) else . end
        | .test_lab = $test_lab
        | .state = (if all(.nodes[]; .state == "running") then "running"
                    elif any(.nodes[]; .state == "running") then "partial"
                    else "stopped" end)
        | .ready = all(.nodes[]; .ready)' "$gen/lab.json"
}

# ---- graph ------------------------------------------------------------------

# cmd_graph [DIR] — draw a topology with graphviz: DIR/NAME.dot (topogen
# --dot), DIR/NAME.svg and DIR/NAME.png (dot), NAME the topology's name, with
# "-netns" when its switches are namespaces. DIR: the argument, GRAPH_DIR, or
# results/graphs. The topology: TOPOLOGY when given (SWITCHES=netns draws
# namespace switches), else the lab's own (its generated topology.dot) when
# this prefix has a lab, else the default; no lab needs to run.
cmd_graph() {
    local dir=${1:-${GRAPH_DIR:-results/graphs}} name switches=${SWITCHES:-} tmp
    command -v dot >/dev/null || die "graph: no 'dot' on PATH: graphviz is missing (make deps)"
    [ -n "$dir" ] || die "graph: GRAPH_DIR is empty"
    case $switches in vm | netns | "") ;; *) die "SWITCHES must be vm or netns, not '$switches'" ;; esac
    tmp=$(mktemp -d) || die "graph: cannot make a temporary directory"
    if [ -z "$topology_given" ] && [ -z "$switches" ] && [ -r "$gen/topology.dot" ] && [ -r "$gen/lab.json" ]; then
        cp "$gen/topology.dot" "$tmp/g.dot" && cp "$gen/lab.json" "$tmp/g.json" ||
            { rm -rf "$tmp"; die "graph: cannot read the lab's $gen/topology.dot"; }
        log "graph of lab '$prefix' ($(jq -r .topology.file "$tmp/g.json"))"
    else
        [ -r "$TOPOLOGY" ] || { rm -rf "$tmp"; die "graph: topology file '$TOPOLOGY' not found"; }
        if ! "$INCLAB_BUILD/topogen" --dot --switches "${switches:-vm}" "$TOPOLOGY" > "$tmp/g.dot" ||
            ! "$INCLAB_BUILD/topogen" --json --switches "${switches:-vm}" "$TOPOLOGY" > "$tmp/g.json"; then
            rm -rf "$tmp"; die "graph: topogen refused '$TOPOLOGY' (see above)"
        fi
    fi
    name=$(jq -r '.topology.name + (if .switches == "netns" then "-netns" else "" end)' "$tmp/g.json")
    # a topology's name is a word (topogen checked it): a file name as it is
    [[ $name =~ ^[a-z0-9]+(-[a-z0-9]+)*$ ]] || { rm -rf "$tmp"; die "graph: unexpected topology name '$name'"; }
    mkdir -p -- "$dir" || { rm -rf "$tmp"; die "graph: cannot create '$dir'"; }
    if ! cp "$tmp/g.dot" "$dir/$name.dot" || ! dot -Tsvg -o "$dir/$name.svg" "$tmp/g.dot" ||
        ! dot -Tpng -o "$dir/$name.png" "$tmp/g.dot"; then
        rm -rf "$tmp"; die "graph: writing $dir/$name.{dot,svg,png} failed"
    fi
    rm -rf "$tmp"
    echo "$dir/$name.dot"; echo "$dir/$name.svg"; echo "$dir/$name.png"
}

# ---- stop and restore ----------------------------------------------------------
#
# lab-stop keeps a lab's state without its processes: libvirt's managed save
# writes each VM's memory and device state to $SAVE_DIR/DOMAIN.save and ends
# its QEMU (the domain stays defined, "shut off", its disks and the lab's
# networks and namespaces stay); the next lab-up restores each VM from there
# instead of booting it (libvirt's start of a domain with a managed save), and
# runs a namespace node's setup and service again (it has no memory of its
# own to keep). $state/stopped (the time of the stop) says the lab is stopped.
# A guest's clock stands still while it is saved: it is set again on restore.

SAVE_DIR=${INCLAB_LIBVIRT_SAVE:-/var/lib/libvirt/qemu/save}   # where libvirtd keeps managed saves

# has_msave NODE — does NODE's domain have a managed save image?
has_msave() {
    local info
    info=$(dvsh "$1" dominfo "$prefix-$1" 2>/dev/null) || return 1
    grep -q '^Managed save: *yes' <<<"$info"
}

# bg_time OUT CMD... — run CMD, then write "EXIT SECONDS" to OUT and its
# standard error to OUT.err (for the steps run at once on every VM).
bg_time() {
    local out=$1 s=$SECONDS rc=0
    shift
    "$@" > /dev/null 2> "$out.err" || rc=$?
    echo "$rc $((SECONDS - s))" > "$out"
}

# cmd_stop — stop the running lab keeping its state. Every running VM is paused
# first (all within a second: no node sees a peer go quiet for the length of a
# save, and the controller's keepalive gives up on a switch after 20 s), then all
# are saved at once (managed save, each back running on restore); every
# namespace node's processes are ended and its /run/inclab emptied. Refused
# (exit 1) without a lab. A stopped lab stops again as a no-op. Exit 1 when a
# VM could not be saved (then the lab is partly stopped: lab-up brings it back).
cmd_stop() {
    local n st t0=$SECONDS vms="" nns=0 tmp rc secs mib total=0 failed=0 pids=()
    check_state_path
    state_foreign &&
        die "refused: $state is not the state of lab '$prefix' (no marker $MARKER naming it): nothing stopped"
    marker_ok && [ -e "$gen/inventory.tsv" ] ||
        die "no lab '$prefix' in $state: nothing to stop ('make lab-up' brings one up)"
    daemons_up || ensure_daemons
    made path stopped
    date -u '+%F %T UTC' > "$state/stopped" || die "cannot write $state/stopped"
    for n in $(nodes); do
        [ "$(node_kind "$n")" = vm ] || continue
        st=$(dom_state "$n")
        case $st in
        running | paused) vms+=" $n" ;;
        "shut off") if has_msave "$n"; then log "  $n: already stopped (its saved state is kept)"
                    else log "  $n: shut off without a saved state: lab-up boots it anew"; fi ;;
        *) log "  $n: $st: nothing to save (lab-up boots it anew)" ;;
        esac
    done
    for n in $vms; do
        [ "$(dom_state "$n")" = paused ] || dvsh "$n" suspend "$prefix-$n" >/dev/null || log "  $n: could not pause it (saved running)"
    done
    [ -z "$vms" ] || log "paused$vms; saving their memory (managed save into $SAVE_DIR)"
    tmp=$(mktemp -d)
    for n in $vms; do
        bg_time "$tmp/$n" dvsh "$n" managedsave --running "$prefix-$n" &
        pids+=($!)
    done
    [ ${#pids[@]} = 0 ] || wait "${pids[@]}"
    for n in $vms; do
        read -r rc secs < "$tmp/$n" 2>/dev/null || rc=1 secs=-
        if [ "$rc" = 0 ]; then
            mib=$(($(stat -c %s "$SAVE_DIR/$prefix-$n.save" 2>/dev/null || echo 0) / 1048576))
            total=$((total + mib))
            log "  $n saved in $secs s ($mib MiB)"
        else
            log "  $n: managed save failed: $(head -c 300 "$tmp/$n.err" 2>/dev/null)"
            failed=$((failed + 1))
        fi
    done
    rm -rf "$tmp"
    for n in $(ns_nodes); do
        if ns_remote "$n"; then
            ns_at "$(node_hyp "$n")" stop - "$n" || { log "  $n (namespace on hypervisor $(node_hyp "$n")): could not end its processes over ssh"; failed=$((failed + 1)); continue; }
        else
            ns_exists "$prefix-$n" || continue
            ns_kill "$prefix-$n"
            find "$state/nodes/$n/root/run/inclab" -mindepth 1 -delete 2>/dev/null || true
        fi
        log "  $n (namespace): its processes ended"
        nns=$((nns + 1))
    done
    [ "$failed" = 0 ] ||
        die "$failed VM(s) or namespace node(s) could not be stopped (see above): the lab is partly stopped; 'make lab-up' brings it back, 'make lab-down' removes it"
    log "lab stopped in $((SECONDS - t0)) s: $(wc -w <<<"$vms") VM(s) saved ($total MiB), $nns namespace node(s) stopped; 'make lab-up' brings it back, 'make lab-down' removes it"
}

# restore_vms NODE... — (lab-up) restore the VMs lab-stop saved, all at once,
# each paused; then resume them together (within a second, as they were paused)
# and set their clocks (clock_set). Prints each restore's seconds. Fails when
# one cannot be restored.
restore_vms() {
    local n tmp rc secs pids=() t0=$SECONDS
    log "restoring $* from their saved state"
    tmp=$(mktemp -d)
    for n in "$@"; do
        check_ports "$n"
        bg_time "$tmp/$n" dvsh "$n" start --paused "$prefix-$n" &
        pids+=($!)
    done
    wait "${pids[@]}"
    for n in "$@"; do
        read -r rc secs < "$tmp/$n" 2>/dev/null || rc=1 secs=-
        [ "$rc" = 0 ] || { log "  $n: $(head -c 300 "$tmp/$n.err" 2>/dev/null)"; rm -rf "$tmp"
            die "cannot restore $n from its saved state ('make lab-down' removes the lab and what it saved)"; }
        log "  $n restored in $secs s"
    done
    rm -rf "$tmp"
    for n in "$@"; do dvsh "$n" resume "$prefix-$n" >/dev/null || die "cannot resume $n after its restore"; done
    log "resumed $* ($((SECONDS - t0)) s after the first restore began)"
    pids=()
    for n in "$@"; do clock_set "$n" & pids+=($!); done
    wait "${pids[@]}"
}

# clock_set NODE — set a restored VM's clock to this machine's. Under TCG the
# guest's TSC, and so its clock, stood still while it was saved: it is behind
# by the time it was stopped. Set through the guest agent's guest-set-time
# (which then also runs hwclock; the images have none, and that error is
# ignored), then read back: within CLOCK_SET_MS of this machine's, or a
# warning (lab-up marks every clock anew after this, so `clocks` measures
# rates from there). The agent may need a few seconds after a restore.
# The time sent is this machine's as the call begins: the guest ends up
# behind by the call's latency (under TCG, 8 VMs set at once: 6-345 ms seen).
CLOCK_SET_MS=1000  # behind by more: the set failed (a stopped guest is behind by the whole stop)
clock_set() {
    local dom=$prefix-$1 t h g off
    for _ in $(seq 1 15); do
        qga "{\"execute\":\"guest-set-time\",\"arguments\":{\"time\":$(date +%s%N)}}" 5 >/dev/null || true
        if t=$(guest_time "$1"); then
            read -r h g _ <<<"$t"
            off=$(((g - h) / 1000000))
            if [ "${off#-}" -le "$CLOCK_SET_MS" ]; then log "  $1: clock set (off by $off ms)"; return 0; fi
        fi
        sleep 1
    done
    log "  warning: $1: could not set its clock (${off:-no answer} ms off): times it measures against other nodes are off"
}

# ---- down -------------------------------------------------------------------

# cmd_down — remove what lab-up recorded in $state/made ("what the lab made"),
# exactly those names, then the state itself; the machine-wide changes
# (daemons by pid, host settings) only with libvirt's last domain. Refuses a
# state path outside the root or a state without this lab's marker (nothing
# removed, exit 1). Idempotent; works on a half-built or crashed lab. Exit 1
# when something recorded could not be removed (the record is then kept).
# down_dead — (lab-down) the URIs of the lab's hypervisors whose connection
# does not answer within HYP_TIMEOUT (30 s), one per line, each said with its
# name: what the lab made there cannot be removed now and must stay recorded
# (a "not there" from a dead connection is no proof that it is gone). Nothing
# for a lab without hypervisors.tsv (its domains are on $URI, which
# ensure_daemons started).
down_dead() {
    local name uri rest out
    [ -e "$gen/hypervisors.tsv" ] || return 0
    while IFS=$'\t' read -r name uri rest; do
        [ -n "$uri" ] || continue
        out=$(timeout "${HYP_TIMEOUT:-30}" virsh -q -c "$uri" uri 2>&1 </dev/null) && continue
        log "hypervisor $name: its connection $uri does not answer ($(tail -n 1 <<<"$out" | head -c 200)): what the lab made there stays recorded"
        echo "$uri"
    done < <(grep -v '^#' "$gen/hypervisors.tsv")
}

# down_pools — (lab-down) on each hypervisor whose connection answers (not in
# $dead): the volumes the lab recorded (overlays, seeds, console logs, a
# partial upload) deleted from its pool (started and refreshed first: a
# console log is new to libvirt), then the pool undefined (pool-destroy,
# pool-undefine: its directory and the images shipped into it stay, a cache
# for the next lab-up). Adds to $failed what stays.
down_pools() {
    local d h v uri pool n=0 info
    for d in $(made_names volume) $(made_names pool); do
        h=${d%%.*} uri=$(hyp_uri "${d%%.*}")
        [ -n "$uri" ] || { log "could not remove ${d#*.} of hypervisor $h: no such hypervisor in $gen/hypervisors.tsv"; failed=$((failed + 1)); continue; }
        if [ -n "$dead" ] && grep -qxF -- "$uri" <<<"$dead"; then
            log "could not remove ${d#*.} on hypervisor $h: it does not answer"; failed=$((failed + 1))
        fi
    done
    for h in $(made_names pool | cut -d. -f1 | sort -u); do
        uri=$(hyp_uri "$h") pool=$(hyp_col "$h" 9)
        [ -n "$uri" ] && [ -n "$pool" ] && ! grep -qxF -- "$uri" <<<"$dead" || continue
        is_made pool "$h.$pool" || continue
        info=$(virsh -q -c "$uri" pool-info "$pool" 2>/dev/null) || continue
        grep -q '^State:.*running' <<<"$info" || virsh -q -c "$uri" pool-start "$pool" >/dev/null 2>&1 || true
        virsh -q -c "$uri" pool-refresh "$pool" >/dev/null 2>&1 || true
        for v in $(made_names volume | awk -F. -v h="$h" '$1 == h {print substr($0, length(h) + 2)}'); do
            virsh -q -c "$uri" vol-info --pool "$pool" "$v" >/dev/null 2>&1 || continue
            virsh -q -c "$uri" vol-delete --pool "$pool" "$v" >/dev/null 2>&1 || true
            if virsh -q -c "$uri" vol-info --pool "$pool" "$v" >/dev/null 2>&1; then
                log "could not remove volume $v of pool $pool on hypervisor $h"; failed=$((failed + 1))
            else n=$((n + 1)); fi
        done
        virsh -q -c "$uri" pool-destroy "$pool" >/dev/null 2>&1 || true
        virsh -q -c "$uri" pool-undefine "$pool" >/dev/null 2>&1 || true
        if virsh -q -c "$uri" pool-info "$pool" >/dev/null 2>&1; then
            log "could not remove storage pool $pool on hypervisor $h"; failed=$((failed + 1))
        else
            log "hypervisor $h: removed $n volume(s) of the lab and storage pool $pool (its directory $(hyp_col "$h" 8) keeps the images shipped there, a cache)"
        fi
        n=0
    done
}

# down_tunnels — (lab-down) the tunnel devices the lab made over ssh (tunnel
# H.NAME), removed on each hypervisor's machine over ssh when it answers
# (not in $dead): exactly those names. Adds to $failed what stays.
down_tunnels() {
    local h uri names out
    for h in $(made_names tunnel | cut -d. -f1 | sort -u); do
        uri=$(hyp_uri "$h")
        names=$(made_names tunnel | awk -F. -v h="$h" '$1 == h {print substr($0, length(h) + 2)}' | grep -E '^[a-z0-9][a-z0-9-]{0,14}$' | tr '\n' ' ' || true)
        if [ -z "$uri" ] || { [ -n "$dead" ] && grep -qxF -- "$uri" <<<"$dead"; }; then
            log "could not remove tunnel device(s) $names on hypervisor $h: it does not answer"; failed=$((failed + 1)); continue
        fi
        out=$(hyp_sh "$h" "for d in $names; do if ip link show dev \"\$d\" >/dev/null 2>&1; then ip link del \"\$d\" 2>/dev/null; ip link show dev \"\$d\" >/dev/null 2>&1 && echo \"left \$d\" || echo \"removed \$d\"; fi; done; true" </dev/null 2>&1) ||
            { log "could not remove tunnel device(s) on hypervisor $h over ssh: $(tail -n 1 <<<"$out")"; failed=$((failed + 1)); continue; }
        grep -q '^left ' <<<"$out" && { log "could not remove tunnel device(s) on hypervisor $h: $(sed -n 's/^left //p' <<<"$out" | tr '\n' ' ')"; failed=$((failed + 1)); }
        log "hypervisor $h: removed $(grep -c '^removed ' <<<"$out" || true) tunnel device(s) of the lab over ssh"
    done
}

cmd_down() {
    local d pids name left removed=0 failed=0 need=0 others=0 dead
    check_state_path
    if [ ! -e "$state" ] && [ ! -L "$state" ]; then
        log "no state directory $state: nothing of lab '$prefix' is recorded"
    elif ! marker_ok; then
        state_foreign &&
            die "refused: $state is not the state of lab '$prefix' (no marker $MARKER naming it): nothing removed"
        # an empty directory: a lab-up killed between its mkdir and the marker
        rmdir "$state" || die "cannot remove the empty state directory $state"
        log "removed the empty state directory $state"
    fi
    d=$(made_check) || die "refused: $state/made has lines that are not a record of lab '$prefix' (nothing removed):"$'\n'"$d"
    # Domains and networks are defined persistently: if libvirtd is not
    # running (the machine restarted, a crash) start it to remove them.
    for d in $(made_names domain); do [ -e "$LIBVIRT_CONF/qemu/$d.xml" ] && need=1; done
    for d in $(made_names network); do [ -e "$LIBVIRT_CONF/qemu/networks/$d.xml" ] && need=1; done
    for d in $(made_names pool); do [ -e "$LIBVIRT_CONF/storage/${d#*.}.xml" ] && need=1; done
    [ "$need" = 0 ] || daemons_up || ensure_daemons
    dead=$(down_dead)
    if daemons_up; then
        for d in $(made_names domain); do
            if [ -n "$dead" ] && grep -qxF -- "$(node_uri "${d#"$prefix-"}")" <<<"$dead"; then
                log "could not remove domain $d: its hypervisor does not answer"; failed=$((failed + 1)); continue
            fi
            dvsh_dom "$d" dominfo "$d" >/dev/null 2>&1 || continue
            dvsh_dom "$d" destroy "$d" >/dev/null 2>&1 || true
            # --managed-save: with the memory lab-stop saved (else undefine refuses)
            dvsh_dom "$d" undefine --managed-save "$d" >/dev/null 2>&1 || true
            if dvsh_dom "$d" dominfo "$d" >/dev/null 2>&1; then
                log "could not remove domain $d"; failed=$((failed + 1))
            else
                removed=$((removed + 1))
            fi
        done
        for d in $(made_names network); do
            if [ -n "$dead" ] && grep -qxF -- "$(net_uri "$d")" <<<"$dead"; then
                log "could not remove network $d: its hypervisor does not answer"; failed=$((failed + 1)); continue
            fi
            nvsh "$d" net-info "$d" >/dev/null 2>&1 || continue
            nvsh "$d" net-destroy "$d" >/dev/null 2>&1 || true
            nvsh "$d" net-undefine "$d" >/dev/null 2>&1 || true
            if nvsh "$d" net-info "$d" >/dev/null 2>&1; then log "could not remove network $d"; failed=$((failed + 1)); else log "removed network $d"; fi
        done
        down_pools
    fi
    # QEMU processes of the lab's domains that outlived their libvirtd (crash, kill -9)
    pids=$(for d in $(made_names domain); do qemu_pids "$d"; done | sort -u | tr '\n' ' ')
    if [ -n "${pids// /}" ]; then
        log "killing leftover QEMU processes of the lab's domains: $pids"
        kill $pids 2>/dev/null || true
        sleep 1
        pids=$(for d in $(made_names domain); do qemu_pids "$d"; done | sort -u | tr '\n' ' ')
        [ -z "${pids// /}" ] || kill -9 $pids 2>/dev/null || true
    fi
    # Namespace nodes and devices (after the VMs, whose taps were on their bridges).
    ns_down
    down_tunnels
    # The state: what lab-up recorded, then its record, marker and directory
    # (rmdir: it is empty unless something not of the lab is in it). When
    # something could not be removed (a hypervisor that does not answer) all
    # of it stays: its generated files say where those things are, and a
    # second lab-down removes them.
    if [ -d "$state" ] && [ "$failed" != 0 ]; then
        log "kept $state and its record: $failed thing(s) of the lab could not be removed (lab-down again once fixed)"
    elif [ -d "$state" ]; then
        for name in $(made_names path); do
            [[ $name =~ $NAME_RE ]] && [ "$name" != "$MARKER" ] && [ "$name" != made ] || continue
            # one level below $state (a symbolic link there goes, not what it names)
            rm -rf --one-file-system -- "${state:?}/$name" || { log "could not remove $state/$name"; failed=$((failed + 1)); }
        done
        left=$(ls -A "$state" | grep -vxF -e made -e "$MARKER" | head -n 5 | tr '\n' ' ' || true)
        if [ -n "$left" ]; then
            log "kept $state and its record: it holds what lab-up did not make: $left"
            failed=$((failed + 1))
        elif [ "$failed" = 0 ]; then
            rm -f -- "$state/made" "$state/$MARKER"
            rmdir "$state" || { log "could not remove $state"; failed=$((failed + 1)); }
        else
            log "kept $state and its record: $failed thing(s) of the lab could not be removed (lab-down again once fixed)"
        fi
    fi
    ns_unmountpoints
    # What lab-up changed for the whole machine (the daemons it started, the
    # socket buffer default, /dev/kvm's mode) goes back only with the last
    # domain: a scale check's lab-down once stopped libvirtd under another
    # running lab, whose experiment then lost its guest agents.
    daemons_up && others=$(vsh list --all --name 2>/dev/null | grep -c . || true)
    if [ "$others" -gt 0 ]; then
        log "libvirt still holds $others domain(s) of other labs or users: daemons and host settings left as they are"
    else
        restore_host
        stop_daemons
    fi
    log "lab down ($removed domain(s) removed)"
    [ "$failed" = 0 ] || die "lab-down left $failed thing(s) of lab '$prefix' (see above)"
}

# ---- reboot -------------------------------------------------------------------

# boot_id NODE — the node's kernel boot id (a namespace node's: a file its
# restart writes; none before the first), or nothing when it does not answer.
# Always succeeds.
boot_id() {
    if ns_remote "$1"; then ns_at "$(node_hyp "$1")" bootid - "$1" 2>/dev/null || true
    elif [ "$(node_kind "$1")" = netns ]; then cat "$state/nodes/$1/root/run/inclab/boot-id" 2>/dev/null || true
    else QGA_TIMEOUT=3 nexec "$1" 'cat /proc/sys/kernel/random/boot_id' 10 2>/dev/null || true; fi
}

# cmd_reboot NODE... — reboot every NODE at once, then wait until each runs a
# new boot and is ready (inclab-ready). Nothing of lab-up runs: a VM's own
# boot sets it up again (cloud-init's bootcmd runs inclab-node-setup on every
# boot; the role's service is enabled), and a namespace node, which has no
# boot of its own, gets what its boot would do: its processes killed, its
# /run/inclab emptied (a tmpfs in a VM), then its network setup, role setup
# and service (ns_setup). HARD=1 power-cycles VMs (virsh reset: no shutdown,
# as after a crash) instead of asking their guest agent to reboot.
cmd_reboot() {
    local n t0=$SECONDS limit=${INCLAB_BOOT_TIMEOUT:-900} pending vms="" id
    declare -A old=()
    [ $# -gt 0 ] || die "which nodes? NODE=<name> (or several, separated by spaces)"
    for n in "$@"; do need_node "$n"; done
    case ${HARD:-0} in 0 | 1) ;; *) die "HARD must be 0 or 1, not '$HARD'" ;; esac
    for n in "$@"; do
        old[$n]=$(boot_id "$n")
        if [ "$(node_kind "$n")" = netns ]; then
            log "restarting namespace node $n: processes, /run/inclab, setup and service"
            if ns_remote "$n"; then
                # on its machine (nsnode.sh stop, newboot), its setup over ssh
                ns_at "$(node_hyp "$n")" stop - "$n" || die "$n: cannot end its processes on hypervisor $(node_hyp "$n")"
                ns_setup "$n"
                ns_at "$(node_hyp "$n")" newboot - "$n" || die "$n: cannot write its boot id on hypervisor $(node_hyp "$n")"
                continue
            fi
            ns_kill "$prefix-$n"
            find "$state/nodes/$n/root/run/inclab" -mindepth 1 -delete 2>/dev/null ||
                die "$n: cannot empty $state/nodes/$n/root/run/inclab"
            ns_setup "$n"
            cat /proc/sys/kernel/random/uuid > "$state/nodes/$n/root/run/inclab/boot-id"
        else
            [ -n "${old[$n]}" ] || die "$n: its guest agent does not answer: is it running? (make lab-status)"
            if [ "${HARD:-0}" = 1 ]; then
                log "power-cycling $n (virsh reset)"
                dvsh "$n" reset "$prefix-$n" >/dev/null || die "$n: virsh reset failed"
            else
                log "rebooting $n (guest agent)"
                dvsh "$n" reboot --mode agent "$prefix-$n" >/dev/null || die "$n: virsh reboot through the guest agent failed"
            fi
            vms+=" $n"
        fi
    done
    log "waiting until $* run a new boot and are ready (limit $limit s)"
    while :; do
        pending=""
        for n in "$@"; do
            id=$(boot_id "$n")
            if [ -n "$id" ] && [ "$id" != "${old[$n]}" ] && QGA_TIMEOUT=3 nexec "$n" /usr/local/sbin/inclab-ready 20 >/dev/null 2>&1
            then continue; fi
            pending+=" $n"
        done
        [ -z "$pending" ] && break
        if [ $((SECONDS - t0)) -ge "$limit" ]; then
            for n in $pending; do
                log "  $n: $(QGA_TIMEOUT=3 nexec "$n" /usr/local/sbin/inclab-ready 20 2>&1 || true)"
                tail -n 5 "$(console_log "$n")" 2>/dev/null | sed 's/^/      /' >&2 || true
            done
            die "timeout after $limit s: not back and ready:$pending"
        fi
        sleep 2
    done
    # shellcheck disable=SC2086
    [ -z "$vms" ] || clock_mark $vms
    log "rebooted and ready in $((SECONDS - t0)) s: $*"
}

# ---- console, capture -----------------------------------------------------------

cmd_console() {
    need_node "${1:-}"
    [ "$(node_kind "$1")" = netns ] &&
        die "$1 is a network namespace (SWITCHES=netns): it has no console; 'make lab-ssh NODE=$1' opens a shell in it"
    [ -t 0 ] || die "the console needs a terminal; use 'make lab-ssh NODE=$1 CMD=...' from scripts"
    echo "console of $1 (root shell; leave with Ctrl-])" >&2
    exec virsh -c "$(node_uri "$1")" console "$prefix-$1"
}

# sw_ports SWITCH — signal SWITCH's incswitch (SIGUSR1) and print, from its
# log, the first ports line it wrote after ("incswitch SWITCH ports: IFACE
# rx=N tx=N open=0|1 opens=N, ...", switch/portstat.h), after a line "addrs
# A,B,..." of the node's IPv4 addresses (not loopback). Non-zero when the
# switch has not answered within 5 s.
sw_ports() {
    # shellcheck disable=SC2016 # expanded on the node
    nexec "$1" 'log=/var/log/inclab/incswitch.log; n=$(wc -l < $log) || exit 1
        if [ "${INCLAB_NETNS:-}" = 1 ]; then p=$(cat /run/inclab/service.pid)
        else p=$(systemctl show -p MainPID --value incswitch.service); fi
        [ "${p:-0}" -gt 0 ] 2>/dev/null && kill -USR1 "$p" || exit 1
        l=""
        for i in $(seq 50); do
            l=$(tail -n +$((n + 1)) $log | grep -m 1 "^incswitch [a-z0-9-]* ports:") && break
            sleep 0.1
        done
        [ -n "$l" ] || exit 1
        echo "addrs $(ip -4 -o addr show | awk "{sub(\"/.*\", \"\", \$4); if (\$4 !~ /^127\\./) print \$4}" | paste -sd, -)"
        echo "$l"' 30
}

# port_counts LINE IFACE — "rx tx open opens" of IFACE in sw_ports's ports
# LINE; "0 0 0 0" for a port never opened (the switch counted nothing there).
port_counts() {
    tr ',' '\n' <<<"${1#*ports:}" | awk -v p="$2" '
        $1 == p { f = 1; for (i = 2; i <= NF; i++) { split($i, kv, "="); if (kv[2] ~ /^[0-9]+$/) v[kv[1]] = kv[2] } }
        END { if (f) print v["rx"] + 0, v["tx"] + 0, v["open"] + 0, v["opens"] + 0; else print "0 0 0 0" }'
}

# cap_crossing LINK A B HYP_A HYP_B PORT_A PORT_B — (capture) the udpcap spec of
# tree edge LINK (links.tsv: A on HYP_A, B on HYP_B, two hypervisors), taken at
# its end on the first hypervisor, this machine: tunnels.tsv's line of that
# end says how it is wired. A namespace node's end (netns): its interface in
# its namespace, as any namespace link (the frames it sends and receives, the
# VXLAN headers already off); a VM's end on a VXLAN bridge (vm): the VXLAN
# device (the frames that crossed, inbound = from the tunnel, to the VM); a
# QEMU UDP tunnel (udp): its datagrams on loopback, as a same-machine tunnel,
# only when the peer's address is this machine's (the lab test's): to
# another machine they leave through its network device, where a frame
# larger than the path's MTU travels as IP fragments this capture cannot put
# together, so that is refused. Refused too: an edge with no end here (both on
# other hypervisors). Appends the spec to specs and sets a and b to the
# capture's name (a: this machine's end, inbound = to a).
cap_crossing() {
    local l=$1 first kind node ifn peer remote dev rdev
    first=$(hyp_first)
    IFS=$'\t' read -r _ kind _ node ifn peer _ _ _ remote _ _ dev _ <<<"$(awk -F'\t' -v l="$l" -v h="$first" \
        '!/^#/ && $1 == h && $3 == l' "$gen/tunnels.tsv" 2>/dev/null | head -n 1)"
    [ -n "$kind" ] ||
        die "capture: link $2-$3 crosses from hypervisor $4 to $5, neither of them $first, this machine: lab-capture records an edge at its end on this machine only"
    case $kind in
    netns) specs+=("$node-$peer:netns:$prefix-$node:$ifn") ;;
    vm) specs+=("$node-$peer:netns:-:$dev") ;;
    udp)
        rdev=$(ip -o route get "$remote" 2>/dev/null | sed -n 's/.* dev \([^ ]*\).*/\1/p') || rdev=""   # (no route: none)
        [ "$rdev" = lo ] ||
            die "capture: link $2-$3 is a QEMU UDP tunnel to $remote (hypervisor $([ "$node" = "$2" ] && echo "$5" || echo "$4"), another machine): its datagrams leave through ${rdev:-no route}, where a frame larger than the path's MTU travels as IP fragments that this capture cannot put together; capture the edges next to it, or run the lab with SWITCHES=netns (its crossing edges are VXLAN tunnels, captured at this machine's end)"
        specs+=("$2-$3:udp:$6:$7"); node=$2 peer=$3 ;;
    *) die "capture: tunnels.tsv: link $l has an end of unknown kind '$kind'" ;;
    esac
    a=$node b=$peer
}

# cmd_capture "LINK..." [SECONDS] — capture the tree edges LINK (a-b, either
# order; several separated by spaces) at once into one pcapng file, one
# interface per link named after it (udpcap: "a-b", inbound = to a). A netns
# link is captured on its namespace end, a VM's tunnel on loopback. Prints the
# file's path last on stdout; udpcap prints per link the frames captured, the
# capture's drops and the interface's own counters, and the number lost.
# Where an end of a link is a switch, its incswitch's port counters
# (switch/portstat.h) are read before udpcap starts and after it ends, and
# compared with the captured frames of the same kind: rx with the frames to
# it that pass its capture filter (SW_CAPTURE_FILTER), tx with those from it
# that pass it and come from one of its addresses; any difference is lost
# (frames in flight at the window's edges would count too: exact when the
# link is idle at both, as in the lab's tests). A port closed the whole
# window (no communicator on it) captured nothing and is not compared; one
# opened or closed in the window counts, as lost, any such frame that crossed
# it while closed.
# Exit 0 when nothing was lost; 3 (the file kept) when frames were lost.
cmd_capture() {
    need_lab
    local links=${1:-} secs=${2:-10} link a b i l row port pb specs=() names=() out w rc=0 ia ib la x sw ha hb
    local swends=() sws=() margs=() mout j lost=0
    secs_ok "$secs"
    local all; all=$(grep -v '^#' "$gen/links.tsv" | awk '{printf "%s-%s ", $2, $5}')
    [ -n "${links//[[:space:]]/}" ] || die "capture: which link? LINK='a-b ...', of: $all"
    for link in $links; do
        [[ $link =~ ^[A-Za-z0-9_.]+-[A-Za-z0-9_.]+$ ]] || die "capture: '$link' is not a link a-b; the links: $all"
        a=${link%%-*} b=${link#*-}
        row=$(awk -F'\t' -v a="$a" -v b="$b" '!/^#/ && (($2 == a && $5 == b) || ($2 == b && $5 == a))' "$gen/links.tsv")
        [ -n "$row" ] || die "capture: no link '$link' in this lab's topology; the links: $all"
        IFS=$'\t' read -r l a ia port b ib pb _ ha hb _ <<<"$row"
        la=$a
        [[ " ${names[*]} " != *" $a-$b "* ]] || die "capture: link $a-$b given twice"
        if [ -n "$ha" ] && [ "$ha" != "$hb" ]; then
            # an edge between two hypervisors (README: "Labs over several hypervisors"):
            # captured at this machine's end of its tunnel (cap_crossing sets a, b, the spec)
            cap_crossing "$l" "$a" "$b" "$ha" "$hb" "$port" "$pb"
            [[ " ${names[*]} " != *" $a-$b "* ]] || die "capture: link $a-$b given twice"
        elif [ "$port" != - ] && [ -n "$ha" ] && hyp_by_ssh "$ha"; then
            die "capture: link $a-$b is a QEMU UDP tunnel of hypervisor $ha, reached over ssh: its datagrams are on that machine's loopback, not this one's (lab-capture records on this machine only: the edges that cross to it, or any edge of the first hypervisor, $(hyp_first))"
        elif [ "$port" = - ] && [ -n "$ha" ] && hyp_by_ssh "$ha"; then
            die "capture: link $a-$b has both ends on hypervisor $ha, reached over ssh: its frames cross that machine's namespaces, not this one's (lab-capture records on this machine only: the edges that cross to it, or any edge of the first hypervisor, $(hyp_first))"
        elif [ "$port" = - ]; then
            # a veth or bridge link (netns): the namespace end's interface, both directions
            w=$(awk -F'\t' -v l="$l" '!/^#/ && $2 == l {print $3, $4, $5}' "$gen/wires.tsv")
            [ -n "$w" ] || die "capture: link '$link' is in neither links.tsv's tunnels nor wires.tsv"
            read -r a i b <<<"$w"
            specs+=("$a-$b:netns:$prefix-$a:$i")
        else
            specs+=("$a-$b:udp:$port:$pb")
        fi
        names+=("$a-$b")
        # the switches at its ends: "LINK SWITCH IFACE RX_DIR TX_DIR" (inbound = to a)
        for x in "$a" "$b"; do
            [ "$(node_role "$x")" = switch ] || continue
            if [ "$x" = "$la" ]; then i=$ia; else i=$ib; fi
            if [ "$x" = "$a" ]; then swends+=("$a-$b $x $i in out"); else swends+=("$a-$b $x $i out in"); fi
        done
    done
    # CAPTURE_DIR (default results/captures, as make lab-capture says; tests give their own)
    local dir=${CAPTURE_DIR:-$top/results/captures}
    [[ $dir =~ ^[A-Za-z0-9._/+-]+$ ]] || die "capture: CAPTURE_DIR must be a path of A-Z a-z 0-9 . _ / + -, not '$dir'"
    out=$dir/$(IFS=_; echo "${names[*]}")-$(date +%Y%m%d-%H%M%S).pcapng
    mkdir -p -- "$dir" || die "capture: cannot create '$dir'"
    local -A before after addrs
    for x in "${swends[@]}"; do
        read -r _ sw _ <<<"$x"
        [[ " ${sws[*]} " == *" $sw "* ]] && continue
        sws+=("$sw")
        if w=$(sw_ports "$sw" 2>/dev/null) && [[ $(head -n 1 <<<"$w") =~ ^addrs\ ([0-9.,]+)$ ]]; then
            addrs[$sw]=${BASH_REMATCH[1]}
            before[$sw]=$(tail -n 1 <<<"$w")
        else
            printf 'lab: capture: switch %s did not report its port counters (is incswitch running?): not compared\n' "$sw" >&2
        fi
    done
    j=0
    for x in "${swends[@]}"; do
        read -r l sw i a b <<<"$x"
        [ -n "${addrs[$sw]:-}" ] && margs+=(-m "s$j.rx:$l:$a" -m "s$j.tx:$l:$b:${addrs[$sw]}")
        j=$((j + 1))
    done
    log "capturing ${names[*]} for $secs s into $out"
    mout=$("$INCLAB_BUILD/udpcap" -s "$secs" -o "$out" "${margs[@]}" "${specs[@]}") || rc=$?
    [ "$rc" = 0 ] || [ "$rc" = 3 ] || die "capture failed (udpcap exit $rc)"
    for sw in "${sws[@]}"; do
        [ -z "${before[$sw]:-}" ] && continue
        if w=$(sw_ports "$sw" 2>/dev/null); then after[$sw]=$(tail -n 1 <<<"$w"); else
            printf 'lab: capture: switch %s did not report its port counters after the capture: not compared\n' "$sw" >&2
        fi
    done
    j=0
    for x in "${swends[@]}"; do
        read -r l sw i _ <<<"$x"
        local k=s$j r0 t0 o0 n0 r1 t1 o1 n1 crx ctx drx dtx miss extra note=""
        j=$((j + 1))
        [ -n "${after[$sw]:-}" ] || continue
        read -r r0 t0 o0 n0 < <(port_counts "${before[$sw]}" "$i")
        read -r r1 t1 o1 n1 < <(port_counts "${after[$sw]}" "$i")
        crx=$(awk -v k="$k.rx" '$1 == k {print $2}' <<<"$mout") ctx=$(awk -v k="$k.tx" '$1 == k {print $2}' <<<"$mout")
        if [ "$o0$o1" = 00 ] && [ "$n0" = "$n1" ]; then
            printf 'lab: capture: %s: switch %s port %s was closed the whole window (no communicator on it): not compared (%s frames to it, %s from it captured)\n' \
                "$l" "$sw" "$i" "${crx:-?}" "${ctx:-?}" >&2
            continue
        fi
        drx=$((r1 - r0)) dtx=$((t1 - t0))
        # a port open for part of the window only: what crossed it closed, the switch missed
        case $o0$o1/$((n1 - n0)) in
        11/0) ;;
        10/0) note=" (closed in the window)" ;;
        01/1) note=" (opened in the window)" ;;
        00/1) note=" (opened and closed in the window)" ;;
        *) note=" (opened $((n1 - n0)) times in the window, open $o1 at its end)" ;;
        esac
        # the capture missed what the switch counted beyond it, the switch what the capture saw beyond its count
        miss=$(( (drx > crx ? drx - crx : 0) + (dtx > ctx ? dtx - ctx : 0) ))
        extra=$(( (crx > drx ? crx - drx : 0) + (ctx > dtx ? ctx - dtx : 0) ))
        printf 'lab: capture: %s: switch %s port %s%s counted rx %s tx %s, captured to it %s, from it %s; lost %s (capture missed %s, switch missed %s)\n' \
            "$l" "$sw" "$i" "$note" "$drx" "$dtx" "$crx" "$ctx" "$((miss + extra))" "$miss" "$extra" >&2
        if [ $((miss + extra)) != 0 ]; then
            printf 'lab: capture: LOST %s frames on link %s against switch %s'"'"'s counters\n' "$((miss + extra))" "$l" "$sw" >&2
            lost=$((lost + miss + extra))
        fi
    done
    if [ "$rc" = 3 ] || [ "$lost" != 0 ]; then
        echo "$out"; printf 'lab: capture: frames were LOST (see above); %s is incomplete\n' "$out" >&2; exit 3
    fi
    echo "$out"
}

# ---- fault injection (test labs) ----------------------------------------------

# cmd_fault SWITCH KIND — arm fault KIND on every communicator SWITCH serves
# from now on (incswitch reads the file when rules arrive; engine.h says what
# each kind does), or disarm it with KIND off. Refused on a lab not brought up
# with INCLAB_TEST_LAB=1: its switches run without -F and read no fault file.
cmd_fault() {
    need_node "${1:-}"
    local n=$1 kind=${2:-} role LAB_TEST=0
    # shellcheck disable=SC1091
    . "$state/lab.env"
    [ "$LAB_TEST" = 1 ] || die "fault injection is for test labs only: this lab was not brought up with INCLAB_TEST_LAB=1"
    role=$(awk -F'\t' -v n="$n" '$1 == n {print $2}' "$gen/inventory.tsv")
    [ "$role" = switch ] || die "$n is a $role: faults are injected on switches"
    case $kind in
    corrupt | drop | early-barrier) nexec "$n" "mkdir -p /run/inclab && echo $kind > /run/inclab/incswitch.fault" 30 ;;
    off) nexec "$n" "rm -f /run/inclab/incswitch.fault" 30 ;;
    *) die "fault KIND must be corrupt, drop, early-barrier or off, not '$kind'" ;;
    esac || die "cannot set the fault on $n"
    log "$n: fault $kind for the communicators it serves from now on"
}

# ---- sync -------------------------------------------------------------------

# Push the payload of each node's role (binaries built since the images were
# made) and the role's service units, then restart the control plane: the
# controller first, so that the switches register with the new one. A VM gets
# only the files whose copy there differs (sync_differs: a file is about 50
# guest agent calls of 48 KiB, each a second under TCG, and more through a
# remote hypervisor's connection); each VM through its own hypervisor's
# connection. Logs per node "synced NODE (ROLE): N of M file(s) pushed".
cmd_sync() {
    need_lab
    local payload=${INCLAB_PAYLOAD:-$INCLAB_BUILD/payload} n role f l
    [ -d "$payload" ] || die "no payload in $payload: run 'make payload' first"
    for role in controller switch host; do
        for n in $(awk -F'\t' -v r="$role" '!/^#/ && $2 == r {print $1}' "$gen/inventory.tsv"); do
            if [ "$(node_kind "$n")" = netns ]; then
                # Its files anew, then the service restarted by its loop.
                ns_files "$n"
                nsrun "$n" 'kill "$(cat /run/inclab/service.pid)"' 10 < /dev/null || true
                sleep 1.5
                log "synced $n ($role, namespace)"
                continue
            fi
            # the payload's files and the role's units, each pushed only when the node's
            # copy differs (sync_differs: one agent call asks all their hashes)
            local list todo total pushed=0
            list=$(find "$payload/$role" -type f 2>/dev/null || true
                   [ ! -d "$top/images/roles/$role/etc/systemd" ] || find "$top/images/roles/$role/etc/systemd" -type f)
            total=$(grep -c . <<<"$list" || true)
            todo=$(sync_differs "$n" "$payload/$role" "$top/images/roles/$role" <<<"$list")
            while IFS= read -r f; do
                [ -n "$f" ] || continue
                case $f in
                "$payload/$role"/*) gpush "$n" "$f" "${f#"$payload/$role"}" "$(stat -c %a "$f")" >/dev/null ;;
                *) gpush "$n" "$f" "${f#"$top/images/roles/$role"}" 0644 >/dev/null ;;
                esac
                pushed=$((pushed + 1))
            done <<<"$todo"
            # its symbolic links (libinccl.so.MAJOR, libinccl.so), which gpush cannot carry: plain names only
            while IFS= read -r f; do
                l=$(readlink "$payload/$role/$f")
                [[ $f$l =~ ^[A-Za-z0-9._/+-]+$ ]] || die "sync: payload link '$f' -> '$l': not a plain name"
                gexec "$n" "ln -sfn '$l' '/$f'" 60 || die "sync: $n: cannot link /$f"
            done < <(cd "$payload/$role" 2>/dev/null && find . -type l | sed 's|^\./||')
            case $role in
            controller) gexec "$n" "systemctl daemon-reload && systemctl restart incctl.service" 60 ;;
            switch) gexec "$n" "systemctl daemon-reload && systemctl restart incswitch.service" 60 ;;
            host) gexec "$n" "ldconfig" 60 ;;
            esac || die "sync: restarting the services of $n failed"
            log "synced $n ($role): $pushed of $total file(s) pushed (the others were the payload's already)"
        done
    done
}

# sync_differs NODE ROOT... — (sync) of the files named on standard input (one
# path a line, each under one of the ROOTs, which stands for the node's /),
# those whose copy on the VM NODE is missing or differs: their sha256 here
# against the node's, asked in one guest agent call (through the node's own
# hypervisor's connection). Prints their paths; every one when the node's
# hashes cannot be read (they are pushed then, as before this check).
sync_differs() {
    local n=$1 f r rel cmd="cd / && sha256sum --" theirs line re='^([0-9a-f]{64}) [ *](.+)$'
    shift
    local -A here=() there=()
    local order=()
    while IFS= read -r f; do
        [ -n "$f" ] || continue
        rel=""
        for r in "$@"; do case $f in "$r"/*) rel=${f#"$r"/}; break ;; esac; done
        [ -n "$rel" ] || continue
        here[$rel]=$(sha256sum < "$f" | cut -d' ' -f1)
        order+=("$f|$rel")
        cmd+=" $(shq "$rel")"
    done
    [ ${#order[@]} -gt 0 ] || return 0
    # sha256sum prints "HASH  PATH" for each file it could read (a missing one only on stderr)
    theirs=$(gexec "$n" "$cmd 2>/dev/null; true" 120 2>/dev/null | tr -d '\r') || theirs=""
    [ -n "$theirs" ] || log "  $n: its files' hashes could not be read: every file is pushed"
    while IFS= read -r line; do
        if [[ $line =~ $re ]]; then there[${BASH_REMATCH[2]}]=${BASH_REMATCH[1]}; fi
    done <<<"$theirs"
    for f in "${order[@]}"; do
        rel=${f##*|}
        [ "${there[$rel]:-}" = "${here[$rel]}" ] || echo "${f%|*}"
    done
}

case "${1:-}" in
up) cmd_up ;;
sync) cmd_sync ;;
down) cmd_down ;;
daemons) [ $# = 1 ] || die "daemons takes no arguments, not '${*:2}'"; ensure_daemons ;;
stop) [ $# = 1 ] || die "stop takes no arguments (it stops the whole lab '$prefix'), not '${*:2}'"; cmd_stop ;;
status) shift; status_verb "$@" ;;
graph) cmd_graph "${2:-}" ;;
clocks) cmd_clocks "${2:-}" ;;
guest-time) need_node "${2:-}"; cmd_guest_time "$2" "${3-3}" ;;
exec) need_node "${2:-}"; [ -n "${3:-}" ] || die "exec NODE CMD"; nexec "$2" "$3" "${4:-600}" ;;
push) mode_ok "${5:-0755}"; need_node "${2:-}"; [ -n "${4:-}" ] || die "push NODE SRC DST"; npush "$2" "$3" "$4" "${5:-0755}" ;;
ssh)
    need_node "${2:-}"
    if [ -n "${3:-}" ]; then nexec "$2" "$3"
    elif [ "$(node_kind "$2")" = netns ]; then
        [ -t 0 ] || die "a shell needs a terminal; use 'make lab-ssh NODE=$2 CMD=...' from scripts"
        echo "shell in namespace $prefix-$2 (its /etc/inclab, /run/inclab, /var/log/inclab, /usr/local are the node's; leave with exit)" >&2
        nsrun "$2" 'exec bash -i' 0
    else cmd_console "$2"; fi ;;
console) cmd_console "${2:-}" ;;
capture) secs_ok "${3:-10}"; cmd_capture "${2:-}" "${3:-10}" ;;
fault) cmd_fault "${2:-}" "${3:-}" ;;
reboot) shift; cmd_reboot "$@" ;;
*) sed -n '2,/^# Every verb/p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
