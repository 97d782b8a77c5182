#!/usr/bin/env bash
# loggp.sh — the measurements the LogGP model needs (analysis/loggp.h; seeds/004:
# T = L + 2o + n·G), between rank 0 and the lowest rank under another leaf of
# the running lab, over RC/rxe across the tree (switches only routing):
#
#   half_rtt        ib_send_lat's typical one-way latency (half a ping-pong) of
#                   a message of `bytes`, in microseconds
#   gap             the time per message of a back-to-back stream of such
#                   messages (ib_send_bw -e: 1 / message rate), in microseconds
#   cpu_send        CPU time the sending host spends per message of a stream of
#   cpu_recv        such messages, and the receiving host: the CPU time of each
#                   host's process on this machine (its VM's QEMU: guest kernel,
#                   rxe, the emulated NIC, everything; /proc/PID/stat) during a
#                   stream of `iters` messages minus that during a stream of
#                   iters/5, divided by the difference in messages (what starting
#                   the programs costs cancels out); ib_send_bw -e, one work
#                   request per ibv_post_send(), in microseconds
#   cpu_send_batch  cpu_send with the work requests posted LOGGP_BATCH (32, as
#                   libinccl posts them) per ibv_post_send() (ib_send_bw -l)
#   cpu_send_uc     cpu_send_batch over UC (ib_send_bw -c UC), which has no
#   cpu_recv_uc     acknowledgements: rxe acknowledges every message of an RC
#                   stream, the switch a host's sends once per 32 packets
#                   (switch/engine.c ACK_EVERY), so the difference is what one
#                   ACK costs the sender (and the receiver, which builds it).
#                   UC loses what is dropped, so the messages are counted, not
#                   assumed: the difference in CPU over the difference in the
#                   messages the sender's rxe sent (sent_pkts) and the
#                   receiver's rxe received (rcvd_pkts; an 8 B message is one
#                   packet), read outside the CPU window; `iters` is that
#                   difference. The receiver posts a receive for every message
#                   it waits for before the stream starts (ib_send_bw -r: none
#                   dropped for want of one) and waits for all but 1/64 of them
#                   (-n: a few lost end the stream as well); a stream that loses
#                   more is stopped after LOGGP_UC_TIMEOUT s (default 40), said
#                   with what was sent and received, and tried again waiting for
#                   9/10 of what came (3 tries; never fewer than half)
#   cpu_send_signaled  cpu_send at 16 KiB (the ring's message) with every send
#                   asking for a completion (ib_send_bw -Q 1; perftest's
#                   default: one in 100): the difference is what a completion
#                   (a CQE and the guest's wake-up) costs
#   cpu_empty_recv  the receiver's CPU per message of the 16 KiB stream while it
#                   sends back 16 messages of 8 B over UC per message received,
#                   LOGGP_BATCH per post (1,000 minus 200 messages): a Broadcast's
#                   non-root, which sends an empty packet per packet of 1 KiB it
#                   receives, with no ACK of each. Measured in the same
#                   repetition as cpu_recv at 16 KiB (after cpu_send_signaled,
#                   which follows it, a minute apart): the difference over 16 is
#                   what an empty packet costs a host that is receiving (the UC
#                   stream's send prices one in a host that only sends), the
#                   median of the repetitions' (analysis/loggp.c)
#   cpu_pair_send   o_w's pairs, LOGGP_WAIT_REPEAT of them (default 3; 0: none,
#   cpu_pair_recv   no o_w), each a 16 KiB stream (ib_send_bw -e, 3000 minus
#   cpu_pair_waited_send  600 messages: cpu_send and cpu_recv's measure) and
#   cpu_pair_waited_recv  right after it a ping-pong of 16 KiB messages
#                   sleeping on CQ events (ib_send_lat -e, 1250 minus 250 round
#                   trips): each host's CPU per round trip, in which it sends
#                   one message and receives one it waits for (src the
#                   client, dst the server). Against the stream's send +
#                   receive, the pair's own, it is what a message costs when it
#                   reaches a guest that sleeps waiting for it: the guest's
#                   wake-ups, and packets taken a few interrupts at a time
#                   instead of a stream's batches. The ring's messages that
#                   gate its next send (ring.c) arrive that way. Each
#                   difference holds about 2 s of each host's CPU (a
#                   perftest run's start varies by ~0.2 s). Each pair's
#                   figures are its own, which drift between runs measured
#                   minutes apart (the older cpu_waited_send and
#                   cpu_waited_recv rows, against the medians of cpu_send and
#                   cpu_recv) does not reach; the model takes the median over
#                   the pairs (analysis/loggp.c waited_pairs())
#   intr_pair_send  each guest's interrupts (/proc/stat intr, read through the
#   intr_pair_recv  guest agent before and after each run, outside its CPU
#   intr_pair_waited_send  window) per message of the pair's stream and per
#   intr_pair_waited_recv  round trip of its ping-pong: a count, not a time;
#                   how many more interrupts a wait takes, which the model
#                   prices at the ping-pong's CPU per interrupt: steadier
#                   than the difference of CPU (analysis/README.md). Written
#                   after the pair's CPU rows; from the first pair whose
#                   counts could not be read, none (said)
#
#   cpu_swap        CPU per pass of hostwork (experiments/hostwork.c) over `bytes`
#   cpu_copy        in the sending host: libinccl's byte-order swap, the ring's
#   cpu_sum         copies of 16 KiB and its float32 sums (9 passes minus 1)
#
#   experiments/loggp.sh > loggp.csv   (LOGGP_SIZES, LOGGP_ITERS, LOGGP_CPU_SIZES,
#                                       LOGGP_CPU_REPEAT, LOGGP_BATCH, LOGGP_UC_TIMEOUT,
#                                       LOGGP_WAIT_REPEAT to change)
#
# The CPU measures run at LOGGP_CPU_SIZES (default 8, 16384 and 65536 B: the
# per-message and, from the difference of the smallest and largest, per-byte
# CPU), each LOGGP_CPU_REPEAT times (default 3; each repetition a row); the
# batched and UC streams at the smallest size, the signaled one and the empty packets' at 16384 B, then o_w's pairs. Prints the CSV (header
# measure,bytes,iters,value_us) on stdout, progress on stderr; exit 1 when a
# measurement fails (but the refinements: said, and left out), 2 on a bad setting.
# The whole script is one brace group, read to its end before any of it runs: a long
# run reads nothing more of this file, so a change to it (an editor writing it in place,
# a checkout) cannot land in the middle of the run (bash reads a script as it goes).
{
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
state=${INCLAB_STATE:-/var/lib/inclab/${INCLAB_PREFIX:-inclab}}
. "$top/experiments/lib.sh"
sizes=${LOGGP_SIZES:-8 1024 16384 65536}
iters=${LOGGP_ITERS:-100}
cpu_sizes=${LOGGP_CPU_SIZES:-8 16384 65536}
repeat=${LOGGP_CPU_REPEAT:-3}
batch=${LOGGP_BATCH:-32} # libinccl's POST_BATCH (hostlib/comm.c)
uc_limit=${LOGGP_UC_TIMEOUT:-40} # s a UC stream may take (perftest's start included; a stream takes a few)
wait_repeat=${LOGGP_WAIT_REPEAT:-3} # o_w's pairs (0: none, no o_w)
exp_check_range LOGGP_UC_TIMEOUT "$uc_limit" 5 600 || exit 2
exp_check_range LOGGP_WAIT_REPEAT "$wait_repeat" 0 50 || exit 2
[ -r "$state/gen/inventory.tsv" ] || { exp_err "loggp: no lab in $state (make lab-up)"; exit 1; }
read -r src dst addr sg dg < <(exp_pair) || exit 1
# ib_send_lat's field 5 is t_typical (us); ib_send_bw's field 5 is MsgRate
# (Mpps), so 1/rate is the gap in us.
pair=("$src" "$dst" "$addr" "$sg" "$dg")
echo "measure,bytes,iters,value_us"
for s in $sizes; do
    lat=$(exp_perftest_value ib_send_lat 5 "$s" "${pair[@]}" -n "$iters" -F -u 18) || exit 1
    echo "half_rtt,$s,$iters,$lat"
    gap=$(exp_perftest_value ib_send_bw 5 1/ "$s" "${pair[@]}" -n $((iters * 4)) -F -u 18 -e) || exit 1
    echo "gap,$s,$((iters * 4)),$gap"
    echo "loggp: $s B: half round trip $lat us, gap $gap us" >&2
done

pids=$(exp_cpu_pids | awk -v a="$src" -v b="$dst" '$1 == a || $1 == b')
[ "$(wc -l <<<"$pids")" = 2 ] || { exp_err "loggp: the processes of $src and $dst not found: no CPU measures"; exit 1; }
# cpu_of SIZE N ARGS — "SEND_US RECV_US": the CPU time of src's and dst's process during
# a stream of N messages of SIZE bytes (the perftest run and its start); CPU_TOOL (default
# ib_send_bw) the perftest that runs it: ib_send_lat for a ping-pong of N round trips
cpu_of() {
    local s=$1 n=$2 a b d
    shift 2
    a=$(exp_cpu_snap "$pids")
    exp_perftest "${CPU_TOOL:-ib_send_bw}" "${pair[@]}" -s "$s" -n "$n" -F -u 18 -e "$@" >/dev/null || return 1
    b=$(exp_cpu_snap "$pids")
    d=$(exp_cpu_delta "$a" "$b")
    echo "$(awk -v h="$src" '$1 == h {print $3}' <<<"$d") $(awk -v h="$dst" '$1 == h {print $3}' <<<"$d")"
}
# rxe_count NODE COUNTER — NODE's rxe0 port counter (hw_counters: sent_pkts, rcvd_pkts); nothing when unreadable
rxe_count() {
    "$top/lab/lab.sh" exec "$1" "cat /sys/class/infiniband/rxe0/ports/1/hw_counters/$2" 2>/dev/null | head -n 1 | grep -x '[0-9]\{1,18\}'
}
# fewer_wait PREV ARRIVED TOTAL — the next try's count for a UC server that waited for PREV of TOTAL
# messages and got no report: 9/10 of the ARRIVED ones in whole post lists (BATCH), below PREV (all
# came, yet no report: a list fewer still); nothing, and 1, when that is under half of TOTAL
fewer_wait() {
    local m=$(($2 * 9 / 10 / batch * batch))
    [ "$m" -lt "$1" ] || m=$(($1 - batch))
    [ "$m" -ge $(($3 / 2)) ] || return 1
    echo "$m"
}
# uc_of SIZE N ARGS — "SEND_US RECV_US SENT RECEIVED": the CPU time of src's and dst's process during
# a UC stream of N messages of SIZE bytes (ARGS with -l BATCH) and the messages src's rxe sent and
# dst's received meanwhile (counted before and after, outside the CPU window). The server waits for
# all but 1/64 of them, in whole post lists; a stream that ends in no report within uc_limit s (lost
# more than that) is said with its counts, and tried again waiting for 9/10 of what arrived.
uc_of() {
    local s=$1 n=$2 m try a b d s0 r0 s1 r1 sent got ok
    shift 2
    m=$(((n - n / 64) / batch * batch))
    for try in 1 2 3; do
        s0=$(rxe_count "$src" sent_pkts) r0=$(rxe_count "$dst" rcvd_pkts)
        if [ -z "$s0" ] || [ -z "$r0" ]; then
            exp_err "loggp: UC: no rxe0 counters on $src or $dst (/sys/class/infiniband/rxe0/ports/1/hw_counters): the messages that arrived cannot be counted"
            return 1
        fi
        a=$(exp_cpu_snap "$pids")
        EXP_PERFTEST_TRIES=1 EXP_PERFTEST_TIMEOUT=$uc_limit EXP_PERFTEST_SERVER_ARGS="-n $m -r $m" \
            exp_perftest ib_send_bw "${pair[@]}" -s "$s" -n "$n" -F -u 18 -e "$@" >/dev/null
        ok=$?
        b=$(exp_cpu_snap "$pids")
        s1=$(rxe_count "$src" sent_pkts) r1=$(rxe_count "$dst" rcvd_pkts)
        sent=$((${s1:-$s0} - s0)) got=$((${r1:-$r0} - r0))
        if [ "$ok" = 0 ] && [ -n "$s1" ] && [ -n "$r1" ]; then
            d=$(exp_cpu_delta "$a" "$b")
            echo "$(awk -v h="$src" '$1 == h {print $3}' <<<"$d") $(awk -v h="$dst" '$1 == h {print $3}' <<<"$d") $sent $got"
            return 0
        fi
        exp_err "loggp: UC stream of $n messages of $s B, $src -> $dst, try $try of 3 failed (the line above says how; exit 124: no report within $uc_limit s): $src sent $sent, $dst received $got ($((sent > got ? sent - got : 0)) lost); its server waited for $m"
        m=$(fewer_wait "$m" "$got" "$n") || {
            exp_err "loggp: UC stream of $n messages of $s B: more than half of them lost, or the stream did not run: no UC figures"
            return 1
        }
    done
    return 1
}
# duo_of N — "DST_US SRC_US": the CPU time of dst's and src's process while dst receives N
# messages of 16 KiB from src (cpu_of's RC stream) and at once sends 16 N messages of 8 B back
# over UC, BATCH per post: a Broadcast's non-root, which sends one empty packet per packet of
# 1 KiB it receives (hostlib/comm.c), 32 work requests a post, with no ACK of each (the switch
# acknowledges once per 32). Two perftest pairs (the UC one on port 18516), both servers started
# first, both clients at once; src's UC server waits for all but 1/64 of the messages in whole
# post lists, a receive posted for each (as uc_of's). A try that fails is said with what was lost
# on the way back: every packet dst sent to src (the UC messages and the RC stream's ACKs) less
# every packet src received (rxe0's sent_pkts and rcvd_pkts; nothing else runs between them), so
# a server that waited for more than came (lossy) is told from a stream that took longer than
# uc_limit s (slow, nothing lost); the next of 3 tries waits for 9/10 of what arrived. Nothing,
# and said, when all fail or more than half was lost.
duo_of() {
    local n=$1 u m try from rc_a rc_b a b d s0 r0 s1 r1 sent lost
    u=$((n * 16)) m=$(((n * 16 - n * 16 / 64) / batch * batch))
    from=$(exp_col "$src" 6)
    for try in 1 2 3; do
        s0=$(rxe_count "$dst" sent_pkts) r0=$(rxe_count "$src" rcvd_pkts)
        if [ -z "$s0" ] || [ -z "$r0" ]; then
            exp_err "loggp: empty packets: no rxe0 counters on $src or $dst (/sys/class/infiniband/rxe0/ports/1/hw_counters): what was lost cannot be counted"
            return 1
        fi
        "$top/lab/lab.sh" exec "$dst" "pkill -x ib_send_bw; true" >/dev/null 2>&1
        "$top/lab/lab.sh" exec "$src" "pkill -x ib_send_bw; true" >/dev/null 2>&1
        "$top/lab/lab.sh" exec "$dst" "timeout $((uc_limit + 60)) ib_send_bw -d rxe0 -s 16384 -n $n -F -u 18 -e -x $dg < /dev/null > /tmp/ib_send_bw.server 2>&1 &" >/dev/null
        "$top/lab/lab.sh" exec "$src" "timeout $((uc_limit + 60)) ib_send_bw -d rxe0 -s 8 -n $m -r $m -F -u 18 -e -l $batch -c UC -p 18516 -x $sg < /dev/null > /tmp/ib_send_bw.uc.server 2>&1 &" >/dev/null
        sleep "${EXP_PERFTEST_SETTLE:-2}"
        a=$(exp_cpu_snap "$pids")
        "$top/lab/lab.sh" exec "$src" "timeout $uc_limit ib_send_bw -d rxe0 -s 16384 -n $n -F -u 18 -e -x $sg $addr" >/dev/null 2>&1 &
        rc_a=$!
        "$top/lab/lab.sh" exec "$dst" "timeout $uc_limit ib_send_bw -d rxe0 -s 8 -n $u -F -u 18 -e -l $batch -c UC -p 18516 -x $dg ${from%/*}" >/dev/null 2>&1
        rc_b=$?
        wait "$rc_a"
        rc_a=$?
        b=$(exp_cpu_snap "$pids")
        "$top/lab/lab.sh" exec "$dst" "pkill -x ib_send_bw; true" >/dev/null 2>&1
        "$top/lab/lab.sh" exec "$src" "pkill -x ib_send_bw; true" >/dev/null 2>&1
        s1=$(rxe_count "$dst" sent_pkts) r1=$(rxe_count "$src" rcvd_pkts)
        sent=$((${s1:-$s0} - s0)) lost=$((sent - (${r1:-$r0} - r0)))
        [ "$lost" -ge 0 ] || lost=0
        if [ "$rc_a" = 0 ] && [ "$rc_b" = 0 ]; then
            d=$(exp_cpu_delta "$a" "$b")
            echo "$(awk -v h="$dst" '$1 == h {print $3}' <<<"$d") $(awk -v h="$src" '$1 == h {print $3}' <<<"$d")"
            return 0
        fi
        exp_err "loggp: $n messages of 16384 B $src -> $dst with $u of 8 B over UC back at once, try $try of 3: the RC stream's client exited $rc_a, the UC one's $rc_b (124: no report within $uc_limit s); $dst sent $src $sent packets, $lost of them lost ($( [ "$lost" = 0 ] && echo "slow, not lossy" || echo "lossy")); the UC server waited for $m"
        m=$(fewer_wait "$m" $((u - lost)) "$u") || {
            exp_err "loggp: $u messages of 8 B over UC back: more than half of them lost, or the streams did not run: no figure for the empty packets"
            return 1
        }
    done
    return 1
}
small=$(tr ' ' '\n' <<<"$cpu_sizes" | grep . | sort -n | head -n 1)
declare -A gave_up=() # the refinements (batch, uc, signaled, empty) that failed in this run
for s in $cpu_sizes; do
    # 0.5 - 2.6 s of each host's CPU in the difference at every size (25,600 small messages at
    # 20 - 100 us, 2,000 of 16 KiB at ~700 us, 800 of 64 KiB at ~2.5 ms, 1-2-4 under TCG): what a
    # perftest run's start costs varies by ~0.2 s, and only the length of the difference divides that
    # down (with 0.3 s in it, 16 KiB streams of one run came out at 600, 750 and 1,300 us a message;
    # with 0.1 s, the UC stream's send at 17.6 us in one run, 62.5 in another); 32000 and 6400 are
    # multiples of a post list of 32 or 64 (perftest posts whole lists). A UC stream's server posts a
    # receive for each message it waits for, and perftest takes at most 16384 (-r): 16000 of them
    n=$((s > 16384 ? 1000 : s >= 4096 ? 2500 : 32000)) n_uc=16000
    for r in $(seq 1 "$repeat"); do
        for mode in plain batch uc signaled empty; do
            extra=() tool=ib_send_bw
            case $mode in
            batch) [ "$s" = "$small" ] || continue; extra=(-l "$batch") ;;
            uc) [ "$s" = "$small" ] || continue; extra=(-l "$batch" -c UC) ;;
            signaled) [ "$s" = 16384 ] || continue; extra=(-Q 1) ;;
            empty) [ "$s" = 16384 ] || continue; extra=(-l "$batch" -c UC) ;;
            esac
            [ -z "${gave_up[$mode]:-}" ] || continue # a refinement that failed once is not tried again
            s1= s2= r1= r2= u1= u2= v1= v2=
            if [ $mode = uc ]; then # UC loses what is dropped: the messages counted (uc_of)
                read -r s1 r1 u1 v1 < <(uc_of "$s" $((n_uc / 5)) "${extra[@]}")
                [ -z "$s1" ] || [ -z "$r1" ] || read -r s2 r2 u2 v2 < <(uc_of "$s" "$n_uc" "${extra[@]}")
                if [ -n "$s2" ] && [ -n "$r2" ] && { [ "$((u2 - u1))" -le 0 ] || [ "$((v2 - v1))" -le 0 ]; }; then
                    exp_err "loggp: UC: the long stream sent $u2 and received $v2 messages, the short one $u1 and $v1: no difference to divide by"
                    s2=
                fi
            elif [ $mode = empty ]; then # the receiver's and sender's CPU of the two streams at once
                n_e=1000 # 16,000 messages over UC, what perftest's server can post receives for
                read -r s1 r1 < <(duo_of $((n_e / 5)))
                [ -z "$s1" ] || [ -z "$r1" ] || read -r s2 r2 < <(duo_of "$n_e")
            else
                read -r s1 r1 < <(CPU_TOOL=$tool cpu_of "$s" $((n / 5)) "${extra[@]}")
                [ -z "$s1" ] || [ -z "$r1" ] || read -r s2 r2 < <(CPU_TOOL=$tool cpu_of "$s" "$n" "${extra[@]}")
            fi
            if [ -z "$s1" ] || [ -z "$s2" ] || [ -z "$r1" ] || [ -z "$r2" ]; then
                # the batched, UC and signaled streams are the model's refinements: without them the
                # model counts every post alone, an ACK per message, no completion's own cost; one that
                # failed is left out for the rest of the run (a UC stream that hangs costs uc_limit s a try)
                [ $mode = plain ] || { exp_err "loggp: no CPU figures for $s B ($mode: $tool ${extra[*]}): left out"; gave_up[$mode]=1; continue; }
                exp_err "loggp: no CPU figures for $s B"
                exit 1
            fi
            dn=$((n - n / 5))
            [ $mode != empty ] || dn=$((n_e - n_e / 5))
            cs=$(awk -v a="$s1" -v b="$s2" -v n="$dn" 'BEGIN { printf "%.3f", (b - a) / n }')
            cr=$(awk -v a="$r1" -v b="$r2" -v n="$dn" 'BEGIN { printf "%.3f", (b - a) / n }')
            case $mode in
            batch)
                echo "cpu_send_batch,$s,$dn,$cs"
                echo "loggp: $s B, $batch per post: CPU per message: send $cs us" >&2 ;;
            uc) # per message really sent and received (uc_of's counts)
                cs=$(awk -v a="$s1" -v b="$s2" -v n="$((u2 - u1))" 'BEGIN { printf "%.3f", (b - a) / n }')
                cr=$(awk -v a="$r1" -v b="$r2" -v n="$((v2 - v1))" 'BEGIN { printf "%.3f", (b - a) / n }')
                echo "cpu_send_uc,$s,$((u2 - u1)),$cs"
                echo "cpu_recv_uc,$s,$((v2 - v1)),$cr"
                echo "loggp: $s B over UC, $batch per post: CPU per message: send $cs us, receive $cr us (the short and the long stream sent $u1 and $u2, received $v1 and $v2)" >&2 ;;
            empty) # cs: dst's (the receiver of 16 KiB, the sender of 8 B), cr: src's
                echo "cpu_empty_recv,$s,$dn,$cs"
                echo "loggp: $s B received with 16 of 8 B sent back over UC for each, $batch per post: CPU per message received: $cs us (and $cr us at its sender)" >&2 ;;
            signaled)
                echo "cpu_send_signaled,$s,$dn,$cs"
                echo "loggp: $s B, every send signaled: CPU per message: send $cs us" >&2 ;;
            *)
                echo "cpu_send,$s,$dn,$cs"
                echo "cpu_recv,$s,$dn,$cr"
                echo "loggp: $s B: CPU per message: send $cs us, receive $cr us" >&2 ;;
            esac
        done
    done
