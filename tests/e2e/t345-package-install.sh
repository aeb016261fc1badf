#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan
# make install's rules (cmake --install) into another prefix: the tree is
# relocatable.  kiln runs from PREFIX/bin and finds PREFIX/lib/libkiln.so
# (kiln record --mode inject) with no KILN_AGENT; the pkg-config files
# name PREFIX; man finds the pages through PREFIX/share/man; the
# completion files are where bash-completion and zsh look.  Moved
# elsewhere after installing, it still runs.  noasan: it preloads what
# it built.
. "$(dirname "$0")/lib.sh"
need_agent
need cmake

p=$T/opt/kiln
cmake --install "$KILN_BUILD" --prefix "$p" > "$T/install.log" 2>&1 ||
    { cat "$T/install.log" >&2; fail "cmake --install failed"; }
for f in bin/kiln lib/libkiln.so lib/libkiln-malloc.so include/kiln/kiln.h \
         lib/pkgconfig/kiln.pc share/man/man1/kiln.1.gz share/man/man7/libkiln.7.gz \
         share/bash-completion/completions/kiln share/zsh/vendor-completions/_kiln \
         share/doc/kiln/copyright; do
    [ -e "$p/$f" ] || fail "no $f installed"
done
mv "$p" "$T/moved"
p=$T/moved
(cd "$T" && env -u KILN_AGENT "$p/bin/kiln" record -q --mode inject -o "$T/i.pb.gz" -- "$WL/threads" 1) ||
    fail "kiln record --mode inject from the moved prefix"
"$p/bin/kiln" top -n 0 "$T/i.pb.gz" > "$T/i.top"
has "$T/i.top" " spin_[ab]$"
if command -v pkg-config > /dev/null; then
    libs=$(PKG_CONFIG_LIBDIR=$p/lib/pkgconfig pkg-config --libs kiln) || fail "pkg-config kiln"
    case $libs in "-L$p/lib/pkgconfig/../../lib -lkiln"*) ;; *) fail "pkg-config --libs kiln says '$libs'" ;; esac
fi
if command -v man > /dev/null; then
    MANPATH=$p/share/man man -w kiln-record > "$T/where" || fail "man -w kiln-record"
    has "$T/where" "^$p/share/man/man1/kiln-record\.1\.gz$"
fi
echo ok
