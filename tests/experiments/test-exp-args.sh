#!/usr/bin/env bash
# test-exp-args.sh — the experiment driver's settings, without a lab:
# experiments/lib.sh's checks (sizes with K/M/G, roots, choices, run
# directories that never overwrite) and experiments/exp.sh's plans and errors
# (EXP_DRY_RUN=1 stops before the lab); lib.sh's verdicts on a measurement
# (verified / failed / not available); rounds (ROUNDS, medians with min-max),
# run conditions (lab.env, /proc/loadavg, /proc/stat, /proc/cpuinfo) and the
# same-load ceiling's pairs from an inventory; and exp.sh end to end on a fake lab
# (a copy of exp.sh and lib.sh next to a lab/lab.sh that answers as the
# hosts would): baselines that cannot start, wrong elements in each
# algorithm, failures after the start, with exit status, meta.yaml and
# messages checked. Needs ${INCLAB_BUILD:-build}/topogen. Prints ok/FAIL per
# check and at its end only (tests/lib/harness.sh),
# "N passed, M failed"; exit 1 on any failure.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 1
state=/nonexistent
. experiments/lib.sh
tmp=$(mktemp -d)
# whatever a check runs (a ceiling.sh or exp.sh that fails to refuse what it should), never the machine's lab
export INCLAB_STATE=$tmp/no-lab
. "$top/tests/lib/harness.sh"
gone() { rm -rf "$tmp"; }
harness_begin test-exp-args all
harness_on_exit gone
phase all "every check"

# same VALUE OUTPUT... — expect a command's stdout
same() { local want=$1 got; shift; got=$("$@" 2>/dev/null); [ "$got" = "$want" ] && ok "$* = $(echo $want)" || ko "$* = '$(echo $got)', want '$(echo $want)'"; }
# refused WHY CMD... — expect a non-zero exit and WHY in stderr
refused() {
    local why=$1 err rc
    shift
    err=$("$@" 2>&1 >/dev/null); rc=$?
    if [ "$rc" != 0 ] && [[ $err == *"$why"* ]]; then ok "$* refused: $why"; else ko "$* (exit $rc) said '$err', want '$why'"; fi
}

same 4096 exp_size_bytes 4096
same 65536 exp_size_bytes 64K
same 536870912 exp_size_bytes 512M
same 536870912 exp_size_bytes 512m
same 2147483648 exp_size_bytes 2G
same 4 exp_size_bytes 4
refused "not a number of bytes" exp_size_bytes 12X
refused "not a number of bytes" exp_size_bytes 1.5G
refused "not a number of bytes" exp_size_bytes -4
refused "not a number of bytes" exp_size_bytes ""
refused "not a number of bytes" exp_size_bytes 512MB
refused "smaller than one 4-byte element" exp_size_bytes 0
refused "not a whole number of 4-byte elements" exp_size_bytes 1023
refused "larger than 2G" exp_size_bytes 3G
refused "larger than 2G" exp_size_bytes 9999999996
exp_check_root 3 4 && ok "root 3 of 4" || ko "root 3 of 4 refused"
refused "ROOT=4 is not a rank of this topology (0..3)" exp_check_root 4 4
refused "ROOT=-1 is not a rank" exp_check_root -1 4
refused "ROOT=x is not a rank" exp_check_root x 4
refused "DTYPE=float64 is not one of: int32 float32" exp_check_choice DTYPE float64 int32 float32
refused "not a whole number of 8-byte elements" exp_size_bytes 1028 8
refused "smaller than one 2-byte element" exp_size_bytes 1 2
same 1026 exp_size_bytes 1026 2
same 2 exp_dtype_width bfloat16
same 4 exp_dtype_width uint32
same 8 exp_dtype_width float64
same "$(printf '1\n4\n16')" exp_sizes 1 16 4

# run directories: never the same twice, even within one second
a=$(exp_run_dir "$tmp/r" allreduce) b=$(exp_run_dir "$tmp/r" allreduce) c=$(exp_run_dir "$tmp/r" allreduce)
if [ -d "$a" ] && [ -d "$b" ] && [ -d "$c" ] && [ "$a" != "$b" ] && [ "$b" != "$c" ] && [ "$a" != "$c" ]; then
    ok "three run directories: $(basename "$a") $(basename "$b") $(basename "$c")"
else
    ko "run directories collide: '$a' '$b' '$c'"
fi
touch "$tmp/file"
refused "cannot create $tmp/file/r" exp_run_dir "$tmp/file/r" x

# perftest's reports (lines as ib_send_lat / ib_send_bw print them); under TCG
# its cycle counter now and then gives "inf", which must never become a figure
lat_inf=' 512        100          inf            inf            inf                inf             0.00            inf                     inf'
lat_ok=' 512        100          80.12          900.20         120.51             130.22          20.00           200.00                  300.00'
bw_ok=' 4096       400              1.95               1.90                 0.000486'
same 120.510 exp_perftest_figure 512 5 <<<"$lat_ok"
same "" exp_perftest_figure 512 5 <<<"$lat_inf"
same "" exp_perftest_figure 4096 5 <<<"$lat_ok"
same 2057.613 exp_perftest_figure 4096 5 1/ <<<"$bw_ok"
same 1.900 exp_perftest_figure 4096 4 <<<"$bw_ok"
same "" exp_perftest_figure 4096 4 <<<' 4096       400              0.00               0.00                 0.000000'
# exp_perftest_value runs again on "inf", and gives up after three runs
runs="$tmp/runs"
exp_perftest() { echo run >>"$runs"; [ "$(wc -l <"$runs")" -ge 2 ] && echo "$lat_ok" || echo "$lat_inf"; }
: >"$runs"; same 120.510 exp_perftest_value ib_send_lat 5 512 a b c d e -n 100
[ "$(wc -l <"$runs")" = 2 ] && ok "one run again after inf" || ko "$(wc -l <"$runs") runs after inf, want 2"
exp_perftest() { echo "$lat_inf"; }
refused "ib_send_lat: no finite figure for 512 B in 3 runs" exp_perftest_value ib_send_lat 5 512 a b c d e
unset -f exp_perftest
# the ceiling is the median of its runs
same 5.000 exp_median 6.1 4.1 5.0
same 4.500 exp_median 4.0 5.0
same 4.000 exp_median 4
same 2.000 exp_median 10 1.5 2 2.5 -3
refused "no numbers" exp_median
# rounds: medians with min and max
same "2.000 1.000 3.000" exp_median_range 3 1 2
same "2.500 1.000 4.000" exp_median_range 4 1
same "5.000 5.000 5.000" exp_median_range 5
refused "no numbers" exp_median_range
refused "'1e9' is not a number" exp_median_range 1 1e9
refused "'inf' is not a number" exp_median_range inf
refused "'x' is not a number" exp_median 1 x # exp_median is exp_median_range's first figure, with its checks
# whatever the locale: under de_DE (decimal comma) sort -g reads -1.5 and -1.2 both as -1
mkdir -p "$tmp/loc"
if localedef -i de_DE -f UTF-8 "$tmp/loc/de_DE.UTF-8" >/dev/null 2>&1 || [ -d "$tmp/loc/de_DE.UTF-8" ]; then
    same "-1.300 -1.500 -1.200" env LOCPATH="$tmp/loc" LC_ALL=de_DE.UTF-8 bash -c ". experiments/lib.sh; exp_median_range -1.2 -1.5 -1.3"
    same "-1.300" env LOCPATH="$tmp/loc" LC_ALL=de_DE.UTF-8 bash -c ". experiments/lib.sh; exp_median -1.2 -1.5 -1.3"
else
    ko "localedef could not make de_DE.UTF-8 (locales' sources in /usr/share/i18n): the locale check cannot run"
fi
exp_check_range ROUNDS 20 1 20 && ok "ROUNDS=20 accepted" || ko "ROUNDS=20 refused"
refused "ROUNDS=21 is not a whole number from 1 to 20" exp_check_range ROUNDS 21 1 20
refused "ROUNDS=0 is not a whole number from 1 to 20" exp_check_range ROUNDS 0 1 20
refused "ROUNDS=3x is not a whole number from 1 to 20" exp_check_range ROUNDS 3x 1 20

# run conditions from the files the kernel and the lab write (hostile: bounded, never run)
printf '0.52 0.40 0.33 1/234 5678\n' >"$tmp/loadavg"
same "0.52 0.40 0.33" exp_loadavg "$tmp/loadavg"
printf 'x; rm -rf / 1 2\n' >"$tmp/loadavg"
same unknown exp_loadavg "$tmp/loadavg"
same unknown exp_loadavg "$tmp/nonexistent"
printf 'cpu  100 0 50 800 10 0 0 40 0 0\ncpu0 1 2 3\n' >"$tmp/stat1"
printf 'cpu  200 0 50 880 10 0 0 60 0 0\n' >"$tmp/stat2"
same "1000 40" exp_cpu_ticks "$tmp/stat1"
same "10.00" exp_steal_pct "$(exp_cpu_ticks "$tmp/stat1")" "$(exp_cpu_ticks "$tmp/stat2")"
same "" exp_steal_pct "" "1000 40"
# guest and guest_nice (fields 10, 11) are already counted in user and nice: not added again
printf 'cpu  100 0 50 800 10 0 0 40 30 5\n' >"$tmp/stat3"
same "1000 40" exp_cpu_ticks "$tmp/stat3"
# steal never below 0 (a counter that went back, a rounding of -0.001): "-0.00" would make meta.yaml unreadable
same "0.00" exp_steal_pct "1000 40" "2000 39"
same "0.00" exp_steal_pct "1000 40" "100000000 39.9"
# the CPU time of the lab's processes (cpu.csv, loggp.sh): user + system ticks of /proc/PID/stat read after
# the command name, which may hold ") " and spaces; a process gone is -1; a difference in microseconds
cp "$(command -v sleep)" "$tmp/a) b c"
"$tmp/a) b c" 30 &
spid=$!
same "sw1 switch 0" exp_cpu_snap "sw1 switch $spid"
same "pku1 host 0
sw1 switch -1" exp_cpu_snap "pku1 host $spid
sw1 switch 999999999"
# a process that used CPU (stopped once it has some ticks: they stay put), read as awk counts them;
# a command name holding a newline (one stat "line" over two) read as well
( while :; do :; done ) &
bpid=$!
for _ in $(seq 1 100); do [ "$(awk '{print $14 + $15}' "/proc/$bpid/stat")" -gt 0 ] && break; sleep 0.1; done
kill -STOP "$bpid"
same "pku1 host $(awk '{print $14 + $15}' "/proc/$bpid/stat")" exp_cpu_snap "pku1 host $bpid"
kill -KILL "$bpid"
cp "$(command -v sleep)" "$tmp/n"$'\n'"l"
"$tmp/n"$'\n'"l" 30 &
npid=$!
for _ in $(seq 1 50); do [ "$(cat "/proc/$npid/comm")" = "n"$'\n'"l" ] && break; sleep 0.1; done
same "sw1 switch 0" exp_cpu_snap "sw1 switch $npid"
kill "$npid"
hz=$(getconf CLK_TCK)
same "pku1 host $((25 * 1000000 / hz))
sw1 switch 0" exp_cpu_delta "pku1 host 100
sw1 switch 7
sw2 switch 5" "pku1 host 125
sw1 switch 7
sw2 switch -1"
same "machine machine 190" exp_cpu_busy "$tmp/stat1"    # user 100 + system 50 + steal 40
printf 'cpu  100 1 50 800 10 7 3 40 0 0\n' >"$tmp/stat4"
same "machine machine 200" exp_cpu_busy "$tmp/stat4"      # 100 + 50 + 7 + 3 + 40: nice, idle and iowait left out
# the pids: a namespace node's service.pid, else the QEMU whose arguments name its domain (none here)
mkdir -p "$tmp/st/gen" "$tmp/st/nodes/sw1/root/run/inclab"
printf '# node\trole\trank\tmgmt\tdata_if\tdata_addr\tparent\tmemory_mib\tvcpus\tdomain\tkind\n' >"$tmp/st/gen/inventory.tsv"
printf 'sw1\tswitch\t-1\t1.2.3.4\tbr0\t-\t-\t512\t1\tx-sw1\tnetns\npku1\thost\t0\t1.2.3.5\teth1\t-\tsw1\t512\t1\tx-pku1\tvm\ncontroller\tcontroller\t-1\t-\t-\t-\t-\t512\t1\tx-c\tnetns\n' >>"$tmp/st/gen/inventory.tsv"
echo "$spid" >"$tmp/st/nodes/sw1/root/run/inclab/service.pid"
same "sw1 switch $spid" env state="$tmp/st" bash -c '. experiments/lib.sh; exp_cpu_pids'
refused "cpu: no process found for pku1 (host)" env state="$tmp/st" bash -c '. experiments/lib.sh; exp_cpu_pids'
# another machine's process (a namespace node of another hypervisor): its stat line and CLK_TCK read
# there arrive as text, parsed by exp_cpu_stat_ticks (numbers only, a precise error otherwise);
# the delta in that machine's ticks (a 4th field)
st='4242 (a) (b c) S 1 4242 4242 0 -1 4194560 120 0 0 0 731 269 0 0 20 0 3 0 100 1000 200'
same "1000 100" exp_cpu_stat_ticks <<<"$st"$'\n100'
same "1000 250" exp_cpu_stat_ticks <<<"$st"$'\n250'
same "$(($(awk '{print $14 + $15}' "/proc/$spid/stat") + 0)) $hz" bash -c '{ cat "/proc/$1/stat"; getconf CLK_TCK; } | { . experiments/lib.sh; exp_cpu_stat_ticks; }' _ "$spid"
for x in "|not a /proc/PID/stat line" "garbage|not a /proc/PID/stat line" "4242 (sw) S 1 2 3|has no user and system ticks" \
    "${st/ 731 / 7x1 }|has no user and system ticks" "${st/ 269 / -269 }|has no user and system ticks" "${st/ 731 / 7310000000000000000 }|has no user and system ticks"; do
    IFS='|' read -r line why <<<"$x"
    refused "$why" exp_cpu_stat_ticks <<<"$line"$'\n100'
