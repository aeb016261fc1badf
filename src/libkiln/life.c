/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one owner of libkiln.so's process-wide life (libkiln stage): its
 * only constructor, its only destructor and its only pthread_atfork
 * triple, and what the process's end and a new image (_exit and exec,
 * which pass no destructor; interposed in interpose.c) ask of the parts.
 * The variables are parsed by runtime/env.c.  The parts (CPU sampler,
 * heap hooks and trace, heap dumps, HTTP server) expose hooks (life.h)
 * and never register their own, so the order below is the order,
 * whatever the link order of the files.  See docs/design.md.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "cpu/cpu.h"
#include "cpu/procprof.h"
#include "heap/htrace.h"
#include "http/http.h"
#include "runtime/forkgate.h"
#include "runtime/guard.h"
#include "runtime/log.h"
#include "runtime/threads.h"
#include "runtime/relay.h"
#include "runtime/env.h"
#include "libkiln/life.h"
#include "util/exename.h"
#include "symbolize/symbolize.h"

/* fork(), in the forking thread, before the copy. */
static void prepare(void)
{
	/*
	 * Heap tables first (it takes kiln's heap locks), then the gate
	 * (waits for kiln's busy threads).  This is the order the separate
	 * registrations gave (prepare handlers run last-registered first):
	 * kept as it was.  The exported fork() closes the gate before any
	 * prepare handler runs anyway (interpose.c); the gate's prepare is
	 * for forks that bypass it (daemon(), forkpty()).  Before both,
	 * KILN_HTTP_CHILDREN's channel (a socket: no lock, no thread).
	 */
	kiln_http_fork_prepare();
	kiln_htrace_fork_prepare();
	kiln_rt_gate_prepare();
}

/* fork(), in the parent, after the copy. */
static void parent(void)
{
	kiln_rt_gate_parent();
	kiln_htrace_fork_parent();
}

/* fork(), in the child: one thread, the parent's memory. */
static void child(void)
{
	/* The gate first: every hook below that starts a thread of kiln's
	 * (the relay, KILN_HTTP's heir, the heap writer) passes it
	 * (kiln_rt_thread_start()), and it writes nothing.  Then dumps:
	 * their prefix becomes the child's before anything else could write
	 * one (the heap writer's interval dumps, the heir's server).  The
	 * relay after the parts that clear the jobs a child must not run
	 * (the CPU profile's toggle and exit write: the parent's file), and
	 * before the heap writer, which may ask it for an interval dump. */
	kiln_rt_gate_child();
	kiln_rt_threads_fork_child();
	kiln_htrace_dump_fork_child();
	kiln_sampler_fork_child();
	kiln_cpuenv_fork_child();
	kiln_http_fork_child();
	kiln_relay_fork_child();
	kiln_htrace_fork_child();
}

/*
 * Load order: heap dumps, then the CPU agent (it registers the calling
 * thread with the sampler), the KILN_HTTP server (after the sampler: a
 * profile request may come at once), then the heap hooks and trace --
 * the order the three constructors ran in before they were one (link
 * order), kept.  The fork handlers are registered before any
 * of them can start a thread of kiln's.
 */
