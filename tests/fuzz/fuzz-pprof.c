/*
 * libFuzzer harness for the pprof reader (src/format/pprof.c): any bytes
 * must be refused with -EINVAL and a message, or read; a profile that
 * was read must write and read back with the same totals.  Gzip input
 * goes through kiln_gunzip() first, as kiln_read_profile() does.
 *
 * Not built by default.  With clang (Debian: apt-get install clang), the
 * core library instrumented for coverage (fuzzer-no-link) and ASan:
 *
 *   cmake -S . -B /tmp/build-fuzz -DCMAKE_C_COMPILER=clang \
 *         -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Debug \
 *         -DCMAKE_C_FLAGS=-fsanitize=fuzzer-no-link,address
 *   cmake --build /tmp/build-fuzz --target kiln_core
 *   clang -g -O1 -fsanitize=fuzzer,address \
 *         -Isrc -I/tmp/build-fuzz/gen tests/fuzz/fuzz-pprof.c \
 *         /tmp/build-fuzz/libkiln_core.a -lprotobuf-c -lz -lzstd -ldw \
 *         -lelf -liberty -lm -o /tmp/fuzz-pprof
 *   mkdir -p /tmp/corpus
 *   for f in go-cpu go-labels; do
 *       gzip -dc tests/fixtures/pprof/$f.pb.gz > /tmp/corpus/$f.pb; done
 *   /tmp/fuzz-pprof -max_total_time=60 -rss_limit_mb=1024 /tmp/corpus
 *
 * Add ",undefined" to both -fsanitize lists for UBSan as well.
 * (libkiln_core.a may need more -l flags as modules are added; the
 * link line of any unit test in the build tree lists them.)
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "format/format.h"
#include "profile/profile.h"
#include "util/buf.h"
#include "util/diag.h"

static void check(int cond, const char *what)
{
	if (!cond) {
		fprintf(stderr, "fuzz-pprof: %s\n", what);
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kiln_buf raw = KILN_BUF_INIT, out = KILN_BUF_INIT;
	struct kiln_diag d = { "" };
	struct kiln_prof *p, *q = NULL;
	const char *bytes = (const char *)data;
	size_t len = size, t;
	int err;

	if (kiln_is_gzip(bytes, len)) {
		if (kiln_gunzip(bytes, len, &raw, &d))
			goto out;
		bytes = raw.data;
		len = raw.len;
	}
	p = kiln_prof_new();
	if (!p)
		goto out;
	err = kiln_pprof_read(p, bytes, len, &d);
	check(err == 0 || err == -EINVAL || err == -ENOMEM, "unexpected error");
	check(err != -EINVAL || d.msg[0], "-EINVAL without a message");
	if (!err) {
		err = kiln_pprof_write(p, &out, false);
		check(err == 0 || err == -ENOMEM, "write failed");
		if (!err) {
			q = kiln_prof_new();
			check(q != NULL, "out of memory");
			err = kiln_pprof_read(q, out.data, out.len, &d);
			if (err)
				fprintf(stderr, "fuzz-pprof: re-read: %s\n", d.msg);
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
out:
	kiln_buf_release(&raw);
	kiln_buf_release(&out);
	return 0;
}
