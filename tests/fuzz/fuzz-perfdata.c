/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer harness for the perf.data reader (src/format/perfdata*.c and
 * its replay, src/session/replay.c): any bytes must be refused with
 * -EINVAL and a message giving a byte offset, or read; a profile that was
 * read must write as pprof and read back with the same totals.  Seeds:
 * the .data files of tests/fixtures/perfdata (z.data: zstd-compressed
 * records, perf record -z).
 *
 * Not built by default.  With clang (Debian: apt-get install clang), the
 * core library instrumented for coverage (fuzzer-no-link) and ASan:
 *
 *   cmake -S . -B /tmp/build-fuzz -DCMAKE_C_COMPILER=clang \
 *         -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Debug \
 *         -DCMAKE_C_FLAGS=-fsanitize=fuzzer-no-link,address
 *   cmake --build /tmp/build-fuzz --target kiln_core
 *   clang -g -O1 -fsanitize=fuzzer,address \
 *         -Isrc -I/tmp/build-fuzz/gen tests/fuzz/fuzz-perfdata.c \
 *         /tmp/build-fuzz/libkiln_core.a -lprotobuf-c -lz -lzstd -ldw \
 *         -lelf -liberty -lm -o /tmp/fuzz-perfdata
 *   mkdir -p /tmp/corpus-perfdata
 *   cp tests/fixtures/perfdata/[a-z]*.data /tmp/corpus-perfdata
 *   HOME=/nonexistent /tmp/fuzz-perfdata -max_total_time=60 \
 *         -rss_limit_mb=2048 /tmp/corpus-perfdata
 *
 * HOME=/nonexistent keeps perf's build-id cache out of it.  Add
 * ",undefined" to both -fsanitize lists for UBSan as well.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/format.h"
#include "profile/profile.h"
#include "session/replay.h"
#include "symbolize/symbolize.h"
#include "util/buf.h"
#include "util/diag.h"

static void check(int cond, const char *what)
{
	if (!cond) {
		fprintf(stderr, "fuzz-perfdata: %s\n", what);
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kiln_buf out = KILN_BUF_INIT;
	struct kiln_diag d = { "" };
	struct kiln_prof *p, *q = NULL;
	size_t t;
	int err;

	/* No file of this machine: the paths inside compressed records
	 * (z.data's) name real libraries, and symbolizing them on every
	 * input is all the time spent. */
	kiln_sym_set_no_local(true);
	p = kiln_prof_new();
	if (!p)
		return 0;
	err = kiln_perfdata_read(p, (const char *)data, size, &d);
	check(err == 0 || err == -EINVAL || err == -ENOMEM, "unexpected error");
	check(err != -EINVAL || !strncmp(d.msg, "byte ", 5),
	      "-EINVAL without a byte offset");
	if (!err) {
		err = kiln_pprof_write(p, &out, false);
		check(err == 0 || err == -ENOMEM, "write failed");
		if (!err) {
			q = kiln_prof_new();
			check(q != NULL, "out of memory");
			err = kiln_pprof_read(q, out.data, out.len, &d);
			if (err)
				fprintf(stderr, "fuzz-perfdata: re-read: %s\n", d.msg);
			check(err == 0, "kiln cannot read its own pprof");
			check(q->ntypes == p->ntypes && q->nsamples == p->nsamples,
			      "round trip changed the samples");
			for (t = 0; t < p->ntypes; t++)
				check(kiln_prof_total(q, t) == kiln_prof_total(p, t),
				      "round trip changed a total");
		}
	}
	kiln_prof_free(q);
	kiln_prof_free(p);
	kiln_buf_release(&out);
	return 0;
}
