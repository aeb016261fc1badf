#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan
# The embedding API: a program linked with -lkiln-malloc -lkiln calls
# kiln_heap_start() and kiln_heap_write(path); the profile has its
# allocations, exact with KILN_HEAP_SAMPLE=0; errors are negative errno
# values.  Linked with -lkiln alone (no malloc interposer), the heap
# functions fail with -ENOTSUP and say how to fix it; nothing else changes.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/heapdumplib.sh"
need cc

cat > "$T/embed.c" <<'C'
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <kiln/kiln.h>

static void *volatile kept[10];
void *volatile sink;

__attribute__((noinline)) void keep_ten(void)
{
	for (int i = 0; i < 10; i++)
		kept[i] = malloc(1000);
}

__attribute__((noinline)) void pass_through(void)
{
	for (int i = 0; i < 100; i++) {
		sink = malloc(300);
		free(sink);
	}
}

int main(int argc, char **argv)
{
	int a = kiln_heap_start();
	keep_ten();
	pass_through();
	if (argc > 2) {
		/* kiln's threads (the collector) started from this thread:
		 * none of kiln's allocations is this program's. */
		struct kiln_cpu_opts o = { 0, 0 };
		int s = kiln_cpu_start(&o);
		int w = kiln_cpu_stop_write(argv[2]);
		printf("cpu %d %d\n", s, w);
	}
	int b = kiln_heap_write(argv[1]);
	int c = kiln_heap_write(NULL);
	int d = kiln_heap_write("/nonexistent/dir/heap.pb.gz");
	printf("start %d write %d null %d bad %d\n", a, b, c == -EINVAL, d < 0);
	return 0;
}
C
cc -O1 -g -fno-omit-frame-pointer -fno-inline -I"$KILN_SRC/include" "$T/embed.c" \
    -L"$KILN_BUILD" -Wl,-rpath,"$KILN_BUILD" -lkiln-malloc -lkiln -o "$T/embed" ||
    fail "cannot build against libkiln"
expect_status 0 env KILN_HEAP_SAMPLE=0 "$T/embed" "$T/e.pb.gz"
has "$T/out" '^start 0 write 0 null 1 bad 1$'
hexpect "$T/e.pb.gz" inuse_space keep_ten 10000
hexpect "$T/e.pb.gz" inuse_objects keep_ten 10
hexpect "$T/e.pb.gz" alloc_objects pass_through 100
hexpect "$T/e.pb.gz" alloc_space pass_through 30000
hexpect "$T/e.pb.gz" inuse_space pass_through 0
if command -v go >/dev/null 2>&1; then
    gopprof -sample_index=inuse_space -unit=B -top "$T/e.pb.gz"
    has "$T/go.txt" '^ +10000B .* keep_ten$'
fi
# A CPU profile taken meanwhile (kiln_cpu_start and kiln_cpu_stop_write
# work on the program's thread: unwinder tables, the profile, the
# symbolizer, the collector thread's start): no allocation of kiln's in
# the heap profile (before: all of them were the program's).
expect_status 0 env KILN_HEAP_SAMPLE=0 "$T/embed" "$T/c.pb.gz" "$T/cpu.pb.gz"
has "$T/out" '^cpu 0 0$'
[ -s "$T/cpu.pb.gz" ] || fail "no CPU profile"
for ty in alloc_objects inuse_objects; do
    "$KILN" convert "$T/c.pb.gz" --sample-type $ty -o "$T/c.collapsed" || fail "kiln convert"
    hasnt "$T/c.collapsed" "kiln_"
done
hexpect "$T/c.pb.gz" inuse_objects keep_ten 10
# the default: sampling, the profile written all the same
expect_status 0 "$T/embed" "$T/s.pb.gz"
has "$T/out" '^start 0 write 0 '
[ -s "$T/s.pb.gz" ] || fail "no profile in sampling mode"

# -lkiln alone: no interposer, so no heap profile, said, and no write.
cc -O1 -g -fno-omit-frame-pointer -fno-inline -I"$KILN_SRC/include" "$T/embed.c" \
    -L"$KILN_BUILD" -Wl,-rpath,"$KILN_BUILD" -lkiln -o "$T/embed-cpu" ||
    fail "cannot build against libkiln"
nm -D --defined-only "$KILN_LIB" | awk '{ print $3 }' | grep -qx malloc &&
    fail "libkiln.so defines malloc: the interposer is not a library of its own"
expect_status 0 "$T/embed-cpu" "$T/n.pb.gz"
has "$T/out" "^start -95 write -95 null 1 bad 1$"  # -ENOTSUP
has "$T/err" "needs kiln's malloc interposer.*libkiln-malloc.so"
[ ! -e "$T/n.pb.gz" ] || fail "a heap profile was written without the interposer"
echo ok
