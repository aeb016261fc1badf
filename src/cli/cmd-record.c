/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `kiln record`: CPU (or any event) sampling of a command or of running
 * processes through perf_event_open, symbolized on the spot, written as
 * pprof (cli stage).  The options are parsed and checked here, the
 * recording is kiln_record_run()'s (session/record-run.c), its failures
 * explained here; --mode inject (libkiln.so preloaded, its profiles
 * merged) runs from here too.
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
#include "session/record-run.h"
#include "session/record.h"
#include "session/targets.h"
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
/*
 * --off-cpu and --wall with the default call graph (auto): a switch record
 * at every context switch copies this much stack, enough for the CFI of
 * the frames near the leaf (libc's wrappers, which have no frame
 * pointers), the frame-pointer chain giving the rest (docs/kiln-record.md).
 */
#define SWITCH_STACK_BYTES 2048u

/*
 * Counting events (a period of 1: tracepoints, -c 1) record every event,
 * and a burst of them must fit the ring whole even while the reader
 * thread waits for a CPU (issue 27: 2,500 getrandom calls in 0.1 s beside
 * two CPU hogs lost 29-58% with 32 KiB copies in 16 MiB rings).  By
 * default they copy perf's 8 KiB of stack (the frame-pointer chain still
 * goes on where the copy ends) into 32 MiB per CPU: about 3,800 records
 * that the kernel can write without kiln reading any, on machines of up
 * to 16 CPUs (512 MiB in all; more CPUs keep 16 MiB each).  Without root
 * the memory-lock limit (kernel.perf_event_mlock_kb) makes them smaller.
 */
#define COUNTING_STACK_BYTES 8192u
#define COUNTING_RING_PAGES 8192u
#define COUNTING_RING_CPUS 16

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
	{ "mmap-pages", required_argument, NULL, 'm' },
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

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

/*
 * --mode inject: the command runs with libkiln.so preloaded and its
 * in-process sampler on (kiln_record_inject()); kiln writes the merged
 * profile.  Returns the exit status.
 */
