/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Event names (capture stage).  See events.h.
 *
 * Hardware-cache events are encoded as perf does: config = cache id |
 * (operation << 8) | (result << 16) with PERF_TYPE_HW_CACHE.  Kernel PMU
 * events read their type from /sys/bus/event_source/devices/PMU/type and
 * place each term's value in the bits that format/TERM names
 * ("config:0-7,32-35", "config1:0-31").
 */
#include "capture/events.h"
#include "util/buf.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define PMU_ROOT "/sys/bus/event_source/devices"

struct named {
	const char *name, *alias;
	uint64_t config;
};

static const struct named sw_events[] = {
	{ "alignment-faults", NULL, PERF_COUNT_SW_ALIGNMENT_FAULTS },
	{ "cgroup-switches", NULL, 11 /* PERF_COUNT_SW_CGROUP_SWITCHES */ },
	{ "context-switches", "cs", PERF_COUNT_SW_CONTEXT_SWITCHES },
	{ "cpu-clock", NULL, PERF_COUNT_SW_CPU_CLOCK },
	{ "cpu-migrations", "migrations", PERF_COUNT_SW_CPU_MIGRATIONS },
	{ "dummy", NULL, PERF_COUNT_SW_DUMMY },
	{ "emulation-faults", NULL, PERF_COUNT_SW_EMULATION_FAULTS },
	{ "major-faults", NULL, PERF_COUNT_SW_PAGE_FAULTS_MAJ },
	{ "minor-faults", NULL, PERF_COUNT_SW_PAGE_FAULTS_MIN },
	{ "page-faults", "faults", PERF_COUNT_SW_PAGE_FAULTS },
	{ "task-clock", NULL, PERF_COUNT_SW_TASK_CLOCK },
};

static const struct named hw_events[] = {
	{ "branch-instructions", "branches", PERF_COUNT_HW_BRANCH_INSTRUCTIONS },
	{ "branch-misses", NULL, PERF_COUNT_HW_BRANCH_MISSES },
	{ "bus-cycles", NULL, PERF_COUNT_HW_BUS_CYCLES },
	{ "cache-misses", NULL, PERF_COUNT_HW_CACHE_MISSES },
	{ "cache-references", NULL, PERF_COUNT_HW_CACHE_REFERENCES },
	{ "cpu-cycles", "cycles", PERF_COUNT_HW_CPU_CYCLES },
	{ "instructions", NULL, PERF_COUNT_HW_INSTRUCTIONS },
	{ "ref-cycles", NULL, PERF_COUNT_HW_REF_CPU_CYCLES },
	{ "stalled-cycles-backend", "idle-cycles-backend",
	  PERF_COUNT_HW_STALLED_CYCLES_BACKEND },
	{ "stalled-cycles-frontend", "idle-cycles-frontend",
	  PERF_COUNT_HW_STALLED_CYCLES_FRONTEND },
};

/* perf's cache names (tools/perf/util/evsel.c: evsel__hw_cache). */
static const char *const cache_names[] = {
	[PERF_COUNT_HW_CACHE_L1D] = "L1-dcache",
	[PERF_COUNT_HW_CACHE_L1I] = "L1-icache",
	[PERF_COUNT_HW_CACHE_LL] = "LLC",
	[PERF_COUNT_HW_CACHE_DTLB] = "dTLB",
	[PERF_COUNT_HW_CACHE_ITLB] = "iTLB",
	[PERF_COUNT_HW_CACHE_BPU] = "branch",
	[PERF_COUNT_HW_CACHE_NODE] = "node",
};
static const char *const cache_ops[] = { "load", "store", "prefetch" };
static const char *const cache_ops_pl[] = { "loads", "stores", "prefetches" };

/* Which operations a cache has, as perf lists them (evsel__is_cache_op_valid). */
static bool cache_op_valid(int cache, int op)
{
	if (cache == PERF_COUNT_HW_CACHE_L1I || cache == PERF_COUNT_HW_CACHE_ITLB ||
	    cache == PERF_COUNT_HW_CACHE_BPU)
		return op == PERF_COUNT_HW_CACHE_OP_READ;
	if (cache == PERF_COUNT_HW_CACHE_DTLB)
		return op != PERF_COUNT_HW_CACHE_OP_PREFETCH;
	return true;
}

