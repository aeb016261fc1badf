/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `kiln stat`: counts events for a command, running processes, or whole
 * CPUs, as `perf stat` does (cli stage): the options parsed here; the
 * counting and its printing (default events' metrics, intervals, repeats
 * with their spread, per thread counts, perf's CSV and JSON lines) are the
 * session's (session/stat-run.c, stat-print.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <getopt.h>
#include <locale.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "capture/events.h"
#include "cli/cli.h"
#include "session/stat-run.h"
#include "session/stat.h"
#include "session/targets.h"
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

/* ---- events on the command line ---- */

static int add_event(struct kiln_stat_opts *o, const char *name, int leader)
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
static int parse_events(struct kiln_stat_opts *o, const char *arg)
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

/* The options (as getopt sees them) into *o and *output; 0, an exit
 * status, or -1 for --help (said). */
static int parse_options(int argc, char **argv, struct kiln_stat_opts *o,
			 const char **output)
{
	char *end;
	int c, rc;

	while ((c = getopt_long(argc, argv, "+e:p:aC:I:r:x:o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'e':
			rc = parse_events(o, optarg);
			if (rc)
				return rc;
			break;
		case 'p': o->pid_arg = optarg; break;
		case 'a': o->all_cpus = true; break;
		case 'C': o->cpu_arg = optarg; break;
		case OPT_DURATION:
			o->duration = strtod(optarg, &end);
			if (*end || end == optarg || !(o->duration > 0))
				return kiln_cli_usage_error("stat",
					"bad --duration '%s': want seconds above 0", optarg);
			break;
		case 'I':
			o->interval_ms = strtol(optarg, &end, 10);
			if (*end || end == optarg || o->interval_ms < 10)
				return kiln_cli_usage_error("stat",
					"bad -I '%s': want milliseconds, 10 or more", optarg);
			break;
		case 'r':
			o->repeat = strtol(optarg, &end, 10);
			if (*end || end == optarg || o->repeat < 1 || o->repeat > 100000)
				return kiln_cli_usage_error("stat",
					"bad -r '%s': want a number of runs, 1 or more", optarg);
			break;
		case OPT_PER_THREAD: o->per_thread = true; break;
		case 'x': o->sep = optarg; break;
		case OPT_JSON: o->json = true; break;
		case 'o': *output = optarg; break;
		case 'h': kiln_cli_usage("stat", false); return -1;
		default: return kiln_cli_usage_error("stat", "unknown option");
		}
	}
	o->cmd = argv + optind;
	o->ncmd = argc - optind;
	return 0;
}

/* -C: the CPUs must be online.  0 or an exit status (said). */
static int check_cpus(const struct kiln_stat_opts *o)
{
	int *on = NULL, non = 0, k, i;

	if (kiln_targets_online_cpus(&on, &non)) {
		free(on);
		kiln_cli_error("cannot list the online CPUs");
		return KILN_EXIT_FAIL;
	}
	for (i = 0; i < o->ncpus; i++) {
		for (k = 0; k < non && on[k] != o->cpus[i]; k++)
			;
		if (k == non) {
			free(on);
			return kiln_cli_usage_error("stat", "bad -C '%s': CPU %d is not "
				"online (see /sys/devices/system/cpu/online)",
				o->cpu_arg, o->cpus[i]);
		}
	}
	free(on);
	return 0;
}

/* The options checked together, the targets parsed and looked for, the
 * default events added.  0 or an exit status (said). */
static int check_options(struct kiln_stat_opts *o)
{
	size_t i;
	int rc;

	if (o->sep && o->json)
		return kiln_cli_usage_error("stat", "give -x or --json, not both");
	if (o->sep && !*o->sep)
		return kiln_cli_usage_error("stat", "bad -x '': want a separator");
	/* As perf stat: the process wins over the whole machine ("PID/TID
	 * switch overriding SYSTEM"), and says so. */
	if (o->pid_arg && (o->all_cpus || o->cpu_arg)) {
		fprintf(stderr, "kiln stat: warning: -p overrides %s (as perf "
			"does): counting process %s\n", o->all_cpus ? "-a" : "-C",
			o->pid_arg);
		o->all_cpus = false;
		o->cpu_arg = NULL;
	}
	if (!o->ncmd && !o->pid_arg && !o->all_cpus && !o->cpu_arg)
		return kiln_cli_usage_error("stat",
			"nothing to count: give a command after --, -p PID, or -a");
	if (o->per_thread && !o->pid_arg)
		return kiln_cli_usage_error("stat",
			"--per-thread counts the threads of -p PID (as perf stat)");
	if (o->repeat > 1 && !o->ncmd)
		return kiln_cli_usage_error("stat", "-r repeats a command: give one after --");
	if (o->pid_arg && kiln_targets_parse_pids(o->pid_arg, &o->pids, &o->npids))
		return kiln_cli_usage_error("stat", "bad -p '%s': want PID[,PID...]",
					    o->pid_arg);
	if (o->cpu_arg && kiln_targets_parse_list(o->cpu_arg, &o->cpus, &o->ncpus, true))
		return kiln_cli_usage_error("stat", "bad -C '%s': want CPUs as 0-3,5", o->cpu_arg);
	if (o->cpu_arg) {
		rc = check_cpus(o);
		if (rc)
			return rc;
	}
	if (o->all_cpus && !o->cpu_arg &&
	    kiln_targets_online_cpus(&o->cpus, &o->ncpus)) {
		kiln_cli_error("cannot list the online CPUs");
		return KILN_EXIT_FAIL;
	}
	rc = kiln_targets_first_gone(o->pids, o->npids);
	if (rc >= 0) {
		kiln_cli_error("no process with PID %d", (int)o->pids[rc]);
		return KILN_EXIT_USAGE;
	}
	if (o->ncmd && !kiln_child_find(o->cmd[0], NULL)) {
		kiln_cli_error("cannot run '%s': command not found", o->cmd[0]);
		return KILN_EXIT_USAGE;
	}
	if (!o->n) {
		for (i = 0; i < sizeof(default_events) / sizeof(default_events[0]); i++) {
			/* perf counts cpu-clock for whole CPUs, task-clock for tasks. */
			const char *name = i == 0 && o->ncpus ? "cpu-clock" : default_events[i];

			rc = add_event(o, name, -1);
			if (rc)
				return rc;
		}
	}
	return 0;
}

/* Says why kiln_stat_run() failed; returns the exit status. */
static int explain_run(const struct kiln_stat_opts *o,
		       const struct kiln_stat_result *res)
{
	int err = res->err;

	switch (res->failed) {
	case KILN_STAT_RUN_SPAWN:
		kiln_cli_error("cannot start '%s': %s", o->cmd[0], strerror(-err));
		return KILN_EXIT_FAIL;
	case KILN_STAT_RUN_CPU:
		kiln_cli_error("cannot count on CPU %d: %s (see "
			       "/sys/devices/system/cpu/online)",
			       res->which, strerror(-err));
		return KILN_EXIT_USAGE;
	case KILN_STAT_RUN_GONE:
		kiln_cli_error("no process with PID %d (it is gone)", res->which);
		return KILN_EXIT_USAGE;
	case KILN_STAT_RUN_OPEN:
		if (err == -EACCES || err == -EPERM)
			kiln_cli_perf_refused(err, o->ncpus ? 0 : 2,
				o->ncpus ? "counting whole CPUs" :
				o->npids ? "counting that process" :
				"counting the command");
		else
			kiln_cli_error("perf_event_open: %s", strerror(-err));
		return KILN_EXIT_FAIL;
	case KILN_STAT_RUN_EXEC:
		kiln_cli_error("cannot run '%s': %s", o->cmd[0], strerror(-err));
		return err == -ENOENT ? 127 : 126;
	case KILN_STAT_RUN_NOMEM:
	default:
		kiln_cli_error("out of memory");
		return KILN_EXIT_FAIL;
	}
}

/* Runs the measurement o->repeat times (fewer if stopped), then prints
 * the totals.  Returns the exit status. */
static int measure(struct kiln_stat_opts *o, struct kiln_stat_result *res,
		   struct kiln_stat_spread *sp)
{
	struct kiln_stat_spread el = { 0 };
	struct kiln_stat *s = NULL;
	char **names = NULL;
	size_t nnames = 0, i;
	long r;
	int rc = KILN_EXIT_OK;

	for (r = 0; r < o->repeat; r++) {
		for (i = 0; i < nnames; i++)
			free(names[i]);
		free(names);
		names = NULL;
		nnames = 0;
		kiln_stat_free(s);
		s = NULL;
		if (kiln_stat_run(o, res, &s, &names, &nnames)) {
			rc = explain_run(o, res);
			goto out;
		}
		for (i = 0; i < o->n; i++)
			if (res->v[i].counted)
				kiln_stat_spread_add(&sp[i], res->v[i].v);
		kiln_stat_spread_add(&el, res->elapsed_s);
		if (res->follow_lost)
			fprintf(stderr, "kiln stat: warning: %" PRIu64 " records of "
				"thread starts lost: threads started then may be "
				"counted twice\n", res->follow_lost);
		if (res->follow_failed)
			fprintf(stderr, "kiln stat: warning: %zu threads started "
				"while counting could not be counted: %s\n",
				res->follow_failed, strerror(-res->follow_err));
		if (kiln_cli_stop_signal || (res->have_status && WIFSIGNALED(res->status) &&
				    WTERMSIG(res->status) == SIGINT))
			break;
	}
	if (!o->interval_ms)
		kiln_stat_print_final(o, s, names, res, sp, &el);
	fflush(o->out);
	rc = res->have_status ? kiln_child_exit_status(res->status) : KILN_EXIT_OK;
out:
	for (i = 0; i < nnames; i++)
		free(names[i]);
	free(names);
	kiln_stat_free(s);
	return rc;
}

int kiln_cmd_stat(int argc, char **argv)
{
	struct kiln_stat_opts o = { 0 };
	struct kiln_stat_result res = { 0 };
	struct kiln_stat_spread *sp = NULL;
	const char *output = NULL;
	int rc = KILN_EXIT_OK;
	struct sigaction sa;

	o.repeat = 1;
	o.out = stderr;
	o.stop = &kiln_cli_stop_signal;
	rc = parse_options(argc, argv, &o, &output);
	if (rc < 0)
		rc = KILN_EXIT_OK;	/* --help */
	if (!rc && !(rc = check_options(&o)) && output) {
		o.out = fopen(output, "w");
		if (!o.out) {
			kiln_cli_error("cannot write '%s': %s", output, strerror(errno));
			o.out = stderr;
			rc = KILN_EXIT_FAIL;
		}
	}
	if (rc)
		goto out;
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
	rc = measure(&o, &res, sp);
out:
	if (o.out && o.out != stderr)
		fclose(o.out);
	free(sp);
	free(res.v);
	free(o.evs);
	free(o.leader);
	free(o.pids);
	free(o.cpus);
	return rc;
}
