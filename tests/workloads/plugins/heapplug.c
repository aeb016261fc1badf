/* SPDX-License-Identifier: Apache-2.0 */
/* A shared library for the heapdl workload: plugin_leak allocates blocks
 * that are never freed, through a function of its own. */
#include <stdlib.h>
#include <string.h>

__attribute__((noinline)) static void *plugin_alloc(size_t n)
{
	void *p = malloc(n);

	if (p)
		memset(p, 1, n);
	return p;
}

/* Leaks n blocks of size bytes; returns the last. */
void *plugin_leak(int n, size_t size)
{
	void *p = NULL;

	for (int i = 0; i < n; i++)
		p = plugin_alloc(size);
	return p;
}