#define N(a) (sizeof(a) / sizeof((a)[0]))

static void set_name(struct kiln_event *ev, const char *name)
{
	snprintf(ev->name, sizeof(ev->name), "%s", name);
}

static void init_event(struct kiln_event *ev)
{
	memset(ev, 0, sizeof(*ev));
	ev->scale = 1;
}

static void fill_named(struct kiln_event *ev, enum kiln_ev_kind kind,
		       const struct named *e)
{
	init_event(ev);
	set_name(ev, e->name);
	ev->kind = kind;
	ev->type = kind == KILN_EV_SOFTWARE ? PERF_TYPE_SOFTWARE : PERF_TYPE_HARDWARE;
	ev->config = e->config;
	if (kind == KILN_EV_SOFTWARE && (e->config == PERF_COUNT_SW_CPU_CLOCK ||
					 e->config == PERF_COUNT_SW_TASK_CLOCK)) {
		ev->time_ns = true;
		snprintf(ev->unit, sizeof(ev->unit), "msec");
	}
}

static void fill_cache(struct kiln_event *ev, int cache, int op, int miss)
{
	init_event(ev);
	ev->kind = KILN_EV_CACHE;
	ev->type = PERF_TYPE_HW_CACHE;
	ev->config = (uint64_t)cache | ((uint64_t)op << 8) | ((uint64_t)miss << 16);
	if (miss)
		snprintf(ev->name, sizeof(ev->name), "%s-%s-misses",
			 cache_names[cache], cache_ops[op]);
	else
		snprintf(ev->name, sizeof(ev->name), "%s-%s",
			 cache_names[cache], cache_ops_pl[op]);
}

static bool lookup_named(const char *name, struct kiln_event *ev)
{
	size_t i;

	for (i = 0; i < N(sw_events); i++)
		if (!strcmp(name, sw_events[i].name) ||
		    (sw_events[i].alias && !strcmp(name, sw_events[i].alias))) {
			fill_named(ev, KILN_EV_SOFTWARE, &sw_events[i]);
			set_name(ev, name);	/* perf prints the name given */
			return true;
		}
	for (i = 0; i < N(hw_events); i++)
		if (!strcmp(name, hw_events[i].name) ||
		    (hw_events[i].alias && !strcmp(name, hw_events[i].alias))) {
			fill_named(ev, KILN_EV_HARDWARE, &hw_events[i]);
			set_name(ev, name);
			return true;
		}
	return false;
}

/* "L1-dcache-load-misses", "LLC-loads", "dTLB-store-misses"; also the
 * singular "-load" and "-load-miss" forms perf accepts. */
static bool lookup_cache(const char *name, struct kiln_event *ev)
{
	size_t c;
	int op, miss;

	for (c = 0; c < N(cache_names); c++) {
		size_t n;
		const char *rest;

		if (!cache_names[c])
			continue;
		n = strlen(cache_names[c]);
		if (strncasecmp(name, cache_names[c], n) || name[n] != '-')
			continue;
		rest = name + n + 1;
		for (op = 0; op < 3; op++) {
			size_t on = strlen(cache_ops[op]);
			const char *tail;

			if (!cache_op_valid((int)c, op))
				continue;
			if (!strcasecmp(rest, cache_ops_pl[op]) ||
			    !strcasecmp(rest, cache_ops[op])) {
				miss = 0;
			} else if (!strncasecmp(rest, cache_ops[op], on) &&
				   rest[on] == '-' &&
				   (tail = rest + on + 1,
				    !strcasecmp(tail, "misses") || !strcasecmp(tail, "miss"))) {
				miss = 1;
			} else {
				continue;
			}
			fill_cache(ev, (int)c, op, miss);
			return true;
		}
	}
	return false;
}

static int read_line(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return -errno;
	if (!fgets(buf, (int)size, f)) {
		fclose(f);
		buf[0] = 0;
		return -EIO;
	}
	fclose(f);
	n = strlen(buf);
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = 0;
	return 0;
}

