#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan
# The Debian package (make deb = CPack's DEB generator over this build):
# dpkg -I lists Depends computed from the ELF files; unpacked with dpkg -x
# into a temporary root, it runs from there with no build-tree path in it:
# kiln --version (version and commit), kiln record --mode inject and kiln
# heap (kiln finds libkiln.so and libkiln-malloc.so in ../lib from its own
# executable), pkg-config through the relocatable .pc files; every manual
# page renders with man -l; lintian finds no error.  noasan: it packages
# and preloads what it built (an ASan build is no package).
. "$(dirname "$0")/lib.sh"
need_agent
need cpack
need dpkg-deb
need dpkg-shlibdeps
[ -f "$KILN_BUILD/CPackConfig.cmake" ] || skip "no CPackConfig.cmake in the build"

# Packaged from the build as it is (the install rules, no rebuild).
(cd "$T" && cpack -G DEB --config "$KILN_BUILD/CPackConfig.cmake" -B "$T/pkg" > cpack.log 2>&1) ||
    { cat "$T/cpack.log" >&2; fail "cpack -G DEB failed"; }
deb=$(ls "$T"/pkg/kiln_*_amd64.deb 2>/dev/null | head -1)
[ -n "$deb" ] || fail "no kiln_VERSION_amd64.deb in $T/pkg"
version=$(dpkg-deb -f "$deb" Version)
[ "$(basename "$deb")" = "kiln_${version}_amd64.deb" ] || fail "name $(basename "$deb") for version $version"
dpkg-deb -I "$deb" > "$T/info"
# Computed by dpkg-shlibdeps: with versions, from what the files link.
has "$T/info" "^ Depends: .*libc6 \(>= "
has "$T/info" "^ Depends: .*libdw1 \(>= "
has "$T/info" "^ Depends: .*libprotobuf-c1"
# Loaded on first use, not linked (cmake/lazylib.cmake): found by
# dpkg-query from the files the build used.
has "$T/info" "^ Depends: .*libgvc6"
has "$T/info" "^ Depends: .*libcurl4"
has "$T/info" "^ Depends: .*libcapstone4"
has "$T/info" "^ Depends: .*libmicrohttpd12"
has "$T/info" "triggers"
dpkg-deb -c "$deb" > "$T/list"
for f in usr/bin/kiln usr/lib/libkiln.so usr/lib/libkiln-malloc.so usr/include/kiln/kiln.h \
         usr/lib/pkgconfig/kiln.pc usr/lib/pkgconfig/kiln-malloc.pc \
         usr/share/man/man1/kiln.1.gz usr/share/man/man1/kiln-record.1.gz \
         usr/share/man/man7/libkiln.7.gz usr/share/bash-completion/completions/kiln \
         usr/share/zsh/vendor-completions/_kiln usr/share/doc/kiln/copyright; do
    has "$T/list" " \./$f\$"
done
# One page per command of the table.
for c in $("$KILN" help --complete commands); do
    [ "$c" = help ] || has "$T/list" " \./usr/share/man/man1/kiln-$c\.1\.gz\$"
done

root=$T/root
dpkg-deb -x "$deb" "$root"
k=$root/usr/bin/kiln
# No build-tree path baked into anything installed.
if grep -rlF "$KILN_BUILD" "$root" > "$T/paths"; then
    cat "$T/paths" >&2; fail "build-tree paths in the package"
fi
env -u KILN_AGENT "$k" --version > "$T/version" || fail "kiln --version"
has "$T/version" "^kiln $version \(commit ([0-9a-f]{12}(-dirty)?|unknown)\)\$"
if git -C "$KILN_SRC" rev-parse HEAD > /dev/null 2>&1; then
    hasnt "$T/version" "unknown"
fi

# The agent found beside the unpacked kiln, not in the build tree.
(cd "$T" && env -u KILN_AGENT "$k" record -q --mode inject -o "$T/i.pb.gz" -- "$WL/threads" 1) ||
    fail "kiln record --mode inject from the package"
"$k" top -n 0 "$T/i.pb.gz" > "$T/i.top"
has "$T/i.top" " spin_[ab]$"
(cd "$T" && env -u KILN_AGENT "$k" heap -q -o "$T/h" -- "$WL/heapbasic" > "$T/h.out" 2> "$T/h.err") ||
    { cat "$T/h.err" >&2; fail "kiln heap from the package"; }
has "$T/h.err" "^total memory leaked: [0-9]+ \(24\.0 KiB\) in 6 blocks$"
has "$T/h.err" "leak_here"

# pkg-config: the unpacked .pc files point into the unpacked tree.
if command -v pkg-config > /dev/null; then
    cflags=$(PKG_CONFIG_PATH=$root/usr/lib/pkgconfig PKG_CONFIG_LIBDIR=$root/usr/lib/pkgconfig \
             pkg-config --cflags --libs kiln-malloc) || fail "pkg-config kiln-malloc"
    case $cflags in *"$root/usr/lib/pkgconfig/../../include"*) ;; *) fail "pkg-config says '$cflags'" ;; esac
    case $cflags in *-lkiln-malloc*-lkiln*) ;; *) fail "pkg-config libs '$cflags'" ;; esac
fi

# Every page renders, with no warning from groff.
need man
for p in "$root"/usr/share/man/man*/*.gz; do
    MANWIDTH=80 man --warnings -l "$p" > "$T/page" 2> "$T/page.err" || fail "man -l $p"
    [ -s "$T/page.err" ] && { cat "$T/page.err" >&2; fail "man -l $p warns"; }
    [ "$(wc -l < "$T/page")" -gt 10 ] || fail "$p is nearly empty"
done

if command -v lintian > /dev/null; then
    lintian --allow-root "$deb" > "$T/lintian" 2>&1 || true
    if grep -q "^E: " "$T/lintian"; then cat "$T/lintian" >&2; fail "lintian errors"; fi
    hasnt "$T/lintian" "^E: "
else
    echo "lintian is not installed: not run" >&2
fi
echo ok
