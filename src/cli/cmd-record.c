/*
 * `kiln record`: CPU (or any event) sampling of a command or of running
 * processes through perf_event_open, symbolized on the spot, written as
 * pprof (cli stage).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "capture/events.h"
#include "capture/offcpu.h"
#include "capture/perf.h"
#include "session/record.h"
#include "cli/cli.h"
#include "format/format.h"
#include "profile/profile.h"
#include "util/buf.h"
#include "util/child.h"
#include "util/diag.h"
#include "util/file.h"

enum { OPT_CALLGRAPH = 256, OPT_DURATION, OPT_KERNEL, OPT_MODE, OPT_OFFCPU,
       OPT_WALL };

/* perf's default --call-graph dwarf copy is 8 KiB; see docs/kiln-record.md. */
#define DEFAULT_STACK_BYTES 32768u

static const struct option opts[] = {
	{ "freq", required_argument, NULL, 'F' },
	{ "event", required_argument, NULL, 'e' },
	{ "count", required_argument, NULL, 'c' },
	{ "call-graph", required_argument, NULL, OPT_CALLGRAPH },
	{ "output", required_argument, NULL, 'o' },
	{ "pid", required_argument, NULL, 'p' },
	{ "tid", required_argument, NULL, 't' },
	{ "all-cpus", no_argument, NULL, 'a' },
	{ "cpu", required_argument, NULL, 'C' },
	{ "duration", required_argument, NULL, OPT_DURATION },
	{ "kernel", no_argument, NULL, OPT_KERNEL },
	{ "mode", required_argument, NULL, OPT_MODE },
	{ "off-cpu", no_argument, NULL, OPT_OFFCPU },
	{ "wall", no_argument, NULL, OPT_WALL },
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static uint64_t clock_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * --off-cpu and --wall: sched:sched_switch at every event, with its raw
 * fields (prev_state) and the switch records that end each interval;
 * --wall samples cpu-clock as the main event and adds sched_switch beside
 * it.  0, or an exit status after saying what is missing and the fix.
 */
static int setup_offcpu(struct kiln_perf_attr *pa, struct kiln_perf_attr *sw,
			bool wall, uint64_t *tp_id)
{
	struct kiln_event ev;
	int err;

	memset(sw, 0, sizeof(*sw));
	err = kiln_event_parse("sched:sched_switch", &ev);
	if (!err) {
		sw->type = ev.type;
		sw->config = ev.config;
	}
	if (err) {
		kiln_cli_error("%s needs the sched:sched_switch tracepoint: %s",
			       wall ? "--wall" : "--off-cpu",
			       err == -ENOENT ? "not found in tracefs" :
			       strerror(-err));
		fprintf(stderr, "  fix: run as root (tracefs at /sys/kernel/tracing "
				"is readable by root only; kiln mounts it if "
				"needed), or grant CAP_PERFMON and read access "
				"to tracefs%s\n", wall ? "; or sample wall time "
				"in-process with --wall --mode inject" : "");
		return KILN_EXIT_USAGE;
	}
	*tp_id = sw->config;
	sw->sample = 1;
	sw->freq = false;
	pa->raw = true;
	pa->context_switch = true;
	if (!wall) {
		pa->type = sw->type;
		pa->config = sw->config;
	}
	return 0;
}

static int read_int_file(const char *path)
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
 * Explains a refused perf_event_open and what would fix it: the setting
 * the request needs (kernel frames: 1, every CPU: 0, a process of one's
 * own: 2), advised only when it is lower than the one in force, and root
 * only to someone who is not root.
 */
static void explain_refusal(int err, bool kernel, bool system_wide,
			    bool have_cmd)
{
	int paranoid = read_int_file("/proc/sys/kernel/perf_event_paranoid");
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
		fprintf(stderr, "  %s: a container, a user namespace or a seccomp profile may forbid "
				"perf_event_open (allow it there; with Docker, "
				"--cap-add PERFMON or a seccomp profile that "
				"permits it)\n", root ? "kiln runs as root" :
				"the setting already allows this");
	if (kernel && !system_wide)
		fprintf(stderr, "  leave out --kernel to profile user space only\n");
	if (have_cmd && !system_wide)
		fprintf(stderr, "  (--mode inject samples in-process, without "
				"perf_event_open)\n");
	kiln_buf_release(&fix);
}

/* Is cmd runnable (a path, or found in PATH)?  Its path in *where. */
static bool find_command(const char *cmd, struct kiln_buf *where)
{
	const char *path = getenv("PATH");
	struct kiln_buf b = KILN_BUF_INIT;
	bool found = false;

	if (strchr(cmd, '/')) {
		kiln_buf_adds(where, cmd);
		return access(cmd, X_OK) == 0;
	}
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path && !found) {
		size_t n = strcspn(path, ":");

		kiln_buf_reset(&b);
		if (n)
			kiln_buf_add(&b, path, n);
		else
			kiln_buf_addc(&b, '.');
		kiln_buf_addc(&b, '/');
		kiln_buf_adds(&b, cmd);
		if (b.data && !access(b.data, X_OK)) {
			struct stat st;

			found = !stat(b.data, &st) && S_ISREG(st.st_mode);
		}
		path += n;
		if (*path == ':')
			path++;
	}
	if (found)
		kiln_buf_adds(where, b.data);
	kiln_buf_release(&b);
	return found;
}

