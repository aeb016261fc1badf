/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench/mtloop.c: deterministic CPU-bound multi-threaded workload for
 * bench/agent.sh (overhead of the in-process agent libkiln.so against
 * gperftools' libprofiler.so).
 *
 * THREADS threads (default 4) each do the same fixed amount of work (not a
 * fixed time), so that sampling overhead shows as longer wall and CPU time.
 * Every thread runs ROUNDS rounds of three phases, a few calls deep:
 *   main -> worker -> run_rounds -> phase_X -> kernel -> leaf
 *   - phase_crc:     bitwise CRC-32 of a 4 KiB buffer (crc_block -> crc_byte)
 *   - phase_matrix:  24x24 matrix product (mat_mul -> dot_row)
 *   - phase_collatz: Collatz chain lengths (collatz_sum -> collatz_len)
 * Each thread has its own data (aligned to cache lines, no false sharing),
 * small enough for the L1/L2 caches so that other jobs on the machine
 * disturb it less.  Threads take no lock while they work.
 *
 * Usage: mtloop [THREADS [ROUNDS]]   (default 4 threads x 2400 rounds, about
 * 3 s of wall time on 2 cores at -O2).  Prints one line: a checksum (so the
 * work cannot be optimized away), the wall time of the work, the process's
 * user and system CPU seconds (all threads), and CLOCK_REALTIME in ns at the
 * end of the work (so that a profiler's exit time, e.g. writing its
 * profile, can be measured from outside):
 *   mtloop: T threads x R rounds, checksum N, wall S, cpu USER SYS, end NS
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#define CRC_BYTES 4096
#define MAT_N 24
#define COLLATZ_N 600
#define MAX_THREADS 64

/* One thread's data and result. */
struct worker {
	_Alignas(64) unsigned char buf[CRC_BYTES];
	double a[MAT_N][MAT_N], b[MAT_N][MAT_N], c[MAT_N][MAT_N];
	uint64_t seed;
	int rounds;
	uint64_t sum;
};

/* xorshift64: deterministic pseudo-random numbers, per thread. */
static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

__attribute__((noinline)) static uint32_t crc_byte(uint32_t crc, unsigned char c)
{
	crc ^= c;
	for (int k = 0; k < 8; k++)
		crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1u)));
	return crc;
}

__attribute__((noinline)) static uint32_t crc_block(const unsigned char *p, size_t n)
{
	uint32_t crc = 0xffffffffu;

	for (size_t i = 0; i < n; i++)
		crc = crc_byte(crc, p[i]);
	return ~crc;
}

__attribute__((noinline)) static double dot_row(const double *row,
						double b[MAT_N][MAT_N], int col)
{
	double s = 0;

	for (int k = 0; k < MAT_N; k++)
		s += row[k] * b[k][col];
	return s;
}

__attribute__((noinline)) static void mat_mul(double a[MAT_N][MAT_N],
					      double b[MAT_N][MAT_N],
					      double c[MAT_N][MAT_N])
{
	for (int i = 0; i < MAT_N; i++)
		for (int j = 0; j < MAT_N; j++)
			c[i][j] = dot_row(a[i], b, j);
}

__attribute__((noinline)) static unsigned collatz_len(uint64_t n)
{
	unsigned len = 0;

	while (n != 1) {
		n = (n & 1) ? 3 * n + 1 : n / 2;
		len++;
	}
	return len;
}

__attribute__((noinline)) static uint64_t collatz_sum(uint64_t from, unsigned count)
{
	uint64_t s = 0;

	for (unsigned i = 0; i < count; i++)
		s += collatz_len(from + i);
	return s;
}

__attribute__((noinline)) static void phase_crc(struct worker *w)
{
	for (int k = 0; k < 6; k++) {
		w->buf[rng_next(&w->seed) % CRC_BYTES] ^= 0x5a;
		w->sum += crc_block(w->buf, CRC_BYTES);
	}
}

__attribute__((noinline)) static void phase_matrix(struct worker *w)
{
	for (int k = 0; k < 24; k++) {
		w->a[k % MAT_N][k % MAT_N] += 1.0 / (double)(rng_next(&w->seed) % 1000 + 1);
		mat_mul(w->a, w->b, w->c);
		memcpy(w->b, w->c, sizeof(w->b));
		/* Keep the values bounded: scale the product back down. */
		for (int i = 0; i < MAT_N; i++)
			for (int j = 0; j < MAT_N; j++)
				w->b[i][j] *= 1.0 / MAT_N;
		w->sum += (uint64_t)(w->c[1][2] * 1e6) & 0xffff;
	}
}

__attribute__((noinline)) static void phase_collatz(struct worker *w)
{
	w->sum += collatz_sum(rng_next(&w->seed) % 1000000 + 1, COLLATZ_N);
}

__attribute__((noinline)) static void run_rounds(struct worker *w)
{
	for (int r = 0; r < w->rounds; r++) {
		phase_crc(w);
		phase_matrix(w);
		phase_collatz(w);
	}
}

static void *worker(void *arg)
{
	struct worker *w = arg;

	for (size_t i = 0; i < CRC_BYTES; i++)
		w->buf[i] = (unsigned char)rng_next(&w->seed);
	for (int i = 0; i < MAT_N; i++)
		for (int j = 0; j < MAT_N; j++) {
			w->a[i][j] = (double)(rng_next(&w->seed) % 100) / 100.0;
			w->b[i][j] = (double)(rng_next(&w->seed) % 100) / 100.0;
		}
	run_rounds(w);
	return NULL;
}

static double now_s(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	int nthreads = argc > 1 ? atoi(argv[1]) : 4;
	int rounds = argc > 2 ? atoi(argv[2]) : 2400;

	if (nthreads < 1 || nthreads > MAX_THREADS || rounds < 0) {
		fprintf(stderr, "usage: mtloop [THREADS (1-%d) [ROUNDS]]\n", MAX_THREADS);
		return 2;
	}
	struct worker *ws = aligned_alloc(64, sizeof(*ws) * (size_t)nthreads);
	pthread_t tids[MAX_THREADS];

	if (!ws) {
		perror("mtloop");
		return 1;
	}
	memset(ws, 0, sizeof(*ws) * (size_t)nthreads);
	double t0 = now_s(CLOCK_MONOTONIC);

	for (int i = 0; i < nthreads; i++) {
		ws[i].seed = 88172645463325252ull + 7919u * (uint64_t)i;
		ws[i].rounds = rounds;
		if (pthread_create(&tids[i], NULL, worker, &ws[i])) {
			fprintf(stderr, "mtloop: pthread_create failed\n");
			return 1;
		}
	}
	uint64_t sum = 0;

	for (int i = 0; i < nthreads; i++) {
		pthread_join(tids[i], NULL);
		sum += ws[i].sum;
	}
	double wall = now_s(CLOCK_MONOTONIC) - t0;
	struct rusage ru;
	struct timespec end;

	getrusage(RUSAGE_SELF, &ru);
	clock_gettime(CLOCK_REALTIME, &end);
	printf("mtloop: %d threads x %d rounds, checksum %llu, wall %.4f, "
	       "cpu %ld.%06ld %ld.%06ld, end %lld%09ld\n", nthreads, rounds,
	       (unsigned long long)sum, wall,
	       (long)ru.ru_utime.tv_sec, (long)ru.ru_utime.tv_usec,
	       (long)ru.ru_stime.tv_sec, (long)ru.ru_stime.tv_usec,
	       (long long)end.tv_sec, end.tv_nsec);
	free(ws);
	return 0;
}
