/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The perf_event rings (capture stage): records copied out of the mmap'ed
 * rings (a sample's stack copy only as far as the kernel filled it), by
 * the reader thread or by the caller, then ordered by time and handed out
 * parsed (perfrec.c).  See perfint.h.
 */
#include "capture/perf.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "capture/perfint.h"
#include "util/buf.h"

/* The rings' fds to poll, 256 at most, into pfd; returns how many. */
static int ring_pollfds(const struct kiln_perf *s, struct pollfd *pfd)
{
	int c, n = 0;

	for (c = 0; c < s->ncpus && n < 256; c++) {
		if (s->rings[c].fd < 0)
			continue;
		pfd[n].fd = s->rings[c].fd;
		pfd[n].events = POLLIN;
		n++;
	}
	return n;
}

int kiln_perf_wait(struct kiln_perf *s, int timeout_ms)
{
	struct pollfd pfd[256];
	int n;

	if (s->reader_on) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
		ts.tv_sec += timeout_ms / 1000 + ts.tv_nsec / 1000000000;
		ts.tv_nsec %= 1000000000;
		pthread_mutex_lock(&s->lock);
		while (!s->pending.len &&
		       pthread_cond_timedwait(&s->more, &s->lock, &ts) == 0)
			;
		pthread_mutex_unlock(&s->lock);
		return 0;
	}

	n = ring_pollfds(s, pfd);
	if (poll(pfd, (nfds_t)n, timeout_ms) < 0 && errno != EINTR)
		return -errno;
	return 0;
}

uint64_t kiln_perf_lost(const struct kiln_perf *s)
{
	return s->lost;
}

/* Copies the records of one ring into the arena, as offset-prefixed
 * blobs, and frees the ring space. */
static void ring_get(const struct ring *r, const char *data, uint64_t pos,
		     void *dst, size_t n)
{
	size_t off = (size_t)(pos % r->data_size), first = r->data_size - off;

	if (first >= n) {
		memcpy(dst, data + off, n);
	} else {
		memcpy(dst, data + off, first);
		memcpy((char *)dst + first, data, n - first);
	}
}

/*
 * A sample with a stack copy takes its full size in the ring, but the
 * kernel fills only the part of the stack that was there (dyn_size):
 * only that part is copied out, so that the reader keeps up and memory
 * holds what matters.  Returns the bytes written at dst, 0 if the record
 * is not such a sample (then it is copied whole).
 */
static size_t copy_sample_short(const struct kiln_perf *s, const struct ring *r,
				const char *data, uint64_t tail,
				const struct perf_event_header *h, char *dst)
{
	/* [identifier], ip, pid/tid, time, cpu, period; then callchain,
	 * [raw]: a second event (kiln_perf_add_event()) has the same layout. */
	uint64_t pos = sizeof(*h) + 5 * 8 +
		       (s->attr.sample_type & PERF_SAMPLE_IDENTIFIER ? 8 : 0);
	uint64_t nr, abi, size, dyn;
	size_t nregs = (size_t)__builtin_popcountll(s->regs_mask);
	struct perf_event_header nh = *h;

	if (h->type != PERF_RECORD_SAMPLE || !s->stack_fixed_layout)
		return 0;
	if (pos + 8 > h->size)
		return 0;
	ring_get(r, data, tail + pos, &nr, 8);
	if (nr > h->size / 8)
		return 0;
	pos += 8 + nr * 8;
	if (s->attr.sample_type & PERF_SAMPLE_RAW) {
		uint32_t raw;

		if (pos + 4 > h->size)
			return 0;
		ring_get(r, data, tail + pos, &raw, 4);
		if (raw > h->size)
			return 0;
		pos += 4 + raw;
	}
	if (pos + 8 > h->size)
		return 0;
	ring_get(r, data, tail + pos, &abi, 8);
	pos += 8 + (abi ? nregs * 8 : 0);
	if (pos + 8 > h->size)
		return 0;
	ring_get(r, data, tail + pos, &size, 8);
	if (!size || pos + 8 + size + 8 > h->size)
		return 0;
	ring_get(r, data, tail + pos + 8 + size, &dyn, 8);
	if (dyn > size)
		dyn = size;
	dyn = (dyn + 7) & ~7ull;
	if (dyn >= size)
		return 0;
	nh.size = (uint16_t)(pos + 8 + dyn + 8);
	ring_get(r, data, tail, dst, (size_t)(pos + 8));
	memcpy(dst, &nh, sizeof(nh));
	memcpy(dst + pos, &dyn, 8);
	ring_get(r, data, tail + pos + 8, dst + pos + 8, (size_t)dyn);
	ring_get(r, data, tail + pos + 8 + size, dst + pos + 8 + dyn, 8);
	return nh.size;
}

