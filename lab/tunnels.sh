#!/usr/bin/env bash
# tunnels.sh — one hypervisor's ends of a lab's tunnels between machines
# (README: "Labs over several hypervisors"), made or removed on the machine
# it runs on, from topogen's tunnels.tsv:
#
#   lab/tunnels.sh up   TUNNELS.tsv HYPERVISOR PREFIX
#   lab/tunnels.sh down TUNNELS.tsv HYPERVISOR
#   lab/tunnels.sh exists TUNNELS.tsv HYPERVISOR
#
# lab.sh runs it here for the first hypervisor, and on the machine of any
# other reached by qemu+ssh:// over ssh (the script on standard input, the
# hypervisor's lines as base64: lab.sh tun_remote). It must run as root.
# up makes, for each line of HYPERVISOR:
#   mgmt   a VXLAN device on the hypervisor's management bridge (which its
#          libvirt network made: it must exist)
#   netns  the link's bridge, a VXLAN device on it and a veth from it into
#          namespace PREFIX-NODE (which must exist), named IF there, up
#   vm     the link's bridge and a VXLAN device on it (the VM's tap joins it
#          when libvirt starts the VM)
#   udp    nothing (QEMU's own socket): the port is checked free first
# A VXLAN device (no learning) listens on LPORT of LOCAL and sends every
# frame to RPORT of REMOTE (one default forwarding entry). Every device is
# made without an address and without IPv6, as the lab's other bridges; what
# exists already is kept (idempotent). Each device it makes is printed first
# as "link NAME" (lab.sh's made list: lab-down removes it also after a failed
# lab-up). down removes the lines' devices that exist (VXLAN, veth, bridge;
# never a management bridge, libvirt's). exists prints "exists NAME" for each
# device of the lines that exists (lab.sh refuses those it did not make) and
# makes nothing.
#
# Every field is checked against topogen's grammar before any command runs:
# the script may run as root on a machine of its own, and the file comes
# from it. Exit 0, or 1 with a message naming the line.
set -euo pipefail
die() { printf 'tunnels: %s\n' "$*" >&2; exit 1; }
verb=${1:-} file=${2:-} hyp=${3:-} prefix=${4:-}
case $verb in
up) [ $# = 4 ] || die "usage: tunnels.sh up TUNNELS.tsv HYPERVISOR PREFIX" ;;
down | exists) [ $# = 3 ] || die "usage: tunnels.sh $verb TUNNELS.tsv HYPERVISOR" ;;
*) die "usage: tunnels.sh up|down|exists TUNNELS.tsv HYPERVISOR [PREFIX]" ;;
esac
[ "$(id -u)" = 0 ] || die "must run as root (it makes and removes network devices)"
[ -r "$file" ] || die "cannot read '$file'"
word='^[a-z][a-z0-9]*(-[a-z0-9]+)*$'
[[ $hyp =~ $word && ${#hyp} -le 12 ]] || die "HYPERVISOR must be a name of a-z, 0-9 and single '-', not '$hyp'"
[ "$verb" != up ] || [[ $prefix =~ $word && ${#prefix} -le 32 ]] || die "PREFIX must be a lab prefix, not '$prefix'"

dev_ok() { [[ $1 =~ ^[a-z0-9][a-z0-9-]{0,14}$ ]]; }          # a device name: IFNAMSIZ - 1
ip_ok() { [[ $1 =~ ^([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})$ ]] &&
    [ "${BASH_REMATCH[1]}" -le 255 ] && [ "${BASH_REMATCH[2]}" -le 255 ] && [ "${BASH_REMATCH[3]}" -le 255 ] && [ "${BASH_REMATCH[4]}" -le 255 ]; }
num_ok() { [[ $1 =~ ^[0-9]{1,8}$ ]] && [ "$1" -ge "$2" ] && [ "$1" -le "$3" ]; }
exists() { ip link show dev "$1" >/dev/null 2>&1; }
quiet() { sysctl -q -w "net.ipv6.conf.$1.disable_ipv6=1" >/dev/null 2>&1 || true; }

# vxlan DEV BRIDGE VNI LOCAL LPORT REMOTE RPORT MTU — the VXLAN device on BRIDGE, sending to REMOTE:RPORT
vxlan() {
    if ! exists "$1"; then
        echo "link $1"
        ip link add "$1" mtu "$8" type vxlan id "$3" local "$4" dstport "$5" nolearning
        bridge fdb append 00:00:00:00:00:00 dev "$1" dst "$6" port "$7" self permanent
    fi
    quiet "$1"
    ip link set "$1" master "$2" mtu "$8" up
}

# bridge_up BR — the link's bridge, no address, no IPv6, no STP
bridge_up() {
    if ! exists "$1"; then
        echo "link $1"
        ip link add "$1" type bridge stp_state 0 forward_delay 0
    fi
    quiet "$1"
    ip link set "$1" up
}

n=0 lines=()
# (the link, peer, peer's hypervisor and tap are for the lab's other tools)
while IFS=$'\t' read -r h kind _ node ifname _ _ local lport remote rport vni dev br veth _ mtu rest; do
    n=$((n + 1))
    [[ $h = \#* ]] && continue
    [ "$h" = "$hyp" ] || continue
    where="$file:$n"
    [ -z "${rest:-}" ] && [ -n "${mtu:-}" ] || die "$where: not 17 tab-separated fields"
    case $kind in mgmt | udp | netns | vm) ;; *) die "$where: unknown kind '$kind'" ;; esac
    { [[ $node =~ $word ]] && [[ $ifname =~ ^to-[a-z0-9-]{1,12}$ ]]; } || { [ "$kind" = mgmt ] && [ "$node$ifname" = -- ]; } ||
        die "$where: NODE and IF must be a node name and to-PEER (- and - for the management network)"
    ip_ok "$local" && ip_ok "$remote" || die "$where: LOCAL and REMOTE must be IPv4 addresses"
    num_ok "$lport" 1024 65535 && num_ok "$rport" 1024 65535 || die "$where: LPORT and RPORT must be ports in 1024..65535"
    num_ok "$mtu" 68 9000 || die "$where: MTU must be in 68..9000"
    if [ "$kind" != udp ]; then
        num_ok "$vni" 1 16777215 && dev_ok "$dev" && dev_ok "$br" || die "$where: VNI, DEVICE and BRIDGE must be a VNI and device names"
    fi
    if [ "$kind" = netns ]; then
        dev_ok "$veth" || die "$where: VETH must be a device name"
    fi
    # a VM's UDP tunnel: QEMU binds the port when the VM starts; held now by anything else, that
    # start would fail later: refused here, before anything is made
    [ "$verb" != up ] || [ "$kind" != udp ] || [ -z "$(ss -Hulna "sport = :$lport")" ] ||
        die "$where: UDP port $lport (tunnel of $node's $ifname) is taken on this machine"
    lines+=("$kind $lport $remote $rport ${vni:--} $dev $br ${veth:--} $node $ifname $local $mtu")
done < "$file"

for l in "${lines[@]}"; do
    read -r kind lport remote rport vni dev br veth node ifname local mtu <<<"$l"
    if [ "$verb" = exists ]; then
        [ "$kind" = udp ] && continue
        for d in "$dev" $([ "$kind" = mgmt ] || echo "$br") $([ "$kind" = netns ] && echo "$veth"); do
            ! exists "$d" || echo "exists $d"
        done
        continue
    fi
    if [ "$verb" = down ]; then
        [ "$kind" = udp ] && continue
        for d in "$dev" $([ "$kind" = netns ] && echo "$veth"); do exists "$d" && ip link del "$d"; done
        [ "$kind" = mgmt ] || ! exists "$br" || ip link del "$br"
        continue
    fi
    case $kind in
    udp) ;; # checked above
    mgmt)
        exists "$br" || die "management bridge $br is missing (its libvirt network must be started first)"
        vxlan "$dev" "$br" "$vni" "$local" "$lport" "$remote" "$rport" "$mtu"
        ;;
    netns | vm)
        bridge_up "$br"
        vxlan "$dev" "$br" "$vni" "$local" "$lport" "$remote" "$rport" "$mtu"
        if [ "$kind" = netns ]; then
            ip netns list | awk -v n="$prefix-$node" '$1 == n {f = 1} END {exit !f}' || die "namespace $prefix-$node is missing"
            if ! exists "$veth"; then
                echo "link $veth"
                ip link add "$veth" mtu "$mtu" type veth peer name "$ifname" mtu "$mtu" netns "$prefix-$node"
            fi
            quiet "$veth"
            ip link set "$veth" master "$br" mtu "$mtu" up
        fi
        ;;
    esac
done
