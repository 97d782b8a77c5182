#!/usr/bin/env bash
# test-install.sh — libinccl installs and links like a distribution's
# library. `make install` into temporary DESTDIRs (the default PREFIX, and
# PREFIX/LIBDIR of this test's choosing), then, against what was installed:
#  - the shared library's SONAME is libinccl.so.MAJOR and its file
#    libinccl.so.MAJOR.MINOR.PATCH, with the version read here from inccl.h;
#    libinccl.so.MAJOR and libinccl.so are links to it; the static library
#    is there;
#  - the shared library exports exactly the calls inccl.h declares (parsed
#    from the header, so a new call shows up here) and nothing else;
#  - every such call has a section 3 page (its own or a link to a page whose
#    NAME line lists it), every installed tool a section 1 page, each page
#    lint-clean for mandoc -Tlint and groff -ww, and each tool's page
#    documents exactly the options its source parses;
#  - the examples (hostlib/examples/) compile and link through pkg-config
#    against the installed copy (PKG_CONFIG_PATH and PKG_CONFIG_SYSROOT_DIR
#    in the DESTDIR), shared and --static; each run prints the header's
#    version and the library's, which must both be inccl.h's; the AllReduce
#    example, run as rank 0 of 1 against the installed incctl on loopback,
#    fails cleanly (exit 1, a message naming the missing RDMA device: this
#    machine has none);
#  - make uninstall removes every file it laid down.
# Needs a C compiler, pkg-config, mandoc and groff (lab/packages.host);
# about 5 s. Runs in tests/lib/harness.sh. BUILD: make's build directory.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/lib/harness.sh
harness_begin test-install "install library man examples uninstall"
top=$PWD
: "${BUILD:=$top/build}"
BUILD=$(cd "$BUILD" && pwd)
tmp=$(mktemp -d)
pids=()
gone() {
    local p
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
    rm -rf "$tmp"
}
harness_on_exit gone

# The version, read from the header independently of the Makefile's reading.
ver() { sed -n "s/^#define INCCL_VERSION_$1 \([0-9][0-9]*\)\$/\1/p" hostlib/inccl.h; }
MAJOR=$(ver MAJOR) MINOR=$(ver MINOR) PATCH=$(ver PATCH)
VERSION=$MAJOR.$MINOR.$PATCH
SONAME=libinccl.so.$MAJOR REAL=libinccl.so.$VERSION
TOOLS="inccl_perf inccl_check incctl incswitch topogen increport"

# The public calls: every declaration of inccl.h that is exported (INCCL_API).
calls=$(sed -n 's/^INCCL_API[^(]*[^A-Za-z0-9_(]\([A-Za-z_][A-Za-z0-9_]*\)(.*/\1/p' hostlib/inccl.h | sort)
# a prototype that lacks INCCL_API would be missing from the library: none may
unmarked=$(grep -E '^[A-Za-z].*[^A-Za-z0-9_]inccl_[a-z0-9_]+\(' hostlib/inccl.h | grep -v '^INCCL_API' || true)

# ---------------------------------------------------------------------------
phase install "make install into two DESTDIRs"
check "inccl.h declares version $VERSION and some calls ($(echo $calls | wc -w))" \
    sh -c '[ -n "$1" ] && [ -n "$2" ] && [ "$(echo "$1" | grep -cxE "[0-9]+\.[0-9]+\.[0-9]+")" = 1 ]' _ "$VERSION" "$calls"
check "every prototype in inccl.h is marked INCCL_API${unmarked:+: not $unmarked}" test -z "$unmarked"
make --no-print-directory -C "$top" install BUILD="$BUILD" DESTDIR="$tmp/a" > "$tmp/a.log" 2>&1
check "make install DESTDIR=… (default PREFIX): $(tail -n 1 "$tmp/a.log")" \
    test -f "$tmp/a/usr/local/lib/$REAL" -a -f "$tmp/a/usr/local/include/inccl.h" -a -f "$tmp/a/usr/local/bin/incctl" \
    -a -f "$tmp/a/usr/local/lib/pkgconfig/inccl.pc" -a -f "$tmp/a/usr/local/share/man/man3/inccl_allreduce.3"
