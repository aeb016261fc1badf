/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Agent logging (runtime stage): on stderr, errors only by default (a
 * profile that cannot be written, the agent stepping aside), more with
 * KILN_LOG=info or debug, nothing with KILN_LOG=quiet.  The agent never
 * prints on stdout.  Not for signal handlers.
 *
 * fd 2 is the host's: a daemon closes it and its next open(2) (a data
 * file, a database) takes the number.  A message is written to fd 2 only
 * while fd 2 is the file it was when libkiln.so loaded (same device and
 * inode), or is a terminal, a pipe or a socket (a stream meant for
 * messages: a supervisor's log pipe, the journal); never into a regular
 * file that fd 2 came to name later.  docs/agent.md says so.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/log.h"
#include "runtime/env.h"

static int log_level = -1;
static bool err_known;		/* fd 2 was open when the agent loaded */
static dev_t err_dev;
static ino_t err_ino;

void kiln_rt_log_init(void)
{
	static bool done;
	struct stat st;

	if (done)
		return;
	done = true;
	if (!fstat(STDERR_FILENO, &st)) {
		err_known = true;
		err_dev = st.st_dev;
		err_ino = st.st_ino;
	}
}

/* Whether a message may go to fd 2 now (see the top of the file). */
static bool stderr_ok(void)
{
	struct stat st;

	if (fstat(STDERR_FILENO, &st))
		return false;
	if (err_known && st.st_dev == err_dev && st.st_ino == err_ino)
		return true;
	return S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode);
}

static int level(void)
{
	if (log_level < 0)
		log_level = kiln_env()->log_level;	/* KILN_LOG */
	return log_level;
}

void kiln_rt_log(int lvl, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	int n;

	if (lvl > level() || !stderr_ok())
		return;
	n = snprintf(buf, sizeof(buf), "kiln[%d]: ", (int)getpid());
	va_start(ap, fmt);
	n += vsnprintf(buf + n, sizeof(buf) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(buf) - 2)
		n = (int)sizeof(buf) - 2;
	buf[n++] = '\n';
	/* One write(2): lines of several threads do not mix. */
	if (write(STDERR_FILENO, buf, (size_t)n) < 0)
		return;
}
