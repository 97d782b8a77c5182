#!/usr/bin/env bash
# mkbase.sh — build the common guest root filesystem of every inclab image.
#
#   images/mkbase.sh OUTDIR
#
# Uses mmdebstrap (no root mounts of images, no archive host named anywhere:
# with no mirror argument mmdebstrap uses this machine's configured apt sources)
# to install packages.base plus the files under rootfs/, and writes into OUTDIR:
#   rootfs.tar    the root filesystem
#   manifest.txt  "package version" of every installed package
# It is the slow step (minutes); build.sh caches its output by a hash of its inputs.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: mkbase.sh OUTDIR}
mkdir -p "$out"

pkgs=$(grep -v '^[[:space:]]*#' "$here/packages.base" | tr -s ' \n' ',' | sed 's/^,//; s/,$//')

# Guests boot their kernel directly; rootfs/ sets a small initrd (the kernel's
# postinst built one before rootfs/ was synced in: update-initramfs builds it again).
# The enabled units are what a lab node needs:
# systemd-networkd (netplan's backend). Nothing in the image names a node: identity
# comes from the NoCloud seed at first boot.
mmdebstrap --variant=minbase --include="$pkgs" \
    --customize-hook="sync-in '$here/rootfs' /" \
    --customize-hook='chroot "$1" update-initramfs -u -k all' \
    --customize-hook='chroot "$1" systemctl enable systemd-networkd.service' \
    --customize-hook='chroot "$1" systemctl mask apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer fstrim.timer' \
    --customize-hook='rm -f "$1"/etc/hostname; : > "$1"/etc/machine-id' \
    --customize-hook="chroot \"\$1\" dpkg-query -W -f='\${Package} \${Version}\n' > '$out/manifest.txt'" \
    bookworm "$out/rootfs.tar"
