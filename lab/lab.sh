#!/usr/bin/env bash
# lab.sh — lifecycle of an inclab lab on QEMU/libvirt.
#
#   lab/lab.sh up                  build/reuse images, define and boot every node, wait until ready
#   lab/lab.sh status              one line per node (libvirt state, addresses, readiness)
#   lab/lab.sh exec NODE CMD       run CMD (sh -c) on NODE through the guest agent; its exit code
#   lab/lab.sh ssh NODE [CMD]      CMD given: like exec; else the serial console
#   lab/lab.sh push NODE SRC DST   copy a file into NODE (guest agent), mode 0755
#   lab/lab.sh console NODE        serial console (root shell; leave with Ctrl-])
#   lab/lab.sh capture LINK [SEC]  pcap of the frames on tree edge LINK (e.g. sw1-pku1)
#   lab/lab.sh fault SWITCH KIND   test labs only: arm fault KIND (corrupt, drop, early-barrier) on
#                                  every communicator SWITCH serves from now on; KIND off disarms
#   lab/lab.sh sync                copy the freshly built binaries (build/payload) and service
#                                  units into the running nodes and restart the services
#   lab/lab.sh down                remove every domain, network, disk, seed and process of the lab
#
# The lab is described by $TOPOLOGY (default topology/1-2-4.yaml) and lives in
# $INCLAB_STATE (default /var/lib/inclab/$INCLAB_PREFIX). INCLAB_TEST_LAB=1 at
# lab-up makes a test lab (the lab system test's): its switches allow fault
# injection, and only such a lab accepts the fault verb. This machine never
# sends to a lab address: nodes are reached through the guest agent
# (virtio-serial) and the serial console; tree edges are UDP tunnels on
# 127.0.0.1; the management network is a bridge with no host-side address.
# Every verb is idempotent and works on a half-built lab.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
: "${TOPOLOGY:=topology/1-2-4.yaml}"
: "${INCLAB_PREFIX:=inclab}"
: "${INCLAB_STATE:=/var/lib/inclab/$INCLAB_PREFIX}"
: "${INCLAB_UDP_BASE:=47000}"
: "${INCLAB_BUILD:=$top/build}"
URI=qemu:///system
LIBVIRT_CONF=${INCLAB_LIBVIRT_CONF:-/etc/libvirt}   # where libvirtd keeps defined domains
prefix=$INCLAB_PREFIX state=$INCLAB_STATE
gen=$state/gen

