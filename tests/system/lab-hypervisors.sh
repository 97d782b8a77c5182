#!/usr/bin/env bash
# lab-hypervisors.sh — a lab over two hypervisors (issue 18), on one machine:
# tests/topology/hypervisors/two.yaml (1-2-4: sw1, pku1, pku2, sw0 and the
# controller on "here", sw2, pku3, pku4 on "there") with namespace switches.
# "here" is the local libvirt connection (qemu:///system); "there" is the same
# libvirtd reached through qemu+ssh:// and an sshd that this test starts on
# 127.0.0.1 with a host key and a client key it makes (stopped by its pid at
# the end). So every node of "there" is defined, started, asked and removed
# through the ssh connection, and the tree edge sw0-sw2 and the management
# network cross "machines" through the VXLAN tunnels of tunnels.tsv.
#
# Checked: a hypervisor that does not answer (a port where no sshd listens),
# or whose machine lacks a tool the lab needs there, is refused before
# anything is made; each node runs where topogen placed it (lab-status JSON)
# and the VMs of "there" are defined on its connection with their management
# NIC on its network; sw2, a namespace node of "there", lives
# there: its namespace, wires and directory (under "there"'s root, not this
# lab's state) made by lab/nsnode.sh over ssh and recorded as "there"'s, its
# service's mounts those of that directory, its link to pku3 refused by
# lab-capture (both ends there); every collective x dtype x op verified
# on all 4 ranks over the tree (inc-collectives.sh, INC_SCOPE=tree), and the
# crossing edge's VXLAN ends carried at least the AllReduce's data each way
# (their own counters), the management tunnel the control traffic; an
# experiment over both machines (exp.sh allreduce, INC alone) verified on
# every rank, its meta.yaml placing each node where inventory.tsv says, its
# REPORT.md saying it spans 2 hypervisors, while lab-capture records the
# crossing edge at sw0's end (this machine's): RoCE frames of at least the
# timed AllReduces' data each way, equal to both switches' port counters;
# 'there''s TSC rate measured over ssh and given to its TCG guests;
# lab-clocks --check lists each VM with its hypervisor, ok; lab-sync pushes
# a payload file made stale on pku3 and pku4 (through the ssh connection)
# and nothing to pku1, pku2, and restarts sw2's service (there, over ssh);
# lab-reboot sw2 gives it a new boot and it is ready again; lab-down
# while "there" does not answer (its sshd stopped) fails, says so and keeps
# the lab's record, the domains and sw2's namespace there; once it answers
# again lab-down leaves nothing of the lab on either connection or in the
# machine (sw2's directory there gone too).
# "There" takes the paths of another machine: its images directory is the
# test's own (HV_IMAGES, emptied first), so the host image is shipped into its
# storage pool through the ssh connection and verified (its sha256 there is
# this machine's), pku3's and pku4's overlays and seeds are volumes of that
# pool (their domains read them there), its tunnel ends are made by
# tunnels.sh over ssh (lab-up says so), and lab-down removes those volumes
# and the pool (the shipped image stays, a cache; the test removes it).
#
#   tests/system/lab-hypervisors.sh     (make test-lab-hypervisors)
#
# Its own lab: prefix inclab-hv (INCLAB_PREFIX overrides it), UDP base 48500,
# sshd on TCP HV_SSH_PORT (default 48499), "there"'s images in HV_IMAGES
# (default /var/lib/inclab-hvtest-images); host VMs of 3072 MiB (12 GiB for
# the four). HV_COUNTS overrides the element counts. Needs openssh-server
# (lab/packages.host). "N passed, M failed" only at its end.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/lib/harness.sh
. tests/lib/labclean.sh
# a test lab (INCLAB_TEST_LAB=1): its switches read a fault file, armed on sw2 over ssh (phase remote)
export SWITCHES=netns INCLAB_PREFIX=${INCLAB_PREFIX:-inclab-hv} INCLAB_TEST_LAB=1
export INCLAB_STATE=/var/lib/inclab/$INCLAB_PREFIX INCLAB_UDP_BASE=${INCLAB_UDP_BASE:-48500}
INCLAB_BUILD=$(cd "${INCLAB_BUILD:-${BUILD:-build}}" 2>/dev/null && pwd) || { echo "lab-hypervisors: no build directory (make payload)"; exit 2; }
export INCLAB_BUILD
state=$INCLAB_STATE
counts=${HV_COUNTS:-1,257,65539}
port=${HV_SSH_PORT:-48499}
images=${HV_IMAGES:-/var/lib/inclab-hvtest-images}
case $images in /var/lib/inclab-*) ;; *) echo "lab-hypervisors: HV_IMAGES must be a directory /var/lib/inclab-NAME (the test removes it)"; exit 2 ;; esac
tmp=$(mktemp -d)
sshd_pid=""
down() {
    lab/lab.sh down > /dev/null 2>&1 # also stops the daemons lab.sh started (lab-up's or 'daemons')
    [ -z "$sshd_pid" ] || kill "$sshd_pid" 2>/dev/null
    rm -rf "$tmp" "$images"
}
harness_begin lab-hypervisors "sshd refused kvm-refused up placement shipped collectives experiment clocks sync remote stop down-dead down"
harness_on_exit down

