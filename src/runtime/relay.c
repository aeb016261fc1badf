/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The relay: signal handlers -> one thread of kiln's (runtime stage).  See
 * relay.h.
 */
#include "runtime/relay.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include "runtime/forkgate.h"
#include "runtime/log.h"
#include "runtime/threads.h"
#include "runtime/bell.h"

static void (*_Atomic work[KILN_RELAY_JOBS])(void);
static struct kiln_bell asked = KILN_BELL_INIT;	/* bit per job -> relay */
static struct kiln_bell done = KILN_BELL_INIT;	/* bit per job run <- relay */
static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic bool running;

static void *relay(void *arg)
{
	(void)arg;
	for (;;) {
		uint32_t bits = kiln_bell_take(&asked, -1);
		int j;

		for (j = 0; j < KILN_RELAY_JOBS; j++) {
			void (*fn)(void) = atomic_load(&work[j]);

			if (!(bits & 1u << j))
				continue;
			if (fn) {
				/* Work allocates and writes files: never while
				 * the program forks. */
				kiln_rt_busy_begin();
				fn();
				kiln_rt_busy_end();
			}
			kiln_bell_ring(&done, 1u << j);
		}
	}
	return NULL;
}

static int start(void)
{
	pthread_t t;
	int err = 0;

	pthread_mutex_lock(&start_lock);
	if (!atomic_load(&running)) {
		err = kiln_rt_thread_start(&t, "kiln-relay", relay, NULL, true);
		if (!err)
			atomic_store(&running, true);
	}
	pthread_mutex_unlock(&start_lock);
	return err;
}

int kiln_relay_set(enum kiln_relay_job job, void (*fn)(void))
{
	atomic_store(&work[job], fn);
	return fn ? start() : 0;
}

void kiln_relay_ask(enum kiln_relay_job job)
{
	kiln_bell_ring(&asked, 1u << job);
}

bool kiln_relay_ask_wait(enum kiln_relay_job job, int timeout_ms)
{
	if (!atomic_load(&running))
		return false;
	atomic_fetch_and(&done.bits, ~(1u << job));	/* an earlier run's */
	kiln_relay_ask(job);
	/* Another job's bit is dropped: nothing else waits. */
	return kiln_bell_wait_bit(&done, 1u << job, timeout_ms);
}

void kiln_relay_fork_child(void)
{
	int j;

	pthread_mutex_init(&start_lock, NULL);
	atomic_store(&running, false);
	atomic_store(&asked.bits, 0);
	atomic_store(&done.bits, 0);
	for (j = 0; j < KILN_RELAY_JOBS; j++) {
		if (atomic_load(&work[j])) {
			if (start())
				kiln_rt_log(KILN_LOG_ERROR, "no relay thread in "
					       "child %d: signals do nothing",
					       (int)getpid());
			break;
		}
	}
}
