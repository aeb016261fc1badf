/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Messages for the perf_event_open commands (cli stage): an event name that
 * cannot be used, and a refusal with the setting that would allow it
 * (stat's and record's).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture/events.h"
#include "cli/cli.h"
#include "doctor/doctor.h"
#include "util/buf.h"

int kiln_cli_event_error(const char *name, int err)
{
	char *near[3];
	size_t n, i;

	if (err == -ENODEV) {
		kiln_cli_error("event '%s' is a tracepoint, and tracefs is not "
			       "mounted: mount it with 'mount -t tracefs nodev "
			       "/sys/kernel/tracing' (as root)", name);
		return KILN_EXIT_FAIL;
	}
	if (err == -EACCES || err == -EPERM) {
		kiln_cli_error("cannot read the tracepoint '%s' in tracefs: %s "
			       "(tracefs is readable by root only unless it is "
			       "mounted with 'gid=' and 'mode=')", name,
			       strerror(-err));
		return KILN_EXIT_FAIL;
	}
	if (err == -EINVAL) {
		kiln_cli_error("bad event '%s': a PMU event is PMU/TERM=VALUE,.../ "
			       "with the terms of /sys/bus/event_source/devices/PMU/format",
			       name);
		return KILN_EXIT_USAGE;
	}
	if (err != -ENOENT) {
		kiln_cli_error("cannot look up event '%s': %s", name, strerror(-err));
		return KILN_EXIT_FAIL;
	}
	n = kiln_event_suggest(name, near, 3);
	if (!n) {
		kiln_cli_error("unknown event '%s' ('kiln list' shows the events "
			       "of this machine)", name);
		return KILN_EXIT_USAGE;
	}
	fprintf(stderr, "kiln: unknown event '%s'; the closest are:", name);
	for (i = 0; i < n; i++) {
		fprintf(stderr, "%s %s", i ? "," : "", near[i]);
		free(near[i]);
	}
	fprintf(stderr, " ('kiln list' shows them all)\n");
	return KILN_EXIT_USAGE;
}

int kiln_cli_read_int(const char *path)
{
	FILE *f = fopen(path, "r");
	int v = -99;

	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = -99;
		fclose(f);
	}
	return v;
}

/*
 * What refused perf_event_open when the sysctl allows it, and the fix, as
 * `kiln doctor` finds it (a seccomp filter and the container, a user
 * namespace, a security module).
 */
static void print_why(int err)
{
	char *why, *fix;

	if (kiln_doctor_explain_refusal(err, 0, &why, &fix)) {
		fprintf(stderr, "  a container, a user namespace or a seccomp "
				"profile may forbid perf_event_open: allow it there\n");
		return;
	}
	fprintf(stderr, "  why: %s\n", why);
	if (fix)
		fprintf(stderr, "  fix: %s\n", fix);
	fprintf(stderr, "  ('kiln doctor' checks the rest of what profiles need here)\n");
	free(why);
	free(fix);
}

void kiln_cli_perf_refused(int err, int need, const char *what)
{
	int paranoid = kiln_cli_read_int("/proc/sys/kernel/perf_event_paranoid");

	kiln_cli_error("perf_event_open refused %s: %s (kernel.perf_event_paranoid "
		       "is %d)", what, strerror(-err), paranoid);
	if (paranoid > need)
		fprintf(stderr, "  fix: 'sysctl kernel.perf_event_paranoid=%d', or "
				"grant CAP_PERFMON (setcap cap_perfmon+ep kiln)%s\n",
			need, geteuid() ? ", or run as root" : "");
	else if (geteuid())
		fprintf(stderr, "  fix: run as the process's owner or root, or "
				"grant CAP_PERFMON (setcap cap_perfmon+ep kiln)\n");
	else
		print_why(err);
}

/*
 * Explains a refused perf_event_open and what would fix it: the setting
 * the request needs (kernel frames: 1, every CPU: 0, a process of one's
 * own: 2), advised only when it is lower than the one in force, and root
 * only to someone who is not root.
 */
void kiln_cli_record_refused(int err, bool kernel, bool system_wide,
			     bool have_cmd)
{
	int paranoid = kiln_cli_read_int("/proc/sys/kernel/perf_event_paranoid");
	int need = system_wide ? 0 : kernel ? 1 : 2;
	bool root = geteuid() == 0;
	struct kiln_buf fix = KILN_BUF_INIT;

	kiln_cli_error("perf_event_open was refused: %s (kernel.perf_event_paranoid = %d)",
		       strerror(-err), paranoid);
	if (!root)
		kiln_buf_adds(&fix, system_wide ? "run as root" :
				    "run as root or as the process's owner");
	if (!root)
		kiln_buf_adds(&fix, ", grant CAP_PERFMON (setcap cap_perfmon+ep kiln)");
	if (paranoid > need)
		kiln_buf_addf(&fix, "%s'sysctl kernel.perf_event_paranoid=%d'",
			      fix.len ? ", or " : "", need);
	if (fix.len)
		fprintf(stderr, "  fix: %s\n", fix.data);
	if (!fix.len || root)
		print_why(err);
	if (kernel && !system_wide)
		fprintf(stderr, "  leave out --kernel to profile user space only\n");
	if (have_cmd && !system_wide)
		fprintf(stderr, "  (--mode inject samples in-process, without "
				"perf_event_open)\n");
	kiln_buf_release(&fix);
}
