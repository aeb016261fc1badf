#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Libraries only some commands use are loaded on first use (issue 27
# item 7, src/util/lazylib.h): `kiln top` of a small pprof loads neither
# graphviz, libcurl, capstone nor libmicrohttpd (their ~30 libraries cost every command
# ~3 ms of relocation before); `kiln callgraph` loads graphviz and draws,
# `kiln doctor` loads capstone and judges frame pointers.  The loader's
# own trace (LD_DEBUG=files) says what was loaded.
. "$(dirname "$0")/lib.sh"

prof=$KILN_SRC/tests/fixtures/pprof/go-cpu.pb.gz
lazy='file=lib(gvc|cgraph|curl|capstone|microhttpd|gnutls)\.so'

LD_DEBUG=files "$KILN" top "$prof" > "$T/top.txt" 2> "$T/top.ld" ||
    fail "kiln top failed"
has "$T/top.txt" "flat%"
hasnt "$T/top.ld" "$lazy"

LD_DEBUG=files "$KILN" callgraph "$prof" -o "$T/g.svg" 2> "$T/cg.ld" ||
    fail "kiln callgraph failed"
has "$T/g.svg" "<svg"
has "$T/cg.ld" "file=libgvc\.so"
hasnt "$T/cg.ld" "file=lib(curl|capstone)\.so"

# (doctor exits 1 when a check finds a problem on this machine.)
LD_DEBUG=files "$KILN" doctor "$WL/shares" > "$T/doc.txt" 2> "$T/doc.ld" ||
    [ $? -eq 1 ] || fail "kiln doctor failed"
has "$T/doc.ld" "file=libcapstone\.so"
has "$T/doc.txt" "frame-pointers"
hasnt "$T/doc.txt" "capstone.*cannot be loaded"
echo ok