static int record_inject(char **cmd, int ncmd, long freq, bool wall,
			 const char *output, bool quiet)
{
	struct kiln_buf agent = KILN_BUF_INIT, out = KILN_BUF_INIT;
	struct kiln_inject_opts o = { cmd, ncmd, freq, wall, NULL,
				      kiln_cli_on_stop, &kiln_cli_stop_signal };
	struct kiln_record_result res = { 0 };
	int err, rc = KILN_EXIT_OK;

	if (kiln_cli_find_agent(&agent, "libkiln.so")) {
		kiln_cli_error("cannot find libkiln.so next to kiln or in ../lib: "
			       "set KILN_AGENT=/path/to/libkiln.so");
		rc = KILN_EXIT_FAIL;
		goto out;
	}
	o.agent = agent.data;
	err = kiln_record_inject(&o, &res);
	if (res.exec_err)	/* the child exited 127, as a shell's would */
		fprintf(stderr, "kiln: cannot run '%s': %s\n", cmd[0],
			strerror(-res.exec_err));
	if (err) {
		if (res.failed == KILN_RECORD_TMPDIR)
			kiln_cli_error("cannot create a temporary folder: %s",
				       strerror(-res.err));
		else if (res.failed == KILN_RECORD_SPAWN)
			kiln_cli_error("fork: %s", strerror(-res.err));
		else
			kiln_cli_error("the in-process sampler wrote no profile (was "
				       "libkiln.so preloaded? a static binary cannot "
				       "preload it)");
		rc = KILN_EXIT_FAIL;
		goto out;
	}
	err = kiln_pprof_write(res.prof, &out, true);
	if (!err)
		rc = kiln_cli_write(output, out.data, out.len, NULL, 0);
	else
		rc = KILN_EXIT_FAIL;
	if (!rc && !quiet)
		fprintf(stderr, "kiln: wrote '%s' (in-process sampler)\n", output);
	if (!rc)
		rc = kiln_child_exit_status(res.status);
out:
	kiln_prof_free(res.prof);
	kiln_buf_release(&agent);
	kiln_buf_release(&out);
	return rc;
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

static void progress(void *arg, double secs, uint64_t samples, uint64_t lost,
		     bool final)
{
	(void)arg;
	fprintf(stderr, "\rkiln: recording %.1fs, %" PRIu64 " samples, %" PRIu64
		" lost%s", secs, samples, lost, final ? "\n" : "   ");
}

/* -p or -t: the processes or threads named. */
struct target {
	pid_t *pids;
	int npids;
};

/* What explain_failure() needs of the options. */
struct failure {
	const char *event;
	long count, freq;
	bool kernel, system_wide, offcpu, wall;
	int ncmd;
	const char *cpu_arg;
};

/* A refused or failed perf_event_open: says why; returns the exit status. */
static int explain_open(const struct failure *f,
			const struct kiln_record_result *res)
{
	int err = res->err;

	if (res->gone_pid)
		kiln_cli_error("no process with PID %d", (int)res->gone_pid);
	if (res->gone_tid)
		kiln_cli_error("no thread with TID %d", (int)res->gone_tid);
	if ((f->offcpu || f->wall) && (err == -EACCES || err == -EPERM)) {
		kiln_cli_error("perf_event_open refused sched:sched_switch: %s "
			       "(kernel.perf_event_paranoid = %d)", strerror(-err),
			       kiln_cli_read_int("/proc/sys/kernel/perf_event_paranoid"));
		fprintf(stderr, "  fix: run as root, or grant CAP_PERFMON and set "
				"'sysctl kernel.perf_event_paranoid=-1' (tracepoint "
				"samples need it)%s\n", f->wall ? "; or sample wall "
				"time in-process with --wall --mode inject" : "");
		return KILN_EXIT_USAGE;
	}
	if (err == -EACCES || err == -EPERM)
		kiln_cli_record_refused(err, f->kernel, f->system_wide, f->ncmd > 0);
	else if (err == -ENOENT || err == -EOPNOTSUPP)
		kiln_cli_error("event '%s' is not supported on this machine "
			       "(see 'kiln list'; hardware counters are often "
			       "missing in virtual machines)", f->event);
	else if (err == -EINVAL && !f->count)
		kiln_cli_error("perf_event_open refused -F %ld: %s (the "
			       "limit is kernel.perf_event_max_sample_rate = %d)",
			       f->freq, strerror(-err),
			       kiln_cli_read_int("/proc/sys/kernel/perf_event_max_sample_rate"));
	else if (err != -ESRCH)
		kiln_cli_error("perf_event_open: %s", strerror(-err));
	return err == -ESRCH ? KILN_EXIT_USAGE : KILN_EXIT_FAIL;
}

/* Says why kiln_record_run() failed; returns the exit status. */
static int explain_failure(const struct failure *f,
			   const struct kiln_record_result *res, char **cmd)
{
	switch (res->failed) {
	case KILN_RECORD_OFFCPU:
		kiln_cli_error("cannot read the fields of sched:sched_switch from "
			       "tracefs: %s", strerror(-res->err));
		return KILN_EXIT_USAGE;
	case KILN_RECORD_CPUS:
		return kiln_cli_usage_error("record",
			"bad -C '%s': want CPUs such as 0,2-3 (this machine has "
			"0-%ld)", f->cpu_arg, sysconf(_SC_NPROCESSORS_CONF) - 1);
	case KILN_RECORD_OPEN:
		return explain_open(f, res);
	case KILN_RECORD_READER:
		kiln_cli_error("cannot start the ring reader: %s",
			       strerror(-res->err));
		return KILN_EXIT_FAIL;
	case KILN_RECORD_EXEC:
		kiln_cli_error("cannot run '%s': %s", cmd[0], strerror(-res->err));
		return KILN_EXIT_USAGE;
	case KILN_RECORD_DETACH:
		kiln_cli_error("out of memory while recording");
		return KILN_EXIT_FAIL;
	case KILN_RECORD_NOMEM:
	default:
		kiln_cli_error("out of memory");
		return KILN_EXIT_FAIL;
	}
}

/* Writes the profile (pprof, gzipped); returns the exit status. */
static int write_profile(const struct kiln_prof *prof, const char *output,
			 char *program)
{
	struct kiln_buf out = KILN_BUF_INIT;
	int err, rc;

	err = kiln_pprof_write(prof, &out, true);
	if (err) {
		kiln_cli_error("cannot encode the profile: %s", strerror(-err));
		rc = KILN_EXIT_FAIL;
	} else {
		rc = kiln_cli_write(output, out.data, out.len,
				    program ? &program : NULL, program ? 1 : 0);
	}
	kiln_buf_release(&out);
	return rc;
}

/* The lines after a recording: what was written, and what to know. */
static void say_written(const char *output,
			const struct kiln_record_result *res, bool kernel)
{
	fprintf(stderr, "kiln: wrote '%s': %" PRIu64 " samples, %" PRIu64
		" lost", output, res->samples, res->lost);
	if (res->counted)
		fprintf(stderr, ", the event counted %" PRIu64 " times", res->count);
	if (res->self_samples)
		fprintf(stderr, " (%" PRIu64 " samples of kiln itself "
			"left out)", res->self_samples);
	fputc('\n', stderr);
	if (res->stopped_by)
		fprintf(stderr, "kiln: stopped by %s\n", strsignal(res->stopped_by));
	if (!kernel && !res->kernel_counted)
		fprintf(stderr, "kiln: time spent in the kernel is not counted "
			"(kernel.perf_event_paranoid = %d allows user space "
			"only; root or a setting of 1 or less counts it)\n",
			kiln_cli_read_int("/proc/sys/kernel/perf_event_paranoid"));
}

/* Why a recording holds no sample, said instead of an empty table
 * later.  clock: the event samples CPU time (cpu-clock, task-clock). */
static void explain_empty(bool clock, long freq, long count, int ncmd,
			  bool wall)
{
	if (!clock)
		fprintf(stderr, "kiln: the profile is empty: the event did not "
			"occur%s while recording%s\n",
			count > 1 ? " often enough for one sample (-c)" : "",
			ncmd ? " the command" : "");
	else if (ncmd && !wall && count <= 0 && freq > 0)
		fprintf(stderr, "kiln: the profile is empty: the command used "
			"less CPU time than one sample period (%ld Hz: %.1f ms); "
			"run it longer, raise -F, or use --wall for a command that "
			"mostly waits\n", freq, 1000.0 / (double)freq);
	else
		fprintf(stderr, "kiln: the profile is empty: %s did not run on a "
			"CPU while recording%s\n", ncmd ? "the command" :
			"the targets", wall ? "" : " (--wall or --off-cpu record "
			"the time spent waiting)");
}

/* The options, as given. */
struct args {
	const char *output, *event, *pid_arg, *tid_arg, *cpu_arg, *cg;
	double duration;
	long freq, count;
	long mmap_pages;		/* -m, 0: kiln's choice */
	uint32_t stack_bytes;
	bool kernel, quiet, inject, system_wide, freq_given, cg_given;
	bool offcpu, wall;
	char **cmd;
	int ncmd;
	struct target t, tids;		/* -p, -t */
	struct kiln_buf program;	/* the command's file */
	struct kiln_rec_opts ro;	/* --call-graph so far */
};

/* The options into *a: 0, an exit status (said), or -1 for --help. */
static int parse_args(int argc, char **argv, struct args *a)
{
	char *end;
	int c;

	while ((c = getopt_long(argc, argv, "+F:e:c:o:p:t:aC:gqhm:", opts, NULL)) != -1) {
		switch (c) {
		case 'F':
			a->freq = strtol(optarg, &end, 10);
			if (*end || end == optarg || a->freq <= 0)
				return kiln_cli_usage_error("record",
					"bad -F '%s': want a frequency in Hz above 0", optarg);
			a->freq_given = true;
			break;
		case 'e': a->event = optarg; break;
		case 'c':
			a->count = strtol(optarg, &end, 10);
			if (*end || end == optarg || a->count <= 0)
				return kiln_cli_usage_error("record",
					"bad -c '%s': want a period above 0", optarg);
			break;
		case 'm':
			a->mmap_pages = strtol(optarg, &end, 10);
			if (*end || end == optarg || a->mmap_pages <= 0 ||
			    a->mmap_pages > (1l << 20) ||
			    (a->mmap_pages & (a->mmap_pages - 1)))
				return kiln_cli_usage_error("record",
					"bad -m '%s': want a power of 2 of pages, "
					"1 to 1048576", optarg);
			break;
		case OPT_CALLGRAPH: a->cg = optarg; a->cg_given = true; break;
		case 'g': break;	/* perf's -g: the default call graph */
		case 'o': a->output = optarg; break;
		case 'p': a->pid_arg = optarg; break;
		case 't': a->tid_arg = optarg; break;
		case 'a': a->system_wide = true; break;
		case 'C': a->cpu_arg = optarg; a->system_wide = true; break;
		case OPT_DURATION:
			a->duration = strtod(optarg, &end);
			if (*end || end == optarg || !(a->duration > 0))
				return kiln_cli_usage_error("record",
					"bad --duration '%s': want seconds above 0", optarg);
			break;
		case OPT_KERNEL: a->kernel = true; break;
		case OPT_MODE:
			if (!strcmp(optarg, "perf"))
				a->inject = false;
			else if (!strcmp(optarg, "inject"))
				a->inject = true;
			else
				return kiln_cli_usage_error("record",
					"bad --mode '%s': want perf or inject", optarg);
			break;
		case OPT_OFFCPU: a->offcpu = true; break;
		case OPT_WALL: a->wall = true; break;
		case 'q': a->quiet = true; break;
		case 'h': kiln_cli_usage("record", false); return -1;
		default: return kiln_cli_usage_error("record", "unknown option");
		}
	}
	a->cmd = argv + optind;
	a->ncmd = argc - optind;
	return 0;
}

/*
 * The options checked together, the targets and the command looked for,
 * the output's folder checked.  0 or an exit status (said).
 */
static int check_args(struct args *a)
{
	int err, i, rc;

	if (!a->pid_arg && !a->tid_arg && !a->ncmd && !a->system_wide)
		return kiln_cli_usage_error("record",
			"nothing to record: give a command after --, -p PID, -t TID or -a");
	if ((a->pid_arg != NULL) + (a->tid_arg != NULL) + a->system_wide > 1)
		return kiln_cli_usage_error("record",
			"give only one of -p PID, -t TID and -a/-C");
	if ((a->pid_arg || a->tid_arg) && a->ncmd)
		return kiln_cli_usage_error("record",
			"give either -p PID/-t TID or a command, not both");
	if (a->pid_arg || a->tid_arg) {
		struct target *tt = a->pid_arg ? &a->t : &a->tids;

		err = kiln_targets_parse_pids(a->pid_arg ? a->pid_arg : a->tid_arg,
					      &tt->pids, &tt->npids);
		if (err)
			return kiln_cli_usage_error("record", "bad %s '%s': want %s",
				a->pid_arg ? "-p" : "-t", a->pid_arg ? a->pid_arg : a->tid_arg,
				a->pid_arg ? "PID[,PID...]" : "TID[,TID...]");
		i = kiln_targets_first_gone(tt->pids, tt->npids);
		if (i >= 0) {
			kiln_cli_error("no %s with %s %d", a->pid_arg ?
				       "process" : "thread", a->pid_arg ?
				       "PID" : "TID", (int)tt->pids[i]);
			return KILN_EXIT_USAGE;
		}
	}
	if (parse_callgraph(a->cg, &a->ro, &a->stack_bytes))
		return KILN_EXIT_USAGE;
	if (a->system_wide && !a->cg_given) {
		/*
		 * Every process of the machine: frame pointers only, as
		 * perf -a -g, with no stack copies (DWARF unwinding would
		 * read the CFI of every program running);
		 * --call-graph dwarf asks for it.
		 */
		a->ro.callgraph = KILN_CG_FP;
		a->stack_bytes = 0;
	}
	if ((a->offcpu || a->wall) && a->ro.callgraph == KILN_CG_AUTO)
		a->stack_bytes = SWITCH_STACK_BYTES;
	if (a->ncmd && !kiln_child_find(a->cmd[0], &a->program)) {
		kiln_cli_error("cannot run '%s': command not found", a->cmd[0]);
		return KILN_EXIT_USAGE;
	}
	rc = check_output(a->output, a->program.data);
	if (rc)
		return rc;
	if (a->offcpu && a->wall) {
		return kiln_cli_usage_error("record",
			"give --off-cpu or --wall, not both (--wall has the "
			"off-CPU time too)");
	}
	if ((a->offcpu || a->wall) && strcmp(a->event, "cpu-clock")) {
		return kiln_cli_usage_error("record",
			"%s records cpu-clock and sched:sched_switch itself: "
			"leave out -e", a->offcpu ? "--off-cpu" : "--wall");
	}
	if (a->offcpu && a->inject) {
		return kiln_cli_usage_error("record",
			"--off-cpu needs sched:sched_switch: not with --mode "
			"inject (--wall --mode inject samples every thread "
			"in-process, waiting or not)");
	}
	return 0;
}

/* --mode inject: what it cannot do.  0 or an exit status (said). */
static int check_inject(const struct args *a)
{
	if (!a->ncmd || a->system_wide)
		return kiln_cli_usage_error("record",
			"--mode inject profiles a command kiln starts, "
			"not -p, -t or -a");
	if (strcmp(a->event, "cpu-clock") && strcmp(a->event, "task-clock"))
		return kiln_cli_usage_error("record",
			"--mode inject samples CPU time only, not '%s'", a->event);
	if (a->kernel)
		return kiln_cli_usage_error("record",
			"--mode inject cannot see kernel frames");
	return 0;
}

/* --mode perf: records through perf_event_open.  Returns the exit status. */
static int record_perf(struct args *a)
{
	struct kiln_perf_attr pa = { 0 }, swa = { 0 };
	struct kiln_record_opts ro_opts = { 0 };
	struct kiln_record_result res = { 0 };
	struct kiln_event ev;
	uint64_t tp_id = 0;
	bool counting;
	int err, rc = KILN_EXIT_OK;

	err = kiln_event_parse(a->event, &ev);
	if (err) {
		rc = kiln_cli_event_error(a->event, err);
		goto out;
	}
	pa.type = ev.type;
	pa.config = ev.config;
	pa.config1 = ev.config1;
	pa.config2 = ev.config2;
	pa.kernel = a->kernel;
	pa.kernel_time = true;
	pa.enable_on_exec = a->ncmd > 0 && !a->system_wide;
	if (a->count) {
		pa.sample = (uint64_t)a->count;
	} else if (ev.counting && !a->freq_given) {
		/* Tracepoints: every event, as perf (period 1); -F overrides. */
		pa.sample = a->count = 1;
	} else {
		pa.sample = (uint64_t)a->freq;
		pa.freq = true;
		/* Each task's own count at its exit: what the samples of a
		 * short one missed (session/record.c on_read()).  A command
		 * only: -p opens an event per thread, and a thread covered by
		 * several would give each one's count. */
		pa.task_counts = a->ncmd > 0 && !a->system_wide;
	}
	counting = a->count == 1 && !a->offcpu && !a->wall;
	a->ro.carry_lost = counting;
	if (counting && !a->cg_given && a->stack_bytes > COUNTING_STACK_BYTES)
		a->stack_bytes = COUNTING_STACK_BYTES;
	pa.stack_bytes = a->stack_bytes;
	a->ro.event = a->event;
	a->ro.ns_values = !strcmp(a->event, "cpu-clock") || !strcmp(a->event, "task-clock");
	a->ro.period_ns = a->count ? (uint64_t)a->count : 1000000000ull / (uint64_t)a->freq;
	a->ro.kernel_frames = a->kernel;
	a->ro.system_wide = a->system_wide;
	a->ro.self_pid = (uint32_t)getpid();
	if (a->offcpu || a->wall) {
		rc = setup_offcpu(&pa, &swa, a->wall, &tp_id);
		if (rc)
			goto out;
		swa.kernel = a->kernel;
		a->ro.value_type = a->wall ? "wall/nanoseconds" : "off-cpu/nanoseconds";
		a->ro.wall = a->wall;
		pa.task_counts = false;
		if (a->offcpu) {
			pa.sample = 1;
			pa.freq = false;
			a->ro.period_ns = 1;
		}
	}
	ro_opts.pa = pa;
	ro_opts.ro = a->ro;
	/* 16 MiB with stack copies, 4 MiB without (see kiln_record_run())
	 * or with the short copies of --off-cpu and --wall: records, not
	 * bytes, fill a ring (1,800 switch records of 2 KiB; 512 of 32 KiB
	 * in 16 MiB); 32 MiB for counting events' copies; -m as asked. */
	ro_opts.ring_pages = a->stack_bytes <= SWITCH_STACK_BYTES ? 1024 :
			     counting && sysconf(_SC_NPROCESSORS_CONF) <=
			     COUNTING_RING_CPUS ? COUNTING_RING_PAGES : 4096;
	if (a->mmap_pages)
		ro_opts.ring_pages = (size_t)a->mmap_pages;
	ro_opts.offcpu = a->offcpu;
	ro_opts.wall = a->wall;
	ro_opts.swa = swa;
	ro_opts.tp_id = tp_id;
	ro_opts.cmd = a->cmd;
	ro_opts.ncmd = a->ncmd;
	ro_opts.pids = a->t.pids;
	ro_opts.npids = a->t.npids;
	ro_opts.tids = a->tids.pids;
	ro_opts.ntids = a->tids.npids;
	ro_opts.system_wide = a->system_wide;
	ro_opts.cpu_arg = a->cpu_arg;
	ro_opts.duration = a->duration;
	ro_opts.on_stop = kiln_cli_on_stop;
	ro_opts.stop = &kiln_cli_stop_signal;
	if (!a->quiet && isatty(STDERR_FILENO))
		ro_opts.progress = progress;
	if (kiln_record_run(&ro_opts, &res)) {
		struct failure f = { a->event, a->count, a->freq, a->kernel, a->system_wide,
				     a->offcpu, a->wall, a->ncmd, a->cpu_arg };

		if (res.failed == KILN_RECORD_OPEN &&
		    (res.err == -EACCES || res.err == -EPERM) && a->ncmd && !a->kernel &&
		    !a->system_wide && !a->offcpu && !a->wall &&
		    (!strcmp(a->event, "cpu-clock") || !strcmp(a->event, "task-clock"))) {
			kiln_cli_record_refused(res.err, a->kernel, a->system_wide, true);
			fprintf(stderr, "kiln: falling back to --mode inject (the "
					"in-process sampler of libkiln.so)\n");
			rc = record_inject(a->cmd, a->ncmd, a->freq, false, a->output, a->quiet);
			goto out;
		}
		rc = explain_failure(&f, &res, a->cmd);
		goto out;
	}
	rc = write_profile(res.prof, a->output, a->program.data);
	if (rc)
		goto out;
	if (!a->quiet)
		say_written(a->output, &res, a->kernel);
	if (res.nleft)
		fprintf(stderr, "kiln: the command has ended, but %zu process%s it "
			"started still run%s (pid %d%s), recorded only until then: "
			"a daemon? run it in the foreground (nginx: -g 'daemon off;') "
			"or attach with -p\n", res.nleft, res.nleft > 1 ? "es" : "",
			res.nleft > 1 ? "" : "s", (int)res.left_pid,
			res.nleft > 1 ? ", ..." : "");
	else if (!res.samples)
		explain_empty(a->ro.ns_values, a->freq, a->count, a->ncmd,
			      a->wall || a->offcpu);
	kiln_cli_record_lost(&res, a->count, a->freq_given, a->freq,
			     a->stack_bytes, ro_opts.ring_pages, a->quiet);
	if (a->ncmd)
		rc = kiln_child_exit_status(res.status);
out:
	kiln_prof_free(res.prof);
	return rc;
}

int kiln_cmd_record(int argc, char **argv)
{
	struct args a = { 0 };
	int rc;

	a.output = "kiln.cpu.pb.gz";
	a.event = "cpu-clock";
	a.cg = "auto";
	a.freq = 99;
	a.stack_bytes = DEFAULT_STACK_BYTES;
	a.quiet = kiln_cli_quiet;
	rc = parse_args(argc, argv, &a);
	if (rc)
		return rc < 0 ? KILN_EXIT_OK : rc;
	rc = check_args(&a);
	if (!rc && a.inject) {
		rc = check_inject(&a);
		if (!rc)
			rc = record_inject(a.cmd, a.ncmd, a.freq, a.wall, a.output,
					   a.quiet);
	} else if (!rc) {
		rc = record_perf(&a);
	}
	kiln_buf_release(&a.program);
	free(a.t.pids);
	free(a.tids.pids);
	return rc;
}
