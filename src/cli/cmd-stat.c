/*
 * `kiln stat`: counts events for a command, running processes, or whole
 * CPUs, as `perf stat` does: its default events, scaling of multiplexed
 * counters, derived metrics, intervals, repeats with their spread, per
 * thread counts, and perf's CSV and JSON lines (cli stage).
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <locale.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "capture/events.h"
#include "session/stat.h"
#include "cli/cli.h"
#include "util/buf.h"
#include "util/child.h"

enum { OPT_DURATION = 256, OPT_PER_THREAD, OPT_JSON };

static const struct option opts[] = {
	{ "event", required_argument, NULL, 'e' },
	{ "pid", required_argument, NULL, 'p' },
	{ "all-cpus", no_argument, NULL, 'a' },
	{ "cpu", required_argument, NULL, 'C' },
	{ "duration", required_argument, NULL, OPT_DURATION },
	{ "interval-print", required_argument, NULL, 'I' },
	{ "repeat", required_argument, NULL, 'r' },
	{ "per-thread", no_argument, NULL, OPT_PER_THREAD },
	{ "field-separator", required_argument, NULL, 'x' },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "output", required_argument, NULL, 'o' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static const char *const default_events[] = {
	"task-clock", "context-switches", "cpu-migrations", "page-faults",
	"cycles", "instructions", "branches", "branch-misses",
};

/* Running mean and spread (Welford), for -r. */
struct spread {
	unsigned n;
	double mean, m2;
};

static void spread_add(struct spread *s, double v)
{
	double d = v - s->mean;

	s->n++;
	s->mean += d / s->n;
	s->m2 += d * (v - s->mean);
}

/* perf's "+-": the standard deviation of the mean, relative to it, in %. */
static double spread_pct(const struct spread *s)
{
	double sd;

	if (s->n < 2 || s->mean == 0)
		return 0;
	sd = sqrt(s->m2 / (s->n - 1) / s->n);
	return 100 * sd / fabs(s->mean);
}

struct opts {
	struct kiln_event *evs;
	int *leader;
	size_t n;
	pid_t *pids;
	int npids;
	int *cpus;
	int ncpus;
	const char *pid_arg, *cpu_arg;
	bool all_cpus, per_thread, json;
	const char *sep;		/* -x */
	double duration;
	long interval_ms;
	long repeat;
	char **cmd;
	int ncmd;
	FILE *out;
};

/* The values of one print: per event. */
struct vals {
	double v;			/* scaled */
	double running;			/* 0..1 */
	uint64_t run;
	enum kiln_stat_state state;	/* OK but never ran: not counted */
	bool counted;
	double var;			/* -r: spread in % */
};

struct line_ctx {
	const struct opts *o;
	double interval_ts;		/* < 0: not interval mode */
	const char *thread;		/* "comm-tid" or NULL */
	double elapsed_ns;		/* for CPUs utilized */
	bool repeat;
};

/* ---- derived metrics (perf's stat-shadow.c) ---- */

static int find_event(const struct opts *o, const struct vals *v, uint32_t type,
		      uint64_t config)
{
	size_t i;

	for (i = 0; i < o->n; i++)
		if (o->evs[i].type == type && o->evs[i].config == config &&
		    v[i].counted)
			return (int)i;
	return -1;
}

static int find_clock(const struct opts *o, const struct vals *v)
{
	size_t i;

	for (i = 0; i < o->n; i++)
		if (o->evs[i].time_ns && v[i].counted)
			return (int)i;
	return -1;
}

/* "of all L1-dcache accesses" for a cache miss event and its loads. */
static const char *cache_ratio_unit(uint64_t cache)
{
	switch (cache) {
	case 0: return "of all L1-dcache accesses";
	case 1: return "of all L1-icache accesses";
	case 2: return "of all LL-cache accesses";
	case 3: return "of all dTLB cache accesses";
	case 4: return "of all iTLB cache accesses";
	case 5: return "of all branch accesses";
	default: return "of all node accesses";
	}
}

