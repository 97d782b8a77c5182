# harness.sh — the frame every inclab test script runs in (sourced, bash).
#
# A test script names its phases before it starts, runs them in that order,
# and reaches harness_end, which alone prints the closing count line
# "N passed, M failed" and exits 0 only when nothing failed. Any other end
# exits non-zero and says which phases did not finish:
#   - a signal (INT, TERM, HUP): the exit status is 128 + the signal;
#   - a set -u / set -e abort, or an `exit` from anywhere, even `exit 0`;
#   - a phase begun out of order, or never begun.
# A script that stops early on purpose (say, a debugging switch) calls
# harness_stop REASON: the phases left are named, and the run is not a pass.
#
#   . tests/lib/harness.sh
#   harness_begin lab-test "1 2 3"       # the script's name, its phases in order
#   harness_on_exit cleanup_function     # optional: run at every end, before the verdict
#   phase 1 "half-failed lab-up"
#   check "what" cmd args...             # ok/FAIL by the command's exit status
#   ok "what" ; ko "what"
#   sub_test script args...              # a script of this format: its checks count as ours
#   harness_end
#
# Signals belong to the process group (as a terminal's Ctrl-C and a CI
# timeout send them): bash runs a trap only once its foreground child ends,
# so a signal to the script's pid alone waits for the running command.
# The lines: "ok   WHAT", "FAIL WHAT", "--- [S s] PHASE. TITLE" (S: seconds the
# previous phase took). A test of the harness itself: tests/harness/.
# HARNESS_ABORT_AT=PHASE:KIND (KIND unset, exit0, false, term) makes the
# script abort that way as PHASE begins: tests/harness/ uses it to show that
# every kind of abort fails the run.

h_name=test h_phases=() h_current="" h_started=() h_ended=0 h_signal="" h_on_exit="" h_verdict_ok=0 h_t=$(date +%s)
pass=0 fail=0

ok() { pass=$((pass + 1)); echo "ok   $*"; }
ko() { fail=$((fail + 1)); echo "FAIL $*"; }
check() { local what=$1; shift; if "$@"; then ok "$what"; else ko "$what"; fi; }

# harness_begin NAME "PHASE..." — name the script and its phases; install the traps.
harness_begin() {
    h_name=$1
    read -r -a h_phases <<<"$2"
    trap h_exit EXIT
    trap 'h_signal=INT; exit 130' INT
    trap 'h_signal=TERM; exit 143' TERM
    trap 'h_signal=HUP; exit 129' HUP
}

# harness_on_exit FUNCTION — call FUNCTION at every end (normal or not), before the verdict.
harness_on_exit() { h_on_exit=$1; }

# phase ID TITLE — begin phase ID, which must be the next one named in harness_begin.
phase() {
    local id=$1 now want=${h_phases[${#h_started[@]}]:-}
    shift
    now=$(date +%s)
    if [ "$id" != "$want" ]; then
        ko "phase $id began where phase '${want:-(none left)}' was due: the script's order is wrong"
        h_current=""   # the phase before ran to its end; the rest did not
        exit 1
    fi
    echo "--- [$((now - h_t)) s] $id. $*"
    h_t=$now
    h_started+=("$id")
    h_current=$id
    h_inject "$id"
}

# h_inject ID — HARNESS_ABORT_AT=ID:KIND aborts here, the way KIND says.
h_inject() {
    local at=${HARNESS_ABORT_AT:-}
    [ -n "$at" ] && [ "${at%%:*}" = "$1" ] || return 0
    echo "harness: aborting at phase $1 as asked (HARNESS_ABORT_AT=$at)"
    case ${at#*:} in
    unset) set -u; : "$h_no_such_variable" ;;   # a set -u abort
    exit0) exit 0 ;;                              # an exit that claims success
    false) set -e; false ;;                       # a set -e abort
    term) kill -TERM $$ ;;                        # a signal
    *) echo "harness: unknown abort kind in HARNESS_ABORT_AT=$at (unset, exit0, false, term)"; exit 2 ;;
    esac
}

# h_unfinished — the phases that did not finish: the current one (unless the
# script ended) and every one never begun.
h_unfinished() {
    local p out="" i
    [ "$h_ended" = 1 ] || [ -z "$h_current" ] || out="$h_current"
    for ((i = ${#h_started[@]}; i < ${#h_phases[@]}; i++)); do
        p=${h_phases[$i]}
        out+="${out:+ }$p"
    done
    echo "$out"
}

# harness_stop REASON — end now on purpose; the phases left are named and the run fails.
harness_stop() {
    echo "$h_name: stopped before its end: $*"
    exit 3
}

# harness_end — the script reached its end: every phase must have begun.
harness_end() {
    local left
    h_ended=1
    left=$(h_unfinished)
    if [ -n "$left" ]; then
        h_ended=0
        echo "$h_name: reached its end without phases: $left"
        exit 1
    fi
    h_t=$(date +%s)
    h_verdict_ok=1
    exit $((fail > 0 ? 1 : 0))
}

# h_exit — the EXIT trap: cleanup, then the closing count line for a run that
# reached harness_end, or the abort report and a non-zero status for any other.
h_exit() {
    local rc=$? left
    trap - EXIT INT TERM HUP
    # in a subshell: nothing the hook does (an exit, an unset variable) can change the verdict
    [ -z "$h_on_exit" ] || ( set +eu; "$h_on_exit" ) || true
    if [ "${h_verdict_ok:-0}" = 1 ]; then
        echo "$h_name: $pass passed, $fail failed"
        echo "$pass passed, $fail failed"
        exit "$rc"
    fi
    left=$(h_unfinished)
    local where="in phase $h_current"
    [ -n "$h_current" ] || where=${h_started[*]:+after phase ${h_started[-1]}}
    echo "$h_name: ABORTED (exit $rc${h_signal:+, SIG$h_signal}) ${where:-before its first phase}; did not finish: ${left:-(none)}; $pass ok and $fail FAIL before the abort"
    [ "$rc" = 0 ] && rc=1
    exit "$rc"
}

# sub_test SCRIPT [ARGS] — run a test script of this format; count its ok/FAIL
# lines as ours and show its other output. It must end with its closing count
# line, and its counts must match what it printed; otherwise (killed, aborted,
# a count it did not show) that is a failure of its own.
sub_test() {
    local out rc line n_ok=0 n_fail=0 closing
    out=$("$@" 2>&1) && rc=0 || rc=$?
    grep -v '^ok \|^FAIL \|^[0-9]* passed, [0-9]* failed$' <<<"$out" || true
    while read -r line; do
        case "$line" in
        ok\ *) ok "${line#ok   }"; n_ok=$((n_ok + 1)) ;;
        FAIL\ *) ko "${line#FAIL }"; n_fail=$((n_fail + 1)) ;;
        esac
    done <<<"$out"
    closing=$(grep -x '[0-9]* passed, [0-9]* failed' <<<"$out" | tail -n 1)
    if [ -z "$closing" ]; then
        ko "$* did not reach its end (exit $rc, no closing count line)"
    elif [ "$closing" != "$n_ok passed, $n_fail failed" ]; then
        ko "$* closed with '$closing' but printed $n_ok ok and $n_fail FAIL lines"
    elif [ "$rc" != 0 ] && [ "$n_fail" = 0 ]; then
        ko "$* exited $rc without a FAIL line"
    elif [ "$rc" = 0 ] && [ "$n_fail" != 0 ]; then
        ko "$* exited 0 after $n_fail FAIL lines"
    fi
}
