/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The doctor's machine checks (doctor stage): perf_event_paranoid,
 * whether perf_event_open opens here (and when not, why: the sysctl, a
 * seccomp filter, a container, a user namespace), kptr_restrict, tracefs,
 * hardware counters, Yama's ptrace_scope.  Each says the fix.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/wait.h>
#include <unistd.h>

#include "capture/events.h"
#include "doctor/docint.h"
#include "util/buf.h"
#include "util/file.h"

#define MACHINE "this machine"
#define CAP_SYS_PTRACE_BIT 19
#define CAP_SYS_ADMIN_BIT 21
#define CAP_SYSLOG_BIT 34
#define CAP_PERFMON_BIT 38

/* An integer file of /proc/sys; -99 when it cannot be read. */
static int read_int(const char *path)
{
	struct kiln_buf b = KILN_BUF_INIT;
	int v = -99;

	if (!kiln_read_proc(AT_FDCWD, path, &b) && b.len)
		v = atoi(b.data);
	kiln_buf_release(&b);
	return v;
}

/* A field of /proc/self/status ("Seccomp"), as text; NULL when absent. */
static char *status_field(const char *name)
{
	struct kiln_buf b = KILN_BUF_INIT;
	size_t n = strlen(name);
	char *line, *v = NULL;

	if (kiln_read_proc(AT_FDCWD, "/proc/self/status", &b) || !b.len)
		goto out;
	for (line = b.data; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL)
		if (!strncmp(line, name, n) && line[n] == ':') {
			line += n + 1;
			line += strspn(line, " \t");
			v = strndup(line, strcspn(line, "\n"));
			break;
		}
out:
	kiln_buf_release(&b);
	return v;
}

bool kiln_doc_has_cap(int cap)
{
	char *v = status_field("CapEff");
	unsigned long long caps = v ? strtoull(v, NULL, 16) : 0;

	free(v);
	return caps & (1ULL << cap);
}

/* May this process use perf events beyond the sysctl's limits? */
static bool perf_privileged(void)
{
	return kiln_doc_has_cap(CAP_PERFMON_BIT) || kiln_doc_has_cap(CAP_SYS_ADMIN_BIT);
}

/* Opens a user-space event of type/config on pid (0: this process). */
static int try_open(unsigned type, unsigned long long config, pid_t pid);

/*
 * Whether perf_event_open refuses a user without CAP_PERFMON: tried by
 * kiln itself when it is one, else (root) in a child that has become
 * user nobody (setresuid drops the capabilities).  1 refused, 0 opened,
 * -1 not known.
 */
static int unprivileged_refused(bool priv)
{
	int err, status;
	pid_t pid;

	if (!priv) {
		err = try_open(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, 0);
		return err == -EACCES || err == -EPERM ? 1 : err ? -1 : 0;
	}
	if (geteuid() != 0)
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		if (setgroups(0, NULL) || setresgid(65534, 65534, 65534) ||
		    setresuid(65534, 65534, 65534))
			_exit(3);
		err = try_open(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, 0);
		_exit(err == -EACCES || err == -EPERM ? 1 : err ? 2 : 0);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	if (!WIFEXITED(status) || WEXITSTATUS(status) > 1)
		return -1;
	return WEXITSTATUS(status);
}

#define PARANOID_FIX "sysctl -w kernel.perf_event_paranoid=%d (to keep it: a line " \
	"kernel.perf_event_paranoid=%d in /etc/sysctl.d/99-perf.conf), or grant " \
	"kiln CAP_PERFMON: setcap cap_perfmon+ep $(command -v kiln)"

