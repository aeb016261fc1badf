/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench/cpuloop.c: deterministic CPU-bound workload for bench/record.sh.
 *
 * Does a fixed amount of work (not a fixed time), so that sampling overhead
 * shows as longer wall time: ROUNDS rounds of three phases, each a few calls
 * deep, main -> run -> phase_X -> helper -> leaf, on data that fits in the
 * L1/L2 caches (so that other jobs on the machine disturb it less):
 *   - phase_hash:  FNV-1a over a 16 KiB buffer (hash_block -> mix_byte)
 *   - phase_sort:  insertion sort of 256-element arrays (sort_chunk -> less)
 *   - phase_walk:  pointer chasing over a permutation (walk_ring -> step)
 * Usage: cpuloop [ROUNDS]   (default 1700, about 3 s at -O2 on the bench
 * machine).  Prints a checksum (so the work cannot be optimized away), its
 * own user and system CPU seconds (so that a profiler's own CPU time is the
 * total of its process tree minus these), and CLOCK_REALTIME in ns at the
 * end of the work (so that the time a profiler takes after its target has
 * finished can be measured):
 *   cpuloop: ROUNDS rounds, checksum N, cpu USER SYS, end NS
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#define BUF_SIZE 16384
#define SORT_N 256
#define RING_N 4096

static unsigned char buf[BUF_SIZE];
static uint32_t arr[SORT_N];
static uint32_t ring[RING_N];
static volatile uint64_t sink;

static uint64_t rng_state = 88172645463325252ull;

/* xorshift64: deterministic pseudo-random numbers. */
static uint64_t rng_next(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

__attribute__((noinline)) static uint64_t mix_byte(uint64_t h, unsigned char c)
{
	return (h ^ c) * 1099511628211ull;
}

__attribute__((noinline)) static uint64_t hash_block(const unsigned char *p, size_t n)
{
	uint64_t h = 14695981039346656037ull;

	for (size_t i = 0; i < n; i++)
		h = mix_byte(h, p[i]);
	return h;
}

__attribute__((noinline)) static int less(uint32_t a, uint32_t b)
{
	return a < b;
}

__attribute__((noinline)) static void sort_chunk(uint32_t *a, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		uint32_t v = a[i];
		size_t j = i;

		while (j > 0 && less(v, a[j - 1])) {
			a[j] = a[j - 1];
			j--;
		}
		a[j] = v;
	}
}

__attribute__((noinline)) static uint32_t step(uint32_t i)
{
	return ring[i];
}

__attribute__((noinline)) static uint32_t walk_ring(uint32_t start, size_t n)
{
	uint32_t i = start;

	while (n--)
		i = step(i);
	return i;
}

__attribute__((noinline)) static void phase_hash(void)
{
	for (int k = 0; k < 32; k++) {
		buf[k] ^= (unsigned char)rng_next();
		sink += hash_block(buf, BUF_SIZE);
	}
}

__attribute__((noinline)) static void phase_sort(void)
{
	for (int k = 0; k < 24; k++) {
		for (size_t i = 0; i < SORT_N; i++)
			arr[i] = (uint32_t)rng_next();
		sort_chunk(arr, SORT_N);
		sink += arr[SORT_N / 2];
	}
}

__attribute__((noinline)) static void phase_walk(void)
{
	sink += walk_ring((uint32_t)(rng_next() % RING_N), 150000);
}

__attribute__((noinline)) static void run(int rounds)
{
	for (int r = 0; r < rounds; r++) {
		phase_hash();
		phase_sort();
		phase_walk();
	}
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 1700;

	for (size_t i = 0; i < BUF_SIZE; i++)
		buf[i] = (unsigned char)rng_next();
	/* A single cycle through all slots (Sattolo's shuffle). */
	for (uint32_t i = 0; i < RING_N; i++)
		ring[i] = i;
	for (uint32_t i = RING_N - 1; i > 0; i--) {
		uint32_t j = (uint32_t)(rng_next() % i), t = ring[i];

		ring[i] = ring[j];
		ring[j] = t;
	}
	run(rounds);

	struct rusage ru;
	struct timespec end;

	getrusage(RUSAGE_SELF, &ru);
	clock_gettime(CLOCK_REALTIME, &end);
	printf("cpuloop: %d rounds, checksum %llu, cpu %ld.%06ld %ld.%06ld, "
	       "end %lld%09ld\n", rounds, (unsigned long long)sink,
	       (long)ru.ru_utime.tv_sec, (long)ru.ru_utime.tv_usec,
	       (long)ru.ru_stime.tv_sec, (long)ru.ru_stime.tv_usec,
	       (long long)end.tv_sec, end.tv_nsec);
	return 0;
}
