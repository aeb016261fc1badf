/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer harness for the heap-trace reader (src/format/heaptrace.c and
 * the analysis of src/profile/hprof.c): zstd frames or an uncompressed
 * "KILNHEAP" stream.  kiln_heaptrace_read() symbolizes from the maps
 * records of the trace; fuzz_reader_run() keeps it from opening the
 * files they name (kiln_sym_set_no_local()).
 *
 * The trace is read as kiln serve reads it, with its time index, and
 * then over three ranges from the index (src/format/heaptrace-index.c:
 * resumed at marks, whole stretches taken from their sums): a range of a
 * trace read whole is read too, and for an unsampled trace it equals the
 * range read from the trace's start.  Three allocation lists
 * (heaptrace-allocs.c: counted at the allocation, followed to a lifetime,
 * live at a moment) are read from the index and from the start, and
 * must be the same.
 */
#include <string.h>

#include "format/heaptrace.h"
#include "fuzz.h"
#include "profile/hprof.h"

static void range(const char *data, size_t len,
		  const struct kiln_heaptrace_index *x, bool exact,
		  uint64_t t0, uint64_t t1)
{
	struct kiln_diag d = { "" };
	struct kiln_prof *a = kiln_prof_new(), *b = kiln_prof_new();
	int ea, eb;

	if (!a || !b || t0 >= t1)
		goto out;
	ea = kiln_heaptrace_read_range(a, data, len, NULL, t0, t1, NULL, NULL, &d);
	eb = kiln_heaptrace_read_range(b, data, len, x, t0, t1, NULL, NULL, &d);
	fuzz_check(ea == 0 || ea == -ENOMEM, "fuzz-heaptrace",
		   "a range of a trace read whole failed");
	fuzz_check(eb == 0 || eb == -ENOMEM, "fuzz-heaptrace",
		   "a range from the time index failed");
	if (ea || eb || !exact)
		goto out;
	fuzz_check(a->nsamples == b->nsamples && a->ntypes == b->ntypes &&
		   (!a->nsamples || !a->ntypes ||
		    !memcmp(a->values, b->values,
			    a->nsamples * a->ntypes * sizeof(*a->values))),
		   "fuzz-heaptrace", "a range from the time index differs");
out:
	kiln_prof_free(a);
	kiln_prof_free(b);
}

static void allocs(const char *data, size_t len,
		   const struct kiln_heaptrace_index *x,
		   const struct kiln_heaptrace_allocq *q)
{
	struct kiln_diag d = { "" };
	struct kiln_heaptrace_allocs a, b;
	int ea, eb;

	if (q->t0 >= q->t1)
		return;		/* refused as empty, rightly */
	ea = kiln_heaptrace_allocs(data, len, NULL, q, NULL, NULL, &a, &d);
	eb = kiln_heaptrace_allocs(data, len, x, q, NULL, NULL, &b, &d);
	fuzz_check(ea == 0 || ea == -ENOMEM, "fuzz-heaptrace",
		   "an allocation list read from the start failed");
	fuzz_check(eb == 0 || eb == -ENOMEM, "fuzz-heaptrace",
		   "an allocation list from the time index failed");
	if (!ea && !eb)
		fuzz_check(a.count == b.count && a.n == b.n &&
			   (!a.n || !memcmp(a.a, b.a, a.n * sizeof(*a.a))),
			   "fuzz-heaptrace",
			   "an allocation list from the time index differs");
	kiln_heaptrace_allocs_release(&a);
	kiln_heaptrace_allocs_release(&b);
}

static int read_indexed(struct kiln_prof *p, const char *data, size_t len,
			struct kiln_diag *d)
{
	struct kiln_heaptrace_index *x = NULL;
	struct kiln_heaptrace_info info;
	struct kiln_hprof *h = NULL;
	long *so = NULL;
	uint64_t end;
	int err;

	err = kiln_heaptrace_read_index(p, data, len, NULL, NULL, &h, &so, &info,
					&x, d);
	if (err)
		return err;
	end = h->tot.t_last - h->tot.t_first + 1;
	range(data, len, x, !info.sample_bytes, 0, end);
	range(data, len, x, !info.sample_bytes, end / 3, end * 2 / 3 + 1);
	range(data, len, x, !info.sample_bytes, end / 2, end);
	{
		struct kiln_heaptrace_allocq q = {
			.t0 = end / 4, .t1 = UINT64_MAX, .life_max = UINT64_MAX,
			.size_max = UINT64_MAX, .offset = 2, .n = 5,
		};

		allocs(data, len, x, &q);
		q.t1 = end * 3 / 4;
		q.life_min = end / 8;
		allocs(data, len, x, &q);
		q.t0 = 0;
		q.t1 = UINT64_MAX;
		q.life_min = 0;
		q.alive = true;
		q.alive_at = end / 2;
		allocs(data, len, x, &q);
	}
	kiln_hprof_free(h);
	free(so);
	kiln_heaptrace_info_release(&info);
	kiln_heaptrace_index_free(x);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_reader_run("fuzz-heaptrace", read_indexed, (const char *)data, size);
	return 0;
}