log() { printf '[lab %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { printf 'lab: %s\n' "$*" >&2; exit 1; }
vsh() { virsh -q -c "$URI" "$@"; }

# ---- daemons -------------------------------------------------------------

# Start virtlogd and libvirtd when they are not running (no systemd here).
# What we start is recorded, so `down` stops exactly that.
ensure_daemons() {
    mkdir -p /run/inclab
    if ! pgrep -x virtlogd >/dev/null; then
        log "starting virtlogd"
        virtlogd --daemon || die "cannot start virtlogd"
        echo virtlogd >> /run/inclab/started-daemons
    fi
    if ! pgrep -x libvirtd >/dev/null; then
        log "starting libvirtd"
        libvirtd --daemon || die "cannot start libvirtd"
        echo libvirtd >> /run/inclab/started-daemons
    fi
    local i
    for i in $(seq 1 150); do
        virsh -c "$URI" version >/dev/null 2>&1 && return 0
        sleep 0.2
    done
    die "libvirtd does not answer on $URI (see /var/log/libvirt/)"
}

daemons_up() { pgrep -x libvirtd >/dev/null && virsh -c "$URI" version >/dev/null 2>&1; }

# accel KERNEL INITRD — the accelerator: the one of the running lab (LAB_ACCEL
# from lab.env), INCLAB_ACCEL=kvm|tcg, or KVM when /dev/kvm exists and a guest
# kernel really starts under it with the CPU the domains get (host-passthrough):
# "Linux version" on its serial console within 20 s. The probe's kernel has no
# init (rdinit=/nonexistent): it panics at once and QEMU exits (panic=-1,
# -no-reboot). A /dev/kvm that is present but cannot run a guest (seen: nested
# KVM whose guests fail on MSR 0x10a) gives TCG, not a lab that never boots.
accel() {
    local out why
    if [ -n "${LAB_ACCEL:-}" ]; then echo "$LAB_ACCEL"; return; fi
    case ${INCLAB_ACCEL:-} in kvm | tcg) echo "$INCLAB_ACCEL"; return ;; esac
    [ -e /dev/kvm ] || { echo tcg; return; }
    out=$(timeout 20 qemu-system-x86_64 -accel kvm -cpu host -m 256 -display none -nodefaults -serial stdio \
        -no-reboot -kernel "$1" -initrd "$2" -append "console=ttyS0 earlyprintk=serial,ttyS0 panic=-1 rdinit=/nonexistent" \
        < /dev/null 2>&1)
    if grep -q 'Linux version' <<<"$out"; then
        echo kvm
    else
        why=$(grep -m1 -i 'error\|fail\|could not\|cannot' <<<"$out" | cut -c1-100)
        echo "KVM: /dev/kvm is present but a guest kernel does not start under it (${why:-no console output in 20 s})" >&2
        echo tcg
    fi
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
    mkdir -p /run/inclab
    [ -s /run/inclab/kvm_mode ] || stat -c '%a %u %g' /dev/kvm > /run/inclab/kvm_mode
    if chgrp kvm /dev/kvm 2>/dev/null && chmod 660 /dev/kvm 2>/dev/null &&
        runuser -u "$qemu_user" -- test -w /dev/kvm 2>/dev/null; then
        log "/dev/kvm: $(awk '{print "mode " $1 " uid " $2 " gid " $3}' /run/inclab/kvm_mode) -> root:kvm 660 for QEMU (restored by lab-down)"
    elif [ "$1" = kvm ]; then
        die "$qemu_user cannot open /dev/kvm even as root:kvm 0660 (is it in group kvm?); INCLAB_ACCEL=tcg runs without KVM"
    else
        log "warning: $qemu_user cannot open /dev/kvm: libvirt will probe QEMU on every call (slow lab-up)"
    fi
}

# ---- guest agent command runner -------------------------------------------

# An agent that is connected but not yet running makes a call wait its whole
# timeout: readiness polls use a short one (QGA_TIMEOUT=3).
qga() { vsh qemu-agent-command --timeout "${2:-${QGA_TIMEOUT:-10}}" "$dom" "$1" 2>&1; }

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
    gexec "$1" "chmod $mode '$dst.inclab-tmp' && mv '$dst.inclab-tmp' '$dst'" 30
}

# gexec NODE CMD [TIMEOUT_S] — run CMD under /bin/sh -c on NODE and wait for it.
gexec() {
    local pid
    pid=$(gspawn "$1" "$2") || return 125
    gwait "$1" "$pid" "${3:-600}"
}

# ---- inventory ------------------------------------------------------------

nodes() { grep -v '^#' "$gen/inventory.tsv" | cut -f1; }
need_lab() { [ -e "$gen/inventory.tsv" ] || die "no lab in $state: run 'make lab-up' first"; }
need_node() {
    need_lab
    [ -n "${1:-}" ] || die "which node? NODE=<name>, one of: $(nodes | tr '\n' ' ')"
    grep -qx "$1" <<<"$(nodes)" || die "no node '$1' in this lab; nodes: $(nodes | tr '\n' ' ')"
}
dom_state() { vsh domstate "$prefix-$1" 2>/dev/null | head -n 1 || echo absent; }

# ---- up ---------------------------------------------------------------------