__attribute__((constructor)) static void kiln_runtime_load(void)
{
	const char *exe_target, *exe_alias;
	/*
	 * The first allocation is a malloc.  A sanitizer's runtime preloaded
	 * into a program not built with it (LD_PRELOAD="libasan.so
	 * libkiln.so" timeout PROG: timeout is one) is started by its own
	 * constructor, which runs after this one.  Until then GCC 12's ASan
	 * answers strdup() from its internal allocator (internal_strdup),
	 * and its free() takes such a pointer for one allocated inside
	 * dlsym, finds no LSan root region for it and ends the process with
	 * status 0 before main(): "__lsan_unregister_root_region(): region
	 * ... has not been registered", the host's work and output lost
	 * (t731).  Its malloc() starts the runtime first (ENSURE_ASAN_INITED),
	 * so every strdup() after this one is its ordinary heap's.  (Through
	 * a volatile pointer: the compiler drops a bare free(malloc(1)).)
	 */
	void *volatile first = malloc(1);

	free(first);
	kiln_rt_log_init();
	/* Every variable parsed (and a bad one said) before any part acts
	 * on one. */
	kiln_env();
	/* The name the program was run by, while a relative one (./prog)
	 * still means what it meant to execve. */
	kiln_self_exe_alias(&exe_target, &exe_alias);
	kiln_interpose_load();
	pthread_atfork(prepare, parent, child);
	kiln_htrace_dump_load();
	kiln_cpuenv_load();
	kiln_draw_install();
	kiln_http_load();
	kiln_htrace_load();
}

/* The trace's end first, then the last heap dump (the order the two
 * destructors ran in: last-linked first). */
__attribute__((destructor)) static void kiln_runtime_fini(void)
{
	/* Light at exit: the last heap dump reads no DWARF from the debug
	 * file cache that its session had not read before. */
	kiln_sym_close_debug_cache();
	kiln_htrace_fini();
	kiln_htrace_dump_fini();
}

/*
 * _exit()/_Exit(): the CPU profile, then the heap trace (streamed: what
 * is still in the rings, all of a short child's work, is written now or
 * never).  Each writes only in the process that owns its file (never a
 * fork or vfork child, which must not touch a vfork parent's memory).
 */
void kiln_life_before_exit(void)
{
	kiln_cpuenv_before_exit();
	kiln_htrace_exit_flush();
}

/*
 * exec: the profile so far is written first (else its samples, and the
 * temporary opened at the start, are lost); the new image, same pid,
 * starts a profile of its own into PATH, which keeps this one as
 * PATH.old.  In this order: the CPU profile, the heap trace (what the
 * rings still hold is written now, or lost with the image; the new image
 * keeps the trace as PATH.old), the image's last heap dump (KILN_HEAP).
 */
void kiln_life_before_exec(void)
{
	kiln_cpuenv_before_exec();
	kiln_htrace_exec_flush();
	kiln_htrace_dump_before_exec();
}

/*
 * A library goes: the modules are noted for the CPU profile and heap
 * profile dumps (the collector, which notes them when the set changes,
 * may not have run since it was loaded), the heap trace writes the maps
 * and stacks so far.
 */
void kiln_life_fork_started(void)
{
	int err = errno;

	/* Not in the fork handler: it starts a thread of kiln's (the
	 * collector), which the closed gate would hold back. */
	kiln_cpuenv_fork_started();
	errno = err;
}

void kiln_life_before_dlclose(void)
{
	int err = errno;

	kiln_rt_quiet_begin();
	/* The modules gone are named from these notes by the CPU profile
	 * and by heap profile dumps (KILN_HEAP, /debug/pprof/heap). */
	if (kiln_sampler_running() || kiln_htrace_profiling())
		kiln_procprof_modules_note();
	kiln_htrace_dlclose_flush();
	kiln_rt_quiet_end();
	errno = err;
}

/*
 * An exec that returns has failed: the image goes on, and so does what
 * kiln_life_before_exec() ended -- the CPU profile starts again (the heap
 * trace never stopped).  errno is the exec's, for the program.
 */
void kiln_life_after_exec(void)
{
	int err = errno;

	kiln_rt_quiet_begin();
	kiln_cpuenv_after_exec();
	kiln_rt_quiet_end();
	errno = err;
}

/*
 * The program gives up privileges: the CPU profile's file is prepared
 * (cpu/envprof.c).  The heap trace needs nothing: it is written in place
 * through the descriptor it holds from its start.
 */
void kiln_life_before_setid(void)
{
	int err = errno;

	kiln_rt_quiet_begin();
	kiln_cpuenv_before_setid();
	kiln_rt_quiet_end();
	errno = err;
}
