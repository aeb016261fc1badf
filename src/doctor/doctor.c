/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `kiln doctor`'s table of checks and its run (doctor stage): the target
 * found (a binary, a process's program and maps, or a command run to its
 * end while its maps are read), then each check of the table in order,
 * machine checks once, binary checks for the program and each library,
 * process checks for a process.  Rows are collected for the CLI.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "doctor/docint.h"
#include "util/buf.h"
#include "util/child.h"
#include "util/file.h"

typedef int (*machine_fn)(struct kiln_doctor *d, const struct kiln_doc_target *t);
typedef int (*binary_fn)(struct kiln_doctor *d, const struct kiln_doc_target *t,
			 const struct kiln_doc_elf *e, bool program);

static const struct row_check {
	struct kiln_doc_check c;
	machine_fn once;	/* machine and process checks, and allocator */
	binary_fn each;		/* binary checks: each file */
} table[] = {
	{ { "perf_event_paranoid", KILN_DOC_MACHINE,
	    "who may use perf_event_open, for what (kernel frames, every CPU)" },
	  kiln_doc_paranoid, NULL },
	{ { "perf_event_open", KILN_DOC_MACHINE,
	    "opens a sampling event (on the process with -p); if refused, why" },
	  kiln_doc_perf_open, NULL },
	{ { "kptr_restrict", KILN_DOC_MACHINE,
	    "whether kernel frames can be named (/proc/kallsyms)" },
	  kiln_doc_kptr, NULL },
	{ { "tracefs", KILN_DOC_MACHINE,
	    "tracepoints, --off-cpu, --wall" }, kiln_doc_tracefs, NULL },
	{ { "hw-counters", KILN_DOC_MACHINE,
	    "hardware events (cycles, instructions, misses)" },
	  kiln_doc_hwcounters, NULL },
	{ { "ptrace_scope", KILN_DOC_MACHINE,
	    "attaching to a running process (Yama)" }, kiln_doc_ptrace, NULL },
	{ { "frame-pointers", KILN_DOC_BINARY,
	    "share of non-leaf functions whose prologue sets up %rbp" },
	  NULL, kiln_doc_framepointers },
	{ { "unwind-tables", KILN_DOC_BINARY,
	    ".eh_frame, .debug_frame: DWARF unwinding" },
	  NULL, kiln_doc_unwindtables },
	{ { "debug-info", KILN_DOC_BINARY,
	    "DWARF, a symbol table, or a separate debug file found as kiln "
	    "finds it (debug cache, build ID, debuglink)" },
	  NULL, kiln_doc_debuginfo },
	{ { "build-id", KILN_DOC_BINARY,
	    "a GNU build ID note" }, NULL, kiln_doc_buildid },
	{ { "allocator", KILN_DOC_BINARY,
	    "the program's malloc: glibc, jemalloc, tcmalloc, linked in" },
	  kiln_doc_allocator, NULL },
	{ { "jit-maps", KILN_DOC_PROCESS,
	    "JIT code (anonymous executable memory) and /tmp/perf-PID.map" },
	  kiln_doc_jitmaps, NULL },
};

#define NCHECKS (sizeof(table) / sizeof(table[0]))

const struct kiln_doc_check *kiln_doctor_checks(size_t *n)
{
	static struct kiln_doc_check checks[NCHECKS];
	size_t i;

	for (i = 0; i < NCHECKS; i++)
		checks[i] = table[i].c;
	*n = NCHECKS;
	return checks;
}

void kiln_doc_add(struct kiln_doctor *d, const char *check,
		  enum kiln_doc_scope scope, const char *subject,
		  enum kiln_doc_status status, const char *fix,
		  const char *fmt, ...)
{
	struct kiln_doc_row *r;
	va_list ap;
	int n;

	if (d->err)
		return;
	if (kiln_array_grow((void **)&d->rows, &d->alloc, d->nrows + 1,
			    sizeof(*d->rows))) {
		d->err = -ENOMEM;
		return;
	}
	r = &d->rows[d->nrows];
	memset(r, 0, sizeof(*r));
	r->check = check;
	r->scope = scope;
	r->status = status;
	r->subject = strdup(subject);
	r->fix = fix ? strdup(fix) : NULL;
	va_start(ap, fmt);
	n = vasprintf(&r->finding, fmt, ap);
	va_end(ap);
	if (n < 0)
		r->finding = NULL;
	if (!r->subject || !r->finding || (fix && !r->fix)) {
		free(r->subject);
		free(r->fix);
		free(r->finding);
		d->err = -ENOMEM;
		return;
	}
	d->nrows++;
}

/* Reads pid's maps into t (the last good read stays). */
static void read_maps(struct kiln_doc_target *t, pid_t pid)
{
	struct kiln_buf b = KILN_BUF_INIT;
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	if (!kiln_read_proc(AT_FDCWD, path, &b) && b.len) {
		kiln_buf_release(&t->maps);
		t->maps = b;
		t->have_maps = true;
		return;
	}
	kiln_buf_release(&b);
}

