/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A selection's timed samples in (thread, time) order, for the stack
 * chart (web stage, internal to src/web/: timed.c makes them, api-stack.c
 * reads them).  timed.c's timed_samples() is the one place the stack
 * chart reads sample times.
 */
#ifndef KILN_WEB_TIMED_H
#define KILN_WEB_TIMED_H

#include <stddef.h>
#include <stdint.h>

struct kiln_prof;

/* One timed sample of the selection: an event of the profile's time
 * column (profile.h), the part of a sample taken at time t. */
struct timed_sample {
	int64_t t;		/* ns since the recording's start */
	int64_t pid, tid;	/* -1 when the sample does not say */
	uint32_t sample;	/* index in p->samples */
	uint32_t stack;		/* the first sample with the same stack */
	int64_t v;		/* its value of the view's type at t */
};

/* A thread's slice of the ordered samples. */
struct timed_thread {
	int64_t pid, tid, total;
	uint32_t name;		/* string id of thread_name or comm, 0 */
	size_t first, n;
};

struct web_timed {
	int type;
	struct timed_sample *s;
	size_t n;
	struct timed_thread *th;	/* busiest first */
	size_t nth;
	int64_t end;			/* the last sample's time + its step */
	int64_t step;			/* one sample's time when alone */
};

/*
 * Orders the timed samples of p with a value of type `type` by thread
 * and time, numbers their stacks (the same function names root to leaf:
 * the same `stack`), and splits them by thread, busiest first.  *out is
 * freed with kiln_web_timed_free() (webint.h).  0 or -ENOMEM.
 */
int kiln_web_timed_build(struct kiln_prof *p, int type,
			 struct web_timed **out);

#endif
