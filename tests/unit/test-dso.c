/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of the recorder's DSO objects (session/resolve.c,
 * docs/design.md "The DSO object"): in a perf.data (offline) two
 * processes that map the same file, at different addresses, share one
 * symbol session for it: the file is opened and reported to libdwfl once,
 * and both processes' addresses get the same names.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "profile/profile.h"
#include "session/record.h"
#include "symbolize/symbolize.h"
#include "util/perfevent.h"

/* The function whose address both processes sample. */
__attribute__((noinline)) unsigned long dso_probe_fn(unsigned long n)
{
	volatile unsigned long x = n;

	return x * 3 + 1;
}

/* This program's executable mapping holding addr: its path and columns. */
static void own_mapping(uintptr_t addr, char *path, size_t n, uint64_t *start,
			uint64_t *end, uint64_t *pgoff)
{
	char line[512];
	FILE *f = fopen("/proc/self/maps", "r");

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi, off;
		char perms[8], file[400];

		if (sscanf(line, "%lx-%lx %7s %lx %*s %*s %399s", &lo, &hi,
			   perms, &off, file) == 5 && addr >= lo && addr < hi) {
			snprintf(path, n, "%s", file);
			*start = lo;
			*end = hi;
			*pgoff = off;
			fclose(f);
			return;
		}
	}
	fclose(f);
	fail_msg("no mapping holds %#lx", (unsigned long)addr);
}

static void mmap_event(struct kiln_rec *r, uint32_t pid, const char *path,
		       uint64_t start, uint64_t end, uint64_t pgoff)
{
	struct kiln_perf_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.kind = KILN_PERF_MMAP;
	ev.mmap.pid = ev.mmap.tid = pid;
	ev.mmap.start = start;
	ev.mmap.len = end - start;
	ev.mmap.pgoff = pgoff;
	ev.mmap.prot = 4;	/* PROT_EXEC */
	ev.mmap.filename = path;
	ev.mmap.open_path = path;
	kiln_rec_event(r, &ev);
}

static void sample_event(struct kiln_rec *r, uint32_t pid, uint64_t ip,
			 uint64_t time)
{
	struct kiln_perf_event ev;
	uint64_t ips[2] = { (uint64_t)PERF_CONTEXT_USER, ip };

	memset(&ev, 0, sizeof(ev));
	ev.kind = KILN_PERF_SAMPLE;
	ev.time = time;
	ev.sample.pid = ev.sample.tid = pid;
	ev.sample.time = time;
	ev.sample.period = 1000000;
	ev.sample.ip = ip;
	ev.sample.nr = 2;
	ev.sample.ips = ips;
	ev.sample.user = true;
	kiln_rec_event(r, &ev);
}

/* How many locations of p are named `name`. */
static int named(const struct kiln_prof *p, const char *name)
{
	size_t i;
	int n = 0;

	for (i = 1; i <= p->nlocations; i++) {
		const struct kiln_location *l = &p->locations[i];

		if (l->nlines && !strcmp(kiln_prof_str(p, p->functions[
				p->lines[l->line0].function].name), name))
			n++;
	}
	return n;
}

static void test_two_processes_one_file(void **state)
{
	struct kiln_rec_opts o = { .callgraph = KILN_CG_FP, .offline = true,
				   .ns_values = true, .period_ns = 1000000 };
	uintptr_t ip = (uintptr_t)dso_probe_fn;
	const uint64_t other = 0x40000000;	/* pid 200 maps it there */
	uint64_t start = 0, end = 0, pgoff = 0;
	unsigned long before;
	struct kiln_rec *r;
	struct kiln_prof *p;
	char path[400];

	(void)state;
	own_mapping(ip, path, sizeof(path), &start, &end, &pgoff);
	r = kiln_rec_new(&o);
	assert_non_null(r);
	before = kiln_sym_files_reported();
	mmap_event(r, 100, path, start, end, pgoff);
	mmap_event(r, 200, path, start + other, end + other, pgoff);
	sample_event(r, 100, ip, 1);
	sample_event(r, 200, ip + other, 2);
	sample_event(r, 100, ip + 1, 3);
	sample_event(r, 200, ip + other + 1, 4);
	/* One file, one session, whatever the number of processes. */
	assert_int_equal(kiln_sym_files_reported() - before, 1);
	p = kiln_rec_detach(r);
	assert_non_null(p);
	/* Two addresses in each process, all four named alike. */
	assert_int_equal(named(p, "dso_probe_fn"), 4);
	kiln_prof_free(p);
	kiln_rec_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_processes_one_file),
	};

	(void)dso_probe_fn(1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
