#!/usr/bin/env bash
# inc-collectives.sh — in-network collectives on the running lab, bootstrapped
# the real way: the controller (incctl on the controller node) and the switch
# daemons (incswitch on every switch, registered with it) run as services;
# the ranks meet at rank 0, which asks the controller for the communicator;
# the controller pushes the rules to the switches.
#
# INC_SCOPE=leaf (default): the hosts under rank 0's leaf switch (pku1, pku2
#   in 1-2-4), aggregated on that one switch.
# INC_SCOPE=tree: every host; leaves forward to their parents (UDP 4792,
#   in bundles on UDP 4793: checked in the switches' counters), the top
#   switch sends the results down.
# INC_COUNTS: element counts (default 1,255,256,257,1031,65539).
# INC_PATTERN: inccl_check's inputs, ieee (default: float sums that round,
#   NaN, ±Inf, ±0, int32 overflow, checked bit for bit against the tree's
#   order, given to inccl_check as -t from the inventory: the order in which
#   the switches fold a float SUM at any fan-in; INC_TREE=SPEC
#   gives another, to show that a reference in the wrong order is caught)
#   or exact.
# INC_COLLS: inccl_check -k, the collectives to check (allreduce, reduce,
#   broadcast, barrier, allgather, reducescatter, alltoall, separated by
#   commas, or all; default: inccl_check's, allreduce,reduce,broadcast,barrier
#   (the ring: without reduce): the block collectives cost a round trip per
#   block, and the callers that check large counts ask for them by name).
# INC_ALGO: inc (default) or ring (the host baseline: no reduce, exact inputs).
# INC_DTYPES: inccl_check -d, the dtypes each collective runs in: a comma list
#   of int32 uint32 int64 uint64 float16 bfloat16 float32 float64, or all
#   (default int32,float32: each further dtype adds about as much time again
#   as one of these two).
# INC_DTYPES_LAST: the last rank's -d instead (a test of ranks that disagree:
#   with INC_EXPECT_FAIL='the switch refused' every rank must fail, clearly).
# INC_COUNTS_LAST: the last rank's -c instead (ranks that disagree on the
#   count: with INC_EXPECT_FAIL='differs in count' every rank must fail, one
#   at least saying so, the others after it gave up).
# INC_WAIT_MS: inccl_check -W, how long a collective waits without progress
#   (default libinccl's 60000; a test of ranks that disagree sets it low).
# INC_EXPECT_FAIL=REGEX: a switch was told to be wrong (lab.sh fault): every
#   rank must exit 1, its first FAIL line the fault's (REGEX) or a timeout
#   after a peer gave up, and at least one rank must show REGEX.
#
# Hosts run inccl_check: every collective × dtype × op verified on every rank
# against an expectation the rank computes itself, barriers with a late rank.
# Runs in tests/lib/harness.sh: "N passed, M failed" only at its end.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/lib/harness.sh
. tests/lib/registered.sh
harness_begin inc-collectives run
phase run "inccl_check on the ranks"
lab=lab/lab.sh
state=${INCLAB_STATE:-/var/lib/inclab/${INCLAB_PREFIX:-inclab}}
counts=${INC_COUNTS:-1,255,256,257,1031,65539}
scope=${INC_SCOPE:-leaf}
limit=${INC_LIMIT:-1500}   # seconds for all ranks to finish
pattern=${INC_PATTERN:-ieee}
dtypes=${INC_DTYPES:-int32,float32}
dtypes_last=${INC_DTYPES_LAST:-$dtypes}
counts_last=${INC_COUNTS_LAST:-$counts}
wait_ms=${INC_WAIT_MS:-}
expect_fail=${INC_EXPECT_FAIL:-}
algo=${INC_ALGO:-inc}
colls=${INC_COLLS:-}
. tests/lib/caught.sh
inv=$state/gen/inventory.tsv
done_() { harness_end; }
col() { awk -F'\t' -v n="$1" -v c="$2" '$1 == n {print $c}' "$inv"; }