static int copy_ring(const struct kiln_perf *s, struct kiln_buf *to,
		     struct ring *r)
{
	struct perf_event_mmap_page *meta = r->base;
	const char *data = (const char *)r->base + getpagesize();
	uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = meta->data_tail;
	int err = 0;

	while (tail < head) {
		struct perf_event_header h;
		size_t off = (size_t)(tail % r->data_size), first, n;

		/* The header itself may wrap. */
		first = r->data_size - off;
		if (first >= sizeof(h)) {
			memcpy(&h, data + off, sizeof(h));
		} else {
			memcpy(&h, data + off, first);
			memcpy((char *)&h + first, data, sizeof(h) - first);
		}
		if (h.size < sizeof(h) || tail + h.size > head)
			break;
		err = kiln_buf_grow(to, h.size + 8);
		if (err)
			break;
		n = copy_sample_short(s, r, data, tail, &h, to->data + to->len);
		if (n) {
			to->len += (n + 7) & ~(size_t)7;
			tail += h.size;
			continue;
		}
		/* Keep 8-byte alignment for the u64 fields. */
		if (first >= h.size) {
			memcpy(to->data + to->len, data + off, h.size);
		} else {
			memcpy(to->data + to->len, data + off, first);
			memcpy(to->data + to->len + first, data, h.size - first);
		}
		to->len += (h.size + 7) & ~(size_t)7;
		tail += h.size;
	}
	__atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
	return err;
}

struct rec_ref {
	uint64_t time;
	size_t off;
	size_t seq;
};

static int cmp_ref(const void *a, const void *b)
{
	const struct rec_ref *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Empties the rings into to, as long as it holds less than cap bytes
 * (the next ring may take it one ring beyond); a call stopped by cap
 * leaves the next one to start at the ring it did not reach, so that no
 * CPU's records wait more than another's. */
static int copy_rings(struct kiln_perf *s, struct kiln_buf *to, size_t cap)
{
	int i, c, err;

	for (i = 0; i < s->ncpus; i++) {
		c = (s->ring_next + i) % s->ncpus;
		if (to->len >= cap) {
			s->ring_next = c;
			return 0;
		}
		if (s->rings[c].fd < 0)
			continue;
		err = copy_ring(s, to, &s->rings[c]);
		if (err)
			return err;
	}
	return 0;
}

static void *reader_main(void *arg)
{
	struct kiln_perf *s = arg;
	struct pollfd pfd[257];
	int c, n;

	n = ring_pollfds(s, pfd);
	pfd[n].fd = s->stop_pipe[0];
	pfd[n].events = POLLIN;
	for (;;) {
		int err;

		/* Wakes at the watermark (a quarter of a ring), and every
		 * 50 ms for the records below it. */
		if (poll(pfd, (nfds_t)n + 1, 50) < 0 && errno != EINTR)
			break;
		if (pfd[n].revents)
			break;
		pthread_mutex_lock(&s->lock);
		/* Memory is bounded: while the drain is behind by as much as
		 * the rings hold, records wait in the rings, and what the
		 * kernel cannot write there it counts as lost. */
		err = copy_rings(s, &s->pending, s->pending_cap);
		if (err)
			s->reader_err = err;
		if (s->pending.len)
			pthread_cond_signal(&s->more);
		pthread_mutex_unlock(&s->lock);
		for (c = 0; c < n; c++)
			pfd[c].revents = 0;
	}
	return NULL;
}

int kiln_perf_start_reader(struct kiln_perf *s)
{
	size_t ring_bytes;
	int err, c;

	if (s->reader_on)
		return 0;
	/* Half the rings (4 MiB at least), and one ring more at most: the
	 * reader and the drain's buffer then hold about what the rings do. */
	s->pending_cap = 4u << 20;
	for (c = 0, ring_bytes = 0; c < s->ncpus; c++)
		if (s->rings[c].fd >= 0)
			ring_bytes += s->rings[c].data_size;
	if (ring_bytes / 2 > s->pending_cap)
		s->pending_cap = ring_bytes / 2;
	if (pipe2(s->stop_pipe, O_CLOEXEC))
		return -errno;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->more, NULL);
	err = pthread_create(&s->reader, NULL, reader_main, s);
	if (err) {
		close(s->stop_pipe[0]);
		close(s->stop_pipe[1]);
		pthread_mutex_destroy(&s->lock);
		pthread_cond_destroy(&s->more);
		return -err;
	}
	s->reader_on = true;
	return 0;
}

