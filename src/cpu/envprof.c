/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The CPU agent (cpu stage): acts on kiln's CPU variables (and their
 * gperftools aliases, parsed by runtime/env.c) when libkiln.so loads:
 * starts CPU profiling, toggles it on a signal, and writes the profile at
 * exit, on SIGTERM/SIGINT and on fatal signals.  (KILN_HTTP's server is
 * http/envserve.c's.)
 *
 *   KILN_CPU=PATH        (CPUPROFILE)            profile, written at exit
 *   KILN_CPU_SIGNAL=N    (CPUPROFILESIGNAL)      signal N toggles; PATH.0, PATH.1, ...
 *   KILN_CPU_HZ=N        (CPUPROFILE_FREQUENCY)  default 99
 *   KILN_CPU_MODE=wall   (CPUPROFILE_REALTIME=1) every thread, wall time
 *   KILN_LOG=quiet|error|info|debug              default: errors only
 *
 * Signal handlers only ask kiln's relay (relay.h: a futex word, no fd the
 * program could close and reuse); its thread does the work (symbolizing
 * and writing need malloc and libdw), and a handler that must wait for it
 * (a terminating signal) waits at most a few seconds, so the agent can
 * never hang the program.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "runtime/guard.h"
#include "cpu/cpu.h"
#include "runtime/env.h"
#include "runtime/relay.h"
#include "runtime/kfd.h"
#include "format/format.h"
#include "profile/profile.h"
#include "symbolize/symbolize.h"
#include "util/buf.h"
#include "util/file.h"
#include "cpu/procprof.h"

static char *cpu_path;		/* KILN_CPU / CPUPROFILE, NULL: none */
static int cpu_hz = 99;
static bool cpu_wall;	/* KILN_CPU_MODE=wall, CPUPROFILE_REALTIME */
static int toggle_sig;		/* KILN_CPU_SIGNAL / CPUPROFILESIGNAL */
static unsigned toggle_count;	/* next PATH.N */
static pid_t owner;		/* the process that writes cpu_path */
/* Toggle signals not yet acted on (the relay runs one job for several). */
static _Atomic unsigned toggles_pending;
static _Atomic bool exiting;

static const int fatal_sigs[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGSEGV,
				  SIGBUS, SIGFPE, SIGILL, SIGABRT };

/*
 * cpu_path's output, opened when profiling starts (without the signal
 * toggle): an unwritable path is said at once, and a program that
 * changes directory, chroots or drops privileges later still gets its
 * profile (the folder is held open; util/file.h).  Its fds are kiln's
 * (high, checked: kfd.h); the program closing them sends the write back
 * to the path, and KILN_LOG=debug says so.
 */
static struct kiln_out cpu_out = KILN_OUT_INIT;
static struct kiln_kfd cpu_fd = KILN_KFD_INIT, cpu_dir = KILN_KFD_INIT;
/* The file at cpu_path, held open since the program gave up privileges
 * (kiln_cpuenv_before_setid()). */
static struct kiln_kfd cpu_place = KILN_KFD_INIT;
static bool cpu_out_open;

/*
 * After an exec (same pid) the image before has written its profile to
 * cpu_path: it is kept as PATH.old, or PATH.old.2, ... after more execs
 * (util/file.h), so that every image's profile survives, in the order
 * they ran, and PATH is the last one's, as for the heap trace.
 */
static void keep_earlier_profile(void)
{
	char *old;
	int err = kiln_keep_earlier_image(cpu_path, kiln_written_since, NULL, &old);

	if (err)
		kiln_rt_log(KILN_LOG_ERROR, "exec: cannot keep the CPU profile of the "
			       "image before: %s", strerror(-err));
	else if (old)
		kiln_rt_log(KILN_LOG_INFO, "exec: the CPU profile of the image "
			       "before is kept as '%s'", old);
	free(old);
}

static int open_cpu_out(void)
{
	int err = kiln_out_open(&cpu_out, cpu_path);

	if (err)
		return err;
	/* Written at the program's exit: no fsync there (see no_sync). */
	cpu_out.no_sync = true;
	err = kiln_kfd_adopt(&cpu_fd, cpu_out.fd);
	cpu_out.fd = cpu_fd.fd;
	if (!err && cpu_out.dirfd >= 0) {
		err = kiln_kfd_adopt(&cpu_dir, cpu_out.dirfd);
		cpu_out.dirfd = cpu_dir.fd;
	}
	if (err) {
		kiln_out_abort(&cpu_out);
		return err;
	}
	cpu_out_open = true;
	return 0;
}

