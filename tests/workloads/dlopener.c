/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Workload: burns in host_burn for a while, then dlopens LIBRARY, calls
 * its plugin_burn(SECONDS), dlcloses it, and burns again.
 * Usage: dlopener LIBRARY [SECONDS]
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

volatile unsigned long dl_sink;

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void host_burn(double s)
{
	double t0 = cpu_now();

	while (cpu_now() - t0 < s)
		for (int i = 0; i < 10000; i++)
			dl_sink += (unsigned long)i;
}

int main(int argc, char **argv)
{
	double s = argc > 2 ? atof(argv[2]) : 1.0;
	void (*burn)(double);
	void *h;

	if (argc < 2) {
		fprintf(stderr, "usage: dlopener LIBRARY [SECONDS]\n");
		return 2;
	}
	host_burn(s / 2);
	h = dlopen(argv[1], RTLD_NOW);
	if (!h) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}
	burn = (void (*)(double))dlsym(h, "plugin_burn");
	if (!burn)
		return 1;
	burn(s);
	dlclose(h);
	host_burn(s / 2);
	return 0;
}