/* Fills the metric of event i; false when it has none. */
static bool metric(const struct line_ctx *c, const struct vals *v, size_t i,
		   double *mv, char *unit, size_t usize)
{
	const struct opts *o = c->o;
	const struct kiln_event *ev = &o->evs[i];
	int clk = find_clock(o, v), j;
	double secs;

	if (!v[i].counted)
		return false;
	if (ev->time_ns) {
		if (c->elapsed_ns <= 0)
			return false;
		*mv = v[i].v / c->elapsed_ns;
		snprintf(unit, usize, "CPUs utilized");
		return true;
	}
	if (ev->type == 0 /* PERF_TYPE_HARDWARE */) {
		switch (ev->config) {
		case 0:		/* cycles */
			if (clk < 0 || v[clk].v <= 0)
				break;
			*mv = v[i].v / v[clk].v;
			snprintf(unit, usize, "GHz");
			return true;
		case 1:		/* instructions */
			j = find_event(o, v, 0, 0);
			if (j < 0 || v[j].v <= 0)
				break;
			*mv = v[i].v / v[j].v;
			snprintf(unit, usize, "insn per cycle");
			return true;
		case 3:		/* cache-misses */
			j = find_event(o, v, 0, 2);
			if (j < 0 || v[j].v <= 0)
				break;
			*mv = 100 * v[i].v / v[j].v;
			snprintf(unit, usize, "of all cache refs");
			return true;
		case 5:		/* branch-misses */
			j = find_event(o, v, 0, 4);
			if (j < 0 || v[j].v <= 0)
				break;
			*mv = 100 * v[i].v / v[j].v;
			snprintf(unit, usize, "of all branches");
			return true;
		}
	}
	if (ev->type == 3 /* PERF_TYPE_HW_CACHE */ && (ev->config >> 16) == 1) {
		/* X-OP-misses against X-OP-accesses. */
		j = find_event(o, v, 3, ev->config & 0xffff);
		if (j >= 0 && v[j].v > 0) {
			*mv = 100 * v[i].v / v[j].v;
			snprintf(unit, usize, "%s", cache_ratio_unit(ev->config & 0xff));
			return true;
		}
	}
	/* A rate, per second of the clock counted (or of the time elapsed). */
	secs = clk >= 0 ? v[clk].v / 1e9 : c->elapsed_ns / 1e9;
	if (secs <= 0)
		return false;
	*mv = v[i].v / secs;
	if (*mv >= 1e9) {
		*mv /= 1e9;
		snprintf(unit, usize, "G/sec");
	} else if (*mv >= 1e6) {
		*mv /= 1e6;
		snprintf(unit, usize, "M/sec");
	} else if (*mv >= 1e3) {
		*mv /= 1e3;
		snprintf(unit, usize, "K/sec");
	} else {
		snprintf(unit, usize, "/sec");
	}
	return true;
}

/* ---- printing ---- */

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

static const char *event_name(const struct opts *o, struct kiln_stat *s,
			      size_t i, char *buf, size_t size)
{
	if (s && kiln_stat_user_only(s, i) && !strchr(o->evs[i].name, ':') &&
	    !strchr(o->evs[i].name, '/'))
		snprintf(buf, size, "%s:u", o->evs[i].name);
	else
		snprintf(buf, size, "%s", o->evs[i].name);
	return buf;
}

static void print_line(const struct line_ctx *c, struct kiln_stat *s,
		       const struct vals *v, size_t i)
{
	const struct opts *o = c->o;
	FILE *f = o->out;
	const struct kiln_event *ev = &o->evs[i];
	char unit[64], name[160], num[64];
	double mv = 0, shown;
	bool has_metric = metric(c, v, i, &mv, unit, sizeof(unit));
	const char *bad = NULL;

	event_name(o, s, i, name, sizeof(name));
	if (v[i].state == KILN_STAT_UNSUPPORTED)
		bad = "<not supported>";
	else if (!v[i].counted)
		bad = "<not counted>";
	shown = ev->time_ns ? v[i].v / 1e6 : v[i].v * ev->scale;
	if (o->json) {
		fputc('{', f);
		if (c->interval_ts >= 0)
			fprintf(f, "\"interval\" : %.9f, ", c->interval_ts);
		if (c->thread) {
			fputs("\"thread\" : ", f);
			json_str(f, c->thread);
			fputs(", ", f);
		}
		if (bad)
			fprintf(f, "\"counter-value\" : \"%s\", ", bad);
		else
			fprintf(f, "\"counter-value\" : \"%f\", ", shown);
		fputs("\"unit\" : ", f);
		json_str(f, ev->unit);
		fputs(", \"event\" : ", f);
		json_str(f, name);
		if (c->repeat)
			fprintf(f, ", \"variance\" : %.2f", v[i].var);
		fprintf(f, ", \"event-runtime\" : %llu, \"pcnt-running\" : %.2f, "
			"\"metric-value\" : %f, \"metric-unit\" : ",
			(unsigned long long)v[i].run,
			bad ? 100.0 : 100 * v[i].running, has_metric ? mv : 0.0);
		json_str(f, has_metric ? unit : "");
		fputs("}\n", f);
		return;
	}
	if (o->sep) {
		const char *x = o->sep;

		if (c->interval_ts >= 0)
			fprintf(f, "%.9f%s", c->interval_ts, x);
		if (c->thread)
			fprintf(f, "%s%s", c->thread, x);
		if (bad)
			fprintf(f, "%s", bad);
		else if (ev->time_ns || ev->scale != 1)
			fprintf(f, "%.2f", shown);
		else
			fprintf(f, "%.0f", shown);
		fprintf(f, "%s%s%s%s", x, ev->unit, x, name);
		if (c->repeat)
			fprintf(f, "%s%.2f%%", x, v[i].var);
		fprintf(f, "%s%llu%s%.2f%s", x, (unsigned long long)v[i].run, x,
			bad ? 100.0 : 100 * v[i].running, x);
		if (has_metric)
			fprintf(f, "%.3f%s%s", mv, x, unit);
		else
			fputs(x, f);
		fputc('\n', f);
		return;
	}
	if (c->interval_ts >= 0)
		fprintf(f, "%16.9f ", c->interval_ts);
	if (c->thread)
		fprintf(f, "%24s ", c->thread);
	if (bad)
		snprintf(num, sizeof(num), "%s", bad);
	else if (ev->time_ns || ev->scale != 1)
		snprintf(num, sizeof(num), "%'.2f", shown);
	else
		snprintf(num, sizeof(num), "%'.0f", shown);
	fprintf(f, "%18s %-4s %-32s", num, ev->unit, name);
	if (has_metric) {
		if (!strncmp(unit, "of all", 6))
			fprintf(f, " # %7.2f%% %-25s", mv, unit);
		else
			fprintf(f, " # %8.3f %-25s", mv, unit);
	} else if (c->repeat || (!bad && v[i].running < 1)) {
		fprintf(f, "%38s", "");
	}
	if (c->repeat && !bad)
		fprintf(f, "  ( +- %5.2f%% )", v[i].var);
	if (!bad && v[i].running < 1)
		fprintf(f, "  (%.2f%%)", 100 * v[i].running);
	fputc('\n', f);
}