int kiln_doc_paranoid(struct kiln_doctor *d, const struct kiln_doc_target *t)
{
	int v = read_int("/proc/sys/kernel/perf_event_paranoid");
	bool priv = perf_privileged();
	char fix[400];
	const char *c = "perf_event_paranoid";

	if (v == -99) {
		kiln_doc_add(d, c, KILN_DOC_MACHINE, MACHINE, KILN_DOC_PROBLEM,
			     "a kernel built with CONFIG_PERF_EVENTS; else kiln record "
			     "--mode inject (in-process sampling)",
			     "/proc/sys/kernel/perf_event_paranoid is missing: this "
			     "kernel has no perf events");
		return 0;
	}
	if (v >= 3) {
		int refused = unprivileged_refused(priv);

		snprintf(fix, sizeof(fix), PARANOID_FIX, 2, 2);
		if (refused == 0)
			kiln_doc_add(d, c, KILN_DOC_MACHINE, MACHINE, KILN_DOC_WARN,
				     fix, "%d: this kernel has no level 3 (a user "
				     "without CAP_PERFMON could open an event%s): it "
				     "acts as 2, user space of one's own processes; "
				     "a kernel with Debian's patch would refuse users "
				     "everything", v, priv ? ", tried as user nobody" : "");
		else if (refused == 1)
			kiln_doc_add(d, c, KILN_DOC_MACHINE, MACHINE,
				     priv ? KILN_DOC_WARN : KILN_DOC_PROBLEM, fix,
				     "%d: perf_event_open is refused to every user "
				     "without CAP_PERFMON or CAP_SYS_ADMIN (Debian's "
				     "and Ubuntu's level 3%s)%s", v,
				     priv ? ", tried as user nobody" : "",
				     priv ? "; kiln runs with the capability and is "
				     "not affected, other users are" : "");
		else
			kiln_doc_add(d, c, KILN_DOC_MACHINE, MACHINE, KILN_DOC_WARN,
				     fix, "%d: where the kernel has Debian's and "
				     "Ubuntu's level 3, perf_event_open is refused to "
				     "every user without CAP_PERFMON (not known here: "
				     "%s)", v, priv ? "kiln could not try as user "
				     "nobody; kiln itself has the capability" :
				     "perf_event_open fails for another reason, "
				     "see its row");
	} else if (v == 2) {
		snprintf(fix, sizeof(fix), PARANOID_FIX, 1, 1);
		kiln_doc_add(d, c, KILN_DOC_MACHINE, MACHINE,
			     priv ? KILN_DOC_OK : KILN_DOC_WARN, priv ? NULL : fix,
			     "2: users may profile their own processes, user space "
			     "only; --kernel needs 1, -a and -C need 0%s",
			     priv ? " (kiln runs with CAP_PERFMON or root: not "
			     "limited)" : "");
	} else if (v == 1) {
		snprintf(fix, sizeof(fix), PARANOID_FIX, 0, 0);
		kiln_doc_add(d, c, KILN_DOC_MACHINE, MACHINE,
			     priv ? KILN_DOC_OK : KILN_DOC_WARN, priv ? NULL : fix,
			     "1: users may profile their own processes with kernel "
			     "frames; -a and -C need 0%s",
			     priv ? " (kiln runs with CAP_PERFMON or root: not "
			     "limited)" : "");
	} else {
		kiln_doc_add(d, c, KILN_DOC_MACHINE, MACHINE, KILN_DOC_OK, NULL,
			     "%d: every user may profile the kernel and every CPU", v);
	}
	return 0;
}

/* Signs of a container: the engines' marker files, PID 1's cgroup. */
static const char *container_kind(void)
{
	struct kiln_buf b = KILN_BUF_INIT;
	const char *kind = NULL;

	if (!access("/.dockerenv", F_OK))
		return "docker";
	if (!access("/run/.containerenv", F_OK))
		return "podman";
	if (!kiln_read_proc(AT_FDCWD, "/proc/1/cgroup", &b) && b.len) {
		if (strstr(b.data, "kubepods"))
			kind = "kubernetes";
		else if (strstr(b.data, "docker"))
			kind = "docker";
		else if (strstr(b.data, "libpod"))
			kind = "podman";
		else if (strstr(b.data, "lxc"))
			kind = "lxc";
	}
	kiln_buf_release(&b);
	return kind;
}

/* Whether this process is in a user namespace other than the first. */
static bool in_user_namespace(void)
{
	struct kiln_buf b = KILN_BUF_INIT;
	unsigned long a = 0, c = 0, n = 0;
	bool other = false;

	if (!kiln_read_proc(AT_FDCWD, "/proc/self/uid_map", &b) && b.len &&
	    sscanf(b.data, "%lu %lu %lu", &a, &c, &n) == 3)
		other = !(a == 0 && c == 0 && n == 4294967295UL);
	kiln_buf_release(&b);
	return other;
}

#define CONTAINER_FIX "allow perf_event_open where the process runs: Docker and " \
	"Podman: --cap-add PERFMON --security-opt seccomp=unconfined (or a seccomp " \
	"profile that permits perf_event_open); Kubernetes: securityContext " \
	"capabilities add PERFMON and seccompProfile type Unconfined; systemd: " \
	"drop perf_event_open from SystemCallFilter=. Meanwhile kiln record " \
	"--mode inject samples in-process without it"