/* Places value v into the field that format "config1:0-7,32-35" names. */
static int apply_format(struct kiln_event *ev, const char *fmt, uint64_t v)
{
	uint64_t *dst;
	const char *p;

	if (!strncmp(fmt, "config2:", 8)) {
		dst = &ev->config2;
		p = fmt + 8;
	} else if (!strncmp(fmt, "config1:", 8)) {
		dst = &ev->config1;
		p = fmt + 8;
	} else if (!strncmp(fmt, "config:", 7)) {
		dst = &ev->config;
		p = fmt + 7;
	} else {
		return -EINVAL;
	}
	while (*p) {
		char *end;
		unsigned long lo = strtoul(p, &end, 10), hi = lo, b;

		if (end == p)
			return -EINVAL;
		p = end;
		if (*p == '-') {
			hi = strtoul(p + 1, &end, 10);
			if (end == p + 1)
				return -EINVAL;
			p = end;
		}
		if (hi > 63 || lo > hi)
			return -EINVAL;
		for (b = lo; b <= hi; b++) {
			if (v & 1)
				*dst |= 1ull << b;
			else
				*dst &= ~(1ull << b);
			v >>= 1;
		}
		if (*p == ',')
			p++;
		else if (*p)
			return -EINVAL;
	}
	return 0;
}

/* Applies "event=0x3c,umask=0,inv" terms of PMU `pmu`. */
static int apply_terms(struct kiln_event *ev, const char *pmu, const char *terms,
		       int depth)
{
	char buf[256], path[512], fmt[128];
	char *save = NULL, *t;
	int err = 0;

	if (depth > 2)
		return -EINVAL;
	snprintf(buf, sizeof(buf), "%s", terms);
	for (t = strtok_r(buf, ",", &save); t && !err; t = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(t, '=');
		uint64_t v = 1;

		while (*t == ' ')
			t++;
		if (!*t)
			continue;
		if (eq) {
			char *end;

			*eq = 0;
			v = strtoull(eq + 1, &end, 0);
			if (end == eq + 1 || *end)
				return -EINVAL;
		}
		if (strchr(t, '/') || strstr(t, ".."))
			return -EINVAL;
		/* perf's raw terms, for any PMU. */
		if (eq && !strcmp(t, "config")) {
			ev->config = v;
			continue;
		}
		if (eq && !strcmp(t, "config1")) {
			ev->config1 = v;
			continue;
		}
		if (eq && !strcmp(t, "config2")) {
			ev->config2 = v;
			continue;
		}
		snprintf(path, sizeof(path), PMU_ROOT "/%s/format/%s", pmu, t);
		if (!read_line(path, fmt, sizeof(fmt))) {
			err = apply_format(ev, fmt, v);
			continue;
		}
		if (eq)
			return -EINVAL;
		/* A bare word: an event alias of the PMU, "msr/tsc/". */
		snprintf(path, sizeof(path), PMU_ROOT "/%s/events/%s", pmu, t);
		if (read_line(path, fmt, sizeof(fmt)))
			return -ENOENT;
		err = apply_terms(ev, pmu, fmt, depth + 1);
		if (err)
			return err;
		snprintf(path, sizeof(path), PMU_ROOT "/%s/events/%s.scale", pmu, t);
		if (!read_line(path, fmt, sizeof(fmt)))
			ev->scale = strtod(fmt, NULL);
		snprintf(path, sizeof(path), PMU_ROOT "/%s/events/%s.unit", pmu, t);
		if (!read_line(path, fmt, sizeof(fmt)))
			snprintf(ev->unit, sizeof(ev->unit), "%.15s", fmt);
	}
	return err;
}