/* Gives cpu_out up, closing only the fds that are still kiln's. */
static void drop_cpu_out(void)
{
	if (!cpu_out_open)
		return;
	cpu_out_open = false;
	if (!kiln_kfd_ours(&cpu_fd))
		cpu_out.fd = -1;
	if (!kiln_kfd_ours(&cpu_dir))
		cpu_out.dirfd = -1;
	if (!kiln_kfd_ours(&cpu_place))
		cpu_out.place_fd = -1;
	kiln_out_abort(&cpu_out);
	kiln_kfd_forget(&cpu_place);
}

/* Writes buf to path: through cpu_out when path is cpu_path and its fds
 * are still kiln's, else by the path. */
static int put_profile(const char *path, const struct kiln_buf *b)
{
	int err;

	if (path != cpu_path || !cpu_out_open)
		return kiln_write_atomic(path, b->data, b->len);
	cpu_out_open = false;
	if (kiln_kfd_ours(&cpu_fd) && (cpu_out.dirfd < 0 || kiln_kfd_ours(&cpu_dir))) {
		if (!kiln_kfd_ours(&cpu_place))
			cpu_out.place_fd = -1;
		err = kiln_out_write(&cpu_out, b->data, b->len);
		if (err)
			kiln_out_abort(&cpu_out);
		else
			err = kiln_out_commit(&cpu_out);
		kiln_kfd_forget(&cpu_place);	/* closed by either */
		return err;
	}
	/* The program closed them (or took the numbers): never touched
	 * again; the temporary is removed by its path. */
	kiln_rt_log(KILN_LOG_DEBUG, "the CPU profile's file descriptors were "
		       "closed by the program: writing '%s' by its path", path);
	if (cpu_out.tmp) {
		const char *slash = strrchr(cpu_path, '/');
		char tmp[4096];

		snprintf(tmp, sizeof(tmp), "%.*s/%s",
			 slash ? (int)(slash - cpu_path) : 1,
			 slash ? cpu_path : ".", cpu_out.tmp);
		unlink(tmp);
	}
	cpu_out.fd = cpu_out.dirfd = -1;
	if (!kiln_kfd_ours(&cpu_place))
		cpu_out.place_fd = -1;
	cpu_out.placed = false;
	kiln_out_abort(&cpu_out);
	kiln_kfd_forget(&cpu_place);
	return kiln_write_atomic(path, b->data, b->len);
}