/*
 * Checks before anything runs that the profile can be written where
 * asked: the folder exists and is writable, the path is no folder and not
 * the program being recorded.  Prints the error; returns an exit status.
 */
static int check_output(const char *output, const char *program)
{
	struct kiln_buf dir = KILN_BUF_INIT;
	const char *slash = strrchr(output, '/');
	struct stat st;
	int rc = KILN_EXIT_OK;

	if (!strcmp(output, "-"))
		return KILN_EXIT_OK;
	if (!*output) {
		kiln_cli_error("empty output path: give -o FILE");
		return KILN_EXIT_USAGE;
	}
	if (slash == output)
		kiln_buf_adds(&dir, "/");
	else if (slash)
		kiln_buf_add(&dir, output, (size_t)(slash - output));
	else
		kiln_buf_adds(&dir, ".");
	if (stat(dir.data, &st)) {
		kiln_cli_error("cannot write '%s': the folder '%s' %s", output,
			       dir.data, errno == ENOENT ? "does not exist" :
			       strerror(errno));
		rc = KILN_EXIT_USAGE;
	} else if (!S_ISDIR(st.st_mode)) {
		kiln_cli_error("cannot write '%s': '%s' is not a folder", output,
			       dir.data);
		rc = KILN_EXIT_USAGE;
	} else if (access(dir.data, W_OK | X_OK)) {
		kiln_cli_error("cannot write '%s': the folder '%s' is not "
			       "writable (%s): choose another -o", output,
			       dir.data, strerror(errno));
		rc = KILN_EXIT_USAGE;
	} else if (!stat(output, &st) && S_ISDIR(st.st_mode)) {
		kiln_cli_error("cannot write '%s': it is a folder: give a file "
			       "name with -o", output);
		rc = KILN_EXIT_USAGE;
	} else if (program && kiln_same_file(output, program)) {
		kiln_cli_error("refusing to write over the input '%s' (the "
			       "program recorded): choose another output name "
			       "with -o", output);
		rc = KILN_EXIT_USAGE;
	}
	kiln_buf_release(&dir);
	return rc;
}

struct target {
	pid_t *pids;
	int npids;
};

/*
 * Opens events on every thread of pid, following the threads and processes
 * they create from then on.  Threads started by a thread not yet opened
 * while we list are caught by listing again until nothing is new.
 */
static int open_process(struct kiln_perf *s, pid_t pid)
{
	char dir[64];
	long *seen = NULL;
	size_t nseen = 0, i;
	int err = 0, pass;

	snprintf(dir, sizeof(dir), "/proc/%d/task", (int)pid);
	for (pass = 0; pass < 3 && !err; pass++) {
		DIR *d = opendir(dir);
		struct dirent *de;
		bool fresh = false;

		if (!d) {
			err = errno == ENOENT ? -ESRCH : -errno;
			break;
		}
		while (!err && (de = readdir(d))) {
			long tid = strtol(de->d_name, NULL, 10), *ns;

			if (tid <= 0)
				continue;
			for (i = 0; i < nseen && seen[i] != tid; i++)
				;
			if (i < nseen)
				continue;
			ns = realloc(seen, (nseen + 1) * sizeof(*ns));
			if (!ns) {
				err = -ENOMEM;
				break;
			}
			seen = ns;
			seen[nseen++] = tid;
			fresh = true;
			err = kiln_perf_open(s, (pid_t)tid, true);
			if (err == -ESRCH)	/* the thread just ended */
				err = 0;
		}
		closedir(d);
		if (!fresh)
			break;
	}
	free(seen);
	return err;
}

static void progress(double start, struct kiln_rec *rec, struct kiln_perf *s,
		     bool final)
{
	fprintf(stderr, "\rkiln: recording %.1fs, %" PRIu64 " samples, %" PRIu64
		" lost%s", kiln_cli_now() - start, kiln_rec_samples(rec),
		kiln_perf_lost(s), final ? "\n" : "   ");
}

static bool targets_alive(const struct target *t)
{
	int i;

	for (i = 0; i < t->npids; i++)
		if (!kill(t->pids[i], 0) || errno == EPERM)
			return true;
	return false;
}

