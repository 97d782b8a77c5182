# caught.sh — judging a rank's run under an injected fault (lab.sh fault),
# sourced by tests/system/inc-collectives.sh and inc-perf.sh after harness.sh.
caught=0

# judge_caught WHAT RC TEXT REGEX — the run of WHAT ended with exit RC and
# said TEXT. Under a fault it must have failed: exit 1 with REGEX in TEXT (the
# fault caught; counted in $caught), or exit 1 because a peer had given up at
# the fault: a timeout ("no progress for"), or, since a rank that leaves is
# noticed at once, "communicator broken: rank N went away". Anything else is
# a FAIL (and at least one rank must show REGEX: the callers count $caught).
judge_caught() {
    local what=$1 rc=$2 text=$3 re=$4 line
    if [ "$rc" = 1 ] && line=$(grep -m 1 -E -- "$re" <<<"$text"); then
        caught=$((caught + 1))
        ok "$what caught the fault: exit 1, $(cut -c1-120 <<<"$line")"
    elif [ "$rc" = 1 ] && line=$(grep -m 1 -E 'no progress for|communicator broken: rank [0-9]+ went away' <<<"$text"); then
        ok "$what exit 1 after a peer gave up: $(cut -c1-120 <<<"$line")"
    else
        ko "$what exit '${rc:-none}', want 1 and '$re': $(tail -n 2 <<<"$text" | cut -c1-150 | tr '\n' ' ')"
    fi
}