done
for r in "" abc 0 1000001 "100 x" "-100"; do refused "CLK_TCK '$r' is not a tick rate" exp_cpu_stat_ticks <<<"$st"$'\n'"$r"; done
same "sw2 switch 200000
pku1 host $((25 * 1000000 / hz))" exp_cpu_delta "sw2 switch 100 250
pku1 host 100" "sw2 switch 150 250
pku1 host 125"
kill "$spid" 2>/dev/null
# where each node ran (meta.yaml): the hypervisors of hypervisors.tsv, or this machine's connection alone
same "hypervisors: 2
placement:
  - {hypervisor: 'here', uri: 'qemu:///system', accelerator: 'unknown', nodes: 'controller sw0 sw1 pku1 pku2'}
  - {hypervisor: 'there', uri: 'qemu+ssh://root@127.0.0.1:2222/system?keyfile=/var/lib/inclab/ssh/key&no_verify=1', accelerator: 'unknown', nodes: 'sw2 pku3 pku4'}" \
    exp_placement tests/golden/hv-two
same "hypervisors: 1
placement:
  - {hypervisor: 'local', uri: 'qemu:///system', accelerator: 'unknown', nodes: 'controller sw0 sw1 sw2 pku1 pku2 pku3 pku4'}" \
    exp_placement tests/golden/1-2-4
# each hypervisor's accelerator from the lab's lab.env (LAB_ACCEL_AT; LAB_ACCEL without hypervisors)
mkdir -p "$tmp/acc/gen" "$tmp/acc1/gen"
cp tests/golden/hv-two/hypervisors.tsv "$tmp/acc/gen/" && cp tests/golden/1-2/inventory.tsv "$tmp/acc1/gen/"
printf 'LAB_ACCEL=kvm\nLAB_ACCEL_AT="here=kvm there=tcg"\n' >"$tmp/acc/lab.env"
printf 'LAB_ACCEL=tcg\n' >"$tmp/acc1/lab.env"
same "hypervisors: 2
placement:
  - {hypervisor: 'here', uri: 'qemu:///system', accelerator: 'kvm', nodes: 'controller sw0 sw1 pku1 pku2'}
  - {hypervisor: 'there', uri: 'qemu+ssh://root@127.0.0.1:2222/system?keyfile=/var/lib/inclab/ssh/key&no_verify=1', accelerator: 'tcg', nodes: 'sw2 pku3 pku4'}" \
    exp_placement "$tmp/acc/gen"
