#!/usr/bin/env bash
# ceiling.sh — the RDMA ceiling of the running lab: perftest's ib_send_bw over
# RC/rxe from rank 0 to the lowest rank under another leaf switch (pku1 -> pku3
# in 1-2-4: the path crosses the whole tree, the switches only routing).
#
#   experiments/ceiling.sh [-s BYTES] [-n ITERS]
#
# Prints one results.csv row on stdout (algorithm "ceiling", collective
# "p2p"; bandwidth in MB/s = 10^6 bytes/s like inccl_perf: perftest prints
# MiB/s, converted here) and a line for people on stderr. Exit 1 when the
# lab is down or ib_send_bw fails three times.
set -uo pipefail
cd "$(dirname "$0")/.."
lab=lab/lab.sh
state=${INCLAB_STATE:-/var/lib/inclab/${INCLAB_PREFIX:-inclab}}
inv=$state/gen/inventory.tsv
size=65536 iters=400
while getopts s:n: o; do
    case $o in
    s) size=$OPTARG ;;
    n) iters=$OPTARG ;;
    *) echo "usage: experiments/ceiling.sh [-s BYTES] [-n ITERS]" >&2; exit 2 ;;
    esac
done
[[ $size =~ ^[0-9]+$ && $size -ge 1 && $iters =~ ^[0-9]+$ && $iters -ge 5 ]] ||
    { echo "ceiling: -s needs a byte count >= 1 and -n a count >= 5" >&2; exit 2; }
[ -r "$inv" ] || { echo "ceiling: no lab in $state (make lab-up)" >&2; exit 1; }
col() { awk -F'\t' -v n="$1" -v c="$2" '!/^#/ && $1 == n {print $c}' "$inv"; }
src=$(awk -F'\t' '!/^#/ && $2 == "host" && $3 == 0 {print $1}' "$inv")
dst=$(awk -F'\t' -v p="$(col "$src" 7)" '!/^#/ && $2 == "host" && $7 != p {print $3, $1}' "$inv" | sort -n | head -n 1 | cut -d' ' -f2)
[ -n "$dst" ] || dst=$(awk -F'\t' '!/^#/ && $2 == "host" {print $3, $1}' "$inv" | sort -n | tail -n 1 | cut -d' ' -f2)
dst_addr=$(col "$dst" 6)
dst_addr=${dst_addr%/*}
gidx() { "$lab" exec "$1" /usr/local/sbin/inclab-ready 2>/dev/null | grep -o 'gid\[[0-9]*\]' | tr -dc 0-9; }
sgid=$(gidx "$src") dgid=$(gidx "$dst")
[ -n "$sgid" ] && [ -n "$dgid" ] || { echo "ceiling: no RoCE GID on $src or $dst (is the lab ready?)" >&2; exit 1; }
# -u 18: local ACK timeout 4.096 us * 2^18 = 1.07 s. perftest's default (67 ms) is
# shorter than a TCG guest can stall: rxe then retransmits for nothing.
perf="-d rxe0 -s $size -n $iters -F -u 18 ${CEILING_EVENTS:+-e}"
for attempt in 1 2 3; do
    "$lab" exec "$dst" "pkill -x ib_send_bw; true" >/dev/null 2>&1
    "$lab" exec "$dst" "timeout 300 ib_send_bw $perf -x $dgid < /dev/null > /tmp/ib_send_bw.server 2>&1 &" >/dev/null
    sleep 2
    out=$("$lab" exec "$src" "timeout 240 ib_send_bw $perf -x $sgid $dst_addr" 2>&1) && break
    out=
    sleep 3
done
"$lab" exec "$dst" "pkill -x ib_send_bw; true" >/dev/null 2>&1
mib=$(awk -v s="$size" '$1 == s && NF >= 4 {print $4}' <<<"$out" | tail -n 1)
[ -n "$mib" ] || { echo "ceiling: ib_send_bw $src -> $dst failed three times" >&2; exit 1; }
mb=$(awk -v m="$mib" 'BEGIN {printf "%.2f", m * 1.048576}')
time_us=$(awk -v s="$size" -v b="$mb" 'BEGIN {printf "%.2f", (b > 0 ? s / b : 0)}')
echo "ceiling: ib_send_bw $src -> $dst ($dst_addr), $iters x $size B: $mb MB/s ($mib MiB/s as perftest prints it)" >&2
echo "ceiling,p2p,-,-,-,2,$size,-,$iters,$time_us,$mb,$mb,0"
