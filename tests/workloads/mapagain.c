/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Workload: maps a part of its own executable a second time, at another
 * address and from another file offset than the kernel's mapping of its
 * code (as node maps V8's embedded builtins again from /usr/bin/node),
 * and runs twice_burn in that copy while once_burn runs where the
 * program was loaded: about half of the CPU time each,
 * main -> run -> twice_burn (the copy) and main -> run -> once_burn.
 * Built as PIE (mapagain) and as ET_EXEC (mapagain-nopie).
 * Usage: mapagain [ROUNDS]  (default 8: about a second; fixed work)
 * Exit status 2 when the copy cannot be made as described.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

volatile unsigned long sink;

/*
 * Runs in the copy: it touches no global (an address relative to the
 * program counter would land in the copy's neighbourhood) and calls
 * nothing.  Page-aligned, so that its page is not the first of the code
 * segment (.init and .plt come first): the copy's file offset then
 * differs from the kernel's mapping's.
 */
__attribute__((noinline, aligned(4096))) unsigned long
twice_burn(unsigned long n, unsigned long x)
{
	unsigned long i;

	for (i = 0; i < n; i++)
		x = x * 6364136223846793005ul + 1442695040888963407ul;
	return x;
}

__attribute__((noinline)) unsigned long once_burn(unsigned long n,
						  unsigned long x)
{
	unsigned long i;

	for (i = 0; i < n; i++)
		x = x * 6364136223846793005ul + 1442695040888963407ul;
	return x;
}

typedef unsigned long (*burn_fn)(unsigned long, unsigned long);

__attribute__((noinline)) static void run(burn_fn copy, int rounds)
{
	int r;

	for (r = 0; r < rounds; r++) {
		sink = copy(50000000ul, sink + 1);
		sink = once_burn(50000000ul, sink + 1);
	}
}

/* The file offset of address a in this program's mappings, or -1; *map
 * receives the offset its mapping starts at. */
static int64_t file_offset(uintptr_t a, int64_t *map)
{
	char line[512];
	FILE *f = fopen("/proc/self/maps", "r");
	int64_t off = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi, o;

		if (sscanf(line, "%lx-%lx %*s %lx", &lo, &hi, &o) == 3 &&
		    a >= lo && a < hi) {
			off = (int64_t)(a - lo + o);
			*map = (int64_t)o;
			break;
		}
	}
	fclose(f);
	return off;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 8;
	int64_t first = -1, off = file_offset((uintptr_t)twice_burn, &first);
	uint64_t page;
	char *copy;
	int fd;

	fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	if (fd < 0 || off < 0) {
		fprintf(stderr, "mapagain: cannot find its own code\n");
		return 2;
	}
	page = (uint64_t)off & ~(uint64_t)4095;
	copy = mmap(NULL, 8192, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd,
		    (off_t)page);
	close(fd);
	if (copy == MAP_FAILED || (int64_t)page == first) {
		fprintf(stderr, "mapagain: cannot map twice_burn again from "
			"another offset\n");
		return 2;
	}
	printf("copy at %p from offset 0x%" PRIx64 "\n", (void *)copy, page);
	fflush(stdout);
	run((burn_fn)(void *)(copy + (off - (int64_t)page)), rounds);
	return 0;
}
