/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Workload for kiln diff: a fixed mix of work in cost_a, cost_b and
 * cost_c (2 : 1 : 1 by default), the cost of cost_c tunable, so that a
 * "new version" whose one function is slower can be recorded beside the
 * "base" one.  Runs for SECONDS of its own CPU time.
 * Usage: diffcost [SECONDS [C_COST]]   (defaults 1 and 1: C_COST 2 makes
 * cost_c twice as slow; its share goes from 25% to 40%)
 */
#include <stdlib.h>
#include <time.h>

volatile unsigned long sink;

/* The loop written out in each function (a helper, even inlined, would
 * be the leaf frame: kiln names inlined frames). */
#define SPIN(count)							\
	do {								\
		unsigned long i_, x_ = sink, n_ = (count);		\
									\
		for (i_ = 0; i_ < n_; i_++)				\
			x_ = x_ * 6364136223846793005ul +		\
			     1442695040888963407ul;			\
		sink = x_;						\
	} while (0)

__attribute__((noinline)) void cost_a(unsigned long n) { SPIN(n * 2); }
__attribute__((noinline)) void cost_b(unsigned long n) { SPIN(n); }
__attribute__((noinline)) void cost_c(unsigned long n, double cost)
{
	SPIN((unsigned long)((double)n * cost));
}

static double cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void run(double seconds, double cost)
{
	double start = cpu_seconds();

	/* Small rounds: a slow stretch of the machine hits all three. */
	while (cpu_seconds() - start < seconds) {
		cost_a(100000);
		cost_b(100000);
		cost_c(100000, cost);
	}
}

int main(int argc, char **argv)
{
	run(argc > 1 ? atof(argv[1]) : 1.0, argc > 2 ? atof(argv[2]) : 1.0);
	return 0;
}
