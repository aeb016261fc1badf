/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Counting events (session stage).  See stat.h.
 *
 * Each counter is read on its own (PERF_FORMAT_TOTAL_TIME_ENABLED |
 * _RUNNING, no PERF_FORMAT_GROUP): the kernel refuses group reads of
 * inherited events on the kernels kiln runs on, and perf stat reads them
 * the same way.
 */
#include "session/stat.h"
#include "util/buf.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

struct target {
	pid_t tid;
	int cpu;
	int *fds;		/* one per event, -1 where not opened */
	bool dropped;		/* kiln_stat_drop() */
	struct kiln_stat_value *frozen;	/* kiln_stat_retire(): the
					 * counts at the close, per event */
};

struct kiln_stat {
	struct kiln_event *evs;
	int *leader;
	size_t n;
	int *err;		/* per event: 0 once opened somewhere, else the
				 * last "not supported" error */
	bool *opened, *user_only;
	struct target *t;
	size_t nt, t_alloc;
	bool enabled;		/* counters added now start counting */
};

struct kiln_stat *kiln_stat_new(const struct kiln_event *evs, const int *leader,
				size_t n)
{
	struct kiln_stat *s = calloc(1, sizeof(*s));
	size_t i;

	if (!s)
		return NULL;
	s->n = n;
	s->evs = calloc(n ? n : 1, sizeof(*s->evs));
	s->leader = calloc(n ? n : 1, sizeof(*s->leader));
	s->err = calloc(n ? n : 1, sizeof(*s->err));
	s->opened = calloc(n ? n : 1, sizeof(*s->opened));
	s->user_only = calloc(n ? n : 1, sizeof(*s->user_only));
	if (!s->evs || !s->leader || !s->err || !s->opened || !s->user_only) {
		kiln_stat_free(s);
		errno = ENOMEM;
		return NULL;
	}
	for (i = 0; i < n; i++) {
		s->evs[i] = evs[i];
		s->leader[i] = leader && leader[i] >= 0 && (size_t)leader[i] <= i ?
			       leader[i] : (int)i;
	}
	return s;
}

void kiln_stat_free(struct kiln_stat *s)
{
	size_t t, i;

	if (!s)
		return;
	for (t = 0; t < s->nt; t++) {
		for (i = 0; i < s->n; i++)
			if (s->t[t].fds[i] >= 0)
				close(s->t[t].fds[i]);
		free(s->t[t].fds);
		free(s->t[t].frozen);
	}
	free(s->t);
	free(s->evs);
	free(s->leader);
	free(s->err);
	free(s->opened);
	free(s->user_only);
	free(s);
}

static bool not_supported(int err)
{
	return err == -ENOENT || err == -EOPNOTSUPP || err == -ENODEV ||
	       err == -ENXIO || err == -EINVAL;
}

static int open_counter(struct kiln_stat *s, size_t i, pid_t tid, int cpu,
			int group_fd, bool inherit, bool on_exec)
{
	struct perf_event_attr a;

	kiln_event_attr(&s->evs[i], &a);
	a.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
	a.inherit = inherit;
	/* A group member follows its leader's enabling; -p's threads found
	 * while the others count start at once. */
	a.disabled = group_fd < 0 && !s->enabled;
	a.enable_on_exec = on_exec && group_fd < 0;
	a.exclude_kernel = a.exclude_kernel || s->user_only[i];
	a.exclude_hv = a.exclude_kernel;
	return kiln_event_open(&a, tid, cpu, group_fd, &s->user_only[i]);
}

int kiln_stat_add(struct kiln_stat *s, pid_t tid, int cpu, bool inherit,
		  bool on_exec)
{
	struct target *t;
	size_t i;
	int err = 0;

	if (KILN_GROW(s->t, s->t_alloc, s->nt + 1, 8))
		return -ENOMEM;
	t = &s->t[s->nt];
	t->tid = tid;
	t->cpu = cpu;
	t->dropped = false;
	t->frozen = NULL;
	t->fds = malloc((s->n ? s->n : 1) * sizeof(*t->fds));
	if (!t->fds)
		return -ENOMEM;
	for (i = 0; i < s->n; i++)
		t->fds[i] = -1;
	for (i = 0; i < s->n && !err; i++) {
		size_t l = (size_t)s->leader[i];
		int fd;

		if (l != i && t->fds[l] < 0)
			continue;	/* the leader is not here: not counted */
		fd = open_counter(s, i, tid, cpu, l != i ? t->fds[l] : -1,
				  inherit, on_exec);
		if (fd >= 0) {
			t->fds[i] = fd;
			s->opened[i] = true;
		} else if (not_supported(fd)) {
			s->err[i] = fd;
		} else {
			err = fd;
		}
	}
	if (err) {
		for (i = 0; i < s->n; i++)
			if (t->fds[i] >= 0)
				close(t->fds[i]);
		free(t->fds);
		return err;
	}
	s->nt++;
	return 0;
}