static int parse_pids(const char *arg, struct target *t)
{
	const char *p = arg;

	while (*p) {
		char *end;
		long v = strtol(p, &end, 10);
		pid_t *np;

		if (end == p || v <= 0 || v > 0x3fffffff || (*end && *end != ','))
			return -EINVAL;
		np = realloc(t->pids, (size_t)(t->npids + 1) * sizeof(*np));
		if (!np)
			return -ENOMEM;
		t->pids = np;
		t->pids[t->npids++] = (pid_t)v;
		p = *end ? end + 1 : end;
	}
	return t->npids ? 0 : -EINVAL;
}

static void add_cmdline_comment(struct kiln_prof *p, char **argv, int argc,
				const char *prefix)
{
	struct kiln_buf b = KILN_BUF_INIT;
	int i;

	kiln_buf_adds(&b, prefix);
	for (i = 0; i < argc; i++) {
		if (i)
			kiln_buf_addc(&b, ' ');
		kiln_buf_adds(&b, argv[i]);
	}
	if (b.data)
		kiln_prof_add_comment(p, b.data);
	kiln_buf_release(&b);
}

/* The command line of a running process (from /proc/PID/cmdline) as a
 * comment; its name in brackets where it has none (a kernel thread). */
static void add_pid_comment(struct kiln_prof *p, pid_t pid)
{
	char path[64], buf[4096];
	size_t n = 0, i;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	f = fopen(path, "r");
	if (f) {
		n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
	}
	while (n && !buf[n - 1])
		n--;
	if (!n) {
		snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
		f = fopen(path, "r");
		buf[0] = '[';
		n = 1;
		if (f) {
			n += fread(buf + 1, 1, sizeof(buf) - 3, f);
			fclose(f);
		}
		while (n > 1 && buf[n - 1] == '\n')
			n--;
		buf[n++] = ']';
	}
	for (i = 0; i < n; i++)
		if (!buf[i])
			buf[i] = ' ';
	buf[n] = '\0';
	kiln_prof_add_comment(p, buf);
}

/* What the command runs with under --mode inject. */
struct inject_env {
	const char *pre, *prof, *hz;
	bool wall;
};

/* In the child, before exec (kiln_child.setup). */
static void inject_env(void *arg)
{
	const struct inject_env *e = arg;

	setenv("LD_PRELOAD", e->pre, 1);
	setenv("KILN_CPU", e->prof, 1);
	setenv("KILN_CPU_HZ", e->hz, 1);
	/* --wall: the agent's wall-clock sampler (wall.c). */
	setenv("KILN_CPU_MODE", e->wall ? "wall" : "cpu", 1);
	unsetenv("CPUPROFILE_REALTIME");
	unsetenv("KILN_CPU_SIGNAL");
	unsetenv("CPUPROFILESIGNAL");
	unsetenv("KILN_CPU_OWNER");
}

/*
 * --mode inject: the command runs with libkiln.so preloaded and its
 * in-process sampler on; every process of the command writes its own
 * profile (the first PATH, the others PATH.PID), and kiln merges them.
 */
