# labclean.sh — lab_is_clean, sourced by the tests that remove a lab.
#
# lab_is_clean — nothing of the lab $INCLAB_PREFIX (state in $state) is left:
# no domain, network or storage pool in libvirt, no QEMU process, no management bridge, no
# state directory, no managed save image (lab-stop's), no network namespace or device of its namespace nodes
# (SWITCHES=netns: "$INCLAB_PREFIX-NODE", and devices "TAG-[bvtm]N"; over
# hypervisors also the tunnels' and management bridges' "TAG-[cwxyhgj]N"). The
# lab's names are exact: "$INCLAB_PREFIX-NODE" for the nodes of $TOPOLOGY (as
# topogen lists them) and "$INCLAB_PREFIX-mgmt", so a neighbour whose prefix
# extends this one (inclab-sc next to inclab) is not taken for a leftover;
# without topogen ($INCLAB_BUILD, $BUILD or build/) every name that begins
# with "$INCLAB_PREFIX-" counts. libvirt must answer when its daemon runs: an
# error from virsh fails the check (a libvirt that cannot be asked proves
# nothing). When no libvirtd runs (lab-down stops the one lab-up started),
# libvirt's own files of defined and running domains and networks must hold
# none of the lab. Prints what is left; returns 0 only when nothing is.
lab_is_clean() {
    local left="" doms nets pools names="" n t conf=${INCLAB_LIBVIRT_CONF:-/etc/libvirt}
    local topogen=${INCLAB_BUILD:-${BUILD:-build}}/topogen
    t=$(mktemp -d)
    if [ -x "$topogen" ] && "$topogen" -o "$t/gen" --prefix "$INCLAB_PREFIX" --state-dir /nonexistent \
        --image controller=/i --image switch=/i --image host=/i "${TOPOLOGY:-topology/1-2-4.yaml}" >/dev/null 2>&1; then
        names=$(awk -F'\t' -v p="$INCLAB_PREFIX" '!/^#/ && NF > 1 {print p "-" $1} END {print p "-mgmt"}' "$t/gen/inventory.tsv"
                # a lab over hypervisors: every hypervisor's management network
                # a lab over hypervisors: every hypervisor's management network and storage pool
                [ ! -e "$t/gen/hypervisors.tsv" ] || awk -F'\t' '!/^#/ {print $4; if ($9 != "-" && $9 != "") print $9}' "$t/gen/hypervisors.tsv")
    fi
    rm -rf "$t"
    # is_lab NAME — a name of the lab (exact, or by prefix without topogen)
    is_lab() { if [ -n "$names" ]; then grep -qxF -- "$1" <<<"$names"; else case $1 in "$INCLAB_PREFIX"-*) return 0 ;; *) return 1 ;; esac; fi; }
    if pgrep -x libvirtd >/dev/null; then
        doms=$(virsh -q -c qemu:///system list --all --name 2>&1) ||
            { echo "  cannot ask libvirt for its domains: $doms"; return 1; }
        nets=$(virsh -q -c qemu:///system net-list --all --name 2>&1) ||
            { echo "  cannot ask libvirt for its networks: $nets"; return 1; }
        pools=$(virsh -q -c qemu:///system pool-list --all --name 2>&1) ||
            { echo "  cannot ask libvirt for its storage pools: $pools"; return 1; }
        for n in $doms $nets $pools; do is_lab "$n" && left+=" $n"; done
    else
        for n in "$conf"/qemu/*.xml "$conf"/qemu/networks/*.xml "$conf"/storage/*.xml /run/libvirt/qemu/*.xml /run/libvirt/network/*.xml; do
            [ -e "$n" ] || continue
            t=${n##*/}
            is_lab "${t%.xml}" && left+=" $n"
        done
    fi
    # QEMU processes: libvirt names the guest "-name guest=NAME,..."
    for n in $(ps -eo args= | grep -o 'qemu-system[^ ]* .*-name guest=[^, ]*' | sed 's/.*-name guest=//'); do
        is_lab "$n" && left+=" qemu($n)"
    done
    # the memory lab-stop saved (libvirt's managed save images)
    for n in "${INCLAB_LIBVIRT_SAVE:-/var/lib/libvirt/qemu/save}"/*.save; do
        [ -e "$n" ] || continue
        t=${n##*/}
        is_lab "${t%.save}" && left+=" $n"
    done
    ip link show "$INCLAB_PREFIX-mgmt" >/dev/null 2>&1 && left+=" bridge $INCLAB_PREFIX-mgmt"
    for n in $(ip netns list 2>/dev/null | awk '{print $1}'); do is_lab "$n" && left+=" netns $n"; done
    left+=$(ip -o link show 2>/dev/null | awk -F': ' -v p="$INCLAB_PREFIX-" '{sub(/@.*/, "", $2)}
        index($2, p) == 1 && substr($2, length(p) + 1) ~ /^[bvtmcwxyhgj][0-9]+$/ {printf " device %s", $2}')
    [ -e "$state" ] && left+=" $state"
    [ -z "$left" ] || echo "  left behind: $left"
    [ -z "$left" ]
}