cmd_up() {
    local t0=$SECONDS acc topo_hash roles image LAB_ACCEL="" test_lab=0
    case ${INCLAB_ACCEL:-} in kvm | tcg | "") ;; *) die "INCLAB_ACCEL must be kvm or tcg, not '$INCLAB_ACCEL'" ;; esac
    case ${INCLAB_TEST_LAB:-0} in 0 | "") ;; 1) test_lab=1 ;; *) die "INCLAB_TEST_LAB must be 0 or 1, not '$INCLAB_TEST_LAB'" ;; esac
    [ -r "$TOPOLOGY" ] || die "topology file '$TOPOLOGY' not found"
    "$INCLAB_BUILD/topogen" --check "$TOPOLOGY" >/dev/null || die "invalid topology '$TOPOLOGY' (see above)"
    topo_hash=$(sha256sum < "$TOPOLOGY" | cut -c1-16)
    if [ -e "$state/lab.env" ]; then
        # shellcheck disable=SC1091
        local LAB_TOPOLOGY="" LAB_HASH=""; . "$state/lab.env"
        [ "$LAB_HASH" = "$topo_hash" ] ||
            die "a lab of '$LAB_TOPOLOGY' (other contents) is in $state: 'make lab-down' first"
        [ -z "${INCLAB_ACCEL:-}" ] || [ -z "$LAB_ACCEL" ] || [ "$INCLAB_ACCEL" = "$LAB_ACCEL" ] ||
            die "the lab in $state runs under $LAB_ACCEL: 'make lab-down' before INCLAB_ACCEL=$INCLAB_ACCEL"
        [ "${LAB_TEST:-0}" = "$test_lab" ] ||
            die "the lab in $state $([ "${LAB_TEST:-0}" = 1 ] && echo is || echo 'is not') a test lab: 'make lab-down' before INCLAB_TEST_LAB=$test_lab"
    fi

    log "images (cached in ${INCLAB_CACHE:-/var/cache/inclab}/images)"
    roles=$("$top/images/build.sh" --print ${INCLAB_PAYLOAD:+--payload "$INCLAB_PAYLOAD"}) || die "image build failed"
    image=$(awk 'NR == 1 {print $2}' <<<"$roles")
    acc=$(accel "$image/vmlinuz" "$image/initrd.img" 2> >(while read -r l; do log "$l"; done))
    if [ "$acc" = kvm ]; then log "accelerator: KVM (/dev/kvm)"; else log "accelerator: TCG (no usable /dev/kvm: software emulation, slow)"; fi
    [ -e /dev/kvm ] && kvm_access "$acc"
    ensure_daemons
    mkdir -p "$state"/{disks,seeds,console}
    chmod 755 "$state" /var/lib/inclab 2>/dev/null || true
    "$INCLAB_BUILD/topogen" -o "$gen.new" --prefix "$prefix" --state-dir "$state" --accel "$acc" \
        --udp-base "$INCLAB_UDP_BASE" $([ "$test_lab" = 1 ] && echo --test-lab) $(awk '{printf "--image %s=%s ", $1, $2}' <<<"$roles") "$TOPOLOGY" ||
        die "topogen failed"
    rm -rf "$gen"; mv "$gen.new" "$gen"
    { echo "LAB_TOPOLOGY=$TOPOLOGY"; echo "LAB_HASH=$topo_hash"; echo "LAB_ACCEL=$acc"
      echo "LAB_ROLES=\"$(tr '\n' ' ' <<<"$roles")\""; echo "LAB_TEST=$test_lab"; } > "$state/lab.env"

    if ! vsh net-info "$prefix-mgmt" >/dev/null 2>&1; then
        vsh net-define "$gen/network-mgmt.xml" >/dev/null
    fi
    # (no `| grep -q` under pipefail: grep's early exit would fail the pipeline)
    local netinfo; netinfo=$(vsh net-info "$prefix-mgmt" 2>/dev/null || true)
    if ! grep -q '^Active:.*yes' <<<"$netinfo"; then
        vsh net-start "$prefix-mgmt" >/dev/null
        log "management network $prefix-mgmt started (bridge without host address)"
    fi
    # No IPv6 on the host side of the bridge either: the machine stays silent on the lab.
    sysctl -q -w "net.ipv6.conf.$prefix-mgmt.disable_ipv6=1" 2>/dev/null || true

    tune_host
    local n role image started=0
    for n in $(nodes); do
        [ "$(dom_state "$n")" = running ] && continue
        role=$(awk -v n="$n" '$1 == n {print $2}' "$gen/inventory.tsv")
        image=$(awk -v r="$role" '$1 == r {print $2}' <<<"$roles")
        # A domain defined by an earlier lab whose state directory is gone
        # (lab-down while libvirtd was not running, a crash) is defined anew.
        if ! [ -e "$state/seeds/$n.iso" ] || ! [ -e "$state/disks/$n.qcow2" ]; then
            vsh undefine "$prefix-$n" >/dev/null 2>&1 || true
        fi
        if ! vsh dominfo "$prefix-$n" >/dev/null 2>&1; then
            check_ports "$n"
            rm -f "$state/disks/$n.qcow2"
            qemu-img create -q -f qcow2 -F qcow2 -b "$image/disk.qcow2" "$state/disks/$n.qcow2"
            cloud-localds -N "$gen/seeds/$n/network-config" "$state/seeds/$n.iso" \
                "$gen/seeds/$n/user-data" "$gen/seeds/$n/meta-data"
            vsh define "$gen/domains/$n.xml" >/dev/null
        fi
        vsh start "$prefix-$n" >/dev/null || die "cannot start $n (console log: $state/console/$n.log)"
        started=$((started + 1))
    done
    if [ $started -eq 0 ]; then log "every node already running"; else log "started $started node(s)"; fi
    wait_ready || { cmd_status; die "lab not ready; inspect with 'make lab-console NODE=...' or $state/console/, then 'make lab-down'"; }
    log "lab '$TOPOLOGY' ready in $((SECONDS - t0)) s"
    cmd_status
}

