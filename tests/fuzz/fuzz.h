/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What every reader harness checks (tests/fuzz/README.md): a reader
 * returns 0, -ENOMEM, or -EINVAL with a message; a profile it accepted
 * goes through the writers and reads back with the same samples.
 */
#ifndef KILN_FUZZ_H
#define KILN_FUZZ_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "format/format.h"
#include "profile/profile.h"
#include "symbolize/symbolize.h"
#include "util/buf.h"
#include "util/diag.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static inline void fuzz_check(int cond, const char *harness, const char *what)
{
	if (!cond) {
		fprintf(stderr, "%s: %s\n", harness, what);
		abort();
	}
}

typedef int (*fuzz_reader)(struct kiln_prof *, const char *, size_t,
			   struct kiln_diag *);

/* Reads data with rd; what it accepts is written in every format and
 * the pprof read back. */
static inline void fuzz_reader_run(const char *harness, fuzz_reader rd,
				   const char *data, size_t len)
{
	struct kiln_buf out = KILN_BUF_INIT;
	struct kiln_diag d = { "" };
	struct kiln_prof *p = kiln_prof_new(), *q = NULL;
	size_t t;
	int err;

	if (!p)
		return;
	/* Readers symbolize from the files a profile names: not here, where
	 * the input names any file (and libdw's cost would drown the rest). */
	kiln_sym_set_no_local(true);
	err = rd(p, data, len, &d);
	if (!err)
		err = kiln_prof_error(p);
	fuzz_check(err == 0 || err == -EINVAL || err == -ENOMEM, harness,
		   "unexpected error");
	fuzz_check(err != -EINVAL || d.msg[0], harness, "-EINVAL without a message");
	if (err)
		goto out;
	err = kiln_pprof_write(p, &out, false);
	fuzz_check(err == 0 || err == -ENOMEM, harness, "pprof write failed");
	if (!err) {
		q = kiln_prof_new();
		fuzz_check(q != NULL, harness, "out of memory");
		err = kiln_pprof_read(q, out.data, out.len, &d);
		if (err)
			fprintf(stderr, "%s: re-read: %s\n", harness, d.msg);
		fuzz_check(err == 0, harness, "kiln cannot read its own pprof");
		fuzz_check(q->ntypes == p->ntypes && q->nsamples == p->nsamples,
			   harness, "the pprof round trip changed the samples");
		for (t = 0; t < p->ntypes; t++)
			fuzz_check(kiln_prof_total(q, t) == kiln_prof_total(p, t),
				   harness, "the pprof round trip changed a total");
	}
	/* The cap itself is what a huge count meets; a fuzzer that wrote
	 * half a gigabyte per input would find little else.  A low one: at
	 * 100,000 lines every input with a large count wrote ~5 MB per
	 * sample type, and libFuzzer ran 20 inputs a second. */
	kiln_perfscript_max_lines = 2000;
	for (t = 0; t < p->ntypes; t++) {
		kiln_buf_reset(&out);
		kiln_collapsed_write(p, (int)t, &out);
		kiln_buf_reset(&out);
		kiln_perfscript_write(p, (int)t, &out);
		kiln_buf_reset(&out);
		kiln_speedscope_write(p, (int)t, "fuzz", &out);
	}
out:
	kiln_prof_free(q);
	kiln_prof_free(p);
	kiln_buf_release(&out);
}

#endif
