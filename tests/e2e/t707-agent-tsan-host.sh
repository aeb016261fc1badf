#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan serial
# The hostile program built with ThreadSanitizer, profiled by the agent
# (the TSan runtime preloaded first): no TSan report, a profile, and the
# same output as without the agent -- but for the line about its own
# SIGPROF ticks: TSan holds asynchronous signals back until the program
# calls into its runtime, so whether a tight loop sees one is chance, with
# or without kiln (tests/workloads/hostile.c; a plain TSan run shows it).
. "$(dirname "$0")/lib.sh"
need_agent
need gcc
tsan=$(gcc -print-file-name=libtsan.so)
[ -e "$tsan" ] || skip "gcc has no libtsan.so"
gcc -O1 -g -fsanitize=thread -o "$T/hostile-tsan" "$KILN_SRC/tests/workloads/hostile.c" \
    -ldl -lpthread 2>"$T/gcc.err" || skip "cannot build with -fsanitize=thread: $(head -1 "$T/gcc.err")"
"$T/hostile-tsan" "$WL/libplugin.so" > "$T/bare.txt" 2>"$T/bare.err" ||
    skip "the TSan build does not run here: $(head -1 "$T/bare.err")"
# Two reports are TSan's blind spot, suppressed by name: the agent's
# note_one() (src/cpu/modules.c) and the unwinder's same_object()
# (src/unwind/cfiint.h) read each library's name inside dl_iterate_phdr's
# callback, under the loader's lock, which TSan does not see, against the
# strdup() dlopen made of it before taking that lock to publish the
# library; they come and go with the length of the plugin's path (the
# build folder's).
printf 'race:note_one\nrace:same_object\n' > "$T/tsan.supp"
TSAN_OPTIONS="suppressions=$T/tsan.supp" \
LD_PRELOAD="$tsan $KILN_LIB" KILN_CPU=$T/h.pb.gz KILN_CPU_HZ=250 \
    "$T/hostile-tsan" "$WL/libplugin.so" > "$T/agent.txt" 2> "$T/agent.err" ||
    { cat "$T/agent.err"; fail "the TSan build fails under the agent"; }
grep -v '^own SIGPROF' "$T/bare.txt" > "$T/bare.cmp"
grep -v '^own SIGPROF' "$T/agent.txt" > "$T/agent.cmp"
diff -u "$T/bare.cmp" "$T/agent.cmp" || fail "the output changed under the agent"
has "$T/agent.txt" "^own SIGPROF: (ticked|silent)$"
hasnt "$T/agent.err" "ThreadSanitizer"
has "$T/agent.err" "steps aside"
"$KILN" top -n 0 "$T/h.pb.gz" > "$T/top.txt"
has "$T/top.txt" "malloc_storm"
echo ok
