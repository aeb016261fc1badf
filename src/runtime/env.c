/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libkiln.so's variables, parsed once (runtime stage).  See env.h.
 */
#include "runtime/env.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "runtime/log.h"

#define KILN_STR_(x) #x
#define KILN_STR(x) KILN_STR_(x)

static struct kiln_env env;
static pthread_once_t env_once = PTHREAD_ONCE_INIT;

/*
 * What was wrong, said after the parse (saying it needs the log level,
 * which is parsed here too: kiln_rt_log() asks kiln_env()).
 */
#define NOTES 8
static char notes[NOTES][192];
static int nnotes;
static _Atomic bool said;

__attribute__((format(printf, 1, 2))) static void note(const char *fmt, ...)
{
	va_list ap;

	if (nnotes == NOTES)
		return;
	va_start(ap, fmt);
	vsnprintf(notes[nnotes++], sizeof(notes[0]), fmt, ap);
	va_end(ap);
}

/* The first of two names set and not empty, NULL if neither. */
static const char *get2(const char *a, const char *b)
{
	const char *v = getenv(a);

	if (v && *v)
		return v;
	v = b ? getenv(b) : NULL;
	return v && *v ? v : NULL;
}

static int parse_u64(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || end == s || s[0] == '-')
		return -EINVAL;
	*out = v;
	return 0;
}

static int parse_int(const char *s, int lo, int hi, int *out)
{
	uint64_t v;

	if (parse_u64(s, &v) || v < (uint64_t)lo || v > (uint64_t)hi)
		return -EINVAL;
	*out = (int)v;
	return 0;
}

/* A signal a handler may be set for (not SIGKILL, SIGSTOP). */
static int parse_signal(const char *s, const char *names, int *out)
{
	if (!s)
		return 0;
	if (parse_int(s, 1, SIGRTMAX, out) || *out == SIGKILL || *out == SIGSTOP) {
		note("bad %s '%s': ignored", names, s);
		*out = 0;
		return -EINVAL;
	}
	return 0;
}

static int parse_log(void)
{
	const char *v = getenv("KILN_LOG");

	if (!v || !*v || !strcmp(v, "error"))
		return KILN_LOG_ERROR;
	if (!strcmp(v, "quiet") || !strcmp(v, "none"))
		return KILN_LOG_ERROR - 1;
	if (!strcmp(v, "debug"))
		return KILN_LOG_DEBUG;
	if (!strcmp(v, "info"))
		return KILN_LOG_INFO;
	note("bad KILN_LOG '%s' (quiet, error, info or debug): errors only", v);
	return KILN_LOG_ERROR;
}

/* path made absolute against the working directory now (malloc'ed; NULL
 * when out of memory). */
static char *abspath(const char *path)
{
	char cwd[4096];
	size_t n;
	char *out;

	if (!path)
		return NULL;
	if (path[0] == '/' || !getcwd(cwd, sizeof(cwd)))
		return strdup(path);
	n = strlen(cwd) + strlen(path) + 2;
	out = malloc(n);
	if (out)
		snprintf(out, n, "%s/%s", strcmp(cwd, "/") ? cwd : "", path);
	return out;
}

/*
 * The output variable a (gperftools' name b, or NULL), owned through the
 * variable owner_var: env.h's rule.
 */
static void parse_out(struct kiln_env_out *o, const char *a, const char *b,
		      const char *owner_var)
{
	const char *v = get2(a, b), *first = getenv(owner_var);
	char pid[32];

	if (!v)
		return;
	o->base = abspath(v);
	if (!o->base) {
		note("%s: out of memory", a);
		return;
	}
	if (strcmp(o->base, v)) {
		const char *ka = getenv(a);

		setenv(ka && *ka ? a : b, o->base, 1);
	}
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	if (first && atoi(first) != (int)getpid()) {
		size_t n = strlen(o->base) + 32;

		o->path = malloc(n);
		if (o->path)
			snprintf(o->path, n, "%s.%d", o->base, (int)getpid());
	} else {
		o->again = first != NULL;
		o->path = strdup(o->base);
		setenv(owner_var, pid, 1);
	}
	if (!o->path)
		note("%s: out of memory", a);
}

/*
 * Secure execution (a set-user-ID or set-group-ID program, or one with
 * file capabilities: the loader's AT_SECURE): the environment is the
 * caller's, and an output path from it would have the program create or
 * replace files with privileges the caller lacks.  As gperftools does,
 * nothing is taken from it; the program's own kiln_* calls still work.
 * Said once when KILN_LOG is set (whatever its value: the caller may
 * not raise the program's log level either).
 */
static void parse_secure(void)
{
	const char *v = getenv("KILN_LOG");

	env.secure = true;
	env.log_level = KILN_LOG_ERROR;
	env.cpu_hz = 99;
	env.heap_interval = KILN_ENV_HEAP_INTERVAL;
	if (v && *v)
		note("secure-execution mode (set-user-ID, set-group-ID or file "
		     "capabilities): KILN_*, CPUPROFILE, HEAPPROFILE and the "
		     "other variables are ignored; the program's own kiln_* "
		     "calls still work");
}

