/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of event naming (src/capture/events.c) and of the counting
 * session (src/session/stat.c): perf's names and their encodings
 * (hardware-cache config = cache | op << 8 | result << 16), modifiers,
 * the closest names to a misspelt one, scaling by time enabled/running,
 * and a group of counters on this very process.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "capture/events.h"
#include "session/stat.h"

static void check(const char *name, uint32_t type, uint64_t config)
{
	struct kiln_event ev;

	assert_int_equal(kiln_event_parse(name, &ev), 0);
	assert_int_equal(ev.type, type);
	assert_int_equal(ev.config, config);
	assert_string_equal(ev.name, name);
}

static void test_names(void **state)
{
	struct kiln_event ev;

	(void)state;
	check("cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES);
	check("branches", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS);
	check("cs", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES);
	check("page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS);
	check("L1-dcache-loads", PERF_TYPE_HW_CACHE, 0x0);
	check("L1-dcache-load-misses", PERF_TYPE_HW_CACHE, 0x10000);
	check("L1-dcache-stores", PERF_TYPE_HW_CACHE, 0x100);
	check("L1-icache-load-misses", PERF_TYPE_HW_CACHE, 0x10001);
	check("LLC-loads", PERF_TYPE_HW_CACHE, 0x2);
	check("LLC-load-misses", PERF_TYPE_HW_CACHE, 0x10002);
	check("dTLB-loads", PERF_TYPE_HW_CACHE, 0x3);
	check("dTLB-load-misses", PERF_TYPE_HW_CACHE, 0x10003);
	check("iTLB-load-misses", PERF_TYPE_HW_CACHE, 0x10004);
	check("branch-loads", PERF_TYPE_HW_CACHE, 0x5);
	check("branch-load-misses", PERF_TYPE_HW_CACHE, 0x10005);
	check("node-prefetch-misses", PERF_TYPE_HW_CACHE, 0x10206);

	/* perf has no stores for the instruction cache. */
	assert_int_equal(kiln_event_parse("L1-icache-stores", &ev), -ENOENT);
	assert_int_equal(kiln_event_parse("no-such-event", &ev), -ENOENT);
	assert_int_equal(kiln_event_parse("", &ev), -ENOENT);

	assert_int_equal(kiln_event_parse("task-clock", &ev), 0);
	assert_true(ev.time_ns);
	assert_string_equal(ev.unit, "msec");
	assert_false(ev.counting);

	assert_int_equal(kiln_event_parse("cycles:u", &ev), 0);
	assert_true(ev.exclude_kernel);
	assert_false(ev.exclude_user);
	assert_string_equal(ev.name, "cycles:u");
	assert_int_equal(kiln_event_parse("page-faults:k", &ev), 0);
	assert_true(ev.exclude_user);
	assert_false(ev.exclude_kernel);
}

static void test_tracepoint(void **state)
{
	struct kiln_event ev;
	int err;

	(void)state;
	err = kiln_event_parse("sched:sched_switch", &ev);
	if (err == -ENODEV || err == -EACCES) {
		skip();
		return;
	}
	assert_int_equal(err, 0);
	assert_int_equal(ev.type, PERF_TYPE_TRACEPOINT);
	assert_true(ev.config > 0);
	assert_true(ev.counting);	/* period 1 by default, as perf */
	assert_int_equal(kiln_event_parse("sched:no_such_tracepoint", &ev), -ENOENT);
	assert_int_equal(kiln_event_parse("../sched:x", &ev), -ENOENT);
}

static void test_pmu(void **state)
{
	struct kiln_event ev;

	(void)state;
	if (access("/sys/bus/event_source/devices/software/type", R_OK)) {
		skip();
		return;
	}
	/* perf's raw config terms work on any PMU: the software PMU's
	 * context switches. */
	assert_int_equal(kiln_event_parse("software/config=3/", &ev), 0);
	assert_int_equal(ev.type, PERF_TYPE_SOFTWARE);
	assert_int_equal(ev.config, PERF_COUNT_SW_CONTEXT_SWITCHES);
	assert_int_equal(kiln_event_parse("software/nosuchterm=3/", &ev), -EINVAL);
	if (!access("/sys/bus/event_source/devices/msr/events/tsc", R_OK)) {
		assert_int_equal(kiln_event_parse("msr/tsc/", &ev), 0);
		assert_int_equal(ev.kind, KILN_EV_PMU);
		assert_int_equal(ev.config, 0);
		assert_int_equal(kiln_event_parse("msr/event=0x5/", &ev), 0);
		assert_int_equal(ev.config, 5);
		assert_int_equal(kiln_event_parse("msr/nosuchterm=1/", &ev), -EINVAL);
	}
	assert_int_equal(kiln_event_parse("nosuchpmu/x/", &ev), -ENOENT);
}

static void test_suggest(void **state)
{
	char *names[3];
	size_t n, i;

	(void)state;
	n = kiln_event_suggest("task-clok", names, 3);
	assert_true(n >= 1);
	assert_string_equal(names[0], "task-clock");
	for (i = 0; i < n; i++)
		free(names[i]);
	n = kiln_event_suggest("LLC-load-mises", names, 3);
	assert_true(n >= 1);
	assert_string_equal(names[0], "LLC-load-misses");
	for (i = 0; i < n; i++)
		free(names[i]);
}

static void test_scaled(void **state)
{
	struct kiln_stat_value v = { 100, 200, 100 };
	double val, run;

	(void)state;
	assert_true(kiln_stat_scaled(&v, &val, &run));
	assert_true(val > 199.9 && val < 200.1);
	assert_true(run > 0.49 && run < 0.51);
	v.run = 200;
	assert_true(kiln_stat_scaled(&v, &val, &run));
	assert_true(val > 99.9 && val < 100.1 && run == 1);
	v.run = 0;
	assert_false(kiln_stat_scaled(&v, &val, &run));
}

/* Counts this process's own page faults while it touches fresh pages. */
static void test_session(void **state)
{
	struct kiln_event evs[3];
	int leader[3] = { 0, 0, 2 };
	struct kiln_stat *s;
	struct kiln_stat_value v;
	size_t len = 256 * 4096, off;
	char *p;
	int err;

	(void)state;
	assert_int_equal(kiln_event_parse("task-clock", &evs[0]), 0);
	assert_int_equal(kiln_event_parse("page-faults", &evs[1]), 0);
	assert_int_equal(kiln_event_parse("cycles", &evs[2]), 0);
	s = kiln_stat_new(evs, leader, 3);
	assert_non_null(s);
	err = kiln_stat_add(s, 0, -1, false, false);
	if (err == -EACCES || err == -EPERM || err == -ENOSYS) {
		kiln_stat_free(s);
		skip();
		return;
	}
	assert_int_equal(err, 0);
	assert_int_equal(kiln_stat_ntargets(s), 1);
	assert_int_equal(kiln_stat_state(s, 0), KILN_STAT_OK);
	assert_int_equal(kiln_stat_state(s, 1), KILN_STAT_OK);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(p != MAP_FAILED);
	madvise(p, len, MADV_NOHUGEPAGE);
	assert_int_equal(kiln_stat_enable(s), 0);
	for (off = 0; off < len; off += 4096)
		p[off] = 1;
	assert_int_equal(kiln_stat_disable(s), 0);
	munmap(p, len);
	assert_int_equal(kiln_stat_read(s, SIZE_MAX, 1, &v), 0);
	assert_true(v.val >= 256);
	assert_true(v.val < 256 + 200);
	assert_true(v.run > 0 && v.run <= v.ena);
	assert_int_equal(kiln_stat_read(s, SIZE_MAX, 0, &v), 0);
	assert_true(v.val > 0);
	/* Either counted or marked: never an error. */
	assert_true(kiln_stat_state(s, 2) == KILN_STAT_OK ||
		    kiln_stat_state(s, 2) == KILN_STAT_UNSUPPORTED);
	kiln_stat_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_tracepoint),
		cmocka_unit_test(test_pmu),
		cmocka_unit_test(test_suggest),
		cmocka_unit_test(test_scaled),
		cmocka_unit_test(test_session),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
