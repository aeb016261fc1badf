/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Diagnostics (util stage): library code never prints; a function that
 * rejects its input fills a struct kiln_diag with where and why, and the
 * CLI prefixes the file name and format and prints it.
 */
#ifndef KILN_UTIL_DIAG_H
#define KILN_UTIL_DIAG_H

struct kiln_diag {
	char msg[768];	/* "line 12: no count at the end of the line" */
	/*
	 * A warning about input that was read all the same ("skipped 3
	 * malformed lines, first at line 17: ..."), "" if none: set by a
	 * reader that succeeds, printed by the CLI on stderr.
	 */
	char warn[384];
};

/* Sets d->msg (d may be NULL).  Returns -EINVAL, for `return kiln_diag(...)`. */
int kiln_diag(struct kiln_diag *d, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Sets d->warn (d may be NULL); the input is still taken. */
void kiln_diag_warn(struct kiln_diag *d, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