static int ioctl_leaders(struct kiln_stat *s, unsigned long req)
{
	size_t t, i;
	int err = 0;

	for (t = 0; t < s->nt; t++)
		for (i = 0; i < s->n; i++)
			if (s->t[t].fds[i] >= 0 && (size_t)s->leader[i] == i &&
			    ioctl(s->t[t].fds[i], req, PERF_IOC_FLAG_GROUP))
				err = -errno;
	return err;
}

int kiln_stat_enable(struct kiln_stat *s)
{
	s->enabled = true;
	return ioctl_leaders(s, PERF_EVENT_IOC_ENABLE);
}

int kiln_stat_disable(struct kiln_stat *s)
{
	s->enabled = false;
	return ioctl_leaders(s, PERF_EVENT_IOC_DISABLE);
}

size_t kiln_stat_ntargets(const struct kiln_stat *s)
{
	return s->nt;
}

pid_t kiln_stat_target_tid(const struct kiln_stat *s, size_t t)
{
	return t < s->nt ? s->t[t].tid : -1;
}

int kiln_stat_drop(struct kiln_stat *s, pid_t tid)
{
	for (size_t k = s->nt; k-- > 0;) {
		struct target *t = &s->t[k];

		if (t->tid != tid || t->cpu != -1 || t->dropped || t->frozen)
			continue;
		for (size_t i = 0; i < s->n; i++)
			if (t->fds[i] >= 0) {
				close(t->fds[i]);
				t->fds[i] = -1;
			}
		t->dropped = true;
		return 0;
	}
	return -ESRCH;
}

static int read_fd(int fd, struct kiln_stat_value *v);

int kiln_stat_retire(struct kiln_stat *s, pid_t tid)
{
	for (size_t k = s->nt; k-- > 0;) {
		struct target *t = &s->t[k];

		if (t->tid != tid || t->cpu != -1 || t->dropped || t->frozen)
			continue;
		t->frozen = calloc(s->n ? s->n : 1, sizeof(*t->frozen));
		if (!t->frozen)
			return -ENOMEM;
		for (size_t i = 0; i < s->n; i++)
			if (t->fds[i] >= 0) {
				read_fd(t->fds[i], &t->frozen[i]);
				close(t->fds[i]);
				t->fds[i] = -1;
			}
		return 0;
	}
	return -ESRCH;
}

bool kiln_stat_target_dropped(const struct kiln_stat *s, size_t t)
{
	return t < s->nt && s->t[t].dropped;
}

enum kiln_stat_state kiln_stat_state(const struct kiln_stat *s, size_t i)
{
	if (s->opened[i])
		return KILN_STAT_OK;
	if (s->err[i])
		return KILN_STAT_UNSUPPORTED;
	return KILN_STAT_NOT_COUNTED;
}

bool kiln_stat_user_only(const struct kiln_stat *s, size_t i)
{
	return s->user_only[i];
}

static int read_fd(int fd, struct kiln_stat_value *v)
{
	uint64_t buf[3];
	ssize_t n;

	do
		n = read(fd, buf, sizeof(buf));
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if (n != sizeof(buf))
		return -EIO;
	v->val += buf[0];
	v->ena += buf[1];
	v->run += buf[2];
	return 0;
}

int kiln_stat_read(struct kiln_stat *s, size_t t, size_t i,
		   struct kiln_stat_value *v)
{
	size_t k;
	int err;

	memset(v, 0, sizeof(*v));
	if (i >= s->n)
		return -EINVAL;
	for (k = 0; k < s->nt; k++) {
		if (t != SIZE_MAX && k != t)
			continue;
		if (s->t[k].frozen) {
			v->val += s->t[k].frozen[i].val;
			v->ena += s->t[k].frozen[i].ena;
			v->run += s->t[k].frozen[i].run;
		}
		if (s->t[k].fds[i] < 0)
			continue;
		err = read_fd(s->t[k].fds[i], v);
		if (err)
			return err;
	}
	return 0;
}

bool kiln_stat_scaled(const struct kiln_stat_value *v, double *value,
		      double *running)
{
	if (!v->run) {
		*value = 0;
		*running = 0;
		return false;
	}
	if (v->run < v->ena) {
		*value = (double)v->val * (double)v->ena / (double)v->run;
		*running = (double)v->run / (double)v->ena;
	} else {
		*value = (double)v->val;
		*running = 1;
	}
	return true;
}
