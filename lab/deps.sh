#!/usr/bin/env bash
# deps.sh — install the Debian packages of lab/packages.host that are missing.
# Idempotent: with everything installed it only checks (dpkg-query) and returns.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
mapfile -t want < <(grep -v '^[[:space:]]*\(#\|$\)' "$here/packages.host")
missing=()
for p in "${want[@]}"; do
    dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
    echo "deps: all ${#want[@]} packages installed"
    exit 0
fi
if [ "$(id -u)" != 0 ]; then
    echo "deps: missing packages: ${missing[*]}; run 'make deps' as root (apt-get install)" >&2
    exit 1
fi
echo "deps: installing ${#missing[@]} packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# tshark asks whether non-root users may capture: answer no, without a prompt.
echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
apt-get update -q || { echo "deps: apt-get update failed (is Debian's archive reachable?)" >&2; exit 1; }
apt-get install -y -q --no-install-recommends "${missing[@]}" || {
    echo "deps: apt-get install failed for: ${missing[*]}" >&2; exit 1; }
echo "deps: installed ${missing[*]}"