done

# o_w's pairs: the 16 KiB stream (ib_send_bw -e) and the 16 KiB ping-pong sleeping on events
# (ib_send_lat -e) measured back to back, LOGGP_WAIT_REPEAT times, each as the difference of a long
# and a short run; each guest's interrupts (/proc/stat intr) read around every run, outside its CPU
# window. A pair whose run failed is said and ends the pairs (what came before is kept).
# intr_of NODE — NODE's guest interrupts since boot (/proc/stat's intr total); nothing when unreadable
intr_of() {
    "$top/lab/lab.sh" exec "$1" 'while read -r k v x; do [ "$k" = intr ] && { echo "$v"; break; }; done < /proc/stat' 2>/dev/null |
        head -n 1 | grep -x '[0-9]\{1,18\}'
}
# counted_of TOOL N — "SRC_US DST_US SRC_INTR DST_INTR": cpu_of's CPU times of TOOL's run of N
# messages (round trips) of 16 KiB and the interrupts each guest took meanwhile ("-" when a count
# could not be read), the counts read before and after, outside the CPU window
counted_of() {
    local i0 j0 i1 j1 cs cr
    i0=$(intr_of "$src") j0=$(intr_of "$dst")
    read -r cs cr < <(CPU_TOOL=$1 cpu_of 16384 "$2")
    [ -n "$cr" ] || return 1
    i1=$(intr_of "$src") j1=$(intr_of "$dst")
    [ -n "$i0" ] && [ -n "$i1" ] && [ "$i1" -ge "$i0" ] && i1=$((i1 - i0)) || i1=-
    [ -n "$j0" ] && [ -n "$j1" ] && [ "$j1" -ge "$j0" ] && j1=$((j1 - j0)) || j1=-
    echo "$cs $cr $i1 $j1"
}
# per A B N — (B - A) / N with 3 decimals; "-" when A or B is
per() {
    if [ "$1" = - ] || [ "$2" = - ]; then echo -; else awk -v a="$1" -v b="$2" -v n="$3" 'BEGIN { printf "%.3f", (b - a) / n }'; fi
}
# About 2 s of each host's CPU in each difference (the stream's ~0.8 ms per message, the ping-pong's
# ~2.8 ms per round trip, 1-2-4 under TCG): what a perftest run's own start costs varies by ~0.2 s,
# and only the length of the difference divides that down; longer runs cost little (a run's start,
# ~6 s, is most of its time)
wn=3000 pn=1250 intr_ok=1
for r in $(seq 1 "$wait_repeat"); do
    a1= b1= x1= y1= a2= b2= x2= y2= c1= d1= u1= v1= c2= d2= u2= v2=
    read -r a1 b1 x1 y1 < <(counted_of ib_send_bw $((wn / 5)))
    [ -z "$y1" ] || read -r a2 b2 x2 y2 < <(counted_of ib_send_bw "$wn")
    [ -z "$y2" ] || read -r c1 d1 u1 v1 < <(counted_of ib_send_lat $((pn / 5)))
    [ -z "$v1" ] || read -r c2 d2 u2 v2 < <(counted_of ib_send_lat "$pn")
    if [ -z "$v2" ]; then
        exp_err "loggp: o_w pair $r of $wait_repeat: a 16384 B run failed: $((r - 1)) pair(s) kept, no more tried"
        break
    fi
    ds=$((wn - wn / 5)) dp=$((pn - pn / 5))
    cs=$(per "$a1" "$a2" $ds) cr=$(per "$b1" "$b2" $ds) ws=$(per "$c1" "$c2" $dp) wr=$(per "$d1" "$d2" $dp)
    is=$(per "$x1" "$x2" $ds) ir=$(per "$y1" "$y2" $ds) iws=$(per "$u1" "$u2" $dp) iwr=$(per "$v1" "$v2" $dp)
    echo "cpu_pair_send,16384,$ds,$cs"
    echo "cpu_pair_recv,16384,$ds,$cr"
    echo "cpu_pair_waited_send,16384,$dp,$ws"
    echo "cpu_pair_waited_recv,16384,$dp,$wr"
    ow=$(awk -v a="$cs" -v b="$cr" -v c="$ws" -v d="$wr" 'BEGIN { printf "%.1f", (c + d) / 2 - (a + b) }')
    # the interrupts: each pair's until one's cannot be read, none after (analysis/loggp.c pairs the rows by their order)
    if [ "$intr_ok" = 1 ] && [ "$is" != - ] && [ "$ir" != - ] && [ "$iws" != - ] && [ "$iwr" != - ]; then
        echo "intr_pair_send,16384,$ds,$is"
        echo "intr_pair_recv,16384,$ds,$ir"
        echo "intr_pair_waited_send,16384,$dp,$iws"
        echo "intr_pair_waited_recv,16384,$dp,$iwr"
        ints=" (guest interrupts per message: stream send $is, receive $ir; per round trip $src $iws, $dst $iwr)"
    else
        [ "$intr_ok" = 0 ] || exp_err "loggp: o_w pair $r: the guests' interrupts (/proc/stat intr) not read on $src or $dst: none counted from here on"
        intr_ok=0 ints=
    fi
    echo "loggp: o_w pair $r of $wait_repeat: 16384 B stream: CPU per message: send $cs us, receive $cr us; ping-pong sleeping on events: CPU per round trip: $src $ws us, $dst $wr us; o_w $ow us$ints" >&2
