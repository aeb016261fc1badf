/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The perf_event sampler's insides (capture stage), shared by perf.c (the
 * events' attributes, the events opened), perfring.c (the rings emptied,
 * the reader thread) and perfrec.c (records parsed into events).
 */
#ifndef KILN_CAPTURE_PERFINT_H
#define KILN_CAPTURE_PERFINT_H

#include <linux/perf_event.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "capture/perf.h"
#include "util/buf.h"

#ifndef PERF_RECORD_MISC_MMAP_BUILD_ID
#define PERF_RECORD_MISC_MMAP_BUILD_ID (1 << 14)
#endif
#ifndef PERF_RECORD_MISC_SWITCH_OUT_PREEMPT
#define PERF_RECORD_MISC_SWITCH_OUT_PREEMPT (1 << 14)
#endif

#define SAMPLE_TYPE_BASE (PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | \
			  PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN)

struct ring {
	int fd;			/* the event whose buffer this is */
	int cpu;
	void *base;		/* metadata page + data pages */
	size_t data_size;
	size_t map_len;
};

struct kiln_perf {
	struct perf_event_attr attr;
	size_t pages;
	int ncpus;
	bool *cpu_off;		/* CPUs left out by kiln_perf_set_cpus() */
	struct ring *rings;	/* one per CPU, fd -1 until opened */
	int *fds;		/* every event fd */
	size_t nfds, fds_alloc;
	uint64_t lost;
	uint64_t regs_mask;
	bool no_build_id;	/* the kernel refused attr.build_id */
	bool kernel_time;	/* kernel-mode samples wanted without frames */
	bool has2;		/* a second event shares the buffers */
	struct perf_event_attr attr2;
	bool stack_fixed_layout;	/* samples are SAMPLE_TYPE_BASE + [raw] +
					 * regs + stack (both events'):
					 * copy_sample_short() applies */
	struct kiln_buf arena;	/* records copied out of the rings */

	/* kiln_perf_one_event_per_thread() (perfown.c). */
	bool one_per_thread;
	bool task_counts;		/* attr.inherit_stat when inherited */
	uint32_t open_seq;	/* kiln_perf_open() calls so far */
	struct kperf_own *own;
	uint64_t dropped_twice;

	/* The reader thread (kiln_perf_start_reader). */
	bool reader_on;
	pthread_t reader;
	pthread_mutex_t lock;	/* the rings' tails, pending, reader_err */
	pthread_cond_t more;	/* pending grew */
	struct kiln_buf pending;	/* records the reader copied out */
	size_t pending_cap;	/* it copies no more while pending holds this */
	int ring_next;		/* the ring a copy starts at */
	int stop_pipe[2];
	int reader_err;
};


/* perfrec.c: the sample_id trailer's size of non-sample records (pid,
 * tid, time, cpu, and the identifier where asked). */
size_t kperf_trailer(const struct kiln_perf *s);
/* perfrec.c: the record's event id (PERF_SAMPLE_IDENTIFIER: the id of
 * the event opened, for an inherited one too), or 0 where not asked. */
uint64_t kperf_rec_id(const struct kiln_perf *s, const char *rec);

/* perfown.c: notes event fd as opened on thread tid.  0 or -errno. */
int kperf_own_add(struct kiln_perf *s, int fd, pid_t tid);
/* perfown.c: the events opened while disabled begin counting now. */
void kperf_own_enabled(struct kiln_perf *s);
/* perfown.c: whether ev (parsed from rec) is taken: false for a sample
 * or switch of a thread that a newer event counted at the same time.
 * Fills a FORK or EXIT record's by_tid and by_seq. */
bool kperf_own_keep(struct kiln_perf *s, const char *rec,
		    struct kiln_perf_event *ev);
void kperf_own_free(struct kiln_perf *s);

/* perfrec.c: a record's time (0: none); the record parsed into ev, 0, or
 * 1 for a record of no interest, or -EINVAL if malformed. */
uint64_t kperf_rec_time(const struct kiln_perf *s, const char *rec);
int kperf_parse(const struct kiln_perf *s, const char *rec,
		struct kiln_perf_event *ev);

#endif
