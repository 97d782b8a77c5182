#!/usr/bin/env bash
# test-sim.sh — incsim end to end (make test-sim, in make check): the model's
# unit tests (sim/test_sim.cc, hand-computed values), then `make sim-allreduce`'s
# script on small trees with the parameters of a stored run
# (tests/analysis/samples/sweep-20261102-090000: o = 40 us, G = 0.4 us/B,
# half_rtt 183.6 us at 8 B, ceiling 2.5 MB/s), the run directory it stores read
# by the lab's own tools (increport check, analysis/plots.sh), and bad input:
# each refused with exit 2 and a message that names what is wrong.
# Tools from ${INCLAB_BUILD:-${BUILD:-build}}.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 1
build=${INCLAB_BUILD:-${BUILD:-build}}
case $build in /*) ;; *) build=$top/$build ;; esac
export INCLAB_BUILD=$build
sample=tests/analysis/samples/sweep-20261102-090000
tmp=$(mktemp -d)
. "$top/tests/lib/harness.sh"
gone() { rm -rf "$tmp"; }
harness_begin test-sim "unit run colls blocks bad"
harness_on_exit gone

phase unit "the model against hand-computed values"
if timeout 300 "$build/test_sim" > "$tmp/unit.log" 2>&1; then
    ok "test_sim: $(tail -n 1 "$tmp/unit.log")"
else
    grep FAIL "$tmp/unit.log" | head -n 20
    ko "test_sim: $(tail -n 1 "$tmp/unit.log")"
fi

phase run "sim-allreduce on 1-2-4 with a stored run's parameters, 1-4-16 with given ones"
# simc COLLECTIVE ENV... — sim/sim.sh COLLECTIVE (make sim-COLLECTIVE) with these settings (and
# nothing of the caller's), output in $tmp/out; sim ENV... — the same for allreduce
simc() { local coll=$1; shift; env -i PATH="$PATH" INCLAB_BUILD="$build" "$@" sim/sim.sh "$coll" > "$tmp/out" 2>&1; }
sim() { simc allreduce "$@"; }
mkdir -p "$tmp/res"
sim TOPOLOGY=topology/1-2-4.yaml SIZES="64K 100K" RUN=$sample LINK_BW=100 SWITCH_FRAME=5 RESULTS="$tmp/res"
rc=$?
check "1-2-4 simulated, exit 0 (got $rc)" [ "$rc" = 0 ]
run=$(ls -d "$tmp"/res/sim-allreduce-* 2>/dev/null | head -n 1)
check "a run directory sim-allreduce-DATE-TIME" [ -d "$run" ]
csv=$run/results.csv meta=$run/meta.yaml
# four rows: inc and ring at 65536 and 102400 B, 4 ranks, nothing wrong, round 1
want=$'inc 102400 4 0 1\ninc 65536 4 0 1\nring 102400 4 0 1\nring 65536 4 0 1'
got=$(awk -F, 'NR > 1 { print $1, $7, $6, $13, $14 }' "$csv" 2>/dev/null | sort)
check "results.csv: inc and ring at both sizes, 4 ranks, no wrong element" [ "$got" = "$want" ]
check "results.csv: algbw = bytes / time" awk -F, 'NR > 1 { d = $7 / $10 - $11; if (d > 0.01 || d < -0.01) exit 1 }' "$csv"
check "meta.yaml: simulated" grep -qx 'simulated: true' "$meta"
# the host's costs as the analytic model measures them (analysis/loggp.c): o_s, o_r the medians of
# cpu_send 30, 31.5, 29 and cpu_recv 50, 48, 52.5 at 8 B; no UC stream: a libinccl send o_sb
# (cpu_send_batch 20, -3, 21: 20) and no ACK share; G_s = (13137.2 - 30) us / (65544 - 8) B
src="the analytic model''s (analysis/loggp.c loggp_params()) of $sample"
check "meta.yaml: o_s 30 us from the run's cpu_send" grep -qF "o_s_us: {value: 30, from: '$src'}" "$meta"
check "meta.yaml: o_r 50 us from the run's cpu_recv" grep -qF "o_r_us: {value: 50, from: '$src'}" "$meta"
check "meta.yaml: o_su = o_sb 20 us (no UC stream)" grep -qF "o_su_us: {value: 20, from: '$src: o_sb (no UC stream)'}" "$meta"
check "meta.yaml: o_c 0 (not measured)" grep -qF "o_c_us: {value: 0, from: '$src: 0 (not measured)'}" "$meta"
check "meta.yaml: o_w 0 (not measured)" grep -qF "o_w_us: {value: 0, from: '$src: 0 (not measured)'}" "$meta"
# a libinccl call's own time: the run's Barrier less half a ping-pong: INC the median of 1500, 1700, 1400 us
# less 183.6; the ring's 4500 us over its 2(P-1) = 6 steps less 183.6
check "meta.yaml: a call's own time, INC 1500 - 183.6 = 1316.4 us" \
    grep -qF "call_inc_us: {value: 1316.4, from: 'the INC Barrier of $sample (median 1500.0 us) less half a ping-pong (183.6 us)'}" "$meta"
check "meta.yaml: a call's own time per ring step, 4500 / 6 - 183.6 = 566.4 us" \
    grep -qF "call_ring_us: {value: 566.4, from: 'the ring Barrier of $sample (median 4500.0 us over 6 steps) less half a ping-pong (183.6 us)'}" "$meta"
gs=$(awk '/G_s_us_per_byte/ { sub(/.*value: /, ""); sub(/,.*/, ""); print }' "$meta")
check "meta.yaml: G_s (13137.2 - 30) / (65544 - 8) = 0.2 us/B (got $gs)" \
    awk -v g="$gs" 'BEGIN { d = g - (13137.2 - 30) / (65544 - 8); exit !(d < 1e-9 && d > -1e-9) }'