phase sshd "an sshd on 127.0.0.1:$port with keys made here: libvirt answers through qemu+ssh://"
# "there" is this machine's libvirtd, which must answer before lab-up asks every hypervisor
# (on a real second machine it runs already): lab.sh starts it (and virtlogd) unless it runs,
# and the last lab-down stops what it started
out=$(lab/lab.sh daemons 2>&1) || { ko "lab.sh daemons: $out"; harness_stop "no libvirtd"; }
command -v /usr/sbin/sshd >/dev/null || { ko "no /usr/sbin/sshd (make lab-deps installs openssh-server)"; harness_stop "no sshd"; }
ssh-keygen -q -t ed25519 -N '' -f "$tmp/hostkey" && ssh-keygen -q -t ed25519 -N '' -f "$tmp/key" &&
    cp "$tmp/key.pub" "$tmp/authorized_keys" || { ko "ssh-keygen"; harness_stop "no keys"; }
mkdir -p /run/sshd
cat > "$tmp/sshd_config" <<CONF
Port $port
ListenAddress 127.0.0.1
HostKey $tmp/hostkey
AuthorizedKeysFile $tmp/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PidFile $tmp/sshd.pid
CONF
if ! /usr/sbin/sshd -f "$tmp/sshd_config" -E "$tmp/sshd.log"; then ko "sshd did not start: $(tail -n 3 "$tmp/sshd.log")"; harness_stop "no sshd"; fi
for _ in 1 2 3 4 5 6 7 8 9 10; do [ -s "$tmp/sshd.pid" ] && break; sleep 0.3; done
sshd_pid=$(cat "$tmp/sshd.pid" 2>/dev/null)
uri="qemu+ssh://root@127.0.0.1:$port/system?keyfile=$tmp/key&no_verify=1"
check "virsh -c '$uri' version answers (sshd pid $sshd_pid)" virsh -c "$uri" version
topo=$tmp/two.yaml
# "there": the test's sshd, and an images directory of its own (not this machine's image cache)
sed -e "s|uri: 'qemu+ssh://[^']*'|uri: '${uri//&/\\&}'|" -e "/^  there: /s|}\$|, images: $images}|" \
    tests/topology/hypervisors/two.yaml > "$topo" # & is sed's match
rm -rf "$images"   # the test's own: shipping runs in full every time
export TOPOLOGY=$topo
"$INCLAB_BUILD/topogen" --check "$TOPOLOGY" | sed 's/^/  /'

phase refused "a hypervisor that does not answer: refused before anything is made"
sed "s|127.0.0.1:$port|127.0.0.1:$((port - 2))|" "$topo" > "$tmp/dead.yaml"
out=$(TOPOLOGY=$tmp/dead.yaml HYP_TIMEOUT=20 lab/lab.sh up 2>&1); rc=$?
check "lab-up with 'there' on a port where no sshd listens: exit $rc, 'does not answer', no state made ($(tail -n 1 <<<"$out" | head -c 300))" \
    bash -c '[ "$1" = 1 ] && grep -q "hypervisor there: its connection .* does not answer" <<<"$2" && [ ! -e "$3" ]' _ "$rc" "$out" "$state"

# a machine without a tool the lab needs there: the ssh connection answers, and lab-up asks for one
# more tool (INCLAB_TEST_HYP_TOOL, a test lab's), one that no machine has
out=$(INCLAB_TEST_HYP_TOOL=inclab-no-such-tool lab/lab.sh up 2>&1); rc=$?
check "lab-up where 'there' lacks a tool: exit $rc, 'lacks inclab-no-such-tool', no state made ($(tail -n 1 <<<"$out" | head -c 300))" \
    bash -c '[ "$1" = 1 ] && grep -q "^lab: hypervisor there (.*) lacks inclab-no-such-tool (iproute2" <<<"$2" && [ ! -e "$3" ]' _ "$rc" "$out" "$state"
out=$(INCLAB_TEST_LAB=0 INCLAB_TEST_HYP_TOOL=ip lab/lab.sh up 2>&1); rc=$?
check "INCLAB_TEST_HYP_TOOL outside a test lab: refused, exit $rc, no state made ($(tail -n 1 <<<"$out" | head -c 200))" \
    bash -c '[ "$1" = 1 ] && grep -q "INCLAB_TEST_HYP_TOOL is for test labs only" <<<"$2" && [ ! -e "$3" ]' _ "$rc" "$out" "$state"

