/*
 * Sampling through perf_event_open (capture stage).  See perf.h.
 *
 * Inherited per-task events cannot be mmap'ed (the kernel refuses mmap of
 * an inherited event with cpu == -1), so, as perf does, kiln opens one event
 * per CPU for the target and lets the kernel follow its children; events
 * for several threads on one CPU share that CPU's buffer through
 * PERF_EVENT_IOC_SET_OUTPUT.
 */
#include "capture/perf.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <fcntl.h>
#include <unistd.h>

#include "util/buf.h"

#ifndef PERF_RECORD_MISC_MMAP_BUILD_ID
#define PERF_RECORD_MISC_MMAP_BUILD_ID (1 << 14)
#endif
#ifndef PERF_RECORD_MISC_SWITCH_OUT_PREEMPT
#define PERF_RECORD_MISC_SWITCH_OUT_PREEMPT (1 << 14)
#endif

#define SAMPLE_TYPE_BASE (PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | \
			  PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN)

struct ring {
	int fd;			/* the event whose buffer this is */
	int cpu;
	void *base;		/* metadata page + data pages */
	size_t data_size;
	size_t map_len;
};

struct kiln_perf {
	struct perf_event_attr attr;
	size_t pages;
	int ncpus;
	bool *cpu_off;		/* CPUs left out by kiln_perf_set_cpus() */
	struct ring *rings;	/* one per CPU, fd -1 until opened */
	int *fds;		/* every event fd */
	size_t nfds, fds_alloc;
	uint64_t lost;
	uint64_t regs_mask;
	bool no_build_id;	/* the kernel refused attr.build_id */
	bool kernel_time;	/* kernel-mode samples wanted without frames */
	bool has2;		/* a second event shares the buffers */
	struct perf_event_attr attr2;
	bool stack_fixed_layout;	/* samples are SAMPLE_TYPE_BASE + regs +
					 * stack: copy_sample_short() applies */
	struct kiln_buf arena;	/* records copied out of the rings */

	/* The reader thread (kiln_perf_start_reader). */
	bool reader_on;
	pthread_t reader;
	pthread_mutex_t lock;	/* the rings' tails, pending, reader_err */
	pthread_cond_t more;	/* pending grew */
	struct kiln_buf pending;	/* records the reader copied out */
	int stop_pipe[2];
	int reader_err;
};

uint64_t kiln_perf_regs_mask(void)
{
#if defined(__x86_64__)
	/* AX BX CX DX SI DI BP SP IP FLAGS CS SS (DS ES FS GS) R8-R15:
	 * everything but the segment registers. */
	return 0xff0fffull & ~((1ull << 12) | (1ull << 13) | (1ull << 14) |
			       (1ull << 15));
#elif defined(__aarch64__)
	return (1ull << 33) - 1;	/* x0-x30, sp, pc */
#else
	return 0;
#endif
}

static long perf_event_open(struct perf_event_attr *a, pid_t pid, int cpu,
			    int group, unsigned long flags)
{
	return syscall(SYS_perf_event_open, a, pid, cpu, group, flags);
}

struct kiln_perf *kiln_perf_new(const struct kiln_perf_attr *a, size_t pages)
{
	struct kiln_perf *s = calloc(1, sizeof(*s));
	long n;
	int i;

