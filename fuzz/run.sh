#!/usr/bin/env bash
# run.sh DIR SECONDS TARGET... — run each libFuzzer target DIR/fuzz_TARGET for
# SECONDS on its corpus (DIR/corpus/TARGET, kept between runs, and the seeds
# of DIR/seeds/TARGET), bounded in memory (FUZZ_RSS_MB, default 2048), input
# size (per target below) and time per input (FUZZ_UNIT_TIMEOUT, default 10 s).
# Prints one line per target (executions, executions/s, coverage); exits
# non-zero when any target found a crash, a leak, undefined behaviour, a
# timeout or ran out of memory, naming the reproducer libFuzzer kept and the
# command that replays it.
set -uo pipefail
dir=$1 seconds=$2; shift 2
rss=${FUZZ_RSS_MB:-2048} unit_timeout=${FUZZ_UNIT_TIMEOUT:-10}

# the longest input of each target: a frame (jumbo at most), a bundle, ~90 engine frames, text documents
max_len() {
    case $1 in
        roce) echo 9100 ;;
        bundle) echo 9200 ;;
        engine) echo 100000 ;;
        *) echo 16384 ;;
    esac
}

failed=() t0=$(date +%s)
printf '%-9s %8s %11s %9s %6s %7s %7s  %s\n' target seconds executions exec/s cov features corpus result
for t in "$@"; do
    bin=$dir/fuzz_$t corpus=$dir/corpus/$t seeds=$dir/seeds/$t art=$dir/artifacts/$t/ log=$dir/logs/$t.log
    mkdir -p "$corpus" "$seeds" "$art" "$dir/logs"
    s0=$(date +%s)
    # -close_fd_mask=1: the code's own stdout (controller log lines) is not the report
    "$bin" -max_total_time="$seconds" -rss_limit_mb="$rss" -malloc_limit_mb="$rss" -max_len="$(max_len "$t")" \
        -timeout="$unit_timeout" -print_final_stats=1 -close_fd_mask=1 -artifact_prefix="$art" \
        -dict="$(dirname "$0")/inclab.dict" "$corpus" "$seeds" > "$log" 2>&1
    rc=$?
    took=$(( $(date +%s) - s0 ))
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    last=$(grep -E '^#[0-9]+' "$log" | tail -1)
    cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<< "$last")
    ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<< "$last")
    ncorp=$(find "$corpus" -type f | wc -l)
    if [ $rc -eq 0 ]; then
        result=ok
    else
        what=$(grep -m1 -oE 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer): [^ ]+( [^ ]+)?|runtime error: .*|property does not hold: .*' "$log" || true)
        unit=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -1)
        result="FAILED (exit $rc): ${what:-see $log}"
        failed+=("$t: ${what:-exit $rc}; reproducer: ${unit:-none kept}; replay: $bin ${unit:-} ; log: $log")
    fi
    printf '%-9s %8s %11s %9s %6s %7s %7s  %s\n' "$t" "$took" "${execs:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}" "$ncorp" "$result"
done
echo "fuzz: $# targets, ${seconds} s each, $(( $(date +%s) - t0 )) s in all"
if [ ${#failed[@]} -gt 0 ]; then
    for f in "${failed[@]}"; do echo "fuzz: FAILED $f" >&2; done
    exit 1
fi
