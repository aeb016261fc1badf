/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Workload: dlopens LIBRARY (libheapplug.so), leaks 64 blocks of 4096
 * bytes through its plugin_leak(), dlcloses it at once and exits: the
 * library is gone from the process long before the heap trace is read.
 * Then leaks 16 blocks of 1024 bytes from host_leak for comparison.
 * Usage: heapdl LIBRARY
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

void *volatile dl_keep;

__attribute__((noinline)) void host_leak(void)
{
	for (int i = 0; i < 16; i++)
		dl_keep = malloc(1024);
}

int main(int argc, char **argv)
{
	void *(*leak)(int, size_t);
	void *h;

	if (argc < 2) {
		fprintf(stderr, "usage: heapdl LIBRARY\n");
		return 2;
	}
	h = dlopen(argv[1], RTLD_NOW);
	if (!h) {
		fprintf(stderr, "heapdl: %s\n", dlerror());
		return 1;
	}
	leak = (void *(*)(int, size_t))dlsym(h, "plugin_leak");
	if (!leak)
		return 1;
	dl_keep = leak(64, 4096);
	dlclose(h);
	host_leak();
	return 0;
}
