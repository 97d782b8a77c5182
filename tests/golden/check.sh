#!/usr/bin/env bash
# Golden tests of topogen: generated lab files and error messages.
#
#   tests/golden/check.sh [--update] TOPOGEN
#
# For each topology/*.yaml the generated tree (with fixed paths and ports) must
# equal tests/golden/NAME/ byte for byte; for each tests/topology/invalid/*.yaml
# topogen must exit 1 with exactly the messages of the matching .err file.
# A test lab (--test-lab) differs from the golden files only by the
# FAULT_FILE line of each switch's node.conf. With --switches netns the tree
# must equal tests/golden/NAME-netns/. The views (lab.json, topology.dot) are
# also checked against the topology file as PyYAML and graphviz read them
# (check_views.py), with lab.sh status and graph's handling of bad input.
# Each tests/topology/hypervisors/NAME.yaml (a lab over several hypervisors)
# must give tests/golden/hv-NAME/ (and hv-NAME-netns/), whose tunnels are
# also checked against the tables' own facts (each crossing link two ends,
# ports that pair up, addresses of the right hypervisors).
# --update rewrites the golden files (review the diff before committing).
# Runs in tests/lib/harness.sh: "N passed, M failed" only at its end.
set -uo pipefail
update=0
[ "${1:-}" = --update ] && { update=1; shift; }
topogen=${1:?usage: check.sh [--update] TOPOGEN}
cd "$(dirname "$0")/../.."
. tests/lib/harness.sh
tmp=$(mktemp -d)
gone() { rm -rf "$tmp"; }
harness_begin golden "generated hypervisors invalid test-lab tsc-khz netns-names hostile keys views"
harness_on_exit gone
gen() { "$topogen" -o "$1" --prefix inclab --state-dir /var/lib/inclab/test --udp-base 47000 --accel tcg \
    --image controller=/img/controller --image switch=/img/switch --image host=/img/host "${@:2}"; }
phase generated "generated lab files equal tests/golden/"

