#!/usr/bin/env bash
# install.sh install|uninstall — lay down (or remove) libinccl and the
# project's tools the way a distribution package would: the shared library
# (the file, its SONAME link and the libinccl.so link for -linccl), the
# static library, inccl.h, inccl.pc, the tools and the man pages.
#
# `make install` / `make uninstall` run it. The environment chooses where:
#   DESTDIR       staging root put in front of every path (default: none)
#   PREFIX        default /usr/local
#   BINDIR        default PREFIX/bin         LIBDIR      default PREFIX/lib
#   INCLUDEDIR    default PREFIX/include     MANDIR      default PREFIX/share/man
#   PKGCONFIGDIR  default LIBDIR/pkgconfig
# and make gives BUILD, INCCL_VERSION, INCCL_SONAME and INCCL_SO (the
# library's names, read from inccl.h). inccl.pc names PREFIX, LIBDIR and
# INCLUDEDIR without DESTDIR: the paths the files will have once the staged
# tree is in place.
set -euo pipefail
shopt -s nullglob

die() { echo "install.sh: $*" >&2; exit 1; }
top=$(cd "$(dirname "$0")/.." && pwd)

action=${1:-}
case $action in install|uninstall) ;; *) die "usage: install.sh install|uninstall" ;; esac
: "${BUILD:?BUILD not set (run make install)}" "${INCCL_VERSION:?}" "${INCCL_SONAME:?}" "${INCCL_SO:?}"

PREFIX=${PREFIX:-/usr/local}
BINDIR=${BINDIR:-$PREFIX/bin}
LIBDIR=${LIBDIR:-$PREFIX/lib}
INCLUDEDIR=${INCLUDEDIR:-$PREFIX/include}
MANDIR=${MANDIR:-$PREFIX/share/man}
PKGCONFIGDIR=${PKGCONFIGDIR:-$LIBDIR/pkgconfig}
DESTDIR=${DESTDIR:-}

# The directories are written into inccl.pc (and through sed): absolute paths
# of plain characters only, so no quoting can go wrong there.
for v in PREFIX BINDIR LIBDIR INCLUDEDIR MANDIR PKGCONFIGDIR; do
    [[ ${!v} =~ ^/[A-Za-z0-9._+/-]*$ && ! ${!v} =~ (^|/)\.\.(/|$) ]] ||
        die "$v='${!v}': want an absolute path of A-Z a-z 0-9 . _ + - / without '..'"
done
[[ -z $DESTDIR || ! $DESTDIR =~ [[:cntrl:]] ]] || die "DESTDIR holds a control character"

TOOLS=(inccl_perf inccl_check incctl incswitch topogen increport)

# What is laid down, as lines "MODE<tab>SOURCE<tab>DEST" (MODE link: DEST ->
# SOURCE, a name in DEST's directory); uninstall removes the same list.
files() {
    local t p
    line() { printf '%s\t%s\t%s\n' "$@"; }
    line 644 "$BUILD/$INCCL_SO" "$LIBDIR/$INCCL_SO"
    line link "$INCCL_SO" "$LIBDIR/$INCCL_SONAME"
    line link "$INCCL_SONAME" "$LIBDIR/libinccl.so"
    line 644 "$BUILD/libinccl.a" "$LIBDIR/libinccl.a"
    line 644 "$top/hostlib/inccl.h" "$INCLUDEDIR/inccl.h"
    line pc - "$PKGCONFIGDIR/inccl.pc"
    for t in "${TOOLS[@]}"; do line 755 "$BUILD/$t" "$BINDIR/$t"; done
    for p in "$top"/man/man1/*.1 "$top"/man/man3/*.3; do
        line 644 "$p" "$MANDIR/$(basename "$(dirname "$p")")/$(basename "$p")"
    done
    # a page that documents several names (its NAME line) is linked under each other name
    for t in "${MAN_NAMES[@]}"; do
        p=${t% *} n=${t#* }
        [ "$n.${p##*.}" = "$(basename "$p")" ] || line link "$(basename "$p")" "$MANDIR/$(dirname "$p")/$n.${p##*.}"
    done
}

# "PAGE NAME" for every name each page's NAME line lists (man/names.sh)
MAN_NAMES=()
while read -r p n; do
    [[ $n =~ ^[A-Za-z0-9_.-]+$ ]] || die "man/$p: '$n' in its NAME line is not a name"
    MAN_NAMES+=("$p $n")
done < <(cd "$top/man" && ./names.sh man1/*.1 man3/*.3)

# inccl.pc from its template, the directories filled in (checked above: no sed metacharacters but '.')
make_pc() {
    sed -e "s|@PREFIX@|$PREFIX|g" -e "s|@LIBDIR@|$LIBDIR|g" -e "s|@INCLUDEDIR@|$INCLUDEDIR|g" \
        -e "s|@VERSION@|$INCCL_VERSION|g" "$top/hostlib/inccl.pc.in"
}

if [ "$action" = install ]; then
    while IFS=$'\t' read -r mode src dst; do
        [ "$mode" = link ] || [ "$mode" = pc ] || [ -f "$src" ] || die "$src is missing: run make first"
    done < <(files)
    while IFS=$'\t' read -r mode src dst; do
        mkdir -p "$DESTDIR$(dirname "$dst")"
        case $mode in
        link) ln -sfn "$src" "$DESTDIR$dst" ;;
        pc) make_pc > "$DESTDIR$dst.tmp" && chmod 644 "$DESTDIR$dst.tmp" && mv -f "$DESTDIR$dst.tmp" "$DESTDIR$dst" ;;
        *) install -m "$mode" "$src" "$DESTDIR$dst" ;;
        esac
    done < <(files)
    echo "installed libinccl $INCCL_VERSION, inccl.h, inccl.pc, ${#TOOLS[@]} tools and the man pages under ${DESTDIR}${PREFIX}"
    # the loader's cache knows the new library at once (only the real root, only root may)
    if [ -z "$DESTDIR" ] && [ "$(id -u)" = 0 ] && command -v ldconfig >/dev/null; then ldconfig; fi
else
    while IFS=$'\t' read -r mode src dst; do
        rm -f "$DESTDIR$dst"
    done < <(files)
    echo "removed libinccl $INCCL_VERSION, its tools and man pages from ${DESTDIR}${PREFIX}"
fi
