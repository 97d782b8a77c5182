#!/usr/bin/env bash
# seeds.sh OUT MKSEEDS — the seed corpora of every fuzz target, made from the
# project's own fixtures, golden inputs and samples into OUT/TARGET/
# (build time; nothing of it is kept in git). MKSEEDS is fuzz/mkseeds.c built.
set -euo pipefail
out=$1 mkseeds=$2
cd "$(dirname "$0")/.."
rm -rf "$out" && mkdir -p "$out"

# frames, bundles, the engine, switch rules: from the pcap fixtures and the controller's plans
"$mkseeds" "$out" tests/fixtures/*.pcap -- topology/*.yaml

# switch rules at the limits sw_rules_parse() accepts (a switch must refuse what it cannot hold, not allocate it)
{
    printf 'switch: sw1\nnslots: 4194304\nwindow: 65536\nparent: {port: up, local_ip: 172.16.0.5, peer_ip: 172.16.0.1, local_qpn: 512, peer_qpn: 768}\nchildren:\n'
    for i in $(seq 0 63); do
        printf '  - {port: p%d, local_ip: 10.1.1.1, peer_ip: 10.1.2.%d, local_qpn: 256, peer_qpn: 17, first_rank: %d, udp: 4792}\n' $((i % 60)) $i $i
    done
} > "$out/swconfig/limits"
# port names at the edges of what a kernel takes (1..15 bytes, no '/', ':', space or NUL)
for p in "''" "'.'" "'a/b'" "\"a\\0b\"" fifteen-chars-x sixteen-chars-xx; do
    printf 'children:\n  - {port: %s, local_ip: 10.1.1.1, peer_ip: 10.1.1.3, local_qpn: 1, peer_qpn: 2, first_rank: 0}\n' "$p"
done | split -l 2 - "$out/swconfig/port-"

# topology files: the lab's and the invalid ones of tests/topology
mkdir -p "$out/topo"
for f in topology/*.yaml tests/topology/invalid/*.yaml; do cp "$f" "$out/topo/$(basename "$(dirname "$f")")-$(basename "$f")"; done

# result files: fuzz_results' selector byte (0 results.csv, 1 loggp.csv, 2 meta.yaml, 3 csv---meta), then the file
mkdir -p "$out/results"
for d in tests/analysis/samples/*/; do
    run=$(basename "$d")
    printf '\0' | cat - "$d/results.csv" > "$out/results/$run-results.csv"
    printf '\2' | cat - "$d/meta.yaml" > "$out/results/$run-meta.yaml"
    { printf '\3'; cat "$d/results.csv"; printf -- '---\n'; cat "$d/meta.yaml"; } > "$out/results/$run-run"
    [ ! -f "$d/loggp.csv" ] || printf '\1' | cat - "$d/loggp.csv" > "$out/results/$run-loggp.csv"
