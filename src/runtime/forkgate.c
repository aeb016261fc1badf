/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fork safety for kiln's own threads (runtime stage).
 *
 * fork() copies the memory of every thread but runs only the caller in the
 * child.  A lock that another thread held at that instant stays held in the
 * child for ever.  glibc's malloc guards its own arenas across fork, but
 * not every allocator does: GCC 12's AddressSanitizer (no fork interceptor)
 * leaves a size class's region mutex locked in the child when another
 * thread was refilling its cache at the instant of the fork, and the
 * child's next malloc of that size waits for ever.  kiln's threads allocate
 * (a sanitizer runtime even does so while it sets a new thread up, before
 * the thread's function runs), so they keep out of the way: their work
 * that may allocate runs inside a busy section, and a fork of the program
 * waits until no kiln thread is in one, and keeps new ones from starting
 * until the fork is done.  The wait happens in an interposed fork(), before
 * any pthread_atfork prepare handler runs: those of an allocator or of
 * kiln's heap tracer take locks that a busy kiln thread's malloc needs.
 * A prepare handler does the same for forks that do not go through the
 * exported fork() (glibc's daemon() and forkpty() call it internally).
 *
 * The wait is bounded (FORK_WAIT_MS): a kiln thread could be blocked on a
 * lock the forking thread holds (an allocator whose own prepare handler
 * ran first, a fork from inside a dlopen constructor); the fork then goes
 * on, as it would without kiln, and KILN_LOG=info says so.  The agent must
 * never hang its host.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <time.h>
#include <unistd.h>

#include "runtime/forkgate.h"
#include "runtime/log.h"

/* Kiln's longest busy sections (symbolizing a profile for a write) take
 * this long at most in practice; a stuck one is not waited out longer. */
#define FORK_WAIT_MS 2000

static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_idle;	/* CLOCK_MONOTONIC; busy dropped to 0 */
static unsigned gate_busy;		/* kiln threads in busy sections */
/* Set while fork() below has closed the gate: the handlers leave it. */
static __thread bool in_fork __attribute__((tls_model("initial-exec")));

void kiln_rt_busy_begin(void)
{
	/* Blocks while a fork is under way (the prepare handler holds the
	 * lock until the fork is done). */
	pthread_mutex_lock(&gate_lock);
	gate_busy++;
	pthread_mutex_unlock(&gate_lock);
}

void kiln_rt_busy_end(void)
{
	pthread_mutex_lock(&gate_lock);
	if (!--gate_busy)
		pthread_cond_broadcast(&gate_idle);
	pthread_mutex_unlock(&gate_lock);
}

/* Waits for the busy sections to end and returns holding gate_lock. */
static void gate_close(void)
{
	struct timespec deadline;
	int rc = 0;

	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += FORK_WAIT_MS / 1000;
	deadline.tv_nsec += (long)(FORK_WAIT_MS % 1000) * 1000000;
	if (deadline.tv_nsec >= 1000000000) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&gate_lock);
	while (gate_busy && rc != ETIMEDOUT)
		rc = pthread_cond_timedwait(&gate_idle, &gate_lock, &deadline);
	if (gate_busy)
		kiln_rt_log(KILN_LOG_INFO, "fork: %u kiln thread(s) still busy "
			       "after %d ms: forking anyway", gate_busy, FORK_WAIT_MS);
}

void kiln_rt_gate_prepare(void)
{
	/* Held across the fork: released by gate_parent(), reset in the
	 * child. */
	if (!in_fork)
		gate_close();
}

void kiln_rt_gate_parent(void)
{
	if (!in_fork)
		pthread_mutex_unlock(&gate_lock);
}

static void init_cond(void)
{
	pthread_condattr_t a;

	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(&gate_idle, &a);
	pthread_condattr_destroy(&a);
}

void kiln_rt_gate_child(void)
{
	/* No kiln thread exists here; nobody waits on the old condition. */
	gate_busy = 0;
	pthread_mutex_init(&gate_lock, NULL);
	init_cond();
}

void kiln_rt_gate_init(void)
{
	static bool done;

	if (done)
		return;
	done = true;
	init_cond();
}

void kiln_rt_fork_enter(void)
{
	gate_close();
	in_fork = true;
}

void kiln_rt_fork_leave(pid_t pid)
{
	in_fork = false;
	/* The child's gate was reset by gate_child(). */
	if (pid)
		pthread_mutex_unlock(&gate_lock);
}