# C: the sample's 2 cores less what the rest of its machine used in its one measurement with a
# machine row: (3300000 - 4 * 500000 - 3 * 100000) / 2000000 = 0.5 cores, so 1.5 (the sizes
# simulated were not measured: the run's other measurements)
check "meta.yaml: each simulation on 2 - 0.5 cores" \
    [ "$(grep -c "cores: 1.5, cores_from: 'host_cores 2 less 0.500 the rest of the machine used (cpu.csv, median of the run''s measurements)'" "$meta")" = 4 ]
check "meta.yaml: link bandwidth from the command line" grep -q "link_bw_MBps: {value: 100, from: 'command line'}" "$meta"
# the latency that makes the model's 8-byte message take L = 183.6 - 2 * 40 us over 4 links
lat=$(awk '/link_latency_us/ { sub(/.*value: /, ""); sub(/,.*/, ""); print }' "$meta")
check "meta.yaml: link latency (103.6 - 4 * 68 B / 100 MB/s - 3 * 2 * 5) / 4 = 17.72 us (got $lat)" \
    awk -v l="$lat" 'BEGIN { d = l - (103.6 - 4 * 0.68 - 30) / 4; exit !(d < 1e-6 && d > -1e-6) }'
check "meta.yaml: status verified" grep -qx 'status: verified' "$meta"
check "increport check reads results.csv" "$build/increport" check "$csv"
check "make plots draws it (analysis/plots.sh)" analysis/plots.sh "$tmp/res"
check "REPORT.md names the run" grep -qF "$(basename "$run")" "$tmp/res/REPORT.md"
check "summary chart drawn" [ -s "$run/plots/summary.svg" ]
# c_sw from a run that stores the switches' CPU (cpu.csv: 3 switches x 100000 us in INC) and
# their frames (switch-counters.txt: 3 x (10000 rx + 10000 tx)): 300000 / 60000 = 5 us a frame
cp -r "$sample" "$tmp/run2"
for s in sw0 sw1 sw2; do echo "2026-11-02T09:00:00Z $s comm 1: rx_frames=10000 tx_frames=10000"; done > "$tmp/run2/switch-counters.txt"
mkdir -p "$tmp/res2"
sim TOPOLOGY=topology/1-2-4.yaml SIZE=64K RUN="$tmp/run2" LINK_BW=100 RESULTS="$tmp/res2"
rc=$?
check "c_sw from the run's cpu.csv and switch-counters.txt: exit 0 (got $rc: $(head -c 200 "$tmp/out"))" [ "$rc" = 0 ]
check "meta.yaml: c_sw = 300000 us / 60000 frames = 5 us" grep -q "switch_frame_us: {value: 5, from: 'the switches'' CPU" "$tmp"/res2/*/meta.yaml
# the switches' work as loggp.c's loggp_inc_switch_work() gives it to the model (shared with incsim):
# f_sw = 60000 frames counted / (4 calls x 1024 packets x 20.25 frames of a 1-2-4 AllReduce, data and
# ACKs, + 5 lone calls of 32 frames: a barrier before each call and the tally) = 60000 / 83104 = 0.722
check "increport: f_sw = 60000 / (4 x 1024 x 20.25 + 5 x 32) = 0.722 from the same run" \
    sh -c "'$build/increport' show '$tmp/run2' 2>&1 | grep -q 'c_sw=5.000 f_sw=0.722'"
# o_w from the run's 16 KiB ping-pong on events: 1150 and 1250 us a round trip against the stream's 100 + 150:
# 950 us; a ping-pong no dearer than the stream (100, 100: -150) is measured noise, 0 and said so
for w in "1150 1250 950 " "100 100 0 0 (measured, not above 0: noise)"; do
    read -r ws wr wv wsay <<<"$w"
    rm -rf "$tmp/runw" "$tmp/resw" && cp -r "$sample" "$tmp/runw" && mkdir -p "$tmp/resw"
    printf 'cpu_send,16384,400,100\ncpu_recv,16384,400,150\ncpu_waited_send,16384,400,%s\ncpu_waited_recv,16384,400,%s\n' \
        "$ws" "$wr" >>"$tmp/runw/loggp.csv"
    sim TOPOLOGY=topology/1-2-4.yaml SIZE=64K RUN="$tmp/runw" LINK_BW=100 SWITCH_FRAME=5 RESULTS="$tmp/resw"
    check "meta.yaml: o_w $wv us from a ping-pong of $ws and $wr us ${wsay:+($wsay)} (exit $?: $(head -c 200 "$tmp/out"))" \
        grep -qF "o_w_us: {value: $wv, from: 'the analytic model''s (analysis/loggp.c loggp_params()) of $tmp/runw${wsay:+: $wsay}'}" \
        "$tmp"/resw/*/meta.yaml
