#!/usr/bin/env bash
# test-lab-stop.sh — lab-stop's refusals, without booting anything: under a
# state root of this test, lab-stop of a lab that does not exist, of a state
# directory that is not the lab's (no marker, or the marker of another
# prefix), of a state lab-up left before it wrote the lab's description, of a
# state outside the root, with a malformed prefix or with an argument, must
# exit non-zero with a precise message, and leave every such directory as it
# was (no "stopped" mark, nothing made). Machine-wide notes go to a run
# directory of this test (INCLAB_RUN_DIR). Under a second. Runs in
# tests/lib/harness.sh.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/lib/harness.sh
harness_begin test-lab-stop refusals
lab=$PWD/lab/lab.sh
P=ilst$$
P=${P:0:8}
tmp=$(mktemp -d)
root=$tmp/root
mkdir -p "$root" "$tmp/run"
export INCLAB_STATE_ROOT=$root INCLAB_RUN_DIR=$tmp/run
cleanup() { rm -rf "$tmp"; }
harness_on_exit cleanup

# refused WHAT PATTERN PREFIX [STATE] [ARG] — lab-stop exits non-zero saying PATTERN
refused() {
    local rc
    INCLAB_PREFIX=$3 INCLAB_STATE=${4:-$root/$3} "$lab" stop ${5:+"$5"} > "$tmp/out" 2>&1; rc=$?
    check "$1: exit $rc: $(grep -m 1 -o 'lab: .*' "$tmp/out" | cut -c1-120)" \
        sh -c '[ "$1" != 0 ] && grep -q -- "$2" "$3"' _ "$rc" "$2" "$tmp/out"
}
# untouched DIR — DIR holds only what the test put there (data)
untouched() { check "  ... and left as it was ($(ls -A "$1" | tr '\n' ' '))" [ "$(ls -A "$1")" = data ]; }

phase refusals "lab-stop of what is not a lab it may stop"
refused "a lab that does not exist" "no lab '$P' in $root/$P: nothing to stop" "$P"
check "  ... and no state directory made" [ ! -e "$root/$P" ]
mkdir "$root/$P"; echo keep > "$root/$P/data"
refused "a state without the lab's marker" "not the state of lab '$P' (no marker .inclab-lab" "$P"
untouched "$root/$P"
rm -rf "${root:?}/$P"; mkdir "$root/$P"; echo "inclab lab $P-x" > "$root/$P/.inclab-lab"; echo keep > "$root/$P/data"
refused "a state whose marker names lab $P-x" "not the state of lab '$P' (no marker .inclab-lab" "$P"
rm -f "$root/$P/.inclab-lab"; untouched "$root/$P"
rm -rf "${root:?}/$P"; mkdir "$root/$P"; echo "inclab lab $P" > "$root/$P/.inclab-lab"; : > "$root/$P/made"
refused "a state lab-up left before the lab's description (gen/inventory.tsv)" "no lab '$P' in $root/$P: nothing to stop" "$P"
check "  ... and no stop recorded" sh -c '[ ! -e "$1/stopped" ] && [ ! -s "$1/made" ]' _ "$root/$P"
mkdir -p "$tmp/elsewhere/$P"
refused "a state outside the state root" "not a directory directly under the state root" "$P" "$tmp/elsewhere/$P"
refused "a prefix that is not a name" "INCLAB_PREFIX must be" "../$P"
refused "an argument (it stops the whole lab)" "stop takes no arguments" "$P" "" pku1
harness_end