# tree_spec NODE — the aggregation tree below NODE over the ranks of this run,
# as inccl_check -t reads it: a switch is "(" its children ")" in rank order
# (the order the controller lists them in, whatever order the inventory has
# them in: sw1 of 1-2-2-2 is "(0,(1,2))"), a host its rank; a switch with one
# child in the run is that child.
tree_spec() {
    local kids=() k sub
    if [ -n "${in_run[$1]:-}" ]; then echo "${in_run[$1]}"; return; fi
    for k in $(awk -F'\t' -v p="$1" '!/^#/ && $7 == p {print $1}' "$inv"); do
        sub=$(tree_spec "$k")
        # each child behind its lowest rank, to be sorted by it
        [ -z "$sub" ] || kids+=("$(grep -o '[0-9]*' <<<"$sub" | sort -n | head -n 1) $sub")
    done
    [ ${#kids[@]} = 0 ] || mapfile -t kids < <(printf '%s\n' "${kids[@]}" | sort -n | cut -d' ' -f2-)
    case ${#kids[@]} in
    0) ;;
    1) echo "${kids[0]}" ;;
    *) (IFS=,; echo "(${kids[*]})") ;;
    esac
}

[ -r "$inv" ] || { ko "inc-collectives: no lab in $state (make lab-up)"; done_; }
[[ $counts =~ ^[0-9]+(,[0-9]+)*$ ]] || { ko "INC_COUNTS must be element counts separated by commas, not '$counts'"; done_; }
[[ $counts_last =~ ^[0-9]+(,[0-9]+)*$ ]] || { ko "INC_COUNTS_LAST must be element counts separated by commas, not '$counts_last'"; done_; }
[ -z "$wait_ms" ] || [[ $wait_ms =~ ^[1-9][0-9]{0,5}$ ]] || { ko "INC_WAIT_MS must be milliseconds (1..600000), not '$wait_ms'"; done_; }
[ -z "$colls" ] || [[ $colls =~ ^[a-z]+(,[a-z]+)*$ ]] || { ko "INC_COLLS must be collective names separated by commas, not '$colls'"; done_; }
case $algo in inc|ring) ;; *) ko "INC_ALGO must be inc or ring, not '$algo'"; done_ ;; esac
for d in "$dtypes" "$dtypes_last"; do # inccl_check refuses unknown names itself; this keeps the shell line safe
    [[ $d =~ ^[a-z0-9]+(,[a-z0-9]+)*$ ]] || { ko "INC_DTYPES and INC_DTYPES_LAST must be dtype names separated by commas, not '$d'"; done_; }
done
ctl=$(awk -F'\t' '$2 == "controller" {print $1}' "$inv")
ctl_addr=$(col "$ctl" 4)
leaf0=$(awk -F'\t' '$2 == "host" && $3 == 0 {print $7}' "$inv")
case "$scope" in
leaf) mapfile -t hosts < <(awk -F'\t' -v l="$leaf0" '$2 == "host" && $7 == l {print $3 "\t" $1}' "$inv" | sort -n | cut -f2) ;;
tree) mapfile -t hosts < <(awk -F'\t' '$2 == "host" {print $3 "\t" $1}' "$inv" | sort -n | cut -f2) ;;
*) ko "INC_SCOPE must be leaf or tree, not '$scope'"; done_ ;;
esac
n=${#hosts[@]}
master=$(col "${hosts[0]}" 4)
declare -A in_run
for i in "${!hosts[@]}"; do in_run[${hosts[$i]}]=$i; done
top=$(awk -F'\t' '!/^#/ && $2 == "switch" && $7 == "-" {print $1}' "$inv")
spec=${INC_TREE:-$(tree_spec "$top")}
case $spec in "("*) ;; *) spec="($spec)" ;; esac
[[ $spec =~ ^[0-9(),]+$ ]] || { ko "the tree of this run from $inv is not a tree spec: '$spec'"; done_; }
if [ "$algo" = ring ] && [ "$pattern" = ieee ]; then
    # the ring adds floats in its own order, not the tree's: inccl_check refuses ieee with it
    [ -z "${INC_PATTERN:-}" ] || { ko "INC_PATTERN=ieee: the ring baseline takes exact inputs only"; done_; }
    pattern=exact
