/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench/mallocloop.c: deterministic malloc-heavy multi-threaded workload for
 * bench/heap.sh (speed of kiln's heap profiler against heaptrack, gperftools'
 * HEAPPROFILE and valgrind massif).
 *
 * THREADS threads (default 2) each do OPS operations (default 10 000 000),
 * a fixed amount of work, not a fixed time, so that a profiler's cost shows
 * as longer wall and CPU time.  Each thread keeps a table of SLOTS live
 * blocks; an operation picks a slot at random, frees the block in it and
 * allocates a new one there, through one of four sites a few calls deep:
 *   main -> worker -> run_ops -> step -> make_X -> alloc_X -> malloc/calloc/realloc
 *   - make_node:   malloc of 16..63 bytes (list nodes)          50%
 *   - make_string: malloc of 32..287 bytes (strings)            30%
 *   - make_array:  calloc of 64..1087 bytes (arrays)            15%
 *   - make_buffer: malloc of 256..8447 bytes, then realloc to
 *                  twice its size (growing buffers)              5%
 * and touches the new block (first and last byte) so the work cannot be
 * optimized away.  At the end each thread frees its table, except for
 * LEAK_PER_THREAD blocks left live on purpose (a known leak a profiler must
 * report).  Threads allocate concurrently from glibc's per-thread arenas
 * and take no lock of their own.
 *
 * Usage: mallocloop [THREADS [OPS]]   (about 1 s of wall time, 1.6 s of CPU, on 2 cores
 * at -O2 with glibc's malloc).  Prints one line: the allocation calls made
 * (malloc + calloc + realloc, as heap profilers count them), the bytes
 * asked for, the bytes leaked, a checksum, the wall time of the work, the
 * process's user and system CPU seconds, and CLOCK_REALTIME in ns at the
 * end of the work (so that a profiler's exit time can be measured from
 * outside):
 *   mallocloop: T threads x N ops, calls C, bytes B, leaked L, checksum X,
 *   wall S, cpu USER SYS, end NS
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#define SLOTS 4096
#define LEAK_PER_THREAD 16
#define MAX_THREADS 64

/* One thread's state and result. */
struct worker {
	_Alignas(64) void *slot[SLOTS];
	size_t size[SLOTS];
	uint64_t seed;
	long ops;
	uint64_t site[5]; /* calls per allocation site */
	uint64_t bytes, leaked, sum;
};

/* xorshift64: deterministic pseudo-random numbers, per thread. */
static inline uint64_t rng_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Touches a new block's first and last byte; adds them to the checksum. */
static inline void touch(struct worker *w, unsigned char *p, size_t n)
{
	p[0] = (unsigned char)n;
	p[n - 1] = (unsigned char)(n >> 3);
	w->sum += p[0] + p[n - 1];
}

/*
 * The allocation sites.  Each does some work after its call (counting it
 * in a counter of its own), so that gcc can neither turn the call into a
 * tail call (a jump that would leave the site out of the stack) nor merge
 * identical functions into one (-fipa-icf).
 */
__attribute__((noinline)) static void *alloc_node(struct worker *w, size_t n)
{
	void *p = malloc(n);

	w->site[0]++;
	return p;
}

__attribute__((noinline)) static void *alloc_string(struct worker *w, size_t n)
{
	void *p = malloc(n);

	w->site[1]++;
	return p;
}

__attribute__((noinline)) static void *alloc_array(struct worker *w, size_t n)
{
	void *p = calloc(1, n);

	w->site[2]++;
	return p;
}

__attribute__((noinline)) static void *alloc_buffer(struct worker *w, size_t n)
{
	void *p = malloc(n);

	w->site[3]++;
	return p;
}

__attribute__((noinline)) static void *grow_buffer(struct worker *w, void *p, size_t n)
{
	void *q = realloc(p, n);

	w->site[4]++;
	return q;
}

__attribute__((noinline)) static void *make_node(struct worker *w, size_t *n)
{
	void *p;

	*n = 16 + (rng_next(&w->seed) & 47);
	p = alloc_node(w, *n);
	w->bytes += *n;
	return p;
}

__attribute__((noinline)) static void *make_string(struct worker *w, size_t *n)
{
	void *p;

	*n = 32 + (rng_next(&w->seed) & 255);
	p = alloc_string(w, *n);
	w->bytes += *n;
	return p;
}

__attribute__((noinline)) static void *make_array(struct worker *w, size_t *n)
{
	void *p;

	*n = 64 + (rng_next(&w->seed) & 1023);
	p = alloc_array(w, *n);
	w->bytes += *n;
	return p;
}

__attribute__((noinline)) static void *make_buffer(struct worker *w, size_t *n)
{
	size_t first = 256 + (rng_next(&w->seed) & 8191);
	unsigned char *p = alloc_buffer(w, first), *q;

	if (!p)
		return NULL;
	p[0] = 1;
	w->bytes += first;
	*n = 2 * first;
	q = grow_buffer(w, p, *n);
	w->bytes += *n;
	return q;
}

/* One operation: replace a random slot's block by a new one. */
__attribute__((noinline)) static void step(struct worker *w)
{
	uint64_t r = rng_next(&w->seed);
	unsigned i = (unsigned)(r >> 20) % SLOTS;
	unsigned kind = (unsigned)(r >> 40) % 100;
	size_t n;
	void *p;

	free(w->slot[i]);
	if (kind < 50)
		p = make_node(w, &n);
	else if (kind < 80)
		p = make_string(w, &n);
	else if (kind < 95)
		p = make_array(w, &n);
	else
		p = make_buffer(w, &n);
	if (!p) {
		fprintf(stderr, "mallocloop: out of memory\n");
		exit(1);
	}
	touch(w, p, n);
	w->slot[i] = p;
	w->size[i] = n;
}

__attribute__((noinline)) static void run_ops(struct worker *w)
{
	for (long k = 0; k < w->ops; k++)
		step(w);
}

static void *worker(void *arg)
{
	struct worker *w = arg;

	run_ops(w);
	for (unsigned i = 0; i < SLOTS; i++) {
		if (i < LEAK_PER_THREAD && w->slot[i]) {
			w->leaked += w->size[i];
			continue;
		}
		free(w->slot[i]);
	}
	return NULL;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 2;
	long ops = argc > 2 ? atol(argv[2]) : 10000000L;
	static struct worker w[MAX_THREADS];
	pthread_t tid[MAX_THREADS];
	uint64_t calls = 0, bytes = 0, leaked = 0, sum = 0;
	struct rusage ru;
	struct timespec end;
	double t0, t1;

	if (threads < 1 || threads > MAX_THREADS || ops < 1) {
		fprintf(stderr, "usage: mallocloop [THREADS (1-%d) [OPS (>= 1)]]\n",
			MAX_THREADS);
		return 2;
	}
	t0 = now_s();
	for (int i = 0; i < threads; i++) {
		w[i].seed = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1);
		w[i].ops = ops;
		if (pthread_create(&tid[i], NULL, worker, &w[i]) != 0) {
			fprintf(stderr, "mallocloop: cannot create a thread\n");
			return 1;
		}
	}
	for (int i = 0; i < threads; i++) {
		pthread_join(tid[i], NULL);
		for (int k = 0; k < 5; k++)
			calls += w[i].site[k];
		bytes += w[i].bytes;
		leaked += w[i].leaked;
		sum += w[i].sum;
	}
	t1 = now_s();
	clock_gettime(CLOCK_REALTIME, &end);
	getrusage(RUSAGE_SELF, &ru);
	printf("mallocloop: %d threads x %ld ops, calls %llu, bytes %llu, leaked %llu, "
	       "checksum %llu, wall %.6f, cpu %.3f %.3f, end %lld\n",
	       threads, ops, (unsigned long long)calls, (unsigned long long)bytes,
	       (unsigned long long)leaked, (unsigned long long)sum, t1 - t0,
	       (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6,
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6,
	       (long long)end.tv_sec * 1000000000LL + end.tv_nsec);
	return 0;
}