/* "pmu/terms/" */
static int lookup_pmu(const char *name, struct kiln_event *ev)
{
	const char *slash = strchr(name, '/');
	size_t plen = slash ? (size_t)(slash - name) : 0, n = strlen(name);
	char pmu[64], path[512], line[64], terms[256];
	int err;

	if (!slash || !plen || plen >= sizeof(pmu) || n < plen + 2 ||
	    name[n - 1] != '/' || memchr(name, '.', plen))
		return -ENOENT;
	memcpy(pmu, name, plen);
	pmu[plen] = 0;
	snprintf(path, sizeof(path), PMU_ROOT "/%s/type", pmu);
	if (read_line(path, line, sizeof(line)))
		return -ENOENT;
	init_event(ev);
	ev->kind = KILN_EV_PMU;
	ev->type = (uint32_t)strtoul(line, NULL, 10);
	snprintf(terms, sizeof(terms), "%.*s", (int)(n - plen - 2), slash + 1);
	err = apply_terms(ev, pmu, terms, 0);
	if (err)
		return err;
	set_name(ev, name);
	return 0;
}

static const char *const tracefs_roots[] = { "/sys/kernel/tracing",
					     "/sys/kernel/debug/tracing" };

const char *kiln_event_tracefs(void)
{
	char path[128];
	size_t i;

	for (i = 0; i < N(tracefs_roots); i++) {
		snprintf(path, sizeof(path), "%s/events", tracefs_roots[i]);
		if (!access(path, F_OK))
			return tracefs_roots[i];
	}
	/* Not mounted: root can mount it, as perf does. */
	if (!mount("nodev", "/sys/kernel/tracing", "tracefs", 0, NULL))
		return tracefs_roots[0];
	return NULL;
}

static int lookup_tracepoint(const char *name, struct kiln_event *ev)
{
	const char *colon = strchr(name, ':'), *root;
	char path[512], line[32];
	int err;

	if (!colon || colon == name || !colon[1] || strchr(colon + 1, '/') ||
	    strchr(colon + 1, ':') || memchr(name, '/', (size_t)(colon - name)) ||
	    strstr(name, ".."))
		return -ENOENT;
	root = kiln_event_tracefs();
	if (!root)
		return -ENODEV;
	snprintf(path, sizeof(path), "%s/events/%.*s/%s/id", root,
		 (int)(colon - name), name, colon + 1);
	err = read_line(path, line, sizeof(line));
	if (err)
		return err == -ENOENT || err == -ENOTDIR ? -ENOENT : err;
	init_event(ev);
	ev->kind = KILN_EV_TRACEPOINT;
	ev->type = PERF_TYPE_TRACEPOINT;
	ev->config = strtoull(line, NULL, 10);
	ev->counting = true;
	set_name(ev, name);
	return 0;
}

int kiln_event_parse(const char *name, struct kiln_event *ev)
{
	char base[128];
	const char *mod = NULL, *colon = strrchr(name, ':');
	int err;

	if (strlen(name) >= sizeof(base))
		return -ENOENT;
	snprintf(base, sizeof(base), "%s", name);
	/* A trailing ":u", ":k" (or ":uk") is a modifier unless the whole
	 * name is a tracepoint. */
	if (colon && colon[1] && strspn(colon + 1, "uk") == strlen(colon + 1)) {
		base[colon - name] = 0;
		mod = colon + 1;
	}
	if (lookup_named(base, ev) || lookup_cache(base, ev)) {
		err = 0;
	} else if (strchr(base, '/')) {
		err = lookup_pmu(base, ev);
	} else if (strchr(base, ':')) {
		err = lookup_tracepoint(base, ev);
	} else if (mod) {
		err = lookup_tracepoint(name, ev);
		mod = NULL;
	} else {
		err = -ENOENT;
	}
	if (err)
		return err;
	if (mod) {
		ev->exclude_kernel = !strchr(mod, 'k');
		ev->exclude_user = !strchr(mod, 'u');
		set_name(ev, name);
	}
	return 0;
}

