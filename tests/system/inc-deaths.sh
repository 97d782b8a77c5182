#!/usr/bin/env bash
# inc-deaths.sh — a death in the lab is an error on every surviving rank
# within 10 s, never a hang, and the lab comes back by itself.
#
# Each case kills something with SIGKILL while a long in-network AllReduce
# (inccl_perf, 64 MiB repeated) runs on every rank of the tree:
#
#   switch   incswitch on the last rank's leaf: every rank exits non-zero
#            within 10 s naming that switch (the controller tells rank 0,
#            rank 0 tells the others); its service restarts it, it
#            registers again, and a new AllReduce on every rank passes.
#            Meanwhile a second job on the first leaf's ranks alone, which
#            does not use that switch, goes on: it was running when the
#            switch died and ends with every result verified
#   member   the last rank's inccl_perf: every other rank exits within 10 s
#            saying that rank went away (rank 0 sees its connection end)
#   rank 0   rank 0's inccl_perf: every other rank exits within 10 s saying
#            rank 0 went away
#
# The time is taken on this machine from the kill to the moment each rank's
# exit status exists in its guest (one waiting exec per rank, started before
# the kill), so it is an upper bound.
# Runs in tests/lib/harness.sh: "N passed, M failed" only at its end.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/lib/harness.sh
. tests/lib/registered.sh
lab=lab/lab.sh
state=${INCLAB_STATE:-/var/lib/inclab/${INCLAB_PREFIX:-inclab}}
inv=$state/gen/inventory.tsv
bound=${INC_DEATH_BOUND:-10}      # seconds from a kill to every survivor's error
tmp=$(mktemp -d)
stop_all() {
    for h in "${hosts[@]:-}"; do [ -n "$h" ] && "$lab" exec "$h" "pkill -x inccl_perf; true" >/dev/null 2>&1; done
    rm -rf "$tmp"
}
harness_begin inc-deaths "switch member rank0"
harness_on_exit stop_all
col() { awk -F'\t' -v n="$1" -v c="$2" '$1 == n {print $c}' "$inv"; }
[ -r "$inv" ] || { ko "inc-deaths: no lab in $state (make lab-up)"; harness_end; }
mapfile -t hosts < <(awk -F'\t' '$2 == "host" {print $3 "\t" $1}' "$inv" | sort -n | cut -f2)
n=${#hosts[@]} master=$(col "${hosts[0]}" 4) last=$((${#hosts[@]} - 1))
ctl=$(awk -F'\t' '$2 == "controller" {print $1}' "$inv")
leaf=$(col "${hosts[$last]}" 7)
nsw=$(awk -F'\t' '$2 == "switch"' "$inv" | wc -l)
echo "inc-deaths: $n ranks, rank 0 at $master; the switch killed is $leaf (the leaf of rank $last); bound $bound s"

# start RUN_ARGS — inccl_perf on every rank in the background; each guest
# writes its exit status to /tmp/death.rc and its stderr to /tmp/death.err.
start() {
    local job
    job=$("${INCLAB_BUILD:-build}/incctl" -G -) || return 1 # the job's key (libinccl: INCCL_JOB_KEY)
    for i in "${!hosts[@]}"; do
        "$lab" exec "${hosts[$i]}" "pkill -x inccl_perf; rm -f /tmp/death.*; (INCCL_JOB_KEY=$job inccl_perf -r $i -N $n -m $master $* \
            > /tmp/death.out 2> /tmp/death.err; echo \$? > /tmp/death.rc) < /dev/null > /dev/null 2>&1 &" >/dev/null
    done
}

# running — rank 0 is through its first AllReduce (then 3 s more): a kill
# before that would test the bootstrap instead.
running() {
    local t0=$SECONDS
    while [ $((SECONDS - t0)) -lt 120 ]; do
        "$lab" exec "${hosts[0]}" "grep -q 'iteration' /tmp/death.err 2>/dev/null || test -e /tmp/death.rc" >/dev/null 2>&1 && {
            sleep 3
            return 0
        }
        sleep 1
    done
    return 1
}

# watch_exits SKIP — for every rank but SKIP, a background exec that returns
# once its rank's exit status exists (at most 120 s), then notes this
# machine's time in $tmp/seen.I.
watch_exits() {
    rm -f "$tmp"/seen.*
    for i in "${!hosts[@]}"; do
        [ "$i" = "$1" ] && continue
        ( "$lab" exec "${hosts[$i]}" "for k in \$(seq 1 1200); do test -e /tmp/death.rc && exit 0; sleep 0.1; done; exit 1" 130 \
              >/dev/null 2>&1 && date +%s.%N > "$tmp/seen.$i" ) &
    done
}

# judge CASE SKIP KILLED_AT WORDS — every rank but SKIP exited non-zero within
# the bound after KILLED_AT, its stderr matching WORDS.
judge() {
    local case=$1 skip=$2 at=$3 words=$4 i
    wait
    for i in "${!hosts[@]}"; do
        [ "$i" = "$skip" ] && continue
        local h=${hosts[$i]} rc err took
        rc=$("$lab" exec "$h" "cat /tmp/death.rc" 2>/dev/null)
        err=$("$lab" exec "$h" "grep -m 1 'failed' /tmp/death.err" 2>/dev/null)
        took=$([ -s "$tmp/seen.$i" ] && awk -v a="$at" '{printf "%.1f", $1 - a}' "$tmp/seen.$i" || echo none)
        if [ "${rc:-}" != "" ] && [ "$rc" != 0 ] && [ "$took" != none ] &&
            awk -v t="$took" -v b="$bound" 'BEGIN {exit !(t <= b)}' && grep -Eq -- "$words" <<<"$err"; then
            ok "$case: rank $i ($h) exit $rc after $took s: $(cut -c1-160 <<<"$err")"
        else
            ko "$case: rank $i ($h) exit '${rc:-none}' after ${took} s (want non-zero within $bound s, saying /$words/): $(cut -c1-200 <<<"$err")"
        fi
    done
    # stragglers only: a pkill sent to a rank that exited could still be on its
    # way through a busy guest agent when the next case starts its ranks
    for h in "${hosts[@]}"; do
        "$lab" exec "$h" "test -e /tmp/death.rc || pkill -x inccl_perf; true" >/dev/null 2>&1
    done
}

# registered — every switch registered with the controller again (60 s at most).
registered() { switches_registered "$ctl" "$nsw" 60; }

long="-C allreduce -d float32 -o sum -b 64M -e 64M -n 50 -w 0"

# The unaffected job: the ranks under rank 0's leaf, when that is not the
# switch killed (its own rank 0 and master port), a verified AllReduce long
# enough to outlive the kill (64 MiB: its rank 0 shows each iteration on
# stderr, inccl_perf's PROGRESS_BYTES, which tells the test it runs); its
# files are /tmp/unaff.*.
leaf0=$(col "${hosts[0]}" 7)
mapfile -t others < <(awk -F'\t' -v l="$leaf0" '$2 == "host" && $7 == l {print $3 "\t" $1}' "$inv" | sort -n | cut -f2)
[ "$leaf0" != "$leaf" ] && [ "${#others[@]}" -ge 2 ] || others=()
unaffected() {
    local i job
    job=$("${INCLAB_BUILD:-build}/incctl" -G -) || return 1 # its own job key
    for i in "${!others[@]}"; do
        "$lab" exec "${others[$i]}" "rm -f /tmp/unaff.*; (INCCL_JOB_KEY=$job inccl_perf -r $i -N ${#others[@]} -m $(col "${others[0]}" 4):52240 \
            -C allreduce -d int32 -o sum -b 64M -e 64M -n 6 -w 0 > /tmp/unaff.out 2> /tmp/unaff.err; echo \$? > /tmp/unaff.rc) \
            < /dev/null > /dev/null 2>&1 &" >/dev/null
    done
    local t0=$SECONDS
    while [ $((SECONDS - t0)) -lt 120 ]; do
        "$lab" exec "${others[0]}" "grep -q 'iteration' /tmp/unaff.err 2>/dev/null" >/dev/null 2>&1 && return 0
        sleep 1
    done
    return 1
}

phase switch "a switch killed mid-AllReduce"
start "$long"
if running; then
    alive=""
    if [ "${#others[@]}" -ge 2 ]; then
        unaffected || ko "the unaffected job (${others[*]}) did not start its AllReduces within 120 s"
    fi
    watch_exits -1
    sleep 1 # the waiting execs have started in their guests
    for h in "${others[@]}"; do
        "$lab" exec "$h" "test -e /tmp/unaff.rc" >/dev/null 2>&1 || alive+=" $h"
    done
    at=$(date +%s.%N)
    "$lab" exec "$leaf" 'if [ -s /run/inclab/service.pid ]; then kill -9 "$(cat /run/inclab/service.pid)"; else pkill -9 -x incswitch; fi' \
        >/dev/null 2>&1
    judge "switch $leaf killed" -1 "$at" "switch $leaf"
    if [ "${#others[@]}" -ge 2 ]; then
        check "the unaffected job's ranks were all running when $leaf died (${alive# })" [ "${alive# }" = "${others[*]}" ]
        for i in "${!others[@]}"; do
            t0=$SECONDS
            while [ $((SECONDS - t0)) -lt 300 ]; do
                "$lab" exec "${others[$i]}" "test -e /tmp/unaff.rc" >/dev/null 2>&1 && break
                sleep 2
            done
            rc=$("$lab" exec "${others[$i]}" "cat /tmp/unaff.rc" 2>/dev/null)
            out=$("$lab" exec "${others[$i]}" "tail -n 1 /tmp/unaff.out; grep -m1 failed /tmp/unaff.err" 2>/dev/null)
            check "unaffected job, rank $i (${others[$i]}): 6 AllReduces of 64 MiB verified across the switch's death (exit ${rc:-none}): $(tail -n 1 <<<"$out" | cut -c1-120)" [ "${rc:-}" = 0 ]
        done
    else
        echo "  (no unaffected job: rank 0's leaf is the switch killed, or holds one rank)"
    fi
else
    ko "switch: inccl_perf did not start on rank 0 within 120 s: $("$lab" exec "${hosts[0]}" "cat /tmp/death.err" 2>/dev/null | tail -n 2)"
fi
if registered; then ok "switch $leaf restarted and registered again ($nsw switches)"
else ko "switch $leaf did not register again within 60 s: $("$lab" exec "$ctl" "tail -n 3 /var/log/inclab/incctl.log" 2>/dev/null)"; fi
start "-C allreduce -d float32 -o sum -b 1M -e 1M -n 2 -w 0"
t0=$SECONDS
for h in "${hosts[@]}"; do
    while [ $((SECONDS - t0)) -lt 300 ]; do "$lab" exec "$h" "test -e /tmp/death.rc" >/dev/null 2>&1 && break; sleep 2; done
done
for i in "${!hosts[@]}"; do
    rc=$("$lab" exec "${hosts[$i]}" "cat /tmp/death.rc" 2>/dev/null)
    check "after the restart: rank $i (${hosts[$i]}) verified a 1 MiB AllReduce (exit ${rc:-none})" [ "${rc:-}" = 0 ]
done

phase member "a member rank killed mid-AllReduce"
start "$long"
if running; then
    watch_exits "$last"
    sleep 1
    at=$(date +%s.%N)
    "$lab" exec "${hosts[$last]}" "pkill -9 -x inccl_perf" >/dev/null 2>&1
    judge "rank $last killed" "$last" "$at" "rank $last went away"
else
    ko "member: inccl_perf did not start on rank 0 within 120 s"
fi

phase rank0 "rank 0 killed mid-AllReduce"
start "$long"
if running; then
    watch_exits 0
    sleep 1
    at=$(date +%s.%N)
    "$lab" exec "${hosts[0]}" "pkill -9 -x inccl_perf" >/dev/null 2>&1
    judge "rank 0 killed" 0 "$at" "rank 0 went away"
else
    ko "rank0: inccl_perf did not start on rank 0 within 120 s"
fi
harness_end