/* Why perf_event_open was refused with EACCES or EPERM, and the fix. */
static void explain_refusal(struct kiln_doctor *d, const char *subject, int err,
			    pid_t pid)
{
	int paranoid = read_int("/proc/sys/kernel/perf_event_paranoid");
	char *seccomp = status_field("Seccomp");
	const char *kind = container_kind();
	bool filtered = seccomp && atoi(seccomp) == 2;
	const char *c = "perf_event_open";
	enum kiln_doc_scope sc = pid ? KILN_DOC_PROCESS : KILN_DOC_MACHINE;
	char fix[400];

	free(seccomp);
	if (!perf_privileged() && paranoid >= 3) {
		snprintf(fix, sizeof(fix), PARANOID_FIX, 2, 2);
		kiln_doc_add(d, c, sc, subject, KILN_DOC_PROBLEM, fix,
			     "refused (%s): kernel.perf_event_paranoid is %d, which "
			     "forbids it to users without CAP_PERFMON", strerror(-err),
			     paranoid);
	} else if (filtered) {
		kiln_doc_add(d, c, sc, subject, KILN_DOC_PROBLEM,
			     CONTAINER_FIX,
			     "refused (%s) by a seccomp filter (Seccomp: 2 in "
			     "/proc/self/status), not by the sysctl "
			     "(perf_event_paranoid %d)%s%s%s", strerror(-err),
			     paranoid, kind ? "; kiln runs in a " : "",
			     kind ? kind : "", kind ? " container" : "");
	} else if (in_user_namespace()) {
		kiln_doc_add(d, c, sc, subject, KILN_DOC_PROBLEM,
			     CONTAINER_FIX,
			     "refused (%s) in a user namespace%s%s: capabilities "
			     "there do not count for perf events", strerror(-err),
			     kind ? ", a " : "", kind ? kind : "");
	} else if (pid && !perf_privileged()) {
		kiln_doc_add(d, c, sc, subject, KILN_DOC_PROBLEM,
			     "run kiln as the process's owner or as root (or with "
			     "CAP_PERFMON)",
			     "refused (%s) for pid %d: it belongs to another user "
			     "or is not dumpable", strerror(-err), (int)pid);
	} else {
		kiln_doc_add(d, c, sc, subject, KILN_DOC_PROBLEM,
			     CONTAINER_FIX,
			     "refused (%s) although kernel.perf_event_paranoid is %d "
			     "and no seccomp filter is set: a security module "
			     "(SELinux, AppArmor) or a container%s%s refuses it",
			     strerror(-err), paranoid, kind ? ", " : "",
			     kind ? kind : "");
	}
}

int kiln_doctor_explain_refusal(int err, pid_t pid, char **why, char **fix)
{
	struct kiln_doctor d = KILN_DOCTOR_INIT;
	char subject[32];

	*why = *fix = NULL;
	snprintf(subject, sizeof(subject), pid ? "pid %d" : MACHINE, (int)pid);
	explain_refusal(&d, subject, err, pid);
	if (!d.err && d.nrows) {
		*why = d.rows[0].finding;
		*fix = d.rows[0].fix;
		d.rows[0].finding = d.rows[0].fix = NULL;
	}
	kiln_doctor_release(&d);
	return *why ? 0 : -ENOMEM;
}

/* Opens a user-space event of type/config on pid (0: this process). */
static int try_open(unsigned type, unsigned long long config, pid_t pid)
{
	struct perf_event_attr a;
	int fd;

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = type;
	a.config = config;
	a.disabled = 1;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	fd = kiln_event_open(&a, pid, -1, -1, NULL);
	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}

int kiln_doc_perf_open(struct kiln_doctor *d, const struct kiln_doc_target *t)
{
	pid_t pid = t->pid && !t->ran ? t->pid : 0;
	enum kiln_doc_scope sc;
	char subject[64];
	int err;

	if (pid)
		snprintf(subject, sizeof(subject), "pid %d", (int)pid);
	else
		snprintf(subject, sizeof(subject), MACHINE);
	err = try_open(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, pid);
	if (!err) {
		kiln_doc_add(d, "perf_event_open", pid ? KILN_DOC_PROCESS : KILN_DOC_MACHINE,
			     subject, KILN_DOC_OK, NULL,
			     "works: a cpu-clock sampling event opened on %s",
			     pid ? subject : "kiln itself");
		return 0;
	}
	sc = pid ? KILN_DOC_PROCESS : KILN_DOC_MACHINE;
	if (err == -EACCES || err == -EPERM) {
		explain_refusal(d, subject, err, pid);
	} else if (err == -ENOSYS) {
		kiln_doc_add(d, "perf_event_open", sc, subject,
			     KILN_DOC_PROBLEM, CONTAINER_FIX,
			     "not available (%s): a kernel without "
			     "CONFIG_PERF_EVENTS, or a seccomp filter answering "
			     "ENOSYS", strerror(-err));
	} else if (err == -ESRCH) {
		kiln_doc_add(d, "perf_event_open", KILN_DOC_PROCESS, subject,
			     KILN_DOC_SKIP, NULL, "the process has ended");
	} else {
		kiln_doc_add(d, "perf_event_open", sc, subject,
			     KILN_DOC_PROBLEM, "kiln record --mode inject samples "
			     "in-process without perf_event_open",
			     "the cpu-clock event cannot be opened: %s",
			     strerror(-err));
	}
	return 0;
}

