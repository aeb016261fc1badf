/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Workload: a tiny JIT.  Copies machine code for a counting loop into an
 * anonymous executable mapping, names it "jit_spin" in /tmp/perf-PID.map
 * (the perf JIT convention), and runs it for SECONDS (default 1).
 * "jit SECONDS rm" removes the map at the end; "jit SECONDS late" runs
 * the code for half the time before it writes the map, as a runtime that
 * compiles while it is being profiled does (the map is removed at the
 * end too).
 * x86-64 only; elsewhere it exits 77.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

__attribute__((noinline)) void jit_driver(void (*fn)(unsigned long), double s)
{
	struct timespec a, b;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
	do {
		fn(1000000);
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b);
	} while ((double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9 < s);
}

int main(int argc, char **argv)
{
#if defined(__x86_64__)
	/* mov rax, rdi; 1: dec rax; jnz 1b; ret */
	static const unsigned char code[] = { 0x48, 0x89, 0xf8, 0x48, 0xff, 0xc8,
					      0x75, 0xfb, 0xc3 };
	char path[64];
	FILE *f;
	void *mem = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (mem == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	double seconds = argc > 1 ? atof(argv[1]) : 1.0;
	int late = argc > 2 && !strcmp(argv[2], "late");

	memcpy(mem, code, sizeof(code));
	if (late) {
		jit_driver((void (*)(unsigned long))mem, seconds / 2);
		seconds /= 2;
	}
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	f = fopen(path, "w");
	if (!f)
		return 1;
	fprintf(f, "%lx %zx jit_spin\n", (unsigned long)mem, sizeof(code));
	fclose(f);
	jit_driver((void (*)(unsigned long))mem, seconds);
	if (argc > 2)
		unlink(path);
	return 0;
#else
	return 77;
#endif
}