for topo in topology/*.yaml topology/*.yaml; do
    name=$(basename "$topo" .yaml) mode=()
    if [ -e "$tmp/$name" ]; then name=$name-netns mode=(--switches netns); fi
    gen "$tmp/$name" "${mode[@]}" "$topo" || { ko "$name: topogen failed"; continue; }
    if [ $update = 1 ]; then rm -rf "tests/golden/$name"; cp -r "$tmp/$name" "tests/golden/$name"; fi
    if diff -r "tests/golden/$name" "$tmp/$name" > "$tmp/$name.diff"; then
        ok "$name: $(find "$tmp/$name" -type f | wc -l) generated files match tests/golden/$name"
    else
        ko "$name: output differs from tests/golden/$name:"; head -n 40 "$tmp/$name.diff"
    fi
    # Every generated domain and network must be well-formed XML for libvirt.
    if ! command -v virt-xml-validate >/dev/null; then
        ko "$name: no virt-xml-validate to check the libvirt XML (make deps installs libvirt-clients)"
    else
        bad=0
        for x in "$tmp/$name"/domains/*.xml; do virt-xml-validate "$x" domain >/dev/null 2>&1 || { bad=1; echo "  invalid: $x"; virt-xml-validate "$x" domain | tail -3; }; done
        virt-xml-validate "$tmp/$name/network-mgmt.xml" network >/dev/null 2>&1 || { bad=1; echo "  invalid network XML"; }
        if [ $bad = 0 ]; then ok "$name: domain and network XML valid (virt-xml-validate)"; else ko "$name: invalid libvirt XML"; fi
    fi
done

phase hypervisors "labs over several hypervisors: generated files equal tests/golden/hv-*, tunnels pair up"
# hv_tunnels DIR — the complaints about DIR's tunnels, empty when none: every
# link whose ends are on two hypervisors (links.tsv) has exactly one tunnel
# end on each (tunnels.tsv) and no line in wires.tsv; each end's addresses are its own and its peer's
# hypervisor's (hypervisors.tsv); the ports pair up, no two ends on one
# address share a port or a device; a VM's UDP end is its domain's <source>/<local>,
# a VM's VXLAN end's bridge the one its domain names;
# every other hypervisor has one management tunnel to the first; every node's
# hypervisor in lab.json is inventory.tsv's
hv_tunnels() {
    /usr/bin/python3 - "$1" <<'PY'
import csv, json, re, sys, os
d = sys.argv[1]
def rows(name):
    p = os.path.join(d, name)
    if not os.path.exists(p): return []
    with open(p) as f:
        lines = [l for l in f.read().split("\n") if l]
    head = lines[0].lstrip("# ").split("\t")
    return [dict(zip(head, l.split("\t"))) for l in lines[1:]]
hyp = {r["hypervisor"]: r for r in rows("hypervisors.tsv")}
inv = {r["node"]: r for r in rows("inventory.tsv")}
tun = rows("tunnels.tsv")
bad = []
for l in rows("links.tsv"):
    ends = [t for t in tun if t["link"] == l["link"]]
    if l["hypervisor_a"] == l["hypervisor_b"]:
        if ends: bad.append("link %s on one hypervisor has tunnel ends" % l["link"])
        continue
    if sorted(e["hypervisor"] for e in ends) != sorted([l["hypervisor_a"], l["hypervisor_b"]]):
        bad.append("link %s: tunnel ends on %s" % (l["link"], [e["hypervisor"] for e in ends])); continue
    if any(w["link"] == l["link"] for w in rows("wires.tsv")):
        bad.append("link %s crosses machines and has a wires.tsv line" % l["link"])
    for e, p in ((ends[0], ends[1]), (ends[1], ends[0])):
        if e["local"] != hyp[e["hypervisor"]]["address"] or e["remote"] != hyp[p["hypervisor"]]["address"]:
            bad.append("link %s: end on %s has addresses %s -> %s" % (l["link"], e["hypervisor"], e["local"], e["remote"]))
        if e["node"] != p["peer"] or inv[e["node"]]["hypervisor"] != e["hypervisor"]:
            bad.append("link %s: end of %s on %s" % (l["link"], e["node"], e["hypervisor"]))
        if (e["lport"], e["rport"]) != (p["rport"], p["lport"]) or e["lport"] == e["rport"]:
            bad.append("link %s: ports of %s (listens %s, sends to %s) do not pair" % (l["link"], e["node"], e["lport"], e["rport"]))
        if e["kind"] == "udp":
            x = open(os.path.join(d, "domains", e["node"] + ".xml")).read()
            want = "<source address='%s' port='%s'>\n        <local address='%s' port='%s'/>" % (e["remote"], e["rport"], e["local"], e["lport"])
            if want not in x: bad.append("link %s: %s's domain has no %r" % (l["link"], e["node"], want))
        elif e["vni"] != p["vni"] or e["device"] == p["device"] or e["bridge"] == p["bridge"]:
            bad.append("link %s: VXLAN ends of %s and %s: VNI %s/%s, devices %s/%s, bridges %s/%s" % (l["link"], e["node"],
                       p["node"], e["vni"], p["vni"], e["device"], p["device"], e["bridge"], p["bridge"]))
        elif e["kind"] == "vm" and "<source bridge='%s'/>" % e["bridge"] not in open(os.path.join(d, "domains", e["node"] + ".xml")).read():
            bad.append("link %s: %s's domain is not on bridge %s" % (l["link"], e["node"], e["bridge"]))
names = list(hyp)
mg = [t for t in tun if t["kind"] == "mgmt"]
for h in names[1:]:
    pair = [t for t in mg if {t["hypervisor"], t["peer_hypervisor"]} == {names[0], h}]
    if len(pair) != 2 or pair[0]["lport"] != pair[1]["rport"] or pair[1]["lport"] != pair[0]["rport"] or pair[0]["vni"] != pair[1]["vni"]:
        bad.append("management tunnel %s-%s: %d ends, ports or VNIs do not pair" % (names[0], h, len(pair)))
    if not [t for t in pair if t["hypervisor"] == h and t["bridge"] == hyp[h]["bridge"]]:
        bad.append("management tunnel of %s not on its bridge %s" % (h, hyp[h]["bridge"]))
if len(mg) != 2 * (len(names) - 1): bad.append("%d management tunnel ends for %d hypervisors" % (len(mg), len(names)))
# on one machine (one address), no two ends listen on one port, no two make one device
for key in ("lport", "device"):
    seen = {}
    for t in tun:
        k = (hyp[t["hypervisor"]]["address"], t[key])
        if t[key] != "-" and k in seen: bad.append("two tunnel ends with %s %s on %s" % (key, t[key], k[0]))
        seen[k] = 1
j = json.load(open(os.path.join(d, "lab.json")))
for n in j["nodes"]:
    if n["hypervisor"] != inv[n["name"]]["hypervisor"]: bad.append("lab.json: %s on %s" % (n["name"], n["hypervisor"]))
if [h["name"] for h in j["hypervisors"]] != names or any(h["uri"] != hyp[h["name"]]["uri"] for h in j["hypervisors"]):
    bad.append("lab.json's hypervisors are not hypervisors.tsv's")
for f in os.listdir(os.path.join(d, "domains")):
    m = re.search(r"<source network='([^']*)'/>", open(os.path.join(d, "domains", f)).read())
    node = f[:-4]
    if m.group(1) != hyp[inv[node]["hypervisor"]]["network"]:
        bad.append("%s's management NIC on %s, not its hypervisor's" % (node, m.group(1)))
# a VM on a hypervisor other than the first reads and writes only its storage pool's files
# (hypervisors.tsv: images, pool); one on the first none of them
for f in os.listdir(os.path.join(d, "domains")):
    node, x = f[:-4], open(os.path.join(d, "domains", f)).read()
    h = hyp[inv[node]["hypervisor"]]
    files = re.findall(r"<(?:kernel|initrd)>([^<]*)<|<source file='([^']*)'/>|<log file='([^']*)'", x)
    files = [a or b or c for a, b, c in files]
    if len(files) != 5: bad.append("%s: %d files in its domain, not 5" % (node, len(files)))
    if h["hypervisor"] == names[0]:
        if h["images"] != "-" or h["pool"] != "-": bad.append("the first hypervisor has a pool")
    elif h["pool"] != "inclab-images" or any(os.path.dirname(p) != h["images"] for p in files) or \
            not all(os.path.basename(p).startswith("inclab-" + node + ".") for p in files[2:]):
        bad.append("%s on %s: files %s, not in its pool %s" % (node, h["hypervisor"], files, h["images"]))
print("\n".join(bad[:12]))
PY
}
for topo in tests/topology/hypervisors/*.yaml; do
    for mode in vm netns; do
        name=hv-$(basename "$topo" .yaml); [ $mode = vm ] || name=$name-netns
        gen "$tmp/$name" --switches $mode "$topo" || { ko "$name: topogen failed"; continue; }
        if [ $update = 1 ]; then rm -rf "tests/golden/$name"; cp -r "$tmp/$name" "tests/golden/$name"; fi
        if diff -r "tests/golden/$name" "$tmp/$name" > "$tmp/$name.diff"; then
            ok "$name: $(find "$tmp/$name" -type f | wc -l) generated files match tests/golden/$name"
        else
            ko "$name: output differs from tests/golden/$name:"; head -n 40 "$tmp/$name.diff"
        fi
        out=$(hv_tunnels "$tmp/$name" 2>&1)
        check "$name: $(grep -vc '^#' "$tmp/$name/tunnels.tsv") tunnel ends pair up over $(grep -vc '^#' "$tmp/$name/hypervisors.tsv") hypervisors${out:+: $out}" [ -z "$out" ]
        bad=0
        for x in "$tmp/$name"/domains/*.xml; do virt-xml-validate "$x" domain >/dev/null 2>&1 || { bad=1; echo "  invalid: $x"; }; done
        for x in "$tmp/$name"/hv/*/network-mgmt.xml; do virt-xml-validate "$x" network >/dev/null 2>&1 || { bad=1; echo "  invalid: $x"; }; done
        check "$name: domain and per-hypervisor network XML valid, URIs with '&' escaped (virt-xml-validate)" [ $bad = 0 ]
    done
