#!/usr/bin/env bash
# inc-jobs.sh — several jobs at once over the same switches, on the running lab.
#
# Four communicators live together, each its own job (its own rank 0 and
# master port, its own processes), with ranks by rank order of the lab's hosts
# h0..h3 (pku1..pku4 in 1-2-4):
#   J1  h0 h2         across the tree
#   J2  h1 h3         across the tree, no host in common with J1
#   J3  h0 h1 h2 h3   every host: shares each one with another job
#   J4  h2 h3         under the leaf of h2 and h3
# Every switch gives its communicators 8192 aggregation slots each out of
# 32768 (incswitch -m, the controller's -S): the leaf of h2 and h3 serves all
# four and is full. Each of the four runs inccl_check (every collective x
# dtype x op, every element checked on every rank) and holds its communicator
# afterwards (-H) until the test lets it go, so all four surely live when a
# fifth job J5 over h2 h3 asks: it must be refused at once with EBUSY naming
# that switch (inccl_check exits 3), and the four must pass whole. Then, with
# the four gone, the same fifth job passes.
#
# Barriers are checked for their return code here, not for how long a rank
# waited (-D 0): with three ranks busy-polling on one host's single vCPU, a
# rank can reach a barrier later than the rank told to be late, and the
# timing check would blame the barrier (phases 4c/4d check barrier timing).
# Needs 4 hosts with h2 and h3 under one leaf switch (1-2-4, 1-4-16).
# INC_JOB_COUNTS: element counts of J1..J4 (default 1,257,65539,262144,1048576:
# enough that they are usually still checking when J5 asks; the test says how
# many were, but all four hold their communicators either way).
# Runs in tests/lib/harness.sh: "N passed, M failed" only at its end.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/lib/harness.sh
harness_begin inc-jobs run
phase run "four jobs at once over the same switches, a fifth refused"
lab=lab/lab.sh
state=${INCLAB_STATE:-/var/lib/inclab/${INCLAB_PREFIX:-inclab}}
counts=${INC_JOB_COUNTS:-1,257,65539,262144,1048576}
limit=${INC_LIMIT:-1500} # seconds for every job to finish
inv=$state/gen/inventory.tsv
done_() { harness_end; }
col() { awk -F'\t' -v n="$1" -v c="$2" '$1 == n {print $c}' "$inv"; }

[ -r "$inv" ] || { ko "inc-jobs: no lab in $state (make lab-up)"; done_; }
[[ $counts =~ ^[0-9]+(,[0-9]+)*$ ]] || { ko "INC_JOB_COUNTS must be element counts separated by commas, not '$counts'"; done_; }
mapfile -t h < <(awk -F'\t' '$2 == "host" {print $3 "\t" $1}' "$inv" | sort -n | cut -f2)
[ "${#h[@]}" -ge 4 ] || { ko "inc-jobs needs 4 hosts, this lab has ${#h[@]}"; done_; }
leaf=$(col "${h[2]}" 7)
[ "$(col "${h[3]}" 7)" = "$leaf" ] || { ko "inc-jobs needs ${h[2]} and ${h[3]} under one leaf switch"; done_; }
ctl=$(awk -F'\t' '$2 == "controller" {print $1}' "$inv")
ctl_addr=$(col "$ctl" 4)

# job J: its hosts (rank order) and its master port on its rank 0's host
declare -A job_hosts
job_hosts[1]="${h[0]} ${h[2]}"
job_hosts[2]="${h[1]} ${h[3]}"
job_hosts[3]="${h[0]} ${h[1]} ${h[2]} ${h[3]}"
job_hosts[4]="${h[2]} ${h[3]}"
job_hosts[5]="${h[2]} ${h[3]}"
port() { echo $((52230 + $1)); }

# start J COUNTS [HOLD] — every rank of job J in the background on its host:
# /tmp/incjob.J.out and, once it exited, /tmp/incjob.J.rc; with HOLD, each
# keeps its communicator after the checks until /tmp/incjob.J.go exists
start() {
    local j=$1 c=$2 hs r=0 n x master out hold="" job
    read -r -a hs <<<"${job_hosts[$j]}"
    n=${#hs[@]}
    master=$(col "${hs[0]}" 4):$(port "$j")
    [ -z "${3:-}" ] || hold="-H /tmp/incjob.$j.go"
    # each job its own key (libinccl: INCCL_JOB_KEY): rank 0 takes only ranks that hold it
    job=$("${INCLAB_BUILD:-build}/incctl" -G -) || { ko "J$j: cannot make a job key (incctl -G -)"; return 1; }
    for x in "${hs[@]}"; do
        out=$("$lab" exec "$x" "rm -f /tmp/incjob.$j.*; (INCCL_JOB_KEY=$job inccl_check -r $r -n $n -m $master -c $c -p exact -D 0 $hold \
            > /tmp/incjob.$j.out 2>&1; echo \$? > /tmp/incjob.$j.rc) < /dev/null > /dev/null 2>&1 &" 2>&1) ||
            { ko "J$j: cannot start rank $r on $x: $out"; return 1; }
        r=$((r + 1))
    done
}

# wait_for J PATTERN SECS — until every rank of J has PATTERN in its output
# (or has exited), at most SECS; 0 when every rank showed PATTERN
wait_for() {
    local j=$1 pat=$2 t0 x all
    t0=$(date +%s)
    while [ $(($(date +%s) - t0)) -lt "$3" ]; do
        all=1
        for x in ${job_hosts[$j]}; do
            "$lab" exec "$x" "grep -q '$pat' /tmp/incjob.$j.out 2>/dev/null || { test -e /tmp/incjob.$j.rc && exit 2; exit 1; }" \
                >/dev/null 2>&1
            case $? in 0) ;; 2) return 1 ;; *) all=0; break ;; esac
        done
        [ "$all" = 1 ] && return 0
        sleep 1
    done
    return 1
}

