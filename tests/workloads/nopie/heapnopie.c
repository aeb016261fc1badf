/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Heap workload built without PIE (tests of the heap tracer, t810).  It
 * takes malloc's address in its code, so the linker gives malloc a
 * canonical address, the program's own PLT entry (an undefined symbol
 * with a value in its dynamic symbol table), which is what
 * dlsym(RTLD_DEFAULT, "malloc") returns: the program must not be taken
 * for one with its own allocator.  nopie_direct() makes 300 allocations
 * of 100 bytes and keeps them; nopie_pointer() 200 of 50 bytes through
 * the pointer, and frees them.
 */
#include <stdio.h>
#include <stdlib.h>

void *(*volatile nopie_alloc)(size_t);
void *nopie_keep[300];	/* global: the allocations are not optimized away */

__attribute__((noinline)) void nopie_direct(void)
{
	for (int i = 0; i < 300; i++)
		nopie_keep[i] = malloc(100);
}

__attribute__((noinline)) void nopie_pointer(void)
{
	void *p[200];

	for (int i = 0; i < 200; i++)
		p[i] = nopie_alloc(50);
	for (int i = 0; i < 200; i++)
		free(p[i]);
}

int main(void)
{
	nopie_alloc = malloc;
	nopie_direct();
	nopie_pointer();
	printf("500 allocations\n");
	return 0;
}
