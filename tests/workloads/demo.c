/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The bundled demo for `make run`: a toy request loop that parses, hashes
 * and sorts, so the flame graph has a few layers and some libc in it.
 * Usage: demo [SECONDS]   (default 2)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct request {
	char text[512];
	unsigned keys[256];
	size_t nkeys;
};

volatile unsigned long demo_sink;

__attribute__((noinline)) static void make_request(struct request *r, unsigned seed)
{
	size_t i;

	for (i = 0; i < sizeof(r->text) - 1; i++) {
		seed = seed * 1103515245u + 12345u;
		r->text[i] = (char)('a' + (seed >> 16) % 26);
		if (i % 9 == 8)
			r->text[i] = ',';
	}
	r->text[sizeof(r->text) - 1] = '\0';
}

__attribute__((noinline)) static void parse_fields(struct request *r)
{
	char buf[sizeof(r->text)], *save, *tok;

	memcpy(buf, r->text, sizeof(buf));
	r->nkeys = 0;
	for (tok = strtok_r(buf, ",", &save); tok && r->nkeys < 256;
	     tok = strtok_r(NULL, ",", &save)) {
		unsigned h = 0;

		while (*tok)
			h = h * 31 + (unsigned char)*tok++;
		r->keys[r->nkeys++] = h;
	}
}

__attribute__((noinline)) static unsigned long checksum(const struct request *r)
{
	unsigned long h = 1469598103934665603ul;
	int round;
	size_t i;

	for (round = 0; round < 40; round++)
		for (i = 0; i < sizeof(r->text); i++)
			h = (h ^ (unsigned char)r->text[i]) * 1099511628211ul;
	return h;
}

static int cmp_keys(const void *a, const void *b)
{
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;

	return x < y ? -1 : x > y;
}

__attribute__((noinline)) static void sort_keys(struct request *r)
{
	qsort(r->keys, r->nkeys, sizeof(r->keys[0]), cmp_keys);
}

__attribute__((noinline)) static void handle_request(struct request *r, unsigned seed)
{
	make_request(r, seed);
	parse_fields(r);
	demo_sink += checksum(r);
	sort_keys(r);
}

__attribute__((noinline)) static void serve(double seconds)
{
	struct timespec start, now;
	struct request r;
	unsigned n = 0;

	clock_gettime(CLOCK_MONOTONIC, &start);
	do {
		handle_request(&r, n++);
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while ((double)(now.tv_sec - start.tv_sec) +
		 (double)(now.tv_nsec - start.tv_nsec) / 1e9 < seconds);
	printf("demo: served %u requests\n", n);
}

int main(int argc, char **argv)
{
	serve(argc > 1 ? atof(argv[1]) : 2.0);
	return 0;
}
