/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for capture/offcpu.c: off-CPU intervals and wall-time weights
 * from synthetic sched_switch samples and switch records (no tracefs or
 * root needed), and the state names of prev_state.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "capture/offcpu.h"
#include "session/record.h"
#include "profile/profile.h"

#define TP 372		/* common_type of sched_switch */
#define STATE_OFF 32

static struct kiln_rec *new_rec(bool wall)
{
	struct kiln_rec_opts o = { 0 };

	o.callgraph = KILN_CG_FP;
	o.event = "cpu-clock";
	o.ns_values = true;
	o.period_ns = 1000000;
	o.value_type = wall ? "wall/nanoseconds" : "off-cpu/nanoseconds";
	o.wall = wall;
	o.start_ns = 1000;
	return kiln_rec_new(&o);
}

/* A sched_switch sample of tid at time t leaving with prev_state. */
static void switch_out(struct kiln_offcpu *oc, uint32_t tid, uint64_t t,
		       uint64_t ip, int64_t state)
{
	static char raw[64];
	struct kiln_perf_event ev;
	uint16_t type = TP;

	memset(&ev, 0, sizeof(ev));
	memset(raw, 0, sizeof(raw));
	memcpy(raw, &type, 2);
	memcpy(raw + STATE_OFF, &state, 8);
	ev.kind = KILN_PERF_SAMPLE;
	ev.time = t;
	ev.sample.pid = 100;
	ev.sample.tid = tid;
	ev.sample.time = t;
	ev.sample.ip = ip;
	ev.sample.period = 1;
	ev.sample.user = true;
	ev.sample.raw = raw;
	ev.sample.raw_size = sizeof(raw);
	kiln_offcpu_event(oc, &ev);
}

static void sw(struct kiln_offcpu *oc, uint32_t tid, uint64_t t, bool out)
{
	struct kiln_perf_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.kind = KILN_PERF_SWITCH;
	ev.time = t;
	ev.sw.pid = 100;
	ev.sw.tid = tid;
	ev.sw.out = out;
	kiln_offcpu_event(oc, &ev);
}

static void cpu_sample(struct kiln_offcpu *oc, uint32_t tid, uint64_t t,
		       uint64_t ip)
{
	struct kiln_perf_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.kind = KILN_PERF_SAMPLE;
	ev.time = t;
	ev.sample.pid = 100;
	ev.sample.tid = tid;
	ev.sample.time = t;
	ev.sample.ip = ip;
	ev.sample.period = 1000000;
	ev.sample.user = true;
	kiln_offcpu_event(oc, &ev);
}

/* Total of type 1 over samples whose leaf address is ip and whose state
 * label is state (NULL: any). */
static int64_t total_at(const struct kiln_prof *p, uint64_t ip,
			const char *state)
{
	int64_t sum = 0;
	size_t i;
	uint32_t j, k_state = kiln_prof_find_str(p, "state", 5);

	for (i = 0; i < p->nsamples; i++) {
		const struct kiln_sample *s = &p->samples[i];
		const struct kiln_labelset *ls = &p->labelsets[s->labels];
		const char *st = NULL;

		if (p->locations[kiln_prof_sample_locs(p, s)[0]].address != ip)
			continue;
		for (j = 0; j < ls->n; j++)
			if (p->labels[ls->first + j].key == k_state)
				st = kiln_prof_str(p, p->labels[ls->first + j].str);
		if (state && (!st || strcmp(st, state)))
			continue;
		sum += kiln_prof_value(p, i, 1);
	}
	return sum;
}

static void test_states(void **state)
{
	(void)state;
	assert_string_equal(kiln_offcpu_state(0), "runnable");
	assert_string_equal(kiln_offcpu_state(0x100), "runnable");	/* R+ */
	assert_string_equal(kiln_offcpu_state(0x1), "sleeping");
	assert_string_equal(kiln_offcpu_state(0x2), "blocked-io");
	assert_string_equal(kiln_offcpu_state(0x4), "other");
}