phase kvm-refused "INCLAB_ACCEL=kvm where KVM cannot run a guest: refused before anything is made, naming each such hypervisor"
# this machine has no usable KVM (none, or a /dev/kvm that runs no guest) and neither has
# 'there' (the same machine, asked through its connection and probed over ssh)
out=$(INCLAB_ACCEL=kvm lab/lab.sh up 2>&1); rc=$?
doms=$( (virsh -q -c qemu:///system list --all --name; virsh -q -c "$uri" list --all --name) 2>/dev/null | grep -c "^$INCLAB_PREFIX-")
check "lab-up INCLAB_ACCEL=kvm: exit $rc, 'KVM cannot run a guest on' naming hypervisors here and there, no state, $doms domains defined ($(tail -n 1 <<<"$out" | head -c 400))" \
    bash -c '[ "$1" = 1 ] && grep -q "^lab: INCLAB_ACCEL=kvm: KVM cannot run a guest on hypervisor here (.*); hypervisor there (.*)" <<<"$2" &&
             [ ! -e "$3" ] && [ "$4" = 0 ]' _ "$rc" "$out" "$state" "$doms"

phase up "lab-up over the two connections"
t0=$(date +%s)
lab/lab.sh up 2>&1 | tee "$tmp/up.log"
if [ "${PIPESTATUS[0]}" != 0 ]; then ko "lab-up of $TOPOLOGY"; harness_stop "no lab"; fi
ok "lab-up: $(grep -v '^#' "$state/gen/inventory.tsv" | wc -l) nodes ready in $(($(date +%s) - t0)) s"

# each hypervisor's accelerator determined before anything started: 'there''s through its own
# connection (domcapabilities) and, when its libvirt offers KVM, QEMU started there over ssh
acc_at=$(sed -n 's/^LAB_ACCEL_AT="\(.*\)"$/\1/p' "$state/lab.env")
check "lab.env: each hypervisor's accelerator (LAB_ACCEL_AT=$acc_at), lab-up said why 'there' has no KVM: $(grep -o 'hypervisor there: accelerator .*' "$tmp/up.log" | head -c 300)" \
    bash -c '[[ $1 =~ ^here=(kvm|tcg)\ there=(kvm|tcg)$ ]] && grep -q "hypervisor there: accelerator TCG (its libvirt offers" "$2"' _ "$acc_at" "$tmp/up.log"
there_acc=${acc_at##*there=}
check "the domains of 'there' are of its accelerator's type ($there_acc: $(sed -n "s/^<domain type='\([a-z]*\)'>\$/\1/p" "$state"/gen/domains/pku3.xml "$state"/gen/domains/pku4.xml | tr '\n' ' '))" \
    bash -c 't=$([ "$1" = kvm ] && echo kvm || echo qemu); for n in pku3 pku4; do grep -qx "<domain type=.$t.>" "$2/gen/domains/$n.xml" || exit 1; done' _ "$there_acc" "$state"
st_line=$(lab/lab.sh status 2>/dev/null | head -n 1)
st_json=$(lab/lab.sh status --format json 2>/dev/null | jq -r '[.hypervisors[] | "\(.name)=\(.accelerator)"] | join(" ")')
check "lab-status names each hypervisor's accelerator: table '$st_line', JSON '$st_json'" \
    bash -c 'w=${1//=/ }; [ "$3" = "$1" ] && grep -qF "(hypervisors: ${w/ there/, there})" <<<"$2"' _ "$acc_at" "$st_line" "$st_json"

phase placement "each node where topogen placed it, the VMs of 'there' on its connection"
want=$("$INCLAB_BUILD/topogen" --json "$TOPOLOGY" | jq -c '[.nodes[] | {name, hypervisor}]')
got=$(lab/lab.sh status --format json | jq -c '[.nodes[] | {name, hypervisor}]')
check "lab-status JSON: every node's hypervisor as placed ($got)" [ "$want" = "$got" ]
for n in $(awk -F'\t' '!/^#/ && $11 == "vm" && $12 == "there" {print $1}' "$state/gen/inventory.tsv"); do
    check "$n: running on 'there' (virsh through ssh: domstate), its management NIC on $INCLAB_PREFIX-mgmt-there" \
        bash -c '[ "$(virsh -q -c "$1" domstate "$2" | head -n 1)" = running ] &&
                 virsh -q -c "$1" domiflist "$2" | grep -q " $3 "' _ "$uri" "$INCLAB_PREFIX-$n" "$INCLAB_PREFIX-mgmt-there"
done
tag=$(jq -r '.management.bridge | sub("-mgmt$"; "")' "$state/gen/lab.json")
tun=$(awk -F'\t' '!/^#/ && $2 == "netns" && $4 == "sw0" {print $13}' "$state/gen/tunnels.tsv")
peer=$(awk -F'\t' '!/^#/ && $2 == "netns" && $4 == "sw2" {print $13}' "$state/gen/tunnels.tsv")
# sw2 lives on 'there': made over ssh (nsnode.sh), recorded as there's, its files under there's root
rroot=/var/lib/inclab/$INCLAB_PREFIX.there
check "sw2 wired on 'there' over ssh ($(grep -o 'hypervisor there: namespace node(s) .* wired there over ssh' "$tmp/up.log")), recorded as there's (rnetns, rdir), not this machine's" \
    bash -c 'grep -q "hypervisor there: namespace node(s) sw2 wired there over ssh" "$1" && grep -qx "rnetns there.$2-sw2" "$3/made" &&
             grep -qx "rdir there.$2.there" "$3/made" && ! grep -qx "netns $2-sw2" "$3/made" && grep -qx "tunnel there.$2-m3" "$3/made"' \
    _ "$tmp/up.log" "$INCLAB_PREFIX" "$state"
sw2svc=$(lab/lab.sh exec sw2 'cat /run/inclab/service.pid' 2>/dev/null)
check "sw2's directory is there's ($rroot/nodes/sw2/root, sha256-checked files; none in $state/nodes), its service (pid ${sw2svc:-none}) runs with those mounted" \
    bash -c '[ -x "$1/nodes/sw2/root/usr/local/bin/incswitch" ] && [ ! -e "$2/nodes/sw2" ] && [[ $3 =~ ^[0-9]+$ ]] &&
             [ "$(stat -L -c %d:%i "/proc/$3/root/etc/inclab")" = "$(stat -L -c %d:%i "$1/nodes/sw2/root/etc/inclab")" ]' _ "$rroot" "$state" "$sw2svc"
out=$(lab/lab.sh capture sw2-pku3 1 2>&1); rc=$?
check "lab-capture sw2-pku3 (both ends on 'there') refused: exit $rc ($(tail -n 1 <<<"$out" | head -c 200))" \
    bash -c '[ "$1" = 1 ] && grep -q "both ends on hypervisor there, reached over ssh" <<<"$2"' _ "$rc" "$out"
check "the crossing edge sw0-sw2 is a VXLAN pair ($tun, $peer) on the lab's bridges, the management networks joined by $tag-g1/$tag-j1" \
    bash -c 'for d in "$@"; do ip -d link show "$d" | grep -q "vxlan id" || exit 1; done' _ "$tun" "$peer" "$tag-g1" "$tag-j1"

phase shipped "'there' as another machine: its image shipped into its pool and verified, its disks and seeds there, its tunnels made over ssh"
pool=$INCLAB_PREFIX-images
. "$state/lab.env"
himg=$(awk '{for (i = 1; i < NF; i += 2) if ($i == "host") print $(i + 1)}' <<<"$LAB_ROLES")
b=${himg##*/}
check "lab-up shipped $b.qcow2 to 'there' and verified it: $(grep -o "images shipped: .*" "$tmp/up.log"); $(grep -o "$b.qcow2 shipped and verified: [^,]*" "$tmp/up.log")" \
    grep -q "hypervisor there: $b.qcow2 shipped and verified" "$tmp/up.log"
here_sha=$(sha256sum < "$himg/disk.qcow2" | cut -d' ' -f1)
there_sha=$(sha256sum < "$images/$b.qcow2" 2>/dev/null | cut -d' ' -f1)
check "$images/$b.qcow2 (a volume of pool $pool through ssh) has the local image's sha256 ($there_sha), its record too" \
    bash -c '[ "$1" = "$2" ] && virsh -q -c "$3" vol-info --pool "$4" "$5.qcow2" >/dev/null && [ "$(cut -d" " -f1 "$6/$5.qcow2.sha256")" = "$1" ]' \
    _ "$here_sha" "$there_sha" "$uri" "$pool" "$b" "$images"
for v in vmlinuz initrd.img; do
    check "... $b.$v too" bash -c 'cmp -s "$1" "$2"' _ "$himg/$v" "$images/$b.$v"
done
for n in pku3 pku4; do
    check "$n: its overlay and seed are volumes of pool $pool on 'there', its disk on the shipped image, its domain reading them" \
        bash -c 'vols=$(virsh -q -c "$1" vol-list "$2" | awk "{print \$1}")
                 grep -qx "$3-$4.qcow2" <<<"$vols" && grep -qx "$3-$4.iso" <<<"$vols" &&
                 qemu-img info -U "$5/$3-$4.qcow2" | grep -qx "backing file: $5/$6.qcow2" &&
                 virsh -q -c "$1" domblklist "$3-$4" | grep -q " $5/$3-$4.qcow2\$" &&
                 virsh -q -c "$1" domblklist "$3-$4" | grep -q " $5/$3-$4.iso\$" &&
                 [ ! -e "$7/disks/$4.qcow2" ]' _ "$uri" "$pool" "$INCLAB_PREFIX" "$n" "$images" "$b" "$state"
done
check "tunnels.sh ran on 'there' over ssh ($(grep -o 'hypervisor there: tunnels.sh up over ssh.*' "$tmp/up.log")), its devices recorded as made there" \
    bash -c 'grep -q "hypervisor there: tunnels.sh up over ssh (root@127.0.0.1 port $1)" "$2" && grep -q "^tunnel there\." "$3/made" &&
             ! grep -q "^link $4\$" "$3/made"' _ "$port" "$tmp/up.log" "$state" "$peer"

# under TCG a guest's clock is its machine's TSC: 'there''s rate measured there, its guests told it
if [ "${LAB_ACCEL:-}" = tcg ]; then
    tsc=$(grep -o "hypervisor there: its machine's TSC rate [0-9]* kHz" "$tmp/up.log" | grep -o '[0-9]* kHz' | cut -d' ' -f1)
    check "lab-up measured the TSC rate of 'there''s machine over ssh (${tsc:-none} kHz; this one's $LAB_TSC_KHZ), pku3's and pku4's kernels are told it" \
        bash -c '[ -n "$1" ] && for n in pku3 pku4; do grep -q "tsc_early_khz=$1<" "$2/gen/domains/$n.xml" || exit 1; done' _ "$tsc" "$state"
fi

bytes() { ip -s -j link show dev "$1" | jq ".[0].stats64.$2.bytes"; }
tx0=$(bytes "$tun" tx) rx0=$(bytes "$tun" rx) m0=$(bytes "$tag-g1" rx)

phase collectives "every collective x dtype x op on the 4 ranks, across the two hypervisors"
INC_SCOPE=tree INC_COUNTS=$counts INC_PATTERN=ieee sub_test tests/system/inc-collectives.sh
# the largest AllReduce alone sends sw2's partial sums up to sw0 and the results down: count x 4 bytes each way
min=$(($(tr ',' '\n' <<<"$counts" | sort -n | tail -n 1) * 4))
tx=$(($(bytes "$tun" tx) - tx0)) rx=$(($(bytes "$tun" rx) - rx0)) m=$(($(bytes "$tag-g1" rx) - m0))
check "sw0's VXLAN end carried $tx bytes down and $rx up during the collectives, each at least $min" [ "$tx" -ge "$min" -a "$rx" -ge "$min" ]
check "the management tunnel carried $m bytes from 'there'" [ "$m" -gt 0 ]

phase experiment "an experiment over both hypervisors, the crossing edge sw0-sw2 captured while it runs"
# exp.sh as make exp-allreduce runs it: INC alone (the ring's forwarded frames would cross
# the switches' ports while no communicator has them open: counted as lost), its results
# verified on every rank; the capture taken at sw0's end (this machine's) of the tunnel
res=$tmp/results capdir=$tmp/captures
CAPTURE_DIR=$capdir lab/lab.sh capture sw2-sw0 600 > "$tmp/cap.out" 2>&1 &
cap_pid=$!
for _ in $(seq 1 300); do pgrep -x -P "$cap_pid" udpcap >/dev/null && break; sleep 0.2; done
sleep 1
t0=$(date +%s)
RESULTS=$res SIZE=${HV_EXP_SIZE:-256K} BASELINES=none ROUNDS=1 ITERS=2 WARMUP=1 experiments/exp.sh allreduce > "$tmp/exp.out" 2>&1
erc=$?
t_exp=$(($(date +%s) - t0))
sleep 2   # the window ends idle
pkill -INT -x -P "$cap_pid" udpcap
wait "$cap_pid"; cap_rc=$?
run=$(ls -d "$res"/allreduce-* 2>/dev/null | head -n 1)
check "exp.sh allreduce SIZE=${HV_EXP_SIZE:-256K} BASELINES=none: exit $erc in $t_exp s, stored in ${run:-nothing}$([ "$erc" = 0 ] || echo ": $(tail -n 5 "$tmp/exp.out" | tr '\n' ' ')")" \
    bash -c '[ "$1" = 0 ] && [ -n "$2" ] && grep -qx "status: verified" "$2/meta.yaml"' _ "$erc" "$run"
row=$(awk -F, 'NR > 1 && $1 == "inc" && $2 == "allreduce"' "$run/results.csv" 2>/dev/null | head -n 1)
check "results.csv: INC AllReduce on the 4 ranks over both machines, 0 wrong elements ($row)" \
    bash -c 'IFS=, read -r _ _ _ _ _ n _ _ _ _ _ _ w _ <<<"$1"; [ "$n" = 4 ] && [ "$w" = 0 ]' _ "$row"
# where each node ran, as lab-up placed it (inventory.tsv), against meta.yaml's placement
want=$(awk -F'\t' '!/^#/ {print $12, $1}' "$state/gen/inventory.tsv" | sort | awk '{l[$1] = l[$1] " " $2} END {for (h in l) print h ":" l[h]}' | sort | tr '\n' ';')
got=$(sed -n "s/^  - {hypervisor: '\([^']*\)', uri: '.*', nodes: '\([^']*\)'}\$/\1 \2/p" "$run/meta.yaml" 2>/dev/null |
    while read -r h nodes; do echo "$h:$(tr ' ' '\n' <<<"$nodes" | sort | sed 's/^/ /' | tr -d '\n')"; done | sort | tr '\n' ';')
check "meta.yaml: hypervisors: $(sed -n 's/^hypervisors: //p' "$run/meta.yaml" 2>/dev/null), each node where it ran ($got)" \
    bash -c 'grep -qx "hypervisors: 2" "$1/meta.yaml" && [ -n "$2" ] && [ "$2" = "$3" ]' _ "$run" "$got" "$want"
# meta.yaml: each hypervisor's accelerator, as lab.env has it
got=$(sed -n "s/^  - {hypervisor: '\([^']*\)', uri: '.*', accelerator: '\([a-z]*\)', nodes: .*/\1=\2/p" "$run/meta.yaml" 2>/dev/null | tr '\n' ' ')
check "meta.yaml: each hypervisor's accelerator ($got), lab.env's ($acc_at)" [ "$got" = "$acc_at " ]
# cpu.csv: sw0 and sw1 (this machine's), and sw2 (a namespace of 'there': its service's
# /proc/PID/stat and CLK_TCK read there over ssh): a row for each, its CPU time a whole
# number of microseconds, at most the wall time on every core of the machine
cpu_nodes=$(awk -F, 'NR > 1 {print $6}' "$run/cpu.csv" 2>/dev/null | sort -u | tr '\n' ' ')
sw2row=$(awk -F, 'NR > 1 && $6 == "sw2"' "$run/cpu.csv" 2>/dev/null | head -n 1)
check "cpu.csv: sw0, sw1 and sw2 (on 'there', read over ssh) counted ($cpu_nodes; sw2: $sw2row)" \
    bash -c '[[ " $1" == *" sw0 "* && " $1" == *" sw1 "* && " $1" == *" sw2 "* ]] &&
             IFS=, read -r _ _ _ _ _ n r cpu wall <<<"$2" && [ "$r" = switch ] && [[ $cpu =~ ^[0-9]+$ && $wall =~ ^[0-9]+$ ]] &&
             [ "$cpu" -le $((wall * $(nproc))) ]' _ "$cpu_nodes" "$sw2row"
"$INCLAB_BUILD/increport" plots "$res" > /dev/null 2> "$tmp/increport.err"
check "REPORT.md says the run spans the two machines: $(grep -o 'spans [0-9]* hypervisors' "$res/REPORT.md" 2>/dev/null | head -n 1)" \
    grep -q '^- \*\*spans 2 hypervisors\*\*' "$res/REPORT.md"
# the capture: udpcap's own line, the switches' counters against it, the RoCE frames in it
pcap=$(tail -n 1 "$tmp/cap.out")
line=$(grep '^udpcap: sw0-sw2: ' "$tmp/cap.out")
check "lab capture sw2-sw0 around it (at sw0's end, this machine's): exit $cap_rc, ${line#udpcap: }" \
    bash -c '[ "$1" = 0 ] && [ -s "$2" ] && grep -q "; lost 0$" <<<"$3"' _ "$cap_rc" "$pcap" "$line"
cmp=$(grep '^lab: capture: sw0-sw2: switch .* counted rx ' "$tmp/cap.out")
check "both switch ends compared (sw0 here, sw2 there), equal to the captured frames: $(tr '\n' ' ' <<<"$cmp" | sed 's/lab: capture: sw0-sw2: //g')" \
    bash -c '[ "$(grep -c "lost 0 " <<<"$1")" = 2 ] && grep -q "switch sw0 " <<<"$1" && grep -q "switch sw2 " <<<"$1"' _ "$cmp"
# RoCE: BTH frames (to 4791, and 4792 between switches, which tshark takes for RoCE when told)
# and bundles (4793) of them; each way at least the data of the timed AllReduces
bytes=$(cut -d, -f7 <<<"$row") iters=$(cut -d, -f9 <<<"$row")
roce=$(tshark -r "$pcap" -d udp.port==4792,infiniband -Y 'infiniband.bth' 2>/dev/null | wc -l)
read -r rin rout < <(tshark -r "$pcap" -Y 'udp.dstport >= 4791 && udp.dstport <= 4793' -T fields -e frame.packet_flags_direction -e frame.len 2>/dev/null |
    awk '$1 ~ /^(0x0*)?1$/ {i += $2} $1 ~ /^(0x0*)?2$/ {o += $2} END {print i + 0, o + 0}')   # (tshark: 0x00000001 inbound)
check "the capture holds $roce RoCE frames (tshark), $rin bytes of RoCE to sw0 and $rout from it, each at least ${bytes:-?} x ${iters:-?}" \
    bash -c '[ "$1" -gt 0 ] && [ -n "$4" ] && [ "$2" -ge $(($4 * $5)) ] && [ "$3" -ge $(($4 * $5)) ]' _ "$roce" "$rin" "$rout" "${bytes:-}" "${iters:-0}"

phase clocks "lab-clocks: every VM's clock, those of 'there' read through its connection"
out=$(lab/lab.sh clocks --check 2>&1); rc=$?
echo "$out" | sed 's/^/  /'
vms=$(awk -F'\t' '!/^#/ && $11 == "vm" {print $1 ":" $12}' "$state/gen/inventory.tsv")
check "lab-clocks --check: exit $rc, each VM listed with its hypervisor and ok ($(echo $vms))" \
    bash -c '[ "$1" = 0 ] && for v in $2; do grep -qE "^${v%%:*} +[0-9.]+ +[0-9.]+ +[-+][0-9.]+ +${v#*:} +ok$" <<<"$3" || exit 1; done' _ "$rc" "$vms" "$out"

phase sync "lab-sync: the payload into every node, each VM through its own connection"
# pku3's and pku4's copy of a payload file made stale (a header: nothing runs it), so that
# lab-sync has something to carry there; it must carry only that
hdr=usr/local/include/inccl.h
payload=${INCLAB_PAYLOAD:-$INCLAB_BUILD/payload}
want=$(sha256sum < "$payload/host/$hdr" | cut -d' ' -f1)
for n in pku3 pku4; do lab/lab.sh exec "$n" "echo '/* stale */' >> /$hdr" > /dev/null; done
stale=$(for n in pku3 pku4; do lab/lab.sh exec "$n" "sha256sum < /$hdr" 2>/dev/null | cut -d' ' -f1; done | grep -cx "$want")
sw2pid=$(lab/lab.sh exec sw2 'cat /run/inclab/service.pid' 2>/dev/null)
t0=$(date +%s)
lab/lab.sh sync > "$tmp/sync.log" 2>&1; rc=$?
t_sync=$(($(date +%s) - t0))
sed 's/^/  /' "$tmp/sync.log"
check "lab-sync: exit $rc in $t_sync s; pku3 and pku4 got 1 file each, pku1 and pku2 none ($(grep -o 'synced pku[0-9] (host): [0-9]* of [0-9]*' "$tmp/sync.log" | sed 's/synced //; s/ (host)//' | tr '\n' ' '))" \
    bash -c '[ "$1" = 0 ] && for n in pku1:0 pku2:0 pku3:1 pku4:1; do grep -q "synced ${n%:*} (host): ${n#*:} of [0-9]* file" "$2" || exit 1; done' _ "$rc" "$tmp/sync.log"
now=$(for n in pku3 pku4; do lab/lab.sh exec "$n" "sha256sum < /$hdr" 2>/dev/null | cut -d' ' -f1; done | grep -cx "$want")
check "pku3 and pku4 (on 'there') hold the payload's $hdr again: $now of 2 (before lab-sync: $stale of 2)" \
    bash -c '[ "$1" = 2 ] && [ "$2" = 0 ]' _ "$now" "$stale"
for _ in $(seq 1 60); do [ "$(lab/lab.sh status --format json 2>/dev/null | jq -r .ready)" = true ] && break; sleep 1; done
now=$(lab/lab.sh exec sw2 'cat /run/inclab/service.pid' 2>/dev/null)
check "sw2's service restarted by lab-sync on 'there' (pid $sw2pid -> $now), every node ready again" \
    bash -c '[ -n "$1" ] && [ -n "$2" ] && [ "$2" != "$1" ] && [ "$(lab/lab.sh status --format json | jq -r .ready)" = true ]' _ "$sw2pid" "$now"
old=$(cat "$rroot/nodes/sw2/root/run/inclab/boot-id" 2>/dev/null)
out=$(lab/lab.sh reboot sw2 2>&1); rc=$?
new=$(cat "$rroot/nodes/sw2/root/run/inclab/boot-id" 2>/dev/null)
check "lab-reboot sw2: exit $rc, a new boot id written there (${old:-none} -> ${new:-none}), ready ($(tail -n 1 <<<"$out" | head -c 200))" \
    bash -c '[ "$1" = 0 ] && [ -n "$3" ] && [ "$2" != "$3" ] && lab/lab.sh exec sw2 inclab-ready 20 >/dev/null' _ "$rc" "$old" "$new"

phase remote "the verbs on nodes of 'there' (sw2 over ssh, pku3 through its connection): exec, ssh, push, fault"
out=$(lab/lab.sh exec sw2 'echo "pid $(cat /run/inclab/service.pid) in $(ip netns identify)"' < /dev/null 2>&1); rc=$?
check "lab-exec sw2 (non-interactive, over ssh): exit $rc, its service's pid, in namespace $INCLAB_PREFIX-sw2 ($out)" \
    bash -c '[ "$1" = 0 ] && grep -qx "pid [0-9][0-9]* in $2-sw2" <<<"$3"' _ "$rc" "$INCLAB_PREFIX" "$out"
lab/lab.sh exec sw2 'exit 7' < /dev/null > /dev/null 2>&1; rc=$?
check "lab-exec sw2 'exit 7': its exit code comes back over ssh ($rc)" [ "$rc" = 7 ]
out=$(lab/lab.sh ssh sw2 'cat /etc/inclab/node.conf | head -n 1' < /dev/null 2>&1); rc=$?
check "lab-ssh sw2 CMD without a terminal: exit $rc, runs CMD there ($(head -c 120 <<<"$out"))" \
    bash -c '[ "$1" = 0 ] && [ -n "$2" ] && [ "$2" = "$(head -n 1 "$3/nodes/sw2/root/etc/inclab/node.conf")" ]' _ "$rc" "$out" "$rroot"
out=$(lab/lab.sh ssh sw2 < /dev/null 2>&1); rc=$?
check "lab-ssh sw2 without CMD and without a terminal: refused, exit $rc ($(tail -n 1 <<<"$out" | head -c 160))" \
    bash -c '[ "$1" = 1 ] && grep -q "a shell needs a terminal" <<<"$2"' _ "$rc" "$out"
head -c 3000 /dev/urandom | base64 > "$tmp/pushed"
out=$(lab/lab.sh push sw2 "$tmp/pushed" /etc/inclab/h-pushed 0640 2>&1); rc=$?
check "lab-push into sw2 (over ssh): exit $rc, in its directory there ($rroot/nodes/sw2/root/etc/inclab/h-pushed, mode $(stat -c %a "$rroot/nodes/sw2/root/etc/inclab/h-pushed" 2>/dev/null)), equal, seen inside sw2" \
    bash -c '[ "$1" = 0 ] && cmp -s "$2" "$3/nodes/sw2/root/etc/inclab/h-pushed" && [ "$(stat -c %a "$3/nodes/sw2/root/etc/inclab/h-pushed")" = 640 ] &&
             [ "$(lab/lab.sh exec sw2 "sha256sum < /etc/inclab/h-pushed" < /dev/null)" = "$(sha256sum < "$2")" ]' _ "$rc" "$tmp/pushed" "$rroot"
out=$(lab/lab.sh push sw2 "$tmp/pushed" /tmp/h-pushed 2>&1); rc=$?
check "lab-push into sw2 outside its own directories: refused, exit $rc ($(tail -n 1 <<<"$out" | head -c 160))" \
    bash -c '[ "$1" = 1 ] && grep -q "push only into its own directories" <<<"$2" && [ ! -e /tmp/h-pushed ]' _ "$rc" "$out"
out=$(lab/lab.sh push pku3 "$tmp/pushed" /tmp/h-pushed 0600 2>&1); rc=$?
check "lab-push into pku3 (a VM of 'there', its guest agent through the ssh connection): exit $rc, equal there" \
    bash -c '[ "$1" = 0 ] && [ "$(lab/lab.sh exec pku3 "sha256sum < /tmp/h-pushed" < /dev/null)" = "$(sha256sum < "$2")" ]' _ "$rc" "$tmp/pushed"
f=$rroot/nodes/sw2/root/run/inclab/incswitch.fault
out=$(lab/lab.sh fault sw2 drop 2>&1); rc=$?
armed=$(cat "$f" 2>/dev/null)
out2=$(lab/lab.sh fault sw2 off 2>&1); rc2=$?
check "lab-fault sw2 drop, then off (sw2 there, over ssh): exit $rc, $rc2; its fault file there held '${armed:-nothing}', then is gone" \
    bash -c '[ "$1" = 0 ] && [ "$2" = 0 ] && [ "$3" = drop ] && [ ! -e "$4" ]' _ "$rc" "$rc2" "$armed" "$f"
out=$(lab/lab.sh fault sw2 melt 2>&1); rc=$?
check "lab-fault sw2 with a kind it does not know: refused, exit $rc ($(tail -n 1 <<<"$out" | head -c 120))" \
    bash -c '[ "$1" = 1 ] && grep -q "fault KIND must be" <<<"$2" && [ ! -e "$3" ]' _ "$rc" "$out" "$f"

phase stop "lab-stop and lab-up again with nodes on 'there': pku3, pku4 saved through its connection, sw2's processes ended there and started again"
b3=$(lab/lab.sh exec pku3 'cat /proc/sys/kernel/random/boot_id' < /dev/null 2>/dev/null)
sw2pid=$(lab/lab.sh exec sw2 'cat /run/inclab/service.pid' < /dev/null 2>/dev/null)
t0=$(date +%s)
lab/lab.sh stop > "$tmp/stop.log" 2>&1; rc=$?
t_stop=$(($(date +%s) - t0))
sed 's/^/  /' "$tmp/stop.log"
# (the answer read whole first: grep -q ending a pipe early fails it under pipefail)
saved=$(for n in pku3 pku4; do grep -q '^Managed save: *yes' <<<"$(virsh -q -c "$uri" dominfo "$INCLAB_PREFIX-$n" 2>/dev/null)" && echo -n "$n "; done)
sw2st=$(lab/lab.sh status --format json 2>/dev/null | jq -r '.nodes[] | select(.name == "sw2") | .state')
check "lab-stop: exit $rc in $t_stop s; pku3, pku4 saved on 'there' (${saved:-none}), sw2 stopped there ($sw2st: no service running in its namespace)" \
    bash -c '[ "$1" = 0 ] && [ "$2" = "pku3 pku4 " ] && [ "$3" = stopped ] && ! ip netns pids "$4-sw2" | grep -q .' _ "$rc" "$saved" "$sw2st" "$INCLAB_PREFIX"
t0=$(date +%s)
lab/lab.sh up > "$tmp/up2.log" 2>&1; rc=$?
t_up=$(($(date +%s) - t0))
tail -n 3 "$tmp/up2.log" | sed 's/^/  /'
a3=$(lab/lab.sh exec pku3 'cat /proc/sys/kernel/random/boot_id' < /dev/null 2>/dev/null)
now=$(lab/lab.sh exec sw2 'cat /run/inclab/service.pid' < /dev/null 2>/dev/null)
check "lab-up after lab-stop: exit $rc in $t_up s, every node ready, pku3 restored (boot id kept: ${a3:-none}), sw2's service started again there (pid $sw2pid -> ${now:-none})" \
    bash -c '[ "$1" = 0 ] && [ "$(lab/lab.sh status --format json | jq -r .ready)" = true ] && [ -n "$2" ] && [ "$2" = "$3" ] &&
             [ -n "$5" ] && [ "$4" != "$5" ]' _ "$rc" "$b3" "$a3" "$sw2pid" "$now"

phase down-dead "lab-down while 'there' does not answer: what is there stays recorded, a second lab-down removes it"
kill "$sshd_pid" 2>/dev/null
for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$sshd_pid" 2>/dev/null || break; sleep 0.3; done
out=$(HYP_TIMEOUT=20 lab/lab.sh down 2>&1); rc=$?
there_doms=$(awk -F'\t' -v p="$INCLAB_PREFIX" '!/^#/ && $11 == "vm" && $12 == "there" {print p "-" $1}' "$state/gen/inventory.tsv" 2>/dev/null)
check "lab-down with 'there' unreachable: exit $rc, 'does not answer', the state kept ($(tail -n 1 <<<"$out" | head -c 300))" \
    bash -c '[ "$1" = 1 ] && grep -q "hypervisor there: its connection .* does not answer" <<<"$2" &&
             grep -q "kept .* and its record" <<<"$2" && [ -e "$3/made" ]' _ "$rc" "$out" "$state"
check "... the domains of 'there' ($(echo $there_doms)) still defined (seen through the local connection to the same libvirtd)" \
    bash -c '[ -n "$1" ] && for d in $1; do virsh -q -c qemu:///system dominfo "$d" >/dev/null 2>&1 || exit 1; done' _ "$there_doms"
check "... and their volumes in $images, the tunnel end $peer there, sw2's namespace and directory there, all recorded" \
    bash -c '[ -e "$1/$2-pku3.qcow2" ] && [ -e "$1/$2-pku4.iso" ] && ip link show "$3" >/dev/null 2>&1 &&
             ip netns list | grep -q "^$2-sw2\b" && [ -d "$4" ] && grep -qx "rnetns there.$2-sw2" "$5/made"' _ "$images" "$INCLAB_PREFIX" "$peer" "$rroot" "$state"
/usr/sbin/sshd -f "$tmp/sshd_config" -E "$tmp/sshd.log" || ko "sshd did not start again: $(tail -n 3 "$tmp/sshd.log")"
for _ in 1 2 3 4 5 6 7 8 9 10; do virsh -q -c "$uri" uri >/dev/null 2>&1 && break; sleep 0.5; done
sshd_pid=$(cat "$tmp/sshd.pid" 2>/dev/null)

phase down "lab-down leaves nothing on either connection"
check "lab-down" lab/lab.sh down
check "nothing left on this machine" lab_is_clean
check "sw2's directory on 'there' ($rroot) removed" [ ! -e "$rroot" ]
left=$( (virsh -q -c "$uri" list --all --name; virsh -q -c "$uri" net-list --all --name; virsh -q -c "$uri" pool-list --all --name) 2>&1 | grep "^$INCLAB_PREFIX-" || true)
check "nothing of the lab through the ssh connection${left:+: $left}" [ -z "$left" ]
files=$(ls "$images" 2>&1 | tr '\n' ' ')
check "$images: the lab's volumes removed, the shipped image kept as a cache ($files)" \
    bash -c '[ -z "$(ls "$1" | grep "^$2-")" ] && [ -e "$1/$3.qcow2" ] && [ -e "$1/$3.qcow2.sha256" ]' _ "$images" "$INCLAB_PREFIX" "$b"
harness_end
