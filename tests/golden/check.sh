#!/usr/bin/env bash
# Golden tests of topogen: generated lab files and error messages.
#
#   tests/golden/check.sh [--update] TOPOGEN
#
# For each topology/*.yaml the generated tree (with fixed paths and ports) must
# equal tests/golden/NAME/ byte for byte; for each tests/topology/invalid/*.yaml
# topogen must exit 1 with exactly the messages of the matching .err file.
# --update rewrites the golden files (review the diff before committing).
set -uo pipefail
update=0
[ "${1:-}" = --update ] && { update=1; shift; }
topogen=${1:?usage: check.sh [--update] TOPOGEN}
cd "$(dirname "$0")/../.."
pass=0 fail=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

ok() { pass=$((pass + 1)); echo "ok   $*"; }
ko() { fail=$((fail + 1)); echo "FAIL $*"; }

for topo in topology/*.yaml; do
    name=$(basename "$topo" .yaml)
    "$topogen" -o "$tmp/$name" --prefix inclab --state-dir /var/lib/inclab/test --udp-base 47000 --accel tcg \
        --image controller=/img/controller --image switch=/img/switch --image host=/img/host "$topo" \
        || { ko "$name: topogen failed"; continue; }
    if [ $update = 1 ]; then rm -rf "tests/golden/$name"; cp -r "$tmp/$name" "tests/golden/$name"; fi
    if diff -r "tests/golden/$name" "$tmp/$name" > "$tmp/$name.diff"; then
        ok "$name: $(find "$tmp/$name" -type f | wc -l) generated files match tests/golden/$name"
    else
        ko "$name: output differs from tests/golden/$name:"; head -n 40 "$tmp/$name.diff"
    fi
    # Every generated domain and network must be well-formed XML for libvirt.
    if command -v virt-xml-validate >/dev/null; then
        bad=0
        for x in "$tmp/$name"/domains/*.xml; do virt-xml-validate "$x" domain >/dev/null 2>&1 || { bad=1; echo "  invalid: $x"; virt-xml-validate "$x" domain | tail -3; }; done
        virt-xml-validate "$tmp/$name/network-mgmt.xml" network >/dev/null 2>&1 || { bad=1; echo "  invalid network XML"; }
        if [ $bad = 0 ]; then ok "$name: domain and network XML valid (virt-xml-validate)"; else ko "$name: invalid libvirt XML"; fi
    fi
done

for bad in tests/topology/invalid/*.yaml; do
    want=${bad%.yaml}.err
    "$topogen" --check "$bad" > "$tmp/out" 2> "$tmp/err"; rc=$?
    [ $update = 1 ] && cp "$tmp/err" "$want"
    if [ $rc -ne 1 ]; then
        ko "$bad: exit code $rc, want 1"
    elif ! diff -u "$want" "$tmp/err"; then
        ko "$bad: messages differ from $want"
    else
        ok "$bad rejected: $(head -n 1 "$tmp/err")"
    fi
done
echo "golden: $pass passed, $fail failed"
[ $fail -eq 0 ]
