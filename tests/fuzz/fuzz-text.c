/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer harness for what kiln_read_profile() does before and around
 * the readers (src/format/read.c, src/format/text.c): the text decoding
 * (UTF-16 and byte order marks), the format table's detection, and the
 * reader it picks, the weak guesses of text included.  Any bytes are read
 * or refused with a message; what is read goes through the writers
 * (tests/fuzz/fuzz.h).
 */
#include "fuzz.h"

static int read_any(struct kiln_prof *p, const char *data, size_t len,
		    struct kiln_diag *d)
{
	struct kiln_buf conv = KILN_BUF_INIT;
	enum kiln_fmt f;
	kiln_fmt_reader rd;
	int err;

	err = kiln_text_utf8(&data, &len, &conv);
	if (err)
		goto out;
	f = kiln_fmt_detect(data, len);
	rd = kiln_fmt_reader_of(f);
	/* perf.data names files the harness must not open: its own. */
	if (!rd || f == KILN_FMT_PERF_DATA || rd == kiln_heaptrace_read)
		err = kiln_diag(d, "no reader here");
	else
		err = rd(p, data, len, d);
out:
	kiln_buf_release(&conv);
	return err;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_reader_run("fuzz-text", read_any, (const char *)data, size);
	return 0;
}