static int record_inject(char **cmd, int ncmd, long freq, bool wall,
			 const char *output, bool quiet)
{
	struct kiln_buf agent = KILN_BUF_INIT, pre = KILN_BUF_INIT,
			prof = KILN_BUF_INIT, out = KILN_BUF_INIT;
	char dir[] = "/tmp/kiln-inject.XXXXXX";
	struct kiln_prof *merged = NULL;
	struct kiln_child child = KILN_CHILD_INIT;
	struct inject_env env;
	int status = 0, rc = KILN_EXIT_OK, err;
	DIR *d;
	struct dirent *de;
	char hz[32];

	if (kiln_cli_find_agent(&agent, "libkiln.so")) {
		kiln_cli_error("cannot find libkiln.so next to kiln or in ../lib: "
			       "set KILN_AGENT=/path/to/libkiln.so");
		rc = KILN_EXIT_FAIL;
		goto out;
	}
	if (!mkdtemp(dir)) {
		kiln_cli_error("cannot create a temporary folder: %s", strerror(errno));
		rc = KILN_EXIT_FAIL;
		goto out;
	}
	kiln_buf_addf(&prof, "%s/cpu.pb.gz", dir);
	kiln_buf_adds(&pre, agent.data);
	if (getenv("LD_PRELOAD") && *getenv("LD_PRELOAD"))
		kiln_buf_addf(&pre, ":%s", getenv("LD_PRELOAD"));
	/* CPU-time timers tick at most at CONFIG_HZ (often 250). */
	snprintf(hz, sizeof(hz), "%ld", freq);
	signal(SIGINT, kiln_cli_on_stop);
	signal(SIGTERM, kiln_cli_on_stop);
	env.pre = pre.data;
	env.prof = prof.data;
	env.hz = hz;
	env.wall = wall;
	child.setup = inject_env;
	child.setup_arg = &env;
	err = kiln_child_spawn(&child, cmd);
	if (err) {
		kiln_cli_error("fork: %s", strerror(-err));
		rc = KILN_EXIT_FAIL;
		goto out_rmdir;
	}
	err = kiln_child_start(&child);
	if (err)	/* the child has exited 127, as a shell's would */
		fprintf(stderr, "kiln: cannot run '%s': %s\n", cmd[0],
			strerror(-err));
	for (;;) {
		err = kiln_child_wait(&child, true, &status, NULL);
		if (err == 1)
			break;
		if (err != -EINTR)
			break;
		/* As perf: SIGINT or SIGTERM to kiln ends the command. */
		if (kiln_cli_stop_signal)
			kill(child.pid, SIGTERM);
		kiln_cli_stop_signal = 0;
	}
	d = opendir(dir);
	while (d && (de = readdir(d))) {
		struct kiln_buf f = KILN_BUF_INIT;
		struct kiln_prof *p;
		struct kiln_diag diag = { "" };

		if (strncmp(de->d_name, "cpu.pb.gz", 9) || strstr(de->d_name, ".tmp."))
			continue;
		kiln_buf_addf(&f, "%s/%s", dir, de->d_name);
		err = kiln_read_profile(f.data, &p, NULL, &diag);
		unlink(f.data);
		kiln_buf_release(&f);
		if (err)
			continue;
		if (!merged) {
			merged = p;
			continue;
		}
		kiln_prof_merge(merged, p, &diag);
		kiln_prof_free(p);
	}
	if (d)
		closedir(d);
	if (!merged) {
		kiln_cli_error("the in-process sampler wrote no profile (was "
			       "libkiln.so preloaded? a static binary cannot "
			       "preload it)");
		rc = KILN_EXIT_FAIL;
		goto out_rmdir;
	}
	add_cmdline_comment(merged, cmd, ncmd, "");
	err = kiln_pprof_write(merged, &out, true);
	if (!err)
		rc = kiln_cli_write(output, out.data, out.len, NULL, 0);
	else
		rc = KILN_EXIT_FAIL;
	if (!rc && !quiet)
		fprintf(stderr, "kiln: wrote '%s' (in-process sampler)\n", output);
	if (!rc)
		rc = kiln_child_exit_status(status);
out_rmdir:
	rmdir(dir);
out:
	kiln_child_release(&child);
	kiln_prof_free(merged);
	kiln_buf_release(&agent);
	kiln_buf_release(&pre);
	kiln_buf_release(&prof);
	kiln_buf_release(&out);
	return rc;
}

/* The process a thread belongs to (Tgid in /proc/TID/status), or -errno. */
static pid_t thread_group(pid_t tid)
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

/*
 * -a: learns every process running now (mappings and thread names), as
 * perf synthesizes them, so that their samples meet their own mappings.
 * Processes that end meanwhile are skipped.
 */
static int seed_all(struct kiln_rec *rec)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	int err = 0;

	if (!d)
		return -errno;
	while (!err && (de = readdir(d))) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);

		if (pid <= 0 || *end || pid == (long)getpid())
			continue;
		err = kiln_rec_seed(rec, (pid_t)pid);
		if (err && err != -ENOMEM)
			err = 0;	/* gone, or a kernel thread */
	}
	closedir(d);
	return err;
}

/* Parses --call-graph as perf does: fp, dwarf[,SIZE], and kiln's auto. */
static int parse_callgraph(const char *cg, struct kiln_rec_opts *ro,
			   uint32_t *stack_bytes)
{
	char *end;

	if (!strcmp(cg, "fp")) {
		ro->callgraph = KILN_CG_FP;
		/* Enough stack to find the caller of a leaf without a frame
		 * of its own, which the frame-pointer walk skips. */
		*stack_bytes = 512;
	} else if (!strcmp(cg, "auto")) {
		ro->callgraph = KILN_CG_AUTO;
	} else if (!strncmp(cg, "dwarf", 5) && (!cg[5] || cg[5] == ',')) {
		ro->callgraph = KILN_CG_DWARF;
		if (cg[5]) {
			unsigned long v;

			errno = 0;
			v = strtoul(cg + 6, &end, 0);
			if (errno || *end || end == cg + 6 || v < 64 || v > 65528)
				return kiln_cli_usage_error("record",
					"bad --call-graph '%s': the stack size is 64 to 65528 bytes",
					cg);
			/* perf rounds up to a multiple of 8. */
			*stack_bytes = (uint32_t)((v + 7) & ~7ul);
		}
	} else {
		return kiln_cli_usage_error("record",
			"bad --call-graph '%s': want fp, dwarf[,BYTES] or auto", cg);
	}
	return 0;
}

