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

#include "capture/perf.h"
#include "capture/record.h"
#include "cli/cli.h"
#include "format/format.h"
#include "profile/profile.h"
#include "util/buf.h"
#include "util/diag.h"

enum { OPT_CALLGRAPH = 256, OPT_DURATION, OPT_KERNEL, OPT_MODE };

static const struct option opts[] = {
	{ "freq", required_argument, NULL, 'F' },
	{ "event", required_argument, NULL, 'e' },
	{ "count", required_argument, NULL, 'c' },
	{ "call-graph", required_argument, NULL, OPT_CALLGRAPH },
	{ "output", required_argument, NULL, 'o' },
	{ "pid", required_argument, NULL, 'p' },
	{ "duration", required_argument, NULL, OPT_DURATION },
	{ "kernel", no_argument, NULL, OPT_KERNEL },
	{ "mode", required_argument, NULL, OPT_MODE },
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static volatile sig_atomic_t stop_signal;

static void on_stop(int sig)
{
	stop_signal = sig;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
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

/* Explains a refused perf_event_open and what would fix it. */
static void explain_refusal(int err, bool kernel, bool have_cmd)
{
	int paranoid = read_int_file("/proc/sys/kernel/perf_event_paranoid");

	kiln_cli_error("perf_event_open was refused: %s (kernel.perf_event_paranoid = %d)",
		       strerror(-err), paranoid);
	if (kernel && paranoid > 1)
		fprintf(stderr, "  kernel frames need root, CAP_PERFMON, or "
				"'sysctl kernel.perf_event_paranoid=1'; "
				"leave out --kernel to profile user space only\n");
	else
		fprintf(stderr, "  fix: run as root or the process's owner, grant "
				"CAP_PERFMON (setcap cap_perfmon+ep kiln), or "
				"'sysctl kernel.perf_event_paranoid=2' (or lower); in a "
				"container, allow perf_event_open in its seccomp profile\n");
	if (have_cmd && kernel)
		fprintf(stderr, "  (--mode inject samples in-process, without "
				"kernel frames)\n");
}

/* Is cmd runnable (a path, or found in PATH)? */
static bool find_command(const char *cmd)
{
	const char *path = getenv("PATH");
	struct kiln_buf b = KILN_BUF_INIT;
	bool found = false;

	if (strchr(cmd, '/'))
		return access(cmd, X_OK) == 0;
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
	kiln_buf_release(&b);
	return found;
}

struct target {
	pid_t *pids;
	int npids;
	pid_t child;		/* the command kiln started, or 0 */
	int go_fd;		/* write end: lets the child exec */
	int err_fd;		/* read end: errno if exec failed */
};

/* Forks the command, stopped before exec until start_child(). */
static int spawn(char **argv, struct target *t)
{
	int go[2], errp[2];
	pid_t pid;

	if (pipe2(go, O_CLOEXEC) || pipe2(errp, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		char c;
		int e;

		close(go[1]);
		close(errp[0]);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		if (read(go[0], &c, 1) != 1)
			_exit(127);
		execvp(argv[0], argv);
		e = errno;
		if (write(errp[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(go[0]);
	close(errp[1]);
	t->child = pid;
	t->go_fd = go[1];
	t->err_fd = errp[0];
	return 0;
}

/* Lets the child exec; returns 0 or the exec's -errno. */
static int start_child(struct target *t)
{
	char c = 'g';
	int e = 0;
	ssize_t n;

	if (write(t->go_fd, &c, 1) != 1)
		return -errno;
	close(t->go_fd);
	t->go_fd = -1;
	n = read(t->err_fd, &e, sizeof(e));
	close(t->err_fd);
	t->err_fd = -1;
	return n == sizeof(e) ? -e : 0;
}

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
		" lost%s", now_s() - start, kiln_rec_samples(rec),
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

/*
 * --mode inject: the command runs with libkiln.so preloaded and its
 * in-process sampler on; every process of the command writes its own
 * profile (the first PATH, the others PATH.PID), and kiln merges them.
 */
static int record_inject(char **cmd, long freq, const char *output, bool quiet)
{
	struct kiln_buf agent = KILN_BUF_INIT, pre = KILN_BUF_INIT,
			prof = KILN_BUF_INIT, out = KILN_BUF_INIT;
	char dir[] = "/tmp/kiln-inject.XXXXXX";
	struct kiln_prof *merged = NULL;
	int status = 0, rc = KILN_EXIT_OK, err;
	pid_t pid;
	DIR *d;
	struct dirent *de;
	char hz[32];

	if (kiln_cli_find_agent(&agent)) {
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
	signal(SIGINT, on_stop);
	signal(SIGTERM, on_stop);
	pid = fork();
	if (pid < 0) {
		kiln_cli_error("fork: %s", strerror(errno));
		rc = KILN_EXIT_FAIL;
		goto out_rmdir;
	}
	if (pid == 0) {
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		setenv("LD_PRELOAD", pre.data, 1);
		setenv("KILN_CPU", prof.data, 1);
		setenv("KILN_CPU_HZ", hz, 1);
		unsetenv("KILN_CPU_SIGNAL");
		unsetenv("CPUPROFILESIGNAL");
		unsetenv("KILN_CPU_OWNER");
		execvp(cmd[0], cmd);
		fprintf(stderr, "kiln: cannot run '%s': %s\n", cmd[0], strerror(errno));
		_exit(127);
	}
	for (;;) {
		pid_t w = waitpid(pid, &status, 0);

		if (w == pid)
			break;
		if (w < 0 && errno != EINTR)
			break;
		if (stop_signal && stop_signal != SIGINT)
			kill(pid, stop_signal);
		stop_signal = 0;
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
	err = kiln_pprof_write(merged, &out, true);
	if (!err)
		rc = kiln_cli_write(output, out.data, out.len, NULL, 0);
	else
		rc = KILN_EXIT_FAIL;
	if (!rc && !quiet)
		fprintf(stderr, "kiln: wrote '%s' (in-process sampler)\n", output);
	if (!rc) {
		if (WIFEXITED(status))
			rc = WEXITSTATUS(status);
		else if (WIFSIGNALED(status))
			rc = 128 + WTERMSIG(status);
	}
out_rmdir:
	rmdir(dir);
out:
	kiln_prof_free(merged);
	kiln_buf_release(&agent);
	kiln_buf_release(&pre);
	kiln_buf_release(&prof);
	kiln_buf_release(&out);
	return rc;
}

int kiln_cmd_record(int argc, char **argv)
{
	struct kiln_perf_attr pa = { 0 };
	struct kiln_rec_opts ro = { 0 };
	struct target t = { NULL, 0, 0, -1, -1 };
	struct kiln_perf *s = NULL;
	struct kiln_rec *rec = NULL;
	struct kiln_prof *prof = NULL;
	struct kiln_buf out = KILN_BUF_INIT;
	const char *output = "kiln.cpu.pb.gz", *event = "cpu-clock";
	const char *pid_arg = NULL, *cg = "auto";
	double duration = 0, start;
	long freq = 99, count = 0;
	uint32_t stack_bytes = 8192;
	bool kernel = false, quiet = kiln_cli_quiet, inject = false;
	int c, err, rc = KILN_EXIT_OK, status = 0, i;
	char *end;
	char **cmd;
	int ncmd;

	while ((c = getopt_long(argc, argv, "+F:e:c:o:p:qh", opts, NULL)) != -1) {
		switch (c) {
		case 'F':
			freq = strtol(optarg, &end, 10);
			if (*end || end == optarg || freq <= 0)
				return kiln_cli_usage_error("record",
					"bad -F '%s': want a frequency in Hz above 0", optarg);
			break;
		case 'e': event = optarg; break;
		case 'c':
			count = strtol(optarg, &end, 10);
			if (*end || end == optarg || count <= 0)
				return kiln_cli_usage_error("record",
					"bad -c '%s': want a period above 0", optarg);
			break;
		case OPT_CALLGRAPH: cg = optarg; break;
		case 'o': output = optarg; break;
		case 'p': pid_arg = optarg; break;
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
		case 'q': quiet = true; break;
		case 'h': kiln_cli_usage("record", false); return 0;
		default: return kiln_cli_usage_error("record", "unknown option");
		}
	}
	cmd = argv + optind;
	ncmd = argc - optind;
	if (!pid_arg && !ncmd)
		return kiln_cli_usage_error("record",
			"nothing to record: give a command after -- or -p PID");
	if (pid_arg && ncmd)
		return kiln_cli_usage_error("record", "give either -p PID or a command, not both");
	if (pid_arg) {
		err = parse_pids(pid_arg, &t);
		if (err)
			return kiln_cli_usage_error("record",
				"bad -p '%s': want PID[,PID...]", pid_arg);
		for (i = 0; i < t.npids; i++) {
			if (kill(t.pids[i], 0) && errno == ESRCH) {
				kiln_cli_error("no process with PID %d", (int)t.pids[i]);
				rc = KILN_EXIT_USAGE;
				goto out;
			}
		}
	}
	if (!strcmp(cg, "fp")) {
		ro.callgraph = KILN_CG_FP;
		/* Enough stack to find the caller of a leaf without a frame
		 * of its own, which the frame-pointer walk skips. */
		stack_bytes = 512;
	} else if (!strcmp(cg, "auto")) {
		ro.callgraph = KILN_CG_AUTO;
	} else if (!strncmp(cg, "dwarf", 5) && (!cg[5] || cg[5] == ',')) {
		ro.callgraph = KILN_CG_DWARF;
		if (cg[5]) {
			long v = strtol(cg + 6, &end, 10);

			if (*end || v < 64 || v > 65528)
				return kiln_cli_usage_error("record",
					"bad --call-graph '%s': the stack size is 64 to 65528 bytes",
					cg);
			stack_bytes = (uint32_t)(v & ~7L);
		}
	} else {
		return kiln_cli_usage_error("record",
			"bad --call-graph '%s': want fp, dwarf[,BYTES] or auto", cg);
	}
	if (inject) {
		if (!ncmd)
			return kiln_cli_usage_error("record",
				"--mode inject profiles a command kiln starts, not -p");
		if (strcmp(event, "cpu-clock") && strcmp(event, "task-clock"))
			return kiln_cli_usage_error("record",
				"--mode inject samples CPU time only, not '%s'", event);
		if (kernel)
			return kiln_cli_usage_error("record",
				"--mode inject cannot see kernel frames");
		if (!find_command(cmd[0])) {
			kiln_cli_error("cannot run '%s': command not found", cmd[0]);
			return KILN_EXIT_USAGE;
		}
		return record_inject(cmd, freq, output, quiet);
	}
	err = kiln_perf_parse_event(event, &pa);
	if (err) {
		if (err == -ENOENT)
			kiln_cli_error("unknown event '%s': try cpu-clock, task-clock, "
				       "page-faults, cycles, or a tracepoint such as "
				       "syscalls:sys_enter_getrandom", event);
		else
			kiln_cli_error("cannot look up event '%s': %s (tracepoints "
				       "need tracefs, usually root)", event, strerror(-err));
		rc = err == -ENOENT ? KILN_EXIT_USAGE : KILN_EXIT_FAIL;
		goto out;
	}
	if (ncmd && !find_command(cmd[0])) {
		kiln_cli_error("cannot run '%s': command not found", cmd[0]);
		rc = KILN_EXIT_USAGE;
		goto out;
	}
	pa.kernel = kernel;
	pa.stack_bytes = stack_bytes;
	pa.enable_on_exec = ncmd > 0;
	if (count) {
		pa.sample = (uint64_t)count;
	} else {
		pa.sample = (uint64_t)freq;
		pa.freq = true;
	}
	ro.event = event;
	ro.ns_values = !strcmp(event, "cpu-clock") || !strcmp(event, "task-clock");
	ro.period_ns = count ? (uint64_t)count : 1000000000ull / (uint64_t)freq;
	/*
	 * Room for a few hundred milliseconds of samples per CPU, so that a
	 * pause of kiln's (loading a large debug file) loses nothing: 16 MiB
	 * with stack copies, 4 MiB without; less where the memory-lock limit
	 * of an unprivileged user says so.
	 */
	s = kiln_perf_new(&pa, stack_bytes > 512 ? 4096 : 1024);
	rec = kiln_rec_new(&ro);
	if (!s || !rec) {
		kiln_cli_error("out of memory");
		rc = KILN_EXIT_FAIL;
		goto out;
	}
	signal(SIGINT, on_stop);
	signal(SIGTERM, on_stop);
	signal(SIGHUP, on_stop);
	if (ncmd) {
		err = spawn(cmd, &t);
		if (!err)
			err = kiln_perf_open(s, t.child, true);
	} else {
		for (i = 0, err = 0; i < t.npids && !err; i++) {
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
	if (err) {
		if ((err == -EACCES || err == -EPERM) && ncmd && !kernel &&
		    (!strcmp(event, "cpu-clock") || !strcmp(event, "task-clock"))) {
			explain_refusal(err, kernel, true);
			fprintf(stderr, "kiln: falling back to --mode inject (the "
					"in-process sampler of libkiln.so)\n");
			kill(t.child, SIGKILL);
			waitpid(t.child, NULL, 0);
			t.child = 0;
			rc = record_inject(cmd, freq, output, quiet);
			goto out;
		}
		if (err == -EACCES || err == -EPERM)
			explain_refusal(err, kernel, ncmd > 0);
		else if (err == -ENOENT || err == -EOPNOTSUPP)
			kiln_cli_error("event '%s' is not supported on this machine "
				       "(see 'perf list'; hardware counters are often "
				       "missing in virtual machines)", event);
		else if (err == -EINVAL && !count)
			kiln_cli_error("perf_event_open refused -F %ld: %s (the "
				       "limit is kernel.perf_event_max_sample_rate = %d)",
				       freq, strerror(-err),
				       read_int_file("/proc/sys/kernel/perf_event_max_sample_rate"));
		else if (err != -ESRCH)
			kiln_cli_error("perf_event_open: %s", strerror(-err));
		if (t.child) {
			kill(t.child, SIGKILL);
			waitpid(t.child, NULL, 0);
		}
		rc = err == -ESRCH ? KILN_EXIT_USAGE : KILN_EXIT_FAIL;
		goto out;
	}
	start = now_s();
	if (ncmd) {
		err = start_child(&t);
		if (err) {
			kiln_cli_error("cannot run '%s': %s", cmd[0], strerror(-err));
			waitpid(t.child, NULL, 0);
			rc = KILN_EXIT_USAGE;
			goto out;
		}
	} else {
		kiln_perf_enable(s);
	}
	{
		double last_progress = 0;
		bool tty = !quiet && isatty(STDERR_FILENO);
		bool child_done = false;

		for (;;) {
			kiln_perf_wait(s, 100);
			kiln_perf_drain(s, kiln_rec_event, rec);
			if (t.child && !child_done) {
				pid_t w = waitpid(t.child, &status, WNOHANG);

				if (w == t.child)
					child_done = true;
			}
			if (child_done)
				break;
			if (!t.child && !targets_alive(&t))
				break;
			if (duration && now_s() - start >= duration)
				break;
			if (stop_signal) {
				/* Ctrl-C reaches the child by itself (same
				 * terminal); SIGTERM is passed on. */
				if (t.child && stop_signal != SIGINT)
					kill(t.child, SIGTERM);
				if (!t.child)
					break;
				stop_signal = 0;
			}
			if (tty && now_s() - last_progress >= 0.5) {
				progress(start, rec, s, false);
				last_progress = now_s();
			}
		}
		kiln_perf_disable(s);
		kiln_perf_drain(s, kiln_rec_event, rec);
		if (tty)
			progress(start, rec, s, true);
		if (t.child && !child_done) {
			/* --duration ended a command still running: stop it. */
			kill(t.child, SIGTERM);
			waitpid(t.child, &status, 0);
		}
	}
	prof = kiln_rec_detach(rec);
	if (!prof) {
		kiln_cli_error("out of memory while recording");
		rc = KILN_EXIT_FAIL;
		goto out;
	}
	prof->duration_nanos = (int64_t)((now_s() - start) * 1e9);
	prof->time_nanos = (int64_t)time(NULL) * 1000000000ll - prof->duration_nanos;
	if (ncmd)
		add_cmdline_comment(prof, cmd, ncmd, "kiln record -- ");
	else
		add_cmdline_comment(prof, (char **)&pid_arg, 1, "kiln record -p ");
	err = kiln_pprof_write(prof, &out, true);
	if (err) {
		kiln_cli_error("cannot encode the profile: %s", strerror(-err));
		rc = KILN_EXIT_FAIL;
		goto out;
	}
	rc = kiln_cli_write(output, out.data, out.len, NULL, 0);
	if (rc)
		goto out;
	if (!quiet)
		fprintf(stderr, "kiln: wrote '%s': %" PRIu64 " samples, %" PRIu64
			" lost\n", output, kiln_rec_samples(rec), kiln_perf_lost(s));
	if (kiln_perf_lost(s) && !quiet)
		fprintf(stderr, "kiln: the kernel dropped %" PRIu64 " records: use a lower -F\n",
			kiln_perf_lost(s));
	if (ncmd) {
		if (WIFEXITED(status))
			rc = WEXITSTATUS(status);
		else if (WIFSIGNALED(status))
			rc = 128 + WTERMSIG(status);
	}
out:
	kiln_buf_release(&out);
	kiln_prof_free(prof);
	kiln_rec_free(rec);
	kiln_perf_free(s);
	free(t.pids);
	if (t.go_fd >= 0)
		close(t.go_fd);
	if (t.err_fd >= 0)
		close(t.err_fd);
	return rc;
}
