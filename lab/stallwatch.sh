#!/usr/bin/env bash
# stallwatch.sh — watch a running lab for a data path that stopped, and record
# what each host's rdma_rxe says at that moment (the 1-4-16 ReduceScatter hang,
# hostlib/README.md: a sender with sends posted and no frame on its link).
#
#   lab/stallwatch.sh [INTERVAL] [DUMPS]     (INCLAB_PREFIX / INCLAB_STATE as lab.sh)
#
# Every INTERVAL seconds (default 8, 2..600) it asks the controller for every
# switch's counters (incctl -Q) and prints one line with the sum of their
# rx_frames. When that sum is non-zero and the same two times in a row (no
# switch took in a frame for a whole interval while a communicator exists), it
# prints the switches' counters whole and, for every host of the lab: its
# queue pairs (`rdma res show qp -d`: state, sq-psn, rq-psn), its rxe counters
# (sent_pkts, send_err, completer_retry_err, rcvd_seq_err, ...), its IP counters
# (/proc/net/snmp: OutRequests, OutDiscards; rxe sends with ip_local_out, past
# UDP's), its qdiscs' backlog (tc -s qdisc) and its interfaces (ip -s link). It stops after DUMPS such dumps (default 2, 1..20) or on
# SIGINT/SIGTERM. Run it beside the collectives in another shell; it only
# reads. Exit 0; 2 when there is no lab or an argument is bad.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
state=${INCLAB_STATE:-/var/lib/inclab/${INCLAB_PREFIX:-inclab}}
interval=${1:-8} dumps=${2:-2}
[[ $interval =~ ^[0-9]{1,3}$ ]] && [ "$interval" -ge 2 ] && [ "$interval" -le 600 ] ||
    { echo "stallwatch: INTERVAL must be whole seconds in 2..600, not '$interval'" >&2; exit 2; }
[[ $dumps =~ ^[0-9]{1,2}$ ]] && [ "$dumps" -ge 1 ] && [ "$dumps" -le 20 ] ||
    { echo "stallwatch: DUMPS must be 1..20, not '$dumps'" >&2; exit 2; }
inv=$state/gen/inventory.tsv
[ -r "$inv" ] || { echo "stallwatch: no lab in $state (make lab-up)" >&2; exit 2; }
lab=$top/lab/lab.sh
ctl=$(awk -F'\t' '!/^#/ && $2 == "controller" {print $1; exit}' "$inv")
mapfile -t hosts < <(awk -F'\t' '!/^#/ && $2 == "host" {print $1}' "$inv")
[ -n "$ctl" ] && [ ${#hosts[@]} -gt 0 ] || { echo "stallwatch: no controller or no host in $inv" >&2; exit 2; }
trap 'exit 0' INT TERM
# what a host says about its RDMA data path: read-only commands
host_cmd='echo "qp:"; rdma res show qp -d 2>&1 | grep -v "^$";
for f in /sys/class/infiniband/*/ports/1/hw_counters/*; do printf "%s=%s " "${f##*/}" "$(cat "$f")"; done; echo;
grep -A 1 "^Ip:" /proc/net/snmp; tc -s qdisc 2>&1; ip -s link 2>&1'
prev="" done=0
while sleep "$interval"; do
    q=$("$lab" exec "$ctl" "incctl -Q 127.0.0.1" 2>&1)
    s=$(grep -o 'rx_frames: [0-9]*' <<<"$q" | awk '{s += $2} END {print s + 0}')
    echo "stallwatch $(date -u +%H:%M:%S): switches' rx_frames $s"
    if [ "$s" = "$prev" ] && [ "$s" != 0 ]; then
        echo "stallwatch: no switch took a frame in ${interval} s: the switches' counters, then every host's"
        echo "$q"
        for h in "${hosts[@]}"; do
            echo "== $h"
            "$lab" exec "$h" "$host_cmd" 2>&1
        done
        done=$((done + 1))
        [ "$done" -lt "$dumps" ] || exit 0
    fi
    prev=$s
done