done
mkdir -p "$tmp/res16"
sim TOPOLOGY=1-4-16 SIZE=64K UNIT=4 LINK_BW=100 LINK_LATENCY=10 HOST_O=5 HOST_G=0.01 SWITCH_FRAME=1 CORES=0 LOSS=0.01 RESULTS="$tmp/res16"
rc=$?
check "a generated 1-4-16 tree with 1% loss, frames of 4 packets, every parameter by hand: exit 0 (got $rc)" [ "$rc" = 0 ]
got=$(awk -F, 'NR > 1 { print $1, $6, $13 }' "$tmp"/res16/*/results.csv 2>/dev/null | sort | tr '\n' ' ')
check "1-4-16: inc and ring on 16 ranks, no wrong element ($got)" [ "$got" = "inc 16 0 ring 16 0 " ]
check "1-4-16 without a run: a call's own time 0, said" \
    grep -qF "call_inc_us: {value: 0, from: 'no run: a call takes its path alone'}" "$tmp"/res16/*/meta.yaml

phase colls "sim-reduce and sim-broadcast on 1-2-4 (root 2), read back by increport and plots"
mkdir -p "$tmp/resc"
for coll in reduce broadcast; do
    simc $coll TOPOLOGY=topology/1-2-4.yaml SIZES="64K 100K" ROOT=2 RUN=$sample LINK_BW=100 SWITCH_FRAME=5 RESULTS="$tmp/resc"
    rc=$?
    check "$coll on 1-2-4 simulated, exit 0 (got $rc: $(head -c 200 "$tmp/out"))" [ "$rc" = 0 ]
    run=$(ls -d "$tmp"/resc/sim-$coll-* 2>/dev/null | head -n 1)
    check "a run directory sim-$coll-DATE-TIME" [ -d "$run" ]
    csv=$run/results.csv meta=$run/meta.yaml
    # four rows: inc and ring at 65536 and 102400 B, the collective, root 2, 4 ranks, nothing wrong, round 1
    op=sum; [ $coll = broadcast ] && op=-
    want="inc $coll $op 2 102400 4 0 1
inc $coll $op 2 65536 4 0 1
ring $coll $op 2 102400 4 0 1
ring $coll $op 2 65536 4 0 1"
    got=$(awk -F, 'NR > 1 { print $1, $2, $4, $5, $7, $6, $13, $14 }' "$csv" 2>/dev/null | sort)
    check "$coll results.csv: inc and ring at both sizes, root 2, 4 ranks, no wrong element ($(echo $got))" [ "$got" = "$want" ]
    check "$coll results.csv: algbw = bytes / time, busbw = algbw (nccl-tests' factor 1)" \
        awk -F, 'NR > 1 { d = $7 / $10 - $11; if (d > 0.01 || d < -0.01 || $12 != $11) exit 1 }' "$csv"
    check "$coll meta.yaml: experiment sim-$coll, collectives [$coll], root 2, verified" \
        sh -c "grep -qx 'experiment: sim-$coll' '$meta' && grep -qx 'collectives: \[$coll\]' '$meta' && grep -qx 'root: 2' '$meta' && grep -qx 'status: verified' '$meta'"
    check "$coll: increport check reads results.csv" "$build/increport" check "$csv"
done
# a generated 1-4-16 with 1 % loss, frames of 4 packets, rooted at rank 5 (under the second leaf)
for coll in reduce broadcast; do
    mkdir -p "$tmp/resc16-$coll"
    simc $coll TOPOLOGY=1-4-16 SIZE=64K UNIT=4 ROOT=5 LINK_BW=100 LINK_LATENCY=10 HOST_O=5 HOST_G=0.01 SWITCH_FRAME=1 CORES=0 \
        LOSS=0.01 RESULTS="$tmp/resc16-$coll"
    rc=$?
    got=$(awk -F, 'NR > 1 { print $1, $2, $5, $6, $13 }' "$tmp"/resc16-$coll/*/results.csv 2>/dev/null | sort | tr '\n' ' ')
    check "$coll on 1-4-16, 1% loss, root 5: exit 0, inc and ring, no wrong element (exit $rc: $got)" \
        [ "$rc $got" = "0 inc $coll 5 16 0 ring $coll 5 16 0 " ]
done
check "make plots draws the Reduce and Broadcast runs (analysis/plots.sh)" analysis/plots.sh "$tmp/resc"
check "REPORT.md names both runs" sh -c "grep -q 'sim-reduce-' '$tmp/resc/REPORT.md' && grep -q 'sim-broadcast-' '$tmp/resc/REPORT.md'"

# a row's time is rank 0's, as inccl_perf reports it: a Broadcast's root (rank 0) due no result
# returns once its frames are acknowledged, before the others have taken theirs
mkdir -p "$tmp/res0"
simc broadcast TOPOLOGY=topology/1-2-4.yaml SIZE=64K ALGORITHMS=inc RUN=$sample LINK_BW=100 SWITCH_FRAME=5 RESULTS="$tmp/res0"
t0=$(awk -F, 'NR == 2 { print $10 }' "$tmp"/res0/*/results.csv 2>/dev/null)
read -r r0 last < <(sed -n 's/.*rank0_s: \([^,]*\), last_rank_s: \([^,]*\),.*/\1 \2/p' "$tmp"/res0/*/meta.yaml 2>/dev/null)
check "broadcast from rank 0: the row's time ($t0 us) is rank 0's ($r0 s), before the last rank's ($last s)" \
    awk -v t="$t0" -v a="$r0" -v b="$last" 'BEGIN { d = t - a * 1e6; exit !(t > 0 && d < 0.01 && d > -0.01 && a < b) }'
# ... and its time_max_us the last rank's, as inccl_perf's MAX over the ranks (what the LogGP model predicts)
tm=$(awk -F, 'NR == 2 { print $15 }' "$tmp"/res0/*/results.csv 2>/dev/null)
check "broadcast from rank 0: the row's time_max_us ($tm us) is the last rank's ($last s), after rank 0's ($t0 us)" \
    awk -v t="$tm" -v t0="$t0" -v b="$last" 'BEGIN { d = t - b * 1e6; exit !(t > t0 + 0.01 && d < 0.01 && d > -0.01) }'
check "broadcast from rank 0: results.csv's header has the round in column 14, time_max_us in 15" \
    [ "$(head -n 1 "$tmp"/res0/*/results.csv 2>/dev/null | cut -d, -f14,15)" = round,time_max_us ]

phase blocks "sim-allgather, sim-reducescatter, sim-alltoall, sim-barrier: rows as inccl_perf's, paired with a lab run's"
mkdir -p "$tmp/resb"
# a lab run of 1-2-4 that measured AllGather at 64 KiB (the whole buffer) and Barrier, for REPORT's pairing
cp -r "$sample" "$tmp/resb/"
printf '%s\n' 'inc,allgather,float32,-,-,4,65536,16384,3,20000.00,3.28,2.46,0' 'inc,barrier,-,-,-,4,0,0,3,1500.00,-,-,0' \
    >> "$tmp/resb/$(basename "$sample")/results.csv"
for coll in allgather reducescatter alltoall; do
    simc $coll TOPOLOGY=topology/1-2-4.yaml SIZES="64K 100K" RUN=$sample LINK_BW=100 SWITCH_FRAME=5 RESULTS="$tmp/resb"
    rc=$?
    check "$coll on 1-2-4 simulated, exit 0 (got $rc: $(head -c 200 "$tmp/out"))" [ "$rc" = 0 ]
    run=$(ls -d "$tmp"/resb/sim-$coll-* 2>/dev/null | head -n 1)
    check "a run directory sim-$coll-DATE-TIME" [ -d "$run" ]
    csv=$run/results.csv meta=$run/meta.yaml
    # four rows: inc and ring at both sizes (the whole buffer: 4 blocks), float32, op sum only for
    # reducescatter, no root, 4 ranks, elements = bytes / 4, nothing wrong, round 1
    op=-; [ $coll = reducescatter ] && op=sum
    want="inc $coll float32 $op - 102400 25600 4 0 1
inc $coll float32 $op - 65536 16384 4 0 1
ring $coll float32 $op - 102400 25600 4 0 1
ring $coll float32 $op - 65536 16384 4 0 1"
    got=$(awk -F, 'NR > 1 { print $1, $2, $3, $4, $5, $7, $8, $6, $13, $14 }' "$csv" 2>/dev/null | sort)
    check "$coll results.csv: inc and ring at both sizes, no root, no wrong element ($(echo $got))" [ "$got" = "$want" ]
    check "$coll results.csv: algbw = bytes / time, busbw = algbw * 3/4 (nccl-tests' (n-1)/n)" \
        awk -F, 'NR > 1 { d = $7 / $10 - $11; b = $11 * 3 / 4 - $12; if (d > 0.01 || d < -0.01 || b > 0.01 || b < -0.01) exit 1 }' "$csv"
    check "$coll meta.yaml: experiment sim-$coll, collectives [$coll], verified" \
        sh -c "grep -qx 'experiment: sim-$coll' '$meta' && grep -qx 'collectives: \[$coll\]' '$meta' && grep -qx 'status: verified' '$meta'"
    check "$coll: increport check reads results.csv" "$build/increport" check "$csv"
done
simc barrier TOPOLOGY=topology/1-2-4.yaml RUN=$sample LINK_BW=100 SWITCH_FRAME=5 RESULTS="$tmp/resb"
rc=$?
check "barrier on 1-2-4 simulated, no SIZE, exit 0 (got $rc: $(head -c 200 "$tmp/out"))" [ "$rc" = 0 ]
run=$(ls -d "$tmp"/resb/sim-barrier-* 2>/dev/null | head -n 1)
got=$(awk -F, 'NR > 1 { if ($15 + 0 >= $10 + 0) $15 = "ok"; $10 = ""; print }' OFS=, "$run/results.csv" 2>/dev/null | sort | tr '\n' ' ')
check "barrier results.csv: inccl_perf's row, no size, dtype, op, root or bandwidth, the last rank's time not below rank 0's ($got)" \
    [ "$got" = "inc,barrier,-,-,-,4,0,0,1,,-,-,0,1,ok ring,barrier,-,-,-,4,0,0,1,,-,-,0,1,ok " ]
check "barrier: increport check reads results.csv" "$build/increport" check "$run/results.csv"
# a size that is not whole blocks: rounded down as inccl_perf does (1000 B on 4 ranks: 992)
mkdir -p "$tmp/resr"
simc allgather TOPOLOGY=topology/1-2-4.yaml SIZE=1000 ALGORITHMS=inc RUN=$sample LINK_BW=100 SWITCH_FRAME=5 RESULTS="$tmp/resr"
rc=$?
got=$(awk -F, 'NR > 1 { print $7, $8 }' "$tmp"/resr/*/results.csv 2>/dev/null)
check "allgather of 1000 B on 4 ranks: 992 B in whole blocks, said on stderr (exit $rc: $got)" \
    sh -c "[ '$rc $got' = '0 992 248' ] && grep -q 'whole blocks' '$tmp/out'"
for coll in allgather reducescatter alltoall barrier; do
    mkdir -p "$tmp/resb16-$coll"
    size=SIZE=64K; [ $coll = barrier ] && size=
    simc $coll TOPOLOGY=1-4-16 $size UNIT=4 LINK_BW=100 LINK_LATENCY=10 HOST_O=5 HOST_G=0.01 SWITCH_FRAME=1 CORES=0 \
        LOSS=0.01 RESULTS="$tmp/resb16-$coll"
    rc=$?
    got=$(awk -F, 'NR > 1 { print $1, $2, $6, $13 }' "$tmp"/resb16-$coll/*/results.csv 2>/dev/null | sort | tr '\n' ' ')
    check "$coll on 1-4-16, 1% loss, frames of 4 packets: exit 0, inc and ring, no wrong element (exit $rc: $got)" \
        [ "$rc $got" = "0 inc $coll 16 0 ring $coll 16 0 " ]
done
check "make plots draws the block collectives' and the Barrier's runs (analysis/plots.sh)" analysis/plots.sh "$tmp/resb"
for coll in allgather reducescatter alltoall barrier; do
    check "REPORT.md names the sim-$coll run" grep -q "sim-$coll-" "$tmp/resb/REPORT.md"
done
# increport pairs a simulated row with the lab's by topology, collective, algorithm and size: the
# simulator's AllGather of 64 KiB is the lab's (the whole buffer), its Barrier the lab's (no size)
check "REPORT pairs the simulated AllGather of 64 KiB with the lab run's" \
    sh -c "grep -E '^\| sim-allgather-[^|]* \| [^|]* \| inc \| 64 KiB \|' '$tmp/resb/REPORT.md' | grep -q '$(basename "$sample")'"
check "REPORT pairs the simulated Barrier with the lab run's" \
    sh -c "grep -E '^\| sim-barrier-[^|]* \| [^|]* \| inc \|' '$tmp/resb/REPORT.md' | grep -q '$(basename "$sample")'"

phase bad "bad input: exit 2 and a precise message"
# refused WHAT TEXT ENV... — sim/sim.sh COLL (from ENV's COLL=, default allreduce) with ENV exits 2 and says TEXT
refused() {
    local what=$1 text=$2 coll=allreduce a; shift 2
    for a in "$@"; do case $a in COLL=*) coll=${a#COLL=} ;; esac; done
    simc "$coll" RESULTS="$tmp/res" "$@"
    local rc=$?
    if [ "$rc" = 2 ] && grep -qF -- "$text" "$tmp/out"; then ok "$what"; else ko "$what (exit $rc: $(head -c 300 "$tmp/out"))"; fi
}
refused "no switch cost" "no switch per-frame cost c_sw: give --switch-frame-us (us): $sample has no cpu.csv and switch-counters.txt" SIZE=64K RUN=$sample LINK_BW=100
refused "no parameters at all" "no link bandwidth: give --link-bw-MBps (MB/s) or --run RUNDIR" SIZE=64K
refused "no cores" "no machine cores C: give --cores" SIZE=64K LINK_BW=100 LINK_LATENCY=10 HOST_O=5 HOST_G=0.01 SWITCH_FRAME=1
refused "cores that are not a count" "--cores: '-2' is not a number" SIZE=64K RUN=$sample LINK_BW=100 SWITCH_FRAME=1 CORES=-2
# a run from before the CPU measures (loggp.csv without cpu_send and cpu_recv): refused, naming them
cp -r "$sample" "$tmp/nocpu"
grep -v '^cpu_' "$sample/loggp.csv" > "$tmp/nocpu/loggp.csv"
refused "a run without the host CPU measures" "loggp.csv has no cpu_send and cpu_recv at two sizes" SIZE=64K RUN="$tmp/nocpu" LINK_BW=100 SWITCH_FRAME=1
sed '/^host_cores:/d' "$sample/meta.yaml" > "$tmp/nocpu/meta.yaml"
refused "a run without host_cores" "no host_cores" SIZE=64K RUN="$tmp/nocpu" LINK_BW=100 SWITCH_FRAME=1
refused "a run without loggp.csv" "loggp.csv" SIZE=64K RUN=tests/analysis/samples/paper-20261101-120000 SWITCH_FRAME=1
# a run without the ceiling (BASELINES without it): the link bandwidth asked for, naming why; given, it runs
cp -r "$sample" "$tmp/noceil"
grep -v '^ceiling,' "$sample/results.csv" > "$tmp/noceil/results.csv"
refused "a run without a ceiling, no link bandwidth given" \
    "no link bandwidth: give --link-bw-MBps (MB/s): $tmp/noceil/results.csv has no verified \`ceiling\` row" \
    SIZE=64K RUN="$tmp/noceil" SWITCH_FRAME=5
sim SIZE=64K RUN="$tmp/noceil" LINK_BW=100 SWITCH_FRAME=5 RESULTS="$tmp/res3"
rc=$?
check "a run without a ceiling, the link bandwidth given: exit 0 (got $rc: $(head -c 200 "$tmp/out"))" [ "$rc" = 0 ]
refused "a run whose L is shorter than the model's path" "is shorter than the model's switches and serialisation" \
    SIZE=64K RUN=$sample SWITCH_FRAME=5
refused "not a run directory" "meta.yaml" SIZE=64K RUN=$tmp/nothing SWITCH_FRAME=1
refused "a tree shape that is not one" "each level's count must be a multiple" TOPOLOGY=1-3-4 SIZE=1M RUN=$sample LINK_BW=100 SWITCH_FRAME=1
refused "a topology file that is missing" "nothing.yaml" TOPOLOGY=$tmp/nothing.yaml SIZE=1M RUN=$sample LINK_BW=100 SWITCH_FRAME=1
refused "a size too large" "1 B .. 2G" SIZE=3G RUN=$sample LINK_BW=100 SWITCH_FRAME=1
refused "a size that is not one" "size '12X'" SIZE=12X RUN=$sample LINK_BW=100 SWITCH_FRAME=1
refused "no size" "give SIZE" RUN=$sample LINK_BW=100 SWITCH_FRAME=1
refused "a negative parameter" "--host-o-us: '-1' is not a number" SIZE=1M RUN=$sample LINK_BW=100 SWITCH_FRAME=1 HOST_O=-1
refused "an unknown algorithm" "'mpi' is not inc or ring" SIZE=1M RUN=$sample LINK_BW=100 SWITCH_FRAME=1 ALGORITHMS=mpi
refused "loss of 1" "--loss" SIZE=1M RUN=$sample LINK_BW=100 SWITCH_FRAME=1 LOSS=1
refused "a model frame that does not divide the message" "divide the message" SIZE=1M RUN=$sample LINK_BW=100 SWITCH_FRAME=1 UNIT=3
refused "ring chunks smaller than a model frame" "needs a size of at least 64 KiB" TOPOLOGY=1-4-16 SIZE=32K UNIT=4 RUN=$sample LINK_BW=100 SWITCH_FRAME=1
refused "a collective not simulated" "'gather' is not simulated: allreduce, reduce, broadcast, allgather, reducescatter, alltoall or barrier" \
    SIZE=1M RUN=$sample LINK_BW=100 SWITCH_FRAME=1 COLL=gather
"$build/incsim" --tree 1-2-4 --size 1M --collective gather > "$tmp/out" 2>&1
rc=$?
check "incsim --collective gather: exit 2 and the collectives it has (exit $rc: $(head -c 200 "$tmp/out"))" \
    sh -c "[ $rc = 2 ] && grep -qF \"'gather' is not allreduce, reduce, broadcast, allgather, reducescatter, alltoall or barrier\" '$tmp/out'"
for c in "allreduce an AllReduce" "allgather an AllGather" "reducescatter a ReduceScatter" "alltoall an AllToAll" "barrier a Barrier"; do
    size=SIZE=1M; [ "${c%% *}" = barrier ] && size=
    refused "a root given to ${c%% *}" "--root: ${c#* } has no root" $size RUN=$sample LINK_BW=100 SWITCH_FRAME=1 COLL="${c%% *}" ROOT=1
done
refused "a size given to a barrier" "a Barrier moves no data: give no size" SIZE=1M RUN=$sample LINK_BW=100 SWITCH_FRAME=1 COLL=barrier
refused "a model frame larger than the ring's pieces (allgather)" "must divide them" SIZE=1M RUN=$sample LINK_BW=100 SWITCH_FRAME=1 \
    COLL=allgather UNIT=32 MESSAGE=32
refused "a root that is not a rank" "--root: '4' is not a rank of 0..3" SIZE=1M RUN=$sample LINK_BW=100 SWITCH_FRAME=1 COLL=reduce ROOT=4
refused "a root that is not a number" "--root: '-1' is not a rank of 0..3" SIZE=1M RUN=$sample LINK_BW=100 SWITCH_FRAME=1 COLL=broadcast ROOT=-1
refused "a model frame larger than the chain's messages" "must divide them" SIZE=1M RUN=$sample LINK_BW=100 SWITCH_FRAME=1 \
    COLL=broadcast UNIT=32 MESSAGE=32
refused "results that are not a directory" "is not a directory" SIZE=1M RUN=$sample LINK_BW=100 SWITCH_FRAME=1 RESULTS=/dev/null
harness_end