printf 'LAB_ACCEL=kvm\nLAB_ACCEL_AT="here=kvm there=xen\x27"\n' >"$tmp/acc/lab.env"
same "unknown" bash -c '. experiments/lib.sh; exp_placement "$1" | sed -n "s/.*hypervisor: .there.*accelerator: .\([a-z]*\).*/\1/p"' _ "$tmp/acc/gen"
same "hypervisors: 1
placement:
  - {hypervisor: 'local', uri: 'qemu:///system', accelerator: 'tcg', nodes: '$(grep -v '^#' tests/golden/1-2/inventory.tsv | cut -f1 | tr '\n' ' ' | sed 's/ $//')'}" \
    exp_placement "$tmp/acc1/gen"
mkdir -p "$tmp/hv"
printf '# hypervisor\turi\n' >"$tmp/hv/hypervisors.tsv"
printf "a'b\tqemu+ssh://x/system?k='\$(touch %s/ran)'\t1.2.3.4\tn\tb\t1\tsw0 pku1\n" "$tmp" >>"$tmp/hv/hypervisors.tsv"
same "hypervisors: 1
placement:
  - {hypervisor: 'a''b', uri: 'qemu+ssh://x/system?k=''\$(touch $tmp/ran)''', accelerator: 'unknown', nodes: 'sw0 pku1'}" exp_placement "$tmp/hv"
check "exp_placement never runs what hypervisors.tsv holds" [ ! -e "$tmp/ran" ]
printf 'processor\t: 0\nmodel\t\t: 85\nmodel name\t: Some CPU @ 2.0GHz\n' >"$tmp/cpuinfo"
same "Some CPU @ 2.0GHz" exp_cpu_model "$tmp/cpuinfo"
printf 'processor\t: 0\n' >"$tmp/cpuinfo"
same unknown exp_cpu_model "$tmp/cpuinfo"
printf 'LAB_TOPOLOGY=topology/1-2-4.yaml\nLAB_ACCEL=tcg\nLAB_ROLES="host /a/b switch /c/d"\nLAB_SWITCHES=$(touch %s/ran)\n' "$tmp" >"$tmp/lab.env"
same tcg exp_lab_env LAB_ACCEL "$tmp/lab.env"
same "host /a/b switch /c/d" exp_lab_env LAB_ROLES "$tmp/lab.env"
same "" exp_lab_env LAB_MISSING "$tmp/lab.env"
check "exp_lab_env never runs what lab.env holds" [ ! -e "$tmp/ran" ]
same vm exp_word "$(exp_lab_env LAB_SWITCHES "$tmp/lab.env")" vm
same ns exp_word ns vm
same vm exp_word "" vm
[[ $(exp_commit) =~ ^([0-9a-f]{4,40}|unknown)(-dirty)?$ ]] && ok "exp_commit: $(exp_commit)" || ko "exp_commit: '$(exp_commit)'"

# the same-load ceiling's pairs, from an inventory (tests/golden/1-2-4's: pku1, pku2 under sw1; pku3, pku4 under sw2)
pairs_of() { # INVENTORY — exp_load_pairs on it, stdout and stderr on one line each
    mkdir -p "$tmp/inv/gen"
    cp "$1" "$tmp/inv/gen/inventory.tsv"
    (state=$tmp/inv; exp_load_pairs 2>"$tmp/inv/err" | tr '\n' ';'; echo " [$(tr '\n' ' ' <"$tmp/inv/err")]")
}
same "pku1 pku3;pku2 pku4; []" pairs_of tests/golden/1-2-4/inventory.tsv
grep -v '^pku4' tests/golden/1-2-4/inventory.tsv >"$tmp/odd.tsv"
same "pku1 pku3; [exp: load ceiling: 3 hosts, an odd number: pku2 sits idle ]" pairs_of "$tmp/odd.tsv"
grep -v '^pku[34]' tests/golden/1-2-4/inventory.tsv >"$tmp/one-leaf.tsv"
same "pku1 pku2; [exp: load ceiling: pku1 and pku2 share leaf sw1 (no host left under another leaf) ]" pairs_of "$tmp/one-leaf.tsv"
awk -F'\t' -v OFS='\t' '$1 == "pku2" { $3 = 3 } $1 == "pku4" { $3 = 1 } 1' tests/golden/1-2-4/inventory.tsv >"$tmp/ranks.tsv"
same "pku1 pku4;pku3 pku2; []" pairs_of "$tmp/ranks.tsv"
sed 's/^pku3\t/pku3;reboot\t/' tests/golden/1-2-4/inventory.tsv >"$tmp/evil.tsv"
out=$(pairs_of "$tmp/evil.tsv")
[[ $out == " [exp: inventory: host line 3 is not"* ]] && ok "a host name that is not a plain word is refused: $out" || ko "evil inventory: $out"
grep -v '^pku' tests/golden/1-2-4/inventory.tsv >"$tmp/none.tsv"
same " [exp: no host in the inventory ]" pairs_of "$tmp/none.tsv"
# ib_send_bw -b --report-both: the sum, then what the client sent, then what the server sent
bidir=' 65536      400           2.50               2.20                 0.000035
 65536      400           1.30               1.20                 0.000019
 65536      400           1.10               1.00                 0.000016'
same "1.200 1.000" exp_bidir_figures 65536 <<<"$bidir"
same "1.100 1.100" exp_bidir_figures 65536 <<<"$(head -n 1 <<<"$bidir")"
same "" exp_bidir_figures 65536 <<<"$(sed '3s/1.00 /inf /' <<<"$bidir")"
same "" exp_bidir_figures 4096 <<<"$bidir"
refused "CEILING_MODE=both is not one of: pair load" env CEILING_MODE=both experiments/ceiling.sh
same "mode load runs 3 size 65536 iters 400 events none" env CEILING_DRY_RUN=1 CEILING_MODE=load experiments/ceiling.sh
same "mode pair runs 3 size 65536 iters 400 events none" env CEILING_DRY_RUN=1 CEILING_EVENTS=0 experiments/ceiling.sh
same "mode pair runs 3 size 65536 iters 400 events -e" env CEILING_DRY_RUN=1 CEILING_EVENTS=1 experiments/ceiling.sh
refused "CEILING_EVENTS must be 0 or 1, not 'yes'" env CEILING_EVENTS=yes experiments/ceiling.sh
refused "CEILING_LISTEN_WAIT must be 1..999 seconds, not '0'" env CEILING_LISTEN_WAIT=0 experiments/ceiling.sh

# the driver's plans (EXP_DRY_RUN=1: settings checked, nothing run)
dry() { EXP_DRY_RUN=1 "$@" experiments/exp.sh "${EXP:?}"; }
out=$(EXP=paper dry env 2>&1)
if grep -qx "allreduce 1073741824" <<<"$out" && grep -qx "reduce 536870912" <<<"$out" && [ "$(grep -c '^allreduce ' <<<"$out")" = 5 ] &&
    [ "$(grep -c '^reduce ' <<<"$out")" = 2 ]; then ok "paper: 5 AllReduce and 2 Reduce rows of the seed's table"; else ko "paper plan: $out"; fi
out=$(EXP=sweep dry env MIN=1M MAX=16M FACTOR=4 2>&1)
if [ "$(grep -c '^allreduce ' <<<"$out")" = 3 ] && [ "$(grep -c '^broadcast ' <<<"$out")" = 3 ] && grep -qx "barrier 4" <<<"$out"; then
    ok "sweep 1M..16M x4: 3 sizes per collective and a barrier"
else
    ko "sweep plan: $out"
fi
out=$(EXP=sweep dry env SIZES="512M 16M 64M" COLLECTIVES="broadcast allreduce" 2>&1)
if [ "$(grep -vc '^experiment\|^mpi-ucx: skipped' <<<"$out")" = 6 ] && [ "$(sed -n 2p <<<"$out")" = "allreduce 536870912" ] &&
    [ "$(sed -n 4p <<<"$out")" = "allreduce 67108864" ] && [ "$(sed -n 5p <<<"$out")" = "broadcast 536870912" ] &&
    ! grep -q '^reduce\|^barrier' <<<"$out"; then
    ok "sweep SIZES='512M 16M 64M' COLLECTIVES='broadcast allreduce': 3 sizes as given, AllReduce first, no Reduce or barrier"
else
    ko "sweep SIZES/COLLECTIVES plan: $out"
fi
out=$(EXP=sweep dry env COLLECTIVES=barrier 2>&1)
[ "$(grep -vc '^experiment\|^mpi-ucx: skipped' <<<"$out")" = 1 ] && grep -qx "barrier 4" <<<"$out" && ok "sweep COLLECTIVES=barrier: the barrier alone" ||
    ko "sweep COLLECTIVES=barrier: $out"
refused "SIZES: 16777216 is 16777216 bytes, given before as 16M" env EXP_DRY_RUN=1 SIZES="16M 16777216" experiments/exp.sh sweep
refused "size '16MB' is not a number of bytes" env EXP_DRY_RUN=1 SIZES="1M 16MB" experiments/exp.sh sweep
refused "WINDOW=0 is not a whole number from 1 to 16384" env EXP_DRY_RUN=1 WINDOW=0 experiments/exp.sh allreduce
refused "WINDOW=16385 is not a whole number from 1 to 16384" env EXP_DRY_RUN=1 WINDOW=16385 experiments/exp.sh allreduce
refused "WINDOW=2k is not a whole number from 1 to 16384" env EXP_DRY_RUN=1 WINDOW=2k experiments/exp.sh allreduce
refused "MESSAGE=0 is not a whole number from 1 to 64" env EXP_DRY_RUN=1 MESSAGE=0 experiments/exp.sh allreduce
refused "MESSAGE=65 is not a whole number from 1 to 64" env EXP_DRY_RUN=1 MESSAGE=65 experiments/exp.sh allreduce
refused "SIZES is empty" env EXP_DRY_RUN=1 SIZES="  " experiments/exp.sh sweep
refused "COLLECTIVES=alltogether is not one of: allreduce reduce broadcast barrier allgather reducescatter alltoall" env EXP_DRY_RUN=1 COLLECTIVES="allreduce alltogether" experiments/exp.sh sweep
for c in allgather reducescatter alltoall; do
    out=$(EXP=$c dry env SIZE=4M OP=max BASELINES=ring 2>&1)
    if [ "$(grep -vc '^experiment' <<<"$out")" = 1 ] && grep -qx "$c 4194304" <<<"$out" && grep -q "op max root 0 baselines 'ring'" <<<"$out"; then
        ok "$c SIZE=4M: one $c of the whole 4 MiB buffer"
    else
        ko "$c plan: $out"
    fi
done
out=$(EXP=sweep dry env SIZES="1M" COLLECTIVES="alltoall allgather barrier" 2>&1)
if [ "$(grep -vc '^experiment\|^mpi-ucx: skipped' <<<"$out")" = 3 ] && [ "$(sed -n 2p <<<"$out")" = "barrier 4" ] &&
    [ "$(sed -n 3p <<<"$out")" = "allgather 1048576" ] && [ "$(sed -n 4p <<<"$out")" = "alltoall 1048576" ]; then
    ok "sweep COLLECTIVES='alltoall allgather barrier': in the fixed order, the block collectives after barrier"
else
    ko "sweep with block collectives: $out"
fi
refused "COLLECTIVES is empty" env EXP_DRY_RUN=1 COLLECTIVES=" " experiments/exp.sh sweep
out=$(EXP=reduce dry env SIZE=512M ROOT=3 DTYPE=int32 OP=max BASELINES=none 2>&1)
if grep -qx "reduce 536870912" <<<"$out" && grep -q "dtype int32 op max root 3 baselines ''" <<<"$out"; then
    ok "reduce SIZE=512M ROOT=3 DTYPE=int32 OP=max BASELINES=none"
else
    ko "reduce plan: $out"
fi
refused "ROOT=4 is not a rank of this topology (0..3)" env EXP_DRY_RUN=1 ROOT=4 experiments/exp.sh broadcast
refused "size '1.5G' is not a number of bytes" env EXP_DRY_RUN=1 SIZE=1.5G experiments/exp.sh allreduce
refused "larger than 2G" env EXP_DRY_RUN=1 SIZE=4G experiments/exp.sh allreduce
refused "OP=prod is not one of: sum max min" env EXP_DRY_RUN=1 OP=prod experiments/exp.sh allreduce
refused "DTYPE=float128 is not one of: int32 uint32 int64 uint64 float16 bfloat16 float32 float64" env EXP_DRY_RUN=1 DTYPE=float128 experiments/exp.sh allreduce
refused "size '1020' (1020 bytes) is not a whole number of 8-byte elements" env EXP_DRY_RUN=1 DTYPE=float64 SIZE=1020 experiments/exp.sh allreduce
out=$(EXP=allreduce dry env SIZE=2M DTYPE=bfloat16 BASELINES=none 2>&1)
grep -qx "allreduce 2097152" <<<"$out" && grep -q "dtype bfloat16 op sum" <<<"$out" && ok "allreduce DTYPE=bfloat16 SIZE=2M" ||
    ko "allreduce DTYPE=bfloat16: $out"
refused "BASELINES=nccl is not one of" env EXP_DRY_RUN=1 BASELINES="ring nccl" experiments/exp.sh allreduce
refused "MIN=1G is larger than MAX=1M" env EXP_DRY_RUN=1 MIN=1G MAX=1M experiments/exp.sh sweep
refused "FACTOR=1 is not a whole number >= 2" env EXP_DRY_RUN=1 FACTOR=1 experiments/exp.sh sweep
refused "ITERS=0 is not a whole number >= 1" env EXP_DRY_RUN=1 ITERS=0 experiments/exp.sh allreduce
refused "ROUNDS=0 is not a whole number from 1 to 20" env EXP_DRY_RUN=1 ROUNDS=0 experiments/exp.sh allreduce
refused "ROUNDS=21 is not a whole number from 1 to 20" env EXP_DRY_RUN=1 ROUNDS=21 experiments/exp.sh allreduce
refused "ROUNDS=two is not a whole number from 1 to 20" env EXP_DRY_RUN=1 ROUNDS=two experiments/exp.sh allreduce
refused "ROUND_BUDGET=0 is not a whole number from 1 to 86400" env EXP_DRY_RUN=1 ROUND_BUDGET=0 experiments/exp.sh allreduce
refused "ROUND_BUDGET=20m is not a whole number from 1 to 86400" env EXP_DRY_RUN=1 ROUND_BUDGET=20m experiments/exp.sh allreduce
out=$(EXP=allreduce dry env 2>&1)
grep -q "baselines 'ceiling ceiling-load loggp ring mpi-tcp' rounds 3$" <<<"$out" &&
    ok "default: 3 rounds, the same-load ceiling among the baselines, not mpi-ucx" || ko "default plan: $out"
[ "$(grep -c '^mpi-ucx: skipped by default: .*no transport on rxe' <<<"$out")" = 1 ] &&
    ok "default: one line says why mpi-ucx is skipped" || ko "default plan, the mpi-ucx line: $out"
out=$(EXP=allreduce dry env BASELINES="ring mpi-ucx" 2>&1)
grep -q "baselines 'ring mpi-ucx'" <<<"$out" && ! grep -q 'skipped by default' <<<"$out" &&
    ok "BASELINES naming mpi-ucx: measured, no skip line" || ko "BASELINES=ring mpi-ucx: $out"
out=$(EXP=allreduce dry env ROUNDS=020 2>&1)
grep -q " rounds 20$" <<<"$out" && ok "ROUNDS=020 is 20 rounds" || ko "ROUNDS=020: $out"
refused "unknown experiment 'alltogether'" env EXP_DRY_RUN=1 experiments/exp.sh alltogether
# make run: its settings are checked before any lab-up (a lab that cannot exist: lab.sh would refuse its state)
refused "SWITCHES must be vm or netns, not 'kvm'" env SWITCHES=kvm INCLAB_STATE=/nonexistent/lab experiments/run.sh
refused "size '1.5G' is not a number of bytes" env SIZES="1M 1.5G" INCLAB_STATE=/nonexistent/lab experiments/run.sh
refused "ROUNDS=0 is not a whole number from 1 to 20" env ROUNDS=0 INCLAB_STATE=/nonexistent/lab experiments/run.sh
refused "topology topology/none.yaml" env EXP_DRY_RUN=1 TOPOLOGY=topology/none.yaml experiments/exp.sh allreduce

# ---- what a measurement came to (experiments/lib.sh) ------------------------------
H=$EXP_CSV_HEADER
row() { echo "$1,allreduce,float32,sum,-,4,4096,1024,3,100.00,40.96,61.44,$2,${3:-120.00}"; } # row LABEL WRONG [TIME_MAX]
# verdict WANT LABEL RC OUT ERR — exp_outcome's line must start with WANT
verdict() {
    local want=$1 got
    shift
    printf '%b' "$3" >"$tmp/v.out"
    printf '%b' "$4" >"$tmp/v.err"
    got=$(exp_outcome "$1" "$2" "$tmp/v.out" "$tmp/v.err")
    [[ $got == "$want"* ]] && ok "verdict $1 status $2: $got" || ko "verdict $1 status $2: '$got', want '$want...'"
}
verdict "ok" ring 0 "$H\n$(row ring 0)\n" ""
verdict "failed: 3 wrong elements in 1 row" mpi-ucx 1 "$H\n$(row mpi-ucx 3)\n" "exp: mpi-ucx: mpirun exited 1: mpi_perf: 3 wrong elements over all ranks\n"
verdict "failed: 7 wrong elements in 2 rows (though it exited 0)" mpi-tcp 0 "$H\n$(row mpi-tcp 0)\n$(row mpi-tcp 3)\n$(row mpi-tcp 4)\n" ""
verdict "failed: 1 wrong element in 1 row" inc 3 "$(row inc 1)\n" "" # a row proves it started, whatever the status says
verdict "unavailable: mpi-ucx: mpirun exited 1: PML ucx cannot be selected" mpi-ucx 3 "[1] [vm:1] UCX WARN noise\n" "exp: mpi-ucx: mpirun exited 1: PML ucx cannot be selected\n"
verdict "failed: failed after it started: inccl_perf: rank 1" ring 3 "$H\n" "inccl_perf: rank 1: inccl_comm_init failed\n" # the header: rank 0 was past its bootstrap
verdict "failed: failed after it started: mpi-tcp: mpirun exited 4" mpi-tcp 1 "$H\n" "exp: mpi-tcp: mpirun exited 4: mpi_perf: rank 2: MPI_Allreduce of 4 KiB failed\n"
verdict "failed: exited 0 without a row of mpi-tcp" mpi-tcp 0 "$H\n" ""
verdict "failed: 1 unreadable row(s): ring,allreduce,float32" ring 1 "$H\nring,allreduce,float32,sum,-,4,40\n" ""
verdict "failed: 1 unreadable row(s)" ring 0 "$H\n$(row ring 0)\nring,allreduce,float32,sum,-,4,4096,1024,3,100.00,40.96,61.44,x\n" ""
same "$(row ring 0)" exp_rows ring <(printf '%s\n' "$H" "[17.5] UCX WARN ring,is,not,a,row" "$(row ring 0)" "$(row inc 2)" "ring,cut,short")
same "$(row ceiling 0 -)" exp_rows ceiling <(printf '%s\n' "$H" "$(row ceiling 0 -)" "$(row ceiling 0 x)")
# a tool from before time_max_us (13 fields): its rows are not stored, the measurement fails
verdict "failed: 1 unreadable row(s)" ring 0 "$H\nring,allreduce,float32,sum,-,4,4096,1024,3,100.00,40.96,61.44,0\n" ""
verdict "failed: 1 unreadable row(s)" ring 0 "$H\n$(row ring 0 1e3)\n" ""
# results.csv keeps the round in column 14 (as before time_max_us), time_max_us after it
same "ring,allreduce,float32,sum,-,4,4096,1024,3,100.00,40.96,61.44,0,2,120.00" exp_store_row 2 <<<"$(row ring 0)"
[ "$(head -n 1 <<<"$EXP_RESULTS_HEADER" | cut -d, -f14,15)" = "round,time_max_us" ] &&
    ok "EXP_RESULTS_HEADER: round in column 14, time_max_us in 15" || ko "EXP_RESULTS_HEADER: $EXP_RESULTS_HEADER"
got=$(exp_yaml_str "it's \"quoted\": #1"$'\n'"x")
[ "$got" = "'it''s \"quoted\": #1 x'" ] && ok "exp_yaml_str: quotes doubled, a newline a space: $got" || ko "exp_yaml_str: $got"

# a real inccl_perf whose bootstrap fails (nobody at the master's address): exit 3, no
# report header, so a ring that cannot start is "not available" with inccl_perf's reason
# (make test-experiments builds it first; a missing or stale one is a failure)
perf=$(cd "${INCLAB_BUILD:-${BUILD:-build}}" 2>/dev/null && pwd)/inccl_perf
if [ -x "$perf" ] && [ "$perf" -nt hostlib/tools/inccl_perf.c ] && [ "$perf" -nt hostlib/tools/perf_opts.c ]; then
    rc=0
    timeout 60 "$perf" -r 1 -N 2 -m 127.0.0.1:1 -t 1 -F csv -C barrier -A ring >"$tmp/p.out" 2>"$tmp/p.err" || rc=$?
    v=$(exp_outcome ring "$rc" "$tmp/p.out" "$tmp/p.err")
    if [ "$rc" = 3 ] && [ ! -s "$tmp/p.out" ] && [[ $v == "unavailable: inccl_perf: rank 1: inccl_group_create failed"* ]]; then
        ok "inccl_perf without a master: exit 3, no report; $v"
    else
        ko "inccl_perf without a master: exit $rc, stdout '$(cat "$tmp/p.out")', verdict '$v'"
    fi
else
    ko "no up-to-date $perf to run (make inccl_perf)"
fi

# ---- experiments/exp.sh on a fake lab: every verdict end to end ---------------------
# A copy of exp.sh and lib.sh next to a fake lab/lab.sh that plays the lab's
# hosts: it answers exp_run_ranks' and exp_run_mpi's commands from scenario
# files $scen/ALGO (or $scen/ALGO@BYTES for one size): shell variables rc
# (every rank's exit status / mpirun's), wrong (the row's wrong count),
# header=0 (no report header), rows=0 (no row), err (stderr), noise (stdout
# lines before the report, as UCX prints its warnings).
topogen=$(cd "${INCLAB_BUILD:-build}" 2>/dev/null && pwd)/topogen
tree=$tmp/tree scen=$tmp/scen
mkdir -p "$tree/experiments" "$tree/lab" "$tmp/state"
cp experiments/exp.sh experiments/lib.sh experiments/ceiling.sh experiments/loggp.sh "$tree/experiments/"
cp -r topology "$tree/"
cat >"$tree/lab/lab.sh" <<'FAKE'
#!/usr/bin/env bash
# fake lab.sh (test-exp-args.sh): status, and exec NODE CMD answered from $FAKE_SCEN
set -uo pipefail
# guest-time NODE N: this machine's clock, the guest's (offset.NODE ns ahead, default 0), a 4 ms round trip
if [ "$1" = guest-time ]; then
    [ ! -e "$FAKE_SCEN/no-clock.$2" ] || { echo "lab: $2: its guest agent gave no time in 3 tries" >&2; exit 1; }
    m=$(date +%s%N)
    echo "$m $((m + $(cat "$FAKE_SCEN/offset.$2" 2>/dev/null || echo 0))) 4000000"
    exit 0
fi
[ "$1" = exec ] || exit 0
node=$2 c=$3 d=$FAKE_SCEN/nodes/$2
mkdir -p "$d"
# $FAKE_SCEN/edit names scripts of the copied tree, a line each: the first command after it appears
# changes each in place, once (400 bytes put before its text, as an editor writing in place would:
# a shell still reading the file would go on from its old offset, in the middle of a line)
if [ -e "$FAKE_SCEN/edit" ] && mv "$FAKE_SCEN/edit" "$FAKE_SCEN/edit.done" 2>/dev/null; then
    while read -r f; do
        o=$(cat "$f") && { printf '#%.0s' $(seq 1 400); echo; printf '%s\n' "$o"; } >"$f"
    done <"$FAKE_SCEN/edit.done"
fi
# tool ALGO COLL BYTES — load the scenario of ALGO at BYTES, log the call
tool() {
    rc=0 wrong=0 header=1 rows=1 err= noise= win=
    . "$FAKE_SCEN/$1" 2>/dev/null
    [ -e "$FAKE_SCEN/$1@$3" ] && . "$FAKE_SCEN/$1@$3"
    echo "$1 $3" >>"$FAKE_SCEN/calls"
}
# report ALGO COLL BYTES — what rank 0 prints on stdout
report() {
    [ -z "$noise" ] || printf '%s\n' "$noise"
    [ "$header" = 0 ] || echo "algorithm,collective,dtype,op,root,nranks,bytes,elements,iters,time_us,algbw_MBps,busbw_MBps,wrong,time_max_us"
    [ "$rows" = 0 ] || echo "$1,$2,float32,sum,-,4,$3,$(($3 / 4)),3,100.00,40.96,61.44,$wrong,125.00"
}
arg() { [[ $c =~ (^| )$1\ ([^ ]+) ]] && echo "${BASH_REMATCH[2]}"; }
# loggp.sh's perftest runs (with $FAKE_SCEN/loggp): a report line for the size asked; a UC stream
# sends its -n on pku1 (pku3: the empty packets') and loses the try's count ($FAKE_SCEN/uc.lost, a
# line per UC try, else 0) on the way to pku3 (pku1), whose server (its last -n) gives no report, as perftest's waits, when fewer came
if [ -e "$FAKE_SCEN/loggp" ]; then
    counter() { cat "$FAKE_SCEN/nodes/$1/$2" 2>/dev/null || echo 1000; } # NODE NAME: a counter's value
    intr() { mkdir -p "$FAKE_SCEN/nodes/$1" && echo $(($(counter "$1" intr) + $2)) >"$FAKE_SCEN/nodes/$1/intr"; } # NODE N: N interrupts more
    case $c in
    *" > /tmp/ib_send_"*".server 2>&1 &") # a server: what it waits for
        echo "$node $c" >>"$FAKE_SCEN/servers"
        grep -o ' -n [0-9]*' <<<"$c" | tail -n 1 | tr -dc 0-9 >"$FAKE_SCEN/server.n"
        exit 0 ;;
    "timeout "*" ib_send_lat "*) # a ping-pong: 3 interrupts per round trip on pku1, 5 on pku3; from the
        # lat.failfrom-th call on ($FAKE_SCEN/lat.failfrom), it fails
        k=$(($(cat "$FAKE_SCEN/lat.calls" 2>/dev/null || echo 0) + 1)) && echo "$k" >"$FAKE_SCEN/lat.calls"
        [ ! -e "$FAKE_SCEN/lat.failfrom" ] || [ "$k" -lt "$(cat "$FAKE_SCEN/lat.failfrom")" ] || exit 1
        intr "$node" $((3 * $(arg -n))); intr pku3 $((5 * $(arg -n)))
        printf ' %s 100 1.00 9.00 3.00 4.00 0.10 5.00 6.00\n' "$(arg -s)"; exit 0 ;;
    "timeout "*" ib_send_bw "*)
        n=$(arg -n)
        intr "$node" "$n"; intr pku3 $((2 * n)) # a stream: 1 interrupt per message on pku1, 2 on pku3
        if [[ $c == *"-c UC"* ]]; then
            try=$(($(cat "$FAKE_SCEN/uc.tries" 2>/dev/null || echo 0) + 1))
            echo "$try" >"$FAKE_SCEN/uc.tries"
            lost=$(sed -n "${try}p" "$FAKE_SCEN/uc.lost" 2>/dev/null)
            peer=pku3 && [ "$node" != pku3 ] || peer=pku1 # the empty packets go back from pku3 to pku1
            mkdir -p "$FAKE_SCEN/nodes/$peer"
            echo $(($(counter "$node" sent_pkts) + n)) >"$d/sent_pkts.new" && mv "$d/sent_pkts.new" "$d/sent_pkts"
            echo $(($(counter $peer rcvd_pkts) + n - ${lost:-0})) >"$FAKE_SCEN/nodes/$peer/rcvd_pkts"
            [ $((n - ${lost:-0})) -ge "$(cat "$FAKE_SCEN/server.n")" ] || exit 124
        fi
        printf ' %s %s 1.00 1.00 0.05000\n' "$(arg -s)" "$n"
        exit 0 ;;
    "cat /sys/class/infiniband/rxe0/ports/1/hw_counters/"*) [ ! -e "$FAKE_SCEN/no-counters" ] && counter "$node" "${c##*/}"; exit ;;
    *"= intr ]"*"/proc/stat") [ ! -e "$FAKE_SCEN/no-intr" ] && counter "$node" intr; exit ;; # the guest's interrupts
    esac
