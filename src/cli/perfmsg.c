/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Messages for the perf_event_open commands (cli stage): an event name that
 * cannot be used, and a refusal with the setting that would allow it
 * (stat's and record's); records lost by kiln record.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture/events.h"
#include "cli/cli.h"
#include "doctor/doctor.h"
#include "session/record-run.h"
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

/*
 * A counting event whose records were lost: what became of the events
 * lost (their number from the event's own count, res->count).  Said with
 * -q too: the values are no longer the records'.
 */
static void warn_estimated(const struct kiln_record_result *res)
{
	if (res->counted)
		fprintf(stderr, "kiln: warning: the event occurred %" PRIu64
			" times (its own count) but %" PRIu64 " were recorded: ",
			res->count, res->count - res->estimated);
	else
		fprintf(stderr, "kiln: warning: %" PRIu64 " events lost "
			"their records: ", res->estimated);
	fprintf(stderr, "the %" PRIu64 " lost were added to the stacks "
		"recorded next to their loss, so the values are scaled "
		"to the count and the shares are estimates (samples/count "
		"keeps the records)\n", res->estimated);
}

/* What to change when the kernel dropped records, by the options in use. */
static void explain_lost(const struct kiln_record_result *res, long count,
			 bool freq_given, long freq, uint32_t stack_bytes,
			 size_t pages_asked)
{
	uint64_t lost = res->estimated ? res->estimated : res->lost;
	uint64_t samples = res->samples;

	if (res->ring_pages < pages_asked)
		fprintf(stderr, "kiln: the rings got %zu pages per CPU of the %zu "
			"asked (kernel.perf_event_mlock_kb limits users without "
			"CAP_IPC_LOCK: run as root for larger ones)\n",
			res->ring_pages, pages_asked);
	if (!lost)
		return;
	fprintf(stderr, "kiln: the kernel dropped %" PRIu64 " records (%.1f%% "
		"of the samples): ", lost,
		100.0 * (double)lost / (double)(samples + lost ? samples + lost : 1));
	if (count == 1)
		fprintf(stderr, "use larger rings (-m %zu)", res->ring_pages * 2);
	else if (count)
		fprintf(stderr, "use a larger -c than %ld", count);
	else if (freq_given)
		fprintf(stderr, "use a lower -F than %ld", freq);
	else
		fprintf(stderr, "use a lower -F (now %ld)", freq);
	if (stack_bytes > 512)
		fprintf(stderr, ", or copy less stack per sample "
			"(--call-graph dwarf,%u or fp)", stack_bytes / 2);
	fputc('\n', stderr);
}

void kiln_cli_record_lost(const struct kiln_record_result *res, long count,
			  bool freq_given, long freq, uint32_t stack_bytes,
			  size_t pages_asked, bool quiet)
{
	if (res->estimated)
		warn_estimated(res);
	if ((res->lost || res->estimated) && !quiet)
		explain_lost(res, count, freq_given, freq, stack_bytes,
			     pages_asked);
}
