/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer harness for the jitdump reader (src/symbolize/jit.c
 * kiln_sym_add_jitdump(): node --perf-prof's jit-PID.dump): any bytes are
 * read or refused with a message; what it read is looked up; a second
 * read from where the first stopped reads nothing more (a dump being
 * written is read in steps).  Built by -DKILN_FUZZ=ON (make fuzz), or as
 * a corpus replayer without it (tests/fuzz/README.md).
 */
#include <string.h>

#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kiln_sym *s = kiln_sym_new(NULL);
	struct kiln_sym_info in;
	struct kiln_diag d = { "" };
	uint64_t off = 0, again;
	int err;

	if (!s)
		return 0;
	err = kiln_sym_add_jitdump(s, (const char *)data, size, 0, &off, &d);
	fuzz_check(!err || err == -ENOMEM || err == -EINVAL, "fuzz-jitdump",
		   "the reader returned an unexpected error");
	fuzz_check(err != -EINVAL || d.msg[0], "fuzz-jitdump",
		   "a refusal without a message");
	fuzz_check(off <= size, "fuzz-jitdump", "read past the end");
	for (size_t i = 0; i + 8 <= size && i < 64; i += 8) {
		uint64_t a;

		memcpy(&a, data + i, 8);
		kiln_sym_lookup(s, a, &in);
	}
	if (!err) {
		again = off;
		fuzz_check(!kiln_sym_add_jitdump(s, (const char *)data, size, 0,
						 &again, &d) && again == off,
			   "fuzz-jitdump", "a second read moved on");
	}
	kiln_sym_free(s);
	return 0;
}
