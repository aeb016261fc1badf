/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `kiln heap`: heap profile of a command (cli stage).  Runs it with the
 * preload agent streaming a heap trace (docs/heap-trace.md), reads the
 * trace's frames while the program runs (as heaptrack interprets its
 * trace), and at the end prints a summary (allocations, peak, leaks,
 * temporary allocations, the top sites of each) and writes a pprof heap
 * profile and a memory-over-time SVG.  See docs/kiln-heap.md.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "format/format.h"
#include "format/heaptrace.h"
#include "profile/heapsite.h"
#include "profile/hprof.h"
#include "profile/profile.h"
#include "render/timeline.h"
#include "symbolize/symbolize.h"
#include "util/buf.h"
#include "util/child.h"
#include "util/diag.h"
#include "util/file.h"

enum { OPT_SAMPLE = 256, OPT_TRACE_ONLY };

static const struct option opts[] = {
	{ "sample", required_argument, NULL, OPT_SAMPLE },
	{ "output", required_argument, NULL, 'o' },
	{ "top", required_argument, NULL, 'n' },
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* Sites drawn in the timeline. */
#define TIMELINE_BANDS 10

/*
 * The trace as it grows: bytes read from the file and not yet consumed
 * (a frame still being written), fed to the analysis.
 */
struct tail {
	const char *path;
	int fd;
	size_t off;			/* file bytes read so far */
	struct kiln_buf pend;
	struct kiln_heaptrace_stream *s;
	struct kiln_heaptrace_info *info;	/* s's */
	struct kiln_diag *d;		/* s's */
};

/*
 * Whether the trace's path names another file than the one read: the
 * program exec'd, and its new image (same pid) kept the trace so far as
 * PATH.old, complete (the image before wrote everything first), and
 * started its own in PATH.
 */
static bool tail_moved(const struct tail *t)
{
	struct stat a, b;

	return !fstat(t->fd, &a) && !stat(t->path, &b) &&
	       (a.st_ino != b.st_ino || a.st_dev != b.st_dev);
}

/* Reads what the file gained and feeds the complete frames.  0 or the
 * analysis's error (then nothing more is fed). */
static int tail_poll(struct tail *t, bool final)
{
	size_t used;
	bool moved;
	int err;

	if (!t->s)
		return -ENOMEM;
again:
	if (t->fd < 0) {
		t->fd = open(t->path, O_RDONLY | O_CLOEXEC);
		if (t->fd < 0)
			return 0;	/* not created yet */
	}
	/* Before reading: once moved, the file read is complete. */
	moved = tail_moved(t);
	for (;;) {
		ssize_t n;

		if (kiln_buf_grow(&t->pend, 1 << 20))
			return -ENOMEM;
		n = read(t->fd, t->pend.data + t->pend.len, t->pend.cap - t->pend.len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		t->pend.len += (size_t)n;
		t->off += (size_t)n;
	}
	err = kiln_heaptrace_stream_feed(t->s, t->pend.data, t->pend.len,
					 final || moved, &used);
	memmove(t->pend.data, t->pend.data + used, t->pend.len - used);
	t->pend.len -= used;
	if (err || !moved)
		return err;
	/* The summary is the last image's, the program the user ran after
	 * its wrappers (env, a shell's exec): start again on the new file. */
	kiln_heaptrace_stream_free(t->s);
	kiln_heaptrace_info_release(t->info);
	memset(t->info, 0, sizeof(*t->info));
	t->d->msg[0] = '\0';
	t->s = kiln_heaptrace_stream_new(t->info, t->d);
	if (!t->s)
		return -ENOMEM;
	close(t->fd);
	t->fd = -1;
	t->off = 0;
	t->pend.len = 0;
	goto again;
}

/* What the command runs with: the agent preloaded, its trace asked for. */
struct heap_env {
	const char *pre, *trace, *sample;
};

/* In the child, before exec (kiln_child.setup). */
static void heap_env(void *arg)
{
	const struct heap_env *e = arg;

	setenv("LD_PRELOAD", e->pre, 1);
	setenv("KILN_HEAP_TRACE", e->trace, 1);
	setenv("KILN_HEAP_SAMPLE", e->sample, 1);
}

/*
 * Starts cmd at once, setup(arg) run in the child before exec; a failed
 * exec is said and leaves the child exited with 127 for the caller to
 * wait for.  Returns the spawn's -errno (nothing started) or 0.
 */
static int start_child(struct kiln_child *c, char **cmd,
		       void (*setup)(void *arg), void *arg)
{
	int err;

	c->setup = setup;
	c->setup_arg = arg;
	err = kiln_child_spawn(c, cmd);
	if (err)
		return err;
	err = kiln_child_start(c);
	if (err)	/* the child has exited 127, as a shell's would */
		fprintf(stderr, "kiln: cannot run '%s': %s\n", cmd[0],
			strerror(-err));
	return 0;
}

/*
 * Runs cmd with the agent, reading its trace as it grows (every 50 ms);
 * returns its wait status, or -errno.
 */
static int run(char **cmd, const char *agent, struct tail *tail,
	       const char *sample, double *secs)
{
	const char *trace = tail->path;
	struct timespec nap = { 0, 50000000 };
	struct kiln_buf pre = KILN_BUF_INIT;
	double t0 = kiln_cli_now();
	struct sigaction sa, old_int, old_term, old_hup;
	struct kiln_child child = KILN_CHILD_INIT;
	struct heap_env env;
	int status = 0, err;

	kiln_child_preload(&pre, agent);
	if (!pre.data)
		return -ENOMEM;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = kiln_cli_on_stop;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	/* A closed terminal (SIGHUP) ends the program as SIGTERM does, and
	 * kiln still writes what it traced. */
	sigaction(SIGHUP, &sa, &old_hup);
	env = (struct heap_env){ pre.data, trace, sample };
	err = start_child(&child, cmd, heap_env, &env);
	if (err) {
		kiln_buf_release(&pre);
		return err;
	}
	kiln_buf_release(&pre);
	/* `kiln heap ... | head`: the summary's reader may go away; the
	 * files are written all the same (a write to it fails instead). */
	signal(SIGPIPE, SIG_IGN);
	for (;;) {
		err = kiln_child_wait(&child, false, &status, NULL);
		if (err == 1)
			break;
		if (err < 0 && err != -EINTR)
			break;
		if (err == 0) {
			/* An error stops the feeding; analyse() reports it. */
			tail_poll(tail, false);
			nanosleep(&nap, NULL);
		}
		/* Ctrl-C reaches the whole process group by itself. */
		if (kiln_cli_stop_signal && kiln_cli_stop_signal != SIGINT)
			kill(child.pid, kiln_cli_stop_signal);
		kiln_cli_stop_signal = 0;
	}
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	sigaction(SIGHUP, &old_hup, NULL);
	kiln_child_release(&child);
	*secs = kiln_cli_now() - t0;
	return status;
}

struct ranked {
	uint32_t site;
	double v;
};

static int by_value(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;

	if (x->v != y->v)
		return x->v < y->v ? 1 : -1;
	return x->site < y->site ? -1 : x->site > y->site;
}

enum measure { M_ALLOCATED, M_CALLS, M_PEAK, M_LEAKED, M_TEMPORARY };

static double measure(const struct kiln_hprof_site *s, enum measure m)
{
	switch (m) {
	case M_ALLOCATED: return s->bytes;
	case M_CALLS: return s->calls;
	case M_PEAK: return s->peak_bytes;
	case M_LEAKED: return s->live_bytes;
	case M_TEMPORARY: return s->temporary;
	}
	return 0;
}

static void print_top(FILE *out, const struct kiln_hprof *h, struct kiln_prof *p,
		      const long *so, enum measure m, const char *title,
		      double total, long top, struct ranked *rk)
{
	char **names = NULL;
	long *samples;
	size_t n = 0, shown, i;
	char a[48];

	for (i = 1; i <= h->nsites; i++) {
		double v = measure(&h->sites[i], m);

		if (llround(v) > 0) {
			rk[n].site = (uint32_t)i;
			rk[n].v = v;
			n++;
		}
	}
	if (!n)
		return;
	qsort(rk, n, sizeof(*rk), by_value);
	shown = n < (size_t)top ? n : (size_t)top;
	/* The rows shown are named together, so that no two read alike. */
	samples = malloc((shown + 1) * sizeof(*samples));
	for (i = 0; samples && i < shown; i++)
		samples[i] = so[rk[i].site];
	if (!samples || kiln_heapsite_labels(p, samples, shown, &names)) {
		free(samples);
		return;
	}
	free(samples);
	fprintf(out, "\n%s:\n", title);
	for (i = 0; i < shown; i++) {
		const struct kiln_hprof_site *s = &h->sites[rk[i].site];

		if (m == M_CALLS || m == M_TEMPORARY)
			snprintf(a, sizeof(a), "%lld", (long long)llround(rk[i].v));
		else
			kiln_bytes_str(rk[i].v, a, sizeof(a));
		fprintf(out, "  %10s %5.1f%%", a, total > 0 ? 100.0 * rk[i].v / total : 0);
		if (m == M_PEAK || m == M_LEAKED)
			fprintf(out, " %8lld blocks",
				(long long)llround(m == M_PEAK ? s->peak_objs : s->live_objs));
		else if (m == M_ALLOCATED)
			fprintf(out, " %8lld calls", (long long)llround(s->calls));
		fprintf(out, "  %s\n", names[i]);
	}
	if (n > (size_t)top)
		fprintf(out, "  (%zu more sites)\n", n - (size_t)top);
	kiln_heapsite_labels_free(names, shown);
}

/*
 * Why a trace ends without its end record: the writer stops at a full
 * disk (and says so on stderr), else the process was killed.
 */
static const char *cut_reason(const char *trace, char *buf, size_t n)
{
	struct statvfs v;
	uint64_t avail;

	if (statvfs(trace, &v))
		return "process killed?";
	avail = (uint64_t)v.f_bavail * v.f_frsize;
	if (avail >= (1u << 20))
		return "process killed?";
	snprintf(buf, n, "its file system has %" PRIu64 " KiB free: the disk "
		 "filled up", avail >> 10);
	return buf;
}

static void print_summary(FILE *out, const struct kiln_hprof *h,
			  const struct kiln_heaptrace_info *info,
			  const char *cut_why, struct kiln_prof *p,
			  const long *so, long top)
{
	const struct kiln_hprof_totals *t = &h->tot;
	double secs = (double)(t->t_last - t->t_first) / 1e9;
	struct ranked *rk = malloc((h->nsites + 1) * sizeof(*rk));
	char a[48];

	fprintf(out, "\n");
	if (info->sample_bytes)
		fprintf(out, "sampled: one allocation per %" PRIu64 " bytes on "
			"average; the numbers are estimates\n", info->sample_bytes);
	fprintf(out, "calls to allocation functions: %lld (%.0f/s over %.6f s)\n",
		(long long)llround(t->calls), secs > 0 ? t->calls / secs : 0, secs);
	fprintf(out, "temporary allocations: %lld (%.1f%%)\n",
		(long long)llround(t->temporary),
		t->calls > 0 ? 100.0 * t->temporary / t->calls : 0);
	fprintf(out, "freed by another thread: %lld\n",
		(long long)llround(t->cross_thread));
	kiln_bytes_str(t->allocated, a, sizeof(a));
	fprintf(out, "bytes allocated in total: %lld (%s)\n",
		(long long)llround(t->allocated), a);
	kiln_bytes_str(t->peak, a, sizeof(a));
	fprintf(out, "peak heap memory consumption: %lld (%s) in %lld blocks "
		"after %.6f s\n", (long long)llround(t->peak), a,
		(long long)llround(t->peak_objs), (double)t->peak_t / 1e9);
	kiln_bytes_str(t->leaked, a, sizeof(a));
	fprintf(out, "total memory leaked: %lld (%s) in %lld blocks%s\n",
		(long long)llround(t->leaked), a, (long long)llround(t->leaked_objs),
		t->ended ? "" : " (no normal exit: live when the trace ends)");
	if (t->lost)
		fprintf(out, "warning: %" PRIu64 " events were lost (buffers "
			"full): the totals are lower bounds\n", t->lost);
	if (t->unknown_frees)
		fprintf(out, "warning: %" PRIu64 " frees of blocks the trace does "
			"not know\n", t->unknown_frees);
	if (t->late)
		fprintf(out, "warning: %" PRIu64 " events came out of time order\n",
			t->late);
	if (info->truncated)
		fprintf(out, "warning: the trace was cut after byte %zu (%s): read "
			"up to there\n", info->truncated_at, cut_why);
	if (!rk)
		return;
	print_top(out, h, p, so, M_ALLOCATED, "most bytes allocated", t->allocated,
		  top, rk);
	print_top(out, h, p, so, M_CALLS, "most allocation calls", t->calls, top, rk);
	print_top(out, h, p, so, M_PEAK, "most memory at the peak", t->peak, top, rk);
	print_top(out, h, p, so, M_LEAKED, "most memory leaked", t->leaked, top, rk);
	print_top(out, h, p, so, M_TEMPORARY, "most temporary allocations",
		  t->temporary, top, rk);
	free(rk);
}

/* The memory-over-time chart: the sites that held the most at any time. */
static int write_timeline(const struct kiln_hprof *h, struct kiln_prof *p,
			  const long *so, const char *cmdline, struct kiln_buf *svg)
{
	struct kiln_timeline_band bands[TIMELINE_BANDS];
	uint32_t ids[TIMELINE_BANDS];
	long samples[TIMELINE_BANDS];
	char **names = NULL;
	double *vals = NULL;
	struct kiln_timeline tl = { 0 };
	long n = kiln_heapsite_top(h, TIMELINE_BANDS, ids);
	size_t i, nb;
	int err = 0;

	if (n < 0)
		return (int)n;
	nb = (size_t)n < TIMELINE_BANDS ? (size_t)n : TIMELINE_BANDS;
	for (i = 0; i < nb; i++)
		samples[i] = so[ids[i]];
	vals = calloc(nb * h->nbuckets + 1, sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	/* Named together: no two bands of the legend read alike. */
	err = kiln_heapsite_labels(p, samples, nb, &names);
	if (err)
		goto out;
	for (i = 0; i < nb; i++) {
		kiln_hprof_site_series(h, ids[i], vals + i * h->nbuckets);
		bands[i].label = names[i];
		bands[i].values = vals + i * h->nbuckets;
		bands[i].peak = h->sites[ids[i]].peak_bytes;
	}
	tl.subtitle = cmdline;
	tl.n = h->nbuckets;
	tl.interval_s = (double)h->bucket_ns / 1e9;
	/* The stacks' series are taken at each bucket's maximum. */
	tl.total = h->total_max;
	tl.max = NULL;
	tl.bands = bands;
	tl.nbands = nb;
	tl.peak = h->tot.peak;
	tl.peak_s = (double)h->tot.peak_t / 1e9;
	if (tl.n)
		err = kiln_timeline_svg(&tl, svg);
	else
		err = -ENODATA;
out:
	kiln_heapsite_labels_free(names, nb);
	free(vals);
	return err;
}

/* Reads the trace, prints the summary, writes the profile and the SVG. */
/*
 * The traces an exec kept of the images before the last: PATH.old,
 * PATH.old.2, ... (those of an earlier run were removed first).  How many.
 */
static int earlier_images(const char *trace)
{
	struct kiln_buf old = KILN_BUF_INIT;
	int n;

	for (n = 0; ; n++) {
		kiln_buf_reset(&old);
		if (n)
			kiln_buf_addf(&old, "%s.old.%d", trace, n + 1);
		else
			kiln_buf_addf(&old, "%s.old", trace);
		if (!old.data || access(old.data, F_OK))
			break;
	}
	kiln_buf_release(&old);
	return n;
}

static int analyse(struct tail *tail, struct kiln_heaptrace_info *infop,
		   struct kiln_diag *dp, const char *prefix, long top, bool quiet)
{
	const char *trace = tail->path;
	struct kiln_heaptrace_info info;
	char cutbuf[128];
	struct kiln_diag d;
	struct kiln_hprof *h = NULL;
	struct kiln_prof *p = NULL;
	struct kiln_sym *sym = NULL;
	struct kiln_buf out = KILN_BUF_INIT, path = KILN_BUF_INIT;
	long *so = NULL;
	int err, execs, rc = KILN_EXIT_FAIL;

	/* The rest of the trace, now that the program is gone. */
	err = tail_poll(tail, true);
	if (tail->fd < 0) {
		err = errno;
		kiln_cli_error("no heap trace '%s': %s (was libkiln.so preloaded? "
			       "a static binary cannot preload it)", trace,
			       strerror(err));
		return KILN_EXIT_FAIL;
	}
	if (!err)
		err = kiln_heaptrace_stream_end(tail->s, tail->off, &h);
	info = *infop;
	d = *dp;
	if (err) {
		if (err == -EINVAL)
			kiln_cli_error("'%s': read as heap-trace: %s", trace, d.msg);
		else
			kiln_cli_error("'%s': %s", trace, strerror(-err));
		goto out;
	}
	p = kiln_prof_new();
	sym = kiln_sym_new(NULL);
	if (!p || !sym) {
		kiln_cli_error("out of memory");
		goto out;
	}
	err = kiln_hprof_prof(h, KILN_HPROF_GO, p, &so);
	if (!err)
		err = kiln_sym_load_trace_perfmap(sym, (int)info.pid,
						  info.start_realtime_ns);
	if (!err && h->nmaps)
		err = kiln_sym_load_trace_jitdump(sym, h->maps[h->nmaps],
						  h->maps_len[h->nmaps], (int)info.pid,
						  info.start_realtime_ns);
	if (!err)
		err = kiln_sym_prof(sym, p, 0);
	if (!err) {
		p->time_nanos = (int64_t)info.start_realtime_ns;
		if (info.cmdline && *info.cmdline)
			kiln_prof_add_comment(p, info.cmdline);
		err = kiln_prof_error(p);
	}
	if (err) {
		kiln_cli_error("building the heap profile: %s", strerror(-err));
		goto out;
	}
	print_summary(stderr, h, &info,
		      info.truncated ? cut_reason(trace, cutbuf, sizeof(cutbuf)) : "",
		      p, so, top);

	kiln_buf_addf(&path, "%s.heap.pb.gz", prefix);
	err = kiln_pprof_write(p, &out, true);
	if (err) {
		kiln_cli_error("encoding the heap profile: %s", strerror(-err));
		goto out;
	}
	rc = kiln_cli_write(path.data, out.data, out.len, NULL, 0);
	if (rc)
		goto out;
	kiln_buf_reset(&out);
	kiln_buf_reset(&path);
	kiln_buf_addf(&path, "%s.heap.svg", prefix);
	err = write_timeline(h, p, so, info.cmdline, &out);
	if (err == -ENODATA) {
		if (!quiet)
			fprintf(stderr, "kiln: no allocation: no timeline\n");
	} else if (err) {
		kiln_cli_error("drawing the timeline: %s", strerror(-err));
		rc = KILN_EXIT_FAIL;
		goto out;
	} else {
		rc = kiln_cli_write(path.data, out.data, out.len, NULL, 0);
		if (rc)
			goto out;
	}
	execs = earlier_images(trace);
	if (!quiet && execs == 1)
		fprintf(stderr, "\nkiln heap: the program exec'd: this is the new "
			"image's heap; the one before is in '%s.old'\n", trace);
	else if (!quiet && execs > 1)
		fprintf(stderr, "\nkiln heap: the program exec'd %d times: this is "
			"the last image's heap; those before are in '%s.old', "
			"then '%s.old.N' for N = 2 to %d, in the order they ran\n",
			execs, trace, trace, execs);
	if (!quiet)
		fprintf(stderr, "\nkiln: wrote '%s.heap.pb.gz'%s%s%s (trace '%s')\n",
			prefix, err ? "" : ", timeline in '", err ? "" : prefix,
			err ? "" : ".heap.svg'", trace);
	rc = KILN_EXIT_OK;
out:
	free(so);
	kiln_sym_free(sym);
	kiln_prof_free(p);
	kiln_hprof_free(h);
	kiln_buf_release(&out);
	kiln_buf_release(&path);
	return rc;
}

/* The traces the other processes of the tree (forked children, and
 * programs the command started) wrote during the run: named, since the
 * summary above is the first process's only. */
static void name_tree_traces(const char *trace, unsigned long long since)
{
	struct kiln_buf names = KILN_BUF_INIT;
	const char *p;
	int n, i;

	if (kiln_pid_siblings(trace, since, &names, &n) || !n)
		goto out;
	fprintf(stderr, "\nkiln heap: %d other process%s of the tree traced "
		"%s heap (not in the summary above; kiln top, flame and serve "
		"read each):\n", n, n > 1 ? "es" : "", n > 1 ? "their" : "its");
	for (i = 0, p = names.data; i < n; i++, p += strlen(p) + 1)
		fprintf(stderr, "  '%s'\n", p);
out:
	kiln_buf_release(&names);
}

int kiln_cmd_heap(int argc, char **argv)
{
	struct kiln_buf agent = KILN_BUF_INIT, core = KILN_BUF_INIT;
	struct kiln_buf trace = KILN_BUF_INIT;
	struct tail tail = { .fd = -1 };
	struct kiln_heaptrace_info info = { 0 };
	struct kiln_diag d = { "" };
	const char *prefix = "kiln", *sample = "0";
	bool quiet = kiln_cli_quiet;
	double secs = 0;
	long top = 5;
	int c, status, rc, i;
	struct timespec t0;
	char *end;

	while ((c = getopt_long(argc, argv, "+o:n:qh", opts, NULL)) != -1) {
		switch (c) {
		case OPT_SAMPLE: {
			long long v = strtoll(optarg, &end, 10);

			if (*end || end == optarg || v < 0)
				return kiln_cli_usage_error("heap",
					"bad --sample '%s': want a byte count (0: every "
					"allocation)", optarg);
			sample = optarg;
			break;
		}
		case 'o': prefix = optarg; break;
		case 'n':
			top = strtol(optarg, &end, 10);
			if (*end || end == optarg || top < 0)
				return kiln_cli_usage_error("heap",
					"bad -n '%s': want a count", optarg);
			break;
		case 'q': quiet = true; break;
		case 'h': kiln_cli_usage("heap", false); return 0;
		default: return kiln_cli_usage_error("heap", "unknown option");
		}
	}
	if (optind >= argc)
		return kiln_cli_usage_error("heap", "nothing to run: give a command "
					    "after --");
	if (!*prefix)
		return kiln_cli_usage_error("heap", "empty -o prefix");
	/* The malloc interposer and libkiln.so, both in front of the C
	 * library: libkiln.so has hooks of its own (fork, exec, _exit). */
	if (kiln_cli_find_agent(&agent, "libkiln-malloc.so") ||
	    kiln_cli_find_agent(&core, "libkiln.so") ||
	    kiln_buf_addf(&agent, ":%s", core.data)) {
		kiln_cli_error("cannot find libkiln-malloc.so and libkiln.so next to "
			       "kiln or in ../lib: set KILN_AGENT=/path/to/libkiln.so "
			       "(with libkiln-malloc.so beside it)");
		rc = KILN_EXIT_FAIL;
		goto out;
	}
	kiln_buf_addf(&trace, "%s.trace.zst", prefix);
	if (!trace.data) {
		rc = KILN_EXIT_FAIL;
		goto out;
	}
	/* A trace left by an earlier run must not pass for this one's. */
	if (unlink(trace.data) && errno != ENOENT) {
		kiln_cli_error("cannot replace '%s': %s", trace.data, strerror(errno));
		rc = KILN_EXIT_FAIL;
		goto out;
	}
	/* Nor the earlier images' of an earlier run (an exec keeps them). */
	for (i = 1; ; i++) {
		struct kiln_buf old = KILN_BUF_INIT;
		int gone;

		if (i == 1)
			kiln_buf_addf(&old, "%s.old", trace.data);
		else
			kiln_buf_addf(&old, "%s.old.%d", trace.data, i);
		gone = old.data ? unlink(old.data) : -1;
		kiln_buf_release(&old);
		if (gone)
			break;
	}
	tail.path = trace.data;
	tail.info = &info;
	tail.d = &d;
	tail.s = kiln_heaptrace_stream_new(&info, &d);
	if (!tail.s) {
		kiln_cli_error("out of memory");
		rc = KILN_EXIT_FAIL;
		goto out;
	}
	clock_gettime(CLOCK_REALTIME, &t0);
	status = run(argv + optind, agent.data, &tail, sample, &secs);
	if (status < 0) {
		kiln_cli_error("cannot start '%s': %s", argv[optind],
			       strerror(-status));
		rc = KILN_EXIT_FAIL;
		goto out;
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 127 &&
	    access(trace.data, F_OK)) {
		rc = 127;	/* the command did not run; the child said why */
		goto out;
	}
	if (!quiet) {
		fprintf(stderr, "\nkiln heap: '%s' ", argv[optind]);
		if (WIFSIGNALED(status))
			fprintf(stderr, "was killed by signal %d (%s)", WTERMSIG(status),
				strsignal(WTERMSIG(status)));
		else
			fprintf(stderr, "exited with status %d", WEXITSTATUS(status));
		fprintf(stderr, " after %.3f s\n", secs);
	}
	rc = analyse(&tail, &info, &d, prefix, top, quiet);
	if (!quiet)
		name_tree_traces(trace.data, (unsigned long long)t0.tv_sec *
				 1000000000ull + (unsigned long long)t0.tv_nsec);
	if (!rc)
		rc = kiln_child_exit_status(status);
out:
	kiln_heaptrace_stream_free(tail.s);
	kiln_heaptrace_info_release(&info);
	kiln_buf_release(&tail.pend);
	if (tail.fd >= 0)
		close(tail.fd);
	kiln_buf_release(&agent);
	kiln_buf_release(&core);
	kiln_buf_release(&trace);
	return rc;
}