# finished J SECS — every rank of J exited within SECS
finished() {
    local j=$1 t0 x
    t0=$(date +%s)
    for x in ${job_hosts[$j]}; do
        while ! "$lab" exec "$x" "test -e /tmp/incjob.$j.rc" >/dev/null 2>&1; do
            [ $(($(date +%s) - t0)) -lt "$2" ] || return 1
            sleep 2
        done
    done
}

# judge J — every rank of J exited 0 with all its checks passed
judge() {
    local j=$1 r=0 x out rc
    for x in ${job_hosts[$j]}; do
        out=$("$lab" exec "$x" "cat /tmp/incjob.$j.out" 2>/dev/null)
        rc=$("$lab" exec "$x" "cat /tmp/incjob.$j.rc" 2>/dev/null)
        grep '^FAIL' <<<"$out" | head -n 3 | sed "s/^/  J$j $x: /"
        if [ "$rc" = 0 ] && grep -q "^rank $r: [0-9]* passed, 0 failed" <<<"$out"; then
            ok "J$j rank $r ($x): $(grep -m1 "^rank $r: [0-9]* passed" <<<"$out")"
        else
            ko "J$j rank $r ($x) exit '${rc:-none: still running}': $(tail -n 1 <<<"$out")"
        fi
        r=$((r + 1))
    done
}

echo "inc-jobs: J1 ${job_hosts[1]}; J2 ${job_hosts[2]}; J3 ${job_hosts[3]}; J4 ${job_hosts[4]}; counts $counts;" \
     "then J5 ${job_hosts[5]} while they run (leaf $leaf full); controller $ctl_addr"
for x in "${h[@]}"; do "$lab" exec "$x" "pkill -x inccl_check; rm -f /tmp/incjob.*; true" >/dev/null 2>&1; done
t0=$(date +%s)
for j in 1 2 3 4; do start "$j" "$counts" hold || { done_; }; done
ready=1
for j in 1 2 3 4; do
    if wait_for "$j" 'communicator ready' 300; then ok "J$j: communicator ready on ${job_hosts[$j]}"
    else ko "J$j: no communicator within 300 s: $("$lab" exec "${h[0]}" "tail -n 2 /tmp/incjob.$j.out" 2>/dev/null)"; ready=0; fi
done
comms=$("$lab" exec "$ctl" "grep -c 'communicator [0-9]* of group [0-9]*: [0-9]* switches, top' /var/log/inclab/incctl.log" 2>/dev/null)
echo "  all four ready after $(($(date +%s) - t0)) s (the controller has logged $comms communicators so far)"

# J5 while the four hold their communicators: refused at once, EBUSY, the full switch named
if [ "$ready" = 1 ]; then
    t5=$(date +%s)
    start 5 1
    finished 5 120
    checking=0
    for j in 1 2 3 4; do for x in ${job_hosts[$j]}; do
        "$lab" exec "$x" "grep -q ' passed, ' /tmp/incjob.$j.out" >/dev/null 2>&1 || checking=$((checking + 1))
    done; done
    echo "  J5 answered in $(($(date +%s) - t5)) s; $checking of the 10 ranks of J1-J4 were still running their checks then"
    r=0
    for x in ${job_hosts[5]}; do
        out5=$("$lab" exec "$x" "cat /tmp/incjob.5.out" 2>/dev/null)
        rc5=$("$lab" exec "$x" "cat /tmp/incjob.5.rc" 2>/dev/null)
        if [ "$rc5" = 3 ] && grep -q "EBUSY.*switch $leaf is full" <<<"$out5"; then
            ok "J5 rank $r ($x) refused with EBUSY (exit 3): $(grep -m1 -o 'switch [a-z0-9-]* is full.*' <<<"$out5" | cut -c1-150)"
        else
            ko "J5 rank $r ($x) should be refused with EBUSY naming switch $leaf (exit 3); exit '${rc5:-none}': $(tail -n 2 <<<"$out5")"
        fi
        r=$((r + 1))
    done
fi
for j in 1 2 3 4; do wait_for "$j" 'holding the communicator' "$limit" || echo "  J$j: not through its checks after $limit s"; done
for x in "${h[@]}"; do "$lab" exec "$x" "touch /tmp/incjob.1.go /tmp/incjob.2.go /tmp/incjob.3.go /tmp/incjob.4.go" >/dev/null 2>&1; done
for j in 1 2 3 4; do finished "$j" "$limit" || echo "  J$j: not finished after $limit s"; done
echo "  (J1-J4 done in $(($(date +%s) - t0)) s)"
for j in 1 2 3 4; do judge "$j"; done

# with the four gone, the same fifth job fits
start 5 "1,257"
if finished 5 300; then judge 5; else ko "J5 alone: not finished within 300 s"; fi
for x in "${h[@]}"; do "$lab" exec "$x" "pkill -x inccl_check; true" >/dev/null 2>&1; done
done_
