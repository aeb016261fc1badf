/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a session measures (session stage).  See targets.h.
 */
#include "session/targets.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int kiln_targets_parse_list(const char *arg, int **out, int *n, bool ranges)
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

int kiln_targets_online_cpus(int **out, int *n)
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
	err = kiln_targets_parse_list(line, out, n, true);
	return err;
}

int kiln_targets_parse_pids(const char *arg, pid_t **out, int *n)
{
	int err = kiln_targets_parse_list(arg, out, n, false), i;

	for (i = 0; !err && i < *n; i++)
		if ((*out)[i] <= 0)
			err = -EINVAL;
	return err;
}

int kiln_targets_first_gone(const pid_t *pids, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (kill(pids[i], 0) && errno == ESRCH)
			return i;
	return -1;
}

bool kiln_targets_alive(const pid_t *pids, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (!kill(pids[i], 0) || errno == EPERM)
			return true;
	return false;
}

pid_t kiln_targets_tgid(pid_t tid)
{
	char path[64], line[128];
	pid_t tgid = -ESRCH;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	f = fopen(path, "r");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "Tgid:", 5)) {
			tgid = (pid_t)strtol(line + 5, NULL, 10);
			break;
		}
	fclose(f);
	return tgid;
}

uint64_t kiln_session_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

double kiln_session_now(void)
{
	return (double)kiln_session_ns(CLOCK_MONOTONIC) / 1e9;
}
