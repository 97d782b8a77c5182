#!/usr/bin/env bash
# nsnode.sh — the namespace nodes (SWITCHES=netns) of one hypervisor reached
# over ssh (README: "Labs over several hypervisors"), on the machine it runs on:
#
#   nsnode.sh VERB ROOT PREFIX HYPERVISOR [ARG...]
#
# lab.sh (ns_remote) sends it over ssh in a tar on standard input, with what
# the verb needs next to it in the same directory ($d): wires.tsv (the
# hypervisor's lines of topogen's wires.tsv), files/ and SHA256SUMS. ROOT is
# the lab's directory on that machine (nodes/NODE/root: what $state/nodes/NODE/root
# is to a node on the first hypervisor). It must run as root. Verbs:
#   exists NODE...     "exists NAME" for each namespace PREFIX-NODE and each
#                      device of wires.tsv that exists (lab.sh refuses those
#                      it did not make); makes nothing
#   wire NODE...       the namespaces PREFIX-NODE and the devices of wires.tsv
#                      that are missing, ROOT and the mount points of the
#                      nodes' directories; each printed before it is made:
#                      "dir ROOT", "netns NAME", "link NAME" (lab.sh's made)
#   files NODE         files/ (checked against SHA256SUMS first) installed into
#                      ROOT/nodes/NODE/root, each by rename
#   service NODE ARGV...  unless NODE's service loop runs: ARGV (lab.sh's
#                      ns_argv of the loop) started detached (setsid), waits
#                      until its service.pid is written (5 s)
#   state NODE         "absent" (no namespace), "loop" (its service loop
#                      runs) or "noloop"
#   stop NODE          every process of its namespace ended, its run/inclab emptied
#   bootid NODE        its run/inclab/boot-id; newboot NODE writes a new one
#   down NETNS...      those namespaces removed after their processes:
#                      "removed NAME" or "left NAME" for each that existed
#   rmroot             ROOT removed, and the mount points wire made when no
#                      namespace is left on the machine
# Every argument and line is checked against lab.sh's grammar before a
# command runs: it runs as root on a machine of its own. Exit 0, or 1 with a
# message.
set -euo pipefail
die() { printf 'nsnode: %s\n' "$*" >&2; exit 1; }
d=$(cd "$(dirname "$0")" && pwd)
verb=${1:-} root=${2:-} prefix=${3:-} hyp=${4:-}
[ $# -ge 4 ] || die "usage: nsnode.sh VERB ROOT PREFIX HYPERVISOR [ARG...]"
shift 4
[ "$(id -u)" = 0 ] || die "must run as root (it makes namespaces and network devices)"
word='^[a-z][a-z0-9]*(-[a-z0-9]+)*$'
[[ $prefix =~ $word && ${#prefix} -le 32 ]] || die "PREFIX must be a lab prefix, not '$prefix'"
[[ $hyp =~ $word && ${#hyp} -le 12 ]] || die "HYPERVISOR must be a name of a-z, 0-9 and single '-', not '$hyp'"
[[ $root =~ ^(/[A-Za-z0-9_+][A-Za-z0-9._+-]*)+$ && $root != */../* && $root != */./* && $root != */.. && ${#root} -le 160 ]] ||
    die "ROOT must be an absolute path of A-Z a-z 0-9 . _ + -, not '$root'"
[ "${root##*/}" = "$prefix.$hyp" ] || die "ROOT must end in the lab's own directory $prefix.$hyp, not '$root'"
node_ok() { [[ $1 =~ ^[A-Za-z0-9_.-]{1,64}$ && $1 != . && $1 != .. ]] || die "'$1' is not a node name"; }
dev_ok() { [[ $1 =~ ^[a-z0-9][a-z0-9-]{0,14}$ ]]; }
ns_exists() { ip netns list 2>/dev/null | awk -v n="$1" '$1 == n {f = 1} END {exit !f}'; }
exists() { ip link show dev "$1" >/dev/null 2>&1; }
# the wiring, lab.sh's own (nswire.sh, shipped beside this script): each thing printed before it is made
# shellcheck source=lab/nswire.sh
. "$d/nswire.sh"
nsw_made() { echo "$1 $2"; }

# wires — the lines of $d/wires.tsv of this hypervisor, checked: "KIND NA IA NB IB MTU BR VETH TAP"
wires() {
    local n=0 kind na ia nb ib mtu br veth tap h rest
    while IFS=$'\t' read -r kind _ na ia nb ib mtu br veth tap h rest; do
        n=$((n + 1))
        [[ $kind = \#* ]] && continue
        [ "$h" = "$hyp" ] && [ -z "${rest:-}" ] || die "wires.tsv:$n: not a line of 11 fields of hypervisor $hyp"
        case $kind in mgmt | veth | bridge) ;; *) die "wires.tsv:$n: unknown kind '$kind'" ;; esac
        node_ok "$na"; dev_ok "$ia" || die "wires.tsv:$n: '$ia' is not a device name"
        [[ $mtu =~ ^[0-9]{2,4}$ ]] && [ "$mtu" -ge 68 ] && [ "$mtu" -le 9000 ] || die "wires.tsv:$n: MTU must be in 68..9000"
        case $kind in
        veth) node_ok "$nb"; dev_ok "$ib" || die "wires.tsv:$n: '$ib' is not a device name" ;;
        mgmt) dev_ok "$br" && dev_ok "$veth" || die "wires.tsv:$n: BRIDGE and VETH must be device names" ;;
        bridge) dev_ok "$br" && dev_ok "$veth" && dev_ok "$tap" || die "wires.tsv:$n: BRIDGE, VETH and TAP must be device names" ;;
        esac
        echo "$kind $na $ia $nb $ib $mtu $br $veth $tap"
    done < "$d/wires.tsv"
}

case $verb in
exists)
    for n in "$@"; do node_ok "$n"; ! ns_exists "$prefix-$n" || echo "exists $prefix-$n"; done
    wires | while read -r kind _ _ _ _ _ br veth tap; do
        for x in $([ "$kind" = veth ] || echo "$veth") $([ "$kind" = bridge ] && echo "$br $tap"); do
            ! exists "$x" || echo "exists $x"
        done
    done
    ;;
wire)
    lines=$(wires)
    if [ ! -d "$root" ]; then echo "dir $root"; mkdir -p "$root/nodes"; fi
    nsw_mountpoints "$root/made-mountpoints"
    for n in "$@"; do
        node_ok "$n"
        ns_exists "$prefix-$n" || nsw_netns "$prefix-$n"
    done
    nsw_wire "$prefix" <<<"$lines"
    ;;
files)
    [ $# = 1 ] || die "usage: files NODE"
    node_ok "$1"
    (cd "$d/files" && sha256sum -c --quiet --strict ../SHA256SUMS) || die "$1: the files arrived with other sha256 sums than sent"
    r=$root/nodes/$1/root
    for x in $NS_DIRS; do mkdir -p "$r/$x"; done
    while read -r _ f; do
        f=${f#\*}
        case $f in etc/inclab/* | usr/local/bin/* | usr/local/sbin/*) ;; *) die "$1: '$f' is not a file of its directories" ;; esac
        case $f in *..* | */*/*/*/*) die "$1: '$f' is not a file of its directories" ;; esac
        t=$r/${f%/*}/.${f##*/}.new
        cp -p "$d/files/$f" "$t" && mv -f "$t" "$r/$f" || die "$1: cannot install $f"
    done < "$d/SHA256SUMS"
    echo "installed $(wc -l < "$d/SHA256SUMS") file(s) into $r (sha256 as sent)"
    ;;
service)
    [ $# -ge 2 ] || die "usage: service NODE ARGV..."
    node_ok "$1"
    r=$root/nodes/$1/root n=$1
    shift
    [ "$1 $2 $3" = "ip netns exec" ] && [ "${4:-}" = "$prefix-$n" ] || die "$n: the service's command line is not one of its namespace"
    f=$r/run/inclab/service-loop.pid
    if [ -s "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null; then exit 0; fi
    rm -f "$r/run/inclab/service.pid"
    setsid -f "$@" > /dev/null 2>&1 < /dev/null
    for _ in $(seq 1 50); do [ -s "$r/run/inclab/service.pid" ] && exit 0; sleep 0.1; done
    die "$n: its service did not start (see $r/var/log/inclab/ on hypervisor $hyp)"
    ;;
state)
    [ $# = 1 ] || die "usage: state NODE"; node_ok "$1"
    f=$root/nodes/$1/root/run/inclab/service-loop.pid
    if ! ns_exists "$prefix-$1"; then echo absent
    elif [ -s "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null; then echo loop
    else echo noloop; fi
    ;;
stop)
    [ $# = 1 ] || die "usage: stop NODE"; node_ok "$1"
    if ns_exists "$prefix-$1"; then
        pids=$(ip netns pids "$prefix-$1" 2>/dev/null | tr '\n' ' ') || true
        if [ -n "${pids// /}" ]; then
            kill $pids 2>/dev/null || true
            for _ in $(seq 1 30); do
                pids=$(ip netns pids "$prefix-$1" 2>/dev/null | tr '\n' ' ') || true
                [ -n "${pids// /}" ] || break
                sleep 0.1
            done
            [ -z "${pids// /}" ] || kill -9 $pids 2>/dev/null || true
        fi
    fi
    [ ! -d "$root/nodes/$1/root/run/inclab" ] || find "$root/nodes/$1/root/run/inclab" -mindepth 1 -delete
    ;;
bootid)
    [ $# = 1 ] || die "usage: bootid NODE"; node_ok "$1"
    cat "$root/nodes/$1/root/run/inclab/boot-id" 2>/dev/null || true
    ;;
newboot)
    [ $# = 1 ] || die "usage: newboot NODE"; node_ok "$1"
    cat /proc/sys/kernel/random/uuid > "$root/nodes/$1/root/run/inclab/boot-id"
    ;;
down)
    for ns in "$@"; do
        [[ $ns == "$prefix"-* ]] || die "'$ns' is not a namespace of lab $prefix"
        node_ok "${ns#"$prefix"-}"
        ns_exists "$ns" || continue
        bash "$0" stop "$root" "$prefix" "$hyp" "${ns#"$prefix"-}" 2>/dev/null || true
        ip netns del "$ns" 2>/dev/null || true
        if ns_exists "$ns"; then echo "left $ns"; else echo "removed $ns"; fi
    done
    ;;
rmroot)
    [ -d "$root" ] || exit 0
    [ -n "$(ip netns list 2>/dev/null)" ] || nsw_unmountpoints "$root/made-mountpoints"
    rm -rf --one-file-system -- "$root"
    [ ! -e "$root" ] || die "could not remove $root"
    echo "removed $root"
    ;;
*) die "unknown verb '$verb'" ;;
esac