	if (!s)
		return NULL;
	s->pages = pages ? pages : 256;
	n = sysconf(_SC_NPROCESSORS_CONF);
	s->ncpus = n > 0 ? (int)n : 1;
	s->rings = calloc((size_t)s->ncpus, sizeof(*s->rings));
	if (!s->rings) {
		free(s);
		errno = ENOMEM;
		return NULL;
	}
	for (i = 0; i < s->ncpus; i++) {
		s->rings[i].fd = -1;
		s->rings[i].cpu = i;
	}
	s->attr.size = sizeof(s->attr);
	s->attr.type = a->type;
	s->attr.config = a->config;
	s->attr.config1 = a->config1;
	s->attr.config2 = a->config2;
	if (a->freq) {
		s->attr.freq = 1;
		s->attr.sample_freq = a->sample;
	} else {
		s->attr.sample_period = a->sample;
	}
	s->attr.sample_type = SAMPLE_TYPE_BASE;
	if (a->stack_bytes) {
		s->regs_mask = kiln_perf_regs_mask();
		s->attr.sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
		s->attr.sample_regs_user = s->regs_mask;
		s->attr.sample_stack_user = a->stack_bytes;
	}
	if (a->raw)
		s->attr.sample_type |= PERF_SAMPLE_RAW;
	/* After every sample_type bit (a raw field moves the stack). */
	s->stack_fixed_layout = s->attr.sample_type ==
		(SAMPLE_TYPE_BASE | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER);
	/* A tracepoint fires in the kernel: exclude_kernel would drop every
	 * one of its samples (perf leaves it unset for tracepoints too). */
	s->attr.exclude_kernel = !a->kernel && !a->kernel_time &&
				 a->type != PERF_TYPE_TRACEPOINT;
	s->kernel_time = a->kernel_time && !a->kernel;
	s->attr.exclude_callchain_kernel = !a->kernel;
	s->attr.context_switch = a->context_switch;
	/* Times comparable with clock_gettime(), for the time labels. */
	s->attr.use_clockid = 1;
	s->attr.clockid = CLOCK_MONOTONIC;
	s->attr.exclude_hv = 1;
	s->attr.disabled = 1;
	s->attr.enable_on_exec = a->enable_on_exec;
	s->attr.mmap = 1;
	s->attr.mmap2 = 1;
	s->attr.comm = 1;
	s->attr.comm_exec = 1;
	s->attr.task = 1;
	s->attr.sample_id_all = 1;
	s->attr.build_id = 1;
	s->attr.watermark = 1;
	s->attr.wakeup_watermark = (uint32_t)(s->pages * (size_t)getpagesize() / 8);
	return s;
}

void kiln_perf_free(struct kiln_perf *s)
{
	size_t i;
	int c;

	if (!s)
		return;
	/* The reader copies out of the rings: it stops before they go (an
	 * error path that freed a running session crashed it). */
	kiln_perf_stop_reader(s);
	for (c = 0; c < s->ncpus; c++)
		if (s->rings[c].base)
			munmap(s->rings[c].base, s->rings[c].map_len);
	for (i = 0; i < s->nfds; i++)
		close(s->fds[i]);
	free(s->fds);
	free(s->rings);
	free(s->cpu_off);
	kiln_buf_release(&s->arena);
	kiln_buf_release(&s->pending);
	free(s);
}

static int add_fd(struct kiln_perf *s, int fd)
{
	if (KILN_GROW(s->fds, s->fds_alloc, s->nfds + 1, 16))
		return -ENOMEM;
	s->fds[s->nfds++] = fd;
	return 0;
}

int kiln_perf_add_event(struct kiln_perf *s, const struct kiln_perf_attr *a)
{
	if (s->has2 || s->nfds)
		return -EBUSY;
	s->attr2 = s->attr;
	s->attr2.type = a->type;
	s->attr2.config = a->config;
	s->attr2.freq = a->freq;
	if (a->freq)
		s->attr2.sample_freq = a->sample;
	else
		s->attr2.sample_period = a->sample;
	s->attr2.exclude_kernel = !a->kernel && a->type != PERF_TYPE_TRACEPOINT;
	s->attr2.exclude_callchain_kernel = !a->kernel;
	s->attr2.mmap = s->attr2.mmap2 = s->attr2.comm = s->attr2.comm_exec = 0;
	s->attr2.task = s->attr2.context_switch = s->attr2.build_id = 0;
	s->has2 = true;
	return 0;
}

