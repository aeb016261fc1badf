/*
 * The in-process agent (agent stage): what libkiln.so does inside someone
 * else's process.  The CPU sampler (cpu.c) arms per-thread CPU-time timers
 * whose SIGPROF handler unwinds the interrupted stack into a lock-free
 * buffer; a collector thread aggregates the stacks; a profile is built
 * and symbolized only when it is written.  See docs/agent.md.
 */
#ifndef KILN_AGENT_AGENT_H
#define KILN_AGENT_AGENT_H

#include <stdbool.h>
#include <stdint.h>

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

struct sigaction;
/* Whether act installs the agent's own SIGPROF handler. */
bool kiln_agent_is_own_handler(const struct sigaction *act);

/* Logging on stderr when KILN_LOG=debug (or info); printf-like. */
void kiln_agent_log(int level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
enum { KILN_LOG_ERROR, KILN_LOG_INFO, KILN_LOG_DEBUG };

#endif
