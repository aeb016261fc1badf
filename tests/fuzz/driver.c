/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A stand-in for libFuzzer where clang is missing (the default build):
 * runs LLVMFuzzerTestOneInput() on every file of the folders given, then
 * on -runs=N mutations of them (bit flips, bytes set, cut, chunks
 * repeated, inserted bytes; fixed seed, so a failure repeats).  Options
 * other than -runs= are libFuzzer's and ignored.  Exit 0; a failed check
 * aborts, as under libFuzzer.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct input {
	uint8_t *data;
	size_t len;
};

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static int cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int load(const char *path, struct input *in)
{
	FILE *f = fopen(path, "rb");
	long n;

	if (!f)
		return -1;
	if (fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET)) {
		fclose(f);
		return -1;
	}
	in->data = malloc((size_t)n + 1);
	in->len = (size_t)n;
	if (!in->data || fread(in->data, 1, in->len, f) != in->len) {
		fclose(f);
		free(in->data);
		return -1;
	}
	fclose(f);
	return 0;
}

/* A mutation of in into a new buffer of *len bytes (room for 64 more). */
static uint8_t *mutate(const struct input *in, size_t *len)
{
	uint8_t *b = malloc(in->len + 64 * 4 + 1);
	size_t n = in->len;
	int rounds = 1 + (int)(next() % 4), i;

	if (!b)
		abort();
	memcpy(b, in->data, n);
	for (i = 0; i < rounds && n; i++) {
		size_t at = next() % n, k, m;

		switch (next() % 5) {
		case 0: b[at] ^= (uint8_t)(1u << (next() % 8)); break;
		case 1: b[at] = (uint8_t)next(); break;
		case 2: n = at; break;
		case 3:
			m = next() % 64;
			if (at + m > n)
				m = n - at;
			memcpy(b + n, b + at, m);
			n += m;
			break;
		default:
			m = 1 + next() % 8;
			memmove(b + at + m, b + at, n - at);
			for (k = 0; k < m; k++)
				b[at + k] = (uint8_t)next();
			n += m;
			break;
		}
	}
	*len = n;
	return b;
}

int main(int argc, char **argv)
{
	struct input *ins = NULL;
	size_t nin = 0, i;
	long runs = 0, r;
	double slowest = 0;
	int a;

	for (a = 1; a < argc; a++) {
		DIR *dir;
		struct dirent *e;
		char **names = NULL;
		size_t nn = 0, j;

		if (!strncmp(argv[a], "-runs=", 6)) {
			runs = atol(argv[a] + 6);
			continue;
		}
		if (argv[a][0] == '-')
			continue;
		dir = opendir(argv[a]);
		if (!dir) {
			/* a single file, as libFuzzer takes it */
			ins = realloc(ins, (nin + 1) * sizeof(*ins));
			if (!ins || load(argv[a], &ins[nin])) {
				fprintf(stderr, "driver: cannot read '%s'\n", argv[a]);
				return 1;
			}
			nin++;
			continue;
		}
		while ((e = readdir(dir))) {
			if (e->d_name[0] == '.')
				continue;
			names = realloc(names, (nn + 1) * sizeof(*names));
			if (!names || asprintf(&names[nn], "%s/%s", argv[a], e->d_name) < 0)
				abort();
			nn++;
		}
		closedir(dir);
		if (nn)	/* an empty folder: names is NULL */
			qsort(names, nn, sizeof(*names), cmp);
		for (j = 0; j < nn; j++) {
			ins = realloc(ins, (nin + 1) * sizeof(*ins));
			if (!ins)
				abort();
			if (!load(names[j], &ins[nin]))
				nin++;
			free(names[j]);
		}
		free(names);
	}
	for (i = 0; i < nin; i++) {
		/* A copy of exactly len bytes, so ASan sees reads past it. */
		uint8_t *c = malloc(ins[i].len ? ins[i].len : 1);

		memcpy(c, ins[i].data, ins[i].len);
		LLVMFuzzerTestOneInput(c, ins[i].len);
		free(c);
	}
	for (r = 0; nin && r < runs; r++) {
		size_t len;
		uint8_t *b = mutate(&ins[next() % nin], &len);
		uint8_t *c = malloc(len ? len : 1);

		struct timespec t0, t1;
		double ms;

		memcpy(c, b, len);
		free(b);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		LLVMFuzzerTestOneInput(c, len);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 +
		     (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
		/* A slow input is a finding too (a hang, under libFuzzer's
		 * -timeout): FUZZ_SLOW=FILE keeps the slowest one. */
		if (ms > slowest && getenv("FUZZ_SLOW")) {
			FILE *f = fopen(getenv("FUZZ_SLOW"), "wb");

			if (f) {
				fwrite(c, 1, len, f);
				fclose(f);
			}
			fprintf(stderr, "driver: run %ld took %.0f ms\n", r, ms);
			slowest = ms;
		}
		free(c);
	}
	printf("driver: %zu inputs replayed, %ld mutations run\n", nin, runs);
	for (i = 0; i < nin; i++)
		free(ins[i].data);
	free(ins);
	return 0;
}