done

# The host's own work per byte of a collective (experiments/hostwork.c: libinccl's byte-order
# swap, the ring's copies and float sums), run in the sending host: its VM's CPU over passes
# of 16 MiB, 9 passes minus 1, per pass (value_us: CPU per `bytes`; /proc counts 10 ms ticks,
# so 8 passes resolve 1.25 ms each, 0.07 ns per byte). Left out, and said, when hostwork is
# not built or cannot be put on the host: the model then has no such terms. cpu_sum is also the
# reference of exp.sh's speed probe (the same pass, EXP_PROBE_BYTES, before each measurement).
hw=${INCLAB_BUILD:-$top/build}/hostwork hw_bytes=$EXP_PROBE_BYTES
spid=$(awk -v a="$src" '$1 == a' <<<"$pids")
if [ ! -x "$hw" ] || ! "$top/lab/lab.sh" push "$src" "$hw" /tmp/hostwork >/dev/null 2>&1; then
    exp_err "loggp: $hw not built or not copied to $src: no host work per byte measured"
    exit 0
fi
# hw_cpu KIND PASSES — the CPU time (us) of src's process while hostwork KIND runs PASSES passes
hw_cpu() { exp_hostwork_cpu "$src" "$spid" "$1" "$hw_bytes" "$2"; }
for k in swap copy sum; do
    for r in $(seq 1 "$repeat"); do
        c1=$(hw_cpu $k 1) c9=$(hw_cpu $k 9)
        [ -n "$c1" ] && [ -n "$c9" ] || { exp_err "loggp: hostwork $k failed on $src"; exit 1; }
        v=$(awk -v a="$c1" -v b="$c9" 'BEGIN { printf "%.3f", (b - a) / 8 }')
        echo "cpu_$k,$hw_bytes,8,$v"
        echo "loggp: $k of $hw_bytes B on $src: $v us of CPU" >&2
    done
done
exit
}