# QEMU's UDP tunnel sockets take the default receive buffer (208 KiB, about 90
# frames): under TCG a VM that is not scheduled for a moment overflows it and
# RDMA falls into retransmission timeouts. Raise the default before QEMU opens
# its sockets; `down` restores the value found here.
tune_host() {
    local want=4194304 cur
    cur=$(sysctl -n net.core.rmem_default)
    if [ "$cur" -lt "$want" ]; then
        mkdir -p /run/inclab
        [ -e /run/inclab/rmem_default ] || echo "$cur" > /run/inclab/rmem_default
        sysctl -q -w net.core.rmem_default=$want
        [ "$(sysctl -n net.core.rmem_max)" -ge $want ] || {
            [ -e /run/inclab/rmem_max ] || sysctl -n net.core.rmem_max > /run/inclab/rmem_max
            sysctl -q -w net.core.rmem_max=$want; }
        log "net.core.rmem_default $cur -> $want for the tunnel sockets (restored by lab-down)"
    fi
}

restore_host() {
    local k
    if [ -e /run/inclab/kvm_mode ]; then
        if read -r mode uid gid < /run/inclab/kvm_mode && chown "$uid:$gid" /dev/kvm 2>/dev/null &&
            chmod "$mode" /dev/kvm 2>/dev/null; then :
        else
            log "could not restore /dev/kvm to '$(cat /run/inclab/kvm_mode)' (mode uid gid)"
        fi
        rm -f /run/inclab/kvm_mode
    fi
    for k in rmem_default rmem_max; do
        if [ -e /run/inclab/$k ]; then
            sysctl -q -w "net.core.$k=$(cat /run/inclab/$k)" && rm -f /run/inclab/$k
        fi
    done
}

# Refuse to start a node whose loopback UDP ports are taken by someone else.
check_ports() {
    local port
    for port in $(awk -v n="$1" '$2 == n {print $4} $5 == n {print $7}' "$gen/links.tsv"); do
        if [ -n "$(ss -Hulna "sport = :$port")" ]; then
            die "loopback UDP port $port (for node $1) is in use: set INCLAB_UDP_BASE to a free range"
        fi
    done
}

# Poll every node's inclab-ready until all pass; show progress.
wait_ready() {
    local limit=${INCLAB_BOOT_TIMEOUT:-1500} t0=$SECONDS last=-100 n line ready pending
    [ "${acc:-tcg}" = kvm ] && limit=${INCLAB_BOOT_TIMEOUT:-300}
    declare -A done_at=()
    log "waiting for $(nodes | wc -l) nodes to be ready (limit ${limit} s)"
    while :; do
        pending=""
        for n in $(nodes); do
            [ -n "${done_at[$n]:-}" ] && continue
            if line=$(QGA_TIMEOUT=3 gexec "$n" /usr/local/sbin/inclab-ready 20 2>/dev/null); then
                done_at[$n]=$((SECONDS - t0))
                log "  $n ready after ${done_at[$n]} s: $line"
            else
                pending="$pending $n"
            fi
        done
        [ -z "$pending" ] && return 0
        if [ $((SECONDS - t0)) -ge "$limit" ]; then
            log "timeout after ${limit} s; not ready:$pending"
            for n in $pending; do
                line=$(gexec "$n" /usr/local/sbin/inclab-ready 20 2>&1 || true)
                log "  $n: ${line:-guest agent not answering} (last console lines below)"
                tail -n 5 "$state/console/$n.log" 2>/dev/null | sed 's/^/      /' >&2 || true
            done
            return 1
        fi
        if [ $((SECONDS - last)) -ge 30 ]; then
            log "  ... $((SECONDS - t0)) s: ${#done_at[@]}/$(nodes | wc -l) ready; waiting for:$pending"
            last=$SECONDS
        fi
        sleep 3
    done
}

