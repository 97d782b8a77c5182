#!/usr/bin/env bash
# test-guest-time.sh — lab.sh guest-time without booting any VM: a lab of this
# test (its tables only) of a host VM pa and a namespace switch sw1, whose
# guest agent is tests/harness/fake-agent-virsh standing in for virsh, its
# replies to guest-get-time written by each check (a time, how long it takes).
# guest-time must print "MACHINE_NS GUEST_NS RTT_NS" of the read of least
# round trip (the stand-in's replies take different times, each with a time
# of its own, so the one chosen shows), this machine's clock at the call's
# midpoint; refuse an N that is not 1..20 (exit 2) and a node that is not a
# VM of the lab; refuse an agent's reply that is no time in ns (text, a
# fraction, a number past 2^63-1, one as a string, shell metacharacters, a
# well-formed reply's tail after other text), saying what came, never
# printing it as a time; and give up on an agent that does not answer, or a
# connection that hangs, within a bound. No root needed; about 40 s, most of
# it waiting for the agents that do not answer.
# Runs in tests/lib/harness.sh.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/lib/harness.sh
harness_begin test-guest-time "least format refusals hostile silent"
lab=$PWD/lab/lab.sh
P=ilgt$$
P=${P:0:8}
tmp=$(mktemp -d)
cleanup() { rm -rf "$tmp"; }
harness_on_exit cleanup
t=$'\t'
root=$tmp/root state=$tmp/root/$P
mkdir -p "$state/gen" "$tmp/run" "$tmp/bin" "$tmp/agent/$P-pa"
{ echo "# node${t}role${t}rank${t}mgmt${t}data_if${t}data_addr${t}parent${t}memory_mib${t}vcpus${t}domain${t}kind"
  echo "pa${t}host${t}0${t}192.168.0.101${t}to-sw1${t}10.1.1.21/24${t}sw1${t}3072${t}1${t}$P-pa${t}vm"
  echo "sw1${t}switch${t}-${t}192.168.0.11${t}-${t}-${t}sw0${t}-${t}-${t}$P-sw1${t}netns"
} > "$state/gen/inventory.tsv"
ln -s "$PWD/tests/harness/fake-agent-virsh" "$tmp/bin/virsh"

# gt REPLIES ARG... — lab.sh guest-time ARG... against an agent that answers
# REPLIES (lines "DELAY_S REPLY", one a call), under a bound of 60 s: its
# stdout in $tmp/out, stderr in $tmp/err, exit status in $rc, seconds in $secs
gt() {
    printf '%s\n' "$1" > "$tmp/agent/$P-pa/get-time"
    rm -rf "$tmp/agent/$P-pa/.agent"
    shift
    local t0=$SECONDS
    PATH=$tmp/bin:$PATH FAKE_AGENT_ROOT=$tmp/agent INCLAB_STATE_ROOT=$root INCLAB_PREFIX=$P INCLAB_RUN_DIR=$tmp/run \
        timeout -k 5 60 "$lab" guest-time "$@" > "$tmp/out" 2> "$tmp/err" < /dev/null
    rc=$?
    secs=$((SECONDS - t0))
}
calls() { cat "$tmp/agent/$P-pa/.agent/get-time-calls" 2>/dev/null || echo 0; }
said() { tr '\n' ' ' < "$tmp/err" | cut -c1-160; }

phase least "of N reads, the one of least round trip"
# the fast read in the middle, then last: each reply its own time, so the one printed shows which
gt $'1.5 1700000000000000001\n0 1700000000000000002\n0.8 1700000000000000003' pa 3
read -r m g r _ < "$tmp/out"
check "guest-time pa 3 (replies after 1.5, 0, 0.8 s): exit $rc, '$(cat "$tmp/out")', $(calls) calls: the second read's time" \
    bash -c '[ "$1" = 0 ] && [ "$2" = 1700000000000000002 ] && [ "$3" = 3 ]' _ "$rc" "$g" "$(calls)"
check "  ... its round trip (${r:-?} ns) under the slower ones' 0.8 s" bash -c '[[ $1 =~ ^[0-9]+$ ]] && [ "$1" -lt 800000000 ]' _ "${r:-x}"
gt $'1.2 1700000000000000011\n0.8 1700000000000000012\n0 1700000000000000013' pa 3
read -r _ g _ < "$tmp/out"
check "replies after 1.2, 0.8, 0 s: exit $rc, the last read's time ($g)" bash -c '[ "$1" = 0 ] && [ "$2" = 1700000000000000013 ]' _ "$rc" "$g"
gt '0 1700000000000000021' pa
check "N defaults to 3: $(calls) calls" [ "$(calls)" = 3 ]
gt '0 1700000000000000031' pa 1
check "N 1: $(calls) call, exit $rc" bash -c '[ "$1" = 0 ] && [ "$2" = 1 ]' _ "$rc" "$(calls)"

phase format "\"MACHINE_NS GUEST_NS RTT_NS\": this machine's clock at the call's midpoint"
a=$(date +%s%N)
gt '0.3 1700000000000000041' pa 2
b=$(date +%s%N)
read -r m g r _ < "$tmp/out"
check "one line of three whole numbers: '$(cat "$tmp/out")'" \
    bash -c '[ "$(wc -l < "$1")" = 1 ] && grep -qE "^[0-9]{1,19} [0-9]{1,19} [0-9]{1,19}\$" "$1"' _ "$tmp/out"
