/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Every libc function libkiln.so interposes, but malloc's (libkiln stage;
 * the malloc family is libkiln-malloc.so's, src/heap/hooks.c).  Each
 * interposer here decides nothing itself: it calls the parts' hooks, in
 * an order stated beside it, and passes on to the next definition
 * (RTLD_NEXT).  The next definitions are found once at load
 * (kiln_interpose_load(), the constructor's first step: dlsym takes the
 * loader's lock, never from a handler or an exit path); a call that comes
 * before the constructor (another library's) finds its own.
 *
 *   thread start and end    pthread_create, pthread_exit   runtime/threads.c, lastthread.c
 *   fork                    fork                           runtime/forkgate.c
 *   signal stacks           sigaltstack                    runtime/altstack.c, cpu/cpu.c
 *   seccomp filters         prctl, syscall                 cpu/cpu.c (sampling frozen)
 *   the program's SIGPROF   sigaction, signal              cpu/envprof.c (steps aside)
 *   libraries unloaded      dlclose                        cpu/modules.c
 *   privileges given up     setuid, seteuid, setreuid,     cpu/envprof.c (the
 *                           setresuid and the gid ones     profile's file held)
 *   fds made on kiln's      eventfd, epoll_create(1),      runtime/kfd.c (moved
 *   threads                 accept, accept4                high, close-on-exec)
 *   the process's end       _exit, _Exit                   libkiln/life.c
 *   a new image             the exec family                libkiln/life.c
 */
#include <dlfcn.h>
#include <errno.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cpu/cpu.h"
#include "libkiln/life.h"
#include "runtime/altstack.h"
#include "runtime/forkgate.h"
#include "runtime/kfd.h"
#include "runtime/threads.h"

#define INTERPOSER __attribute__((visibility("default")))

typedef void (*exit_fn)(int) __attribute__((noreturn));
typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);
typedef sighandler_t (*signal_fn)(int, sighandler_t);
typedef long (*syscall_fn)(long, long, long, long, long, long, long);
typedef int (*prctl_fn)(int, unsigned long, unsigned long, unsigned long,
			unsigned long);

static kiln_rt_pthread_create_fn real_pthread_create;
static exit_fn real__exit, real__Exit;
static sigaction_fn real_sigaction;
static signal_fn real_signal;
static syscall_fn real_syscall;

void kiln_interpose_load(void)
{
	if (!real_pthread_create)
		real_pthread_create = (kiln_rt_pthread_create_fn)
				      dlsym(RTLD_NEXT, "pthread_create");
	if (!real__exit)
		real__exit = (exit_fn)dlsym(RTLD_NEXT, "_exit");
	if (!real__Exit)
		real__Exit = (exit_fn)dlsym(RTLD_NEXT, "_Exit");
	if (!real_sigaction)
		real_sigaction = (sigaction_fn)dlsym(RTLD_NEXT, "sigaction");
	if (!real_signal)
		real_signal = (signal_fn)dlsym(RTLD_NEXT, "signal");
	/* Before the program can act: kiln's handlers call syscall() too. */
	if (!real_syscall)
		real_syscall = (syscall_fn)dlsym(RTLD_NEXT, "syscall");
}

/* ---- threads ---- */

INTERPOSER
int pthread_create(pthread_t *thread, const pthread_attr_t *attr,
		   void *(*fn)(void *), void *arg)
{
	if (!real_pthread_create)
		kiln_interpose_load();
	return kiln_rt_thread_create(real_pthread_create, thread, attr, fn, arg);
}

typedef void (*pthread_exit_fn)(void *);

/* A thread of the program ends here (the main thread too). */
__attribute__((visibility("default"), noreturn))
void pthread_exit(void *ret)
{
	static pthread_exit_fn real;

	if (!real)
		real = (pthread_exit_fn)dlsym(RTLD_NEXT, "pthread_exit");
	kiln_rt_thread_ending();
	if (real)
		real(ret);
	for (;;)
		syscall(SYS_exit, 0);	/* no pthread_exit to be found */
}

/* ---- fork ---- */

typedef pid_t (*fork_fn)(void);

/* kiln's threads idle (the gate closed) before any pthread_atfork
 * prepare handler runs: those of an allocator or of kiln's heap tracer
 * take locks that a busy kiln thread's malloc needs (forkgate.c). */
INTERPOSER
pid_t fork(void)
{
	static fork_fn real;
	pid_t pid;

	if (!real)
		real = (fork_fn)dlsym(RTLD_NEXT, "fork");
	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	kiln_rt_fork_enter();
	pid = real();
	kiln_rt_fork_leave(pid);
	if (pid == 0)
		kiln_life_fork_started();
	return pid;
}

/* ---- signal stacks ---- */

/* The program sets (or asks for) a thread's alternate stack: one smaller
 * than a sample needs takes the thread out of sampling while it has it. */
INTERPOSER
int sigaltstack(const stack_t *ss, stack_t *old)
{
	bool small = ss && !(ss->ss_flags & SS_DISABLE) &&
		     ss->ss_size < KILN_ALTSTACK_MIN, was = false;
	int rc, err;

	/* Not signalled any more before the small stack is in place
	 * (none is, under a seccomp filter). */
	if (small && !kiln_rt_frozen())
		was = kiln_sampler_small_altstack(true);
	rc = kiln_rt_altstack_set(ss, old);
	err = errno;
	if (ss && !kiln_rt_frozen() && (rc ? small && !was : !small))
		kiln_sampler_small_altstack(rc ? was : false);
	errno = err;
	return rc;
}

/* ---- seccomp filters ---- */

/*
 * A program that installs a seccomp filter: from then on any system call
 * kiln makes in the program's threads may be forbidden, and a filter that
 * kills on one (timer_create for a new thread's CPU timer, sigaltstack,
 * the wall ticker's signals) kills the program.  kiln cannot read the
 * filter, so it assumes the worst: sampling is frozen first (what was
 * taken is written as usual).
 */
static void filter_coming(unsigned long mode)
{
	if (mode == SECCOMP_MODE_FILTER || mode == SECCOMP_MODE_STRICT)
		kiln_sampler_freeze("the program installs a seccomp filter");
}

INTERPOSER
int prctl(int option, ...)
{
	static prctl_fn real;
	unsigned long a[4];
	va_list ap;
	int i;

	va_start(ap, option);
	for (i = 0; i < 4; i++)
		a[i] = va_arg(ap, unsigned long);
	va_end(ap);
	if (!real)
		real = (prctl_fn)dlsym(RTLD_NEXT, "prctl");
	if (option == PR_SET_SECCOMP)
		filter_coming(a[0]);
	return real(option, a[0], a[1], a[2], a[3]);
}

/* glibc's syscall() takes six arguments after the number, whatever the
 * call: so does this one. */
INTERPOSER
long syscall(long n, ...)
{
	long a[6];
	va_list ap;
	int i;

	va_start(ap, n);
	for (i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (n == SYS_seccomp && (a[0] == SECCOMP_SET_MODE_FILTER ||
				 a[0] == SECCOMP_SET_MODE_STRICT))
		filter_coming(a[0] == SECCOMP_SET_MODE_FILTER ?
			      SECCOMP_MODE_FILTER : SECCOMP_MODE_STRICT);
	if (!real_syscall)
		kiln_interpose_load();
	return real_syscall(n, a[0], a[1], a[2], a[3], a[4], a[5]);
}

/* ---- the program's own SIGPROF handler ---- */

INTERPOSER
int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	if (!real_sigaction)
		kiln_interpose_load();
	if (!real_sigaction) {
		errno = ENOSYS;
		return -1;
	}
	if (sig == SIGPROF && act) {
		bool installs = act->sa_flags & SA_SIGINFO ?
				act->sa_sigaction != NULL :
				act->sa_handler != SIG_DFL &&
				act->sa_handler != SIG_IGN;

		if (installs && !kiln_sampler_is_own_handler(act))
			kiln_cpuenv_sigprof_claimed();
	}
	return real_sigaction(sig, act, old);
}

INTERPOSER
sighandler_t signal(int sig, sighandler_t handler)
{
	if (!real_signal)
		kiln_interpose_load();
	if (!real_signal) {
		errno = ENOSYS;
		return SIG_ERR;
	}
	if (sig == SIGPROF && handler != SIG_DFL && handler != SIG_IGN)
		kiln_cpuenv_sigprof_claimed();
	return real_signal(sig, handler);
}

/* ---- libraries unloaded ---- */

typedef int (*dlclose_fn)(void *);

/*
 * What names the library's frames is noted while it is still mapped
 * (kiln_life_before_dlclose(): the CPU profile's modules, the heap
 * trace's maps).  dlopen() is not interposed: glibc searches the
 * caller's RUNPATH and $ORIGIN, and the caller would be libkiln.so.
 */
INTERPOSER
int dlclose(void *handle)
{
	static dlclose_fn real;

	if (!real)
		real = (dlclose_fn)dlsym(RTLD_NEXT, "dlclose");
	if (!real)
		return -1;
	kiln_life_before_dlclose();
	return real(handle);
}

/* ---- privileges given up ---- */

/*
 * A program started as root that becomes another user (a server dropping
 * to nobody) may lose the right to write the folder its profile goes to:
 * the parts prepare their files first (kiln_life_before_setid()), once.
 * Only for a call that may change an id: one that names the ids the
 * process has (setgid(getgid()), setresuid(-1, -1, -1), a library making
 * sure) changes nothing and prepares nothing.  A raw system call is not
 * seen.
 */

/*
 * Whether a call naming real r, effective e and saved s (-1: left as
 * is) may change the current ids cur[3]: for setuid() and setgid(), whose
 * effect depends on privilege, any of the three differing (set as r, e
 * and s); for setreuid() and setregid(), the saved id too, which takes
 * the new effective one when the real one is set or the effective one
 * becomes other than the real one.
 */
enum setid_form { SETID_ALL, SETID_RE, SETID_RES };

static bool ids_change(bool gid, enum setid_form form, unsigned r, unsigned e,
		       unsigned s)
{
	unsigned cur[3];
	const unsigned keep = (unsigned)-1;

	if (gid ? getresgid(&cur[0], &cur[1], &cur[2]) :
		  getresuid(&cur[0], &cur[1], &cur[2]))
		return true;
	if (form == SETID_ALL)
		return r != cur[0] || r != cur[1] || r != cur[2];
	if ((r != keep && r != cur[0]) || (e != keep && e != cur[1]))
		return true;
	if (form == SETID_RES)
		return s != keep && s != cur[2];
	return (r != keep || (e != keep && e != cur[0])) &&
	       (e != keep ? e : cur[1]) != cur[2];
}

#define SETID_INTERPOSER(name, params, args, change)			\
	INTERPOSER int name params					\
	{								\
		static int (*real) params;				\
									\
		if (!real)						\
			real = (int (*) params)dlsym(RTLD_NEXT, #name);	\
		if (!real) {						\
			errno = ENOSYS;					\
			return -1;					\
		}							\
		if (change)						\
			kiln_life_before_setid();			\
		return real args;					\
	}

#define K ((unsigned)-1)
SETID_INTERPOSER(setuid, (uid_t u), (u), ids_change(false, SETID_ALL, u, u, u))
SETID_INTERPOSER(seteuid, (uid_t u), (u), ids_change(false, SETID_RES, K, u, K))
SETID_INTERPOSER(setreuid, (uid_t r, uid_t e), (r, e), ids_change(false, SETID_RE, r, e, K))
SETID_INTERPOSER(setresuid, (uid_t r, uid_t e, uid_t s), (r, e, s),
		 ids_change(false, SETID_RES, r, e, s))
SETID_INTERPOSER(setgid, (gid_t g), (g), ids_change(true, SETID_ALL, g, g, g))
SETID_INTERPOSER(setegid, (gid_t g), (g), ids_change(true, SETID_RES, K, g, K))
SETID_INTERPOSER(setregid, (gid_t r, gid_t e), (r, e), ids_change(true, SETID_RE, r, e, K))
SETID_INTERPOSER(setresgid, (gid_t r, gid_t e, gid_t s), (r, e, s),
		 ids_change(true, SETID_RES, r, e, s))
#undef K

/* ---- descriptors made on kiln's threads ---- */

/*
 * libmicrohttpd (KILN_HTTP) makes its epoll fd and its eventfd when it
 * starts and a socket for each connection it accepts, at the lowest free
 * numbers: 3 and 4 in most hosts, inherited by every child the host
 * forks and taken from the numbers the host's own code expects.  Made on
 * a thread of kiln's, they are moved to kiln's high range
 * (kiln_kfd_raise_own()); the host's own calls pass through untouched.
 */
#define RAISE_INTERPOSER(name, params, args)				\
	INTERPOSER int name params					\
	{								\
		static int (*real) params;				\
									\
		if (!real)						\
			real = (int (*) params)dlsym(RTLD_NEXT, #name);	\
		if (!real) {						\
			errno = ENOSYS;					\
			return -1;					\
		}							\
		return kiln_kfd_raise_own(real args);			\
	}

RAISE_INTERPOSER(eventfd, (unsigned int v, int flags), (v, flags))
RAISE_INTERPOSER(epoll_create, (int size), (size))
RAISE_INTERPOSER(epoll_create1, (int flags), (flags))
RAISE_INTERPOSER(accept, (int fd, struct sockaddr *a, socklen_t *l), (fd, a, l))
RAISE_INTERPOSER(accept4, (int fd, struct sockaddr *a, socklen_t *l, int flags),
		 (fd, a, l, flags))

/* ---- the process's end without a destructor ---- */

/*
 * Programs that end with _exit() (shells do, and forked children) skip
 * atexit handlers and destructors: the parts write first
 * (kiln_life_before_exit()).
 */
static void exit_through(exit_fn real, int status)
	__attribute__((noreturn));

static void exit_through(exit_fn real, int status)
{
	kiln_life_before_exit();
	if (real)
		real(status);
	syscall(SYS_exit_group, status);
	for (;;)
		;
}

__attribute__((visibility("default"), noreturn))
void _exit(int status)
{
	if (!real__exit)
		kiln_interpose_load();
	exit_through(real__exit, status);
}

__attribute__((visibility("default"), noreturn))
void _Exit(int status)
{
	if (!real__Exit)
		kiln_interpose_load();
	exit_through(real__Exit, status);
}

/* ---- a new image ---- */

/*
 * exec replaces the image: the parts write what they hold first
 * (kiln_life_before_exec()); an exec that returns has failed, and what
 * they stopped goes on (kiln_life_after_exec(), errno kept).  execl, execlp and execle (which glibc runs
 * on its internal execve) come here through the interposers below; so do
 * fexecve and execveat (glibc's call the system call itself).
 */

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*execvp_fn)(const char *, char *const[]);
typedef int (*execvpe_fn)(const char *, char *const[], char *const[]);

INTERPOSER
int execve(const char *path, char *const argv[], char *const envp[])
{
	static execve_fn real;
	int rc;

	if (!real)
		real = (execve_fn)dlsym(RTLD_NEXT, "execve");
	kiln_life_before_exec();
	rc = real ? real(path, argv, envp) : (errno = ENOSYS, -1);
	kiln_life_after_exec();
	return rc;
}

typedef int (*fexecve_fn)(int, char *const[], char *const[]);
typedef int (*execveat_fn)(int, const char *, char *const[], char *const[], int);

INTERPOSER
int fexecve(int fd, char *const argv[], char *const envp[])
{
	static fexecve_fn real;
	int rc;

	if (!real)
		real = (fexecve_fn)dlsym(RTLD_NEXT, "fexecve");
	kiln_life_before_exec();
	rc = real ? real(fd, argv, envp) : (errno = ENOSYS, -1);
	kiln_life_after_exec();
	return rc;
}

INTERPOSER
int execveat(int dirfd, const char *path, char *const argv[], char *const envp[],
	     int flags)
{
	static execveat_fn real;
	int rc;

	if (!real)
		real = (execveat_fn)dlsym(RTLD_NEXT, "execveat");
	kiln_life_before_exec();
	rc = real ? real(dirfd, path, argv, envp, flags) : (errno = ENOSYS, -1);
	kiln_life_after_exec();
	return rc;
}

INTERPOSER
int execv(const char *path, char *const argv[])
{
	static execvp_fn real;
	int rc;

	if (!real)
		real = (execvp_fn)dlsym(RTLD_NEXT, "execv");
	kiln_life_before_exec();
	rc = real ? real(path, argv) : (errno = ENOSYS, -1);
	kiln_life_after_exec();
	return rc;
}

INTERPOSER
int execvp(const char *file, char *const argv[])
{
	static execvp_fn real;
	int rc;

	if (!real)
		real = (execvp_fn)dlsym(RTLD_NEXT, "execvp");
	kiln_life_before_exec();
	rc = real ? real(file, argv) : (errno = ENOSYS, -1);
	kiln_life_after_exec();
	return rc;
}

INTERPOSER
int execvpe(const char *file, char *const argv[], char *const envp[])
{
	static execvpe_fn real;
	int rc;

	if (!real)
		real = (execvpe_fn)dlsym(RTLD_NEXT, "execvpe");
	kiln_life_before_exec();
	rc = real ? real(file, argv, envp) : (errno = ENOSYS, -1);
	kiln_life_after_exec();
	return rc;
}

/*
 * execl, execlp and execle: glibc's call its internal execve, past the
 * interposers above, so they are interposed too: the arguments gathered
 * on the stack (as glibc does) and handed to execv, execvp and execve.
 */

/* How many arguments execl's list holds, arg included (not the NULL). */
static size_t execl_count(const char *arg, va_list *ap)
{
	size_t n = 0;

	if (arg)
		for (n = 1; va_arg(*ap, char *); n++)
			;
	return n;
}

/* argv[0..n): arg and the n - 1 after it; argv[n] NULL; *ap is left
 * after the list's NULL. */
static void execl_fill(char **argv, size_t n, const char *arg, va_list *ap)
{
	size_t i;

	argv[0] = (char *)arg;
	for (i = 1; i < n; i++)
		argv[i] = va_arg(*ap, char *);
	if (n)
		(void)va_arg(*ap, char *);
	argv[n] = NULL;
}

INTERPOSER
int execl(const char *path, const char *arg, ...)
{
	va_list ap;
	size_t n;

	va_start(ap, arg);
	n = execl_count(arg, &ap);
	va_end(ap);
	{
		char *argv[n + 1];

		va_start(ap, arg);
		execl_fill(argv, n, arg, &ap);
		va_end(ap);
		return execv(path, argv);
	}
}

INTERPOSER
int execlp(const char *file, const char *arg, ...)
{
	va_list ap;
	size_t n;

	va_start(ap, arg);
	n = execl_count(arg, &ap);
	va_end(ap);
	{
		char *argv[n + 1];

		va_start(ap, arg);
		execl_fill(argv, n, arg, &ap);
		va_end(ap);
		return execvp(file, argv);
	}
}

INTERPOSER
int execle(const char *path, const char *arg, ...)
{
	va_list ap;
	size_t n;

	va_start(ap, arg);
	n = execl_count(arg, &ap);
	va_end(ap);
	{
		char *argv[n + 1];
		char *const *envp;

		va_start(ap, arg);
		execl_fill(argv, n, arg, &ap);
		envp = va_arg(ap, char *const *);
		va_end(ap);
		return execve(path, argv, envp);
	}
}
