/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Workload (C++): CPU time in a namespaced class method, a template
 * instance and an overloaded function, to test demangled names from
 * DWARF linkage names and ELF symbols.
 * Usage: cxxnames [SECONDS]   (default 1)
 */
#include <cstdlib>
#include <ctime>

namespace kiln_wl {

volatile unsigned long sink;

class Counter {
public:
	__attribute__((noinline)) unsigned long step(unsigned long n);
};

unsigned long Counter::step(unsigned long n)
{
	unsigned long x = sink;

	for (unsigned long i = 0; i < n; i++)
		x = x * 6364136223846793005ul + 1442695040888963407ul;
	return x;
}

template <typename T> __attribute__((noinline)) T twice(T v)
{
	return v + v;
}

__attribute__((noinline)) unsigned long spin(int n)
{
	return twice<unsigned long>((unsigned long)n);
}

__attribute__((noinline)) unsigned long spin(double n)
{
	return twice<double>(n) > 0 ? 1 : 0;
}

} // namespace kiln_wl

static double cpu_seconds()
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 1.0;
	double start = cpu_seconds();
	kiln_wl::Counter c;

	while (cpu_seconds() - start < seconds)
		kiln_wl::sink = c.step(1000000) + kiln_wl::spin(3) +
				kiln_wl::spin(2.0);
	return 0;
}