static void print_block(const struct line_ctx *c, struct kiln_stat *s,
			const struct vals *v)
{
	size_t i;

	for (i = 0; i < c->o->n; i++)
		print_line(c, s, v, i);
}

/* Turns a read value into what is printed. */
static void to_vals(struct kiln_stat *s, size_t i, const struct kiln_stat_value *kv,
		    struct vals *out)
{
	memset(out, 0, sizeof(*out));
	out->state = kiln_stat_state(s, i);
	out->run = kv->run;
	out->counted = out->state == KILN_STAT_OK &&
		       kiln_stat_scaled(kv, &out->v, &out->running);
}

/* ---- targets ---- */

static int parse_list(const char *arg, int **out, int *n, bool ranges)
{
	const char *p = arg;

	*n = 0;
	while (*p) {
		char *end;
		long a = strtol(p, &end, 10), b;

		if (end == p || a < 0 || a > 0x3fffffff)
			return -EINVAL;
		b = a;
		if (ranges && *end == '-') {
			const char *q = end + 1;

			b = strtol(q, &end, 10);
			if (end == q || b < a || b - a > 4096)
				return -EINVAL;
		}
		if (*end && *end != ',')
			return -EINVAL;
		for (; a <= b; a++) {
			int *nv = realloc(*out, (size_t)(*n + 1) * sizeof(*nv));

			if (!nv)
				return -ENOMEM;
			*out = nv;
			(*out)[(*n)++] = (int)a;
		}
		p = *end ? end + 1 : end;
	}
	return *n ? 0 : -EINVAL;
}

static int online_cpus(int **out, int *n)
{
	FILE *f = fopen("/sys/devices/system/cpu/online", "r");
	char line[256];
	int err;

	if (!f || !fgets(line, sizeof(line), f)) {
		long c = sysconf(_SC_NPROCESSORS_ONLN), i;

		if (f)
			fclose(f);
		*n = 0;
		for (i = 0; i < (c > 0 ? c : 1); i++) {
			int *nv = realloc(*out, (size_t)(*n + 1) * sizeof(*nv));

			if (!nv)
				return -ENOMEM;
			*out = nv;
			(*out)[(*n)++] = (int)i;
		}
		return 0;
	}
	fclose(f);
	line[strcspn(line, "\n")] = 0;
	err = parse_list(line, out, n, true);
	return err;
}

static void thread_name(pid_t pid, pid_t tid, char *buf, size_t size)
{
	char path[96], comm[64] = "";
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)pid, (int)tid);
	f = fopen(path, "r");
	if (f) {
		if (!fgets(comm, sizeof(comm), f))
			comm[0] = 0;
		fclose(f);
	}
	comm[strcspn(comm, "\n")] = 0;
	snprintf(buf, size, "%s-%d", comm[0] ? comm : "?", (int)tid);
}

