/*
 * The in-process agent (agent stage): what libkiln.so does inside someone
 * else's process.  The CPU sampler (cpu.c) arms per-thread CPU-time timers
 * whose SIGPROF handler unwinds the interrupted stack into a lock-free
 * buffer; a collector thread aggregates the stacks; a profile is built
 * and symbolized only when it is written.  See docs/agent.md.
 */
#ifndef KILN_AGENT_AGENT_H
#define KILN_AGENT_AGENT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "symbolize/maptab.h"

struct kiln_prof;

/* The sampling engine in use. */
enum kiln_agent_engine {
	KILN_ENGINE_NONE,
	KILN_ENGINE_THREAD_TIMERS,	/* timer_create per thread (CPU time) */
	KILN_ENGINE_ITIMER,		/* setitimer(ITIMER_PROF), process-wide */
};

/*
 * Starts a CPU profile at hz samples per CPU second.  0, -EBUSY (one is
 * running), -EINVAL (bad hz), -EEXIST (the program has its own SIGPROF
 * handler: the agent steps aside), -errno.
 */
int kiln_agent_cpu_begin(int hz);

/*
 * Stops the profile and returns it, symbolized, with the sample types
 * samples/count and cpu/nanoseconds (caller frees).  -ENOENT if none
 * runs, -ENOMEM.
 */
int kiln_agent_cpu_end(struct kiln_prof **out);

bool kiln_agent_cpu_running(void);
enum kiln_agent_engine kiln_agent_engine(void);

/*
 * Registers the calling thread and the fork handler; called once by the
 * library constructor (idempotent).
 */
void kiln_agent_cpu_init(void);

/*
 * Starts a thread of kiln's own running fn(arg): all signals blocked,
 * never sampled, kept out of the program's forks (see
 * kiln_agent_busy_begin()) from its creation until fn runs (a sanitizer's
 * runtime allocates while it sets a thread up) and, unless detached, from
 * fn's return until kiln_agent_thread_join() (it tears the thread down),
 * which such a thread needs.  0 or -errno.
 */
int kiln_agent_thread_start(pthread_t *t, void *(*fn)(void *), void *arg,
			    bool detached);

/* Joins a thread started by kiln_agent_thread_start(); its return value
 * is lost.  0 or -errno. */
int kiln_agent_thread_join(pthread_t t);

/*
 * A kiln thread's work that may allocate (or take a lock a forked child
 * would need) runs between these two: a fork() of the program waits for
 * every such section to end (2 s at most, then forks anyway) and holds
 * new ones back until it is done, so that the child never inherits a lock
 * held by a thread that does not exist there (see fork.c).  Sections of
 * several threads count; not for signal handlers; never call fork()
 * inside one.
 */
void kiln_agent_busy_begin(void);
void kiln_agent_busy_end(void);

/* Registers the fork gate's handlers; called by kiln_agent_cpu_init(). */
void kiln_agent_fork_init(void);

/*
 * Gives the calling thread an alternate signal stack of kiln's if it has
 * none (one the program set is kept); false if it could not.
 * Async-signal-safe.  kiln_agent_altstack_release() unmaps kiln's when
 * the thread ends (the program's is never touched).  altstack.c.
 */
bool kiln_agent_altstack_ensure(void);
void kiln_agent_altstack_release(void);

struct sigaction;
/* Whether act installs the agent's own SIGPROF handler. */
bool kiln_agent_is_own_handler(const struct sigaction *act);

/* The value of variable a, else of its alias b; NULL when both are unset
 * or empty. */
const char *kiln_agent_env2(const char *a, const char *b);

/* Remembers which file fd 2 is (called first by every constructor;
 * idempotent): messages go there only while it still is, see log.c. */
void kiln_agent_log_init(void);

/*
 * path made absolute against the working directory now (malloc'ed; NULL
 * when out of memory): an output's path is resolved once, when the agent
 * loads, so that a program that changes directory, and its children,
 * write where the user asked.  docs/agent.md.
 */
char *kiln_agent_abspath(const char *path);

/* Logging on stderr when KILN_LOG=debug (or info); printf-like. */
void kiln_agent_log(int level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
enum { KILN_LOG_ERROR, KILN_LOG_INFO, KILN_LOG_DEBUG };

/* ---- profiles of this process (procprof.c) ---- */

/* The executable mappings of /proc/self/maps, added to profile p. */
struct kiln_agent_maps {
	struct kiln_maptab t;
};

/* Holds this process's /proc folder open (kiln's fd), so that the maps
 * are read even after the program chroots.  Called when a profile
 * starts; idempotent. */
void kiln_agent_proc_hold(void);

/*
 * Reads /proc/self/maps into m and p's mappings, with the libraries
 * unloaded since they were noted (kiln_agent_modules_add_gone()).
 * 0 or -errno.
 */
int kiln_agent_maps_load(struct kiln_agent_maps *m, struct kiln_prof *p);
/* The mapping id holding addr, 0 for none. */
uint32_t kiln_agent_maps_find(const struct kiln_agent_maps *m, uint64_t addr);
void kiln_agent_maps_release(struct kiln_agent_maps *m);

/* ---- modules once mapped (modules.c) ---- */

/*
 * Notes the shared libraries mapped now (path, load address, executable
 * segments), adding those not seen before.  Called by the collector when
 * the loader's set changes and by kiln's dlclose() before the real one.
 */
void kiln_agent_modules_note(void);
/*
 * Adds to t and p the executable segments of noted libraries that no
 * range of t covers (unloaded since), as mappings of their files, so
 * that samples taken in them are symbolized from the files on disk.
 * 0 or -ENOMEM.
 */
int kiln_agent_modules_add_gone(struct kiln_maptab *t, struct kiln_prof *p);

/*
 * Symbolizes p in place, lightly (the agent's options: no debuginfod),
 * with kiln_sym_prof() flags sym_flags, and adds the command line as a
 * comment.  0 or -errno.
 */
int kiln_agent_prof_finish(struct kiln_prof *p, unsigned sym_flags);

/* ---- heap profiles (heapdump.c) ---- */

struct kiln_heap_snap;

/*
 * A pprof heap profile of snapshot now, or of now minus base (a
 * difference over time) when base is not NULL: sample types
 * alloc_objects/count, alloc_space/bytes, inuse_objects/count,
 * inuse_space/bytes, period type space/bytes, default inuse_space (or
 * alloc_space with allocs), symbolized.  *out is the caller's.
 * 0 or -errno.
 */
int kiln_agent_heap_prof(const struct kiln_heap_snap *now,
			 const struct kiln_heap_snap *base, bool allocs,
			 struct kiln_prof **out);

/*
 * Starts heap profiling if it is off, takes a snapshot and writes it as
 * gzipped pprof to path (atomically).  0 or -errno.
 */
int kiln_agent_heap_write(const char *path);

#endif