fi
case $c in
*"inccl_perf -r "*)
    tool "$(arg -A)" "$(arg -C)" "$(arg -b)"
    # -X: the windows file, on the guest's clock (offset.NODE ns ahead): a warm-up and 2 timed calls of 50 ms
    # each, their interrupts 1000 (the warm-up) and 10 x (rank + 1) per timed call, their packets 300 and 200
    # (the file no-intr.RANK: the interrupts -1, unreadable); the scenario's win= instead when it gives one
    if [[ $c == *" -X /tmp/exp.win"* ]]; then
        off=$(cat "$FAKE_SCEN/offset.$node" 2>/dev/null || echo 0)
        if [ -n "$win" ]; then printf '%s\n' "$win" >"$d/exp.win"
        else
            { echo rank,phase,bytes,iter,start_ns,end_ns,intr,pkts
              for it in warmup,1 timed,1 timed,2; do
                  t0=$(date +%s%N); sleep 0.05; t1=$(date +%s%N)
                  ni=$((10 * ($(arg -r) + 1))) np=200
                  [ "${it%,*}" = timed ] || ni=1000 np=300
                  [ ! -e "$FAKE_SCEN/no-intr.$(arg -r)" ] || ni=-1
                  echo "$(arg -r),${it%,*},$(arg -b),${it#*,},$((t0 + off)),$((t1 + off)),$ni,$np"
              done; } >"$d/exp.win"
        fi
    fi
    if [ "$(arg -r)" = 0 ]; then report "$(arg -A)" "$(arg -C)" "$(arg -b)" >"$d/exp.out"; else : >"$d/exp.out"; fi
    printf '%s\n' "$err" >"$d/exp.err"
    # the host's counters before (0) and after (1): one changed, one not, and lines to ignore
    printf '0 sent_pkts:100\n0 guest_ctxt:7\n0 rcvd_pkts:9\n1 sent_pkts:%s\n1 guest_ctxt:7\n1 evil;x:5\n2 rcvd_pkts:99\n1 rcvd_pkts:9x\n' \
        "$((150 + $(arg -r)))" >"$d/exp.rxe"
    echo "$rc" >"$d/exp.rc"
    # the switches log one counter line per communicator when it closes (libinccl's only): a zero,
    # a word that is no counter, a line of another kind
    if [ "$(arg -r)" = 0 ] && [ "$(arg -A)" = inc ]; then
        for s in sw0 sw1 sw2; do
            mkdir -p "$FAKE_SCEN/nodes/$s"
            printf 'incswitch %s: comm 9 closed\nincswitch %s comm 9: rx_frames=%s retransmits=0 timeouts=%s evil=x1 held_for_turn=5\n' \
                "$s" "$s" "$((1000 + ${s#sw}))" "${s#sw}" >>"$FAKE_SCEN/nodes/$s/incswitch.log"
        done
    fi
    ;;
*mpirun*)
    tool "$(arg -a)" "$(arg -C)" "$(arg -b)"
    report "$(arg -a)" "$(arg -C)" "$(arg -b)" >"$d/mpi.out"
    printf '%s\n' "$err" >"$d/mpi.err"
    exit "$rc"
    ;;
"test -e /tmp/exp.rc") [ -e "$d/exp.rc" ] ;;
"head -c "*" /tmp/exp.win") head -c "$(arg -c)" "$d/exp.win" ;;
"cat /tmp/exp."* | "cat /tmp/mpi."*) # one file or more, as cat reads them; each read logged (reads)
    echo "$node $c" >>"$FAKE_SCEN/reads"
    rc=0
    for f in ${c#cat }; do cat "$d/${f#/tmp/}" 2>/dev/null || rc=1; done
    exit "$rc" ;;
"cat /root/.ssh/id_ed25519.pub") [ ! -e "$FAKE_SCEN/no-ssh" ] && echo "ssh-ed25519 AAAAfake root@$node" ;;
/usr/local/sbin/inclab-ready) echo "inclab-ready: rxe0 up, gid[1] ::ffff:10.1.1.21" ;;
*"timeout 240 ib_send_bw "*" -b "*) # a load ceiling's client: its start (start.NODE, else 1000) and end 10 s later,
    # the sum, then what each end sent (MiB/s)
    echo "$node $(arg -p)" >>"$FAKE_SCEN/bidir"
    echo "$c" >>"$FAKE_SCEN/ib"
    st=$(cat "$FAKE_SCEN/start.$node" 2>/dev/null || echo 1000.000)
    echo "start $st"
    printf ' 65536 400 2.40 2.20 0.00003\n 65536 400 1.30 1.20 0.00002\n 65536 400 1.10 1.00 0.00002\n'
    echo "end $(awk -v s="$st" 'BEGIN { printf "%.3f", s + 10 }')" ;;
"timeout 240 ib_send_bw "*) echo "$c" >>"$FAKE_SCEN/ib"; printf ' 65536 400 2.40 2.00 0.00003\n' ;; # the unloaded pair
"timeout 300 ib_send_bw "*" -b "*) # a load ceiling's server: running (running.PORT), listening (listen.PORT)
    # unless deaf.NODE; server-fails.NODE: it does not start
    [ ! -e "$FAKE_SCEN/server-fails.$node" ] || exit 1
    echo "$c" >>"$FAKE_SCEN/ib"
    touch "$d/running.$(arg -p)"
    [ -e "$FAKE_SCEN/deaf.$node" ] || touch "$d/listen.$(arg -p)" ;;
"ss -Hltn 'sport = :"*) p=${c#*:}; p=${p%%\'*}; [ -e "$d/listen.$p" ] ;;
"pkill -x ib_send_bw; true") rm -f "$d"/running.* "$d"/listen.* ;;
*"wc -l < /var/log/inclab/incswitch.log"*) cat "$d/incswitch.log" 2>/dev/null | wc -l ;;
"tail -n +"*" /var/log/inclab/incswitch.log") tail -n "$(arg -n)" "$d/incswitch.log" 2>/dev/null ;;
"tail -n "*) read -r _ _ n f <<<"$c"; tail -n "$n" "$d/${f#/tmp/}" ;;
"/tmp/hostwork "*) sleep "$(awk -v n="${c##* }" 'BEGIN { print n * 0.2 }')" ;; # a pass takes 0.2 s
*) exit 0 ;; # pkill, ssh set-up, switch counters: nothing to do
esac
FAKE
chmod +x "$tree/lab/lab.sh"

