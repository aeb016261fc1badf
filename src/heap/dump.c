/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Heap profiles of this process (heap stage): the gperftools-style
 * HEAPPROFILE dumps and what kiln_heap_write() and the /debug/pprof/heap
 * and /allocs endpoints answer.  A profile is a snapshot of the heap
 * aggregate that the writer thread of src/heap keeps (per stack:
 * allocations so far, live blocks now), turned into a pprof profile
 * (alloc_objects, alloc_space, inuse_objects, inuse_space; period type
 * space/bytes), symbolized in the process.  See docs/heap.md.
 *
 *   KILN_HEAP=PREFIX         (HEAPPROFILE)   profile the heap; dump
 *                                             PREFIX.0001.heap, ... (pprof)
 *   KILN_HEAP_INTERVAL=BYTES (HEAP_PROFILE_ALLOCATION_INTERVAL)
 *                            dump every BYTES allocated (default 1 GiB as
 *                            gperftools; 0: never)
 *   KILN_HEAP_SIGNAL=N       (HEAPPROFILESIGNAL)  dump on signal N
 * and a last dump at exit.
 *
 * The signal handler and the writer thread (for the interval) only ask
 * kiln's relay (relay.h: no fd the program could close and reuse), whose
 * thread makes the dump, so neither the program nor the writer waits for
 * a symbolizer.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/guard.h"
#include "runtime/env.h"
#include "runtime/relay.h"
#include "format/format.h"
#include "heap/htrace.h"
#include "profile/heapprof.h"
#include "profile/profile.h"
#include "util/buf.h"
#include "util/file.h"
#include "cpu/procprof.h"
#include "runtime/log.h"

#define MAX_DEPTH 128

static char *prefix;			/* KILN_HEAP, NULL: no dumps */
static pid_t owner;			/* the process that writes them */
static unsigned seq;			/* dumps so far */
static pthread_mutex_t dump_lock = PTHREAD_MUTEX_INITIALIZER;
static int dump_sig;			/* KILN_HEAP_SIGNAL */
static uint64_t interval;		/* KILN_HEAP_INTERVAL */
static _Atomic bool interval_pending;

/* The counters of stack id in base (sorted by stack), NULL if none. */
static const struct kiln_htrace_counts *base_of(const struct kiln_htrace_snap *b,
					      uint32_t id, size_t *pos)
{
	while (*pos < b->n && b->sites[*pos].stack < id)
		(*pos)++;
	return *pos < b->n && b->sites[*pos].stack == id ? &b->sites[*pos] : NULL;
}

int kiln_htrace_prof(const struct kiln_htrace_snap *now,
			 const struct kiln_htrace_snap *base, bool allocs,
			 struct kiln_prof **out)
{
	struct kiln_procprof_maps maps = { 0 };
	struct kiln_prof *p = kiln_prof_new();
	struct kiln_heapprof hp;
	size_t i, bpos = 0;
	int err;

	if (!p)
		return -ENOMEM;
	err = kiln_heapprof_init(&hp, p, KILN_HEAPPROF_GO, allocs, now->sample_bytes);
	if (err)
		goto out;
	p->time_nanos = base ? base->time_nanos : now->time_nanos;
	if (base)
		p->duration_nanos = now->time_nanos - base->time_nanos;
	err = kiln_procprof_maps_load(&maps, p);
	if (err)
		goto out;
	for (i = 0; i < now->n && !err; i++) {
		const struct kiln_htrace_counts *c = &now->sites[i];
		const struct kiln_htrace_counts *b = base ? base_of(base, c->stack, &bpos) : NULL;
		struct kiln_heapprof_counts d = {
			.alloc_objects = c->alloc_objects - (b ? b->alloc_objects : 0),
			.alloc_space = c->alloc_space - (b ? b->alloc_space : 0),
			.inuse_objects = c->inuse_objects - (b ? b->inuse_objects : 0),
			.inuse_space = c->inuse_space - (b ? b->inuse_space : 0),
		};
		const uint64_t *pcs;
		uint32_t depth;
		long idx;

		pcs = kiln_htrace_stack(c->stack, &depth);
		if (!pcs)
			continue;
		if (depth > MAX_DEPTH)
			depth = MAX_DEPTH;
		err = kiln_heapprof_add(&hp, &d, pcs, depth, &maps.t, &idx);
	}
	if (!err)
		err = kiln_prof_error(p);
	if (!err)
		err = kiln_procprof_finish(p, 0);
out:
	kiln_heapprof_release(&hp);
	kiln_procprof_maps_release(&maps);
	if (err) {
		kiln_prof_free(p);
		return err;
	}
	*out = p;
	return 0;
}

int kiln_htrace_write(const char *path)
{
	struct kiln_htrace_snap snap;
	struct kiln_prof *p = NULL;
	struct kiln_buf b = KILN_BUF_INIT;
	int err;

	kiln_rt_quiet_begin();
	err = kiln_htrace_profile_start();
	if (!err)
		err = kiln_htrace_snap_take(&snap);
	if (err)
		goto out;
	err = kiln_htrace_prof(&snap, NULL, false, &p);
	if (!err)
		err = kiln_pprof_write(p, &b, true);
	if (!err)
		err = kiln_write_atomic(path, b.data, b.len);
	if (err)
		kiln_rt_log(KILN_LOG_ERROR, "cannot write the heap profile '%s': %s",
			       path, strerror(-err));
	else
		kiln_rt_log(KILN_LOG_INFO, "wrote the heap profile '%s' (%zu stacks, "
			       "%zu live blocks followed)", path, p->nsamples,
			       snap.live_blocks);
	kiln_prof_free(p);
	kiln_buf_release(&b);
	kiln_htrace_snap_release(&snap);
out:
	kiln_rt_quiet_end();
	return err;
}

