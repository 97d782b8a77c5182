#!/usr/bin/env bash
# test-harness.sh — tests/lib/harness.sh cannot pass a run that did not reach
# its end. A small three-phase script in the harness is run clean, with a
# FAIL, and ended every abnormal way: a set -u abort, a set -e abort, an
# `exit 0` halfway, SIGTERM and SIGINT from outside (to its process group,
# as a terminal or a CI timeout sends them), a phase skipped, a phase never
# reached, a sub-test killed before its closing line or closing with counts
# it did not print. Each abnormal end must exit non-zero, name the phases
# that did not finish and print no closing count line. No lab needed.
# Runs in the harness itself: "N passed, M failed" only at its end.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/lib/harness.sh
harness_begin test-harness "scripts signals subtests"
tmp=$(mktemp -d)
gone() { rm -rf "$tmp"; }
harness_on_exit gone

# The script under test: phases a b c; SLEEP_IN_B seconds of sleep in phase b;
# SKIP_TO_C jumps from a to c; NO_C ends after b; FAIL_IN_B adds a FAIL.
cat > "$tmp/three.sh" <<EOF
#!/usr/bin/env bash
set -uo pipefail
cd "$PWD"
. tests/lib/harness.sh
harness_begin three "a b c"
bad_hook() { exit 0; }
[ "\${HOOK_EXIT0:-0}" = 1 ] && harness_on_exit bad_hook
phase a "first"
ok "a works"
[ "\${SKIP_TO_C:-0}" = 1 ] && { phase c "third"; harness_end; }
phase b "second"
[ "\${SLEEP_IN_B:-0}" = 0 ] || { echo sleeping; sleep "\$SLEEP_IN_B"; }
[ "\${FAIL_IN_B:-0}" = 1 ] && ko "b fails on purpose"
ok "b works"
[ "\${NO_C:-0}" = 1 ] && harness_end
phase c "third"
ok "c works"
harness_end
EOF
chmod +x "$tmp/three.sh"

# aborted LEFT OUT RC — true for an abnormal end: non-zero exit, no closing
# count line, and the phases LEFT named as not finished.
aborted() {
    [ "$3" != 0 ] || return 1
    ! grep -q '^[0-9]* passed, [0-9]* failed$' <<<"$2" || return 1
    grep -q -e "did not finish: $1;" -e "without phases: $1\$" <<<"$2"
}
# expect_abort WHAT LEFT OUT RC — check that the run ended abnormally.
expect_abort() {
    check "$1: exit $4 (non-zero), no closing count line, 'did not finish: $2' — $(grep -m 1 'ABORTED\|without phases' <<<"$3" | cut -c1-110)" \
        aborted "$2" "$3" "$4"
}
# closes_with LINE OUT RC WANT_RC — a run that reached its end: exit WANT_RC, last line LINE.
closes_with() { [ "$3" = "$4" ] && [ "$(tail -n 1 <<<"$2")" = "$1" ]; }
# says PATTERN OUT RC — exit 1 and PATTERN in OUT.
says() { [ "$3" = 1 ] && grep -q -- "$1" <<<"$2"; }

phase scripts "clean, failing and aborted runs"
out=$("$tmp/three.sh" 2>&1); rc=$?
check "a clean run exits 0 and closes with '3 passed, 0 failed' (exit $rc)" closes_with '3 passed, 0 failed' "$out" $rc 0
out=$(FAIL_IN_B=1 "$tmp/three.sh" 2>&1); rc=$?
check "a run with a FAIL exits 1 and closes with '3 passed, 1 failed' (exit $rc)" closes_with '3 passed, 1 failed' "$out" $rc 1
for kind in unset false exit0 term; do
    out=$(HARNESS_ABORT_AT=b:$kind "$tmp/three.sh" 2>&1); rc=$?
    expect_abort "abort '$kind' at phase b" "b c" "$out" $rc
