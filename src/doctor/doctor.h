/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `kiln doctor`'s checks (doctor stage, between the CLI and the session
 * stage): what decides whether profiles will be good on this machine, for
 * this binary and its libraries, or for this process, each found as one
 * row (check, subject, status, finding, fix).  The checks are one table
 * (doctor.c): a name, the function, and what it applies to (the machine,
 * each binary, a process).  Nothing here prints; the CLI prints the rows
 * as a table or JSON.  See docs/kiln-doctor.md.
 */
#ifndef KILN_DOCTOR_DOCTOR_H
#define KILN_DOCTOR_DOCTOR_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

enum kiln_doc_status {
	KILN_DOC_OK,		/* nothing to fix */
	KILN_DOC_WARN,		/* some profiles or modes suffer: a fix is said */
	KILN_DOC_PROBLEM,	/* profiles will be broken or impossible */
	KILN_DOC_SKIP,		/* could not be checked (said why) */
};

enum kiln_doc_scope {
	KILN_DOC_MACHINE,	/* once: kernel settings, counters */
	KILN_DOC_BINARY,	/* each ELF file: the program, its libraries */
	KILN_DOC_PROCESS,	/* a running (or run) process */
};

/* One finding: strings owned by the struct kiln_doctor holding it. */
struct kiln_doc_row {
	const char *check;		/* the check's name (static) */
	enum kiln_doc_scope scope;
	char *subject;			/* "this machine", a path, "pid N" */
	enum kiln_doc_status status;
	char *finding;
	char *fix;			/* NULL: nothing to do */
};

/* One check of the table. */
struct kiln_doc_check {
	const char *name;
	enum kiln_doc_scope scope;
	const char *about;		/* one line: what it looks at */
};

/* The table of checks, in the order they run; *n of them. */
const struct kiln_doc_check *kiln_doctor_checks(size_t *n);

/* What to examine: at most one of pid, binary and cmd. */
struct kiln_doctor_opts {
	pid_t pid;			/* 0: none */
	const char *binary;		/* an ELF file, or NULL */
	char **cmd;			/* NULL-terminated, or NULL */
	/* For cmd: set (by a signal handler) to stop the command early. */
	volatile sig_atomic_t *stop;
};

struct kiln_doctor {
	struct kiln_doc_row *rows;
	size_t nrows, alloc;
	int cmd_status;			/* cmd's exit status (kiln_child's) */
	int err;			/* sticky -ENOMEM */
};

#define KILN_DOCTOR_INIT { NULL, 0, 0, -1, 0 }

/*
 * Runs every check that applies to o: the machine's always; each
 * binary's for o->binary, the program of o->pid or of o->cmd, and the
 * libraries it needs or has mapped; the process's for o->pid and
 * o->cmd (which is run to its end, or until *o->stop).  Rows are
 * appended to d.  0; -ENOENT/-EACCES (binary cannot be opened), -ENOEXEC
 * (binary is not ELF), -ESRCH (no process pid), the -errno of starting
 * cmd, or -ENOMEM.
 */
int kiln_doctor_run(struct kiln_doctor *d, const struct kiln_doctor_opts *o);

/* Frees the rows; d is then empty and reusable. */
void kiln_doctor_release(struct kiln_doctor *d);

/* How many rows have status s. */
size_t kiln_doctor_count(const struct kiln_doctor *d, enum kiln_doc_status s);

/*
 * Why perf_event_open was refused with err (-EACCES or -EPERM) to this
 * process (on pid, or 0: on itself), as the doctor's perf_event_open
 * check says it: the sysctl, a seccomp filter (and the container), a user
 * namespace, another user's process, else a security module.  *why and
 * *fix are malloc'ed sentences (the caller frees them).  0 or -ENOMEM.
 * For the commands that meet a refusal (kiln record, kiln stat).
 */
int kiln_doctor_explain_refusal(int err, pid_t pid, char **why, char **fix);

/* "ok", "warn", "problem", "skip"; "machine", "binary", "process". */
const char *kiln_doctor_status_name(enum kiln_doc_status s);
const char *kiln_doctor_scope_name(enum kiln_doc_scope s);

#endif