static void parse(void)
{
	const char *v, *rt;

	if (getauxval(AT_SECURE)) {
		parse_secure();
		return;
	}
	env.log_level = parse_log();

	parse_out(&env.cpu, "KILN_CPU", "CPUPROFILE", "KILN_CPU_OWNER");
	env.cpu_hz = 99;
	v = get2("KILN_CPU_HZ", "CPUPROFILE_FREQUENCY");
	if (v && parse_int(v, 1, 100000, &env.cpu_hz)) {
		note("bad KILN_CPU_HZ/CPUPROFILE_FREQUENCY '%s': using 99", v);
		env.cpu_hz = 99;
	}
	/* gperftools samples wall time with CPUPROFILE_REALTIME set (to
	 * anything but 0 here); KILN_CPU_MODE says it in words and wins. */
	v = getenv("KILN_CPU_MODE");
	rt = getenv("CPUPROFILE_REALTIME");
	if (v && *v) {
		if (!strcmp(v, "wall"))
			env.cpu_wall = true;
		else if (strcmp(v, "cpu"))
			note("bad KILN_CPU_MODE '%s' (cpu or wall): using cpu", v);
	} else if (rt && *rt && strcmp(rt, "0")) {
		env.cpu_wall = true;
	}
	parse_signal(get2("KILN_CPU_SIGNAL", "CPUPROFILESIGNAL"),
		     "KILN_CPU_SIGNAL/CPUPROFILESIGNAL", &env.cpu_signal);
	/* Pre-fork servers (nginx, postgres, gunicorn) work in children
	 * that fork() makes without an exec: each writes its own profile,
	 * PATH.PID, as gperftools names a child's file. */
	v = getenv("KILN_CPU_CHILDREN");
	if (v && *v) {
		if (!strcmp(v, "1"))
			env.cpu_children = true;
		else if (strcmp(v, "0"))
			note("bad KILN_CPU_CHILDREN '%s' (1 or 0): using 0", v);
	}
	/* gperftools' toggle needs the profile's path: without one no
	 * handler is set, and the guide's `kill -12` ends the program. */
	if (env.cpu_signal && !env.cpu.base)
		note("KILN_CPU_SIGNAL/CPUPROFILESIGNAL %d set without KILN_CPU/"
		     "CPUPROFILE: no handler for it (set CPUPROFILE=PATH too; "
		     "signal %d keeps its default action)", env.cpu_signal,
		     env.cpu_signal);

	/* Pre-fork servers' workers in the serving process's CPU profiles
	 * (http/workers.c). */
	v = getenv("KILN_HTTP_CHILDREN");
	if (v && *v) {
		if (!strcmp(v, "1"))
			env.http_children = true;
		else if (strcmp(v, "0"))
			note("bad KILN_HTTP_CHILDREN '%s' (1 or 0): using 0", v);
	}
	/*
	 * A program started by the served one inherits KILN_HTTP and would
	 * try the same port ("Address already in use"): only the process
	 * that set KILN_HTTP_OWNER serves (the same after an exec of its
	 * own), unless KILN_HTTP_INHERIT=1 asks every program to (give them
	 * port 0 then).
	 */
	v = get2("KILN_HTTP", NULL);
	if (v) {
		const char *first = getenv("KILN_HTTP_OWNER");
		const char *inherit = getenv("KILN_HTTP_INHERIT");
		char pid[32];

		if (first && atoi(first) != (int)getpid() &&
		    !(inherit && !strcmp(inherit, "1"))) {
			env.http_owner = (pid_t)atoi(first);
		} else {
			env.http = v;
			snprintf(pid, sizeof(pid), "%d", (int)getpid());
			setenv("KILN_HTTP_OWNER", pid, 1);
		}
	}

	parse_out(&env.heap, "KILN_HEAP", "HEAPPROFILE", "KILN_HEAP_DUMP_OWNER");
	env.heap_interval = KILN_ENV_HEAP_INTERVAL;
	v = get2("KILN_HEAP_INTERVAL", "HEAP_PROFILE_ALLOCATION_INTERVAL");
	if (v && parse_u64(v, &env.heap_interval)) {
		note("bad KILN_HEAP_INTERVAL/HEAP_PROFILE_ALLOCATION_INTERVAL '%s': "
		     "using %llu", v, (unsigned long long)KILN_ENV_HEAP_INTERVAL);
		env.heap_interval = KILN_ENV_HEAP_INTERVAL;
	}
	parse_signal(get2("KILN_HEAP_SIGNAL", "HEAPPROFILESIGNAL"),
		     "KILN_HEAP_SIGNAL/HEAPPROFILESIGNAL", &env.heap_signal);

	parse_out(&env.trace, "KILN_HEAP_TRACE", NULL, "KILN_HEAP_OWNER");
	v = get2("KILN_HEAP_SAMPLE", NULL);
	if (v && parse_u64(v, &env.heap_sample))
		note("bad KILN_HEAP_SAMPLE '%s': %s", v, env.trace.path ?
		     "tracing every allocation" : "sampling every "
		     KILN_STR(KILN_HEAP_DEFAULT_SAMPLE) " bytes");
	else
		env.heap_sample_set = v != NULL;
	v = get2("KILN_HEAP_CLOCK", NULL);
	if (v && !strcmp(v, "monotonic"))
		env.heap_clock = KILN_ENV_CLOCK_MONOTONIC;
	else if (v && !strcmp(v, "tsc"))
		env.heap_clock = KILN_ENV_CLOCK_TSC;
	else if (v && strcmp(v, "auto"))
		note("bad KILN_HEAP_CLOCK '%s' (auto, tsc or monotonic): using auto", v);
}

const struct kiln_env *kiln_env(void)
{
	pthread_once(&env_once, parse);
	if (!atomic_load_explicit(&said, memory_order_acquire) &&
	    !atomic_exchange(&said, true)) {
		for (int i = 0; i < nnotes; i++)
			kiln_rt_log(KILN_LOG_ERROR, "%s", notes[i]);
	}
	return &env;
}

/* Read in secure execution too: a token only ever narrows who may ask
 * (the servers the program starts itself would answer anyone without). */
const char *kiln_env_http_token(void)
{
	return get2("KILN_HTTP_TOKEN", NULL);
}
