#!/usr/bin/env bash
# test-cpusample.sh — experiments/cpusample.c on real processes of this
# machine, no lab: its refusals (exit 2, no file left), a busy shell whose
# command name holds spaces and parentheses sampled until it is killed
# (its last ticks must be within two of the CPU /proc said it had used just
# before), the sampler ending on its own when its PIDs are gone and on
# SIGTERM with every line whole; then build/cpuwin on those samples (each
# size's CPU inside two ranks' windows, one rank's clock ahead, against the
# samples interpolated here; its refusals). Needs ${INCLAB_BUILD:-build}/cpusample
# and cpuwin.
# Prints ok/FAIL per check (tests/lib/harness.sh), "N passed, M failed".
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 1
bin=${INCLAB_BUILD:-build}/cpusample
tmp=$(mktemp -d)
. "$top/tests/lib/harness.sh"
busy= sampler=
gone() { [ -n "$busy" ] && kill "$busy" 2>/dev/null; [ -n "$sampler" ] && kill "$sampler" 2>/dev/null; rm -rf "$tmp"; }
harness_begin test-cpusample all
harness_on_exit gone
phase all "every check"

# refused WHY ARGS... — expect exit 2, WHY on stderr, and no $tmp/out
refused() {
    local why=$1 err rc; shift
    err=$("$bin" "$@" 2>&1 >/dev/null); rc=$?
    if [ "$rc" = 2 ] && [[ $err == *"$why"* ]] && [ ! -e "$tmp/out" ]; then ok "cpusample $* refused: $why"
    else ko "cpusample $* (exit $rc) said '$err', want exit 2 and '$why'"; rm -f "$tmp/out"; fi
}
true & dead=$!; wait "$dead" # a PID that has exited
refused "-o FILE is required" $$
refused "no PID given" -o "$tmp/out"
refused "-i: bad interval '0' (1..1000 ms)" -i 0 -o "$tmp/out" $$
refused "-i: bad interval '1001'" -i 1001 -o "$tmp/out" $$
refused "-i: bad interval '5ms'" -i 5ms -o "$tmp/out" $$
refused "bad PID 'abc'" -o "$tmp/out" abc
refused "bad PID '0'" -o "$tmp/out" 0
refused "PID $dead: cannot read /proc/$dead/stat" -o "$tmp/out" $$ "$dead"
refused "cannot write $tmp/no/out" -o "$tmp/no/out" $$
refused "usage: cpusample" -x -o "$tmp/out" $$

# ticks PID — utime + stime of PID now: the fields after the last ')' (field 14 and 15 of stat(5))
ticks() { sed 's/.*)//' "/proc/$1/stat" | awk '{ print $12 + $13 }'; }

# a busy shell named with spaces and parentheses, sampled with this script's shell (which outlives it)
cp "$(command -v sh)" "$tmp/b) (u s)"
"$tmp/b) (u s)" -c 'while :; do :; done' & busy=$!
# the machine's busy time (-m: PID 0) before the sampler starts and after it stops: its samples lie between
# busy TICKS: /proc/stat's user + system + irq + softirq + steal (nice and idle left out)
busy_ticks() { awk '$1 == "cpu" { print $2 + $4 + $7 + $8 + $9; exit }' /proc/stat; }
mbefore=$(busy_ticks)
"$bin" -i 10 -m -o "$tmp/out" "$busy" $$ 2>"$tmp/err" & sampler=$!
want=20 # ticks: 0.2 s of CPU at 100 a second, however loaded the machine
for _ in $(seq 600); do [ "$(ticks "$busy")" -ge "$want" ] && break; sleep 0.1; done
# stopped before its CPU is read: a sample between the read and the kill cannot count more than it (under
# load one did: 32 ticks sampled after 28 read)
kill -STOP "$busy"
sleep 0.05
used=$(ticks "$busy")
bpid=$busy; kill -KILL "$busy"; wait "$busy" 2>/dev/null; busy=
sleep 0.2 # a few samples of $$ alone
kill -TERM "$sampler"; wait "$sampler"; rc=$?; sampler=
mafter=$(busy_ticks)
check "exit 0 on SIGTERM" [ "$rc" = 0 ]
read -r mfirst mlast mn < <(awk -F, 'NR > 2 && $2 == 0 { if (!n++) f = $3; l = $3 } END { print f + 0, l + 0, n + 0 }' "$tmp/out")
if [ "$mn" -ge 2 ] && [ "$mfirst" -ge "$mbefore" ] && [ "$mlast" -le "$mafter" ] && [ "$mlast" -ge "$mfirst" ]; then
    ok "-m: the machine's busy ticks as PID 0, $mn samples from $mfirst to $mlast, within /proc/stat's $mbefore and $mafter read around the sampler"