/* Stops the running profile and writes it to path. */
int kiln_sampler_stop_write(const char *path)
{
	struct kiln_prof *p = NULL;
	struct kiln_buf out = KILN_BUF_INIT;
	struct timespec t0, t1;
	int err;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
	err = kiln_sampler_end(&p);

	if (err) {
		if (err != -ENOENT)
			kiln_rt_log(KILN_LOG_ERROR, "cannot write the CPU profile "
				       "'%s': %s", path, strerror(-err));
		if (path == cpu_path)
			drop_cpu_out();
		return err;
	}
	err = kiln_pprof_write(p, &out, true);
	if (!err)
		err = put_profile(path, &out);
	if (err)
		kiln_rt_log(KILN_LOG_ERROR, "cannot write the CPU profile '%s': %s",
			       path, strerror(-err));
	else
	{
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
		kiln_rt_log(KILN_LOG_INFO, "wrote the CPU profile '%s' (%zu stacks, "
			       "%.2f ms of CPU to stop, symbolize and write)", path,
			       p->nsamples, (double)(t1.tv_sec - t0.tv_sec) * 1e3 +
			       (double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
	}
	kiln_buf_release(&out);
	kiln_prof_free(p);
	return err;
}

static void write_final(void)
{
	if (!cpu_path || getpid() != owner)
		return;
	/* Light at the end (exit, _exit, exec, a fatal signal, stepping
	 * aside): libraries are named with the DWARF the collector read
	 * while the program ran; none is opened from the debug file cache
	 * now (libc's: ~10 ms the exit would wait for). */
	kiln_sym_close_debug_cache();
	if (!kiln_sampler_running()) {
		/* Never started, or stopped through the API: no temporary
		 * is left behind. */
		drop_cpu_out();
		return;
	}
	if (toggle_sig) {
		char name[4096];

		snprintf(name, sizeof(name), "%s.%u", cpu_path, toggle_count++);
		kiln_sampler_stop_write(name);
	} else {
		kiln_sampler_stop_write(cpu_path);
	}
}

static void toggle(void)
{
	char name[4096];
	int err;

	if (kiln_sampler_running()) {
		snprintf(name, sizeof(name), "%s.%u", cpu_path, toggle_count++);
		kiln_sampler_stop_write(name);
		return;
	}
	err = kiln_sampler_begin(cpu_hz, cpu_wall);
	if (err)
		kiln_rt_log(KILN_LOG_ERROR, "cannot start CPU profiling: %s",
			       strerror(-err));
	else
		kiln_rt_log(KILN_LOG_INFO, "CPU profiling started (signal %d)",
			       toggle_sig);
}

/*
 * Toggles are done one at a time, and the exit waits for one under way:
 * a program that signals the stop and exits at once (CPUPROFILESIGNAL,
 * then return from main) had the relay's PATH.N cut by the process's end,
 * or its temporary taken by the exit's own write.
 */
static pthread_mutex_t toggle_lock = PTHREAD_MUTEX_INITIALIZER;

/* The relay's job for toggle signals. */
static void toggle_job(void)
{
	pthread_mutex_lock(&toggle_lock);
	while (atomic_load(&toggles_pending)) {
		atomic_fetch_sub(&toggles_pending, 1);
		toggle();
	}
	pthread_mutex_unlock(&toggle_lock);
}

/* Async-signal-safe. */
static void on_toggle(int sig)
{
	atomic_fetch_add(&toggles_pending, 1);
	kiln_relay_ask(KILN_RELAY_CPU_TOGGLE);
}

/*
 * Back to the default action, by the system call itself: signal() or
 * sigaction() would reach kiln's own interposers (and, the first time,
 * dlsym, which takes the loader's lock: a fatal signal taken while
 * another thread holds it would hang there).  SIG_DFL needs no restorer.
 * Async-signal-safe.
 */
static void default_action(int sig)
{
	struct {
		void (*handler)(int);
		unsigned long flags;
		void (*restorer)(void);
		uint64_t mask;
	} ksa = { SIG_DFL, 0, NULL, 0 };

	syscall(SYS_rt_sigaction, sig, &ksa, NULL, sizeof(ksa.mask));
}

/*
 * A terminating signal the program left to its default action: have the
 * profile written (waiting at most 3 s), then die of the signal as the
 * program would have.  Calls no interposer and no dlsym.
 * Async-signal-safe.
 */
static void on_terminate(int sig, siginfo_t *si, void *uc)
{
	if (!atomic_exchange(&exiting, true) && getpid() == owner)
		kiln_relay_ask_wait(KILN_RELAY_CPU_EXIT, 3000);
	default_action(sig);
	/* A real fault happens again when the handler returns; a signal
	 * sent by a process (kill, raise, abort) is sent again. */
	if (si->si_code <= 0 || (sig != SIGSEGV && sig != SIGBUS &&
				 sig != SIGFPE && sig != SIGILL))
		raise(sig);
}

static void at_exit(void)
{
	atomic_store(&exiting, true);
	/* A toggle under way ends first (its PATH.N whole); one still
	 * pending is a stop the exit's own write below makes (a start then
	 * would be pointless). */
	if (toggle_sig) {
		pthread_mutex_lock(&toggle_lock);
		atomic_store(&toggles_pending, 0);
		write_final();
		pthread_mutex_unlock(&toggle_lock);
		return;
	}
	write_final();
}

/* A forked child's own profile, to start once fork() returns in it
 * (KILN_CPU_CHILDREN=1, where the parent profiled into PATH). */
static bool child_pending;

void kiln_cpuenv_fork_child(void)
{
	child_pending = cpu_path && !toggle_sig && cpu_out_open &&
			kiln_env()->cpu_children;
	/* The child must not write the parent's file (owner stays the
	 * parent's pid) nor toggle its profile. */
	kiln_relay_set(KILN_RELAY_CPU_TOGGLE, NULL);
	kiln_relay_set(KILN_RELAY_CPU_EXIT, NULL);
	/* The parent's output: its fds are closed here (the child's copies),
	 * its temporary left to the parent. */
	if (cpu_out_open) {
		cpu_out_open = false;
		kiln_kfd_close(&cpu_fd);
		kiln_kfd_close(&cpu_dir);
		kiln_kfd_close(&cpu_place);
		cpu_out = (struct kiln_out)KILN_OUT_INIT;
	}
	kiln_procprof_fork_child();
	atomic_store(&toggles_pending, 0);
}

/*
 * KILN_CPU_CHILDREN=1: the forked child (fork() has returned in it: its
 * only thread, kiln's gate open) profiles itself into PATH.PID, PATH the
 * name the user gave, as a program started by the profiled one does;
 * written at its exit, _exit or fatal signal like the parent's (the exit
 * handlers are inherited).  Its threads are registered as they start.
 */
void kiln_cpuenv_fork_started(void)
{
	const char *base = kiln_env()->cpu.base;
	size_t n;
	char *path;
	int err;

	if (!child_pending || !base)
		return;
	child_pending = false;
	kiln_rt_quiet_begin();
	n = strlen(base) + 32;
	path = malloc(n);
	if (!path) {
		kiln_rt_log(KILN_LOG_ERROR, "cannot start the CPU profile of a "
			       "forked child: %s", strerror(ENOMEM));
		goto out;
	}
	snprintf(path, n, "%s.%d", base, (int)getpid());
	/* cpu_path was the parent's (the environment's string): kept. */
	cpu_path = path;
	owner = getpid();
	err = kiln_relay_set(KILN_RELAY_CPU_EXIT, write_final);
	if (!err)
		err = open_cpu_out();
	if (err) {
		kiln_rt_log(KILN_LOG_ERROR, "cannot write the CPU profile '%s': %s",
			       cpu_path, strerror(-err));
		goto out;
	}
	kiln_procprof_proc_hold();
	err = kiln_sampler_begin(cpu_hz, cpu_wall);
	if (err) {
		kiln_rt_log(KILN_LOG_ERROR, "cannot start CPU profiling in a forked "
			       "child: %s", strerror(-err));
		drop_cpu_out();
		goto out;
	}
	kiln_rt_log(KILN_LOG_INFO, "forked child: CPU profile into '%s'", cpu_path);
out:
	kiln_rt_quiet_end();
}

static void install_terminate_handlers(void)
{
	size_t i;

	for (i = 0; i < sizeof(fatal_sigs) / sizeof(fatal_sigs[0]); i++) {
		struct sigaction sa, old;

		if (sigaction(fatal_sigs[i], NULL, &old) ||
		    (old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL)
			continue;	/* the program's own, or ignored */
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = on_terminate;
		/* On the alternate stack: a stack overflow can be reported too. */
		sa.sa_flags = SA_SIGINFO | SA_RESETHAND | SA_NODEFER | SA_ONSTACK;
		sigemptyset(&sa.sa_mask);
		sigaction(fatal_sigs[i], &sa, NULL);
	}
}


static void agent_load(void)
{
	const struct kiln_env *e = kiln_env();
	int err;

	kiln_rt_log_init();
	/* System libraries' file:line from the debug file cache kiln record
	 * fills (decompressed copies, by build ID): read, never written, by
	 * the collector's session as the program's samples reach a library
	 * (docs/symbols.md).  Only the folder's name is taken now. */
	{
		char *dc = kiln_sym_debug_cache_env();

		kiln_sym_set_debug_cache(dc, false);
		free(dc);
	}
	kiln_sampler_init();
	owner = getpid();
	cpu_hz = e->cpu_hz;
	cpu_wall = e->cpu_wall;
	toggle_sig = e->cpu_signal;
	cpu_path = e->cpu.path;
	if (cpu_path && ((err = kiln_relay_set(KILN_RELAY_CPU_EXIT, write_final)) ||
			 (toggle_sig &&
			  (err = kiln_relay_set(KILN_RELAY_CPU_TOGGLE, toggle_job))))) {
		kiln_rt_log(KILN_LOG_ERROR, "cannot start: %s", strerror(-err));
		return;
	}
	if (cpu_path && toggle_sig) {
		struct sigaction sa;

		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_toggle;
		sa.sa_flags = SA_RESTART;
		sigemptyset(&sa.sa_mask);
		sigaction(toggle_sig, &sa, NULL);
		kiln_rt_log(KILN_LOG_INFO, "signal %d toggles CPU profiling "
			       "into %s.N", toggle_sig, cpu_path);
	} else if (cpu_path) {
		keep_earlier_profile();
		err = open_cpu_out();
		if (err) {
			kiln_rt_log(KILN_LOG_ERROR, "cannot write the CPU profile "
				       "'%s': %s", cpu_path, strerror(-err));
			return;
		}
		kiln_rt_log(KILN_LOG_DEBUG, "CPU profile '%s' opened", cpu_path);
		kiln_procprof_proc_hold();
		err = kiln_sampler_begin(cpu_hz, cpu_wall);
		if (err) {
			kiln_rt_log(KILN_LOG_ERROR, "cannot start CPU profiling: %s",
				       err == -EEXIST ? "the program has its own "
				       "SIGPROF handler" : strerror(-err));
			drop_cpu_out();
		}
	}
	if (cpu_path) {
		atexit(at_exit);
		install_terminate_handlers();
	}
}

/*
 * kiln's own work on the program's thread (its paths, the HTTP server):
 * the allocations are not the program's.
 */
void kiln_cpuenv_load(void)
{
	kiln_rt_quiet_begin();
	agent_load();
	kiln_rt_quiet_end();
}

/* ---- stepping aside for the program's own SIGPROF handler ---- */


void kiln_cpuenv_sigprof_claimed(void)
{
	if (!kiln_sampler_running())
		return;
	kiln_rt_log(KILN_LOG_ERROR, "the program installs its own SIGPROF "
		       "handler: kiln stops CPU profiling and steps aside");
	if (cpu_path && getpid() == owner) {
		write_final();
	} else {
		struct kiln_prof *p = NULL;

		if (!kiln_sampler_end(&p))
			kiln_prof_free(p);
	}
}


/*
 * exec and _exit (libkiln/interpose.c's interposers call these first, through libkiln/life.c):
 * the profile so far is written, by the process that owns the file only
 * (never a fork or vfork child: it never touches a vfork parent's
 * memory).  A program that ends with _exit() (shells do, and forked
 * children) skips atexit handlers and destructors; an exec replaces the
 * image, whose samples and temporary would be lost: the new image, same
 * pid, starts a profile of its own into PATH, which keeps this one as
 * PATH.old.
 */
void kiln_cpuenv_before_exit(void)
{
	if (cpu_path && getpid() == owner && !atomic_exchange(&exiting, true))
		write_final();
}

/*
 * The program is about to give up privileges (setuid() and its kin,
 * interposed): the profile's folder (root's, say) may be closed to it
 * afterwards, so the file at PATH is prepared now, while it still may
 * (util/file.h, kiln_out_keep_in_place()): the profile is still written
 * whole under its name at the end.
 */
void kiln_cpuenv_before_setid(void)
{
	int err;

	if (!cpu_out_open || getpid() != owner || cpu_out.place_fd >= 0 ||
	    cpu_out.placed || !kiln_kfd_ours(&cpu_fd) || !kiln_kfd_ours(&cpu_dir))
		return;
	err = kiln_out_keep_in_place(&cpu_out);
	if (!err && cpu_out.place_fd >= 0) {
		err = kiln_kfd_adopt(&cpu_place, cpu_out.place_fd);
		cpu_out.place_fd = err ? -1 : cpu_place.fd;
	}
	if (err)
		kiln_rt_log(KILN_LOG_ERROR, "the program gives up privileges: cannot "
			       "prepare the CPU profile '%s' for it: %s", cpu_path,
			       strerror(-err));
	else
		kiln_rt_log(KILN_LOG_DEBUG, "the program gives up privileges: the "
			       "CPU profile '%s' is held open", cpu_path);
}

/* The profile was written for an exec that may yet fail (owner's). */
static bool exec_wrote;

void kiln_cpuenv_before_exec(void)
{
	if (cpu_path && getpid() == owner && kiln_sampler_running()) {
		kiln_rt_log(KILN_LOG_DEBUG, "exec: writing the CPU profile first");
		write_final();
		exec_wrote = true;
	}
}

/*
 * The exec returned: it failed, and the image goes on, so does its
 * profile.  Sampling starts again, into PATH, the part written before the
 * exec kept as PATH.old (as the new image of a successful exec keeps it);
 * with the toggle signal, the next stop writes the next PATH.N.
 */
void kiln_cpuenv_after_exec(void)
{
	int err;

	if (!exec_wrote || getpid() != owner)
		return;
	exec_wrote = false;
	if (!toggle_sig) {
		keep_earlier_profile();
		err = open_cpu_out();
		if (err) {
			kiln_rt_log(KILN_LOG_ERROR, "exec failed: cannot write the "
				       "CPU profile '%s' again: %s", cpu_path,
				       strerror(-err));
			return;
		}
	}
	err = kiln_sampler_begin(cpu_hz, cpu_wall);
	if (err) {
		kiln_rt_log(KILN_LOG_ERROR, "exec failed: cannot start CPU "
			       "profiling again: %s", strerror(-err));
		if (!toggle_sig)
			drop_cpu_out();
		return;
	}
	kiln_rt_log(KILN_LOG_INFO, "exec failed: CPU profiling goes on");
}