/* Every thread of pid, each followed with what it starts (inherit). */
static int add_process(struct kiln_stat *s, pid_t pid, char ***names, size_t *nnames)
{
	char dir[64];
	DIR *d;
	struct dirent *de;
	int err = 0, opened = 0;

	snprintf(dir, sizeof(dir), "/proc/%d/task", (int)pid);
	d = opendir(dir);
	if (!d)
		return errno == ENOENT ? -ESRCH : -errno;
	while (!err && (de = readdir(d))) {
		long tid = strtol(de->d_name, NULL, 10);
		char name[96], **nn;

		if (tid <= 0)
			continue;
		err = kiln_stat_add(s, (pid_t)tid, -1, true, false);
		if (err == -ESRCH) {	/* the thread just ended */
			err = 0;
			continue;
		}
		if (err)
			break;
		opened++;
		thread_name(pid, (pid_t)tid, name, sizeof(name));
		nn = realloc(*names, (*nnames + 1) * sizeof(*nn));
		if (!nn || !(nn[*nnames] = strdup(name))) {
			if (nn)
				*names = nn;
			err = -ENOMEM;
			break;
		}
		*names = nn;
		(*nnames)++;
	}
	closedir(d);
	if (!err && !opened)
		err = -ESRCH;
	return err;
}

/* ---- one run ---- */

struct run_result {
	struct vals *v;			/* per event */
	double elapsed_s;
	struct rusage ru;
	int status;			/* wait status of the command */
	bool have_status;
};

static long pidfd_open_(pid_t pid)
{
#ifdef SYS_pidfd_open
	return syscall(SYS_pidfd_open, pid, 0);
#else
	errno = ENOSYS;
	return -1;
#endif
}

static bool any_alive(const struct opts *o)
{
	int i;

	for (i = 0; i < o->npids; i++)
		if (!kill(o->pids[i], 0) || errno == EPERM)
			return true;
	return false;
}

static void print_interval(const struct opts *o, struct kiln_stat *s,
			   struct kiln_stat_value *prev, char **names,
			   double ts, double dt, bool *header)
{
	size_t nt = o->per_thread ? kiln_stat_ntargets(s) : 1, t, i;
	struct vals *v = calloc(o->n ? o->n : 1, sizeof(*v));

	if (!v)
		return;
	if (!*header && !o->sep && !o->json) {
		fprintf(o->out, "#           time %s            counts unit events\n",
			o->per_thread ? "                  thread" : "");
		*header = true;
	}
	for (t = 0; t < nt; t++) {
		struct line_ctx c = { o, ts, o->per_thread ? names[t] : NULL,
				      dt * 1e9, false };

		for (i = 0; i < o->n; i++) {
			struct kiln_stat_value cur, d;
			struct kiln_stat_value *p = &prev[t * o->n + i];

			kiln_stat_read(s, o->per_thread ? t : SIZE_MAX, i, &cur);
			d.val = cur.val - p->val;
			d.ena = cur.ena - p->ena;
			d.run = cur.run - p->run;
			*p = cur;
			to_vals(s, i, &d, &v[i]);
		}
		print_block(&c, s, v);
	}
	fflush(o->out);
	free(v);
}

static void print_final_threads(const struct opts *o, struct kiln_stat *s,
				char **names, double elapsed_s)
{
	size_t nt = kiln_stat_ntargets(s), t, i;
	struct vals *v = calloc(o->n ? o->n : 1, sizeof(*v));

	if (!v)
		return;
	for (t = 0; t < nt; t++) {
		struct line_ctx c = { o, -1, names[t], elapsed_s * 1e9, false };

		for (i = 0; i < o->n; i++) {
			struct kiln_stat_value kv;

			kiln_stat_read(s, t, i, &kv);
			to_vals(s, i, &kv, &v[i]);
		}
		print_block(&c, s, v);
	}
	free(v);
}

/*
 * Runs the measurement once.  Returns an exit status (0 or the error's),
 * with *res filled on success.  *s_out keeps the session for printing.
 */
static int run_once(const struct opts *o, struct run_result *res,
		    struct kiln_stat **s_out, char ***names_out, size_t *nnames_out)
{
	struct kiln_stat *s = kiln_stat_new(o->evs, o->leader, o->n);
	struct kiln_child child = KILN_CHILD_INIT;
	struct kiln_stat_value *prev = NULL;
	char **names = NULL;
	size_t nnames = 0, i;
	bool cmd_is_target = o->ncmd && !o->npids && !o->ncpus, child_done = false;
	bool header = false;
	struct pollfd pfd[64];
	int npfd = 0, rc = KILN_EXIT_OK, err = 0, need;
	double t0, next_iv = 0, last_iv;
	const char *what;

