# labclean.sh — lab_is_clean, sourced by the tests that remove a lab.
#
# lab_is_clean — nothing of the lab $INCLAB_PREFIX (state in $state) is left:
# no domain or network in libvirt, no QEMU process, no management bridge, no
# state directory, no network namespace or device of its namespace nodes
# (SWITCHES=netns: "$INCLAB_PREFIX-NODE", and devices "TAG-[bvtm]N"). libvirt must answer when its daemon runs: an error from
# virsh fails the check (a libvirt that cannot be asked proves nothing). When
# no libvirtd runs (lab-down stops the one lab-up started), libvirt's own
# files of defined and running domains and networks must hold none of the lab.
# Prints what is left; returns 0 only when nothing is.
lab_is_clean() {
    local left="" doms nets conf=${INCLAB_LIBVIRT_CONF:-/etc/libvirt}
    if pgrep -x libvirtd >/dev/null; then
        doms=$(virsh -q -c qemu:///system list --all --name 2>&1) ||
            { echo "  cannot ask libvirt for its domains: $doms"; return 1; }
        nets=$(virsh -q -c qemu:///system net-list --all --name 2>&1) ||
            { echo "  cannot ask libvirt for its networks: $nets"; return 1; }
        left+=$(printf '%s\n%s\n' "$doms" "$nets" | grep "^$INCLAB_PREFIX-" | tr '\n' ' ' || true)
    else
        left+=$(ls "$conf/qemu/$INCLAB_PREFIX"-*.xml "$conf/qemu/networks/$INCLAB_PREFIX"-*.xml \
            /run/libvirt/qemu/"$INCLAB_PREFIX"-*.xml /run/libvirt/network/"$INCLAB_PREFIX"-*.xml 2>/dev/null |
            tr '\n' ' ' || true)
    fi
    left+=$(pgrep -af "qemu-system.*guest=$INCLAB_PREFIX-" | tr '\n' ' ' || true)
    ip link show "$INCLAB_PREFIX-mgmt" >/dev/null 2>&1 && left+=" bridge $INCLAB_PREFIX-mgmt"
    left+=$(ip netns list 2>/dev/null | awk -v p="$INCLAB_PREFIX-" 'index($1, p) == 1 {printf " netns %s", $1}')
    left+=$(ip -o link show 2>/dev/null | awk -F': ' -v p="$INCLAB_PREFIX-" '{sub(/@.*/, "", $2)}
        index($2, p) == 1 && substr($2, length(p) + 1) ~ /^[bvtm][0-9]+$/ {printf " device %s", $2}')
    [ -e "$state" ] && left+=" $state"
    [ -z "$left" ] || echo "  left behind: $left"
    [ -z "$left" ]
}