void kiln_perf_stop_reader(struct kiln_perf *s)
{
	char c = 'q';

	if (!s->reader_on)
		return;
	if (write(s->stop_pipe[1], &c, 1) < 0) {
		/* cannot happen with an empty pipe; join regardless */
	}
	pthread_join(s->reader, NULL);
	close(s->stop_pipe[0]);
	close(s->stop_pipe[1]);
	pthread_cond_destroy(&s->more);
	pthread_mutex_destroy(&s->lock);
	s->reader_on = false;
}

int kiln_perf_drain(struct kiln_perf *s, kiln_perf_fn fn, void *ctx)
{
	struct rec_ref *refs = NULL;
	size_t n = 0, alloc = 0, off, i;
	int err = 0;

	kiln_buf_reset(&s->arena);
	if (s->reader_on) {
		/* Take what the reader gathered, and what came since. */
		struct kiln_buf t;

		pthread_mutex_lock(&s->lock);
		err = copy_rings(s, &s->pending, s->pending_cap);
		if (!err)
			err = s->reader_err;
		t = s->arena;
		s->arena = s->pending;
		s->pending = t;
		pthread_mutex_unlock(&s->lock);
	} else {
		/* What a stopped reader gathered comes before the rings'
		 * newer records. */
		if (s->pending.len) {
			struct kiln_buf t = s->arena;

			s->arena = s->pending;
			s->pending = t;
		}
		err = copy_rings(s, &s->arena, SIZE_MAX);
	}
	if (err)
		return err;
	for (off = 0; off < s->arena.len;) {
		const struct perf_event_header *h =
			(const void *)(s->arena.data + off);

		if (KILN_GROW(refs, alloc, n + 1, 1024)) {
			free(refs);
			return -ENOMEM;
		}
		refs[n].time = kperf_rec_time(s, s->arena.data + off);
		refs[n].off = off;
		refs[n].seq = n;
		n++;
		off += (h->size + 7) & ~(size_t)7;
	}
	if (n)
		qsort(refs, n, sizeof(*refs), cmp_ref);
	for (i = 0; i < n; i++) {
		struct kiln_perf_event ev;
		int rc = kperf_parse(s, s->arena.data + refs[i].off, &ev);

		if (rc)
			continue;	/* unknown record, or malformed */
		if (s->one_per_thread &&
		    !kperf_own_keep(s, s->arena.data + refs[i].off, &ev))
			continue;	/* the thread's second event */
		if (ev.kind == KILN_PERF_LOST)
			s->lost += ev.lost.lost;
		fn(ctx, &ev);
	}
	free(refs);
	return 0;
}
