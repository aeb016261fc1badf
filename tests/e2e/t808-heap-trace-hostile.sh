#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan
# The hostile program (fork, exec, 1000 threads, dlopen/dlclose, malloc
# storms, its own SIGPROF handler) prints the same with the heap tracer,
# in both modes, and leaves valid traces; an unwritable trace path is
# reported and changes nothing else.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/heaplib.sh"

same_output "$WL/hostile" "$WL/libplugin.so"
heapcheck "$T/h.trace" "$WL/hostile"
has "$T/check.txt" "^site malloc_storm "
for f in "$T"/h.trace.*; do
    [ -e "$f" ] || continue
    python3 "$KILN_SRC/tests/e2e/heapcheck.py" "$f" > /dev/null || fail "bad child trace $f"
done
rm -f "$T"/h.trace*
HEAP_ENV=KILN_HEAP_SAMPLE=65536 same_output "$WL/hostile" "$WL/libplugin.so"
heapcheck "$T/h.trace" "$WL/hostile"

rc=0
LD_PRELOAD=$KILN_HEAP_PRELOAD KILN_HEAP_TRACE=/nonexistent/dir/h.trace "$WL/heapbasic" \
    > "$T/nodir.txt" 2> "$T/nodir.err" || rc=$?
[ $rc -eq 0 ] || fail "exit status $rc with an unwritable trace"
"$WL/heapbasic" > "$T/bare2.txt"
diff -u "$T/bare2.txt" "$T/nodir.txt" || fail "output changed"
has "$T/nodir.err" "cannot write the heap trace '/nonexistent/dir/h.trace': No such file or directory"
echo ok