done
out=$(HOOK_EXIT0=1 HARNESS_ABORT_AT=b:term "$tmp/three.sh" 2>&1); rc=$?
expect_abort "SIGTERM at phase b, with a cleanup hook that exits 0" "b c" "$out" $rc
out=$(HOOK_EXIT0=1 h_verdict_ok=1 HARNESS_ABORT_AT=b:exit0 "$tmp/three.sh" 2>&1); rc=$?
expect_abort "exit 0 at phase b, h_verdict_ok=1 in the environment, a hook that exits 0" "b c" "$out" $rc
out=$(HARNESS_ABORT_AT=a:exit0 "$tmp/three.sh" 2>&1); rc=$?
expect_abort "exit 0 at phase a" "a b c" "$out" $rc
out=$(SKIP_TO_C=1 "$tmp/three.sh" 2>&1); rc=$?
expect_abort "phase b skipped" "b c" "$out" $rc
out=$(NO_C=1 "$tmp/three.sh" 2>&1); rc=$?
expect_abort "phase c never reached" "c" "$out" $rc

phase signals "signals from outside, to the process group"
# With job control on, a background job is its own process group and does not
# start with SIGINT ignored (bash ignores it in asynchronous commands otherwise).
set -m
for sig in TERM INT HUP; do
    # with the signals' default actions whatever this test inherited: a shell
    # started in the background without job control ignores SIGINT, nohup
    # ignores SIGHUP, and a signal ignored at a shell's start cannot be trapped
    SLEEP_IN_B=60 env --default-signal=INT,TERM,HUP "$tmp/three.sh" > "$tmp/out" 2>&1 &
    pid=$!
    for _ in $(seq 1 100); do grep -q sleeping "$tmp/out" && break; sleep 0.1; done
    kill -"$sig" -- -"$pid"
    wait "$pid"; rc=$?
    expect_abort "SIG$sig while phase b sleeps" "b c" "$(cat "$tmp/out")" $rc
    check "SIG$sig: the exit status says the signal ($rc)" grep -q "SIG$sig" "$tmp/out"
done
set +m

phase subtests "sub-tests that did not reach their end"
cat > "$tmp/parent.sh" <<EOF
#!/usr/bin/env bash
set -uo pipefail
cd "$PWD"
. tests/lib/harness.sh
harness_begin parent "run"
phase run "a sub-test"
sub_test "\$@"
harness_end
EOF
chmod +x "$tmp/parent.sh"
printf '#!/bin/sh\necho "ok   one"\necho "ok   two"\nkill -9 $$\n' > "$tmp/killed.sh"
printf '#!/bin/sh\necho "ok   one"\necho "FAIL two"\necho "2 passed, 0 failed"\nexit 0\n' > "$tmp/liar.sh"
printf '#!/bin/sh\necho "ok   one"\necho "1 passed, 0 failed"\nexit 1\n' > "$tmp/badrc.sh"
chmod +x "$tmp/killed.sh" "$tmp/liar.sh" "$tmp/badrc.sh"
out=$("$tmp/parent.sh" "$tmp/killed.sh" 2>&1); rc=$?
check "a sub-test killed before its closing line fails the parent (exit $rc): $(grep -m 1 'did not reach' <<<"$out" | cut -c1-90)" \
    says 'did not reach its end' "$out" $rc
out=$("$tmp/parent.sh" "$tmp/liar.sh" 2>&1); rc=$?
check "a sub-test whose closing counts differ from its lines fails the parent (exit $rc)" says 'closed with' "$out" $rc
out=$("$tmp/parent.sh" "$tmp/badrc.sh" 2>&1); rc=$?
check "a sub-test that exits 1 without a FAIL line fails the parent (exit $rc)" says 'without a FAIL line' "$out" $rc
out=$("$tmp/parent.sh" "$tmp/three.sh" 2>&1); rc=$?
check "a clean sub-test's checks count as the parent's (exit $rc, $(tail -n 1 <<<"$out"))" \
    closes_with '3 passed, 0 failed' "$out" $rc 0
harness_end
