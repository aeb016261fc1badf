/*
 * Agent logging (agent stage): on stderr, errors only by default (a
 * profile that cannot be written, the agent stepping aside), more with
 * KILN_LOG=info or debug, nothing with KILN_LOG=quiet.  The agent never
 * prints on stdout.  Not for signal handlers.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent.h"

static int log_level = -1;

static int level(void)
{
	if (log_level < 0) {
		const char *v = getenv("KILN_LOG");

		if (!v || !*v || !strcmp(v, "error"))
			log_level = KILN_LOG_ERROR;
		else if (!strcmp(v, "quiet") || !strcmp(v, "none"))
			log_level = KILN_LOG_ERROR - 1;
		else if (!strcmp(v, "debug"))
			log_level = KILN_LOG_DEBUG;
		else if (!strcmp(v, "info"))
			log_level = KILN_LOG_INFO;
		else
			log_level = KILN_LOG_ERROR;
	}
	return log_level;
}

void kiln_agent_log(int lvl, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	int n;

	if (lvl > level())
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

const char *kiln_agent_env2(const char *a, const char *b)
{
	const char *v = getenv(a);

	if (v && *v)
		return v;
	v = getenv(b);
	return v && *v ? v : NULL;
}