const char *kiln_event_kind_name(enum kiln_ev_kind k)
{
	static const char *const names[] = {
		[KILN_EV_SOFTWARE] = "Software event",
		[KILN_EV_HARDWARE] = "Hardware event",
		[KILN_EV_CACHE] = "Hardware cache event",
		[KILN_EV_PMU] = "Kernel PMU event",
		[KILN_EV_TRACEPOINT] = "Tracepoint event",
	};

	return k < KILN_EV_NKINDS ? names[k] : "event";
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted entries of a directory (not . and ..); the caller frees them. */
static int list_dir(const char *path, char ***out, size_t *n)
{
	DIR *d = opendir(path);
	struct dirent *de;
	char **v = NULL;
	size_t cnt = 0, alloc = 0;

	*out = NULL;
	*n = 0;
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		if (KILN_GROW(v, alloc, cnt + 1, 64))
			goto out_nomem;
		v[cnt] = strdup(de->d_name);
		if (!v[cnt])
			goto out_nomem;
		cnt++;
	}
	closedir(d);
	if (cnt)
		qsort(v, cnt, sizeof(*v), cmp_str);
	*out = v;
	*n = cnt;
	return 0;
out_nomem:
	closedir(d);
	while (cnt)
		free(v[--cnt]);
	free(v);
	return -ENOMEM;
}

static void free_list(char **v, size_t n)
{
	while (n)
		free(v[--n]);
	free(v);
}

static int foreach_pmu(kiln_event_fn fn, void *ctx)
{
	char **pmus, **evs, name[256];
	size_t np, ne, i, j;
	int rc = 0;

	if (list_dir(PMU_ROOT, &pmus, &np))
		return 0;
	for (i = 0; i < np && !rc; i++) {
		char path[512];

		snprintf(path, sizeof(path), PMU_ROOT "/%s/events", pmus[i]);
		if (list_dir(path, &evs, &ne))
			continue;
		for (j = 0; j < ne && !rc; j++) {
			struct kiln_event ev;

			if (strchr(evs[j], '.'))	/* .scale, .unit, .snapshot */
				continue;
			snprintf(name, sizeof(name), "%s/%s/", pmus[i], evs[j]);
			if (!lookup_pmu(name, &ev))
				rc = fn(ctx, &ev, NULL);
		}
		free_list(evs, ne);
	}
	free_list(pmus, np);
	return rc;
}

static int foreach_tracepoint(kiln_event_fn fn, void *ctx)
{
	const char *root = kiln_event_tracefs();
	char **subs, **evs, path[512];
	size_t ns, ne, i, j;
	int rc = 0;

	if (!root)
		return 0;
	snprintf(path, sizeof(path), "%s/events", root);
	if (list_dir(path, &subs, &ns))
		return 0;
	for (i = 0; i < ns && !rc; i++) {
		snprintf(path, sizeof(path), "%s/events/%s", root, subs[i]);
		if (list_dir(path, &evs, &ne))
			continue;
		for (j = 0; j < ne && !rc; j++) {
			struct kiln_event ev;
			char idp[768], line[32];

			snprintf(idp, sizeof(idp), "%s/%s/id", path, evs[j]);
			if (read_line(idp, line, sizeof(line)))
				continue;	/* "enable", "filter" */
			init_event(&ev);
			ev.kind = KILN_EV_TRACEPOINT;
			ev.type = PERF_TYPE_TRACEPOINT;
			ev.config = strtoull(line, NULL, 10);
			ev.counting = true;
			snprintf(ev.name, sizeof(ev.name), "%s:%s", subs[i], evs[j]);
			rc = fn(ctx, &ev, NULL);
		}
		free_list(evs, ne);
	}
	free_list(subs, ns);
	return rc;
}

int kiln_event_foreach(kiln_event_fn fn, void *ctx)
{
	struct kiln_event ev;
	size_t i;
	int c, op, miss, rc = 0;

	for (i = 0; i < N(sw_events) && !rc; i++) {
		fill_named(&ev, KILN_EV_SOFTWARE, &sw_events[i]);
		rc = fn(ctx, &ev, sw_events[i].alias);
	}
	for (i = 0; i < N(hw_events) && !rc; i++) {
		fill_named(&ev, KILN_EV_HARDWARE, &hw_events[i]);
		rc = fn(ctx, &ev, hw_events[i].alias);
	}
	for (c = 0; c < (int)N(cache_names) && !rc; c++)
		for (op = 0; op < 3 && !rc; op++)
			for (miss = 0; miss < 2 && !rc; miss++) {
				if (!cache_op_valid(c, op))
					continue;
				fill_cache(&ev, c, op, miss);
				rc = fn(ctx, &ev, NULL);
			}
	if (!rc)
		rc = foreach_pmu(fn, ctx);
	if (!rc)
		rc = foreach_tracepoint(fn, ctx);
	return rc < 0 ? rc : 0;
}