/* Writes PREFIX.NNNN.heap (the next number).  Not async-signal-safe. */
static void dump_next(const char *why)
{
	char name[4096];

	pthread_mutex_lock(&dump_lock);
	if (prefix && getpid() == owner) {
		snprintf(name, sizeof(name), "%s.%04u.heap", prefix, ++seq);
		kiln_rt_log(KILN_LOG_INFO, "heap profile dump %u (%s)", seq, why);
		kiln_htrace_write(name);
	}
	pthread_mutex_unlock(&dump_lock);
}

/*
 * Before an exec of this process (libkiln/interpose.c's exec interposers): the
 * image's heap so far, as the dump an exit would write.  The new image
 * numbers its dumps on from the last one (see kiln_htrace_dump_load()).
 */
void kiln_htrace_dump_before_exec(void)
{
	if (!prefix || getpid() != owner || !kiln_htrace_profiling())
		return;
	kiln_rt_quiet_begin();
	dump_next("exec");
	kiln_rt_quiet_end();
}

/* ---- triggers ---- */

/* Async-signal-safe: asks the relay for a dump. */
static void on_dump_signal(int sig)
{
	kiln_relay_ask(KILN_RELAY_HEAP_SIGNAL);
}

/* Called by the heap writer (its lock held): never blocks. */
static void on_interval(void)
{
	if (!atomic_exchange(&interval_pending, true))
		kiln_relay_ask(KILN_RELAY_HEAP_INTERVAL);
}

/* The relay's jobs (relay.h). */
static void signal_job(void)
{
	dump_next("signal");
}

static void interval_job(void)
{
	atomic_store(&interval_pending, false);
	dump_next("interval");
}

/*
 * A child after fork writes PREFIX.PID.NNNN.heap from 1, through a relay
 * thread of its own (the parent's is not its own: kiln_relay_fork_child()).
 */
static bool dump_forks;	/* dumps were started: a child takes them over */

void kiln_htrace_dump_fork_child(void)
{
	char *np;
	size_t n;

	if (!dump_forks)
		return;
	pthread_mutex_init(&dump_lock, NULL);
	if (!prefix)
		return;
	n = strlen(prefix) + 32;
	np = malloc(n);
	if (np) {
		snprintf(np, n, "%s.%d", prefix, (int)getpid());
		free(prefix);
		prefix = np;
	}
	owner = getpid();
	seq = 0;
	/* Its relay jobs stay set: the relay starts a thread in the child. */
	atomic_store(&interval_pending, false);
}

void kiln_htrace_dump_load(void)
{
	const struct kiln_env *e = kiln_env();
	int err;

	kiln_rt_log_init();
	if (!e->heap.base)
		return;
	kiln_rt_quiet_begin();
	owner = getpid();
	prefix = e->heap.path ? strdup(e->heap.path) : NULL;
	/* This very process after an exec: its earlier images' dumps stay;
	 * numbering goes on after the last one. */
	if (prefix && e->heap.again) {
		char name[4096];
		struct stat st;

		for (;;) {
			snprintf(name, sizeof(name), "%s.%04u.heap", prefix, seq + 1);
			if (stat(name, &st))
				break;
			seq++;
		}
	}
	interval = e->heap_interval;
	if (!prefix) {
		kiln_rt_log(KILN_LOG_ERROR, "heap profile: out of memory");
		goto out;
	}
	err = kiln_htrace_profile_start();
	if (err)
		goto out;	/* said why */
	dump_forks = true;	/* kiln_htrace_dump_fork_child() from now on */
	if ((interval && (err = kiln_relay_set(KILN_RELAY_HEAP_INTERVAL,
						interval_job))) ||
	    (e->heap_signal &&
	     (err = kiln_relay_set(KILN_RELAY_HEAP_SIGNAL, signal_job)))) {
		kiln_rt_log(KILN_LOG_ERROR, "heap profile: no dumps on signal or "
			       "interval: %s", strerror(-err));
		goto announce;
	}
	if (interval)
		kiln_htrace_on_interval(interval, on_interval);
	if (e->heap_signal) {
		struct sigaction sa;

		dump_sig = e->heap_signal;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_dump_signal;
		sa.sa_flags = SA_RESTART;
		sigemptyset(&sa.sa_mask);
		sigaction(dump_sig, &sa, NULL);
	}
announce:
	kiln_rt_log(KILN_LOG_INFO, "heap profile dumps to '%s.NNNN.heap' at exit%s%s",
		       prefix, dump_sig ? ", on a signal" : "",
		       interval ? ", every interval" : "");
out:
	kiln_rt_quiet_end();
}

/*
 * The last dump, after the program's atexit handlers and static
 * destructors (libkiln.so is loaded first, so its destructors run last):
 * the writer drains every thread first.
 */
void kiln_htrace_dump_fini(void)
{
	if (!prefix || getpid() != owner || !kiln_htrace_profiling())
		return;
	kiln_rt_quiet_begin();
	kiln_htrace_stop();
	dump_next("exit");
	kiln_rt_quiet_end();
}

