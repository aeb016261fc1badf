/*
 * The process's own events that pass no destructor (runtime stage):
 * _exit() and _Exit() end it without atexit handlers or destructors, and
 * exec replaces its image.  libkiln.so interposes them here, in one
 * place, and calls each part's hook in the order given below before
 * passing on; the parts never interpose these themselves.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent/agent.h"
#include "heap/heap.h"
#include "runtime/runtime.h"

typedef void (*exit_fn)(int) __attribute__((noreturn));
static exit_fn real__exit, real__Exit;

/* dlsym takes the loader's lock: found at load (kiln_process_load()),
 * not in an exit path, unless an _exit comes before the constructor. */
static void resolve_exits(void)
{
	if (!real__exit)
		real__exit = (exit_fn)dlsym(RTLD_NEXT, "_exit");
	if (!real__Exit)
		real__Exit = (exit_fn)dlsym(RTLD_NEXT, "_Exit");
}

void kiln_process_load(void)
{
	resolve_exits();
}

/*
 * Programs that end with _exit() (shells do, and forked children) skip
 * atexit handlers and destructors: the profile and the heap trace are
 * written first.  Only by the process that owns the file, so a
 * child after fork or vfork never writes (and never touches a vfork
 * parent's memory).
 */
static void exit_through(exit_fn real, int status)
	__attribute__((noreturn));

static void exit_through(exit_fn real, int status)
{
	/* The CPU profile, then the heap trace (streamed: what is still in
	 * the rings, all of a short child's work, is written now or never). */
	kiln_agent_before_exit();
	kiln_heap_exit_flush();
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
		resolve_exits();
	exit_through(real__exit, status);
}

__attribute__((visibility("default"), noreturn))
void _Exit(int status)
{
	if (!real__Exit)
		resolve_exits();
	exit_through(real__Exit, status);
}

/*
 * exec replaces the image: the profile so far is written first (else its
 * samples, and the temporary opened at the start, are lost), by the
 * process that owns it only (never a vfork child).  The new image, same
 * pid, starts a profile of its own into PATH, which keeps this one as
 * PATH.old.  The heap trace's last events are written too, and the new
 * image keeps the trace as PATH.old (src/heap/trace.c).  execl, execlp
 * and execle (which glibc runs on its internal execve) come here through
 * the interposers below; so do fexecve and execveat (glibc's call the
 * system call itself).
 */
typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*execvp_fn)(const char *, char *const[]);
typedef int (*execvpe_fn)(const char *, char *const[], char *const[]);

/* Each part's exec hook, in this order: the CPU profile, the heap trace
 * (streamed: what the rings still hold is written now, or lost with the
 * image), the image's last heap dump (KILN_HEAP). */
static void before_exec(void)
{
	kiln_agent_before_exec();
	kiln_heap_exec_flush();
	kiln_heapdump_before_exec();
}

__attribute__((visibility("default")))
int execve(const char *path, char *const argv[], char *const envp[])
{
	static execve_fn real;

	if (!real)
		real = (execve_fn)dlsym(RTLD_NEXT, "execve");
	before_exec();
	return real ? real(path, argv, envp) : (errno = ENOSYS, -1);
}

typedef int (*fexecve_fn)(int, char *const[], char *const[]);
typedef int (*execveat_fn)(int, const char *, char *const[], char *const[], int);

__attribute__((visibility("default")))
int fexecve(int fd, char *const argv[], char *const envp[])
{
	static fexecve_fn real;

	if (!real)
		real = (fexecve_fn)dlsym(RTLD_NEXT, "fexecve");
	before_exec();
	return real ? real(fd, argv, envp) : (errno = ENOSYS, -1);
}

__attribute__((visibility("default")))
int execveat(int dirfd, const char *path, char *const argv[], char *const envp[],
	     int flags)
{
	static execveat_fn real;

	if (!real)
		real = (execveat_fn)dlsym(RTLD_NEXT, "execveat");
	before_exec();
	return real ? real(dirfd, path, argv, envp, flags) : (errno = ENOSYS, -1);
}

__attribute__((visibility("default")))
int execv(const char *path, char *const argv[])
{
	static execvp_fn real;

	if (!real)
		real = (execvp_fn)dlsym(RTLD_NEXT, "execv");
	before_exec();
	return real ? real(path, argv) : (errno = ENOSYS, -1);
}

__attribute__((visibility("default")))
int execvp(const char *file, char *const argv[])
{
	static execvp_fn real;

	if (!real)
		real = (execvp_fn)dlsym(RTLD_NEXT, "execvp");
	before_exec();
	return real ? real(file, argv) : (errno = ENOSYS, -1);
}

__attribute__((visibility("default")))
int execvpe(const char *file, char *const argv[], char *const envp[])
{
	static execvpe_fn real;

	if (!real)
		real = (execvpe_fn)dlsym(RTLD_NEXT, "execvpe");
	before_exec();
	return real ? real(file, argv, envp) : (errno = ENOSYS, -1);
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

__attribute__((visibility("default")))
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

__attribute__((visibility("default")))
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

__attribute__((visibility("default")))
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
