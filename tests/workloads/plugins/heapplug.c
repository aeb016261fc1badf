/* SPDX-License-Identifier: Apache-2.0 */
/* A shared library for the heapdl workload: plugin_leak allocates blocks
 * that are never freed, first through libc (strdup: the first allocations
 * whose walk must go on from libc into this library), then through a
 * function of its own. */
#include <stdlib.h>
#include <string.h>

__attribute__((noinline)) static void *plugin_alloc(size_t n)
{
	void *p = malloc(n);

	if (p)
		memset(p, 1, n);
	return p;
}

/* 99 characters and the terminator: strdup() allocates 100 bytes. */
static const char *volatile dup_src =
	"0123456789012345678901234567890123456789012345678901234567890123456789"
	"01234567890123456789012345678";

char *volatile plugin_keep;

/* Leaks 8 copies of dup_src through libc's strdup(). */
__attribute__((noinline)) static void plugin_dup(void)
{
	for (int i = 0; i < 8; i++)
		plugin_keep = strdup(dup_src);
}

/* Leaks 8 strdup()s of 100 bytes, then n blocks of size bytes; returns
 * the last. */
void *plugin_leak(int n, size_t size)
{
	void *p = NULL;

	plugin_dup();
	for (int i = 0; i < n; i++)
		p = plugin_alloc(size);
	return p;
}