bool kiln_perf_monotonic(const struct kiln_perf *s)
{
	return s->attr.use_clockid;
}

static int open_one(struct kiln_perf *s, struct perf_event_attr *a, pid_t pid,
		    int cpu)
{
	long fd = perf_event_open(a, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);

	/* Kernels before 5.12 do not know attr.build_id. */
	if (fd < 0 && errno == EINVAL && a->build_id) {
		a->build_id = 0;
		s->no_build_id = true;
		fd = perf_event_open(a, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
	}
	/* Nor those before 4.1 use_clockid. */
	if (fd < 0 && errno == EINVAL && a->use_clockid) {
		a->use_clockid = 0;
		fd = perf_event_open(a, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
	}
	/*
	 * perf_event_paranoid 2 lets an unprivileged user sample user space
	 * only: kernel-mode time then goes uncounted, as the summary says.
	 */
	if (fd < 0 && (errno == EACCES || errno == EPERM) && s->kernel_time &&
	    !s->attr.exclude_kernel && !s->nfds) {
		s->attr.exclude_kernel = 1;
		fd = perf_event_open(&s->attr, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
	}
	return fd < 0 ? -errno : (int)fd;
}

/* The second event on cpu, writing into ring r. */
static int open_second(struct kiln_perf *s, pid_t pid, struct ring *r)
{
	int fd, err;

	/* Buffers are shared only between events of the same clock. */
	s->attr2.use_clockid = s->attr.use_clockid;
	s->attr2.inherit = s->attr.inherit;
	fd = open_one(s, &s->attr2, pid, r->cpu);
	if (fd < 0)
		return fd;
	err = add_fd(s, fd);
	if (err) {
		close(fd);
		return err;
	}
	if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, r->fd))
		return -errno;
	return 0;
}

int kiln_perf_open(struct kiln_perf *s, pid_t pid, bool inherit)
{
	size_t map_len = (s->pages + 1) * (size_t)getpagesize();
	int c, opened = 0, err = 0;

	s->attr.inherit = inherit;
	for (c = 0; c < s->ncpus; c++) {
		struct ring *r = &s->rings[c];
		int fd;

		if (s->cpu_off && s->cpu_off[c])
			continue;
		fd = open_one(s, &s->attr, pid, c);

		if (fd == -ENODEV)	/* offline CPU */
			continue;
		if (fd < 0) {
			err = fd;
			break;
		}
		err = add_fd(s, fd);
		if (err) {
			close(fd);
			break;
		}
		if (r->fd < 0) {
			void *base = mmap(NULL, map_len, PROT_READ | PROT_WRITE,
					  MAP_SHARED, fd, 0);

			/* Unprivileged users may lock only perf_event_mlock_kb:
			 * smaller buffers, down to 16 pages. */
			while (base == MAP_FAILED && (errno == EPERM || errno == ENOMEM) &&
			       s->pages > 16) {
				s->pages /= 2;
				map_len = (s->pages + 1) * (size_t)getpagesize();
				base = mmap(NULL, map_len, PROT_READ | PROT_WRITE,
					    MAP_SHARED, fd, 0);
			}
			if (base == MAP_FAILED) {
				err = -errno;
				break;
			}
			r->fd = fd;
			r->base = base;
			r->data_size = s->pages * (size_t)getpagesize();
			r->map_len = map_len;
		} else if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, r->fd)) {
			err = -errno;
			break;
		}
		if (s->has2) {
			err = open_second(s, pid, r);
			if (err)
				break;
		}
		opened++;
	}
	if (!err && !opened)
		err = -ENODEV;
	return err;
}

