#!/usr/bin/env bash
# test-cpusample.sh — experiments/cpusample.c on real processes of this
# machine, no lab: its refusals (exit 2, no file left), a busy shell whose
# command name holds spaces and parentheses sampled until it is killed
# (its last ticks must be within two of the CPU /proc said it had used just
# before), the sampler ending on its own when its PIDs are gone and on
# SIGTERM with every line whole. Needs ${INCLAB_BUILD:-build}/cpusample.
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
"$bin" -i 10 -o "$tmp/out" "$busy" $$ 2>"$tmp/err" & sampler=$!
want=20 # ticks: 0.2 s of CPU at 100 a second, however loaded the machine
for _ in $(seq 600); do [ "$(ticks "$busy")" -ge "$want" ] && break; sleep 0.1; done
used=$(ticks "$busy")
bpid=$busy; kill -KILL "$busy"; wait "$busy" 2>/dev/null; busy=
sleep 0.2 # a few samples of $$ alone
kill -TERM "$sampler"; wait "$sampler"; rc=$?; sampler=
check "exit 0 on SIGTERM" [ "$rc" = 0 ]
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

harness_end
