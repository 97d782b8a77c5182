# nswire.sh — the wiring of namespace nodes (SWITCHES=netns), one definition
# for both places that make it: lab.sh (the nodes of this machine, ns_wire)
# and nsnode.sh (those of a hypervisor reached over ssh, where lab.sh ships
# this file in nsnode.sh's tar). Sourced by bash; defines NS_DIRS and functions only.
# Its user defines die MESSAGE (exits) and nsw_made KIND NAME, called before
# each namespace (KIND netns) or device (KIND link) is made: lab.sh records
# it in its made list, nsnode.sh prints it for lab.sh to record.

# The machine directories a namespace node's own (ROOT/DIR) are bind-mounted
# on inside its service's mount namespace: configuration, run state, logs
# and the binaries pushed into it (lab.sh's push accepts only these).
NS_DIRS="etc/inclab run/inclab var/log/inclab usr/local/bin usr/local/sbin"

# nsw_mountpoints LIST — each /DIR of NS_DIRS exists on this machine
# afterwards; those made here are appended to file LIST (dies when one
# cannot be made).
nsw_mountpoints() {
    local x
    for x in $NS_DIRS; do
        [ -d "/$x" ] && continue
        mkdir -p "/$x" || die "cannot make the mount point /$x"
        echo "/$x" >> "$1"
    done
}

# nsw_unmountpoints LIST — remove the mount points file LIST names (only
# empty directories, only names of NS_DIRS: a line changed by someone else
# removes nothing else), deepest first, then LIST. The caller decides that
# no namespace node of any lab is left on the machine.
nsw_unmountpoints() {
    local x
    [ -e "$1" ] || return 0
    for x in $(sort -ru "$1"); do
        case " $NS_DIRS " in *" ${x#/} "*) rmdir "$x" 2>/dev/null || true ;; esac
    done
    rm -f "$1"
}

# nsw_quiet DEV — no IPv6 on a device in the machine's namespace (set before
# it goes up: no link-local address, no router solicitation). The machine
# stays silent on the lab's links.
nsw_quiet() { sysctl -q -w "net.ipv6.conf.$1.disable_ipv6=1" >/dev/null 2>&1 || true; }

# nsw_exists DEV — does network device DEV exist in the machine's namespace?
nsw_exists() { ip link show dev "$1" >/dev/null 2>&1; }

# nsw_netns NAME — make network namespace NAME, no IPv6 inside (the caller
# checked that it is missing).
nsw_netns() {
    nsw_made netns "$1"
    ip netns add "$1" || die "cannot make network namespace $1"
    ip netns exec "$1" sysctl -q -w net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 >/dev/null
}

# nsw_wire PREFIX — make what is missing of each wire on standard input,
# "KIND NA IA NB IB MTU BR VETH" a line (wires.tsv's columns 1 and 3-9,
# checked by the caller), node NA's namespace PREFIX-NA:
#   mgmt    a veth VETH on the machine's management bridge BR, its peer IA in NA
#   veth    a veth pair between two namespaces, IA in NA and IB in NB
#   bridge  the link's bridge BR (made when missing) and a veth VETH on it, IA in NA
# Each bridge and machine-side veth announced by nsw_made before it is made;
# what exists already is kept (a second lab-up).
nsw_wire() {
    local p=$1 kind na ia nb ib mtu br veth _rest
    while read -r kind na ia nb ib mtu br veth _rest; do
        case $kind in
        "") ;;
        mgmt)
            ip -n "$p-$na" link show dev "$ia" >/dev/null 2>&1 && continue
            nsw_exists "$br" || die "management bridge $br is missing (its libvirt network must be started first)"
            nsw_made link "$veth"
            ip link add "$veth" mtu "$mtu" type veth peer name "$ia" netns "$p-$na" || die "cannot make veth $veth"
            nsw_quiet "$veth"
            ip link set "$veth" master "$br" up || die "cannot join $veth to $br"
            ;;
        veth)
            ip -n "$p-$na" link show dev "$ia" >/dev/null 2>&1 && continue
            ip -n "$p-$na" link add "$ia" mtu "$mtu" type veth peer name "$ib" netns "$p-$nb" ||
                die "cannot make the veth $na $ia - $nb $ib"
            ;;
        bridge)
            if ! nsw_exists "$br"; then
                nsw_made link "$br"
                ip link add "$br" mtu "$mtu" type bridge stp_state 0 forward_delay 0 || die "cannot make bridge $br"
                nsw_quiet "$br"
            fi
            if ! nsw_exists "$veth"; then
                nsw_made link "$veth"
                ip link add "$veth" mtu "$mtu" type veth peer name "$ia" netns "$p-$na" || die "cannot make veth $veth"
                nsw_quiet "$veth"
            fi
            ip link set "$veth" master "$br" up && ip link set "$br" up || die "cannot join $veth to $br"
            ;;
        *) die "wires.tsv: unknown kind '$kind'" ;;
        esac
    done
}
