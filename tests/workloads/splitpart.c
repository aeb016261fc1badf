/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Workload: CPU time in a function whose tail GCC's partial inlining
 * splits off (split_work.part.0) and then inlines back into it: its
 * DWARF says split_work is inlined into split_work, at split_work's own
 * declaration line, around the loop, as glibc's write() is __libc_write
 * inlined into __libc_write around its system call.  kiln names that
 * one frame, split_work (docs/symbols.md).  The workloads are built with
 * -O1 -fno-inline: the attribute asks for the optimizations that do it
 * (GCC; other compilers build it without them).
 * Usage: splitpart [SECONDS]   (default 1)
 */
#include <stdlib.h>
#include <time.h>

volatile int fast;		/* 0: every call takes the split-off path */
volatile unsigned long sink;

__attribute__((noinline)) void split_enter(void)
{
	sink++;
}

__attribute__((noinline)) void split_leave(void)
{
	sink--;
}

#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("O2", "inline", "partial-inlining",
			"inline-functions-called-once")))
#endif
unsigned long split_work(unsigned long n)
{
	unsigned long i, x;

	if (fast)
		return n;
	split_enter();
	x = sink;
	/* One line: every address of the loop is at it. */
	for (i = 0; i < n; i++) x = x * 6364136223846793005ul + 1; /* SPLIT-LINE */
	split_leave();
	return x;
}

/* Called through a pointer: split_work is not inlined into main. */
unsigned long (*volatile split_fn)(unsigned long) = split_work;

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 1.0;
	struct timespec ts;

	do {
		sink += split_fn(1000000);
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	} while ((double)ts.tv_sec + (double)ts.tv_nsec / 1e9 < seconds);
	return 0;
}