D=$tmp/b P=/opt/inccl L=/opt/inccl/lib64
make --no-print-directory -C "$top" install BUILD="$BUILD" DESTDIR="$D" PREFIX="$P" LIBDIR="$L" > "$tmp/b.log" 2>&1
check "make install DESTDIR=… PREFIX=$P LIBDIR=$L: $(tail -n 1 "$tmp/b.log")" \
    test -f "$D$L/$REAL" -a -f "$D$P/include/inccl.h" -a -f "$D$P/bin/inccl_perf" -a -f "$D$L/pkgconfig/inccl.pc" \
    -a ! -e "$D/usr/local"
make --no-print-directory -C "$top" install BUILD="$BUILD" DESTDIR="$tmp/c" PREFIX='/opt/x y' > "$tmp/c.log" 2>&1
check "a PREFIX with a space is refused, nothing installed: $(grep -m 1 '^install.sh:' "$tmp/c.log" | cut -c1-100)" \
    sh -c '! grep -q "^installed" "$1" && grep -q "PREFIX=" "$1" && [ ! -e "$2" ]' _ "$tmp/c.log" "$tmp/c"

# ---------------------------------------------------------------------------
phase library "SONAME, links, exported symbols"
lib=$D$L
check "SONAME of $REAL is $SONAME" sh -c 'readelf -d "$1" | grep -q "(SONAME).*\[$2\]"' _ "$lib/$REAL" "$SONAME"
check "$REAL is a file, $SONAME -> $REAL, libinccl.so -> $SONAME" \
    sh -c '[ -f "$1/$2" ] && [ ! -L "$1/$2" ] && [ "$(readlink "$1/$3")" = "$2" ] && [ "$(readlink "$1/libinccl.so")" = "$3" ]' \
    _ "$lib" "$REAL" "$SONAME"
check "the build directory has the same links" \
    sh -c '[ "$(readlink "$1/$3")" = "$2" ] && [ "$(readlink "$1/libinccl.so")" = "$3" ]' _ "$BUILD" "$REAL" "$SONAME"
check "libinccl.a is installed and defines inccl_version" \
    sh -c 'nm "$1/libinccl.a" 2>/dev/null | grep -q " T inccl_version$"' _ "$lib"
nm -D --defined-only "$lib/$REAL" | awk '{print $NF}' | sort > "$tmp/exported"
echo "$calls" > "$tmp/declared"
check "exported dynamic symbols = the calls of inccl.h ($(wc -l < "$tmp/exported") symbols)$(diff "$tmp/declared" "$tmp/exported" | grep '^[<>]' | tr '\n' ' ' | sed 's/^./: &/')" \
    cmp -s "$tmp/declared" "$tmp/exported"

# ---------------------------------------------------------------------------
phase man "a page for every call and tool, lint-clean, the tools' real options"
man=$D$P/share/man
# names a page documents: its NAME line (the same reader make install uses)
names() { "$top/man/names.sh" "$1" | cut -d' ' -f2; }
missing="" unnamed=""
for c in $calls; do
    f=$man/man3/$c.3
    if [ ! -e "$f" ]; then missing="$missing $c"; continue; fi
    names "$(readlink -f "$f")" | grep -qx "$c" || unnamed="$unnamed $c"
done
check "every call of inccl.h has a section 3 page${missing:+; none for:$missing}" test -z "$missing"
check "and that page's NAME line lists it${unnamed:+; not for:$unnamed}" test -z "$unnamed"
missing=""
for t in $TOOLS; do
    [ -x "$D$P/bin/$t" ] || missing="$missing $t(binary)"
    [ -f "$man/man1/$t.1" ] || missing="$missing $t"