void kiln_event_attr(const struct kiln_event *ev, struct perf_event_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = ev->type;
	a->config = ev->config;
	a->config1 = ev->config1;
	a->config2 = ev->config2;
	a->exclude_kernel = ev->exclude_kernel;
	a->exclude_user = ev->exclude_user;
}

int kiln_event_open(struct perf_event_attr *a, pid_t tid, int cpu,
		    int group_fd, bool *user_only)
{
	long fd = syscall(SYS_perf_event_open, a, tid, cpu, group_fd,
			  PERF_FLAG_FD_CLOEXEC);

	if (fd < 0 && (errno == EACCES || errno == EPERM) && !a->exclude_kernel) {
		a->exclude_kernel = 1;
		a->exclude_hv = 1;
		fd = syscall(SYS_perf_event_open, a, tid, cpu, group_fd,
			     PERF_FLAG_FD_CLOEXEC);
		if (fd >= 0 && user_only)
			*user_only = true;
	}
	return fd < 0 ? -errno : (int)fd;
}

int kiln_event_probe(const struct kiln_event *ev)
{
	struct perf_event_attr a;
	int fd;

	kiln_event_attr(ev, &a);
	a.disabled = 1;
	fd = kiln_event_open(&a, 0, -1, -1, NULL);
	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}

/* Edit distance, case-insensitive, capped at 255. */
static unsigned distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), i, j;
	unsigned row[130], prev, tmp;

	if (la > 128 || lb > 128)
		return 255;
	for (j = 0; j <= lb; j++)
		row[j] = (unsigned)j;
	for (i = 1; i <= la; i++) {
		prev = row[0];
		row[0] = (unsigned)i;
		for (j = 1; j <= lb; j++) {
			unsigned cost = tolower((unsigned char)a[i - 1]) !=
					tolower((unsigned char)b[j - 1]);
			unsigned best = prev + cost;

			if (row[j] + 1 < best)
				best = row[j] + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			tmp = row[j];
			row[j] = best;
			prev = tmp;
		}
	}
	return row[lb];
}

struct suggest {
	const char *name;
	bool tracepoints;
	char **names;
	unsigned *dist;
	size_t n, have;
};

static void consider(struct suggest *s, const char *cand)
{
	unsigned d = distance(s->name, cand);
	size_t i, k;

	for (i = 0; i < s->have; i++)
		if (!strcmp(s->names[i], cand))
			return;
	for (i = 0; i < s->have && s->dist[i] <= d; i++)
		;
	if (i >= s->n)
		return;
	k = s->have < s->n ? s->have : s->n - 1;
	if (s->have == s->n)
		free(s->names[s->n - 1]);
	else
		s->have++;
	for (; k > i; k--) {
		s->names[k] = s->names[k - 1];
		s->dist[k] = s->dist[k - 1];
	}
	s->names[i] = strdup(cand);
	s->dist[i] = d;
	if (!s->names[i]) {
		memmove(&s->names[i], &s->names[i + 1], (s->have - i - 1) * sizeof(char *));
		memmove(&s->dist[i], &s->dist[i + 1], (s->have - i - 1) * sizeof(unsigned));
		s->have--;
	}
}

static int suggest_one(void *ctx, const struct kiln_event *ev, const char *alias)
{
	struct suggest *s = ctx;

	if (ev->kind == KILN_EV_TRACEPOINT && !s->tracepoints)
		return 0;
	consider(s, ev->name);
	if (alias)
		consider(s, alias);
	return 0;
}

size_t kiln_event_suggest(const char *name, char **names, size_t n)
{
	unsigned dist[16];
	struct suggest s = { name, strchr(name, ':') != NULL, names, dist,
			     n > 16 ? 16 : n, 0 };

	kiln_event_foreach(suggest_one, &s);
	return s.have;
}
