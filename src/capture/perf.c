/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Sampling through perf_event_open (capture stage): the events' attributes
 * and the events opened, one per CPU.  perfring.c empties their rings,
 * perfrec.c parses the records into events; perfint.h is what the three
 * share.  See perf.h.
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
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "capture/perfint.h"
#include "util/buf.h"

uint64_t kiln_perf_regs_mask(void)
{
	return KILN_PERF_REGS_MASK;	/* util/perfevent.h: the one mask */
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
	/* After every sample_type bit (the identifier, first, moves
	 * everything by 8; a raw field, after the chain, moves the stack:
	 * perfring.c knows both). */
	s->stack_fixed_layout = (s->attr.sample_type & ~(uint64_t)(PERF_SAMPLE_IDENTIFIER |
								 PERF_SAMPLE_RAW)) ==
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
	s->attr.mmap = !a->tasks_only;
	s->attr.mmap2 = !a->tasks_only;
	s->attr.comm = !a->tasks_only;
	s->attr.comm_exec = !a->tasks_only;
	s->attr.task = 1;
	s->attr.sample_id_all = 1;
	s->attr.build_id = !a->tasks_only;
	s->task_counts = a->task_counts;
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
	kperf_own_free(s);
	free(s);
}

static int add_fd(struct kiln_perf *s, int fd)
{
	if (KILN_GROW(s->fds, s->fds_alloc, s->nfds + 1, 16))
		return -ENOMEM;
	s->fds[s->nfds++] = fd;
	return 0;
}

/* fd, just opened on pid, added to the session's fds (and noted first as
 * pid's event where one event per thread is asked).  0 or -errno: then
 * the caller still owns fd. */
static int keep_fd(struct kiln_perf *s, int fd, pid_t pid)
{
	int err = s->one_per_thread ? kperf_own_add(s, fd, pid) : 0;

	return err ? err : add_fd(s, fd);
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
	err = keep_fd(s, fd, pid);
	if (err) {
		close(fd);
		return err;
	}
	if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, r->fd))
		return -errno;
	return 0;
}

int kiln_perf_one_event_per_thread(struct kiln_perf *s)
{
	if (s->nfds)
		return -EBUSY;
	s->one_per_thread = true;
	s->attr.sample_type |= PERF_SAMPLE_IDENTIFIER;
	s->attr2.sample_type |= PERF_SAMPLE_IDENTIFIER;
	return 0;
}

uint32_t kiln_perf_open_seq(const struct kiln_perf *s)
{
	return s->open_seq;
}

uint64_t kiln_perf_dropped_twice(const struct kiln_perf *s)
{
	return s->dropped_twice;
}

int kiln_perf_open(struct kiln_perf *s, pid_t pid, bool inherit)
{
	size_t map_len = (s->pages + 1) * (size_t)getpagesize();
	int c, opened = 0, err = 0;

	s->open_seq++;
	s->attr.inherit = inherit;
	/* Each inherited task's own count when it ends (a READ record per
	 * CPU's event): what its samples missed -- a task that ran less than
	 * a period has none (the second event's never: one column). */
	s->attr.inherit_stat = inherit && s->task_counts;
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
		err = keep_fd(s, fd, pid);
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

/* Events opened while the others count (-p's threads found later)
 * count from their start. */
int kiln_perf_enable(struct kiln_perf *s)
{
	s->attr.disabled = s->attr2.disabled = 0;
	kperf_own_enabled(s);
	return ioctl_all(s, PERF_EVENT_IOC_ENABLE);
}

int kiln_perf_disable(struct kiln_perf *s)
{
	s->attr.disabled = s->attr2.disabled = 1;
	return ioctl_all(s, PERF_EVENT_IOC_DISABLE);
}

size_t kiln_perf_pages(const struct kiln_perf *s)
{
	return s->pages;
}

int kiln_perf_count(struct kiln_perf *s, uint64_t *count)
{
	size_t i;

	*count = 0;
	if (s->has2 || s->one_per_thread)
		return -EOPNOTSUPP;
	/* read_format 0: the value alone. */
	for (i = 0; i < s->nfds; i++) {
		uint64_t v;
		ssize_t n = read(s->fds[i], &v, sizeof(v));

		if (n != (ssize_t)sizeof(v))
			return n < 0 ? -errno : -EIO;
		*count += v;
	}
	return 0;
}