done
check "every tool is installed with its section 1 page${missing:+; missing:$missing}" test -z "$missing"
bad=""
for f in "$man"/man1/*.1 "$man"/man3/*.3; do
    [ -L "$f" ] && continue
    out=$(mandoc -Tlint "$f" 2>&1; groff -man -Tutf8 -ww -z "$f" 2>&1)
    [ -z "$out" ] || { bad="$bad $(basename "$f")"; echo "$out" | head -n 5 | sed 's/^/    /'; }
done
check "mandoc -Tlint and groff -man -ww say nothing of any page${bad:+; they warn of:$bad}" test -z "$bad"
check "man -l renders a linked page (inccl_reduce.3)" \
    sh -c 'MANWIDTH=80 man -l "$1" 2>/dev/null | grep -q "inccl_reduce"' _ "$man/man3/inccl_reduce.3"

# The options each tool's source parses, against the options its page lists
# (the tags of the OPTIONS section: "-X" and "--long").
src_opts() {
    case $1 in
    inccl_check) f=hostlib/tools/inccl_check.c ;;
    incctl) f=controller/incctl.c ;;
    incswitch) f=switch/incswitch.c ;;
    inccl_perf)
        sed -n 's/^#define VALUE_FLAGS "\([A-Za-z]*\)".*/\1/p' hostlib/tools/perf_opts.c | grep -o . | sed 's/^/-/'
        grep -o 'strcmp(arg, "-[A-Za-z-]*")' hostlib/tools/perf_opts.c | grep -o '"[^"]*"' | tr -d '"'
        return ;;
    topogen)
        sed -n 's/.*getopt_long(argc, argv, "\([^"]*\)".*/\1/p' topology/topogen.c | tr -d ':' | grep -o . | sed 's/^/-/'
        sed -n '/struct option lo\[\]/,/};/p' topology/topogen.c | grep -o '{ "[a-z-]*"' | sed 's/{ "/--/; s/"$//'
        return ;;
    *) return ;;
    esac
    sed -n 's/.*getopt(argc, argv, "\([^"]*\)").*/\1/p' "$f" | tr -d ':' | grep -o . | sed 's/^/-/'
}
page_opts() {
    awk '/^\.SH / { o = ($0 ~ /^\.SH OPTIONS/) } o && tag { print; tag = 0 } o && /^\.TP/ { tag = 1 }' "$1" |
        sed 's/\\-/-/g' | grep -oE '(^|[ "])(--[a-z][a-z-]*|-[A-Za-z])' | tr -d ' "'
}
for t in $TOOLS; do
    src_opts "$t" | sort -u > "$tmp/src.$t"
    [ -s "$tmp/src.$t" ] || continue # increport: subcommands, no options
    page_opts "$man/man1/$t.1" | sort -u > "$tmp/page.$t"
    check "$t.1 documents exactly the options of its source ($(wc -l < "$tmp/src.$t"))$(diff "$tmp/src.$t" "$tmp/page.$t" | grep '^[<>]' | sed 's/^</ not in the page:/; s/^>/ not in the source:/' | tr '\n' ' ')" \
        cmp -s "$tmp/src.$t" "$tmp/page.$t"
done

# ---------------------------------------------------------------------------
phase examples "built through pkg-config against the installed copy"
export PKG_CONFIG_PATH=$D$L/pkgconfig PKG_CONFIG_SYSROOT_DIR=$D
unset PKG_CONFIG_LIBDIR LIBRARY_PATH CPATH C_INCLUDE_PATH LD_LIBRARY_PATH
check "pkg-config: inccl $(pkg-config --modversion inccl 2>&1); inccl.pc names prefix $P, libdir $L (no DESTDIR)" \
    sh -c '[ "$(pkg-config --modversion inccl)" = "$1" ] && grep -qx "prefix=$2" "$4" && grep -qx "libdir=$3" "$4" &&
           grep -qx "includedir=$2/include" "$4"' _ "$VERSION" "$P" "$L" "$D$L/pkgconfig/inccl.pc"
cflags=$(pkg-config --cflags inccl) libs=$(pkg-config --libs inccl) slibs=$(pkg-config --static --libs inccl)
echo "    cflags: $cflags"
echo "    libs: $libs"
echo "    static: $slibs"
want="header $VERSION, library $VERSION"
for ex in version allreduce; do
    # shellcheck disable=SC2086 # pkg-config's output is a list of words
    check "$ex.c compiles and links: cc \$(pkg-config --cflags --libs inccl)" \
        cc -std=c11 -Wall -Wextra -Werror -o "$tmp/$ex" "hostlib/examples/$ex.c" $cflags $libs
    # the static library, with what --static adds for it (Requires.private)
    # shellcheck disable=SC2086
    check "$ex.c links the static library with \$(pkg-config --static --libs inccl)" \
        cc -std=c11 -Wall -Wextra -Werror -o "$tmp/$ex-static" "hostlib/examples/$ex.c" $cflags \
        ${slibs/-linccl/-l:libinccl.a}