/*
 * Runs cmd to its end (or to *stop: then SIGTERM), reading its maps
 * every 10 ms, so that libraries it dlopens and its JIT code are seen.
 */
static int run_cmd(struct kiln_doctor *d, struct kiln_doc_target *t,
		   char **cmd, volatile sig_atomic_t *stop)
{
	struct kiln_child c = KILN_CHILD_INIT;
	struct timespec tick = { 0, 10 * 1000 * 1000 };
	int err, status = 0, r;

	err = kiln_child_spawn(&c, cmd);
	if (err)
		return err;
	t->pid = c.pid;
	t->ran = true;
	err = kiln_child_start(&c);
	if (err) {
		kiln_child_release(&c);
		return err;
	}
	for (;;) {
		r = kiln_child_wait(&c, false, &status, NULL);
		if (r == 1)
			break;
		if (r < 0 && r != -EINTR)
			break;
		if (stop && *stop) {
			kiln_child_stop(&c, SIGTERM, &status, NULL);
			break;
		}
		read_maps(t, t->pid);
		nanosleep(&tick, NULL);
	}
	d->cmd_status = kiln_child_exit_status(status);
	kiln_child_release(&c);
	return 0;
}

static int find_target(struct kiln_doctor *d, struct kiln_doc_target *t,
		       const struct kiln_doctor_opts *o)
{
	struct kiln_buf exe = KILN_BUF_INIT;
	char link[64];
	int err = 0;

	if (o->binary) {
		if (access(o->binary, R_OK))
			return -errno;
		return kiln_doc_target_objects(t, o->binary);
	}
	if (o->pid) {
		t->pid = o->pid;
		if (kill(o->pid, 0) && errno == ESRCH)
			return -ESRCH;
		read_maps(t, o->pid);
		snprintf(link, sizeof(link), "/proc/%d/exe", (int)o->pid);
		return kiln_doc_target_objects(t, link);
	}
	if (!o->cmd)
		return 0;
	if (!kiln_child_find(o->cmd[0], &exe)) {
		kiln_buf_release(&exe);
		return -ENOENT;
	}
	err = run_cmd(d, t, o->cmd, o->stop);
	if (!err)
		err = kiln_doc_target_objects(t, exe.data);
	kiln_buf_release(&exe);
	return err;
}

int kiln_doctor_run(struct kiln_doctor *d, const struct kiln_doctor_opts *o)
{
	struct kiln_doc_target t = { 0 };
	char subject[32];
	size_t i, j;
	int err;

	err = find_target(d, &t, o);
	if (!err && t.nobjs && t.objs[0].err)
		err = t.objs[0].err;
	if (!err && o->binary && !t.nobjs)
		err = -ENOENT;
	snprintf(subject, sizeof(subject), "pid %d", (int)o->pid);
	if (!err && o->pid && !t.nobjs)
		kiln_doc_add(d, "program", KILN_DOC_PROCESS, subject,
			     KILN_DOC_SKIP, "run kiln doctor as the process's owner "
			     "or as root", "the program of pid %d cannot be read "
			     "(/proc/%d/exe): its binaries are not examined",
			     (int)o->pid, (int)o->pid);
	for (i = 0; !err && i < NCHECKS; i++) {
		const struct row_check *c = &table[i];

		if (c->c.scope == KILN_DOC_PROCESS && !t.pid)
			continue;
		if (c->once) {
			if (c->c.scope == KILN_DOC_BINARY && !t.nobjs)
				continue;
			err = c->once(d, &t);
			continue;
		}
		for (j = 0; !err && j < t.nobjs; j++)
			if (!t.objs[j].err)
				err = c->each(d, &t, &t.objs[j], j == 0);
	}
	kiln_doc_target_release(&t);
	return err ? err : d->err;
}

void kiln_doctor_release(struct kiln_doctor *d)
{
	size_t i;

	for (i = 0; i < d->nrows; i++) {
		free(d->rows[i].subject);
		free(d->rows[i].finding);
		free(d->rows[i].fix);
	}
	free(d->rows);
	d->rows = NULL;
	d->nrows = d->alloc = 0;
	d->err = 0;
	d->cmd_status = -1;
}

size_t kiln_doctor_count(const struct kiln_doctor *d, enum kiln_doc_status s)
{
	size_t i, n = 0;

	for (i = 0; i < d->nrows; i++)
		n += d->rows[i].status == s;
	return n;
}

const char *kiln_doctor_status_name(enum kiln_doc_status s)
{
	static const char *const names[] = { "ok", "warn", "problem", "skip" };

	return (unsigned)s < 4 ? names[s] : "?";
}

const char *kiln_doctor_scope_name(enum kiln_doc_scope s)
{
	static const char *const names[] = { "machine", "binary", "process" };

	return (unsigned)s < 3 ? names[s] : "?";
}