# ---- status -----------------------------------------------------------------

cmd_status() {
    if [ ! -e "$gen/inventory.tsv" ]; then
        echo "no lab (state directory $state is empty)"
        local left; left=$(daemons_up && vsh list --all --name | grep "^$prefix-" || true)
        [ -z "$left" ] || echo "but libvirt still has: $left (make lab-down removes them)"
        return 0
    fi
    # shellcheck disable=SC1091
    . "$state/lab.env"
    echo "lab: $LAB_TOPOLOGY, accelerator $LAB_ACCEL, state in $state"
    printf '%-11s %-10s %-4s %-8s %-15s %-16s %s\n' NODE ROLE RANK STATE MGMT DATA READY
    local n role rank mgmt dif daddr st r
    while IFS=$'\t' read -r n role rank mgmt dif daddr _; do
        st=$(daemons_up && dom_state "$n" || echo "no-libvirtd")
        r="-"
        if [ "$st" = running ]; then r=$(gexec "$n" /usr/local/sbin/inclab-ready 20 2>/dev/null || true); fi
        [ "$rank" = -1 ] && rank=-
        printf '%-11s %-10s %-4s %-8s %-15s %-16s %s\n' "$n" "$role" "$rank" "$st" "$mgmt" "$daddr" "${r:--}"
    done < <(grep -v '^#' "$gen/inventory.tsv")
}

# ---- down -------------------------------------------------------------------

cmd_down() {
    local d pids removed=0
    # Domains and the network are defined persistently: if libvirtd is not
    # running (the machine restarted, a crash) start it to remove them, or the
    # next lab-up would find domains whose disks and seeds are gone.
    if compgen -G "$LIBVIRT_CONF/qemu/$prefix-*.xml" >/dev/null ||
       [ -e "$LIBVIRT_CONF/qemu/networks/$prefix-mgmt.xml" ]; then
        daemons_up || ensure_daemons
    fi
    if daemons_up; then
        for d in $(vsh list --all --name | grep "^$prefix-" || true); do
            vsh destroy "$d" >/dev/null 2>&1 || true
            vsh undefine "$d" >/dev/null 2>&1 || true
            removed=$((removed + 1))
        done
        if vsh net-info "$prefix-mgmt" >/dev/null 2>&1; then
            vsh net-destroy "$prefix-mgmt" >/dev/null 2>&1 || true
            vsh net-undefine "$prefix-mgmt" >/dev/null 2>&1 || true
            log "removed network $prefix-mgmt"
        fi
    fi
    # QEMU processes that outlived their libvirtd (crash, kill -9).
    pids=$(pgrep -f "qemu-system.*guest=$prefix-" || true)
    if [ -n "$pids" ]; then
        log "killing leftover QEMU processes: $pids"
        kill $pids 2>/dev/null || true; sleep 1; kill -9 $pids 2>/dev/null || true
    fi
    if ip link show "$prefix-mgmt" >/dev/null 2>&1; then ip link del "$prefix-mgmt" || true; fi
    rm -rf "$state"
    restore_host
    if [ -e /run/inclab/started-daemons ]; then
        for d in $(sort -u /run/inclab/started-daemons); do
            pkill -x "$d" || true
            for _ in $(seq 1 100); do pgrep -x "$d" >/dev/null || break; sleep 0.1; done
            pgrep -x "$d" >/dev/null && pkill -9 -x "$d"
        done
        rm -f /run/inclab/started-daemons
        log "stopped the daemons lab-up had started"
    fi
    log "lab down ($removed domain(s) removed)"
}