	if (!s) {
		kiln_cli_error("out of memory");
		return KILN_EXIT_FAIL;
	}
	if (o->ncmd) {
		err = kiln_child_spawn(&child, o->cmd);
		if (err) {
			kiln_cli_error("cannot start '%s': %s", o->cmd[0], strerror(-err));
			rc = KILN_EXIT_FAIL;
			goto out;
		}
	}
	if (o->ncpus) {
		for (i = 0; i < (size_t)o->ncpus && !err; i++) {
			err = kiln_stat_add(s, -1, o->cpus[i], false, false);
			if (err == -ENODEV || err == -EINVAL) {
				kiln_cli_error("cannot count on CPU %d: %s (see "
					       "/sys/devices/system/cpu/online)",
					       o->cpus[i], strerror(-err));
				rc = KILN_EXIT_USAGE;
				goto out_kill;
			}
		}
	} else if (o->npids) {
		for (i = 0; i < (size_t)o->npids && !err; i++) {
			err = add_process(s, o->pids[i], &names, &nnames);
			if (err == -ESRCH) {
				kiln_cli_error("no process with PID %d (it is gone)",
					       (int)o->pids[i]);
				rc = KILN_EXIT_USAGE;
				goto out_kill;
			}
		}
	} else {
		err = kiln_stat_add(s, child.pid, -1, true, true);
	}
	if (err) {
		need = o->ncpus ? 0 : 2;
		what = o->ncpus ? "counting whole CPUs" :
		       o->npids ? "counting that process" : "counting the command";
		if (err == -EACCES || err == -EPERM)
			kiln_cli_perf_refused(err, need, what);
		else
			kiln_cli_error("perf_event_open: %s", strerror(-err));
		rc = KILN_EXIT_FAIL;
		goto out_kill;
	}
	prev = calloc((kiln_stat_ntargets(s) + 1) * (o->n ? o->n : 1), sizeof(*prev));
	if (!prev) {
		kiln_cli_error("out of memory");
		rc = KILN_EXIT_FAIL;
		goto out_kill;
	}
	t0 = kiln_cli_now();
	if (o->ncmd) {
		err = kiln_child_start(&child);
		if (err) {
			kiln_cli_error("cannot run '%s': %s", o->cmd[0], strerror(-err));
			while (kiln_child_wait(&child, true, NULL, NULL) == -EINTR)
				;
			rc = err == -ENOENT ? 127 : 126;
			goto out;
		}
		long fd = pidfd_open_(child.pid);

		if (fd >= 0) {
			pfd[npfd].fd = (int)fd;
			pfd[npfd++].events = POLLIN;
		}
	} else {
		for (i = 0; i < (size_t)o->npids && npfd < 64; i++) {
			long fd = pidfd_open_(o->pids[i]);

			if (fd >= 0) {
				pfd[npfd].fd = (int)fd;
				pfd[npfd++].events = POLLIN;
			}
		}
	}
	if (!cmd_is_target)
		kiln_stat_enable(s);
	last_iv = t0;
	if (o->interval_ms)
		next_iv = t0 + o->interval_ms / 1000.0;
	for (;;) {
		double now = kiln_cli_now(), wake = -1;
		int timeout;

		if (o->interval_ms)
			wake = next_iv;
		if (o->duration && (wake < 0 || t0 + o->duration < wake))
			wake = t0 + o->duration;
		/* Without a pidfd (old kernels), look every 100 ms. */
		if ((o->ncmd || o->npids) && !npfd && (wake < 0 || wake > now + 0.1))
			wake = now + 0.1;
		if (o->npids && !o->ncmd && npfd && (wake < 0 || wake > now + 1))
			wake = now + 1;	/* a PID whose pidfd failed */
		timeout = wake < 0 ? -1 : wake <= now ? 0 : (int)((wake - now) * 1000) + 1;
		if (!kiln_cli_stop_signal)
			poll(pfd, (nfds_t)npfd, timeout);
		now = kiln_cli_now();
		if (o->ncmd && !child_done &&
		    kiln_child_wait(&child, false, &res->status, &res->ru) == 1) {
			child_done = true;
			res->have_status = true;
		}
		if (o->interval_ms && (now >= next_iv || child_done ||
				       (!o->ncmd && !any_alive(o)))) {
			print_interval(o, s, prev, names, now - t0, now - last_iv, &header);
			last_iv = now;
			while (next_iv <= now)
				next_iv += o->interval_ms / 1000.0;
		}
		if (child_done)
			break;
		if (!o->ncmd && o->npids && !any_alive(o))
			break;
		if (o->duration && now - t0 >= o->duration)
			break;
		if (kiln_cli_stop_signal) {
			/* The command gets the signal too (Ctrl-C reaches the
			 * whole foreground group; a kill of kiln alone is
			 * passed on); its totals print once it ends. */
			if (!o->ncmd)
				break;
			kill(child.pid, kiln_cli_stop_signal);
			kiln_cli_stop_signal = 0;
		}
	}
	kiln_stat_disable(s);
	res->elapsed_s = kiln_cli_now() - t0;
	if (o->ncmd && !child_done) {
		/* --duration ended a command still running: stop it. */
		kiln_child_stop(&child, SIGTERM, &res->status, &res->ru);
		res->have_status = true;
	}
	for (i = 0; i < o->n; i++) {
		struct kiln_stat_value kv;

		kiln_stat_read(s, SIZE_MAX, i, &kv);
		to_vals(s, i, &kv, &res->v[i]);
	}
	*s_out = s;
	s = NULL;
	*names_out = names;
	*nnames_out = nnames;
	names = NULL;
	nnames = 0;
	goto out;
out_kill:
	kiln_child_kill(&child);
out:
	while (npfd)
		close(pfd[--npfd].fd);
	kiln_child_release(&child);
	free(prev);
	for (i = 0; i < nnames; i++)
		free(names[i]);
	free(names);
	kiln_stat_free(s);
	return rc;
}