done
for f in tests/analysis/bad/*.csv; do
    case $f in *loggp*) sel='\1' ;; *) sel='\0' ;; esac
    printf "$sel" | cat - "$f" > "$out/results/bad-$(basename "$f")"
done

# control messages: a whole session of the 1-2-4 lab (controller/README.md), as each side sends it
msgs=(
    $'msg: register\nswitch: sw1\n...\n'
    $'msg: group\nnranks: 4\n...\n'
    $'msg: communicator\ngroup: 1\nranks:\n  - {rank: 0, ip: 10.1.1.21, qpn: 17}\n  - {rank: 1, ip: 10.1.1.5, qpn: 18}\n  - {rank: 2, ip: 10.2.1.7, qpn: 19}\n  - {rank: 3, ip: 10.2.1.12, qpn: 20}\n...\n'
    $'msg: ok\ncomm: 1\n...\n'
    $'msg: error\ncomm: 1\nerror: "no such port"\n...\n'
    $'msg: counters\nswitch: sw1\ncomm: 1\ncounters: {rx_frames: 12, tx_frames: 7, drop_icrc: 0}\n...\n'
    $'msg: release\ncomm: 1\n...\n'
    $'msg: join\nrank: 1\nnranks: 4\n...\n'
    $'msg: config\ncomm: 3\npsn: 100\nswitch_ip: 10.1.1.1\nswitch_qpn: 256\n...\n'
    $'msg: fault\ncomm: 3\nerror: "switch sw2 went away"\n...\n'
)
mkdir -p "$out/ctlmsg"
i=0
for m in "${msgs[@]}"; do
    { printf '\x3f'; printf '%s' "$m"; } > "$out/ctlmsg/msg$i"; i=$((i + 1))
done
{ printf '\x07'; printf '%s' "${msgs[@]}"; } > "$out/ctlmsg/session"

# the controller: records of (connection, length, bytes); connections 0..3 switches, 4..5 clients
rec() { # rec CONN TEXT
    local n=${#2}
    printf "\\x$(printf %02x "$1")\\x$(printf %02x $((n >> 8)))\\x$(printf %02x $((n & 255)))"
    printf '%s' "$2"
}
mkdir -p "$out/incctl"
{
    for s in 0 1 2; do rec $s $'msg: register\nswitch: sw'$s$'\n...\n'; done
    rec 4 "${msgs[1]}"
    rec 4 "${msgs[2]}"
    for s in 0 1 2; do rec $s "${msgs[3]}"; done
    rec 5 $'msg: counters\n...\n'
    for s in 0 1 2; do rec $s "${msgs[5]}"; done
    rec 4 "${msgs[6]}"
} > "$out/incctl/session"
{
    for s in 0 1 2; do rec $s $'msg: register\nswitch: sw'$s$'\n...\n'; done
    rec 4 "${msgs[1]}"
    rec 4 "${msgs[2]}"
    rec 1 "${msgs[4]}"
    rec 5 "${msgs[6]}"
} > "$out/incctl/refused"
{
    for s in 0 1 2; do rec $s $'msg: register\nswitch: sw'$s$'\n...\n'; done
    rec 4 "${msgs[1]}"
    rec 4 "${msgs[2]}"
    rec $((0x80 | 0)) "${msgs[3]}"   # the deadline passes, then sw0 answers late
    rec $((0x40 | 2)) $'msg: register\nswitch: sw2\n...\n'   # sw2 restarts
} > "$out/incctl/late"
# libinccl's bootstrap (fuzz_group): mode byte, nranks byte (2 + b % 3), then each connection's stream
len16() { printf "\\x$(printf %02x $(($1 >> 8)))\\x$(printf %02x $(($1 & 255)))"; }
mkdir -p "$out/group"
go=$'msg: go\n...\n'
{ printf '\0\2'; printf '%s' "${msgs[8]}" "$go"; } > "$out/group/member"
{ printf '\0\2'; printf '%s' "${msgs[9]}" "${msgs[8]}" "$go" "${msgs[9]}"; } > "$out/group/member-fault"
{ printf '\2\2'; printf '%s' $'msg: ringcfg\npsn: 7\nleft_ip: 10.2.1.12\nleft_qpn: 34\nright_ip: 10.1.1.5\nright_qpn: 33\n...\n' "$go"; } \
    > "$out/group/member-ring"
answer=$'msg: ok\ncomm: 1\npsn: 100\nroot: sw0\nswitches: [sw1, sw2, sw0]\nranks:\n'
for r in 0 1 2 3; do answer+="  - {rank: $r, switch: sw$((r / 2 + 1)), switch_ip: 10.$((r / 2 + 1)).1.1, switch_qpn: 256}"$'\n'; done
answer+=$'...\n'
{
    printf '\1\2'; len16 ${#answer}; printf '%s' "$answer"
    for r in 1 2 3; do
        m=$'msg: qp\nrank: '$r$'\nip: 10.1.1.'$((r + 4))$'\nqpn: '$((17 + r))$'\n...\n'$'msg: ready\n...\n'
        [ $r = 3 ] || len16 ${#m}
        printf '%s' "$m"
    done
} > "$out/group/rank0"
{
    printf '\3\2'; len16 0
    for r in 1 2 3; do
        m=$'msg: ring\nrank: '$r$'\nip: 10.1.1.'$((r + 4))$'\nqpn_left: 33\nqpn_right: 34\n...\n'$'msg: ready\n...\n'
        [ $r = 3 ] || len16 ${#m}
        printf '%s' "$m"
    done
} > "$out/group/rank0-ring"
{ printf '\5\2'; printf '%s' "${msgs[7]}" $'msg: join\nrank: 2\nnranks: 4\n...\n' "${msgs[7]}" $'msg: join\nrank: 0\nnranks: 9\n...\n'; } \
    > "$out/group/joins"

for t in "$out"/*/; do printf '%s %s\n' "$(basename "$t")" "$(ls "$t" | wc -l)"; done | tr '\n' ' '
echo