fi
case $pattern in
ieee) topt="-p ieee -t '$spec'" ;;   # a tree spec holds only ( ) , and digits
exact) topt="-p exact" ;;
*) ko "INC_PATTERN must be ieee or exact, not '$pattern'"; done_ ;;
esac
topt="$topt -A $algo${colls:+ -k $colls}${wait_ms:+ -W $wait_ms}"
echo "inc-collectives ($scope, $algo): ranks ${hosts[*]}; rank 0 at $master; controller $ctl_addr; counts $counts${INC_COUNTS_LAST:+ (the last rank: $counts_last)}; dtypes $dtypes${INC_DTYPES_LAST:+ (the last rank: $dtypes_last)}; inputs $pattern, tree $spec; collectives ${colls:-the default of inccl_check}${expect_fail:+; expecting failures matching '$expect_fail'}"

# The control plane is up: every switch registered with the controller.
mapfile -t switches < <(awk -F'\t' '$2 == "switch" {print $1}' "$inv")
nsw=${#switches[@]}
switches_registered "$ctl" "$nsw"
if [ "${reg:-0}" -ge "$nsw" ]; then ok "controller: all $nsw switches registered"
else ko "controller: ${reg:-0} of $nsw switches registered: $("$lab" exec "$ctl" "tail -n 5 /var/log/inclab/incctl.log")"; done_; fi

# where each switch's log stands: its counters of this run are logged after
declare -A logged
for sw in "${switches[@]}"; do
    logged[$sw]=$("$lab" exec "$sw" "wc -l < /var/log/inclab/incswitch.log" 2>/dev/null)
done
# the job's key (libinccl: INCCL_JOB_KEY): rank 0 takes only ranks that hold it
job=$("${INCLAB_BUILD:-build}/incctl" -G -) || { ko "cannot make a job key (incctl -G -)"; done_; }
for i in "${!hosts[@]}"; do
    d=$dtypes c=$counts
    [ "$i" != $((n - 1)) ] || { d=$dtypes_last; c=$counts_last; }
    out=$("$lab" exec "${hosts[$i]}" "pkill -x inccl_check; rm -f /tmp/inccl.*; (INCCL_JOB_KEY=$job inccl_check -r $i -n $n -m $master -c $c -d $d $topt \
        > /tmp/inccl.out 2>&1; echo \$? > /tmp/inccl.rc) < /dev/null > /dev/null 2>&1 &" 2>&1) ||
        { ko "cannot start inccl_check on ${hosts[$i]}: $out"; done_; }
done
t0=$(date +%s)
for h in "${hosts[@]}"; do
    while [ $(($(date +%s) - t0)) -lt "$limit" ]; do
        "$lab" exec "$h" "test -e /tmp/inccl.rc" >/dev/null 2>&1 && break
        sleep 2
    done
done
secs=$(($(date +%s) - t0))
"$lab" exec "$ctl" "incctl -Q 127.0.0.1 | sed -n 's/^  \([a-z0-9-]*\): {comm: \([0-9]*\), rx_frames: \([0-9]*\), tx_frames: \([0-9]*\).*retransmits: \([0-9]*\).*drop_seq: \([0-9]*\).*/  \1: rx \3, tx \4, retransmits \5, out-of-sequence drops \6/p'" 2>/dev/null
# Across the tree, frames between switches travel in bundles (switch/bundle.h):
# some must have been sent and taken apart, and none refused as malformed.
# The communicator is gone by now: each switch logged its counters when its
# rules ended ("incswitch NAME comm N: name=value ...", after where its log
# stood before the run).
if [ "$scope" = tree ] && [ "$algo" = inc ] && [ -z "${INC_DTYPES_LAST:-}" ] && [ -z "${INC_COUNTS_LAST:-}" ]; then
    # the ring sends host to host: no switch link carries it; ranks that disagree may bundle nothing
    q=$(for sw in "${switches[@]}"; do
        "$lab" exec "$sw" "tail -n +$((${logged[$sw]:-0} + 1)) /var/log/inclab/incswitch.log |
            grep '^incswitch .* comm [0-9]*:.* bundles_tx=' | tail -n 1" 2>/dev/null
    done)
    brx=$(grep -o 'bundles_rx=[0-9]*' <<<"$q" | awk -F= '{s += $2} END {print s + 0}')
    btx=$(grep -o 'bundles_tx=[0-9]*' <<<"$q" | awk -F= '{s += $2} END {print s + 0}')
    bad=$(grep -o 'drop_bundle=[0-9]*' <<<"$q" | awk -F= '{s += $2} END {print s + 0}')
    if [ "$brx" -gt 0 ] && [ "$btx" -gt 0 ] && [ "$bad" = 0 ]; then
        ok "switch links: $btx bundles sent, $brx taken apart, 0 malformed"
    else
        ko "switch links: $btx bundles sent, $brx taken apart, $bad malformed (want some, and 0 malformed)"
    fi
fi
# Ranks that disagree on the count through the switches: some switch took
# the count apart from any other difference (mismatch_count, switch/engine.h:
# the immediates differ in INC_IMM_LAST alone, or the lengths), counted in the
# log line each switch writes when the communicator's rules end (a while
# after its ranks failed: up to 30 s).
if [ -n "${INC_COUNTS_LAST:-}" ] && [ "$algo" = inc ] && [ "$counts_last" != "$counts" ]; then
    mc=0
    for _ in $(seq 1 15); do
        q=$(for sw in "${switches[@]}"; do
            "$lab" exec "$sw" "tail -n +$((${logged[$sw]:-0} + 1)) /var/log/inclab/incswitch.log |
                grep '^incswitch .* comm [0-9]*:.* mismatch_count=' | tail -n 1" 2>/dev/null
        done)
        mc=$(grep -o 'mismatch_count=[0-9]*' <<<"$q" | awk -F= '{s += $2} END {print s + 0}')
        [ "$(grep -c 'mismatch_count=' <<<"$q")" -lt "$nsw" ] || break
        sleep 2
    done
    dm=$(grep -o 'drop_mismatch=[0-9]*' <<<"$q" | awk -F= '{s += $2} END {print s + 0}')
    check "the switches told a count mismatch apart: mismatch_count $mc, drop_mismatch $dm (want mismatch_count >= 1)" \
        [ "$mc" -ge 1 ]
fi
barrier_failed="" late_lines=""
for i in "${!hosts[@]}"; do
    h=${hosts[$i]}
    out=$("$lab" exec "$h" "cat /tmp/inccl.out")
    rc=$("$lab" exec "$h" "cat /tmp/inccl.rc" 2>/dev/null)
    fails=$(grep '^FAIL' <<<"$out")
    if [ -n "$expect_fail" ]; then
        # every rank exits 1, its first failure the fault's own (or a timeout
        # when a peer gave up after it)
        judge_caught "rank $i ($h)" "${rc:-}" "$(head -n 1 <<<"$fails")" "$expect_fail"
    else
        [ -z "$fails" ] || head -n 5 <<<"$fails" | sed "s/^/  $h: /"
        if [ "$rc" = 0 ]; then ok "rank $i ($h): $(tail -n 1 <<<"$out")"
        else ko "rank $i ($h) exit '${rc:-none: still running after $limit s}': $(tail -n 1 <<<"$out")"; fi
    fi
    "$lab" exec "$h" "pkill -x inccl_check; true" >/dev/null 2>&1
    grep -q '^FAIL barrier: left after' <<<"$out" && barrier_failed=1
    late_lines+=$(grep '^ok   barrier: this rank' <<<"$out" | sed "s/^ok   /  $h: /")$'\n'
done
echo "  (all ranks done in $secs s)"
# A rank that left a barrier too soon: either the barrier let it go, or the
# late rank slept less than it thought (its clock ran fast). Show both sides.
if [ -n "$barrier_failed" ]; then
    echo "  the late ranks' side of the barrier checks:"
    printf '%s' "$late_lines" | grep -v '^$'
    echo "  the guests' clocks against this machine's since lab-up:"
    "$lab" clocks 2>&1 | sed 's/^/    /'
fi
[ -z "$expect_fail" ] || check "the fault was caught on $caught of $n ranks (want at least one)" [ "$caught" -ge 1 ]
done_