int kiln_perf_set_cpus(struct kiln_perf *s, const char *list)
{
	bool *off = malloc((size_t)s->ncpus * sizeof(*off));
	const char *p = list;
	int c;

	if (!off)
		return -ENOMEM;
	for (c = 0; c < s->ncpus; c++)
		off[c] = true;
	while (*p) {
		char *end;
		long a = strtol(p, &end, 10), b = a;

		if (end == p || a < 0)
			goto bad;
		if (*end == '-') {
			p = end + 1;
			b = strtol(p, &end, 10);
			if (end == p || b < a)
				goto bad;
		}
		if (b >= s->ncpus || (*end && *end != ','))
			goto bad;
		for (c = (int)a; c <= (int)b; c++)
			off[c] = false;
		p = *end ? end + 1 : end;
		if (*end && !*p)
			goto bad;
	}
	if (p == list)
		goto bad;
	free(s->cpu_off);
	s->cpu_off = off;
	return 0;
bad:
	free(off);
	return -EINVAL;
}

bool kiln_perf_kernel_counted(const struct kiln_perf *s)
{
	return !s->attr.exclude_kernel;
}

static int ioctl_all(struct kiln_perf *s, unsigned long req)
{
	size_t i;

	for (i = 0; i < s->nfds; i++)
		if (ioctl(s->fds[i], req, 0))
			return -errno;
	return 0;
}

int kiln_perf_enable(struct kiln_perf *s)
{
	return ioctl_all(s, PERF_EVENT_IOC_ENABLE);
}

int kiln_perf_disable(struct kiln_perf *s)
{
	return ioctl_all(s, PERF_EVENT_IOC_DISABLE);
}

int kiln_perf_wait(struct kiln_perf *s, int timeout_ms)
{
	struct pollfd pfd[256];
	int c, n = 0;

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

	for (c = 0; c < s->ncpus && n < 256; c++) {
		if (s->rings[c].fd < 0)
			continue;
		pfd[n].fd = s->rings[c].fd;
		pfd[n].events = POLLIN;
		n++;
	}
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
	uint64_t pos = sizeof(*h) + 5 * 8, nr, abi, size, dyn;
	size_t nregs = (size_t)__builtin_popcountll(s->regs_mask);
	struct perf_event_header nh = *h;

	if (h->type != PERF_RECORD_SAMPLE || !s->stack_fixed_layout || s->has2)
		return 0;
	if (pos + 8 > h->size)
		return 0;
	ring_get(r, data, tail + pos, &nr, 8);
	if (nr > h->size / 8)
		return 0;
	pos += 8 + nr * 8;
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

/* sample_id trailer of non-sample records: pid, tid, time, cpu+res. */
#define ID_TRAILER 24

static uint64_t rec_time(const struct kiln_perf *s, const char *rec)
{
	const struct perf_event_header *h = (const void *)rec;
	uint64_t t;

	if (h->type == PERF_RECORD_SAMPLE) {
		/* ip, pid/tid, then time. */
		memcpy(&t, rec + sizeof(*h) + 16, 8);
		return t;
	}
	if (h->size < sizeof(*h) + ID_TRAILER)
		return 0;
	memcpy(&t, rec + h->size - ID_TRAILER + 8, 8);
	return t;
}

static int parse_sample(const struct kiln_perf *s, const char *rec,
			struct kiln_perf_event *ev)
{
	const struct perf_event_header *h = (const void *)rec;
	const char *p = rec + sizeof(*h), *end = rec + h->size;
	struct kiln_perf_sample *sm = &ev->sample;
	uint64_t v;

#define TAKE(dst) do { if (p + 8 > end) return -EINVAL; \
		memcpy(&(dst), p, 8); p += 8; } while (0)
	memset(sm, 0, sizeof(*sm));
	TAKE(sm->ip);
	TAKE(v);
	sm->pid = (uint32_t)v;
	sm->tid = (uint32_t)(v >> 32);
	TAKE(sm->time);
	TAKE(v);
	sm->cpu = (uint32_t)v;
	TAKE(sm->period);
	TAKE(sm->nr);
	if (sm->nr > (uint64_t)(end - p) / 8)
		return -EINVAL;
	sm->ips = (const uint64_t *)p;
	p += sm->nr * 8;
	if (s->attr.sample_type & PERF_SAMPLE_RAW) {
		uint32_t size;

		if (p + 4 > end)
			return -EINVAL;
		memcpy(&size, p, 4);
		if (size > (uint64_t)(end - p) - 4)
			return -EINVAL;
		/* Events without raw data write an empty u32. */
		sm->raw_size = size > 4 ? size : 0;
		sm->raw = p + 4;
		p += 4 + size;
	}
	if (s->attr.sample_type & PERF_SAMPLE_REGS_USER) {
		TAKE(sm->abi);
		if (sm->abi) {
			size_t n = (size_t)__builtin_popcountll(s->regs_mask);

			if (p + n * 8 > end)
				return -EINVAL;
			sm->regs = (const uint64_t *)p;
			p += n * 8;
		}
	}
	if (s->attr.sample_type & PERF_SAMPLE_STACK_USER) {
		TAKE(sm->stack_size);
		if (sm->stack_size) {
			if (sm->stack_size > (uint64_t)(end - p))
				return -EINVAL;
			sm->stack = p;
			p += sm->stack_size;
			TAKE(sm->stack_dyn);
			if (sm->stack_dyn > sm->stack_size)
				sm->stack_dyn = sm->stack_size;
		}
	}
#undef TAKE
	sm->user = (h->misc & PERF_RECORD_MISC_CPUMODE_MASK) ==
		   PERF_RECORD_MISC_USER;
	ev->time = sm->time;
	return 0;
}