# ---- console, capture -----------------------------------------------------------

cmd_console() {
    need_node "${1:-}"
    [ -t 0 ] || die "the console needs a terminal; use 'make lab-ssh NODE=$1 CMD=...' from scripts"
    echo "console of $1 (root shell; leave with Ctrl-])" >&2
    exec virsh -c "$URI" console "$prefix-$1"
}

cmd_capture() {
    need_lab
    local link=${1:-} secs=${2:-10} a b row port out
    [ -n "$link" ] || die "which link? LINK=a-b, one of: $(grep -v '^#' "$gen/links.tsv" | awk '{printf "%s-%s ", $2, $5}')"
    a=${link%%-*} b=${link#*-}
    row=$(awk -v a="$a" -v b="$b" '($2 == a && $5 == b) || ($2 == b && $5 == a)' "$gen/links.tsv")
    [ -n "$row" ] || die "no link '$link' in this lab"
    port=$(cut -f4 <<<"$row")
    out=$top/results/captures/$link-$(date +%Y%m%d-%H%M%S).pcap
    mkdir -p "$(dirname "$out")"
    log "capturing link $link for $secs s (loopback UDP tunnel port $port/$((port + 1)))"
    "$INCLAB_BUILD/udpcap" -p "$port" -s "$secs" -o "$out" || die "capture failed"
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
    corrupt | drop | early-barrier) gexec "$n" "mkdir -p /run/inclab && echo $kind > /run/inclab/incswitch.fault" 30 ;;
    off) gexec "$n" "rm -f /run/inclab/incswitch.fault" 30 ;;
    *) die "fault KIND must be corrupt, drop, early-barrier or off, not '$kind'" ;;
    esac || die "cannot set the fault on $n"
    log "$n: fault $kind for the communicators it serves from now on"
}

# ---- sync -------------------------------------------------------------------

# Push the payload of each node's role (binaries built since the images were
# made) and the role's service units, then restart the control plane: the
# controller first, so that the switches register with the new one.
cmd_sync() {
    need_lab
    local payload=${INCLAB_PAYLOAD:-$INCLAB_BUILD/payload} n role f
    [ -d "$payload" ] || die "no payload in $payload: run 'make payload' first"
    for role in controller switch host; do
        for n in $(awk -F'\t' -v r="$role" '!/^#/ && $2 == r {print $1}' "$gen/inventory.tsv"); do
            while IFS= read -r f; do
                gpush "$n" "$payload/$role/$f" "/$f" "$(stat -c %a "$payload/$role/$f")" >/dev/null
            done < <(cd "$payload/$role" 2>/dev/null && find . -type f | sed 's|^\./||')
            while IFS= read -r f; do
                gpush "$n" "$top/images/roles/$role/$f" "/$f" 0644 >/dev/null
            done < <(cd "$top/images/roles/$role" && find . -type f -path './etc/systemd/*' | sed 's|^\./||')
            case $role in
            controller) gexec "$n" "systemctl daemon-reload && systemctl restart incctl.service" 60 ;;
            switch) gexec "$n" "systemctl daemon-reload && systemctl restart incswitch.service" 60 ;;
            host) gexec "$n" "ldconfig" 60 ;;
            esac || die "sync: restarting the services of $n failed"
            log "synced $n ($role)"
        done
    done
}

case "${1:-}" in
up) cmd_up ;;
sync) cmd_sync ;;
down) cmd_down ;;
status) cmd_status ;;
exec) need_node "${2:-}"; [ -n "${3:-}" ] || die "exec NODE CMD"; gexec "$2" "$3" "${4:-600}" ;;
push) need_node "${2:-}"; [ -n "${4:-}" ] || die "push NODE SRC DST"; gpush "$2" "$3" "$4" "${5:-0755}" ;;
ssh) need_node "${2:-}"; if [ -n "${3:-}" ]; then gexec "$2" "$3"; else cmd_console "$2"; fi ;;
console) cmd_console "${2:-}" ;;
capture) cmd_capture "${2:-}" "${3:-}" ;;
fault) cmd_fault "${2:-}" "${3:-}" ;;
*) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
