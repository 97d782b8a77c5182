#!/usr/bin/env bash
# build.sh — build (or find in the cache) the guest images of the lab roles.
#
#   images/build.sh [--payload DIR] [--print] ROLE...     ROLE: controller switch host
#
# Two cached layers, each keyed by a hash of its inputs so that a change of any
# input rebuilds exactly what depends on it:
#   base-KEY/   mkbase.sh output (packages.base, rootfs/, mkbase.sh)  — minutes
#   ROLE-KEY/   base + guest/ + roles/ROLE/ + the project's payload    — seconds
#               disk.qcow2, vmlinuz, initrd.img, manifest.txt
# The cache lives outside the source tree: $INCLAB_CACHE (default /var/cache/inclab).
# --payload DIR copies DIR/ROLE/ (the project's binaries built for that role) into
# the image. --print prints "ROLE DIR" per role on stdout once its image exists.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${INCLAB_CACHE:-/var/cache/inclab}/images
payload="" print=0 roles=()
while [ $# -gt 0 ]; do
    case "$1" in
    --payload) payload=${2:?--payload needs a directory}; shift 2 ;;
    --print) print=1; shift ;;
    controller|switch|host) roles+=("$1"); shift ;;
    *) echo "images/build.sh: unknown role or option '$1' (roles: controller switch host)" >&2; exit 2 ;;
    esac
done
[ ${#roles[@]} -gt 0 ] || roles=(controller switch host)
log() { printf '[images %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# hash_tree PATH... — stable hash of file names, modes and contents.
hash_tree() {
    local p
    for p in "$@"; do
        [ -e "$p" ] || continue
        (cd "$p" 2>/dev/null && find . -type f -o -type l | LC_ALL=C sort | while read -r f; do
            printf '%s %s ' "$f" "$(stat -c %a "$f")"; sha256sum < "$f"; done) || sha256sum < "$p"
    done | sha256sum | cut -c1-16
}

# run_with_progress LOG CMD... — run CMD with output in LOG, print a heartbeat
# with the latest log line every 20 s; fail with the log's tail.
run_with_progress() {
    local logf=$1; shift
    local t0=$SECONDS last=$SECONDS
    "$@" > "$logf" 2>&1 &
    local pid=$!
    while kill -0 $pid 2>/dev/null; do
        sleep 1
        if [ $((SECONDS - last)) -ge 20 ]; then
            last=$SECONDS
            log "  ... $((SECONDS - t0)) s: $(tail -n 1 "$logf" | cut -c1-100)"
        fi
    done
    if ! wait $pid; then
        log "FAILED after $((SECONDS - t0)) s; last lines of $logf:"
        tail -n 20 "$logf" >&2
        return 1
    fi
}

# prune PREFIX KEEP — remove cached images PREFIX* other than KEEP that no lab
# (any /var/lib/inclab/*/lab.env) still boots from.
prune() {
    local d
    for d in "$cache/$1"*; do
        [ -d "$d" ] && [ "$d" != "$2" ] || continue
        case "$d" in *.tmp) continue ;; esac
        if grep -qs -- "$(basename "$d")" /var/lib/inclab/*/lab.env; then continue; fi
        log "removing superseded image $(basename "$d")"
        rm -rf "$d" "$d.log"
    done
}

for tool in mmdebstrap mkfs.ext4 qemu-img; do
    command -v "$tool" >/dev/null || { echo "images/build.sh: '$tool' not found: run 'make deps'" >&2; exit 1; }
done
mkdir -p "$cache"
exec 9> "$cache/.lock"
flock 9   # one builder at a time; a second caller waits, then finds the cache filled

base_key=$(hash_tree "$here/packages.base" "$here/mkbase.sh" "$here/rootfs")
base=$cache/base-$base_key
if [ ! -e "$base/done" ]; then
    log "building base root filesystem $base_key (mmdebstrap, several minutes)"
    rm -rf "$base" "$base.tmp"; mkdir -p "$base.tmp"
    t0=$SECONDS
    run_with_progress "$cache/base-$base_key.log" "$here/mkbase.sh" "$base.tmp"
    touch "$base.tmp/done"; mv "$base.tmp" "$base"
    log "base built in $((SECONDS - t0)) s, $(du -sh "$base/rootfs.tar" | cut -f1)"
fi

for role in "${roles[@]}"; do
    role_key=$(printf '%s %s %s %s' "$base_key" "$(hash_tree "$here/guest" "$here/roles/$role")" \
        "$(hash_tree ${payload:+"$payload/$role"})" "$(hash_tree "$here/build.sh")" | sha256sum | cut -c1-16)
    dir=$cache/$role-$role_key
    if [ ! -e "$dir/done" ]; then
        log "building $role image $role_key"
        t0=$SECONDS
        rm -rf "$dir" "$dir.tmp"; mkdir -p "$dir.tmp/root"
        tar -C "$dir.tmp/root" -xf "$base/rootfs.tar"
        cp -a "$here/guest/." "$here/roles/$role/." "$dir.tmp/root/"
        if [ -n "$payload" ] && [ -d "$payload/$role" ]; then cp -a "$payload/$role/." "$dir.tmp/root/"; fi
        # The kernel and initrd are booted directly; libvirt's qemu user must read them.
        install -m 644 "$(ls "$dir.tmp"/root/boot/vmlinuz-* | tail -n 1)" "$dir.tmp/vmlinuz"
        install -m 644 "$(ls "$dir.tmp"/root/boot/initrd.img-* | tail -n 1)" "$dir.tmp/initrd.img"
        { cat "$base/manifest.txt"
          (cd "$dir.tmp/root" && find usr/local etc/inclab -type f | LC_ALL=C sort | sed 's/^/inclab-file \//')
        } > "$dir.tmp/manifest.txt"
        mkfs.ext4 -q -F -L inclab-root -d "$dir.tmp/root" "$dir.tmp/disk.raw" 3G >&2
        qemu-img convert -O qcow2 "$dir.tmp/disk.raw" "$dir.tmp/disk.qcow2"
        rm -rf "$dir.tmp/root" "$dir.tmp/disk.raw"
        echo "$role_key" > "$dir.tmp/key"
        touch "$dir.tmp/done"; mv "$dir.tmp" "$dir"
        log "$role image built in $((SECONDS - t0)) s: $(du -h "$dir/disk.qcow2" | cut -f1) qcow2, $(grep -vc '^inclab-file' "$dir/manifest.txt") packages"
    fi
    [ $print = 1 ] && echo "$role $dir"
    prune "$role-" "$dir"
done
prune base- "$base"
exit 0