# fake NAME BASELINES [EXP [VAR=VALUE...]] — exp.sh EXP (default allreduce of 4K) on the fake lab
# with the scenario files in $scen; its exit status in $tmp/NAME.rc, all it printed in $tmp/NAME.log,
# its run directory in $run
fake() {
    local name=$1 baselines=$2 exp=${3:-allreduce} rc=0
    shift 3 2>/dev/null || shift $#
    env -u EXP_DRY_RUN INCLAB_BUILD="$(dirname "$topogen")" INCLAB_STATE="$tmp/state" FAKE_SCEN="$scen" \
        TOPOLOGY=topology/1-2-4.yaml RESULTS="$tmp/res-$name" BASELINES="$baselines" SIZE=4K ROUNDS=1 "$@" \
        "$tree/experiments/exp.sh" "$exp" >"$tmp/$name.log" 2>&1 </dev/null || rc=$?
    echo "$rc" >"$tmp/$name.rc"
    run=$(ls -d "$tmp/res-$name"/*/ 2>/dev/null | head -n 1)
    run=${run%/}
}
# status NAME — meta.yaml's status, as YAML reads it (python3's yaml; else the line as written)
status() {
    if python3 -c 'import yaml' 2>/dev/null; then
        python3 -c 'import sys, yaml; m = yaml.safe_load(open(sys.argv[1])); print(m["status"]); [print("na", k, v) for k, v in (m.get("not_available") or {}).items()]' "$run/meta.yaml"
    else # single-quoted scalars read by hand
        sed -n "s/^status: //p; s/^  \\([a-z-]*\\): /na \\1 /p" "$run/meta.yaml" | sed "s/^\\(na [a-z-]* \\)\\{0,1\\}'\\(.*\\)'\$/\\1\\2/; s/''/'/g"
    fi
}
# expect NAME RC STATUS [TEXT...] — exp.sh's exit status RC, meta.yaml's status starting with STATUS
# (YAML read back), every TEXT in what it printed
expect() {
    local name=$1 want_rc=$2 want=$3 st t miss=
    shift 3
    st=$(status 2>&1)
    for t in "$@"; do grep -qF -- "$t" "$tmp/$name.log" || miss="$miss '$t'"; done
    if [ "$(cat "$tmp/$name.rc")" = "$want_rc" ] && [[ $(head -n 1 <<<"$st") == "$want"* ]] && [ -z "$miss" ]; then
        ok "$name: exit $want_rc, status '$(head -n 1 <<<"$st" | cut -c1-90)'"
    else
        ko "$name: exit $(cat "$tmp/$name.rc") (want $want_rc), status '$st' (want '$want...'), not printed:$miss; log: $(tail -n 8 "$tmp/$name.log")"
    fi
}
# changed_in_place SCRIPT — "yes" when the fake lab took $scen/edit and SCRIPT starts with the 400 bytes it puts there
changed_in_place() {
    [ -e "$scen/edit.done" ] && [ "$(head -c 400 "$1")" = "$(printf '#%.0s' $(seq 1 400))" ] && echo yes
}
# csv_has NAME ROWS — results.csv's data rows, as "algorithm:wrong" space-separated, must be ROWS
csv_has() {
    local got
    got=$(tail -n +2 "$run/results.csv" | awk -F, '{printf "%s%s:%s", (NR > 1 ? " " : ""), $1, $13}')
    [ "$got" = "$2" ] && [ "$(head -n 1 "$run/results.csv")" = "$EXP_RESULTS_HEADER" ] && ok "$1: results.csv rows $2" || ko "$1: results.csv rows '$got', want '$2'"
}
# scenario ALGO[@BYTES] VAR=VALUE... — what the fake tool does
scenario() {
    local f=$scen/$1 a
    shift
    for a in "$@"; do printf '%s=%q\n' "${a%%=*}" "${a#*=}"; done >"$f"
}

if [ ! -x "$topogen" ]; then
    ko "no $topogen to run exp.sh on a fake lab (make topogen; INCLAB_BUILD=DIR for another build)"
else
    # domain names of this test's own (not inclab-*): exp_cpu_pids looks for each VM's QEMU by its domain, and
    # a real lab of the default prefix running meanwhile must not be found as the fake lab's processes
    "$topogen" --prefix "texp$$" -o "$tmp/state/gen" "$tree/topology/1-2-4.yaml" >/dev/null
    reset() { rm -rf "$scen"; mkdir -p "$scen"; }
    ucx_unusable=(rc=1 header=0 rows=0 "noise=[1795596715.752032] [pku1:2333 :0] ucp_context.c:1014 UCX WARN transport 'rc_verbs' is not available"
        "err=No components were able to be opened in the pml framework.
[pku1:02333] PML ucx cannot be selected")

    reset
    for sw in sw0 sw1 sw2; do # a communicator of an earlier run: not this run's
        mkdir -p "$scen/nodes/$sw"
        echo "incswitch $sw comm 8: rx_frames=77 timeouts=7" >"$scen/nodes/$sw/incswitch.log"
    done
    fake all-good "ring mpi-tcp mpi-ucx"
    expect all-good 0 verified "every result verified"
    csv_has all-good "inc:0 ring:0 mpi-tcp:0 mpi-ucx:0"
    # rxe.csv: per libinccl measurement each host's changed counter (50 + its rank), nothing else
    want="algorithm,collective,bytes,round,calls,node,counter,delta
$(for a in inc ring; do for h in 1 2 3 4; do echo "$a,allreduce,4096,1,4,pku$h,sent_pkts,$((49 + h))"; done; done)"
    [ "$(cat "$run/rxe.csv" 2>/dev/null)" = "$want" ] && ok "all-good: rxe.csv holds each host's changed counter per measurement, malformed lines left out" ||
        ko "all-good: rxe.csv is '$(head -c 600 "$run/rxe.csv" 2>/dev/null)', want '$want'"
    # switch.csv: per libinccl measurement each switch's counters that are not 0, from the lines it logged
    # since the one before (a line logged before the run is not counted)
    want="algorithm,collective,bytes,round,calls,switch,counter,delta
$(for sw in 0 1 2; do echo "inc,allreduce,4096,1,4,sw$sw,rx_frames,$((1000 + sw))"; [ "$sw" = 0 ] || echo "inc,allreduce,4096,1,4,sw$sw,timeouts,$sw"; echo "inc,allreduce,4096,1,4,sw$sw,held_for_turn,5"; done)"
    [ "$(cat "$run/switch.csv" 2>/dev/null)" = "$want" ] && ok "all-good: switch.csv holds each switch's counters of the measurement's communicator, not earlier ones" ||
        ko "all-good: switch.csv is '$(head -c 800 "$run/switch.csv" 2>/dev/null)', want '$want'"
    # the counters come with the exit status: per libinccl measurement one read of a host's files each
    want="$(for a in inc ring; do for h in 1 2 3 4; do echo "pku$h cat /tmp/exp.rc /tmp/exp.rxe"; done; echo "pku1 cat /tmp/exp.out"; done | sort)"
    [ "$(grep -v ' cat /tmp/mpi\.' "$scen/reads" 2>/dev/null | sort)" = "$want" ] &&
        ok "all-good: one exec per host reads its exit status and rxe counters, rank 0's report one more" ||
        ko "all-good: the reads of the hosts' files were '$(sort "$scen/reads" 2>/dev/null | tr '\n' ';')', want '$(tr '\n' ';' <<<"$want")'"

    # exp.sh and ceiling.sh changed in place while they run (an editor writing them in place): the run
    # goes on as it was read, whole (each script is one brace group, parsed before it runs)
    reset
    cp "$tree/experiments/exp.sh" "$tmp/exp.sh.orig"; cp "$tree/experiments/ceiling.sh" "$tmp/ceiling.sh.orig"
    printf '%s\n' "$tree/experiments/exp.sh" "$tree/experiments/ceiling.sh" >"$scen/edit"
    fake edited "ceiling ring" allreduce ROUNDS=2 CEILING_RUNS=1
    edited=$(changed_in_place "$tree/experiments/exp.sh")
    cp "$tmp/exp.sh.orig" "$tree/experiments/exp.sh"; cp "$tmp/ceiling.sh.orig" "$tree/experiments/ceiling.sh"
    if [ "$edited" = yes ]; then
        expect edited 0 verified "round 2 of 2" "every result verified"
        csv_has edited "ceiling:0 inc:0 ring:0 ceiling:0 inc:0 ring:0"
    else
        ko "edited: the fake lab did not change the scripts in place"
    fi

    # rounds: A B C A B C, each row with its round; both ceilings; the conditions in meta.yaml
    reset
    printf 'LAB_ACCEL=tcg\nLAB_SWITCHES=ns\n' >"$tmp/state/lab.env"
    fake rounds "ceiling ceiling-load ring" allreduce ROUNDS=2 CEILING_RUNS=1
    rm -f "$tmp/state/lab.env"
    expect rounds 0 verified "round 2 of 2" "every result verified"
    csv_has rounds "ceiling:0 ceiling-load:0 inc:0 ring:0 ceiling:0 ceiling-load:0 inc:0 ring:0"
    got=$(tail -n +2 "$run/results.csv" | cut -d, -f1,14 | tr '\n' ' ')
    [ "$got" = "ceiling,1 ceiling-load,1 inc,1 ring,1 ceiling,2 ceiling-load,2 inc,2 ring,2 " ] &&
        ok "rounds: rows in rounds A B C A B C, each with its round" || ko "rounds: rows $got"
    # the unloaded pair: 2.00 MiB/s = 2.10 MB/s; the load: hosts sent 1.20 and 1.00 MiB/s, median 1.10 = 1.15 MB/s, 4 hosts
    grep -qx 'ceiling-load,p2p,-,-,-,4,65536,-,400,56987.83,1.15,1.15,0,1,-' "$run/results.csv" &&
        grep -qx 'ceiling,p2p,-,-,-,2,65536,-,400,31207.62,2.10,2.10,0,2,-' "$run/results.csv" &&
        ok "rounds: both ceilings' rows (the load one per host, median of 4 hosts)" || ko "rounds: ceiling rows: $(grep ceiling "$run/results.csv")"
    [ "$(sort "$scen/bidir" | tr '\n' ' ')" = "pku1 18515 pku1 18515 pku2 18516 pku2 18516 " ] &&
        ok "rounds: the load ceiling's clients on pku1 and pku2, each pair on its own port, once a round" ||
        ko "rounds: load clients $(sort "$scen/bidir" | tr '\n' ' ')"
    if python3 -c 'import yaml' 2>/dev/null; then
        got=$(python3 -c 'import sys, yaml; m = yaml.safe_load(open(sys.argv[1]))
c = m["round_conditions"]
print(m["rounds"], m["accelerator"], m["switch_mode"], len(c), [x["round"] for x in c], all(len(str(x["loadavg_before"]).split()) == 3 for x in c), str(m["commit"])[:1] != "")' "$run/meta.yaml" 2>&1)
        [ "$got" = "2 tcg ns 2 [1, 2] True True" ] && ok "rounds: meta.yaml: rounds, accelerator and switch mode from lab.env, the conditions of each round" ||
            ko "rounds: meta.yaml read back: $got; $(cat "$run/meta.yaml")"
    else
        grep -q "^round_conditions:" "$run/meta.yaml" && grep -q "^switch_mode: 'ns'" "$run/meta.yaml" &&
            ok "rounds: meta.yaml has round_conditions and the switch mode" || ko "rounds: meta.yaml: $(cat "$run/meta.yaml")"
    fi
    incr=$(dirname "$topogen")/increport
    if [ -x "$incr" ]; then
        out=$("$incr" show "$run" 2>&1)
        grep -q "ceiling-load 1.15 MB/s" <<<"$out" && grep -q "round=2" <<<"$out" && ok "rounds: increport reads the run" || ko "rounds: increport show: $out"
    fi
    # a round budget: a round counts at least 1 s, so a budget of 1 s runs the first round only and says so;
    # meta.yaml's rounds are those run (what increport checks the rows against), rounds_planned the asked
    reset
    fake budget "ring" allreduce ROUNDS=3 ROUND_BUDGET=1
    expect budget 0 verified "round budget: 1 of 3 rounds run; round 2 would end after ROUND_BUDGET=1 s"
    csv_has budget "inc:0 ring:0"
    grep -qx "rounds: 1" "$run/meta.yaml" && grep -qx "rounds_planned: 3" "$run/meta.yaml" &&
        ok "budget: meta.yaml rounds 1, rounds_planned 3" || ko "budget: meta.yaml: $(grep rounds "$run/meta.yaml")"
    [ ! -x "$incr" ] || { "$incr" show "$run" >/dev/null 2>&1 && ok "budget: increport reads the run"; } || ko "budget: increport show failed"
    reset
    fake nobudget "ring" allreduce ROUNDS=2 ROUND_BUDGET=3600
    expect nobudget 0 verified "round 2 of 2"
    grep -qx "rounds: 2" "$run/meta.yaml" && ! grep -q "rounds_planned" "$run/meta.yaml" &&
        ok "nobudget: a budget that holds both rounds: rounds 2, no rounds_planned" || ko "nobudget: $(grep rounds "$run/meta.yaml")"
    # the budget judges round 1 without what only it does: its busy-polling ceiling made to take 20 s more
    # (ceiling.sh wrapped), round 1 takes 20 + x s, round 2 x (a few s here); a budget of 40 s holds both
    # (20 + 2x) where the round 1 it measured would not (2 (20 + x) > 40)
    reset
    # (the real one beside it: it finds lib.sh by its own place)
    cp -p "$tree/experiments/ceiling.sh" "$tree/experiments/ceiling-real.sh"
    printf '#!/bin/bash\n[ -n "${CEILING_EVENTS:-}" ] || sleep 20\nexec %q "$@"\n' "$tree/experiments/ceiling-real.sh" >"$tree/experiments/ceiling.sh"
    fake oncebudget "ceiling ring" allreduce ROUNDS=2 CEILING_RUNS=1 ROUND_BUDGET=40
    mv "$tree/experiments/ceiling-real.sh" "$tree/experiments/ceiling.sh"
    expect oncebudget 0 verified "round 2 of 2"
    grep -qx "rounds: 2" "$run/meta.yaml" &&
        ok "oncebudget: round 1's one-off work (20 s of busy-polling ceiling) is not counted as a round's: both rounds in 40 s" ||
        ko "oncebudget: $(grep rounds "$run/meta.yaml"; grep "round budget" "$tmp/oncebudget.log")"
    grep -q "^switch_mode: 'vm'" "$(ls -d "$tmp"/res-all-good/*/)meta.yaml" && ok "all-good: switch mode vm when lab.env does not say" ||
        ko "all-good: $(grep switch_mode "$(ls -d "$tmp"/res-all-good/*/)meta.yaml")"

    # the same-load ceiling alone on the fake lab: servers polled until they listen, each client's start and
    # end logged, every ib_send_bw stopped on every path (running.PORT files the fake keeps per node)
    ceil() { # NAME VAR=VALUE... — ceiling.sh CEILING_MODE=load CEILING_RUNS=1; $tmp/NAME.err, $tmp/NAME.rc
        local name=$1 rc=0
        shift
        env INCLAB_STATE="$tmp/state" FAKE_SCEN="$scen" CEILING_MODE=load CEILING_RUNS=1 "$@" \
            "$tree/experiments/ceiling.sh" >"$tmp/$name.out" 2>"$tmp/$name.err" </dev/null || rc=$?
        echo "$rc" >"$tmp/$name.rc"
    }
    left() { (cd "$scen/nodes" 2>/dev/null && ls -d */running.* 2>/dev/null | tr '\n' ' '); } # ib_send_bw still running, per node
    reset
    ceil load-ok
    [ "$(cat "$tmp/load-ok.rc")" = 0 ] && grep -qF "ceiling-load: client pku1 -> pku3 started 1000.000, ended 1010.000 (the guest's clock)" "$tmp/load-ok.err" &&
        grep -qF "client pku2 -> pku4 started" "$tmp/load-ok.err" && ! grep -q warning "$tmp/load-ok.err" && [ -z "$(left)" ] &&
        ok "load ceiling: clients after both servers listen, their starts and ends logged, no warning, nothing left running" ||
        ko "load ceiling: exit $(cat "$tmp/load-ok.rc"), left '$(left)', said: $(cat "$tmp/load-ok.err")"
    reset
    echo 1002.000 >"$scen/start.pku2"
    ceil spread
    grep -qF "ceiling-load: warning: the clients started 2.000 s apart, more than 10 % of the shortest client run (10.000 s)" "$tmp/spread.err" &&
        ok "load ceiling: starts 2 s apart on 10 s runs: a warning" || ko "load ceiling spread: $(cat "$tmp/spread.err")"
    reset
    touch "$scen/deaf.pku3"
    ceil deaf CEILING_LISTEN_WAIT=1
    [ "$(cat "$tmp/deaf.rc")" = 1 ] && grep -qF "ib_send_bw's server on pku3 is not listening on port 18515 after 1 s" "$tmp/deaf.err" &&
        grep -qF "the load run failed three times" "$tmp/deaf.err" && [ ! -e "$scen/bidir" ] && [ -z "$(left)" ] &&
        ok "load ceiling: a server that never listens: a clear error, no client started, nothing left running" ||
        ko "load ceiling, deaf server: exit $(cat "$tmp/deaf.rc"), clients '$(cat "$scen/bidir" 2>/dev/null)', left '$(left)', said: $(cat "$tmp/deaf.err")"
    reset
    touch "$scen/server-fails.pku4"
    ceil server-fails
    [ "$(cat "$tmp/server-fails.rc")" = 1 ] && grep -qF "cannot start ib_send_bw's server on pku4" "$tmp/server-fails.err" && [ -z "$(left)" ] &&
        ok "load ceiling: the second pair's server does not start: the first pair's server is stopped" ||
        ko "load ceiling, server-fails: exit $(cat "$tmp/server-fails.rc"), left '$(left)', said: $(cat "$tmp/server-fails.err")"
    reset
    touch "$scen/deaf.pku3"
    env INCLAB_STATE="$tmp/state" FAKE_SCEN="$scen" CEILING_MODE=load CEILING_RUNS=1 CEILING_LISTEN_WAIT=60 \
        "$tree/experiments/ceiling.sh" >/dev/null 2>"$tmp/term.err" </dev/null &
    pid=$!
    for i in $(seq 100); do [ -e "$scen/nodes/pku4/running.18516" ] && break; sleep 0.1; done
    kill -TERM "$pid"
    rc=0
    wait "$pid" || rc=$?
    [ "$rc" = 143 ] && [ -z "$(left)" ] && ok "load ceiling: TERM while it waits for a server: exit 143, nothing left running" ||
        ko "load ceiling, TERM: exit $rc, left '$(left)'"
    # CEILING_EVENTS=0 is no -e; 1 is -e on both ends
    reset
    ceil ev0 CEILING_EVENTS=0
    [ -s "$scen/ib" ] && ! grep -q -- ' -e ' "$scen/ib" && ok "CEILING_EVENTS=0: no -e" || ko "CEILING_EVENTS=0: $(cat "$scen/ib")"
    reset
    ceil ev1 CEILING_EVENTS=1
    [ "$(grep -c -- ' -e ' "$scen/ib")" = 4 ] && ok "CEILING_EVENTS=1: -e on both servers and both clients" || ko "CEILING_EVENTS=1: $(cat "$scen/ib")"
    # exp.sh: an exported CEILING_EVENTS=1 does not make the busy-polling ceiling an -e one
    reset
    fake events "ceiling" allreduce CEILING_EVENTS=1 CEILING_RUNS=1
    [ "$(wc -l <"$scen/ib")" = 2 ] && [ "$(head -n 1 "$scen/ib" | grep -c -- ' -e ')" = 1 ] && [ "$(tail -n 1 "$scen/ib" | grep -c -- ' -e ')" = 0 ] &&
        ok "exp.sh with CEILING_EVENTS=1 exported: the ceiling with -e, the busy-polling one without" || ko "events: $(cat "$scen/ib")"

    # meta.yaml: topology and images quoted (a ' and a : in their names), lab.env's words never globbed,
    # the settings (iters, warmup, ceiling_runs; a sweep's sizes and collectives)
    cp topology/1-2-4.yaml "$tree/topology/it's: #1.yaml"
    mkdir -p "$tmp/img/h1" "$tmp/img/it's:x"
    touch "$tmp/img/h1/manifest.txt" "$tmp/img/it's:x/manifest.txt"
    printf 'LAB_ROLES="host %s/img/* switch %s/img/it'"'"'s:x"\n' "$tmp" "$tmp" >"$tmp/state/lab.env"
    reset
    fake settings "none" sweep SIZES="8K 4K" COLLECTIVES="broadcast allreduce" ITERS=2 CEILING_RUNS=2 "TOPOLOGY=topology/it's: #1.yaml"
    rm -f "$tmp/state/lab.env"
    got=$(python3 -c 'import sys, yaml; m = yaml.safe_load(open(sys.argv[1]))
print(m["topology"], "|", m["topology_file"], "|", m["images"], "|", m["iters"], m["warmup"], m["ceiling_runs"], m["sizes"], m["collectives"])' "$run/meta.yaml" 2>&1)
    [ "$got" = "it's: #1 | topology/it's: #1.yaml | {'switch': \"it's:x\"} | 2 default 2 [8192, 4096] ['allreduce', 'broadcast']" ] &&
        ok "meta.yaml: topology and images quoted, LAB_ROLES not globbed, iters/warmup/ceiling_runs, the sweep's sizes and collectives" ||
        ko "meta.yaml settings: $got; $(cat "$run/meta.yaml" 2>/dev/null | head -40)"
    refused "CEILING_RUNS=10 is not a whole number from 1 to 9" env EXP_DRY_RUN=1 CEILING_RUNS=10 experiments/exp.sh allreduce
    # a ceiling's failure names its round
    cp "$tree/experiments/ceiling.sh" "$tmp/ceiling.sh.real"
    printf '#!/usr/bin/env bash\n[ "${CEILING_MODE:-pair}" = load ] && a=ceiling-load || a=ceiling\necho "$a,p2p,-,-,-,2,65536,-,400,27306.67,2.40,2.40,1,-"\n' >"$tree/experiments/ceiling.sh"
    reset
    fake ceiling-wrong "ceiling ceiling-load" allreduce ROUNDS=2
    cp "$tmp/ceiling.sh.real" "$tree/experiments/ceiling.sh"
    expect ceiling-wrong 1 "failed: ceiling (round 1): 1 wrong element in 1 row" "exp: failed: ceiling-load (round 2): 1 wrong element in 1 row"

    # (a) could not start: not available with the reason from its output, the run goes on and is verified
    reset
    scenario mpi-ucx "${ucx_unusable[@]}"
    fake ucx-cannot-start "ring mpi-tcp mpi-ucx" sweep MIN=4K MAX=8K
    expect ucx-cannot-start 0 verified "mpi-ucx: not available: " "PML ucx cannot be selected" "every result verified"
    [ "$(grep -c '^mpi-ucx ' "$scen/calls")" = 1 ] && ok "ucx-cannot-start: mpi-ucx tried once, then left out" ||
        ko "ucx-cannot-start: mpi-ucx tried $(grep -c '^mpi-ucx ' "$scen/calls") times"
    st=$(status)
    grep -q "^na mpi-ucx .*PML ucx cannot be selected" <<<"$st" && grep -qx 'baselines: "ring mpi-tcp"' "$run/meta.yaml" &&
        ok "ucx-cannot-start: meta.yaml not_available: mpi-ucx with its reason; baselines without it" ||
        ko "ucx-cannot-start: meta.yaml: $(cat "$run/meta.yaml")"
    ! grep -q "UCX\|^mpi-ucx" "$run/results.csv" && ok "ucx-cannot-start: neither a mpi-ucx row nor UCX's warnings in results.csv" ||
        ko "ucx-cannot-start: results.csv: $(cat "$run/results.csv")"

    reset
    scenario ring rc=3 header=0 rows=0 "err=inccl_perf: rank 0: inccl_comm_init failed: -6 (ECONN): the controller's answer: no ring for 4 ranks"
    fake ring-cannot-start "ring mpi-tcp"
    expect ring-cannot-start 0 verified "ring: not available: " "inccl_comm_init failed: -6 (ECONN)"
    csv_has ring-cannot-start "inc:0 mpi-tcp:0"

    reset
    scenario mpi-tcp rc=132 header=0 rows=0 "err=mpirun was unable to launch the specified application as it could not access
or execute an executable:
Executable: mpi_perf"
    fake mpi-perf-missing "mpi-tcp"
    expect mpi-perf-missing 0 verified "mpi-tcp: not available: " "could not access"

    reset
    touch "$scen/no-ssh"
    fake no-ssh "mpi-tcp mpi-ucx"
    expect no-ssh 0 verified "mpi-tcp: not available: " "mpi-ucx: not available: " "ssh between the hosts is not set up"

    # a reason full of YAML's special characters reads back as written
    reset
    scenario mpi-ucx rc=3 header=0 rows=0 "err=mpi_perf: rank 0: it's \"bad\": #1 {x} [y] & *z"
    fake yaml-reason "mpi-ucx"
    grep -qxF "na mpi-ucx mpi-ucx: mpirun exited 3: mpi_perf: rank 0: it's \"bad\": #1 {x} [y] & *z" <<<"$(status)" &&
        ok "yaml-reason: a reason with ' \" : # { [ & * reads back from meta.yaml" || ko "yaml-reason: $(status 2>&1); meta: $(grep -A2 not_available "$run/meta.yaml")"

    # (b) wrong elements, whatever the baseline: the run fails, names it and the count, keeps the row
    for b in mpi-ucx mpi-tcp ring; do
        reset
        scenario "$b" rc=1 wrong=3 "err=some rank: 3 of 1024 elements wrong"
        fake "$b-wrong" "ring mpi-tcp mpi-ucx"
        expect "$b-wrong" 1 "failed: $b allreduce 4096 B: 3 wrong elements in 1 row" "exp: failed: $b allreduce 4096 B: 3 wrong elements in 1 row" "the run failed"
        csv_has "$b-wrong" "$(for a in inc ring mpi-tcp mpi-ucx; do printf '%s:%s ' "$a" "$([ "$a" = "$b" ] && echo 3 || echo 0)"; done | sed 's/ $//')"
        grep -q "not_available" "$run/meta.yaml" && ko "$b-wrong: listed as not available: $(cat "$run/meta.yaml")" || ok "$b-wrong: not listed as not available"
    done
    # a wrong count in a row the tool said was fine (exit 0) fails just the same
    reset
    scenario mpi-ucx rc=0 wrong=2
    fake ucx-wrong-exit0 "mpi-ucx"
    expect ucx-wrong-exit0 1 "failed: mpi-ucx allreduce 4096 B: 2 wrong elements in 1 row (though it exited 0)" "exp: failed: mpi-ucx"
    csv_has ucx-wrong-exit0 "inc:0 mpi-ucx:2"
    # the INC row itself
    reset
    scenario inc rc=1 wrong=5
    fake inc-wrong "none"
    expect inc-wrong 1 "failed: inc allreduce 4096 B: 5 wrong elements in 1 row" "exp: failed: inc allreduce 4096 B: 5 wrong elements"
    csv_has inc-wrong "inc:5"
    # INC that cannot start is a failure, never "not available"
    reset
    scenario inc rc=3 header=0 rows=0 "err=inccl_perf: rank 0: inccl_group_create failed: -5 (ETIMEDOUT): no controller"
    fake inc-cannot-start "mpi-tcp"
    expect inc-cannot-start 1 "failed: inc allreduce 4096 B: could not start: " "exp: failed: inc allreduce 4096 B: could not start: " "inccl_group_create failed: -5 (ETIMEDOUT)"
    # a failure after the start (mpi_perf's exit 4, after its header) is a failure, not "not available"
    reset
    scenario mpi-ucx rc=4 rows=0 "err=mpi_perf: rank 2: MPI_Allreduce of 4 KiB failed: MPI_ERR_OTHER"
    fake ucx-fails-after-start "mpi-ucx"
    expect ucx-fails-after-start 1 "failed: mpi-ucx allreduce 4096 B: failed after it started" "MPI_Allreduce of 4 KiB failed"
    # mpirun dies without mpi_perf's exit code but after the header: started, so failed
    reset
    scenario mpi-tcp rc=1 rows=0 "err=mpirun noticed that process rank 3 exited on signal 9 (Killed)."
    fake tcp-killed "mpi-tcp"
    expect tcp-killed 1 "failed: mpi-tcp allreduce 4096 B: failed after it started" "signal 9"
    # inccl_perf's exit 1 (a wrong element or a failed call; also what one from before exit 3
    # says for a failed bootstrap) never makes "not available", even without a report
    reset
    scenario ring rc=1 header=0 rows=0 "err=inccl_perf: rank 2: allreduce of 4 KiB failed: -4 (EIO): the ring's peer went away"
    fake ring-exit1-no-report "ring"
    expect ring-exit1-no-report 1 "failed: ring allreduce 4096 B: failed after it started: " "the ring's peer went away"
    # a baseline that ran at one size and cannot start at the next has not "never started": failed
    reset
    scenario ring@8192 rc=3 header=0 rows=0 "err=inccl_perf: rank 0: inccl_comm_init failed: -6 (ECONN)"
    fake ring-later "ring" sweep MIN=4K MAX=8K
    expect ring-later 1 "failed: ring allreduce 8192 B: could not start (it ran earlier in this run)"

    # loggp.sh's UC stream, which loses what is dropped: its CPU per message is over the messages
    # counted (the sender's sent_pkts, the receiver's rcvd_pkts), its server waits for all but 1/64,
    # with a receive posted for each; a lossy try is said with its counts and tried again waiting for
    # fewer; one that loses too much leaves the UC figures out, said, and never hangs. (The fake
    # nodes' processes are sleeps: their CPU is 0; the rows' iters are the divisors.)
    sleep 600 &
    sleeper=$!
    for h in pku1 pku3; do mkdir -p "$tmp/state/nodes/$h/root/run/inclab" && echo "$sleeper" >"$tmp/state/nodes/$h/root/run/inclab/service.pid"; done
    loggp() { # NAME [VAR=VALUE...] — loggp.sh on the fake lab: $tmp/NAME.csv, .err, .rc
        local name=$1 rc=0
        shift
        env INCLAB_STATE="$tmp/state" INCLAB_BUILD="$tmp/no-build" FAKE_SCEN="$scen" LOGGP_SIZES=8 LOGGP_CPU_SIZES=8 \
            LOGGP_CPU_REPEAT=1 LOGGP_WAIT_REPEAT=0 EXP_PERFTEST_SETTLE=0 "$@" timeout 120 "$tree/experiments/loggp.sh" >"$tmp/$name.csv" 2>"$tmp/$name.err" </dev/null || rc=$?
        echo "$rc" >"$tmp/$name.rc"
    }
    # uc_rows NAME ROWS — loggp.csv's UC rows (measure,bytes,iters) must be ROWS
    uc_rows() {
        local got
        got=$(grep '_uc,' "$tmp/$1.csv" | cut -d, -f1-3 | tr '\n' ' ')
        [ "$(cat "$tmp/$1.rc")" = 0 ] && [ "$got" = "$2" ] && ok "$1: loggp.sh exit 0, UC rows $2" ||
            ko "$1: exit $(cat "$tmp/$1.rc"), UC rows '$got', want '$2'; $(tail -n 4 "$tmp/$1.err")"
    }
    reset; touch "$scen/loggp"
    loggp uc-whole
    uc_rows uc-whole "cpu_send_uc,8,12800 cpu_recv_uc,8,12800 "
    [ "$(grep -- '-c UC' "$scen/servers" | grep -o ' -n [0-9]* -r [0-9]* -x' | tr '\n' ' ')" = " -n 3136 -r 3136 -x  -n 15744 -r 15744 -x " ] &&
        ok "uc-whole: the UC servers wait for all but 1/64 of 3200 and 16000 messages (perftest takes 16384 receives at most), a receive posted for each" ||
        ko "uc-whole: UC servers: $(grep -- '-c UC' "$scen/servers")"
    grep -q '^cpu_send_batch,8,25600,' "$tmp/uc-whole.csv" && grep -q '^cpu_send,8,25600,' "$tmp/uc-whole.csv" &&
        ok "uc-whole: the RC streams keep their count: 32000 - 6400 messages, the UC one 16000 - 3200" || ko "uc-whole: $(cat "$tmp/uc-whole.csv")"
    # loggp.sh changed in place while it runs: the same rows as the run before
    reset; touch "$scen/loggp"; echo "$tree/experiments/loggp.sh" >"$scen/edit"
    cp "$tree/experiments/loggp.sh" "$tmp/loggp.sh.orig"
    loggp edited
    edited=$(changed_in_place "$tree/experiments/loggp.sh")
    cp "$tmp/loggp.sh.orig" "$tree/experiments/loggp.sh"
    [ "$edited" = yes ] && [ "$(cat "$tmp/edited.rc")" = 0 ] && [ "$(cut -d, -f1-3 "$tmp/edited.csv")" = "$(cut -d, -f1-3 "$tmp/uc-whole.csv")" ] &&
        ok "edited: loggp.sh changed in place while it ran: exit 0, the same rows ($(grep -c . "$tmp/edited.csv") lines)" ||
        ko "edited: changed ${edited:-no}, exit $(cat "$tmp/edited.rc"), rows '$(cut -d, -f1 "$tmp/edited.csv" | tr '\n' ' ')'; $(tail -n 3 "$tmp/edited.err")"
    # the long stream's first try loses 400 of 16000 (its server waits for 15744): said, then tried
    # again waiting for 9/10 of the 15600 that came; it loses 400 again and ends
    reset; touch "$scen/loggp"; printf '0\n400\n400\n' >"$scen/uc.lost"
    loggp uc-lossy
    uc_rows uc-lossy "cpu_send_uc,8,12800 cpu_recv_uc,8,12400 "
    grep -qF "loggp: UC stream of 16000 messages of 8 B, pku1 -> pku3, try 1 of 3 failed (the line above says how; exit 124: no report within 40 s): pku1 sent 16000, pku3 received 15600 (400 lost); its server waited for 15744" "$tmp/uc-lossy.err" &&
        grep -qF "ib_send_bw pku1 -> pku3 failed 1 time(s) (the last: exit 124)" "$tmp/uc-lossy.err" &&
        [ "$(grep -- '-c UC' "$scen/servers" | grep -o ' -n [0-9]* -r' | tail -n 1)" = " -n 14016 -r" ] &&
        ok "uc-lossy: the lossy try said with its counts, the next waits for 14016 (9/10 of 15600 in lists of 32)" ||
        ko "uc-lossy: $(cat "$tmp/uc-lossy.err"); servers: $(grep -- '-c UC' "$scen/servers" | grep -o ' -n [0-9]* -r')"
    # every try loses most: three tries at most, the UC figures left out, the rest measured
    reset; touch "$scen/loggp"; printf '0\n14000\n14000\n14000\n14000\n' >"$scen/uc.lost"
    loggp uc-lost
    uc_rows uc-lost ""
    grep -qF "loggp: UC stream of 16000 messages of 8 B: more than half of them lost, or the stream did not run: no UC figures" "$tmp/uc-lost.err" &&
        grep -qF "loggp: no CPU figures for 8 B (uc: ib_send_bw -l 32 -c UC): left out" "$tmp/uc-lost.err" &&
        [ "$(cat "$scen/uc.tries")" = 2 ] && grep -q '^cpu_send_batch,8,' "$tmp/uc-lost.csv" &&
        ok "uc-lost: 2000 of 16000 arrived: no retry can end, the UC figures left out and said" ||
        ko "uc-lost: tries $(cat "$scen/uc.tries"); $(cat "$tmp/uc-lost.err")"
    # no counters to count with: said, left out
    reset; touch "$scen/loggp" "$scen/no-counters"
    loggp uc-uncounted
    uc_rows uc-uncounted ""
    grep -qF "loggp: UC: no rxe0 counters on pku1 or pku3" "$tmp/uc-uncounted.err" && ok "uc-uncounted: no counters, no UC figures, said" ||
        ko "uc-uncounted: $(cat "$tmp/uc-uncounted.err")"
    refused "LOGGP_UC_TIMEOUT=0 is not a whole number from 5 to 600" env INCLAB_STATE="$tmp/state" LOGGP_UC_TIMEOUT=0 "$tree/experiments/loggp.sh"
    # the empty packets' stream at 16 KiB, after the plain and the signaled one: pku3 receives 200 and 1000 messages of
    # 16 KiB from pku1 while it sends 16 of 8 B back over UC for each (pku1's UC server, port 18516, waiting
    # for all but 1/64 of 3200 and 16000); one row, the receiver's CPU per message (the sleeps': 0)
    reset; touch "$scen/loggp"
    loggp empty LOGGP_CPU_SIZES="8 16384"
    got=$(grep ',16384,' "$tmp/empty.csv" | grep -v '^half_rtt\|^gap' | cut -d, -f1-3 | tr '\n' ' ')
    [ "$(cat "$tmp/empty.rc")" = 0 ] && [ "$got" = "cpu_send,16384,2000 cpu_recv,16384,2000 cpu_send_signaled,16384,2000 cpu_empty_recv,16384,800 " ] &&
        [ "$(grep -- '-p 18516' "$scen/servers" | grep -o '^pku1 .*-s 8 -n [0-9]* -r [0-9]* ' | sed 's/timeout [0-9]* //' | tr '\n' ' ')" = "pku1 ib_send_bw -d rxe0 -s 8 -n 3136 -r 3136  pku1 ib_send_bw -d rxe0 -s 8 -n 15744 -r 15744  " ] &&
        [ "$(grep -c '^pku3 .*ib_send_bw -d rxe0 -s 16384 -n \(200\|1000\) -F' "$scen/servers")" = 2 ] &&
        grep -qF 'loggp: 16384 B received with 16 of 8 B sent back over UC for each, 32 per post: CPU per message received: 0.000 us' "$tmp/empty.err" &&
        ok "empty: the answered 16 KiB stream after the plain and signaled ones: pku1's UC servers wait for 3136 and 15744 of 8 B, pku3's for 200 and 1000 of 16 KiB" ||
        ko "empty: exit $(cat "$tmp/empty.rc"), rows '$got'; servers $(grep -- '-s 8 \|-s 16384 -n \(200\|1000\) ' "$scen/servers"); $(tail -n 3 "$tmp/empty.err")"
    # its long UC stream loses 14000 of 16000 (the UC tries: 8 B's short and long, then the empty
    # stream's): said, left out; the rest measured, exit 0
    reset; touch "$scen/loggp"; printf '0\n0\n0\n14000\n' >"$scen/uc.lost"
    loggp empty-lost LOGGP_CPU_SIZES="8 16384"
    [ "$(cat "$tmp/empty-lost.rc")" = 0 ] && ! grep -q '^cpu_empty_recv' "$tmp/empty-lost.csv" && grep -q '^cpu_send_signaled,16384,' "$tmp/empty-lost.csv" &&
        grep -qF 'loggp: 1000 messages of 16384 B pku1 -> pku3 with 16000 of 8 B over UC back at once, try 1 of 3: the RC stream'"'"'s client exited 0, the UC one'"'"'s 124 (124: no report within 40 s); pku3 sent pku1 16000 packets, 14000 of them lost (lossy); the UC server waited for 15744' "$tmp/empty-lost.err" &&
        grep -qF 'loggp: 16000 messages of 8 B over UC back: more than half of them lost, or the streams did not run: no figure for the empty packets' "$tmp/empty-lost.err" &&
        grep -qF 'loggp: no CPU figures for 16384 B (empty: ib_send_bw -l 32 -c UC): left out' "$tmp/empty-lost.err" &&
        ok "empty-lost: the empty packets' stream that lost too much said and left out, the rest measured" ||
        ko "empty-lost: exit $(cat "$tmp/empty-lost.rc"); $(grep -c . "$tmp/empty-lost.csv") lines; $(tail -n 4 "$tmp/empty-lost.err")"
    # its long UC stream loses 400 of 16000, more than the 1/64 its server allows: said (lossy, the
    # counters' difference), tried again waiting for 9/10 of the 15600 that came (14016, whole lists of
    # 32), which reports: the row as without loss
    reset; touch "$scen/loggp"; printf '0\n0\n0\n400\n' >"$scen/uc.lost"
    loggp empty-lossy LOGGP_CPU_SIZES="8 16384"
    [ "$(cat "$tmp/empty-lossy.rc")" = 0 ] && grep -q '^cpu_empty_recv,16384,800,' "$tmp/empty-lossy.csv" &&
        grep -qF 'try 1 of 3: the RC stream'"'"'s client exited 0, the UC one'"'"'s 124 (124: no report within 40 s); pku3 sent pku1 16000 packets, 400 of them lost (lossy); the UC server waited for 15744' "$tmp/empty-lossy.err" &&
        [ "$(grep -- '-p 18516' "$scen/servers" | grep -o '^pku1 .*-s 8 -n [0-9]* ' | sed 's/.* -n \([0-9]*\) $/\1/' | tr '\n' ' ')" = "3136 15744 14016 " ] &&
        ! grep -q 'left out' "$tmp/empty-lossy.err" &&
        ok "empty-lossy: the empty packets' stream that lost 400 of 16000 said, tried again waiting for 14016, measured" ||
        ko "empty-lossy: exit $(cat "$tmp/empty-lossy.rc"); servers $(grep -- '-p 18516' "$scen/servers" | tr '\n' ' '); $(tail -n 4 "$tmp/empty-lossy.err")"
    # o_w's pairs: each a 16 KiB stream of 3000 minus 600 messages and a ping-pong of 1250 minus 250 round trips,
    # in that order, with each guest's interrupts per message (the fake's: stream 1 on pku1, 2 on pku3; ping-pong
    # 3 and 5); the sleeps' CPU is 0
    pair_rows="cpu_pair_send,16384,2400,0.000 cpu_pair_recv,16384,2400,0.000 cpu_pair_waited_send,16384,1000,0.000 cpu_pair_waited_recv,16384,1000,0.000 intr_pair_send,16384,2400,1.000 intr_pair_recv,16384,2400,2.000 intr_pair_waited_send,16384,1000,3.000 intr_pair_waited_recv,16384,1000,5.000 "
    reset; touch "$scen/loggp"
    loggp pairs LOGGP_WAIT_REPEAT=2
    got=$(grep '_pair_' "$tmp/pairs.csv" | tr '\n' ' ')
    [ "$(cat "$tmp/pairs.rc")" = 0 ] && [ "$got" = "$pair_rows$pair_rows" ] &&
        [ "$(grep -o 'ib_send_[a-z]* -d rxe0 -s 16384 -n [0-9]*' "$scen/servers" | tr '\n' ' ')" = "$(for i in 1 2; do printf 'ib_send_bw -d rxe0 -s 16384 -n %s ' 600 3000; printf 'ib_send_lat -d rxe0 -s 16384 -n %s ' 250 1250; done)" ] &&
        grep -qF 'loggp: o_w pair 2 of 2: 16384 B stream: CPU per message: send 0.000 us, receive 0.000 us; ping-pong sleeping on events: CPU per round trip: pku1 0.000 us, pku3 0.000 us; o_w 0.0 us (guest interrupts per message: stream send 1.000, receive 2.000; per round trip pku1 3.000, pku3 5.000)' "$tmp/pairs.err" &&
        ok "pairs: two pairs, stream then ping-pong, each with its interrupts per message" ||
        ko "pairs: exit $(cat "$tmp/pairs.rc"), rows '$got'; runs $(grep -o 'ib_send_[a-z]* -d rxe0 -s 16384 -n [0-9]*' "$scen/servers" | tr '\n' ' '); $(tail -n 3 "$tmp/pairs.err")"
    # the guests' interrupts not readable: the CPU rows without them, said once
    reset; touch "$scen/loggp" "$scen/no-intr"
    loggp pairs-no-intr LOGGP_WAIT_REPEAT=2
    got=$(grep '_pair_' "$tmp/pairs-no-intr.csv" | cut -d, -f1 | tr '\n' ' ')
    [ "$(cat "$tmp/pairs-no-intr.rc")" = 0 ] && [ "$got" = "$(printf '%s ' cpu_pair_send cpu_pair_recv cpu_pair_waited_send cpu_pair_waited_recv cpu_pair_send cpu_pair_recv cpu_pair_waited_send cpu_pair_waited_recv)" ] &&
        [ "$(grep -c 'not read on pku1 or pku3: none counted from here on' "$tmp/pairs-no-intr.err")" = 1 ] &&
        ok "pairs-no-intr: the CPU rows of both pairs, no interrupt rows, said once" ||
        ko "pairs-no-intr: exit $(cat "$tmp/pairs-no-intr.rc"), rows '$got'; $(tail -n 3 "$tmp/pairs-no-intr.err")"
    # the second pair's long ping-pong fails (the 5th ib_send_lat after half_rtt's and 3 of the pairs', 3 tries):
    # the first pair kept, said, exit 0
    reset; touch "$scen/loggp"; echo 5 >"$scen/lat.failfrom"
    loggp pairs-fail LOGGP_WAIT_REPEAT=3
    got=$(grep -c '_pair_' "$tmp/pairs-fail.csv")
    [ "$(cat "$tmp/pairs-fail.rc")" = 0 ] && [ "$got" = 8 ] && [ "$(cat "$scen/lat.calls")" = 7 ] &&
        grep -qF 'loggp: o_w pair 2 of 3: a 16384 B run failed: 1 pair(s) kept, no more tried' "$tmp/pairs-fail.err" &&
        ok "pairs-fail: a failed run ends the pairs, the first kept, said" ||
        ko "pairs-fail: exit $(cat "$tmp/pairs-fail.rc"), $got pair rows, $(cat "$scen/lat.calls") ib_send_lat calls; $(tail -n 3 "$tmp/pairs-fail.err")"
    refused "LOGGP_WAIT_REPEAT=51 is not a whole number from 0 to 50" env INCLAB_STATE="$tmp/state" LOGGP_WAIT_REPEAT=51 "$tree/experiments/loggp.sh"
    # cpuwin.csv: pku1's and sw1's processes (sleeps: no CPU) sampled on this machine around each libinccl
    # measurement; pku1's clock 1.5 s ahead: its windows moved back onto the machine's clock, or they would
    # lie outside the samples. Rows: each process, 2 timed calls, the union of 4 ranks x 2 calls of 50 ms
    # (run one rank after another), the offsets +- (4 + 4) / 4 ms = 2000 us
    rm -f "$tmp"/state/nodes/*/root/run/inclab/service.pid
    sleep 600 &
    sleeper2=$!
    for h in pku1:$sleeper sw1:$sleeper2; do
        mkdir -p "$tmp/state/nodes/${h%:*}/root/run/inclab" && echo "${h#*:}" >"$tmp/state/nodes/${h%:*}/root/run/inclab/service.pid"
    done
    reset; echo 1500000000 >"$scen/offset.pku1"
    fake cpuwin-good "none"
    expect cpuwin-good 0 verified "cpuwin: 2 calls in"
    # the machine's row (cpusample -m): its busy time inside the span, at most every core busy all along (and the bound)
    got=$(tail -n +2 "$run/cpuwin.csv" 2>/dev/null | awk -F, -v cores="$(nproc)" '{ c = $9
        if ($7 == "machine") c = ($9 ~ /^[0-9]+$/ && $9 <= $10 * cores + $11) ? "busy-ok" : "busy " $9
        print $1, $2, $3, $4, $5, $6, $7, $8, c, ($10 >= 400000 && $10 < 5000000) ? "span-ok" : "span " $10, $12 }' | sort | tr '\n' ';')
    want="inc allreduce 4096 1 2 machine machine 0 busy-ok span-ok 2000;inc allreduce 4096 1 2 pku1 host $sleeper 0 span-ok 2000;inc allreduce 4096 1 2 sw1 switch $sleeper2 0 span-ok 2000;"
    [ "$(head -n 1 "$run/cpuwin.csv")" = "$EXP_CPUWIN_HEADER" ] && [ "$got" = "$want" ] && ! grep -q cpuwin_missing "$run/meta.yaml" &&
        ok "cpuwin-good: cpuwin.csv has each sampled process's row and the machine's, its windows moved by its clock's offset" ||
        ko "cpuwin-good: cpuwin.csv rows '$got', want '$want'; $(grep -A3 cpuwin_missing "$run/meta.yaml"; grep cpuwin "$tmp/cpuwin-good.log")"
    # rxe.csv: each host's interrupts and packets inside its 2 timed calls (the warm-up's left out), calls 2
    got=$(grep ',timed_' "$run/rxe.csv" 2>/dev/null | sort | tr '\n' ';')
    want="inc,allreduce,4096,1,2,pku1,timed_intr,20;inc,allreduce,4096,1,2,pku1,timed_pkts,400;inc,allreduce,4096,1,2,pku2,timed_intr,40;inc,allreduce,4096,1,2,pku2,timed_pkts,400;inc,allreduce,4096,1,2,pku3,timed_intr,60;inc,allreduce,4096,1,2,pku3,timed_pkts,400;inc,allreduce,4096,1,2,pku4,timed_intr,80;inc,allreduce,4096,1,2,pku4,timed_pkts,400;"
    [ "$got" = "$want" ] &&
        ok "cpuwin-good: rxe.csv has each host's interrupts and packets inside its timed calls (timed_intr, timed_pkts)" ||
        ko "cpuwin-good: rxe.csv's timed rows '$got', want '$want'"
    # a rank whose interrupts could not be read (-1): its packets, no interrupts (never a sum of part of its calls)
    reset; touch "$scen/no-intr.2"
    fake cpuwin-nointr "none"
    got=$(grep ',timed_' "$run/rxe.csv" 2>/dev/null | cut -d, -f6,7 | sort | tr '\n' ' ')
    [ "$got" = "pku1,timed_intr pku1,timed_pkts pku2,timed_intr pku2,timed_pkts pku3,timed_pkts pku4,timed_intr pku4,timed_pkts " ] &&
        ok "cpuwin-nointr: a rank's unreadable interrupts (-1): no timed_intr for its host, the rest kept" ||
        ko "cpuwin-nointr: rxe.csv's timed rows '$got'"
    # a windows file with a line that is not one: no rows, the reason (file and line) in meta.yaml, the run verified
    reset; scenario inc 'win=rank,phase,bytes,iter,start_ns,end_ns
0,timed,4096,1;reboot,6'
    fake cpuwin-hostile "none"
    expect cpuwin-hostile 0 verified "cpuwin: no rows:"
    [ "$(cat "$run/cpuwin.csv")" = "$EXP_CPUWIN_HEADER" ] && grep -q "^  - 'inc allreduce 4096 B: cpuwin: .*/win.0:2: not rank,phase,bytes,iter,start_ns,end_ns" "$run/meta.yaml" &&
        ok "cpuwin-hostile: no rows, meta.yaml's cpuwin_missing names the file and line" ||
        ko "cpuwin-hostile: cpuwin.csv '$(cat "$run/cpuwin.csv")'; meta.yaml: $(grep -A2 cpuwin_missing "$run/meta.yaml")"
    # a VM whose clock cannot be read: no rows, said
    reset; touch "$scen/no-clock.pku3"
    fake cpuwin-noclock "none"
    expect cpuwin-noclock 0 verified "cpuwin: no rows: a guest clock could not be read before the run"
    [ "$(cat "$run/cpuwin.csv")" = "$EXP_CPUWIN_HEADER" ] && ok "cpuwin-noclock: no rows" || ko "cpuwin-noclock: $(cat "$run/cpuwin.csv")"
    # the speed probe: hostwork's sum in rank 0's host (pku1) before each measurement, 5 passes minus
    # 1 over 4, in cpu.csv as a probe row of that measurement. The fake's passes take 0.2 s each and
    # pku1's process is busy all along: at most 200,000 us a pass, more than nothing (on a loaded machine less)
    ( trap 'exit 0' TERM; while :; do :; done ) &
    burner=$!
    echo "$burner" >"$tmp/state/nodes/pku1/root/run/inclab/service.pid"
    reset
    fake probe "none"
    got=$(awk -F, '$7 == "probe"' "$run/cpu.csv" 2>/dev/null)
    kill "$burner" 2>/dev/null
    echo "$sleeper" >"$tmp/state/nodes/pku1/root/run/inclab/service.pid"
    [ "$(cat "$tmp/probe.rc")" = 0 ] && [ "$(wc -l <<<"$got")" = 1 ] &&
        awk -F, '$1 == "inc" && $2 == "allreduce" && $3 == 4096 && $4 == 1 && $6 == "pku1" && $8 > 0 && $8 <= 250000 { ok = 1 } END { exit !ok }' <<<"$got" &&
        ok "probe: one probe row, pku1's CPU per pass of hostwork's sum ($(cut -d, -f8 <<<"$got") us)" ||
        ko "probe: exit $(cat "$tmp/probe.rc"), rows '$got'; $(grep -i probe "$tmp/probe.log" | head -n 3)"
    # a lab without hostwork: the probe off, said once, no probe row
    reset
    mkdir -p "$tmp/probe-build" && for b in topogen incctl cpusample cpuwin; do cp "$(dirname "$topogen")/$b" "$tmp/probe-build/"; done
    fake probe-off "none" allreduce INCLAB_BUILD="$tmp/probe-build"
    [ "$(cat "$tmp/probe-off.rc")" = 0 ] && ! grep -q ',probe,' "$run/cpu.csv" &&
        [ "$(grep -c "speed probe off: no $tmp/probe-build/hostwork (make); cpu.csv without probe rows" "$tmp/probe-off.log")" = 1 ] &&
        ok "probe-off: no hostwork: said once, no probe row" ||
        ko "probe-off: exit $(cat "$tmp/probe-off.rc"); $(grep -i probe "$tmp/probe-off.log" | head -n 3)"
    kill "$sleeper" "$sleeper2" 2>/dev/null
fi

harness_end