/* ---- events on the command line ---- */

static int add_event(struct opts *o, const char *name, int leader)
{
	struct kiln_event ev, *ne;
	int *nl, err = kiln_event_parse(name, &ev);

	if (err)
		return kiln_cli_event_error(name, err);
	ne = realloc(o->evs, (o->n + 1) * sizeof(*ne));
	if (!ne)
		return KILN_EXIT_FAIL;
	o->evs = ne;
	nl = realloc(o->leader, (o->n + 1) * sizeof(*nl));
	if (!nl)
		return KILN_EXIT_FAIL;
	o->leader = nl;
	o->evs[o->n] = ev;
	o->leader[o->n] = leader < 0 ? (int)o->n : leader;
	o->n++;
	return 0;
}

/*
 * "a,b,{c,d},pmu/x=1,y=2/": commas split events except inside a PMU's
 * slashes; braces make a group.
 */
static int parse_events(struct opts *o, const char *arg)
{
	const char *p = arg;
	int group = -1, rc;

	while (*p) {
		char name[256];
		size_t n = 0;
		bool in_pmu = false;

		if (*p == '{') {
			if (group >= 0)
				return kiln_cli_usage_error("stat", "bad -e '%s': groups do not nest", arg);
			group = -2;	/* the next event leads */
			p++;
		}
		while (*p && (in_pmu || (*p != ',' && *p != '}'))) {
			if (*p == '/')
				in_pmu = !in_pmu;
			if (n + 1 >= sizeof(name))
				return kiln_cli_usage_error("stat", "bad -e: event name too long");
			name[n++] = *p++;
		}
		name[n] = 0;
		if (!n)
			return kiln_cli_usage_error("stat", "bad -e '%s': an empty event name", arg);
		rc = add_event(o, name, group >= 0 ? group : -1);
		if (rc)
			return rc;
		if (group == -2)
			group = (int)o->n - 1;
		if (*p == '}') {
			if (group < 0)
				return kiln_cli_usage_error("stat", "bad -e '%s': '}' without '{'", arg);
			group = -1;
			p++;
			/* A group modifier ("}:u") is not supported. */
			if (*p == ':')
				return kiln_cli_usage_error("stat",
					"bad -e '%s': give modifiers on each event of a group", arg);
		}
		if (*p == ',')
			p++;
	}
	if (group != -1)
		return kiln_cli_usage_error("stat", "bad -e '%s': '{' without '}'", arg);
	return 0;
}

/* ---- the command ---- */

static void print_header(const struct opts *o)
{
	FILE *f = o->out;
	int i;

	fprintf(f, "\n Performance counter stats for ");
	if (o->ncpus && o->all_cpus) {
		fprintf(f, "'system wide'");
	} else if (o->ncpus) {
		fprintf(f, "'CPU(s) %s'", o->cpu_arg);
	} else if (o->npids) {
		fprintf(f, "process id '%s'", o->pid_arg);
	} else {
		fputc('\'', f);
		for (i = 0; i < o->ncmd; i++)
			fprintf(f, "%s%s", i ? " " : "", o->cmd[i]);
		fputc('\'', f);
	}
	if (o->repeat > 1)
		fprintf(f, " (%ld runs)", o->repeat);
	fprintf(f, ":\n\n");
}

