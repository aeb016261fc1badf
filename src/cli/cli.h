/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The command line (cli stage): one kiln_cmd_<name>() per subcommand file,
 * and helpers they share for messages and exit status.
 */
#ifndef KILN_CLI_CLI_H
#define KILN_CLI_CLI_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "format/format.h"

struct kiln_prof;
struct kiln_buf;

enum {
	KILN_EXIT_OK = 0,
	KILN_EXIT_FAIL = 1,
	KILN_EXIT_USAGE = 2,
};

int kiln_cmd_top(int argc, char **argv);
int kiln_cmd_flame(int argc, char **argv);
int kiln_cmd_convert(int argc, char **argv);
int kiln_cmd_record(int argc, char **argv);
int kiln_cmd_heap(int argc, char **argv);
int kiln_cmd_callgraph(int argc, char **argv);
int kiln_cmd_stat(int argc, char **argv);
int kiln_cmd_list(int argc, char **argv);
int kiln_cmd_doctor(int argc, char **argv);
int kiln_cmd_serve(int argc, char **argv);
int kiln_cmd_diff(int argc, char **argv);

/* Prints "kiln: <message>" on stderr. */
void kiln_cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints the usage text of a command to stdout (help) or stderr. */
void kiln_cli_usage(const char *cmd, bool to_stderr);
/*
 * Appends the whole help text of command cmd (what `kiln help cmd`
 * prints: its usage, with the list of written formats where it has one)
 * to out.  0, -ENOENT for no such command, or -ENOMEM.
 */
int kiln_cli_usage_text(const char *cmd, struct kiln_buf *out);
/* Row i of the command table: its name (NULL past the last row), and its
 * one-line summary in *summary when summary is not NULL. */
const char *kiln_cli_cmd_row(size_t i, const char **summary);
/*
 * `kiln help --man [COMMAND]`, `kiln help --complete ...` (cli/help.c):
 * argv[0] is the "--" option.  Returns the exit status.
 */