done
check "the shared example needs $SONAME, the static one no libinccl" \
    sh -c 'readelf -d "$1" | grep -q "(NEEDED).*\[$3\]" && ! readelf -d "$2" | grep -q "(NEEDED).*libinccl"' \
    _ "$tmp/version" "$tmp/version-static" "$SONAME"
LD_LIBRARY_PATH=$lib LD_TRACE_LOADED_OBJECTS=1 "$tmp/version" > "$tmp/ldd" 2>&1
check "it loads the installed $SONAME: $(grep -o "$SONAME => [^ ]*" "$tmp/ldd")" \
    grep -q "$SONAME => $lib/$SONAME " "$tmp/ldd"
out=$(LD_LIBRARY_PATH=$lib "$tmp/version" 2>&1); rc=$?
check "version (shared) says '$out', exit $rc; want '$want'" test "$rc:$out" = "0:$want"
out=$("$tmp/version-static" 2>&1); rc=$?
check "version (static) says '$out', exit $rc" test "$rc:$out" = "0:$want"

# The AllReduce example as rank 0 of 1: the installed incctl on loopback
# (ports the kernel picks), rank 0's port held for the test as test_ctl
# holds it (bound with SO_REUSEADDR, never listening). The group forms;
# the communicator needs an RDMA device, which this machine lacks.
python3 -c 'import socket, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("0.0.0.0", 0))
print(s.getsockname()[1], flush=True); time.sleep(120)' > "$tmp/port" &
pids+=($!)
"$D$P/bin/incctl" -t topology/1-2-4.yaml -s 0 -g 0 -K none > "$tmp/ctl.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do # up to 10 s for both to say their ports
    grep -q 'groups on TCP' "$tmp/ctl.log" && [ -s "$tmp/port" ] && break
    sleep 0.1
done
gport=$(sed -n 's/.*groups on TCP \([0-9]*\).*/\1/p' "$tmp/ctl.log" | head -n 1) mport=$(head -n 1 "$tmp/port")
check "the installed incctl listens (groups on TCP ${gport:-?}), rank 0's port held (${mport:-?})" \
    test -n "$gport" -a -n "$mport"
INCCL_MASTER=127.0.0.1:$mport INCCL_CONTROLLER=127.0.0.1:$gport LD_LIBRARY_PATH=$lib timeout 60 "$tmp/allreduce" 0 1 \
    > "$tmp/ar.out" 2> "$tmp/ar.err"; rc=$?
check "allreduce 0 1 without an RDMA device: exit $rc (want 1), '$(head -n 1 "$tmp/ar.err")'" \
    sh -c '[ "$1" = 1 ] && grep -q "no RDMA device .rxe0." "$2" && ! [ -s "$3" ]' _ "$rc" "$tmp/ar.err" "$tmp/ar.out"
check "the controller saw the group form and end" \
    sh -c 'grep -q "group [0-9]*: 1 ranks" "$1" && grep -q "group [0-9]* ended" "$1"' _ "$tmp/ctl.log"
timeout 60 "$tmp/allreduce-static" 0 > /dev/null 2> "$tmp/ar2.err"; rc=$?
check "allreduce with a missing argument: exit $rc (want 2), usage" \
    sh -c '[ "$1" = 2 ] && grep -q "^usage: allreduce" "$2"' _ "$rc" "$tmp/ar2.err"

# ---------------------------------------------------------------------------
phase uninstall "make uninstall leaves no file"
make --no-print-directory -C "$top" uninstall BUILD="$BUILD" DESTDIR="$D" PREFIX="$P" LIBDIR="$L" > "$tmp/u.log" 2>&1
left=$(find "$D" ! -type d | sed "s|^$D||" | head -n 5 | tr '\n' ' ')
check "make uninstall removed every file and link${left:+; left: $left}" test -z "$left"

harness_end