int kiln_cmd_stat(int argc, char **argv)
{
	struct opts o = { 0 };
	struct run_result res = { 0 };
	struct spread *sp = NULL, el = { 0 };
	struct kiln_stat *s = NULL;
	char **names = NULL, *end;
	const char *output = NULL;
	size_t nnames = 0, i;
	long r;
	int c, rc = KILN_EXIT_OK;
	struct sigaction sa;

	o.repeat = 1;
	o.out = stderr;
	while ((c = getopt_long(argc, argv, "+e:p:aC:I:r:x:o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'e':
			rc = parse_events(&o, optarg);
			if (rc)
				goto out;
			break;
		case 'p': o.pid_arg = optarg; break;
		case 'a': o.all_cpus = true; break;
		case 'C': o.cpu_arg = optarg; break;
		case OPT_DURATION:
			o.duration = strtod(optarg, &end);
			if (*end || end == optarg || !(o.duration > 0)) {
				rc = kiln_cli_usage_error("stat",
					"bad --duration '%s': want seconds above 0", optarg);
				goto out;
			}
			break;
		case 'I':
			o.interval_ms = strtol(optarg, &end, 10);
			if (*end || end == optarg || o.interval_ms < 10) {
				rc = kiln_cli_usage_error("stat",
					"bad -I '%s': want milliseconds, 10 or more", optarg);
				goto out;
			}
			break;
		case 'r':
			o.repeat = strtol(optarg, &end, 10);
			if (*end || end == optarg || o.repeat < 1 || o.repeat > 100000) {
				rc = kiln_cli_usage_error("stat",
					"bad -r '%s': want a number of runs, 1 or more", optarg);
				goto out;
			}
			break;
		case OPT_PER_THREAD: o.per_thread = true; break;
		case 'x': o.sep = optarg; break;
		case OPT_JSON: o.json = true; break;
		case 'o': output = optarg; break;
		case 'h': kiln_cli_usage("stat", false); goto out;
		default: rc = kiln_cli_usage_error("stat", "unknown option"); goto out;
		}
	}
	o.cmd = argv + optind;
	o.ncmd = argc - optind;
	if (o.sep && o.json) {
		rc = kiln_cli_usage_error("stat", "give -x or --json, not both");
		goto out;
	}
	if (o.sep && !*o.sep) {
		rc = kiln_cli_usage_error("stat", "bad -x '': want a separator");
		goto out;
	}
	/* As perf stat: the process wins over the whole machine ("PID/TID
	 * switch overriding SYSTEM"), and says so. */
	if (o.pid_arg && (o.all_cpus || o.cpu_arg)) {
		fprintf(stderr, "kiln stat: warning: -p overrides %s (as perf "
			"does): counting process %s\n", o.all_cpus ? "-a" : "-C",
			o.pid_arg);
		o.all_cpus = false;
		o.cpu_arg = NULL;
	}
	if (!o.ncmd && !o.pid_arg && !o.all_cpus && !o.cpu_arg) {
		rc = kiln_cli_usage_error("stat",
			"nothing to count: give a command after --, -p PID, or -a");
		goto out;
	}
	if (o.per_thread && !o.pid_arg) {
		rc = kiln_cli_usage_error("stat",
			"--per-thread counts the threads of -p PID (as perf stat)");
		goto out;
	}
	if (o.repeat > 1 && !o.ncmd) {
		rc = kiln_cli_usage_error("stat", "-r repeats a command: give one after --");
		goto out;
	}
	if (o.pid_arg && parse_list(o.pid_arg, &o.pids, &o.npids, false)) {
		rc = kiln_cli_usage_error("stat", "bad -p '%s': want PID[,PID...]", o.pid_arg);
		goto out;
	}
	for (i = 0; i < (size_t)o.npids; i++)
		if (o.pids[i] <= 0) {
			rc = kiln_cli_usage_error("stat", "bad -p '%s': want PID[,PID...]",
						  o.pid_arg);
			goto out;
		}
	if (o.cpu_arg && parse_list(o.cpu_arg, &o.cpus, &o.ncpus, true)) {
		rc = kiln_cli_usage_error("stat", "bad -C '%s': want CPUs as 0-3,5", o.cpu_arg);
		goto out;
	}
	if (o.cpu_arg) {
		int *on = NULL, non = 0, k;

		if (online_cpus(&on, &non)) {
			free(on);
			kiln_cli_error("cannot list the online CPUs");
			rc = KILN_EXIT_FAIL;
			goto out;
		}
		for (i = 0; i < (size_t)o.ncpus; i++) {
			for (k = 0; k < non && on[k] != o.cpus[i]; k++)
				;
			if (k == non) {
				free(on);
				rc = kiln_cli_usage_error("stat", "bad -C '%s': CPU %d is not "
					"online (see /sys/devices/system/cpu/online)",
					o.cpu_arg, o.cpus[i]);
				goto out;
			}
		}
		free(on);
	}
	if (o.all_cpus && !o.cpu_arg && online_cpus(&o.cpus, &o.ncpus)) {
		kiln_cli_error("cannot list the online CPUs");
		rc = KILN_EXIT_FAIL;
		goto out;
	}
	for (i = 0; i < (size_t)o.npids; i++)
		if (kill(o.pids[i], 0) && errno == ESRCH) {
			kiln_cli_error("no process with PID %d", (int)o.pids[i]);
			rc = KILN_EXIT_USAGE;
			goto out;
		}
	if (o.ncmd && !kiln_child_find(o.cmd[0])) {
		kiln_cli_error("cannot run '%s': command not found", o.cmd[0]);
		rc = KILN_EXIT_USAGE;
		goto out;
	}
	if (!o.n) {
		for (i = 0; i < sizeof(default_events) / sizeof(default_events[0]); i++) {
			/* perf counts cpu-clock for whole CPUs, task-clock for tasks. */
			const char *name = i == 0 && o.ncpus ? "cpu-clock" : default_events[i];

			rc = add_event(&o, name, -1);
			if (rc)
				goto out;
		}
	}
	if (output) {
		o.out = fopen(output, "w");
		if (!o.out) {
			kiln_cli_error("cannot write '%s': %s", output, strerror(errno));
			o.out = stderr;
			rc = KILN_EXIT_FAIL;
			goto out;
		}
	}
	/* Thousands grouped as the user's locale says, as perf; CSV and
	 * JSON keep the C locale's decimal point. */
	if (!o.sep && !o.json)
		setlocale(LC_NUMERIC, "");
	sp = calloc(o.n, sizeof(*sp));
	res.v = calloc(o.n, sizeof(*res.v));
	if (!sp || !res.v) {
		kiln_cli_error("out of memory");
		rc = KILN_EXIT_FAIL;
		goto out;
	}
	/* No SA_RESTART: a signal ends the wait at once. */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = kiln_cli_on_stop;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	for (r = 0; r < o.repeat; r++) {
		for (i = 0; i < nnames; i++)
			free(names[i]);
		free(names);
		names = NULL;
		nnames = 0;
		kiln_stat_free(s);
		s = NULL;
		rc = run_once(&o, &res, &s, &names, &nnames);
		if (rc)
			goto out;
		for (i = 0; i < o.n; i++)
			if (res.v[i].counted)
				spread_add(&sp[i], res.v[i].v);
		spread_add(&el, res.elapsed_s);
		if (kiln_cli_stop_signal || (res.have_status && WIFSIGNALED(res.status) &&
				    WTERMSIG(res.status) == SIGINT))
			break;
	}
	if (!o.interval_ms) {
		bool repeat = o.repeat > 1;
		struct line_ctx lc = { &o, -1, NULL, el.mean * 1e9, repeat };

		if (repeat)
			for (i = 0; i < o.n; i++) {
				res.v[i].v = sp[i].mean;
				res.v[i].var = spread_pct(&sp[i]);
			}
		if (!o.sep && !o.json)
			print_header(&o);
		if (o.per_thread)
			print_final_threads(&o, s, names, res.elapsed_s);
		else
			print_block(&lc, s, res.v);
		if (!o.sep && !o.json) {
			if (repeat) {
				double sd = el.n > 1 ? sqrt(el.m2 / (el.n - 1) / el.n) : 0;

				fprintf(o.out, "\n %17.4f +- %.4f seconds time elapsed  ( +- %5.2f%% )\n\n",
					el.mean, sd, spread_pct(&el));
			} else {
				fprintf(o.out, "\n %17.9f seconds time elapsed\n\n", res.elapsed_s);
				if (res.have_status && !o.npids && !o.ncpus)
					fprintf(o.out, " %17.9f seconds user\n %17.9f seconds sys\n\n",
						(double)res.ru.ru_utime.tv_sec +
							res.ru.ru_utime.tv_usec / 1e6,
						(double)res.ru.ru_stime.tv_sec +
							res.ru.ru_stime.tv_usec / 1e6);
			}
		}
	}
	fflush(o.out);
	rc = res.have_status ? kiln_child_exit_status(res.status) : KILN_EXIT_OK;
out:
	if (o.out && o.out != stderr)
		fclose(o.out);
	for (i = 0; i < nnames; i++)
		free(names[i]);
	free(names);
	kiln_stat_free(s);
	free(sp);
	free(res.v);
	free(o.evs);
	free(o.leader);
	free(o.pids);
	free(o.cpus);
	return rc;
}