done
# --accel-at: a hypervisor with KVM beside one without (topogen's mixed case): each VM's
# domain is of its own hypervisor's type, the golden files hv-two-mixed (here's KVM
# domains: host-passthrough, no tsc_early_khz, no TCG cache; there's TCG ones with
# both), and a bad --accel-at is refused with a precise message
name=hv-two-mixed
if gen "$tmp/$name" --accel-at here=kvm --tsc-khz 2596213 tests/topology/hypervisors/two.yaml; then
    if [ $update = 1 ]; then rm -rf "tests/golden/$name"; cp -r "$tmp/$name" "tests/golden/$name"; fi
    if diff -r "tests/golden/$name" "$tmp/$name" > "$tmp/$name.diff"; then
        ok "$name (--accel tcg --accel-at here=kvm): $(find "$tmp/$name" -type f | wc -l) generated files match tests/golden/$name"
    else
        ko "$name: output differs from tests/golden/$name:"; head -n 40 "$tmp/$name.diff"
    fi
    got=$(for x in "$tmp/$name"/domains/*.xml; do echo "$(basename "$x" .xml)=$(sed -n "s/^<domain type='\([a-z]*\)'>\$/\1/p" "$x")"; done | sort | tr '\n' ' ')
    want=$(grep -v '^#' "$tmp/$name/inventory.tsv" | awk -F'\t' '{print $1 "=" ($12 == "here" ? "kvm" : "qemu")}' | sort | tr '\n' ' ')
    check "$name: each domain of its hypervisor's type ($got), KVM ones host-passthrough without tsc_early_khz, TCG ones with it" \
        bash -c '[ "$1" = "$2" ] && for x in "$3"/domains/*.xml; do
                     if grep -q "^<domain type=.kvm.>" "$x"; then grep -q host-passthrough "$x" && ! grep -q "tsc_early_khz\|<tcg>" "$x" || exit 1
                     else grep -q tsc_early_khz=2596213 "$x" && grep -q "<tcg>" "$x" && ! grep -q host-passthrough "$x" || exit 1; fi
                 done' _ "$got" "$want" "$tmp/$name"
    bad=0
    for x in "$tmp/$name"/domains/*.xml; do virt-xml-validate "$x" domain >/dev/null 2>&1 || { bad=1; echo "  invalid: $x"; }; done
    check "$name: domain XML valid (virt-xml-validate)" [ $bad = 0 ]
else
    ko "topogen --accel-at here=kvm failed"
fi
for x in "nowhere=kvm|declares no hypervisor 'nowhere'" "there=xen|wants NAME=kvm or NAME=tcg" "=kvm|wants NAME=kvm or NAME=tcg" \
    "there|wants NAME=kvm or NAME=tcg" "there=kvm --accel-at there=tcg|--accel-at there given twice"; do
    IFS='|' read -r arg want <<<"$x"
    # shellcheck disable=SC2086 # the last case is two options
    out=$("$topogen" -o "$tmp/bad" --accel-at $arg tests/topology/hypervisors/two.yaml 2>&1); rc=$?
    check "--accel-at $arg: exit 2 with '$want', nothing written (got $rc: $out)" \
        bash -c '[ "$1" = 2 ] && grep -qF -- "$3" <<<"$2" && [ ! -e "$4" ]' _ "$rc" "$out" "$want" "$tmp/bad"
done
# the check itself catches a wrong tunnel: ports that do not pair, a VM's UDP end to its own hypervisor
w=$tmp/hv-wrong; cp -r tests/golden/hv-placed-netns "$w"
awk -F'\t' -v OFS='\t' '$2 == "netns" && $3 == "3" && $4 == "sw1" {$11 = 47001} 1' tests/golden/hv-placed-netns/tunnels.tsv > "$w/tunnels.tsv"
out=$(hv_tunnels "$w")
check "the tunnel check catches ports that do not pair ($out)" grep -q "link 3: ports of sw1" <<<"$out"
w=$tmp/hv-wrong2; cp -r tests/golden/hv-placed "$w"
sed -i "s/<source address='203.0.113.11' port='47001'>/<source address='203.0.113.10' port='47001'>/" "$w/domains/sw0.xml"
out=$(hv_tunnels "$w")
check "the tunnel check catches a VM's UDP tunnel sent to the wrong hypervisor ($out)" grep -q "link 0: sw0's domain has no" <<<"$out"
# without a hypervisors section nothing is placed: --check says nothing of hypervisors, no file of theirs is made
out=$("$topogen" --check topology/1-2-4.yaml)
check "a topology without hypervisors: --check names none, and no hypervisors.tsv, tunnels.tsv or hv/ is made" \
    bash -c '! grep -q hypervisor <<<"$1" && [ ! -e "$2/1-2-4/tunnels.tsv" ] && [ ! -e "$2/1-2-4/hypervisors.tsv" ] && [ ! -e "$2/1-2-4/hv" ]' _ "$out" "$tmp"
out=$("$topogen" --check tests/topology/hypervisors/placed.yaml)
check "topogen --check prints where each node runs, placed by the file or by the balance (*), and the crossing links" \
    bash -c 'grep -qx "  hypervisor a (qemu+tls://server-a.example.org/system, tunnels to 203.0.113.10): 3 nodes, 2560 MiB: controller\* sw0\* pku4\*" <<<"$1" &&
             grep -qx "  hypervisor b (.*): 3 nodes, 3584 MiB: sw1 pku1\* pku3" <<<"$1" && grep -qx "  links between hypervisors: sw0-sw1, sw1-sw2, sw2-pku3" <<<"$1"' _ "$out"
# lab-up of a lab over hypervisors one of which does not answer: refused at once (before images are
# built), naming the hypervisor and its connection, nothing made (port 1: no sshd listens there)
sed "s|127.0.0.1:2222|127.0.0.1:1|" tests/topology/hypervisors/two.yaml > "$tmp/dead.yaml"
out=$(INCLAB_PREFIX=inclab-hv-test INCLAB_STATE_ROOT="$tmp/hvroot" INCLAB_STATE="$tmp/hvroot/lab" INCLAB_BUILD="$(dirname "$topogen")" \
    HYP_TIMEOUT=20 TOPOLOGY="$tmp/dead.yaml" lab/lab.sh up 2>&1); rc=$?
check "lab.sh up with hypervisor 'there' not answering: exit 1, refused before anything is made (got $rc: $(tail -n 1 <<<"$out"))" \
    bash -c '[ "$1" = 1 ] && grep -q "^lab: hypervisor there: its connection qemu+ssh://root@127.0.0.1:1/system?.* does not answer" <<<"$2" && [ ! -e "$3" ]' \
    _ "$rc" "$out" "$tmp/hvroot"

phase invalid "invalid topology files are refused with exact messages"
for bad in tests/topology/invalid/*.yaml; do
    want=${bad%.yaml}.err
    "$topogen" --check "$bad" > "$tmp/out" 2> "$tmp/err"; rc=$?
    [ $update = 1 ] && cp "$tmp/err" "$want"
    if [ $rc -ne 1 ]; then
        ko "$bad: exit code $rc, want 1"
    elif ! diff -u "$want" "$tmp/err"; then
        ko "$bad: messages differ from $want"
    else
        ok "$bad rejected: $(head -n 1 "$tmp/err")"
    fi
done

phase test-lab "a test lab differs only by its switches' FAULT_FILE"
if gen "$tmp/test-lab" --test-lab topology/1-2-4.yaml; then
    got=$(diff -r tests/golden/1-2-4 "$tmp/test-lab" | grep '^[<>]' | sort | uniq -c | sed 's/^ *//')
    nsw=$(awk -F'\t' '$2 == "switch"' tests/golden/1-2-4/inventory.tsv | wc -l)
    want="$nsw >       # a test lab: incswitch allows fault injection, armed from this file
$nsw >       FAULT_FILE=/run/inclab/incswitch.fault"
    files=$(diff -rq tests/golden/1-2-4 "$tmp/test-lab" | awk '{print $2}' | sed 's|.*/seeds/||' | sort | tr '\n' ' ')
    check "1-2-4 --test-lab: 2 more lines in each of the $nsw switches' user-data and nowhere else ($files)" \
        sh -c "[ \"\$1\" = \"\$2\" ] && [ \"\$3\" = \"\$(awk -F'\t' '\$2 == \"switch\" {printf \"%s/user-data \", \$1}' tests/golden/1-2-4/inventory.tsv)\" ]" \
        _ "$got" "$want" "$files"
else
    ko "topogen --test-lab failed"
fi

phase tsc-khz "--tsc-khz: TCG guests' kernels are told the machine's TSC rate and their translation cache is capped, KVM guests get neither"
if gen "$tmp/tsc" --tsc-khz 2596213 topology/1-2-4.yaml; then
    nd=$(ls tests/golden/1-2-4/domains | wc -l)
    got=$(diff -r tests/golden/1-2-4 "$tmp/tsc" | grep '^>' | sort | uniq -c | sed 's/^ *//')
    want="$nd >     <cmdline>$(sed -n 's/.*<cmdline>\(.*\)<\/cmdline>.*/\1/p' tests/golden/1-2-4/domains/pku1.xml) tsc_early_khz=2596213</cmdline>"
    check "1-2-4 --tsc-khz 2596213: tsc_early_khz=2596213 on each of the $nd domains' command lines, nothing else changed" \
        bash -c '[ "$1" = "$2" ] && [ "$(diff -r tests/golden/1-2-4 "$3" | grep -c "^<")" = "$4" ]' _ "$got" "$want" "$tmp/tsc" "$nd"
else
    ko "topogen --tsc-khz failed"
fi
if "$topogen" -o "$tmp/tsc-kvm" --prefix inclab --accel kvm --tsc-khz 2596213 topology/1-2-4.yaml; then
    check "--accel kvm --tsc-khz: no tsc_early_khz (KVM guests read kvm-clock)" \
        bash -c '! grep -rq tsc_early_khz "$1"' _ "$tmp/tsc-kvm"
    check "--accel kvm: no TCG translation cache setting (<tcg>) in any domain" \
        bash -c '! grep -rq "<tcg>" "$1"' _ "$tmp/tsc-kvm"
    nd=$(ls "$tmp/tsc/domains" | wc -l)
    check "TCG: each of the $nd domains caps its translation cache (<tb-cache unit='MiB'>256)" \
        bash -c '[ "$(grep -l "<tcg><tb-cache unit=.MiB.>256</tb-cache></tcg>" "$1"/domains/*.xml | wc -l)" = "$2" ]' _ "$tmp/tsc" "$nd"
else
    ko "topogen --accel kvm --tsc-khz failed"
fi
for bad in 99999 abc 2596213x ""; do
    out=$("$topogen" -o "$tmp/bad" --tsc-khz "$bad" topology/1-2-4.yaml 2>&1); rc=$?
    check "--tsc-khz '$bad': exit 2 with '--tsc-khz must be a rate in kHz' (got $rc)" \
        bash -c '[ "$1" = 2 ] && grep -q "tsc-khz must be a rate in kHz" <<<"$2"' _ "$rc" "$out"
done

# --tsc-khz-at: each hypervisor's TCG guests told their own machine's TSC rate
two=tests/topology/hypervisors/two.yaml
if gen "$tmp/tsc-at" --tsc-khz 2596213 --tsc-khz-at there=2100000 "$two"; then
    got=$(grep -o 'tsc_early_khz=[0-9]*' "$tmp/tsc-at"/domains/*.xml | sed 's|.*/||; s|\.xml:tsc_early_khz=| |' | sort | tr '\n' ' ')
    want=$(grep -v '^#' "$tmp/tsc-at/inventory.tsv" | awk -F'\t' '{print $1, ($12 == "there" ? 2100000 : 2596213)}' | sort | tr '\n' ' ')
    check "two.yaml --tsc-khz 2596213 --tsc-khz-at there=2100000: each domain the rate of its hypervisor ($got)" \
        bash -c '[ -n "$1" ] && [ "$1" = "$2" ]' _ "$got" "$want"
else
    ko "topogen --tsc-khz-at failed"
fi
for x in "nowhere=2100000|declares no hypervisor 'nowhere'" "there=99999|wants NAME=KHZ" "=2100000|wants NAME=KHZ" "there|wants NAME=KHZ" \
    "there=2100000 --tsc-khz-at there=2200000|--tsc-khz-at there given twice"; do
    IFS='|' read -r arg want <<<"$x"
    # shellcheck disable=SC2086 # the second case is two options
    out=$("$topogen" -o "$tmp/bad" --tsc-khz-at $arg "$two" 2>&1); rc=$?
    check "--tsc-khz-at $arg: exit 2 with '$want' (got $rc: $out)" bash -c '[ "$1" = 2 ] && grep -qF -- "$3" <<<"$2"' _ "$rc" "$out" "$want"
done

phase netns-names "netns mode: device names fit IFNAMSIZ and are unique, a bad mode is refused"
long=inclab-a-rather-long-lab-prefix
if "$topogen" -o "$tmp/long" --prefix $long --switches netns topology/1-4-16.yaml; then
    mbr=$(sed -n "s/.*<bridge name='\([^']*\)'.*/\1/p" "$tmp/long/network-mgmt.xml")
    names=$( (grep -v '^#' "$tmp/long/wires.tsv" | cut -f8-10 | tr '\t' '\n' | grep -v -e '^-$'
              grep -ho "<target dev='[^']*'/>" "$tmp/long"/domains/*.xml | cut -d"'" -f2) )
    check "1-4-16 with prefix $long: $(wc -w <<<"$names") device names, none over 15 characters" \
        bash -c '! tr " " "\n" <<<"$1" | grep -q "^.\{16,\}"' _ "$names"
    check "1-4-16 with prefix $long: the management bridge ($mbr) is the one wires.tsv joins" \
        bash -c '[ -n "$1" ] && [ "$(grep -v "^#" "$2" | awk -F"\t" "\$1 == \"mgmt\" {print \$8}" | sort -u)" = "$1" ]' _ "$mbr" "$tmp/long/wires.tsv"
    wired=$(grep -v '^#' "$tmp/long/wires.tsv" | cut -f8-10 | tr '\t' '\n' | grep -v -e '^-$' -e "^$mbr\$" | sort)
    taps=$(grep -ho "<target dev='[^']*'/>" "$tmp/long"/domains/*.xml | grep -v "'hdc'\|'vda'" | cut -d"'" -f2 | sort)
    check "1-4-16 with prefix $long: every device name in wires.tsv unique, the domains' taps among them" \
        bash -c '[ -z "$(uniq -d <<<"$1")" ] && [ -z "$(comm -13 <(echo "$1") <(echo "$2"))" ]' _ "$wired" "$taps"
else
    ko "topogen --switches netns with a long prefix failed"
fi
out=$("$topogen" -o "$tmp/bad" --switches bogus topology/1-2-4.yaml 2>&1); rc=$?
check "--switches bogus: exit 2 with '--switches must be vm or netns' (got $rc: $out)" \
    bash -c '[ "$1" = 2 ] && grep -q "switches must be vm or netns" <<<"$2"' _ "$rc" "$out"
phase hostile "outside strings: a topology's text reaches the controller as written, bad options are refused"
# The controller's user-data embeds the topology file as a block scalar. Its
# indentation was once guessed from the file's first line: a file whose first
# line is indented deeper than the rest (a comment, say) ended the scalar at
# its second line and broke the cloud-config. Parsed here with PyYAML, as
# cloud-init parses it.
deep=$tmp/deep.yaml
{ echo '        # a comment indented deeper than the rest'; cat topology/1-2.yaml; } > "$deep"
# yaml_check FILE SOURCE: "keys=K1,K2,... same=True|False" of cloud-config FILE, or PyYAML's error
yaml_check() {
    /usr/bin/python3 -c 'import sys, yaml
d = yaml.safe_load(open(sys.argv[1]))
c = [w["content"] for w in d.get("write_files", []) if w.get("path") == "/etc/inclab/topology.yaml"]
print("keys=" + ",".join(sorted(d)), "same=" + str(bool(c) and c[0] == open(sys.argv[2]).read()))' "$@" 2>&1 | tail -n 1
}
want="keys=bootcmd,hostname,manage_etc_hosts,write_files same=True"
if gen "$tmp/deep" "$deep"; then
    ud=$tmp/deep/seeds/controller/user-data
    got=$(yaml_check "$ud" "$deep")
    check "a topology whose first line is indented deepest reaches the controller's user-data byte for byte ($got)" [ "$got" = "$want" ]
    sed 's/content: |2$/content: |/' "$ud" > "$tmp/ud-guessed"
    got=$(yaml_check "$tmp/ud-guessed" "$deep")
    check "... where the block scalar with guessed indentation it had before does not ($got)" [ "$got" != "$want" ]
else
    ko "topogen failed on a topology whose first line is indented"
fi
# not_yaml FILE... — each FILE that PyYAML cannot read, one per line (one python3 for all)
not_yaml() {
    /usr/bin/python3 -c 'import sys, yaml
for f in sys.argv[1:]:
    try: yaml.safe_load(open(f))
    except Exception as e: print(f, str(e).replace("\n", " "))' "$@" 2>&1
}
out=$(not_yaml tests/golden/*/seeds/*/user-data tests/golden/*/seeds/*/network-config tests/golden/*/seeds/*/meta-data)
check "every golden user-data, network-config and meta-data is YAML (PyYAML)${out:+: $out}" [ -z "$out" ]
# a topology path of printable characters goes into comments only: the files stay valid XML, YAML and sh
odd="$tmp/it's: #1 <x> & \"y\" \$(z).yaml"
cp topology/1-2.yaml "$odd"
if gen "$tmp/odd" "$odd" 2>"$tmp/odd.err"; then
    bad=0
    for x in "$tmp/odd"/domains/*.xml; do virt-xml-validate "$x" domain >/dev/null 2>&1 || bad=$((bad + 1)); done
    virt-xml-validate "$tmp/odd/network-mgmt.xml" network >/dev/null 2>&1 || bad=$((bad + 1))
    bad=$((bad + $(not_yaml "$tmp/odd"/seeds/*/user-data "$tmp/odd"/seeds/*/network-config | grep -c .)))
    check "a topology path with ' : # < > & \" \$( ): its comments leave every domain, network and seed valid ($bad invalid)" [ $bad = 0 ]
else
    ko "topogen refused a printable topology path: $(cat "$tmp/odd.err")"
fi
# options written into XML, YAML and shell files: a strict grammar, exit 2 with the option named
nl=$'\n'
while IFS='|' read -r what opt val want; do
    case $val in *NL*) val=${val//NL/$nl} ;; esac
    if [ "$opt" = FILE ]; then
        out=$("$topogen" -o "$tmp/opt" "$val" 2>&1); rc=$?
    else
        out=$("$topogen" -o "$tmp/opt" "$opt" "$val" topology/1-2.yaml 2>&1); rc=$?
    fi
    check "$what: exit 2, '$want' (got $rc: $out)" bash -c '[ "$1" = 2 ] && grep -qF -- "$2" <<<"$3"' _ "$rc" "$want" "$out"
done <<'EOF'
--prefix with a quote|--prefix|lab'x|--prefix must be 1..32 characters
--prefix with a newline|--prefix|labNLx|--prefix must be 1..32 characters
--prefix over 32 characters|--prefix|a23456789012345678901234567890123|--prefix must be 1..32 characters
--prefix with '--'|--prefix|lab--x|--prefix must be 1..32 characters
--state-dir with a quote (an XML attribute)|--state-dir|/var/lib/x'/>|--state-dir must be an absolute path
--state-dir relative|--state-dir|var/lib/x|--state-dir must be an absolute path
--image with a < (XML text)|--image|host=/img/<host>|--image host= must be an absolute path
--image with a newline|--image|switch=/imgNLx|--image switch= must be an absolute path
a topology path with '--' (an XML comment)|FILE|topology/../topology/1--2.yaml|the topology file's path must be
a topology path with a newline (a shell comment)|FILE|topology/1-2.yamlNLtouch x|the topology file's path must be
EOF
check "a refused option wrote nothing" [ ! -e "$tmp/opt" ]
# lab.sh: the prefix and state directory (libvirt names, lab.env) are refused before any verb runs
for bad in "INCLAB_PREFIX=lab\$(touch $tmp/pwned)" "INCLAB_PREFIX=Lab" "INCLAB_STATE=/var/lib/x\`touch $tmp/pwned\`" "INCLAB_STATE=relative"; do
    out=$(env "$bad" lab/lab.sh status 2>&1); rc=$?
    check "lab.sh status with $bad: exit 1 naming ${bad%%=*}, nothing run (got $rc: $out)" \
        bash -c '[ "$1" = 1 ] && grep -q "^lab: $2 must be" <<<"$3" && [ ! -e "$4" ]' _ "$rc" "${bad%%=*}" "$out" "$tmp/pwned"
done
# lab.sh: a capture's seconds and a push's mode reach a node's shell and bash arithmetic: checked first
out=$(lab/lab.sh capture sw1-pku1 "x[\$(touch $tmp/pwned)]" 2>&1); rc=$?
check "lab.sh capture with seconds 'x[\$(touch ...)]': exit 1, refused, nothing run (got $rc: $out)" \
    bash -c '[ "$1" = 1 ] && grep -q "SECONDS must be a whole number" <<<"$2" && [ ! -e "$3" ]' _ "$rc" "$out" "$tmp/pwned"
out=$(lab/lab.sh push pku1 /dev/null /tmp/x "755; touch $tmp/pwned" 2>&1); rc=$?
check "lab.sh push with mode '755; touch ...': exit 1, refused, nothing run (got $rc: $out)" \
    bash -c '[ "$1" = 1 ] && grep -q "mode must be 3 or 4 octal digits" <<<"$2" && [ ! -e "$3" ]' _ "$rc" "$out" "$tmp/pwned"
phase keys "--keys: every node gets its own key alone (mode 0600), the controller the table of all"
k=$tmp/keys
if gen "$tmp/keyed" --keys "$k" topology/1-2-4.yaml && gen "$tmp/keyed-ns" --keys "$k" --switches netns topology/1-2-4.yaml; then
    nodes=$(awk -F'\t' '!/^#/ {print $1}' tests/golden/1-2-4/inventory.tsv)
    nn=$(wc -w <<<"$nodes")
    check "$nn keys in $k (dir 0700): each 64 hex digits, mode 0600, all different" bash -c '
        [ "$(stat -c %a "$1")" = 700 ] || exit 1
        for n in $2; do [ "$(stat -c %a "$1/$n.key")" = 600 ] && grep -qx "[0-9a-f]\{64\}" "$1/$n.key" || exit 1; done
        [ "$(cat "$1"/*.key | sort -u | wc -l)" = "$3" ]' _ "$k" "$nodes" "$nn"
    check "VM seeds: each user-data (0600) holds its node's key and no other's; the controller's also the table" bash -c '
        for n in $2; do
            u=$1/seeds/$n/user-data; [ "$(stat -c %a "$u")" = 600 ] || exit 1
            for m in $2; do
                has=0; grep -q "$(cat "$3/$m.key")" "$u" && has=1
                want=0; { [ "$m" = "$n" ] || [ "$n" = controller ]; } && want=1
                [ $has = $want ] || { echo "  $n: key of $m: $has, want $want"; exit 1; }
            done
        done' _ "$tmp/keyed" "$nodes" "$k"
    check "VM seeds: nothing but the user-data files differs from tests/golden/1-2-4" \
        bash -c '[ -z "$(diff -rq tests/golden/1-2-4 "$1" | grep -v "/user-data differ$")" ]' _ "$tmp/keyed"
    check "namespace nodes: nodes/NODE/node.key (0600) is its own key; only the controller has node-keys, a line per node" bash -c '
        for n in $(ls "$1/nodes"); do
            cmp -s "$1/nodes/$n/node.key" "$2/$n.key" && [ "$(stat -c %a "$1/nodes/$n/node.key")" = 600 ] || exit 1
            [ "$n" = controller ] || [ ! -e "$1/nodes/$n/node-keys" ] || exit 1
        done
        [ "$(stat -c %a "$1/nodes/controller/node-keys")" = 600 ] || exit 1
        for m in $3; do grep -qx "$m $(cat "$2/$m.key")" "$1/nodes/controller/node-keys" || exit 1; done
        [ "$(wc -l < "$1/nodes/controller/node-keys")" = "$4" ]' _ "$tmp/keyed-ns" "$k" "$nodes" "$nn"
    before=$(cat "$k"/*.key | sha256sum)
    gen "$tmp/keyed2" --keys "$k" topology/1-2-4.yaml >/dev/null 2>&1
    check "a second run keeps the lab's keys" bash -c '[ "$1" = "$(cat "$2"/*.key | sha256sum)" ]' _ "$before" "$k"
    chmod 644 "$k/sw0.key"
    out=$(gen "$tmp/keyed3" --keys "$k" topology/1-2-4.yaml 2>&1); rc=$?
    check "a key file others may read is refused (exit $rc: $out)" \
        bash -c '[ "$1" = 1 ] && grep -q "readable by its owner only" <<<"$2"' _ "$rc" "$out"
    echo "not a key" > "$k/sw1.key.tmp"; chmod 600 "$k/sw0.key"; mv "$k/sw1.key.tmp" "$k/sw1.key"; chmod 600 "$k/sw1.key"
    out=$(gen "$tmp/keyed4" --keys "$k" topology/1-2-4.yaml 2>&1); rc=$?
    check "a key file that holds no key is refused (exit $rc: $out)" \
        bash -c '[ "$1" = 1 ] && grep -q "sw1.key: not a key" <<<"$2"' _ "$rc" "$out"
else
    ko "topogen --keys failed"
fi
phase views "lab.json and topology.dot: as the topology file declares (PyYAML, graphviz), quoted, printed alone; lab.sh status and graph refuse bad input"
# check_views.py compares topogen's JSON and DOT (as graphviz reads and draws
# it) with the topology file as PyYAML reads it, not as topo.c does
views() { # views TOPOLOGY LAB.json DOT PREFIX MODE — check_views.py's complaints, empty when none
    dot -Tjson "$3" > "$tmp/dot.json" 2> "$tmp/dot.err" || { echo "dot cannot read $3: $(head -c 300 "$tmp/dot.err")"; return; }
    /usr/bin/python3 tests/golden/check_views.py "$1" "$2" "$tmp/dot.json" "$4" "$5" 2>&1 | head -n 12
}
if ! command -v dot >/dev/null; then
    ko "no dot (graphviz) to read the generated topology.dot (make deps installs graphviz)"
else
    for topo in topology/*.yaml; do
        name=$(basename "$topo" .yaml)
        for mode in vm netns; do
            g=tests/golden/$name; [ $mode = vm ] || g=$g-netns
            out=$(views "$topo" "$g/lab.json" "$g/topology.dot" inclab $mode)
            check "$name ($mode): lab.json and topology.dot say what the file declares${out:+: $out}" [ -z "$out" ]
            "$topogen" --json --switches $mode "$topo" > "$tmp/p.json" 2>&1 && "$topogen" --dot --switches $mode "$topo" > "$tmp/p.dot" 2>&1
            check "$name ($mode): topogen --json and --dot print $g/lab.json and topology.dot" \
                bash -c 'cmp -s "$1/lab.json" "$2/p.json" && cmp -s "$1/topology.dot" "$2/p.dot"' _ "$g" "$tmp"
        done
    done
    # a wrong view is caught: one host's address changed in the JSON, one edge's ends swapped and the hosts boxed in the DOT
    sed 's/"10\.1\.1\.21"/"10.1.1.22"/' tests/golden/1-2-4/lab.json > "$tmp/wrong.json"
    sed 's|10\.2\.1\.1/24\\n10\.2\.1\.7/24|10.2.1.7/24\\n10.2.1.1/24|; s/"ellipse"/"box"/' tests/golden/1-2-4/topology.dot > "$tmp/wrong.dot"
    out=$(views topology/1-2-4.yaml "$tmp/wrong.json" "$tmp/wrong.dot" inclab vm)
    check "check_views.py catches a wrong address, a swapped edge label and a host drawn as a switch ($(wc -l <<<"$out") complaints)" \
        bash -c 'grep -q "pku1: data addresses" <<<"$1" && grep -q "node pku3: shape box" <<<"$1" && grep -q "edges (parent, child)" <<<"$1"' _ "$out"
    # a hostile but accepted path (printable ASCII): a JSON and a DOT string that hold it as it is
    odd="$tmp/it's \"q\" \\N \\n \\\\ <x> & \$(z) {a=b}; #1.yaml"
    cp topology/1-2.yaml "$odd"
    if "$topogen" --json --prefix lab-x "$odd" > "$tmp/odd.json" && "$topogen" --dot "$odd" > "$tmp/odd.dot"; then
        out=$(views "$odd" "$tmp/odd.json" "$tmp/odd.dot" lab-x vm)
        check "a topology path with \" \\ \\N ' < & \$( ) { } ; #: JSON and graphviz read it back as it is${out:+: $out}" [ -z "$out" ]
    else
        ko "topogen --json/--dot refused a printable topology path"
    fi
fi
while IFS='|' read -r what args want; do
    # shellcheck disable=SC2086
    out=$("$topogen" $args 2>&1 >/dev/null); rc=$?
    check "topogen $what: exit ${want%% *}, '${want#* }' (got $rc: $out)" \
        bash -c '[ "$1" = "$2" ] && grep -qF -- "$3" <<<"$4"' _ "$rc" "${want%% *}" "${want#* }" "$out"
done <<'EOF2'
--json and --dot at once|--json --dot topology/1-2.yaml|2 print one view each
--dot with -o|--dot -o /nonexistent topology/1-2.yaml|2 no -o or --check with it
--json of a missing file|--json topology/nosuch.yaml|1 topology/nosuch.yaml: cannot open
--dot of an invalid topology|--dot tests/topology/invalid/cycle.yaml|1 tests/topology/invalid/cycle.yaml:
--json with a bad --switches|--json --switches vms topology/1-2.yaml|2 --switches must be vm or netns
EOF2
# lab.sh status: a FORMAT or argument that does not exist, and a lab that does not exist, are errors
fake=inclab-views-test
for args in "--format xml" "--format" "--bogus" "--format json --format yaml"; do
    # shellcheck disable=SC2086
    out=$(INCLAB_PREFIX=$fake INCLAB_STATE="$tmp/none" lab/lab.sh status $args 2>&1); rc=$?
    check "lab.sh status $args: exit 1 naming the format or the usage (got $rc: $out)" \
        bash -c '[ "$1" = 1 ] && grep -q "^lab: status" <<<"$2"' _ "$rc" "$out"
done
for f in table json; do
    out=$(INCLAB_PREFIX=$fake INCLAB_STATE="$tmp/none" lab/lab.sh status --format $f 2>&1 >"$tmp/st.out"); rc=$?
    check "lab.sh status --format $f of a lab that does not exist: exit 1, 'no lab', nothing on stdout (got $rc: $out)" \
        bash -c '[ "$1" = 1 ] && grep -q "^lab: no lab .'$fake'." <<<"$2" && [ ! -s "$3" ]' _ "$rc" "$out" "$tmp/st.out"
done
out=$(env FORMAT=xml INCLAB_PREFIX=$fake INCLAB_STATE="$tmp/none" make --no-print-directory -s lab-status 2>&1); rc=$?
check "make lab-status FORMAT=xml: fails naming FORMAT (got $rc: $(head -n 1 <<<"$out"))" \
    bash -c '[ "$1" != 0 ] && grep -q "FORMAT must be table or json, not .xml." <<<"$2"' _ "$rc" "$out"
# a lab that exists but runs nothing (its files, no domain or namespace): JSON that says so, exit 0
st=$tmp/stopped
if "$topogen" -o "$st/gen" --prefix $fake --state-dir "$st" --switches netns topology/1-2.yaml >/dev/null; then
    printf 'LAB_TOPOLOGY=%q\nLAB_ACCEL=tcg\nLAB_SWITCHES=netns\nLAB_TEST=0\n' topology/1-2.yaml > "$st/lab.env"
    INCLAB_PREFIX=$fake INCLAB_STATE="$st" lab/lab.sh status --format json > "$tmp/stopped.json" 2>"$tmp/stopped.err"; rc=$?
    check "lab-status JSON of a lab that runs nothing: exit $rc, the static facts of lab.json, every node absent (or unknown without libvirtd) and not ready, the lab stopped$(head -c 200 "$tmp/stopped.err")" \
        bash -c '[ "$1" = 0 ] &&
            jq -e --slurpfile s "$3" "del(.state_dir, .accelerator, .test_lab, .state, .ready) | .nodes |= map(del(.state, .ready, .readiness)) | . == \$s[0]" "$2" >/dev/null &&
            jq -e --arg d "$4" ".state == \"stopped\" and .ready == false and .accelerator == \"tcg\" and .state_dir == \$d and .test_lab == false
                and (.nodes | length) == 4 and all(.nodes[]; (.state == \"absent\" or .state == \"unknown\") and .ready == false and .readiness == null)" "$2" >/dev/null' \
        _ "$rc" "$tmp/stopped.json" "$st/gen/lab.json" "$st"
    out=$(env -u TOPOLOGY -u SWITCHES INCLAB_PREFIX=$fake INCLAB_STATE="$st" GRAPH_DIR="$tmp/own" \
        INCLAB_BUILD="$(dirname "$topogen")" lab/lab.sh graph 2>&1); rc=$?
    check "lab.sh graph without TOPOLOGY draws the lab's own (1-2, namespace switches): $tmp/own/1-2-netns.dot, its topology.dot (exit $rc)" \
        bash -c '[ "$1" = 0 ] && cmp -s "$2/own/1-2-netns.dot" "$3/gen/topology.dot" && [ -s "$2/own/1-2-netns.png" ]' _ "$rc" "$tmp" "$st"
    # make: its default TOPOLOGY is no choice (the lab's own is drawn), one on its command line is
    out=$(env -u TOPOLOGY -u SWITCHES INCLAB_PREFIX=$fake INCLAB_STATE="$st" make --no-print-directory -s lab-graph \
        BUILD="$(dirname "$topogen")" GRAPH_DIR="$tmp/mk" 2>&1 && env -u SWITCHES INCLAB_PREFIX=$fake INCLAB_STATE="$st" \
        make --no-print-directory -s lab-graph BUILD="$(dirname "$topogen")" GRAPH_DIR="$tmp/mk" TOPOLOGY=topology/1-2-4.yaml 2>&1); rc=$?
    check "make lab-graph: the lab's own without TOPOLOGY, TOPOLOGY's with it ($(ls "$tmp/mk" 2>/dev/null | tr '\n' ' '))" \
        bash -c '[ "$1" = 0 ] && [ "$(ls "$2")" = "$(printf "%s\n" 1-2-4.dot 1-2-4.png 1-2-4.svg 1-2-netns.dot 1-2-netns.png 1-2-netns.svg)" ]' \
        _ "$rc" "$tmp/mk"
    mv "$st/gen/lab.json" "$st/gen/lab.json.x"
    out=$(INCLAB_PREFIX=$fake INCLAB_STATE="$st" lab/lab.sh status --format json 2>&1 >/dev/null); rc=$?
    check "lab-status JSON of a lab made before lab.json: exit 1, says how to remake it (got $rc: $out)" \
        bash -c '[ "$1" = 1 ] && grep -q "has no .*lab.json" <<<"$2"' _ "$rc" "$out"
else
    ko "topogen could not make a lab's files for the status test"
fi
# lab.sh graph: from TOPOLOGY alone (no lab), every topology; bad input refused
if command -v dot >/dev/null; then
    for topo in topology/*.yaml; do
        name=$(basename "$topo" .yaml)
        out=$(INCLAB_PREFIX=$fake INCLAB_STATE="$tmp/none" TOPOLOGY=$topo GRAPH_DIR="$tmp/graphs" INCLAB_BUILD="$(dirname "$topogen")" \
            lab/lab.sh graph 2>&1); rc=$?
        check "lab.sh graph TOPOLOGY=$topo: exit $rc, $tmp/graphs/$name.{dot,svg,png}: the DOT topogen's, an SVG that is XML, a PNG" \
            bash -c '[ "$1" = 0 ] && cmp -s "$2.dot" "tests/golden/$3/topology.dot" &&
                /usr/bin/python3 -c "import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1])" "$2.svg" &&
                [ "$(head -c 8 "$2.png" | od -An -tx1 | tr -d " \n")" = 89504e470d0a1a0a ]' _ "$rc" "$tmp/graphs/$name" "$name"
    done
    out=$(INCLAB_PREFIX=$fake INCLAB_STATE="$tmp/none" TOPOLOGY=topology/1-2.yaml SWITCHES=netns GRAPH_DIR="$tmp/graphs" \
        INCLAB_BUILD="$(dirname "$topogen")" lab/lab.sh graph 2>&1); rc=$?
    check "lab.sh graph SWITCHES=netns: $tmp/graphs/1-2-netns.dot, the netns golden one (exit $rc)" \
        bash -c '[ "$1" = 0 ] && cmp -s "$2" tests/golden/1-2-netns/topology.dot' _ "$rc" "$tmp/graphs/1-2-netns.dot"
fi
while IFS='|' read -r what topo sw want; do
    out=$(INCLAB_PREFIX=$fake INCLAB_STATE="$tmp/none" TOPOLOGY=$topo SWITCHES=$sw GRAPH_DIR="$tmp/graphs-bad" \
        INCLAB_BUILD="$(dirname "$topogen")" lab/lab.sh graph 2>&1); rc=$?
    check "lab.sh graph $what: exit 1, '$want', nothing written (got $rc: $(tail -n 1 <<<"$out"))" \
        bash -c '[ "$1" = 1 ] && grep -qF -- "$2" <<<"$3" && [ ! -e "$4" ]' _ "$rc" "$want" "$out" "$tmp/graphs-bad"
done <<'EOF2'
of a topology that does not exist|topology/nosuch.yaml||topology file 'topology/nosuch.yaml' not found
of an invalid topology|tests/topology/invalid/cycle.yaml||topogen refused
with SWITCHES=vms|topology/1-2.yaml|vms|SWITCHES must be vm or netns, not 'vms'
EOF2
harness_end
