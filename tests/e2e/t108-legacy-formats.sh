#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The legacy profiles of pprof's test data (tests/fixtures/pprof/legacy/)
# through every command that reads profiles: kiln top, flame and convert
# read each one, and `go tool pprof` reads what convert wrote with the
# same sample types.  Then bad input: exit 2 with the file, the format it
# was read as and the line; a legacy extension is refused as an output.
. "$(dirname "$0")/lib.sh"

L=$KILN_SRC/tests/fixtures/pprof/legacy
# file:format:sample type kiln top shows by default (the last, as pprof)
for c in cppbench.heap:legacy-heap:space cppbench.growth:legacy-heap:space \
         cppbench.contention:legacy-contention:delay \
         cppbench.thread:legacy-thread:thread go.godoc.thread:legacy-count:threadcreate \
         gobench.heap:legacy-heap:inuse_space java.heap:legacy-java:inuse_space \
         java.contention:legacy-java:delay java.cpu:gperftools:cpu; do
    IFS=: read -r f fmt type <<<"$c"
    expect_status 0 "$KILN" top --no-local-symbols "$L/$f"
    has "$T/out" "^Type: $type$"
    expect_status 0 "$KILN" flame --no-local-symbols "$L/$f" -o "$T/$f.svg"
    has "$T/$f.svg" "<svg"
    expect_status 0 "$KILN" convert --no-local-symbols "$L/$f" -o "$T/$f.pb.gz"
    if command -v go >/dev/null 2>&1; then
        HOME=$T GOCACHE=$T/go go tool pprof -top "$T/$f.pb.gz" >"$T/pprof" 2>&1 ||
            { cat "$T/pprof" >&2; fail "go tool pprof cannot read kiln's $f"; }
        has "$T/pprof" "^Type: $type$"
    fi
done
# The Java names, file and line.
expect_status 0 "$KILN" convert "$L/java.heap" -o "$T/java.collapsed"
has "$T/java.collapsed" "com\.example\.function"

# A bad sample line: the file, the format, the line.
{ sed -n 1,3p "$L/cppbench.heap"; echo "  1: 2 [ 1: 2 @ 0x10"; } >"$T/bad.heap"
expect_status 2 "$KILN" top "$T/bad.heap"
has "$T/err" "^kiln: '.*bad.heap': read as legacy-heap: line 4: heap profile: expected"
{ sed -n 1,5p "$L/cppbench.contention"; echo "zz 3 @ 0x1"; } >"$T/bad.contention"
expect_status 2 "$KILN" convert "$T/bad.contention" -o "$T/x.pb.gz"
has "$T/err" "read as legacy-contention: line 6: "
[ ! -e "$T/x.pb.gz" ] || fail "output written for bad input"

# Read, not written.
expect_status 2 "$KILN" convert "$L/cppbench.heap" -o "$T/out.heap"
has "$T/err" "legacy-heap"
[ ! -e "$T/out.heap" ] || fail "a .heap file was written"
echo ok
