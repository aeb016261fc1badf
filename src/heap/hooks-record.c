/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The malloc interposer's recording (heap stage, libkiln-malloc.so): an
 * allocation or a free encoded into the calling thread's ring (ring.c, in
 * libkiln.so), sampling mode's Poisson countdown, and the table that
 * libkiln.so finds by name (heapint.h).  Called by the hooks' slow paths
 * with the allocation guard held; errno is preserved.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>

#include "heap/hookint.h"

__thread uint64_t kheap_sample_left KHEAP_TLS;
static __thread bool sample_armed KHEAP_TLS;

static uint64_t draw(struct kheap_thread *t)
{
	uint64_t x = t->rng;
	double u;

	/* xorshift64*: a uniform in (0, 1], then an exponential variate. */
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	t->rng = x;
	u = (double)((x * 0x2545F4914F6CDD1Dull) >> 11) * 0x1.0p-53;
	if (u <= 0)
		u = 0x1.0p-53;
	return (uint64_t)(-log(u) * (double)kheap_sample) + 1;
}

static void sample_start(struct kheap_thread *t, uint64_t seed)
{
	t->rng = seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
	if (!t->rng)
		t->rng = 1;
}

/*
 * A record encoded up to end: in the ring at `at` (kheap_rec_start()), or
 * in rec, to be copied there (or counted lost).  The thread's last time
 * moves to the record's only when it was kept, so that the next record's
 * dt stays right.
 */
static inline void put(struct kheap_thread *t, unsigned char *at,
		       const unsigned char *rec, const unsigned char *end,
		       uint64_t now)
{
	if (likely(at)) {
		kheap_rec_end(t, (size_t)(end - at));
		t->last_ns = now;
	} else if (kheap_put(t, rec, (size_t)(end - rec))) {
		t->last_ns = now;
	}
}

__attribute__((noinline)) void kheap_on_alloc(void *p, size_t n, void *frame)
{
	int saved = errno;
	struct kheap_thread *t = kheap_self();
	unsigned char rec[KHEAP_MAX_REC], *e, *at;
	uint64_t now;
	uint32_t id;

	if (!t)
		goto out;
	if (kheap_sample) {
		/* Poisson over the bytes allocated: sampled when the
		 * countdown (kheap_counted()) reaches zero inside this
		 * allocation.  A thread's first allocation arms it. */
		if (!sample_armed) {
			uint64_t d = draw(t);

			sample_armed = true;
			if (n < d) {
				kheap_sample_left = d - n;
				goto out;
			}
		}
		kheap_sample_left = draw(t);
		if (!kheap_sset_add((uint64_t)(uintptr_t)p)) {
			atomic_fetch_add_explicit(&t->lost, 1, memory_order_relaxed);
			goto out;
		}
	}
	id = kheap_frame_stack(t, frame);
	now = kheap_stamp();
	e = at = kheap_rec_start(t);
	if (!at)
		e = rec;
	*e++ = 'A';
	e = kheap_uv(e, now - t->last_ns);
	e = kheap_u64(e, (uint64_t)(uintptr_t)p);
	e = kheap_uv(e, n);
	e = kheap_uv(e, id);
	put(t, at, rec, e, now);
out:
	errno = saved;
}

void kheap_put_free(void *p, uint64_t now)
{
	int saved = errno;
	struct kheap_thread *t = kheap_self();
	unsigned char rec[KHEAP_MAX_REC], *e, *at;

	if (t) {
		if (now < t->last_ns)
			now = t->last_ns;
		e = at = kheap_rec_start(t);
		if (!at)
			e = rec;
		*e++ = 'F';
		e = kheap_uv(e, now - t->last_ns);
		e = kheap_u64(e, (uint64_t)(uintptr_t)p);
		put(t, at, rec, e, now);
	}
	errno = saved;
}

static void *real_malloc(void)
{
	kheap_ready();
	return (void *)kheap_real.malloc;
}

/* What libkiln.so finds by name (heapint.h). */
__attribute__((visibility("default")))
const struct kheap_interposer kiln_malloc_interposer = {
	.abi = KHEAP_ABI,
	.real_malloc = real_malloc,
	.jemalloc_init = kheap_jemalloc_init,
	.sample_start = sample_start,
};