/* Off CPU from the sched_switch sample to the switch-in, per thread. */
static void test_intervals(void **state)
{
	struct kiln_rec *r = new_rec(false);
	struct kiln_offcpu_sink sink;
	struct kiln_offcpu *oc;
	struct kiln_prof *p;

	(void)state;
	assert_non_null(r);
	kiln_rec_sink(r, &sink);
	oc = kiln_offcpu_new_layout(&sink, TP, STATE_OFF, 8, false);
	assert_non_null(oc);
	switch_out(oc, 100, 10000, 0x1000, 1);	/* sleeps at 0x1000 */
	switch_out(oc, 101, 12000, 0x2000, 2);	/* D at 0x2000 */
	sw(oc, 101, 12500, false);
	sw(oc, 100, 510000, false);		/* back after 500 us */
	sw(oc, 100, 600000, true);
	switch_out(oc, 100, 600000, 0x1000, 0x100);	/* preempted */
	sw(oc, 999, 700000, false);		/* another thread: nothing */
	sw(oc, 100, 800000, false);
	/* Still waiting when the recording stops: counted up to the stop;
	 * gone (EXIT) while off CPU: not counted. */
	switch_out(oc, 101, 900000, 0x3000, 1);
	switch_out(oc, 102, 900000, 0x6000, 1);
	{
		struct kiln_perf_event ev;

		memset(&ev, 0, sizeof(ev));
		ev.kind = KILN_PERF_EXIT;
		ev.task.pid = ev.task.ppid = 100;
		ev.task.tid = ev.task.ptid = 102;
		kiln_offcpu_event(oc, &ev);
	}
	kiln_offcpu_finish(oc, 1000000);
	assert_int_equal(kiln_offcpu_intervals(oc), 4);
	p = kiln_rec_detach(r);
	assert_non_null(p);
	assert_string_equal(kiln_prof_str(p, p->types[1].type), "off-cpu");
	assert_int_equal(total_at(p, 0x1000, "sleeping"), 500000);
	assert_int_equal(total_at(p, 0x1000, "runnable"), 200000);
	assert_int_equal(total_at(p, 0x2000, "blocked-io"), 500);
	assert_int_equal(total_at(p, 0x3000, "sleeping"), 100000);
	assert_int_equal(total_at(p, 0x6000, NULL), 0);
	kiln_prof_free(p);
	kiln_offcpu_free(oc);
	kiln_rec_free(r);
}

/* --wall: a cpu-clock sample weighs the CPU time since the previous one,
 * measured from switches; with the off-CPU intervals a thread's values
 * add up to the time from its first switch-in to its last event. */
static void test_wall(void **state)
{
	struct kiln_rec *r = new_rec(true);
	struct kiln_offcpu_sink sink;
	struct kiln_offcpu *oc;
	struct kiln_prof *p;

	(void)state;
	assert_non_null(r);
	kiln_rec_sink(r, &sink);
	oc = kiln_offcpu_new_layout(&sink, TP, STATE_OFF, 8, true);
	assert_non_null(oc);
	cpu_sample(oc, 100, 5000, 0x9000);	/* before any switch: period */
	sw(oc, 100, 100000, false);
	cpu_sample(oc, 100, 400000, 0x4000);	/* ran 300 us */
	switch_out(oc, 100, 450000, 0x5000, 1);
	sw(oc, 100, 450000, true);		/* ran 50 us more */
	sw(oc, 100, 1450000, false);		/* slept 1 ms */
	cpu_sample(oc, 100, 1500000, 0x4000);	/* 50 + 50 us */
	p = kiln_rec_detach(r);
	assert_non_null(p);
	assert_string_equal(kiln_prof_str(p, p->types[1].type), "wall");
	assert_int_equal(total_at(p, 0x9000, "running"), 1000000);
	assert_int_equal(total_at(p, 0x4000, "running"), 400000);
	assert_int_equal(total_at(p, 0x5000, "sleeping"), 1000000);
	/* 100 us .. 1500 us: 1.4 ms, all of it accounted for. */
	assert_int_equal(total_at(p, 0x4000, NULL) + total_at(p, 0x5000, NULL),
			 1400000);
	kiln_prof_free(p);
	kiln_offcpu_free(oc);
	kiln_rec_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_states),
		cmocka_unit_test(test_intervals),
		cmocka_unit_test(test_wall),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
