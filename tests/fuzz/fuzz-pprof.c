/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer harness for the pprof reader (src/format/pprof.c), raw and
 * gzip-compressed: gzip input goes through kiln_gunzip() first, as
 * kiln_read_profile() does, so the corpus holds both.  Any bytes are read
 * or refused with a message; what is read goes through the writers and
 * reads back with the same totals (tests/fuzz/fuzz.h).
 */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kiln_buf raw = KILN_BUF_INIT;
	struct kiln_diag d = { "" };
	const char *bytes = (const char *)data;
	int err;

	if (kiln_is_gzip(bytes, size)) {
		err = kiln_gunzip(bytes, size, &raw, &d);
		fuzz_check(err == 0 || err == -EINVAL || err == -ENOMEM ||
			   err == -EFBIG, "fuzz-pprof", "unexpected gunzip error");
		fuzz_check(err != -EINVAL || d.msg[0], "fuzz-pprof",
			   "gunzip: -EINVAL without a message");
		if (!err)
			fuzz_reader_run("fuzz-pprof", kiln_pprof_read, raw.data,
					raw.len);
	} else {
		fuzz_reader_run("fuzz-pprof", kiln_pprof_read, bytes, size);
	}
	kiln_buf_release(&raw);
	return 0;
}