static int parse(const struct kiln_perf *s, const char *rec,
		 struct kiln_perf_event *ev)
{
	const struct perf_event_header *h = (const void *)rec;
	const char *body = rec + sizeof(*h);
	size_t blen = h->size - sizeof(*h);

	ev->time = rec_time(s, rec);
	switch (h->type) {
	case PERF_RECORD_SAMPLE:
		ev->kind = KILN_PERF_SAMPLE;
		return parse_sample(s, rec, ev);
	case PERF_RECORD_MMAP2: {
		struct {
			uint32_t pid, tid;
			uint64_t addr, len, pgoff;
			union {
				struct { uint32_t maj, min; uint64_t ino, gen; };
				struct { uint8_t size, r0; uint16_t r1;
					 uint8_t id[20]; };
			};
			uint32_t prot, flags;
		} m;

		if (blen < sizeof(m) + ID_TRAILER)
			return -EINVAL;
		memcpy(&m, body, sizeof(m));
		ev->kind = KILN_PERF_MMAP;
		memset(&ev->mmap, 0, sizeof(ev->mmap));
		ev->mmap.pid = m.pid;
		ev->mmap.tid = m.tid;
		ev->mmap.start = m.addr;
		ev->mmap.len = m.len;
		ev->mmap.pgoff = m.pgoff;
		ev->mmap.prot = m.prot;
		if (h->misc & PERF_RECORD_MISC_MMAP_BUILD_ID) {
			ev->mmap.build_id_size = m.size > 20 ? 20 : m.size;
			memcpy(ev->mmap.build_id, m.id, ev->mmap.build_id_size);
		} else {
			ev->mmap.maj = m.maj;
			ev->mmap.min = m.min;
			ev->mmap.ino = m.ino;
		}
		ev->mmap.filename = body + sizeof(m);
		/* NUL-terminated and padded inside the record. */
		if (!memchr(ev->mmap.filename, 0, blen - sizeof(m)))
			return -EINVAL;
		return 0;
	}
	case PERF_RECORD_MMAP: {
		struct { uint32_t pid, tid; uint64_t addr, len, pgoff; } m;

		if (blen < sizeof(m) + ID_TRAILER)
			return -EINVAL;
		memcpy(&m, body, sizeof(m));
		ev->kind = KILN_PERF_MMAP;
		memset(&ev->mmap, 0, sizeof(ev->mmap));
		ev->mmap.pid = m.pid;
		ev->mmap.tid = m.tid;
		ev->mmap.start = m.addr;
		ev->mmap.len = m.len;
		ev->mmap.pgoff = m.pgoff;
		ev->mmap.prot = (h->misc & PERF_RECORD_MISC_MMAP_DATA) ? 1 : 5;
		ev->mmap.filename = body + sizeof(m);
		if (!memchr(ev->mmap.filename, 0, blen - sizeof(m)))
			return -EINVAL;
		return 0;
	}
	case PERF_RECORD_COMM: {
		uint32_t ids[2];

		if (blen < 8 + ID_TRAILER)
			return -EINVAL;
		memcpy(ids, body, 8);
		ev->kind = KILN_PERF_COMM;
		ev->comm.pid = ids[0];
		ev->comm.tid = ids[1];
		ev->comm.comm = body + 8;
		ev->comm.exec = h->misc & PERF_RECORD_MISC_COMM_EXEC;
		if (!memchr(ev->comm.comm, 0, blen - 8))
			return -EINVAL;
		return 0;
	}
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT: {
		uint32_t ids[4];

		if (blen < 16)
			return -EINVAL;
		memcpy(ids, body, 16);
		ev->kind = h->type == PERF_RECORD_FORK ? KILN_PERF_FORK :
							 KILN_PERF_EXIT;
		ev->task.pid = ids[0];
		ev->task.ppid = ids[1];
		ev->task.tid = ids[2];
		ev->task.ptid = ids[3];
		return 0;
	}
	case PERF_RECORD_SWITCH:
	case PERF_RECORD_SWITCH_CPU_WIDE: {
		/* The trailer names the thread that left (out) or came in. */
		uint32_t ids[2];

		if (h->size < sizeof(*h) + ID_TRAILER)
			return -EINVAL;
		memcpy(ids, rec + h->size - ID_TRAILER, 8);
		ev->kind = KILN_PERF_SWITCH;
		ev->sw.pid = ids[0];
		ev->sw.tid = ids[1];
		ev->sw.out = h->misc & PERF_RECORD_MISC_SWITCH_OUT;
		ev->sw.preempt = ev->sw.out &&
				 (h->misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT);
		return 0;
	}
	case PERF_RECORD_LOST: {
		uint64_t v[2];

		if (blen < 16)
			return -EINVAL;
		memcpy(v, body, 16);
		ev->kind = KILN_PERF_LOST;
		ev->lost.lost = v[1];
		return 0;
	}
	default:
		return 1;	/* not interesting */
	}
}

