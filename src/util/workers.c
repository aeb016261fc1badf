/* SPDX-License-Identifier: Apache-2.0 */
/*
 * How many threads kiln's own work may use (util stage): see workers.h.
 */
#include "util/workers.h"

#include <sched.h>
#include <stdatomic.h>

static _Atomic size_t workers;

size_t kiln_workers(void)
{
	size_t n = atomic_load(&workers);
	cpu_set_t set;
	int c;

	if (n)
		return n;
	/* The CPUs this process may run on (taskset, cgroup cpusets), not
	 * the machine's. */
	if (sched_getaffinity(0, sizeof(set), &set))
		return 1;
	c = CPU_COUNT(&set);
	return c > 0 ? (size_t)c : 1;
}

void kiln_workers_set(size_t n)
{
	atomic_store(&workers, n);
}

bool kiln_workers_given(void)
{
	return atomic_load(&workers) != 0;
}
