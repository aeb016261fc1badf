/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Workload with a known call graph, for kiln callgraph's tests.  Of its
 * CPU time, about:
 *   main -> compute -> fib -> fib -> fib (recursion)    40%  (fib self)
 *   main -> compute -> helper                           20%  (helper self)
 *   main -> render -> helper                            15%  (helper self)
 *   main -> render                                      10%  (render self)
 *   main -> parse -> lex                                10%  (lex self)
 *   main -> parse                                        5%  (parse self)
 * so helper (35% self) is reached from two callers, and fib calls itself.
 * Usage: callgraph [SECONDS]   (default 2)
 */
#include <stdlib.h>
#include <time.h>

volatile unsigned long sink;

/* Each function spins in its own body, so its own frame is the leaf. */
#define SPIN(n)                                                          \
	do {                                                             \
		unsigned long i_, x_ = sink;                             \
		for (i_ = 0; i_ < (n); i_++)                             \
			x_ = x_ * 6364136223846793005ul + 1442695040888963407ul; \
		sink = x_;                                               \
	} while (0)

__attribute__((noinline)) void helper(unsigned long n) { SPIN(n); }
__attribute__((noinline)) void lex(unsigned long n) { SPIN(n); }

__attribute__((noinline)) void fib(int depth, unsigned long n)
{
	if (depth > 0)
		fib(depth - 1, n);
	else
		SPIN(n);
	sink++;
}

__attribute__((noinline)) void compute(unsigned long n)
{
	fib(2, n * 40);
	helper(n * 20);
	sink++;
}

__attribute__((noinline)) void render(unsigned long n)
{
	helper(n * 15);
	SPIN(n * 10);
}

__attribute__((noinline)) void parse(unsigned long n)
{
	lex(n * 10);
	SPIN(n * 5);
}

static double cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 2;
	double start = cpu_seconds();

	while (cpu_seconds() - start < seconds) {
		compute(20000);
		render(20000);
		parse(20000);
	}
	return 0;
}