check "  ... MACHINE_NS within the run of guest-time, at least RTT_NS / 2 from either end" \
    bash -c '[ $(($2 - $4 / 2)) -ge "$1" ] && [ $(($2 + $4 / 2)) -le "$3" ]' _ "$a" "${m:-0}" "$b" "${r:-0}"
check "  ... RTT_NS ($r) at least the agent's 0.3 s, GUEST_NS the agent's" \
    bash -c '[ "$1" -ge 300000000 ] && [ "$2" = 1700000000000000041 ]' _ "${r:-0}" "$g"

phase refusals "N not 1..20, a node not a VM of the lab"
for n in 0 21 99 abc -1 3x 1.5 "" " 3" 100 '$(id)'; do
    gt '0 1700000000000000051' pa "$n"
    check "N '$n': exit $rc (want 2), no agent call ($(calls)), said: $(said)" \
        bash -c '[ "$1" = 2 ] && [ "$2" = 0 ] && [ ! -s "$3" ] && grep -qF "N is 1..20, not '\''$4'\''" "$5"' _ "$rc" "$(calls)" "$tmp/out" "$n" "$tmp/err"
done
gt '0 1700000000000000052' pa 20
check "N 20 accepted: exit $rc, $(calls) calls" bash -c '[ "$1" = 0 ] && [ "$2" = 20 ]' _ "$rc" "$(calls)"
gt '0 1700000000000000053' nosuch 3
check "an unknown node: exit $rc, said: $(said)" \
    bash -c '[ "$1" != 0 ] && [ ! -s "$2" ] && grep -q "no node .nosuch. in this lab" "$3"' _ "$rc" "$tmp/out" "$tmp/err"
gt '0 1700000000000000054' sw1 3
check "a namespace node: exit $rc, said: $(said)" \
    bash -c '[ "$1" != 0 ] && [ ! -s "$2" ] && grep -q "sw1 is a namespace node" "$3"' _ "$rc" "$tmp/out" "$tmp/err"
gt '0 1700000000000000055'
check "no node: exit $rc, said: $(said)" bash -c '[ "$1" != 0 ] && [ ! -s "$2" ] && grep -q "which node" "$3"' _ "$rc" "$tmp/out" "$tmp/err"

phase hostile "an agent's reply that is no time in ns: refused, said, never printed as a time"
for reply in '"hello"' 'hello' '"1700000000000000061"' '1.5' '-1700000000000000061' '99999999999999999999' \
    '9223372036854775808' '9999999999999999999' '"$(touch '"$tmp"'/pwned)"' '"1;touch '"$tmp"'/pwned"' \
    '[1700000000000000061]' '{"t":1}' 'null' '"1700000000000000061\n1"' '' '1, "x": 2' \
    '1, "return": {"return": 1700000000000000061'; do
    gt "0 $reply" pa 2
    check "reply {\"return\": $reply}: exit $rc, nothing on stdout, $(calls) calls, said: $(said)" \
        bash -c '[ "$1" != 0 ] && [ ! -s "$2" ] && [ "$3" = 2 ] && grep -q "pa: its guest agent gave no time in 2 tries: .*not a whole number" "$4"' \
        _ "$rc" "$tmp/out" "$(calls)" "$tmp/err"
done
check "  ... no reply ran anything ($tmp/pwned absent)" [ ! -e "$tmp/pwned" ]
gt $'0 "bad"\n0 1700000000000000062' pa 2
check "a bad reply then a good one: exit $rc, the good one ($(cut -d' ' -f2 "$tmp/out"))" \
    bash -c '[ "$1" = 0 ] && [ "$(cut -d" " -f2 "$2")" = 1700000000000000062 ]' _ "$rc" "$tmp/out"
gt '0 9223372036854775807' pa 1
check "the greatest time bash can hold (2^63-1) accepted: exit $rc" bash -c '[ "$1" = 0 ] && [ "$(cut -d" " -f2 "$2")" = 9223372036854775807 ]' _ "$rc" "$tmp/out"

phase silent "an agent that does not answer, a connection that hangs: an error within a bound"
gt '0 silent' pa 1
check "an agent silent past the call's timeout: exit $rc after $secs s (bound 15), said: $(said)" \
    bash -c '[ "$1" != 0 ] && [ "$1" != 124 ] && [ "$2" -le 15 ] && [ ! -s "$3" ] && grep -q "pa: its guest agent gave no time in 1 tries: the agent call failed: .*not responding" "$4"' \
    _ "$rc" "$secs" "$tmp/out" "$tmp/err"
gt '0 hang' pa 1
check "a call that hangs past its timeout: exit $rc after $secs s (bound 25), said: $(said)" \
    bash -c '[ "$1" != 0 ] && [ "$1" != 124 ] && [ "$2" -le 25 ] && [ ! -s "$3" ] && grep -q "pa: its guest agent gave no time in 1 tries: .*no answer in" "$4"' \
    _ "$rc" "$secs" "$tmp/out" "$tmp/err"
harness_end