int kiln_doc_kptr(struct kiln_doctor *d, const struct kiln_doc_target *t)
{
	int v = read_int("/proc/sys/kernel/kptr_restrict");
	int paranoid = read_int("/proc/sys/kernel/perf_event_paranoid");
	const char *c = "kptr_restrict";
	bool hidden = true;
	int fd;

	/* What this user sees: the address of kallsyms' first text symbol,
	 * zero when hidden (x86-64 kernels list per-CPU symbols first, at
	 * offsets from 0, whoever reads them). */
	fd = open("/proc/kallsyms", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		char buf[16384];
		ssize_t n = read(fd, buf, sizeof(buf) - 1);
		char *line = buf;

		close(fd);
		buf[n > 0 ? n : 0] = '\0';
		while (line && *line) {
			char *end;
			unsigned long long addr = strtoull(line, &end, 16);

			if (end[0] == ' ' && (end[1] == 't' || end[1] == 'T')) {
				hidden = !addr;
				break;
			}
			line = strchr(line, '\n');
			line = line ? line + 1 : NULL;
		}
	}
	if (!hidden)
		kiln_doc_add(d, c, KILN_DOC_MACHINE, MACHINE, KILN_DOC_OK, NULL,
			     "%d: /proc/kallsyms shows kernel addresses to kiln, so "
			     "kernel frames get names", v);
	else if (v == 0)
		/* kallsyms_show_value(): with 0, addresses are shown where
		 * perf_event_paranoid <= 1, else only to CAP_SYSLOG. */
		kiln_doc_add(d, c, KILN_DOC_MACHINE, MACHINE, KILN_DOC_WARN,
			     "sysctl -w kernel.perf_event_paranoid=1, or run kiln as "
			     "root (CAP_SYSLOG)",
			     "0, but with kernel.perf_event_paranoid %d /proc/kallsyms "
			     "shows addresses only to CAP_SYSLOG: kernel frames "
			     "(--kernel, -a) stay [kernel.kallsyms] without names",
			     paranoid);
	else
		kiln_doc_add(d, c, KILN_DOC_MACHINE, MACHINE, KILN_DOC_WARN,
			     v == 1 ? "run kiln as root (CAP_SYSLOG), or sysctl -w "
			     "kernel.kptr_restrict=0 with kernel.perf_event_paranoid "
			     "at 1 or less" : "sysctl -w kernel.kptr_restrict=1 (kiln "
			     "as root then sees them) or 0",
			     "%d: /proc/kallsyms hides kernel addresses from %s: "
			     "kernel frames (--kernel, -a) stay [kernel.kallsyms] "
			     "without names", v, v == 1 ? "users without CAP_SYSLOG" :
			     "everyone, root too");
	return 0;
}

/*
 * Where tracefs is mounted, from /proc/self/mounts (kiln_event_tracefs()
 * would mount it as root: the doctor looks, it changes nothing).
 */
static char *tracefs_mount(void)
{
	struct kiln_buf b = KILN_BUF_INIT;
	char *line, *at = NULL;

	if (kiln_read_proc(AT_FDCWD, "/proc/self/mounts", &b) || !b.len)
		goto out;
	for (line = b.data; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
		char dev[64], dir[512], type[64];

		if (sscanf(line, "%63s %511s %63s", dev, dir, type) == 3 &&
		    !strcmp(type, "tracefs")) {
			free(at);
			at = strdup(dir);
			if (!strcmp(dir, "/sys/kernel/tracing"))
				break;
		}
	}
out:
	kiln_buf_release(&b);
	return at;
}