/* What to change when the kernel dropped records, by the options in use. */
static void explain_lost(uint64_t lost, uint64_t samples, long count,
			 bool freq_given, long freq, uint32_t stack_bytes)
{
	fprintf(stderr, "kiln: the kernel dropped %" PRIu64 " records (%.1f%% "
		"of the samples): ", lost,
		100.0 * (double)lost / (double)(samples + lost ? samples + lost : 1));
	if (count)
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

int kiln_cmd_record(int argc, char **argv)
{
	struct kiln_perf_attr pa = { 0 };
	struct kiln_rec_opts ro = { 0 };
	struct target t = { NULL, 0 };
	struct target tids = { NULL, 0 };
	struct kiln_child child = KILN_CHILD_INIT;
	struct kiln_perf *s = NULL;
	struct kiln_rec *rec = NULL;
	struct kiln_prof *prof = NULL;
	struct kiln_buf out = KILN_BUF_INIT, program = KILN_BUF_INIT;
	const char *output = "kiln.cpu.pb.gz", *event = "cpu-clock";
	const char *pid_arg = NULL, *tid_arg = NULL, *cpu_arg = NULL, *cg = "auto";
	double duration = 0, start;
	long freq = 99, count = 0;
	uint32_t stack_bytes = DEFAULT_STACK_BYTES;
	bool kernel = false, quiet = kiln_cli_quiet, inject = false;
	bool system_wide = false, freq_given = false, cg_given = false;
	struct kiln_event ev;
	int c, err, rc = KILN_EXIT_OK, status = 0, i, stopped_by = 0;
	bool offcpu = false, wall = false;
	struct kiln_perf_attr swa;
	struct kiln_offcpu *oc = NULL;
	uint64_t tp_id = 0, start_mono, start_real;
	char *end;
	char **cmd;
	int ncmd;

	while ((c = getopt_long(argc, argv, "+F:e:c:o:p:t:aC:gqh", opts, NULL)) != -1) {
		switch (c) {
		case 'F':
			freq = strtol(optarg, &end, 10);
			if (*end || end == optarg || freq <= 0)
				return kiln_cli_usage_error("record",
					"bad -F '%s': want a frequency in Hz above 0", optarg);
			freq_given = true;
			break;
		case 'e': event = optarg; break;
		case 'c':
			count = strtol(optarg, &end, 10);
			if (*end || end == optarg || count <= 0)
				return kiln_cli_usage_error("record",
					"bad -c '%s': want a period above 0", optarg);
			break;
		case OPT_CALLGRAPH: cg = optarg; cg_given = true; break;
		case 'g': break;	/* perf's -g: the default call graph */
		case 'o': output = optarg; break;
		case 'p': pid_arg = optarg; break;
		case 't': tid_arg = optarg; break;
		case 'a': system_wide = true; break;
		case 'C': cpu_arg = optarg; system_wide = true; break;
		case OPT_DURATION:
			duration = strtod(optarg, &end);
			if (*end || end == optarg || !(duration > 0))
				return kiln_cli_usage_error("record",
					"bad --duration '%s': want seconds above 0", optarg);
			break;
		case OPT_KERNEL: kernel = true; break;
		case OPT_MODE:
			if (!strcmp(optarg, "perf"))
				inject = false;
			else if (!strcmp(optarg, "inject"))
				inject = true;
			else
				return kiln_cli_usage_error("record",
					"bad --mode '%s': want perf or inject", optarg);
			break;
		case OPT_OFFCPU: offcpu = true; break;
		case OPT_WALL: wall = true; break;
		case 'q': quiet = true; break;
		case 'h': kiln_cli_usage("record", false); return 0;
		default: return kiln_cli_usage_error("record", "unknown option");
		}
	}
	cmd = argv + optind;
	ncmd = argc - optind;
	if (!pid_arg && !tid_arg && !ncmd && !system_wide)
		return kiln_cli_usage_error("record",
			"nothing to record: give a command after --, -p PID, -t TID or -a");
	if ((pid_arg != NULL) + (tid_arg != NULL) + system_wide > 1)
		return kiln_cli_usage_error("record",
			"give only one of -p PID, -t TID and -a/-C");
	if ((pid_arg || tid_arg) && ncmd)
		return kiln_cli_usage_error("record",
			"give either -p PID/-t TID or a command, not both");
	if (pid_arg || tid_arg) {
		struct target *tt = pid_arg ? &t : &tids;

		err = parse_pids(pid_arg ? pid_arg : tid_arg, tt);
		if (err)
			return kiln_cli_usage_error("record", "bad %s '%s': want %s",
				pid_arg ? "-p" : "-t", pid_arg ? pid_arg : tid_arg,
				pid_arg ? "PID[,PID...]" : "TID[,TID...]");
		for (i = 0; i < tt->npids; i++) {
			if (kill(tt->pids[i], 0) && errno == ESRCH) {
				kiln_cli_error("no %s with %s %d", pid_arg ?
					       "process" : "thread", pid_arg ?
					       "PID" : "TID", (int)tt->pids[i]);
				rc = KILN_EXIT_USAGE;
				goto out;
			}
		}
	}
	if (parse_callgraph(cg, &ro, &stack_bytes))
		return KILN_EXIT_USAGE;
	if (system_wide && !cg_given) {
		/*
		 * Every process of the machine: frame pointers only, as
		 * perf -a -g, with no stack copies (DWARF unwinding would
		 * read the CFI of every program running);
		 * --call-graph dwarf asks for it.
		 */
		ro.callgraph = KILN_CG_FP;
		stack_bytes = 0;
	}
	if (ncmd && !find_command(cmd[0], &program)) {
		kiln_cli_error("cannot run '%s': command not found", cmd[0]);
		rc = KILN_EXIT_USAGE;
		goto out;
	}
	rc = check_output(output, program.data);
	if (rc)
		goto out;
	if (offcpu && wall) {
		rc = kiln_cli_usage_error("record",
			"give --off-cpu or --wall, not both (--wall has the "
			"off-CPU time too)");
		goto out;
	}
	if ((offcpu || wall) && strcmp(event, "cpu-clock")) {
		rc = kiln_cli_usage_error("record",
			"%s records cpu-clock and sched:sched_switch itself: "
			"leave out -e", offcpu ? "--off-cpu" : "--wall");
		goto out;
	}
	if (offcpu && inject) {
		rc = kiln_cli_usage_error("record",
			"--off-cpu needs sched:sched_switch: not with --mode "
			"inject (--wall --mode inject samples every thread "
			"in-process, waiting or not)");
		goto out;
	}
	if (inject) {
		if (!ncmd || system_wide) {
			rc = kiln_cli_usage_error("record",
				"--mode inject profiles a command kiln starts, "
				"not -p, -t or -a");
			goto out;
		}
		if (strcmp(event, "cpu-clock") && strcmp(event, "task-clock")) {
			rc = kiln_cli_usage_error("record",
				"--mode inject samples CPU time only, not '%s'", event);
			goto out;
		}
		if (kernel) {
			rc = kiln_cli_usage_error("record",
				"--mode inject cannot see kernel frames");
			goto out;
		}
		rc = record_inject(cmd, ncmd, freq, wall, output, quiet);
		goto out;
	}
	err = kiln_event_parse(event, &ev);
	if (err) {
		rc = kiln_cli_event_error(event, err);
		goto out;
	}
	pa.type = ev.type;
	pa.config = ev.config;
	pa.config1 = ev.config1;
	pa.config2 = ev.config2;
	pa.kernel = kernel;
	pa.kernel_time = true;
	pa.stack_bytes = stack_bytes;
	pa.enable_on_exec = ncmd > 0 && !system_wide;
	if (count) {
		pa.sample = (uint64_t)count;
	} else if (ev.counting && !freq_given) {
		/* Tracepoints: every event, as perf (period 1); -F overrides. */
		pa.sample = count = 1;
	} else {
		pa.sample = (uint64_t)freq;
		pa.freq = true;
	}
	ro.event = event;
	ro.ns_values = !strcmp(event, "cpu-clock") || !strcmp(event, "task-clock");
	ro.period_ns = count ? (uint64_t)count : 1000000000ull / (uint64_t)freq;
	ro.kernel_frames = kernel;
	ro.system_wide = system_wide;
	ro.self_pid = (uint32_t)getpid();
	if (offcpu || wall) {
		rc = setup_offcpu(&pa, &swa, wall, &tp_id);
		if (rc)
			goto out;
		swa.kernel = kernel;
		ro.value_type = wall ? "wall/nanoseconds" : "off-cpu/nanoseconds";
		ro.wall = wall;
		if (offcpu) {
			pa.sample = 1;
			pa.freq = false;
			ro.period_ns = 1;
		}
	}
	/* The time labels count from here (sample times are monotonic). */
	start_mono = clock_ns(CLOCK_MONOTONIC);
	start_real = clock_ns(CLOCK_REALTIME);
	ro.start_ns = start_mono;
	/*
	 * Room for a few hundred milliseconds of samples per CPU, so that a
	 * pause of kiln's (loading a large debug file) loses nothing: 16 MiB
	 * with stack copies, 4 MiB without; less where the memory-lock limit
	 * of an unprivileged user says so.  A reader thread empties the
	 * buffers into memory while the samples are symbolized.
	 */
	s = kiln_perf_new(&pa, stack_bytes > 512 ? 4096 : 1024);

	rec = kiln_rec_new(&ro);
	if (rec && (offcpu || wall)) {
		struct kiln_offcpu_sink sink;

		kiln_rec_sink(rec, &sink);
		oc = kiln_offcpu_new(&sink, tp_id, wall);
	}
	if (s && wall)
		kiln_perf_add_event(s, &swa);
	if ((offcpu || wall) && rec && !oc) {
		kiln_cli_error("cannot read the fields of sched:sched_switch from "
			       "tracefs: %s", strerror(errno));
		rc = KILN_EXIT_USAGE;
		goto out;
	}
	if (!s || !rec) {
		kiln_cli_error("out of memory");
		rc = KILN_EXIT_FAIL;
		goto out;
	}
	if (cpu_arg && kiln_perf_set_cpus(s, cpu_arg)) {
		rc = kiln_cli_usage_error("record",
			"bad -C '%s': want CPUs such as 0,2-3 (this machine has "
			"0-%ld)", cpu_arg, sysconf(_SC_NPROCESSORS_CONF) - 1);
		goto out;
	}
	signal(SIGINT, kiln_cli_on_stop);
	signal(SIGTERM, kiln_cli_on_stop);
	signal(SIGHUP, kiln_cli_on_stop);
	err = 0;
	if (system_wide) {
		err = seed_all(rec);
		if (!err)
			err = kiln_perf_open(s, -1, false);
		if (!err && ncmd)
			err = kiln_child_spawn(&child, cmd);
	} else if (ncmd) {
		err = kiln_child_spawn(&child, cmd);
		if (!err)
			err = kiln_perf_open(s, child.pid, true);
	} else if (tid_arg) {
		for (i = 0; i < tids.npids && !err; i++) {
			pid_t tgid = thread_group(tids.pids[i]);

			err = tgid < 0 ? tgid : kiln_rec_seed(rec, tgid);
			if (err == -ENOENT)
				err = -ESRCH;
			if (err == -EACCES)
				err = -EPERM;
			if (!err)
				err = kiln_perf_open(s, tids.pids[i], false);
			if (err == -ESRCH)
				kiln_cli_error("no thread with TID %d", (int)tids.pids[i]);
		}
	} else {
		for (i = 0; i < t.npids && !err; i++) {
			err = kiln_rec_seed(rec, t.pids[i]);
			if (err == -ENOENT)
				err = -ESRCH;
			if (err == -EACCES)
				err = -EPERM;
			if (!err)
				err = open_process(s, t.pids[i]);
			if (err == -ESRCH)
				kiln_cli_error("no process with PID %d", (int)t.pids[i]);
		}
	}
	if (err && (offcpu || wall) && (err == -EACCES || err == -EPERM)) {
		kiln_cli_error("perf_event_open refused sched:sched_switch: %s "
			       "(kernel.perf_event_paranoid = %d)", strerror(-err),
			       read_int_file("/proc/sys/kernel/perf_event_paranoid"));
		fprintf(stderr, "  fix: run as root, or grant CAP_PERFMON and set "
				"'sysctl kernel.perf_event_paranoid=-1' (tracepoint "
				"samples need it)%s\n", wall ? "; or sample wall "
				"time in-process with --wall --mode inject" : "");
		kiln_child_kill(&child);
		rc = KILN_EXIT_USAGE;
		goto out;
	}
	if (err) {
		if ((err == -EACCES || err == -EPERM) && ncmd && !kernel &&
		    !system_wide &&
		    (!strcmp(event, "cpu-clock") || !strcmp(event, "task-clock"))) {
			explain_refusal(err, kernel, system_wide, true);
			fprintf(stderr, "kiln: falling back to --mode inject (the "
					"in-process sampler of libkiln.so)\n");
			kiln_child_kill(&child);
			rc = record_inject(cmd, ncmd, freq, false, output, quiet);
			goto out;
		}
		if (err == -EACCES || err == -EPERM)
			explain_refusal(err, kernel, system_wide, ncmd > 0);
		else if (err == -ENOENT || err == -EOPNOTSUPP)
			kiln_cli_error("event '%s' is not supported on this machine "
				       "(see 'kiln list'; hardware counters are often "
				       "missing in virtual machines)", event);
		else if (err == -EINVAL && !count)
			kiln_cli_error("perf_event_open refused -F %ld: %s (the "
				       "limit is kernel.perf_event_max_sample_rate = %d)",
				       freq, strerror(-err),
				       read_int_file("/proc/sys/kernel/perf_event_max_sample_rate"));
		else if (err != -ESRCH)
			kiln_cli_error("perf_event_open: %s", strerror(-err));
		kiln_child_kill(&child);
		rc = err == -ESRCH ? KILN_EXIT_USAGE : KILN_EXIT_FAIL;
		goto out;
	}
	err = kiln_perf_start_reader(s);
	if (err) {
		kiln_cli_error("cannot start the ring reader: %s", strerror(-err));
		kiln_child_kill(&child);
		rc = KILN_EXIT_FAIL;
		goto out;
	}
	start = kiln_cli_now();
	if (system_wide)
		kiln_perf_enable(s);
	if (ncmd) {
		err = kiln_child_start(&child);
		if (err) {
			kiln_cli_error("cannot run '%s': %s", cmd[0], strerror(-err));
			kiln_child_wait(&child, true, &status, NULL);
			child.pid = 0;
			rc = KILN_EXIT_USAGE;
			goto out;
		}
	} else if (!system_wide) {
		kiln_perf_enable(s);
	}
	{
		double last_progress = 0;
		bool tty = !quiet && isatty(STDERR_FILENO);
		bool child_done = false;

		for (;;) {
			kiln_perf_wait(s, 100);
			kiln_perf_drain(s, oc ? kiln_offcpu_event : kiln_rec_event,
					oc ? (void *)oc : (void *)rec);
			if (ncmd && !child_done &&
			    kiln_child_wait(&child, false, &status, NULL) == 1)
				child_done = true;
			if (child_done)
				break;
			if (!ncmd && t.npids && !targets_alive(&t))
				break;
			if (!ncmd && tids.npids && !targets_alive(&tids))
				break;
			if (duration && kiln_cli_now() - start >= duration)
				break;
			if (kiln_cli_stop_signal) {
				/* As perf: recording stops at once; a command
				 * still running gets SIGTERM below. */
				stopped_by = kiln_cli_stop_signal;
				break;
			}
			if (tty && kiln_cli_now() - last_progress >= 0.5) {
				progress(start, rec, s, false);
				last_progress = kiln_cli_now();
			}
		}
		kiln_perf_disable(s);
		kiln_perf_stop_reader(s);
		kiln_perf_drain(s, oc ? kiln_offcpu_event : kiln_rec_event,
				oc ? (void *)oc : (void *)rec);
		if (tty)
			progress(start, rec, s, true);
		if (ncmd && !child_done)
			/* A signal to kiln, or --duration, ended a command
			 * still running: stop it, as perf does. */
			kiln_child_stop(&child, SIGTERM, &status, NULL);
	}
	if (oc)
		kiln_offcpu_finish(oc, kiln_perf_monotonic(s) ?
				   clock_ns(CLOCK_MONOTONIC) : UINT64_MAX);
	prof = kiln_rec_detach(rec);
	if (!prof) {
		kiln_cli_error("out of memory while recording");
		rc = KILN_EXIT_FAIL;
		goto out;
	}
	prof->duration_nanos = (int64_t)((kiln_cli_now() - start) * 1e9);
	/* The origin of the time labels (docs/formats.md). */
	prof->time_nanos = (int64_t)start_real;
	if (ncmd)
		add_cmdline_comment(prof, cmd, ncmd, "");
	for (i = 0; i < t.npids; i++)
		add_pid_comment(prof, t.pids[i]);
	for (i = 0; i < tids.npids; i++) {
		pid_t tgid = thread_group(tids.pids[i]);

		if (tgid > 0)
			add_pid_comment(prof, tgid);
	}
	if (system_wide && !ncmd)
		kiln_prof_add_comment(prof, cpu_arg ? "every process on the CPUs "
				      "given with -C" : "every process (-a)");
	err = kiln_pprof_write(prof, &out, true);
	if (err) {
		kiln_cli_error("cannot encode the profile: %s", strerror(-err));
		rc = KILN_EXIT_FAIL;
		goto out;
	}
	rc = kiln_cli_write(output, out.data, out.len,
			    program.data ? &program.data : NULL, program.data ? 1 : 0);
	if (rc)
		goto out;
	if (!quiet) {
		fprintf(stderr, "kiln: wrote '%s': %" PRIu64 " samples, %" PRIu64
			" lost", output, kiln_rec_samples(rec), kiln_perf_lost(s));
		if (kiln_rec_self_samples(rec))
			fprintf(stderr, " (%" PRIu64 " samples of kiln itself "
				"left out)", kiln_rec_self_samples(rec));
		fputc('\n', stderr);
		if (stopped_by)
			fprintf(stderr, "kiln: stopped by %s\n", strsignal(stopped_by));
		if (!kernel && !kiln_perf_kernel_counted(s))
			fprintf(stderr, "kiln: time spent in the kernel is not counted "
				"(kernel.perf_event_paranoid = %d allows user space "
				"only; root or a setting of 1 or less counts it)\n",
				read_int_file("/proc/sys/kernel/perf_event_paranoid"));
	}
	if (kiln_perf_lost(s) && !quiet)
		explain_lost(kiln_perf_lost(s), kiln_rec_samples(rec), count,
			     freq_given, freq, stack_bytes);
	if (ncmd)
		rc = kiln_child_exit_status(status);
out:
	kiln_buf_release(&out);
	kiln_buf_release(&program);
	kiln_prof_free(prof);
	kiln_offcpu_free(oc);
	kiln_rec_free(rec);
	kiln_perf_free(s);
	free(t.pids);
	free(tids.pids);
	kiln_child_release(&child);
	return rc;
}