static int copy_rings(struct kiln_perf *s, struct kiln_buf *to)
{
	int c, err;

	for (c = 0; c < s->ncpus; c++) {
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
	int c, n = 0;

	for (c = 0; c < s->ncpus && n < 256; c++) {
		if (s->rings[c].fd < 0)
			continue;
		pfd[n].fd = s->rings[c].fd;
		pfd[n].events = POLLIN;
		n++;
	}
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
		err = copy_rings(s, &s->pending);
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
	int err;

	if (s->reader_on)
		return 0;
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
		err = copy_rings(s, &s->pending);
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
		err = copy_rings(s, &s->arena);
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
		refs[n].time = rec_time(s, s->arena.data + off);
		refs[n].off = off;
		refs[n].seq = n;
		n++;
		off += (h->size + 7) & ~(size_t)7;
	}
	if (n)
		qsort(refs, n, sizeof(*refs), cmp_ref);
	for (i = 0; i < n; i++) {
		struct kiln_perf_event ev;
		int rc = parse(s, s->arena.data + refs[i].off, &ev);

		if (rc)
			continue;	/* unknown record, or malformed */
		if (ev.kind == KILN_PERF_LOST)
			s->lost += ev.lost.lost;
		fn(ctx, &ev);
	}
	free(refs);
	return 0;
}
