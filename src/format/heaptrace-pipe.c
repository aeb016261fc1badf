/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The heap trace's analysis in a thread of its own (format stage): while
 * the reader inflates and decodes the next frames (heaptrace-stream.c,
 * heaptrace.c), this thread applies the batches it decoded to the
 * analysis (profile/hbatch.h), in the order they were sent.  The
 * analysis is one sequence of calls either way, so the results are those
 * of reading in one thread, to the bit; only the work is split over two
 * cores.
 *
 * A few batches go round: the reader fills one while the thread applies
 * another; when the thread falls behind the reader waits for a free one
 * (memory stays bounded), when the reader does the thread sleeps.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "format/heaptraceint.h"
#include "profile/hbatch.h"
#include "profile/hprof.h"
#include "util/diag.h"

/* Batches in all, the reader's included. */
#define NBATCH 4

struct kiln_heaptrace_pipe {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t work;		/* to the thread: a batch, or quit */
	pthread_cond_t done;		/* to the reader: one applied */
	struct kiln_hprof *h;
	/* Sent and not yet taken, oldest first (a ring). */
	struct kiln_hprof_batch queue[NBATCH];
	size_t first, nqueued;
	/* Empty ones for the reader. */
	struct kiln_hprof_batch spare[NBATCH];
	size_t nspare;
	bool busy;			/* the thread is applying one */
	bool quit;
	int err;			/* the first error applying; sticky */
	/* kiln_heaptrace_pipe_pays(): the stretch being judged. */
	clockid_t clock;		/* the thread's CPU clock */
	uint64_t since, cpu_since;	/* its start: wall, both threads' CPU */
};

/* Pays off: CPU time over wall time, in 1/100. */
#define PAYS_RATIO 115
#define PAYS_STRETCH_NS 100000000ull

static uint64_t clock_ns(clockid_t c)
{
	struct timespec ts;

	if (clock_gettime(c, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The CPU time of the reader's thread and of the pipe's. */
static uint64_t cpu_ns(const struct kiln_heaptrace_pipe *p)
{
	return clock_ns(CLOCK_THREAD_CPUTIME_ID) + clock_ns(p->clock);
}

bool kiln_heaptrace_pipe_pays(struct reader *r)
{
	struct kiln_heaptrace_pipe *p = r->pipe;
	uint64_t now = clock_ns(CLOCK_MONOTONIC), cpu;

	if (now - p->since < PAYS_STRETCH_NS)
		return true;
	cpu = cpu_ns(p);
	if ((cpu - p->cpu_since) * 100 < (now - p->since) * PAYS_RATIO)
		return false;
	p->since = now;
	p->cpu_since = cpu;
	return true;
}

static void *run(void *arg)
{
	struct kiln_heaptrace_pipe *p = arg;
	struct kiln_hprof_batch b;
	int err;

	pthread_mutex_lock(&p->mu);
	for (;;) {
		while (!p->nqueued && !p->quit)
			pthread_cond_wait(&p->work, &p->mu);
		if (!p->nqueued)
			break;
		b = p->queue[p->first];
		p->first = (p->first + 1) % NBATCH;
		p->nqueued--;
		p->busy = true;
		err = p->err;
		pthread_mutex_unlock(&p->mu);
		/* After an error the rest is dropped (emptied). */
		if (!err)
			err = kiln_hprof_apply(p->h, &b);
		b.nev = b.nop = b.npcs = b.ntext = 0;
		pthread_mutex_lock(&p->mu);
		if (err && !p->err)
			p->err = err;
		p->spare[p->nspare++] = b;
		p->busy = false;
		pthread_cond_signal(&p->done);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

static void pipe_free(struct kiln_heaptrace_pipe *p)
{
	size_t i;

	for (i = 0; i < p->nspare; i++)
		kiln_hprof_batch_release(&p->spare[i]);
	for (i = 0; i < p->nqueued; i++)
		kiln_hprof_batch_release(&p->queue[(p->first + i) % NBATCH]);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->work);
	pthread_cond_destroy(&p->done);
	free(p);
}

/* The thread's error, said as the reader says it in one thread (the
 * decoder checked the stacks: -EINVAL does not happen). */
static int said(struct reader *r, int err)
{
	if (err != -EINVAL)
		return err;
	return kiln_diag(r->d, "byte %zu (zstd frame %zu): the analysis refused a "
			 "stack or an event", r->frame_off, r->nframe);
}

int kiln_heaptrace_pipe_start(struct reader *r)
{
	struct kiln_heaptrace_pipe *p = calloc(1, sizeof(*p));
	sigset_t all, old;
	int err;

	if (!p)
		return -ENOMEM;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->work, NULL);
	pthread_cond_init(&p->done, NULL);
	p->h = r->h;
	for (p->nspare = 0; p->nspare < NBATCH - 1; p->nspare++) {
		if (kiln_hprof_batch_init(&p->spare[p->nspare], r->batch.cap)) {
			pipe_free(p);
			return -ENOMEM;
		}
	}
	/* The command's signals stay with its own threads. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&p->thread, NULL, run, p);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		pipe_free(p);
		return err == ENOMEM ? -ENOMEM : -EAGAIN;
	}
	pthread_setname_np(p->thread, "kiln-heapread");
	if (pthread_getcpuclockid(p->thread, &p->clock))
		p->clock = CLOCK_THREAD_CPUTIME_ID;	/* counted twice */
	p->since = clock_ns(CLOCK_MONOTONIC);
	p->cpu_since = cpu_ns(p);
	r->pipe = p;
	r->info->read_threads = 2;
	return 0;
}

int kiln_heaptrace_pipe_send(struct reader *r)
{
	struct kiln_heaptrace_pipe *p = r->pipe;
	int err;

	pthread_mutex_lock(&p->mu);
	while (!p->nspare && !p->err)
		pthread_cond_wait(&p->done, &p->mu);
	err = p->err;
	if (!err) {
		p->queue[(p->first + p->nqueued) % NBATCH] = r->batch;
		p->nqueued++;
		r->batch = p->spare[--p->nspare];
		pthread_cond_signal(&p->work);
	} else {
		r->batch.nev = r->batch.nop = r->batch.npcs = r->batch.ntext = 0;
	}
	pthread_mutex_unlock(&p->mu);
	return said(r, err);
}

int kiln_heaptrace_pipe_wait(struct reader *r)
{
	struct kiln_heaptrace_pipe *p = r->pipe;
	int err;

	pthread_mutex_lock(&p->mu);
	while (p->nqueued || p->busy)
		pthread_cond_wait(&p->done, &p->mu);
	err = p->err;
	pthread_mutex_unlock(&p->mu);
	return said(r, err);
}

void kiln_heaptrace_pipe_stop(struct reader *r)
{
	struct kiln_heaptrace_pipe *p = r->pipe;

	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->quit = true;
	pthread_cond_signal(&p->work);
	pthread_mutex_unlock(&p->mu);
	pthread_join(p->thread, NULL);
	pipe_free(p);
	r->pipe = NULL;
}