else ko "-m: the machine's busy ticks as PID 0: $mn samples from '$mfirst' to '$mlast', want within $mbefore and $mafter"; fi
check "-m: the machine's ticks never fall" awk -F, 'NR > 2 && $2 == 0 { if ($3 < prev) exit 1; prev = $3 }' "$tmp/out"
check "-m: said on stderr with the PIDs" grep -q "of 2 PID(s) and the machine every 10 ms" "$tmp/err"
check "the header" [ "$(head -2 "$tmp/out")" = "# cpusample clk_tck=$(getconf CLK_TCK) interval_ms=10
time_ns,pid,ticks" ]
check "every line whole: time_ns,pid,ticks" [ -z "$(tail -n +3 "$tmp/out" | grep -Ev '^[0-9]{19},[0-9]+,[0-9]+$')" ]
last=$(grep -E "^[0-9]+,$bpid," "$tmp/out" | tail -1 | cut -d, -f3)
if [ -n "$last" ] && [ "$used" -ge "$want" ] && [ "$last" -le "$used" ] && [ "$last" -ge $((used - 2)) ]; then
    ok "the busy shell's last sample, $last ticks, within 2 of the $used it had used"
else ko "the busy shell's last sample '$last' ticks, not within 2 of the $used it had used"; fi
check "its ticks never fall" awk -F, -v p="$bpid" 'NR > 2 && $2 == p { if ($3 < prev) exit 1; prev = $3 }' "$tmp/out"
check "the sampler's own CPU on stderr" grep -q "own CPU" "$tmp/err"
after=$(awk -F, -v p=$$ -v b="$bpid" 'NR > 2 && $2 == b { t = $1 } NR > 2 && $2 == p && $1 > t { n++ } END { print n + 0 }' "$tmp/out")
check "$$ sampled on after the busy shell was gone ($after samples)" [ "$after" -ge 1 ]

# every PID gone: it ends by itself, exit 0
sleep 0.3 & short=$!
"$bin" -i 1 -o "$tmp/out2" "$short" 2>/dev/null; rc=$?
check "exit 0 by itself when its PIDs are gone" [ "$rc" = 0 ]
check "at least one sample of it" grep -q ",$short," "$tmp/out2"

# -m alone: no PID, it samples the machine until a signal
"$bin" -i 5 -m -o "$tmp/out3" 2>/dev/null & msampler=$!
sleep 0.3
if kill -0 "$msampler" 2>/dev/null; then ok "-m without a PID: still sampling after 0.3 s"; else ko "-m without a PID: ended by itself"; fi
kill -TERM "$msampler"; wait "$msampler"; rc=$?
check "-m without a PID: exit 0 on SIGTERM, only PID 0's lines ($(tail -n +3 "$tmp/out3" | wc -l) samples)" \
    sh -c "[ $rc = 0 ] && [ \"\$(tail -n +3 '$tmp/out3' | cut -d, -f2 | sort -u)\" = 0 ]"

# ---- build/cpuwin on these samples: the rows of cpuwin.csv -------------------------------------
cw=${INCLAB_BUILD:-build}/cpuwin
# cwrun NAME ARGS... — cpuwin ARGS: stdout in $tmp/NAME.out, stderr in $tmp/NAME.err, exit status in $cwrc
cwrun() { local n=$1; shift; "$cw" "$@" >"$tmp/$n.out" 2>"$tmp/$n.err"; cwrc=$?; }
# two ranks' windows inside the busy shell's sampled span: rank 0's on a clock 2 s ahead, rank 1's on this
# machine's; 1 KiB timed in both (overlapping: counted once), 2 KiB in rank 0 only, a warm-up left out
read -r s0 s1 < <(awk -F, -v p="$bpid" 'NR > 2 && $2 == p { if (!a) a = $1; b = $1 } END { print a, b }' "$tmp/out")
span=$(((s1 - s0) / 4))
a1=$((s0 + span)) b1=$((s0 + 2 * span)) a2=$((s0 + 2 * span + span / 2)) b2=$((s0 + 3 * span))
ahead=2000000000
printf 'rank,phase,bytes,iter,start_ns,end_ns\n0,warmup,1024,1,%s,%s\n0,timed,1024,1,%s,%s\n0,timed,2048,1,%s,%s\n' \
    $((s0 + ahead)) $((b2 + ahead)) $((a1 + ahead)) $((b1 + ahead)) $((a2 + ahead)) $((b2 + ahead)) >"$tmp/w0"
printf 'rank,phase,bytes,iter,start_ns,end_ns\n1,timed,1024,1,%s,%s\n' $((a1 + span / 2)) "$b1" >"$tmp/w1"
cwrun good -s "$tmp/out" -p "pku1:host:$bpid" -p "sw1:switch:$$" -p machine:machine:0 -w "$tmp/w0=$ahead" -w "$tmp/w1=0"
# the busy shell's CPU over [a1, b1] and [a2, b2] from its samples, interpolated as cpuwin_cpu() does
want=$(awk -F, -v p="$bpid" -v a1="$a1" -v b1="$b1" -v a2="$a2" -v b2="$b2" -v hz="$(getconf CLK_TCK)" '
    NR > 2 && $2 == p { n++; t[n] = $1; k[n] = $3 }
    function at(x,   i) { for (i = 1; i < n; i++) if (t[i] <= x && x <= t[i + 1]) return k[i] + (k[i + 1] - k[i]) * (x - t[i]) / (t[i + 1] - t[i]) }
    END { printf "%.0f %.0f", (at(b1) - at(a1)) * 1e6 / hz, (at(b2) - at(a2)) * 1e6 / hz }' "$tmp/out")
got=$(awk -F, -v p="$bpid" 'NR > 1 && $5 == p { printf "%s%s", (n++ ? " " : ""), $6 }' "$tmp/good.out")
if [ "$cwrc" = 0 ] && [ "$(head -n 1 "$tmp/good.out")" = "bytes,calls,node,role,pid,cpu_us,span_us,bound_us" ] &&
    [ "$(tail -n +2 "$tmp/good.out" | cut -d, -f1-5 | tr '\n' ' ')" = "1024,1,pku1,host,$bpid 1024,1,sw1,switch,$$ 1024,1,machine,machine,0 2048,1,pku1,host,$bpid 2048,1,sw1,switch,$$ 2048,1,machine,machine,0 " ]; then
    ok "cpuwin: exit 0, the header, a row per size and process (1 KiB, 2 KiB x pku1, sw1, the machine) ($(head -c 200 "$tmp/good.err"))"
else ko "cpuwin: exit 0, the header, a row per size and process (1 KiB, 2 KiB x pku1, sw1, the machine) ($(head -c 200 "$tmp/good.err"))"; fi
# the machine was at least as busy as the busy shell in each size's windows (within the two rows' bounds)
mb=$(awk -F, -v p="$bpid" 'NR > 1 && $5 == p { c[$1] = $6; b[$1] = $8 } NR > 1 && $4 == "machine" { m[$1] = $6; mb[$1] = $8 }
    END { ok = 2; for (k in c) { if (!(k in m) || m[k] + mb[k] + b[k] < c[k]) ok = 0; printf "%s: %s >= %s; ", k, m[k], c[k] }; print ok }' "$tmp/good.out")
check "cpuwin: the machine's busy time in each size's windows at least the busy shell's ($mb)" [ "${mb##* }" = 2 ]
# equal within 1 us: the same interpolation summed in another order can round a half the other way (CI: 33790
# against 33791)
close=$(awk -v g="$got" -v w="$want" 'BEGIN { n = split(g, a, " "); if (n != split(w, b, " ") || n != 2) { print 0; exit }
    for (i = 1; i <= n; i++) if (a[i] - b[i] > 1 || b[i] - a[i] > 1) { print 0; exit }; print 1 }')
check "cpuwin: the busy shell's CPU in each size's windows, rank 0's moved back 2 s ($got us; from its samples: $want)" [ "$close" = 1 ]
if [ "$(awk -F, 'NR == 2 { print $7 }' "$tmp/good.out")" = "$(((b1 - a1 + 500) / 1000))" ]; then ok "cpuwin: the span of 1 KiB is the union of both ranks' windows, once ($(awk -F, 'NR == 2 { print $7 }' "$tmp/good.out") us)"; else ko "cpuwin: the span of 1 KiB is the union of both ranks' windows, once ($(awk -F, 'NR == 2 { print $7 }' "$tmp/good.out") us)"; fi
cwrun unmoved -s "$tmp/out" -p "pku1:host:$bpid" -w "$tmp/w0=0"
if [ "$cwrc" = 1 ] && [ ! -s "$tmp/unmoved.out" ] && grep -q "outside PID $bpid's samples" "$tmp/unmoved.err"; then ok "cpuwin: rank 0's windows not moved lie outside the samples: exit $cwrc, nothing printed ($(cat "$tmp/unmoved.err"))"; else ko "cpuwin: rank 0's windows not moved lie outside the samples: exit $cwrc, nothing printed ($(cat "$tmp/unmoved.err"))"; fi
printf 'rank,phase,bytes,iter,start_ns,end_ns\n0,timed,1024,1,%s,%s\n0,timed,1024,2,5,x\n' "$a1" "$b1" >"$tmp/wbad"
cwrun badline -s "$tmp/out" -p "pku1:host:$bpid" -w "$tmp/wbad=0"
if [ "$cwrc" = 1 ] && [ ! -s "$tmp/badline.out" ] && grep -qF "$tmp/wbad:3: bad end_ns 'x'" "$tmp/badline.err"; then ok "cpuwin: a windows line that is not one: $tmp/wbad:3, exit $cwrc, nothing printed"; else ko "cpuwin: a windows line that is not one: $tmp/wbad:3, exit $cwrc, nothing printed"; fi
printf 'rank,phase,bytes,iter,start_ns,end_ns\n0,warmup,1024,1,%s,%s\n' "$a1" "$b1" >"$tmp/wwarm"
cwrun warm -s "$tmp/out" -p "pku1:host:$bpid" -w "$tmp/wwarm=0"
if [ "$cwrc" = 1 ] && grep -q "no timed window" "$tmp/warm.err"; then ok "cpuwin: warm-up windows only: exit $cwrc, said"; else ko "cpuwin: warm-up windows only: exit $cwrc, said"; fi
cwrun nopid -s "$tmp/out" -p "pku1:host:1" -w "$tmp/w1=0"
if [ "$cwrc" = 1 ] && grep -q "PID 1 has no samples" "$tmp/nopid.err"; then ok "cpuwin: a PID not sampled: exit $cwrc, said"; else ko "cpuwin: a PID not sampled: exit $cwrc, said"; fi
for bad in "-p pku1:host -w $tmp/w1=0" "-p pku1:host:0 -w $tmp/w1=0" "-p machine:machine:$bpid -w $tmp/w1=0" "-p pk;u1:host:$bpid -w $tmp/w1=0" "-p pku1:host:$bpid -w $tmp/w1" \
    "-p pku1:host:$bpid -w $tmp/w1=1e9" "-p pku1:host:$bpid" "-w $tmp/w1=0"; do
    cwrun usage -s "$tmp/out" $bad
    if [ "$cwrc" = 2 ] && [ ! -s "$tmp/usage.out" ]; then ok "cpuwin -s FILE $bad: a usage error (exit $cwrc: $(head -n 1 "$tmp/usage.err"))"; else ko "cpuwin -s FILE $bad: a usage error (exit $cwrc: $(head -n 1 "$tmp/usage.err"))"; fi
done

harness_end
