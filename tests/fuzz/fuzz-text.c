/*
 * libFuzzer harness for the text readers (perf script, collapsed stacks)
 * and the text writers run on what they read.  Not built by default; with
 * clang, from the source tree:
 *
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE -Isrc \
 *     tests/fuzz/fuzz-text.c src/format/perfscript.c src/format/collapsed.c \
 *     src/format/speedscope.c src/profile/profile.c src/profile/ops.c \
 *     src/util/buf.c src/util/diag.c src/util/htab.c -o fuzz-text
 *   ./fuzz-text -max_len=4096 tests/fixtures/perfscript tests/fixtures/collapsed
 *
 * The first input byte picks the reader (even: perf script, odd:
 * collapsed); the rest is the file.
 */
#include <stddef.h>
#include <stdint.h>

#include "format/format.h"
#include "profile/profile.h"
#include "util/buf.h"
#include "util/diag.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kiln_prof *p;
	struct kiln_diag d;
	struct kiln_buf out = KILN_BUF_INIT;
	int err;
	size_t t;

	if (!size)
		return 0;
	p = kiln_prof_new();
	if (!p)
		return 0;
	if (data[0] & 1)
		err = kiln_collapsed_read(p, (const char *)data + 1, size - 1, &d);
	else
		err = kiln_perfscript_read(p, (const char *)data + 1, size - 1, &d);
	if (!err) {
		for (t = 0; t < p->ntypes; t++) {
			kiln_collapsed_write(p, (int)t, &out);
			kiln_buf_reset(&out);
			kiln_perfscript_write(p, (int)t, &out);
			kiln_buf_reset(&out);
			kiln_speedscope_write(p, (int)t, "fuzz", &out);
			kiln_buf_reset(&out);
		}
	}
	kiln_buf_release(&out);
	kiln_prof_free(p);
	return 0;
}