int kiln_cli_help_extra(int argc, char **argv);
/* For a bad option: the message, a hint to --help, returns 2. */
int kiln_cli_usage_error(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * Reads a profile for a command, from a file or, for an http:// or
 * https:// URL, from the body kiln_cli_fetch() gets; printing the error
 * and returning the exit status (2 for unreadable input) on failure, 0 on
 * success; a reader's warning (skipped lines) is printed on stderr.
 */
int kiln_cli_read(const char *path, struct kiln_prof **out);
/*
 * The same, with the format read in *fmt (may be NULL) and, when the
 * input is a kiln heap trace and trace is not NULL, its bytes appended to
 * trace and *out NULL: not analysed here (kiln_read_profile_keep()).
 */
int kiln_cli_read_keep(const char *path, struct kiln_prof **out,
		       enum kiln_fmt *fmt, struct kiln_buf *trace);

/* Whether an input names a URL (http://, https://) rather than a file. */
bool kiln_cli_is_url(const char *input);
/*
 * GETs url into body (appended), as `go tool pprof URL` does: with
 * "Authorization: Bearer $KILN_HTTP_TOKEN" when that is set, https
 * checked against the system's trust store, redirects followed, at most
 * kiln_input_limit() bytes taken, a connect timeout and, for ?seconds=N,
 * N and a margin to answer in; a progress line on stderr while it waits
 * (a terminal, no -q).  Prints the error (refused connection, timeout,
 * an HTTP status other than 2xx with the body's first line) and returns
 * the exit status: 2 for a bad or unreachable URL, 1 out of memory.
 */
int kiln_cli_fetch(const char *url, struct kiln_buf *body);

/*
 * The name an output is derived from: the input's last path component
 * (a URL's, without its query: ".../debug/pprof/profile?seconds=5" ->
 * "profile") without its profile extension (.pb.gz, .data, ...); *len
 * receives its length.  Points into input, or at "profile".
 */
const char *kiln_cli_input_stem(const char *input, size_t *len);
/* Prints the warning kiln_read_profile() left in d, if any, on stderr
 * ("kiln: warning: 'FILE': skipped 3 malformed lines, ..."). */
struct kiln_diag;
void kiln_cli_read_warning(const struct kiln_diag *d);

/*
 * Writes data to path atomically, refusing to write over any of the
 * inputs.  Prints the error; returns an exit status.
 */
int kiln_cli_write(const char *path, const void *data, unsigned long len,
		   char **inputs, int ninputs);

/* Whether long-running work should show progress (stderr is a tty, no -q). */
extern bool kiln_cli_quiet;

/* Options shared by the commands that read profiles. */
struct kiln_cli_input {
	const char *sample_type;	/* --sample-type */
	const char *focus;		/* --focus */
	const char *ignore;		/* --ignore */
	const char *hide;		/* --hide */
	const char *transform;		/* --transform: profile/transform.h */
	const char *event;		/* --event: a perf.data's event */
	/* A program given before the profiles (kiln_cli_take_binary()),
	 * NULL for none. */
	const char *binary;
};

/*
 * pprof's `pprof BINARY PROFILE` form: when argv[*optind] is a local ELF
 * file and a profile follows, returns it and steps *optind past it, so
 * that kiln_cli_load() names the profiles' main mapping with it (the
 * mapping with its build ID, else the first: kiln_sym_prof_binary());
 * NULL otherwise.
 */
const char *kiln_cli_take_binary(int argc, char **argv, int *optind);

/*
 * Reads (and merges) the input files, applies focus/ignore/hide and then
 * the transforms, picks the
 * sample type.  On success *out is the profile and *type the type index.
 * Prints errors; returns an exit status.
 */
int kiln_cli_load(char **files, int nfiles, const struct kiln_cli_input *in,
		  struct kiln_prof **out, int *type);

/*
 * Finds a library of the preload agent, lib: "libkiln.so" or the malloc
 * interposer "libkiln-malloc.so" (which loads libkiln.so): beside
 * $KILN_AGENT (the path of libkiln.so) when set, else next to the kiln
 * binary, else in ../lib from it.  Appends the path to *path.  0 or
 * -ENOENT.
 */
int kiln_cli_find_agent(struct kiln_buf *path, const char *lib);

/*
 * Prints why an event name cannot be used (unknown: the closest names;
 * tracefs missing: how to mount it) for the -errno of kiln_event_parse();
 * returns the exit status (2 for a bad name, 1 otherwise).
 */
int kiln_cli_event_error(const char *name, int err);

/*
 * Prints a refused perf_event_open and the setting that would allow it:
 * need is the highest kernel.perf_event_paranoid that allows `what` (2:
 * own processes in user space, 1: with the kernel, 0: whole CPUs); the
 * setting already in force and "run as root" to root are never advised.
 */
void kiln_cli_perf_refused(int err, int need, const char *what);
/*
 * kiln record's refusal: the setting the request needs (kernel frames: 1,
 * every CPU: 0, a process of one's own: 2), advised only when it is lower
 * than the one in force, root only to someone who is not root, and
 * --mode inject where a command is recorded.
 */
void kiln_cli_record_refused(int err, bool kernel, bool system_wide,
			     bool have_cmd);
/*
 * kiln record's records lost: for a counting event whose lost events were
 * added to the recorded stacks (res->estimated), a warning, said even
 * when quiet; then, unless quiet, how many and what to change among the
 * options in use (count: -c, 0 for -F; pages_asked: the rings asked).
 */
struct kiln_record_result;
void kiln_cli_record_lost(const struct kiln_record_result *res, long count,
			  bool freq_given, long freq, uint32_t stack_bytes,
			  size_t pages_asked, bool quiet);
/* The integer a /proc file holds (a sysctl), -99 when unreadable. */
int kiln_cli_read_int(const char *path);

/*
 * The signal that asked a long-running command (record, stat, heap,
 * serve) to stop, 0 while none did; set by kiln_cli_on_stop(), a handler
 * that only sets it (async-signal-safe).
 */
extern volatile sig_atomic_t kiln_cli_stop_signal;
void kiln_cli_on_stop(int sig);

/* Seconds on CLOCK_MONOTONIC (the sessions' clock, kiln_session_now()). */
double kiln_cli_now(void);

#endif