int kiln_doc_tracefs(struct kiln_doctor *d, const struct kiln_doc_target *t)
{
	char *at = tracefs_mount();
	char events[600], fix[700];

	if (!at) {
		kiln_doc_add(d, "tracefs", KILN_DOC_MACHINE, MACHINE, KILN_DOC_WARN,
			     "mount -t tracefs nodev /sys/kernel/tracing (as root; "
			     "kiln record mounts it itself when it runs as root)",
			     "not mounted: tracepoints (-e sched:sched_switch), "
			     "--off-cpu and --wall cannot be recorded");
		return 0;
	}
	snprintf(events, sizeof(events), "%s/events", at);
	if (!access(events, R_OK | X_OK)) {
		kiln_doc_add(d, "tracefs", KILN_DOC_MACHINE, MACHINE, KILN_DOC_OK,
			     NULL, "mounted at %s: tracepoints, --off-cpu and "
			     "--wall can be recorded", at);
	} else {
		snprintf(fix, sizeof(fix), "run kiln as root, or let a group in: "
			 "mount -o remount,gid=GROUP,mode=0750 %s (and chgrp -R "
			 "GROUP %s/events)", at, at);
		kiln_doc_add(d, "tracefs", KILN_DOC_MACHINE, MACHINE, KILN_DOC_WARN,
			     fix, "mounted at %s, but kiln cannot read it (%s): "
			     "tracepoints, --off-cpu and --wall need root here", at,
			     strerror(errno));
	}
	free(at);
	return 0;
}

int kiln_doc_hwcounters(struct kiln_doctor *d, const struct kiln_doc_target *t)
{
	int err = try_open(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, 0);

	if (!err)
		kiln_doc_add(d, "hw-counters", KILN_DOC_MACHINE, MACHINE, KILN_DOC_OK,
			     NULL, "cycles opens: hardware events (cycles, "
			     "instructions, cache and branch misses) can be counted "
			     "and sampled");
	else if (err == -EACCES || err == -EPERM || err == -ENOSYS)
		kiln_doc_add(d, "hw-counters", KILN_DOC_MACHINE, MACHINE,
			     KILN_DOC_SKIP, NULL, "not known: perf_event_open is "
			     "refused (%s)", strerror(-err));
	else
		kiln_doc_add(d, "hw-counters", KILN_DOC_MACHINE, MACHINE,
			     KILN_DOC_WARN, "on a virtual machine, expose the PMU "
			     "(KVM/libvirt: host-passthrough CPU with the PMU on; "
			     "VMware: virtualized CPU performance counters; cloud: "
			     "an instance type with a PMU); else profile with "
			     "cpu-clock and task-clock, which do not need it",
			     "no hardware counters (cycles: %s): -e cycles, "
			     "instructions and kiln stat's IPC read <not supported>; "
			     "cpu-clock sampling is not affected", strerror(-err));
	return 0;
}

int kiln_doc_ptrace(struct kiln_doctor *d, const struct kiln_doc_target *t)
{
	int v = read_int("/proc/sys/kernel/yama/ptrace_scope");
	bool cap = kiln_doc_has_cap(CAP_SYS_PTRACE_BIT);
	const char *c = "ptrace_scope";
	static const char fix[] = "sysctl -w kernel.yama.ptrace_scope=0 (or 1 "
		"with kiln run as root, which has CAP_SYS_PTRACE)";

	if (v == -99)
		kiln_doc_add(d, c, KILN_DOC_MACHINE, MACHINE, KILN_DOC_OK, NULL,
			     "no Yama: attaching follows the classic ptrace rules "
			     "(same user, or CAP_SYS_PTRACE)");
	else if (v == 0)
		kiln_doc_add(d, c, KILN_DOC_MACHINE, MACHINE, KILN_DOC_OK, NULL,
			     "0: a user may attach to any process of its own");
	else if (v >= 3)
		kiln_doc_add(d, c, KILN_DOC_MACHINE, MACHINE, KILN_DOC_WARN,
			     "it cannot be lowered until a reboot: set "
			     "kernel.yama.ptrace_scope=1 in /etc/sysctl.d and reboot",
			     "%d: no process may attach to another (ptrace, "
			     "attaching profilers and debuggers); perf_event_open "
			     "-p is not affected", v);
	else if (cap)
		kiln_doc_add(d, c, KILN_DOC_MACHINE, MACHINE, KILN_DOC_OK, NULL,
			     "%d: attaching is limited to %s, and kiln runs with "
			     "CAP_SYS_PTRACE", v, v == 1 ? "a process's ancestors" :
			     "CAP_SYS_PTRACE");
	else
		kiln_doc_add(d, c, KILN_DOC_MACHINE, MACHINE, KILN_DOC_WARN, fix,
			     "%d: attaching to a running process (ptrace: heap "
			     "profiling by PID, debuggers) is limited to %s; "
			     "perf_event_open -p is not affected", v,
			     v == 1 ? "its ancestors" : "CAP_SYS_PTRACE");
	return 0;
}
